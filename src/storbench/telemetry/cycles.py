"""CPU cycles beside a repetition (shell, `telemetry.cycles`): one `perf stat` per process name running when the
repetition starts (every thread of its processes) and one for the whole machine, interrupted when fio ends; the
counts are handed to ``telemetry.perf`` to read. A TelemetrySource, as an executor's remote machines are."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from storbench.shell import child_environment
from storbench.telemetry.perf import (
    CYCLES_EVENT,
    HOST_ENTITY,
    PMU_DIRECTORY,
    cycles_unavailable,
    parse_perf_stat,
    perf_stat_arguments,
)
from storbench.telemetry.series import TelemetrySeries
from storbench.telemetry.sources import read_processes

STOP_TIMEOUT_S = 5.0


def machine_cycles_unavailable() -> str | None:
    """Why this machine cannot count cycles (None: it can)."""
    try:
        pmus = os.listdir(PMU_DIRECTORY)
    except OSError:
        pmus = []
    return cycles_unavailable(shutil.which("perf"), pmus)


def pids_named(names: Sequence[str]) -> dict[str, list[int]]:
    """The running processes of each name (as in /proc/PID/comm; the sampler's own scan), names without one left
    out."""
    found: dict[str, list[int]] = {}
    for process in read_processes(frozenset(names), frozenset()):
        found.setdefault(process.name, []).append(process.pid)
    return found


class CycleCounter:
    """``start`` before fio, ``stop`` after it: each process name's cycles per second (``perf`` source, entity the
    name, metric ``<event>_per_s``) and the machine's (entity ``host``) over the time between them."""

    def __init__(self, process_names: Sequence[str], event: str = CYCLES_EVENT) -> None:
        self.names = tuple(process_names)
        self.event = event
        self._perf = shutil.which("perf") or "perf"
        self._counting: list[tuple[str, subprocess.Popen[bytes], Path]] = []
        self._directory: tempfile.TemporaryDirectory[str] | None = None
        self._started_s = 0.0
        self._problems: list[str] = []

    def start(self) -> None:
        self._directory = tempfile.TemporaryDirectory(prefix="storbench-perf-")
        self._problems = []
        groups: list[tuple[str, list[int] | None]] = [(HOST_ENTITY, None), *pids_named(self.names).items()]
        for entity, pids in groups:
            output = Path(self._directory.name) / f"{len(self._counting)}.csv"
            try:
                process = subprocess.Popen(perf_stat_arguments(self._perf, self.event, pids, str(output)),
                                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, start_new_session=True,
                                           env=child_environment())
            except OSError as error:
                self._problems.append(f"perf stat for {entity}: {error}")
                continue
            self._counting.append((entity, process, output))
        self._started_s = time.time()

    def stop(self) -> tuple[Sequence[TelemetrySeries], Sequence[str]]:
        ended_s = time.time()
        series: list[TelemetrySeries] = []
        for _entity, process, _output in self._counting:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGINT)  # perf prints its counts when interrupted
        for entity, process, output in self._counting:
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                self._problems.append(f"perf stat for {entity} did not stop in {STOP_TIMEOUT_S:g} s")
                continue
            try:
                text = output.read_text(errors="replace")
            except OSError as error:
                self._problems.append(f"perf stat for {entity}: {error}")
                continue
            count, why_not = parse_perf_stat(text, self.event)
            if count is None:
                self._problems.append(f"{entity}: {why_not}")
                continue
            rate = count / max(ended_s - self._started_s, 1e-9)
            series.append(TelemetrySeries("perf", entity, f"{self.event}_per_s", (self._started_s,), (ended_s,),
                                          (rate,)))
        self._counting = []
        if self._directory is not None:
            self._directory.cleanup()
            self._directory = None
        return series, tuple(self._problems)
