"""Issue 34: `storbench doctor` says what this machine has for each target kind and lab, and for what is missing
the exact command that installs it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import run_cli
from storbench.requirements import REQUIREMENTS, Found, doctor_lines


def test_each_missing_piece_comes_with_the_command_that_installs_it() -> None:
    fio, ceph = REQUIREMENTS[0], next(r for r in REQUIREMENTS if r.name == "ceph-osd")
    lines = doctor_lines({fio: Found(True, "fio-3.33 at /usr/bin/fio"), ceph: Found(False)})
    assert lines[0] == "ok       fio (fio-3.33 at /usr/bin/fio): every target"
    ceph_line = next(line for line in lines if "ceph-mon" in line)
    assert ceph_line == ("missing  ceph-mon, -mgr, -osd: the Ceph lab; install: apt-get install -y ceph-mon ceph-mgr "
                         "ceph-osd ceph-common")
    assert len(lines) == len(REQUIREMENTS)  # a piece no probe answered is missing, not left out
    assert all(r.install for r in REQUIREMENTS) and len({r.what for r in REQUIREMENTS}) == len(REQUIREMENTS)


@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_doctor_probes_this_machine_and_fails_only_without_fio(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run_cli(capsys, "doctor")
    assert code == 0 and "  ok       fio (fio-" in out and "every target" in out
    assert "fio's libaio engine" in out  # fio's own answer: Debian's has it
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH: every program missing, each with its install
    monkeypatch.delenv("STORBENCH_FIO", raising=False)
    code, out, _ = run_cli(capsys, "doctor")
    assert code == 1
    assert "  missing  fio: every target; install: apt-get install -y fio" in out
    assert "  missing  nfs-ganesha: the NFS lab; install: apt-get install -y nfs-ganesha nfs-ganesha-vfs rpcbind" in out
