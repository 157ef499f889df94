"""Running a command and keeping its complaint (shell): used by labs and targets alike; and holding Ctrl-C while
a clean-up runs to its end.

A command runs in a session of its own: the terminal's Ctrl-C goes to storbench, not to it, and storbench decides
(an interrupted wait kills the command's whole session; a clean-up's commands run to their end).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import FrameType

from storbench.errors import UserError
from storbench.redact import without_secrets


def child_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every program storbench starts runs with (fio, lab daemons, tools, perf): storbench's, less
    every variable that may hold a credential (`redact.without_secrets`), and ``extra`` (what fio needs for a
    target: CEPH_CONF, the S3 keys named for it)."""
    return {**without_secrets(os.environ), **(extra or {})}


def _finished(argv: Sequence[str], timeout_s: float, input_text: str | None) -> subprocess.CompletedProcess[str]:
    """The command run to its end in a session of its own. Past ``timeout_s``, or when storbench is interrupted
    while waiting, the whole session is killed (what the command started too), then TimeoutExpired or the
    interrupt goes on. It gets storbench's environment less its credentials (`child_environment`): no tool a
    lab or target runs needs the operator's keys."""
    with subprocess.Popen(list(argv), stdin=subprocess.PIPE if input_text is not None else None,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True, env=child_environment()) as process:
        try:
            out, err = process.communicate(input_text, timeout=timeout_s)
        except BaseException:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        return subprocess.CompletedProcess(list(argv), process.returncode, out, err)


def read_text(path: str) -> str:
    """A file of the kernel's (/proc, /sys) as text; '' when it cannot be read (gone, not there on this kernel)."""
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def run(argv: Sequence[str], *, timeout_s: float = 120, input_text: str | None = None) -> str:
    """Run a command; a failure is a UserError carrying the tail of its output."""
    try:
        done = _finished(argv, timeout_s, input_text)
    except FileNotFoundError:
        raise UserError(f"{argv[0]} is not installed", hint="storbench doctor says what installs it (sudo "
                        "storbench setup --labs installs what the labs run)") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"`{' '.join(argv[:4])} ...` did not finish in {timeout_s:g}s") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise UserError(f"`{' '.join(argv[:6])}` failed ({done.returncode}): {' | '.join(tail)}")
    return done.stdout


def attempt(argv: Sequence[str], *, timeout_s: float = 60) -> bool:
    """Run a command whose failure is no error (a clean-up's step: what it removes may be gone already), as `run`
    does; whether it succeeded."""
    try:
        return _finished(argv, timeout_s, None).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# What stops a command as Ctrl-C does: SIGINT, SIGTERM (`timeout`, `kill`, a CI job's end) and SIGHUP (a closed
# terminal or SSH session). Left to their defaults, the last two ended Python at once: no teardown, no clean-up.
INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def interrupts_handled(handler: Callable[[int, FrameType | None], None]) -> Iterator[dict[int, object] | None]:
    """SIGINT, SIGTERM and SIGHUP (``INTERRUPTS``) given to ``handler`` around the block; the handlers before it,
    yielded by signal, are back after. Signals reach the main thread only: elsewhere nothing changes (None is
    yielded)."""
    if threading.current_thread() is not threading.main_thread():
        yield None
        return
    previous: dict[int, object] = {signum: signal.signal(signum, handler) for signum in INTERRUPTS}
    try:
        yield previous
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)  # type: ignore[arg-type]


@contextmanager
def interrupts_held(first_held: Callable[[], None] | None = None) -> Iterator[None]:
    """Around a clean-up that must run to its end (labs torn down, test files removed): a Ctrl-C (SIGINT), or a
    SIGTERM or SIGHUP, that comes meanwhile is held, and given to the handler before once the block has ended
    (Python's own raises KeyboardInterrupt; a command's may hold it too: `cli.common.interrupted_once`), unless the
    block ends on an exception of its own, which goes on. ``first_held`` is called at the first press held (the CLI
    says so there; it runs in a signal handler). Signals reach the main thread only: elsewhere nothing is held."""
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)
        if first_held is not None and len(held) == 1:
            first_held()

    with interrupts_handled(hold) as previous:
        yield
    if held and previous is not None:  # the block ended well: the interrupt it held is the handler's before it now
        before = previous[held[0]]
        if callable(before):
            before(held[0], None)
        elif before != signal.SIG_IGN:  # Python's default for SIGINT, and SIGTERM's or SIGHUP's end: interrupted
            raise KeyboardInterrupt
