"""Run one fio job locally: private files, own process group, a watchdog, nothing left behind."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from storbench.fio.jobfile import fio_command

_PR_SET_PDEATHSIG = 1
STDERR_TAIL_BYTES = 4000


@dataclass(frozen=True)
class FioProcessResult:
    """What happened to one fio process. ``timed_out`` means the watchdog killed it."""

    command: tuple[str, ...]
    returncode: int | None
    timed_out: bool
    output_text: str
    stderr_tail: str
    started_at_s: float
    finished_at_s: float


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """If storbench dies (even by kill -9), the kernel kills fio too: no orphan keeps writing."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def _kill_group(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the whole process group, then SIGKILL it if it has not gone after ``grace_s``."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(path: Path, limit: int = STDERR_TAIL_BYTES) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", errors="replace")


class LocalExecutor:
    """Runs fio as a child process on this machine."""

    name = "local"

    def __init__(self, fio_binary: str, *, term_grace_s: float = 3.0) -> None:
        self.fio_binary = fio_binary
        self.term_grace_s = term_grace_s

    def run(self, job_text: str, timeout_s: float, env: Sequence[tuple[str, str]] = (),
            fio_binary: str | None = None) -> FioProcessResult:
        with tempfile.TemporaryDirectory(prefix="storbench-") as private_dir:
            work = Path(private_dir)
            job_path = work / "job.fio"
            output_path = work / "fio-output.json"
            stderr_path = work / "stderr.txt"
            job_path.write_text(job_text)
            command = fio_command(fio_binary or self.fio_binary, str(job_path), str(output_path))
            started = time.time()
            timed_out = False
            with open(stderr_path, "wb") as stderr_file:
                process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=stderr_file,
                    stderr=subprocess.STDOUT,
                    cwd=private_dir,
                    env={**os.environ, **dict(env)} if env else None,
                    process_group=0,
                    preexec_fn=_die_with_parent,
                )
                try:
                    process.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    _kill_group(process, self.term_grace_s)
                except BaseException:
                    _kill_group(process, 0.5)
                    raise
            finished = time.time()
            output_text = output_path.read_text(errors="replace") if output_path.exists() else ""
            return FioProcessResult(
                command=command,
                returncode=None if timed_out else process.returncode,
                timed_out=timed_out,
                output_text=output_text,
                stderr_tail=_tail(stderr_path),
                started_at_s=started,
                finished_at_s=finished,
            )
