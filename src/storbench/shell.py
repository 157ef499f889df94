"""Running a command and keeping its complaint (shell): used by labs and targets alike."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from storbench.errors import UserError


def run(argv: Sequence[str], *, timeout_s: float = 120, input_text: str | None = None) -> str:
    """Run a command; a failure is a UserError carrying the tail of its output."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, input=input_text,
                              check=False)
    except FileNotFoundError:
        raise UserError(f"{argv[0]} is not installed", hint="run scripts/setup.sh --labs") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"`{' '.join(argv[:4])} ...` did not finish in {timeout_s:g}s") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise UserError(f"`{' '.join(argv[:6])}` failed ({done.returncode}): {' | '.join(tail)}")
    return done.stdout
