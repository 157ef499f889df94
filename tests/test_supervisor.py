"""The supervisor that starts every fio: it sees a process end the moment it does (on a pidfd, not by polling),
keeps its exit status, and its watchdog stops a process that runs too long, with everything below it."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from storbench.execute import supervisor
from storbench.execute.supervisor import supervise


def _no_polling(_: float) -> None:
    raise AssertionError("slept while waiting for the process: polled instead of waiting on its pidfd")


def test_the_end_of_a_process_is_seen_without_polling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`Popen.wait(timeout)` sleeps up to 50 ms between looks (a fio run's end seen about 25 ms late); the pidfd
    wait does not sleep at all."""
    monkeypatch.setattr(time, "sleep", _no_polling)
    ended = supervise(["sh", "-c", "sleep 0.3; echo said >&2; exit 3"], cwd=tmp_path, timeout_s=30, term_grace_s=1)
    assert ended.returncode == 3 and not ended.timed_out and ended.stderr_tail == "said\n"
    assert ended.finished_at_s - ended.started_at_s >= 0.3


def test_without_pidfds_it_polls_and_ends_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pidfd(pid: int) -> int:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    ended = supervise(["sh", "-c", "exit 4"], cwd=tmp_path, timeout_s=30, term_grace_s=1)
    assert ended.returncode == 4 and not ended.timed_out


@pytest.mark.parametrize("pidfds", [True, False])
def test_the_watchdog_stops_a_process_that_runs_too_long_and_its_children(
        pidfds: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not pidfds:
        monkeypatch.setattr(os, "pidfd_open", lambda pid: (_ for _ in ()).throw(OSError(38, "no pidfd")))
    # a session of its own, as fio's jobs are: the group's signal does not reach it
    ended = supervise(["sh", "-c", "setsid sleep 60 & echo $! > child; wait"], cwd=tmp_path, timeout_s=0.5,
                      term_grace_s=1)
    assert ended.timed_out and ended.returncode is None
    child = int((tmp_path / "child").read_text())
    assert not supervisor._running(child)  # the sleep below the shell went with it


# Run as pid 1 of a PID namespace of its own: a process held, ended and reaped; the next pid set to its pid (the
# namespace's ns_last_pid), so another program gets it; the held one signalled. Then a process listed, ended and its
# pid given to another program before it is held: that one is not held.
_REUSED_PID = """
import os, signal, subprocess, time
from storbench.execute import supervisor

def reuse(pid):
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(pid - 1))
    other = subprocess.Popen(["sleep", "60"])
    assert other.pid == pid, (other.pid, pid)
    return other

first = subprocess.Popen(["sleep", "60"])
listed = [child for child in supervisor.descendants(os.getpid()) if child[0] == first.pid]
(held,) = supervisor._held(listed)
first.kill(); first.wait()
other = reuse(first.pid)
assert not held.running()
held.signal(signal.SIGKILL)
print("other still running" if other.poll() is None else "other killed")
other.kill(); other.wait(); held.close()

second = subprocess.Popen(["sleep", "60"])
listed = [child for child in supervisor.descendants(os.getpid()) if child[0] == second.pid]
second.kill(); second.wait()
time.sleep(0.05)  # start times count clock ticks (10 ms): the other program starts in a later one
other = reuse(second.pid)
print("listed, then its pid another's:", "held" if supervisor._held(listed) else "not held")
other.kill(); other.wait()
"""


def test_a_process_held_is_not_mistaken_for_one_that_got_its_pid_later() -> None:
    """The watchdog lists the processes below fio, then signals them twice, seconds apart: one that ended in between
    and whose pid another program got must not be killed in its place (pidfds)."""
    import shutil
    import subprocess
    import sys

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare (a PID namespace)")
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:
        pytest.skip("no pidfds on this kernel (before 5.3): the watchdog signals by pid there")
    done = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", _REUSED_PID],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    assert lines[:2] == ["other still running", "listed, then its pid another's: not held"], done.stdout


def test_a_watchdog_longer_than_poll_takes_still_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A precondition's fill of a huge image gets a watchdog above 2^31-1 ms (24.8 days), the most one poll() takes:
    it waits in steps, rather than raising OverflowError and killing fio at once."""
    import subprocess

    from storbench.execute import supervisor

    process = subprocess.Popen(["sleep", "0.2"])
    supervisor.wait_exit(process, 50 * 86400.0)
    assert process.returncode == 0
    monkeypatch.setattr(supervisor, "POLL_MAX_MS", 50)  # steps of 50 ms: the deadline still holds
    process = subprocess.Popen(["sleep", "5"])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            supervisor.wait_exit(process, 0.3)
    finally:
        process.kill()
        process.wait()
