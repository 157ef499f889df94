"""Ceph targets (shell): an RBD image through fio's rbd engine (librbd; no kernel client needed)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from storbench.errors import UserError
from storbench.execute.local import LocalExecutor
from storbench.fio.jobfile import JobBinding, render_layout_job
from storbench.lab.process import run
from storbench.model import Case, TargetSpec
from storbench.targets.local import PreparedTarget

DEFAULT_CEPH_CONF = "/etc/ceph/ceph.conf"


def check_rbd_target(spec: TargetSpec, cases: Sequence[Case], *, where: str = "") -> None:
    """What can be checked before a cluster exists: the tools, and an explicit conf file."""
    if shutil.which("rbd") is None:
        raise UserError(f"target '{spec.name}': the rbd tool is not installed", where=where,
                        hint="install ceph-common (scripts/setup.sh --labs)")
    uses_lab = any(case.lab for case in cases)
    if not uses_lab:
        conf = spec.conf or DEFAULT_CEPH_CONF
        if not Path(conf).is_file():
            raise UserError(f"target '{spec.name}': no ceph.conf at {conf}", where=where,
                            hint="set conf: to your cluster's ceph.conf, or add `lab: {ceph: {}}` to the plan")


def prepare_rbd_target(spec: TargetSpec, conf: str, fio_binary: str) -> PreparedTarget:
    """Create the image if it is missing and write it once from end to end: reads of a new, sparse image
    would return holes (zeros, without touching an OSD's disk) and measure nothing. Bind the job to it."""
    assert spec.pool is not None and spec.image is not None and spec.client is not None
    binding = JobBinding(options=(("clientname", spec.client), ("pool", spec.pool), ("rbdname", spec.image)),
                         env=(("CEPH_CONF", conf),))
    images = run(["rbd", "-c", conf, "--id", spec.client, "ls", spec.pool], timeout_s=60).split()
    size = spec.size_bytes or 1 << 30
    laid_out = "no (existing image)"
    if spec.image not in images:
        run(["rbd", "-c", conf, "--id", spec.client, "create", "--size", f"{max(1, size // 1048576)}M",
             f"{spec.pool}/{spec.image}"], timeout_s=60)
        result = LocalExecutor(fio_binary).run(render_layout_job(binding, size, 1, "rbd"), timeout_s=1800,
                                               env=binding.env)
        if result.timed_out or result.returncode != 0:
            tail = " ".join(result.stderr_tail.split()[-20:])
            raise UserError(f"target '{spec.name}': writing the new image {spec.pool}/{spec.image} failed: {tail}")
        laid_out = f"yes, {result.finished_at_s - result.started_at_s:.0f}s"
    return PreparedTarget(
        spec=spec, binding=binding,
        details=(("kind", "rbd"), ("pool", spec.pool), ("image", spec.image), ("client", spec.client),
                 ("conf", conf), ("image_prefilled", laid_out)),
    )
