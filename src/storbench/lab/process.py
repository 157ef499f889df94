"""Start, find and stop lab daemons (shell)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from storbench.execute.supervisor import process_dirs, stat_fields
from storbench.shell import child_environment

# Every daemon started, kept referenced: a Popen object dropped while its process runs is reaped by the next
# Popen anywhere in storbench (subprocess._cleanup), and a daemon that exited at once would vanish before its start
# time is recorded (labdir.record_daemon reads it from /proc); kept, it stays a zombie until it is waited for.
_STARTED: dict[int, subprocess.Popen[bytes]] = {}


def start_daemon(argv: Sequence[str], log: Path, *, env: dict[str, str] | None = None, cwd: Path | None = None) -> int:
    """Start a long-running process in its own session (it outlives storbench); returns its pid. It runs in
    ``cwd``, by default its log's directory (inside the lab), never where storbench was started, with ``env`` or
    else storbench's environment less its credentials (`shell.child_environment`): a lab's daemons, network-facing
    ones among them, never hold the operator's keys."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        process = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True, env=child_environment() if env is None else env,
                                   cwd=cwd or log.parent)
    for pid, earlier in list(_STARTED.items()):  # the ones that have ended since (recorded long ago): reaped now
        if earlier.poll() is not None:
            del _STARTED[pid]
    _STARTED[process.pid] = process
    return process.pid


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (PID 1 here reaps slowly)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def pids_with(marker: str) -> list[int]:
    """Processes whose command line contains ``marker`` (e.g. the lab's directory). For tests' checks that
    nothing is left running: a command line is anyone's to choose, so the labs never kill by it (they kill
    the daemons recorded in lab.labdir)."""
    found = []
    for entry in process_dirs(others=True):
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def kill_all(pids: Sequence[int], *, timeout_s: float = 15) -> None:
    """SIGKILL (a throwaway lab needs no graceful stop) and wait until they are gone."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.time() + timeout_s
    while time.time() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)


def pids_in_namespaces(names: Sequence[str], root: str = "/run/netns") -> dict[str, list[int]]:
    """The processes in each named network namespace of ``names`` (under ``root``, where `ip netns` keeps them),
    from /proc: one `ip netns pids` a namespace would cost a command per host."""
    wanted: dict[tuple[int, int], str] = {}
    for name in names:
        with contextlib.suppress(OSError):
            found = os.stat(f"{root}/{name}")
            wanted[(found.st_dev, found.st_ino)] = name
    pids: dict[str, list[int]] = {name: [] for name in wanted.values()}
    for entry in process_dirs(others=True):
        with contextlib.suppress(OSError):
            network = (entry / "ns" / "net").stat()
            if (namespace := wanted.get((network.st_dev, network.st_ino))) is not None:
                pids[namespace].append(int(entry.name))
    return pids


def program_and_parent(pid: int) -> tuple[str, int] | None:
    """The program a process runs (/proc/PID/exe) and its parent's pid; None when it is gone or not ours to see."""
    try:
        program = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None
    fields = stat_fields(pid)  # from the state on: the parent's pid next
    return (program, int(fields[1])) if len(fields) > 1 else None


def pids_serving(accept: Callable[[str], bool]) -> list[int]:
    """This user's processes given ``--server=ADDRESS,PORT`` for an address ``accept`` takes (fio servers), in a
    network namespace other than this process's, from /proc: a lab's server whose namespace was deleted under it
    runs on with no namespace name to find it by. One on the machine's own network, or another user's, is not the
    lab's (a site network may use the same addresses)."""
    found = []
    euid, own_network = os.geteuid(), os.stat("/proc/self/ns/net").st_ino
    for entry in process_dirs(others=True):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if not any(arg.startswith(b"--server=") and accept(arg[len(b"--server="):].decode(errors="replace"))
                       for arg in argv):
                continue
            owner, network = entry.stat().st_uid, (entry / "ns" / "net").stat().st_ino
        except OSError:
            continue
        if owner == euid and network != own_network:
            found.append(int(entry.name))
    return found
