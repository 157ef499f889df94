"""The private directories of a repetition's job and output files (`execute/jobdirs.py`): removed when the
storbench that made them is gone, kept while one holds them, in whatever PID namespace."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import pytest

from storbench.execute import jobdirs
from storbench.execute.jobdirs import job_dir, remove_stale_job_dirs


def test_job_directories_of_a_killed_storbench_are_removed_at_the_next_start(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    dead_pid = int(gone.stdout)
    stale = tmp_path / f"storbench-{dead_pid}-abcd_123"
    (stale / "sub").mkdir(parents=True)
    (stale / "job.fio").write_text("[job]\n")
    stale_clients = tmp_path / f"storbench-clients-{dead_pid}-zzzzzzzz"
    stale_clients.mkdir()
    alive = tmp_path / f"storbench-{os.getppid()}-abcdefgh"  # its process runs: in use
    alive.mkdir()
    other = tmp_path / "storbench-pause-abcdefgh"  # not a job directory
    other.mkdir()
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / f"storbench-{dead_pid}-linklink"  # a link is never followed nor removed
    link.symlink_to(target)
    fresh = tmp_path / f".storbench-{dead_pid}-freshnow"  # still under its "." name: perhaps not locked yet
    fresh.mkdir()
    later = fresh.stat().st_mtime + jobdirs.FRESH_S - 1
    assert sorted(remove_stale_job_dirs(tmp_path, now_s=later)) == sorted([stale, stale_clients])  # however new
    assert alive.exists() and other.exists() and link.is_symlink() and target.exists() and fresh.exists()
    assert remove_stale_job_dirs(tmp_path, now_s=later + 2) == [fresh]  # a minute on, it is stale
    with mock.patch.object(tempfile, "tempdir", str(tmp_path)), job_dir() as made:
        assert Path(made).parent == tmp_path and Path(made).name.startswith(f"storbench-{os.getpid()}-")
        assert (Path(made).stat().st_mode & 0o777) == 0o700
        # under its name only once locked (made under a "." name, renamed): no cleaner can take it before
        assert jobdirs._in_use(made) and not list(tmp_path.glob(".storbench-*"))
    assert not Path(made).exists()


def test_a_job_directory_held_in_another_pid_namespace_is_kept(tmp_path: Path) -> None:
    """A storbench in another PID namespace sharing the temporary directory (a container) cannot see this
    process's pid: the directory's lock, not the pid, keeps a repetition's files from it; an unlocked one it
    removes."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare (a PID namespace)")
    left = tmp_path / f"storbench-{os.getpid()}-leftleft"  # this pid, unheld: as a storbench without the lock
    left.mkdir()
    script = ("import sys; from storbench.execute.jobdirs import remove_stale_job_dirs; "
              "print(sorted(p.name for p in remove_stale_job_dirs(sys.argv[1])))")
    with mock.patch.object(tempfile, "tempdir", str(tmp_path)), jobdirs.job_dir() as made:
        inside = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", script,
                                 str(tmp_path)], capture_output=True, text=True, timeout=60, check=False)
        assert inside.returncode == 0, inside.stderr
        assert inside.stdout.split("\n")[0] == repr([left.name])  # this pid is not alive in there
        assert Path(made).is_dir()  # held: kept
    assert not Path(made).exists() and not left.exists()


def test_fio_jobs_a_killed_storbench_left_working_are_killed_with_their_directory(tmp_path: Path) -> None:
    """Its main fio dies with storbench; the job processes, each in a session of its own, had gone on doing I/O
    (a hung one for ever). A process named fio working in the stale directory is killed; others are not."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    real = tmp_path / "real"
    real.mkdir()
    linked = tmp_path / "tmp"  # a TMPDIR that is a link: the kernel gives a working directory resolved
    linked.symlink_to(real)
    stale = linked / f"storbench-{int(gone.stdout)}-abcd_123"
    stale.mkdir()
    fio = tmp_path / "bin" / "fio"  # stands in for a fio job process: only its name and working directory count
    fio.parent.mkdir()
    shutil.copy(shutil.which("sleep") or "/bin/sleep", fio)
    job = subprocess.Popen([str(fio), "300"], cwd=stale, start_new_session=True)
    other = subprocess.Popen([shutil.which("sleep") or "/bin/sleep", "300"], cwd=stale, start_new_session=True)
    try:
        assert remove_stale_job_dirs(linked) == [stale]
        assert job.wait(timeout=10) == -9  # SIGKILL
        assert other.poll() is None  # not fio: left alone
    finally:
        for process in (job, other):
            process.kill()
            process.wait()
