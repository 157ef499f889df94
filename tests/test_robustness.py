"""What must survive: kill -9 mid-run then --resume, a hung fio, a fio that ignores SIGTERM."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import stat
import tempfile
import time
from pathlib import Path

import pytest

from helpers import fio_processes_using, inside, repetition_rows, run_cli, storbench_process, write_plan
from storbench.execute.local import LocalExecutor

pytestmark = pytest.mark.fio

KILL_PLAN = """
name: survive
targets:
  t: {kind: path, path: ./data, size: 4MiB}
workload:
  rw: randread
  bs: [4k, 8k, 16k]
  iodepth: [1, 4]
  runtime: 1s
  direct: false
repeat: 1
"""


def test_kill_9_mid_run_then_resume_runs_each_case_exactly_once(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, KILL_PLAN)
    db = tmp_path / "r.db"
    process = storbench_process("run", str(plan), "--db", str(db), cwd=tmp_path)
    deadline = time.time() + 60
    stored: list[tuple[str, int, str]] = []
    while time.time() < deadline:
        if db.exists():
            try:
                stored = repetition_rows(db)
            except sqlite3.OperationalError:
                stored = []
        if len(stored) >= 2:
            break
        time.sleep(0.1)
    assert len(stored) >= 2, "the run did not store two repetitions in time"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)
    before_resume = repetition_rows(db)
    assert 2 <= len(before_resume) < 6
    # fio dies with storbench (parent-death signal): nothing keeps writing into the target
    time.sleep(0.5)
    assert fio_processes_using(f"storbench-{process.pid}-") == []  # its job directory: no other session's fio

    with inside(tmp_path):
        code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db), "--resume")
    assert code == 0, err
    # the killed run's private job directory (named after its pid) went at the next start
    assert not list(Path(tempfile.gettempdir()).glob(f"storbench-{process.pid}-*"))
    after = repetition_rows(db)
    assert after[: len(before_resume)] == before_resume  # nothing finished was lost or rerun
    assert len(after) == 6 and len({(c, r) for c, r, _ in after}) == 6
    assert {s for _, _, s in after} == {"ok"}
    assert f"{len(before_resume)} already stored" in out
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
    conn.close()


def test_resume_without_an_earlier_run_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, KILL_PLAN)
    code, _, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"), "--resume")
    assert code == 2 and "nothing to resume" in err and len(err.strip().splitlines()) == 1


HANG_PLAN = """
name: hang
targets:
  t: {kind: path, path: ./data, size: 4MiB}
workload:
  rw: randread
  runtime: 1s
  direct: false
  fio: {thinktime: [0, 30s]}
repeat: 1
order: sequential
timeout_grace: 1s
"""


def test_hung_fio_is_killed_by_the_watchdog_and_the_run_goes_on(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, HANG_PLAN)
    db = tmp_path / "r.db"
    started = time.time()
    with inside(tmp_path):
        code, _out, _ = run_cli(capsys, "run", str(plan), "--db", str(db))
    elapsed = time.time() - started
    assert code == 1  # some repetitions failed
    statuses = [s for _, _, s in repetition_rows(db)]
    assert sorted(statuses) == ["ok", "timeout"]
    assert elapsed < 15, f"the watchdog should stop the 30 s think time early, took {elapsed:.1f}s"
    conn = sqlite3.connect(db)
    error = conn.execute("SELECT error FROM repetitions WHERE status = 'timeout'").fetchone()[0]
    conn.close()
    assert "watchdog" in error
    assert fio_processes_using("storbench-") == []


def test_process_group_ignoring_sigterm_is_killed(tmp_path: Path) -> None:
    """Like fio's nfs engine hung at exit: SIGTERM is ignored, children too. SIGKILL to the group ends it."""
    fake = tmp_path / "fake-fio"
    pidfile = tmp_path / "child.pid"
    fake.write_text(f"#!/bin/sh\ntrap '' TERM\nsleep 300 &\necho $! > {pidfile}\nwhile true; do sleep 1; done\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    executor = LocalExecutor(str(fake), term_grace_s=0.5)
    started = time.time()
    result = executor.run("[x]\n", timeout_s=1.0)
    assert result.timed_out and result.returncode is None
    assert time.time() - started < 8
    child = int(pidfile.read_text())
    time.sleep(0.3)
    state = ""
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{child}/status").read_text()
    assert state == "" or "State:\tZ" in state, "the grandchild survived the group kill"


def test_failing_fio_is_recorded_with_its_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, """
name: fails
targets:
  t: {kind: path, path: ./data, size: 4MiB}
workload:
  rw: randread
  runtime: 1s
  direct: false
  fio: {cpus_allowed: [0, 4000]}
repeat: 1
""")
    db = tmp_path / "r.db"
    with inside(tmp_path):
        code, _, _ = run_cli(capsys, "run", str(plan), "--db", str(db))
    assert code == 1
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT status, error, stderr_tail FROM repetitions ORDER BY id").fetchall()
    conn.close()
    assert [r[0] for r in rows] == ["ok", "failed"]
    assert "exited with status" in rows[1][1] and "failed parsing cpus_allowed=4000" in rows[1][2]


def test_two_runs_on_one_database_at_once_both_complete_nothing_lost_or_mixed(tmp_path: Path) -> None:
    """Two `storbench run` processes share a results database (WAL, busy timeout): both finish, each run holds
    exactly its own plan's repetitions."""
    plans = {}
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        plans[name] = write_plan(tmp_path, KILL_PLAN.replace("name: survive", f"name: {name}")
                                 .replace("./data", f"./{name}/data"), f"{name}.yaml")
    db = tmp_path / "shared.db"
    processes = [storbench_process("run", str(plans[name]), "--db", str(db), cwd=tmp_path) for name in plans]
    for process in processes:
        _, err = process.communicate(timeout=180)
        assert process.returncode == 0, err.decode()
    conn = sqlite3.connect(db)
    runs = dict(conn.execute("SELECT id, plan_name FROM runs").fetchall())
    rows = conn.execute("SELECT r.run_id, r.case_id, r.rep_index, r.status, c.target_json FROM repetitions r "
                        "JOIN cases c ON c.id = r.case_id").fetchall()
    conn.close()
    assert sorted(runs.values()) == ["one", "two"]
    for run_id, name in runs.items():
        mine = [r for r in rows if r[0] == run_id]
        assert len(mine) == 6 and len({(r[1], r[2]) for r in mine}) == 6  # 6 cases, none twice
        assert {r[3] for r in mine} == {"ok"} and all(f"{name}/data" in r[4] for r in mine), name


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs (root)")
def test_a_full_results_disk_stops_the_run_in_one_line_and_resume_continues(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The results database's filesystem fills up mid-run: the run stops with one line, every repetition stored
    before is intact, and --resume finishes once there is space again."""
    import subprocess

    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k,mode=0700", "tmpfs", str(small)], check=True)
    try:
        plan = write_plan(tmp_path, KILL_PLAN)  # 6 cases
        db = small / "r.db"
        with inside(tmp_path):
            code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db))
        assert code == 2, out + err
        assert "results database" in err and "full" in err and "--resume" in err, err
        assert len(err.strip().splitlines()) == 1, err
        before = repetition_rows(db)
        assert 0 < len(before) < 6 and {s for _, _, s in before} == {"ok"}, len(before)
        subprocess.run(["mount", "-o", "remount,size=64m", str(small)], check=True)
        with inside(tmp_path):
            code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db), "--resume")
        assert code == 0, out + err
        after = repetition_rows(db)
        assert after[: len(before)] == before and len(after) == 6 and len({(c, r) for c, r, _ in after}) == 6
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


def test_a_failed_repetition_on_a_lab_cluster_carries_the_clusters_health() -> None:
    """The evidence of a repetition that failed on a lab cluster: `ceph health detail`, in one line."""
    from storbench.errors import UserError
    from storbench.model import Case, CephLabPoint, LabPoint, PathTarget, WorkloadPoint, cluster_of
    from storbench.sessions import LabContext

    class Cluster:
        def __init__(self, answer: str | None) -> None:
            self.answer = answer

        def ceph(self, *args: str, timeout_s: float = 60) -> str:
            assert args == ("health", "detail")
            if self.answer is None:
                raise UserError("timed out")
            return self.answer

    lab = LabPoint(ceph=CephLabPoint(osds=2, osd_size_bytes=1 << 30, objectstore="bluestore", pool_size=2))
    case = Case(case_id="c", target=PathTarget(name="t", path="/t", size_bytes=1 << 20),
                workload=WorkloadPoint(rw="randread", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=1, ramp_s=0,
                                       direct=True, ioengine="libaio"), lab=lab)
    detail = ("HEALTH_WARN 1 osds down; Degraded data redundancy\n[WRN] OSD_DOWN: 1 osds down\n"
              "    osd.1 is down\n[WRN] PG_DEGRADED: 16 pgs degraded\n    pg 1.0 is active+undersized\n")
    session = LabContext(targets={}, ceph_socket_patterns=(), ceph_labs={cluster_of(lab): Cluster(detail)})  # type: ignore[dict-item]
    assert session.health_for(case) == ("HEALTH_WARN 1 osds down; Degraded data redundancy; [WRN] OSD_DOWN: 1 osds "
                                        "down; osd.1 is down; [WRN] PG_DEGRADED: 16 pgs degraded")  # the first 4 lines
    silent = LabContext(targets={}, ceph_socket_patterns=(), ceph_labs={cluster_of(lab): Cluster(None)})  # type: ignore[dict-item]
    assert "did not answer" in (silent.health_for(case) or "")
    assert LabContext(targets={}, ceph_socket_patterns=()).health_for(case) is None
