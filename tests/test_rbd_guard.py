"""An RBD image storbench did not create holds someone's data: a plan writes to it only with destructive: true.
Real Ceph (one memstore OSD); runs in CI with the other Ceph cases."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import run_cli, write_plan
from storbench.lab.ceph import CephLab
from storbench.lab.ceph_conf import CephLabSpec

pytestmark = [
    pytest.mark.fio,
    pytest.mark.ceph,
    pytest.mark.skipif(shutil.which("ceph-mon") is None or os.geteuid() != 0,
                       reason="needs root and Ceph (scripts/setup.sh --labs)"),
]

PLAN = """
name: someone-elses-image
targets:
  rbd: {{kind: rbd, pool: bench, image: {image}, size: 64MiB, conf: {conf}{extra}}}
workload: {{rw: {rw}, bs: 4k, runtime: 1s}}
repeat: 1
telemetry: {{enabled: false}}
"""


def test_an_image_storbench_did_not_create_is_written_only_when_destructive(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = CephLab(tmp_path / "lab" / "ceph")
    info = lab.up(CephLabSpec(osds=1, osd_size_bytes=1024**3, objectstore="memstore", pools=(("bench", 1),)))
    try:
        subprocess.run(["rbd", "-c", info.conf, "create", "--size", "64M", "bench/theirs"], check=True)
        db = str(tmp_path / "r.db")

        def run(image: str, rw: str, extra: str = "") -> tuple[int, str]:
            plan = write_plan(tmp_path, PLAN.format(image=image, conf=info.conf, rw=rw, extra=extra),
                              f"{image}-{rw}{len(extra)}.yaml")
            code, out, err = run_cli(capsys, "run", str(plan), "--db", db)
            return code, err if code else out + err

        code, said = run("theirs", "randwrite")
        assert code == 2 and "image bench/theirs exists and storbench did not create it" in said, said
        assert "destructive: true" in said and len(said.strip().splitlines()) == 1
        code, said = run("theirs", "randread")  # reading destroys nothing
        assert code == 0, said
        # a read-only plan whose precondition would write the image: refused before anything is written
        code, said = run("theirs", "randread", ", precondition: {fill: 1x}")
        assert code == 2 and "image bench/theirs exists and storbench did not create it" in said, said
        code, said = run("theirs", "randwrite", ", destructive: true")
        assert code == 0, said
        # an image storbench creates is marked as its own: later writing runs need no permission
        code, said = run("mine", "randwrite")
        assert code == 0, said
        code, said = run("mine", "randwrite")
        assert code == 0, said
        marked = subprocess.run(["rbd", "-c", info.conf, "image-meta", "list", "bench/mine"], capture_output=True,
                                text=True, check=True).stdout
        assert "storbench.created" in marked
    finally:
        lab.down()
