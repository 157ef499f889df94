"""Running a command and keeping its complaint (shell): used by labs and targets alike; and holding Ctrl-C while
a clean-up runs to its end.

A command runs in a session of its own: the terminal's Ctrl-C goes to storbench, not to it, and storbench decides
(an interrupted wait kills the command, as `subprocess.run` does; a clean-up's commands run to their end).
"""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType

from storbench.errors import UserError


def run(argv: Sequence[str], *, timeout_s: float = 120, input_text: str | None = None) -> str:
    """Run a command; a failure is a UserError carrying the tail of its output."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, input=input_text,
                              check=False, start_new_session=True)
    except FileNotFoundError:
        raise UserError(f"{argv[0]} is not installed", hint="run scripts/setup.sh --labs") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"`{' '.join(argv[:4])} ...` did not finish in {timeout_s:g}s") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise UserError(f"`{' '.join(argv[:6])}` failed ({done.returncode}): {' | '.join(tail)}")
    return done.stdout


def attempt(argv: Sequence[str], *, timeout_s: float = 60) -> bool:
    """Run a command whose failure is no error (a clean-up's step: what it removes may be gone already), in a
    session of its own as `run`; whether it succeeded."""
    try:
        return subprocess.run(list(argv), capture_output=True, timeout=timeout_s, check=False,
                              start_new_session=True).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Around a clean-up that must run to its end (labs torn down, test files removed): a Ctrl-C (SIGINT) that
    comes meanwhile is held, and raised as KeyboardInterrupt once the block has ended, unless the block ends on
    an exception of its own, which goes on. Signals reach the main thread only: elsewhere nothing is held."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(signum)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:  # the block ended well: the interrupt it held is the caller's now
        raise KeyboardInterrupt
