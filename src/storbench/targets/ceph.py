"""Ceph targets (shell): an RBD image through fio's rbd engine (librbd; no kernel client needed)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from storbench.ceph_client import CREATED_BY_KEY
from storbench.errors import UserError
from storbench.execute.local import LocalExecutor
from storbench.fio.jobfile import JobBinding, client_image, render_layout_job
from storbench.model import Case, RbdTarget
from storbench.shell import run
from storbench.targets.base import PreparedTarget, RbdCheckPlace

DEFAULT_CEPH_CONF = "/etc/ceph/ceph.conf"


def check_rbd_target(spec: RbdTarget, cases: Sequence[Case], *, where: str = "") -> None:
    """What can be checked before a cluster exists: the tools, and an explicit conf file."""
    if shutil.which("rbd") is None:
        raise UserError(f"target '{spec.name}': the rbd tool is not installed", where=where,
                        hint="install ceph-common (sudo storbench setup --labs)")
    uses_lab = any(case.lab for case in cases)
    if not uses_lab:
        conf = spec.conf or DEFAULT_CEPH_CONF
        if not Path(conf).is_file():
            raise UserError(f"target '{spec.name}': no ceph.conf at {conf}", where=where,
                            hint="set conf: to your cluster's ceph.conf, or add `lab: {ceph: {}}` to the plan")


def _rbd_binding(spec: RbdTarget, image: str, conf: str) -> JobBinding:
    return JobBinding(options=(("clientname", spec.client), ("pool", spec.pool), ("rbdname", image)),
                      env=(("CEPH_CONF", conf),))


def _created_by_storbench(conf: str, client: str, pool: str, image: str) -> bool:
    try:
        run(["rbd", "-c", conf, "--id", client, "image-meta", "get", f"{pool}/{image}", CREATED_BY_KEY],
            timeout_s=60)
    except UserError:
        return False
    return True


def prepare_rbd_target(spec: RbdTarget, conf: str, fio_binary: str, clients: int = 0, *,
                       writes: bool = True) -> PreparedTarget:
    """Create the image if it is missing and write it once from end to end: reads of a new, sparse image
    would return holes (zeros, without touching an OSD's disk) and measure nothing. Bind the job to it.

    ``clients`` > 0: the cases run on that many fio servers, each with an image of its own, ``<image>-c<N>``
    (``render_client_jobs`` names them): writers sharing one image would pass its exclusive lock back and forth."""
    existing = set(run(["rbd", "-c", conf, "--id", spec.client, "ls", spec.pool], timeout_s=60).split())
    size = spec.size_bytes or 1 << 30
    names = [client_image(spec.image, index) for index in range(1, clients + 1)] if clients else [spec.image]
    written: list[str] = []
    seconds = 0.0
    for name in names:
        if name in existing:
            if writes and not spec.destructive and not _created_by_storbench(conf, spec.client, spec.pool, name):
                raise UserError(f"target '{spec.name}': image {spec.pool}/{name} exists and storbench did not "
                                "create it; writing would destroy its data",
                                hint="set destructive: true on the target if that is what you want, or name a "
                                "new image")
            continue
        run(["rbd", "-c", conf, "--id", spec.client, "create", "--size", f"{max(1, size // 1048576)}M",
             f"{spec.pool}/{name}"], timeout_s=60)
        run(["rbd", "-c", conf, "--id", spec.client, "image-meta", "set", f"{spec.pool}/{name}", CREATED_BY_KEY,
             "1"], timeout_s=60)
        one = _rbd_binding(spec, name, conf)
        result = LocalExecutor(fio_binary).run(render_layout_job(one, size, 1, "rbd"), timeout_s=1800, env=one.env)
        if result.timed_out or result.returncode != 0:
            tail = " ".join(result.stderr_tail.split()[-20:])
            raise UserError(f"target '{spec.name}': writing the new image {spec.pool}/{name} failed: {tail}")
        written.append(name)
        seconds += result.finished_at_s - result.started_at_s
    laid_out = f"yes, {len(written)} in {seconds:.0f}s" if written else "no (existing image)"
    return PreparedTarget(
        spec=spec, binding=_rbd_binding(spec, spec.image, conf),
        details=(("kind", "rbd"), ("pool", spec.pool), ("image", names[0] if len(names) == 1 else
                                                            f"{names[0]} .. {names[-1]}"),
                 ("client", spec.client), ("conf", conf), ("image_prefilled", laid_out)),
        check_place=None if clients else RbdCheckPlace(conf, spec.client, spec.pool, f"{spec.image}.check"),
    )
