"""A path target lands where it says (issue 14, item 2): only the last directory is made, the filesystem it
lands on is shown and stored, and a plan that expects a filesystem is refused on another."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from helpers import inside, run_cli, write_plan
from storbench.targets.local import filesystem_matches, filesystem_of

PLAN = """
name: fs
targets:
  t: {{kind: path, path: {path}, size: 1MiB{extra}}}
workload: {{rw: randread, runtime: 1s}}
repeat: 1
telemetry: {{enabled: false}}
"""


@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_path_under_a_missing_directory_is_refused_and_nothing_made(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    missing = tmp_path / "mnt" / "cephfs" / "bench"  # a mount point that is not mounted (nor even made)
    argv = [command, str(write_plan(tmp_path, PLAN.format(path=missing, extra="")))]
    code, _, err = run_cli(capsys, *argv, *(("--db", str(tmp_path / "r.db")) if command == "run" else ()))
    assert code == 2 and f"{missing.parent} does not exist" in err and "mounted" in err, err
    assert not (tmp_path / "mnt").exists()


def test_a_path_under_a_regular_file_is_refused_by_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, PLAN.format(path=tmp_path / "file" / "d",
                                                                                 extra=""))))
    assert code == 2 and "is not a directory" in err, err


def test_expect_fs_refuses_another_filesystem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, fs_type, _ = filesystem_of(tmp_path)
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, PLAN.format(path=tmp_path,
                                                                                 extra=", expect_fs: ceph"))))
    assert code == 2 and f"is on {fs_type}" in err and "not ceph" in err, err
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, PLAN.format(path=tmp_path,
                                                                                   extra=f", expect_fs: {fs_type}"))))
    assert code == 0, err


@pytest.mark.fio
def test_plan_and_every_result_show_where_the_target_lands(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    mount_point, fs_type, source = filesystem_of(tmp_path / "data")
    plan = write_plan(tmp_path, PLAN.format(path="./data", extra=""))
    with inside(tmp_path):
        code, out, err = run_cli(capsys, "plan", str(plan))
        assert code == 0, err
        assert f"on {fs_type} ({source}), mounted at {mount_point}" in " ".join(out.split()), out
        assert not (tmp_path / "data").exists()  # plan makes nothing
        code, out, err = run_cli(capsys, "run", str(plan), "--db", "r.db")
        assert code == 0, out + err
    with sqlite3.connect(tmp_path / "r.db") as conn:
        stored = conn.execute("SELECT target_json FROM repetitions").fetchone()[0]
    assert f'"filesystem": "{fs_type}"' in stored and f'"mount_point": "{mount_point}"' in stored
    assert f'"source": "{source}"' in stored


def test_the_longest_and_latest_mount_wins_and_families_match() -> None:
    mounts = ("/dev/vda1 / ext4 rw 0 0\nlabfs /mnt/cephfs fuse.ceph-fuse rw 0 0\n"
              "/dev/vdb /mnt/cephfs xfs rw 0 0\n10.0.0.1:/export /mnt/nfs nfs4 rw 0 0\n")
    assert filesystem_of(Path("/mnt/cephfs/bench"), mounts) == ("/mnt/cephfs", "xfs", "/dev/vdb")
    assert filesystem_of(Path("/mnt/cephfsx"), mounts) == ("/", "ext4", "/dev/vda1")
    assert filesystem_of(Path("/mnt/nfs/a"), mounts)[1:] == ("nfs4", "10.0.0.1:/export")
    assert filesystem_matches("fuse.ceph-fuse", "ceph") and filesystem_matches("nfs4", "nfs")
    assert not filesystem_matches("ext4", "ceph") and filesystem_matches("xfs", "xfs")
