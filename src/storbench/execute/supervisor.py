"""The one place storbench starts fio (shell): its own process group, killed with storbench (parent-death
signal), a watchdog that stops it in two stages (SIGTERM to the group, then SIGKILL), and the tail of what it
said on standard error. Both the local and the hosts executor start fio through `supervise`; what a fio process
left is a `FioProcessResult`. Here too: this machine's processes as /proc lists them (`process_dirs`), for the labs
and targets that look for processes."""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from storbench.shell import child_environment

_PR_SET_PDEATHSIG = 1
STDERR_TAIL_BYTES = 4000
POLL_MAX_MS = 2**31 - 1  # the longest wait poll() takes
INTERRUPT_GRACE_S = 0.5  # storbench itself is being stopped: fio gets little time to go


class StreamReader(Protocol):
    """Reads a child's standard output while it runs (a thread of its own)."""

    def start(self, stream: IO[bytes]) -> None: ...

    def finish(self) -> None: ...


@dataclass(frozen=True)
class Supervised:
    """How one supervised process ended. ``timed_out``: the watchdog killed it (``returncode`` is then None)."""

    command: tuple[str, ...]
    returncode: int | None
    timed_out: bool
    stderr_tail: str
    started_at_s: float
    finished_at_s: float


@dataclass(frozen=True)
class FioProcessResult(Supervised):
    """What happened to one fio process: how it ended (``timed_out`` means the watchdog killed it), and what it
    wrote for storbench to read (``output_text``: its JSON)."""

    output_text: str
    logs: tuple[tuple[str, str], ...] = ()  # fio's timeline logs (`fio.jobfile.timeline_logs`): (name, text)


def process_dirs(*, others: bool = False) -> list[Path]:
    """/proc/PID of every process on this machine; with ``others``, of every process but storbench itself."""
    own = str(os.getpid())
    return [entry for entry in Path("/proc").iterdir() if entry.name.isdigit() and not (others and entry.name == own)]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """If storbench dies (even by kill -9), the kernel kills fio too: no orphan keeps writing."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def stat_fields(pid: int | str) -> list[str]:
    """/proc/PID/stat's fields from the third (state) on ([] when gone): the command name may hold ')'."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return []


def descendants(pid: int) -> list[tuple[int, str]]:
    """Every process below ``pid`` (children, theirs, ...), read from /proc, with its start time (field 22, to
    know it again). fio's job processes call setsid(), so they are in neither fio's process group nor its
    session: killing the group alone leaves a job stuck in libnfs or librbd running, reparented to init."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in process_dirs():
        fields = stat_fields(entry.name)
        if len(fields) > 19 and fields[1].isdigit():
            children.setdefault(int(fields[1]), []).append((int(entry.name), fields[19]))
    found: list[tuple[int, str]] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child[0])
    return found


def kill_group(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the whole process group and every process below it (fio's jobs are sessions of their own),
    then SIGKILL them if they have not gone after ``grace_s``. The processes below are held by pidfds from the
    moment they are listed (their start times checked): one that ends meanwhile and whose pid another program then
    gets is not signalled."""
    below = _held(descendants(process.pid))  # before the parent dies and its jobs are reparented
    try:
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            for held in below:
                held.signal(sig)
            try:
                process.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                continue
            deadline = time.time() + wait_s  # and the jobs below it (a job stuck in a library may ignore SIGTERM)
            while time.time() < deadline and any(held.running() for held in below):
                time.sleep(0.05)
            if not any(held.running() for held in below):
                return
    finally:
        for held in below:
            held.close()


@dataclass
class _Held:
    """A process by its pid and, where the kernel has them (5.3 on), a pidfd that stays its own after it ends."""

    pid: int
    pidfd: int | None

    def signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self.pidfd is None:
                os.kill(self.pid, sig)
            else:
                signal.pidfd_send_signal(self.pidfd, sig)

    def running(self) -> bool:
        """Alive and not a zombie (a zombie's parent, init once it is reparented, reaps it)."""
        return _running(self.pid) if self.pidfd is None else not _pidfd_ended(self.pidfd, 0)

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _running(pid: int) -> bool:
    """Alive and not a zombie (a zombie's parent, init once it is reparented, reaps it)."""
    fields = stat_fields(pid)
    return bool(fields) and fields[0] != "Z"


def _held(processes: Sequence[tuple[int, str]]) -> list[_Held]:
    """Each of ``processes`` (pid, start time as listed) held (`_Held`); one that has already ended is left out,
    as is a pid that another program got between the listing and its pidfd (its start time is another)."""
    held = []
    for pid, started in processes:
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        except OSError:  # no pidfds here
            held.append(_Held(pid, None))
            continue
        fields = stat_fields(pid)  # read after the pidfd: the same start time, the same process
        if len(fields) > 19 and fields[19] == started:
            held.append(_Held(pid, pidfd))
        else:
            os.close(pidfd)
    return held


def _pidfd_ended(pidfd: int, timeout_s: float) -> bool:
    """Whether the process behind ``pidfd`` ends within ``timeout_s`` (0: has ended): a pidfd reads ready once its
    process has ended."""
    poller = select.poll()  # not select.select: it refuses a descriptor above 1023 (many clients, many files)
    poller.register(pidfd, select.POLLIN)
    deadline = time.monotonic() + timeout_s
    ended = poller.poll(min(POLL_MAX_MS, max(0, math.ceil(timeout_s * 1000))))
    while not ended and (left_s := deadline - time.monotonic()) > 0:  # poll takes at most 2^31-1 ms (24 days)
        ended = poller.poll(min(POLL_MAX_MS, math.ceil(left_s * 1000)))
    return bool(ended)


def wait_exit(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Wait until ``process`` ends, at most ``timeout_s`` (then `subprocess.TimeoutExpired`), and reap it. On a
    pidfd, which is readable the moment the process ends; `Popen.wait` with a timeout polls instead, sleeping up to
    50 ms between looks (about 25 ms late on average: 2.5 % of a 1 s fio run). Kernels before 5.3 poll."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except OSError:
        process.wait(timeout=timeout_s)
        return
    try:
        ended = _pidfd_ended(pidfd, timeout_s)
    finally:
        os.close(pidfd)
    if not ended:
        raise subprocess.TimeoutExpired(process.args, timeout_s)
    process.wait()


def tail(path: Path, limit: int = STDERR_TAIL_BYTES) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", errors="replace")


def supervise(command: Sequence[str], *, cwd: Path, timeout_s: float, term_grace_s: float,
              env: Mapping[str, str] | None = None, stdout_reader: StreamReader | None = None) -> Supervised:
    """Run ``command`` in ``cwd`` (a private directory) until it ends or ``timeout_s`` passes.

    Standard error goes to ``cwd/stderr.txt``, and so does standard output unless ``stdout_reader`` reads it.
    ``env`` is added to storbench's environment less its credentials (``shell.child_environment``). When storbench
    itself is interrupted (KeyboardInterrupt, any exception while waiting), the process group is killed before the
    exception goes on."""
    stderr_path = cwd / "stderr.txt"
    started = time.time()
    timed_out = False
    with open(stderr_path, "wb") as stderr_file:
        process = subprocess.Popen(
            tuple(command),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout_reader is not None else stderr_file,
            stderr=stderr_file,
            cwd=cwd,
            env=child_environment(env),
            process_group=0,
            preexec_fn=_die_with_parent,
        )
        if stdout_reader is not None:
            assert process.stdout is not None
            stdout_reader.start(process.stdout)
        try:
            wait_exit(process, timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(process, term_grace_s)
        except BaseException:
            kill_group(process, INTERRUPT_GRACE_S)
            raise
    finished = time.time()
    if stdout_reader is not None:
        stdout_reader.finish()
        assert process.stdout is not None
        process.stdout.close()
    return Supervised(command=tuple(command), returncode=None if timed_out else process.returncode,
                      timed_out=timed_out, stderr_tail=tail(stderr_path), started_at_s=started,
                      finished_at_s=finished)
