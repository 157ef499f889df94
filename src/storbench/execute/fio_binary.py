"""Find a fio binary and ask it what it supports (shell)."""

from __future__ import annotations

import os
import shutil
import subprocess

from storbench.errors import UserError
from storbench.fio.options import FioCapabilities, parse_engines, parse_option_names, parse_version


def find_fio(explicit: str | None = None) -> str:
    candidate = explicit or os.environ.get("STORBENCH_FIO") or "fio"
    path = shutil.which(candidate)
    if path is None:
        raise UserError(
            f"fio not found ({candidate!r})",
            hint="install it (Debian: apt-get install fio) or pass --fio PATH / set STORBENCH_FIO",
        )
    return path


def _ask(binary: str, *args: str) -> str:
    try:
        done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"cannot run {binary} {' '.join(args)}: {exc}", hint="check the fio installation") from None
    return done.stdout


def fio_version(binary: str) -> str:
    """What ``binary --version`` says it is ("fio-3.33"). Raises UserError when it is not fio."""
    try:
        return parse_version(_ask(binary, "--version"))
    except ValueError as exc:
        raise UserError(f"{binary} does not look like fio: {exc}", hint="pass --fio PATH to a real fio") from None


def fio_capabilities(binary: str, engines: tuple[str, ...] = ()) -> FioCapabilities:
    """Version, option names, engines, and each requested engine's own options."""
    return FioCapabilities(
        binary=binary,
        version=fio_version(binary),
        options=parse_option_names(_ask(binary, "--cmdhelp")),
        engines=parse_engines(_ask(binary, "--enghelp")),
        engine_options=tuple((e, parse_option_names(_ask(binary, f"--enghelp={e}"))) for e in engines),
    )
