"""Assemble one repetition's telemetry from the sources' raw readings. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from storbench.model import Case, RepetitionOutcome
from storbench.telemetry.ceph_counters import CephSnapshot, ceph_series
from storbench.telemetry.proc import LinkRates, ProcSnapshot, series_from_snapshots
from storbench.telemetry.series import RepetitionTelemetry, TelemetrySeries


def measured_window(outcome: RepetitionOutcome, case: Case) -> tuple[float, float]:
    """(start, end) of the time fio measured: it ends when fio ended (the executor's ``measured_end_s`` where it
    knows it, as for pods it deletes afterwards; else when the repetition finished) and lasts fio's own measured
    runtime (which excludes ramp_time and file layout); the planned runtime stands in when fio reported none."""
    runtimes_ms = [d.runtime_ms for client in outcome.clients for d in client.directions if d.runtime_ms > 0]
    runtime_s = max(runtimes_ms) / 1000.0 if runtimes_ms else case.workload.runtime_s
    if case.workload.rw == "metadata" and runtimes_ms:  # create, stat, delete one after another: their times add
        longest: dict[str, int] = {}
        for client in outcome.clients:
            for d in client.directions:
                longest[d.direction.value] = max(longest.get(d.direction.value, 0), d.runtime_ms)
        runtime_s = sum(longest.values()) / 1000.0
    end = outcome.finished_at_s if outcome.measured_end_s is None else min(outcome.measured_end_s,
                                                                            outcome.finished_at_s)
    return max(outcome.started_at_s, end - runtime_s), end


def ceiling_series(ceiling_iops: float | None, window: tuple[float, float]) -> list[TelemetrySeries]:
    if ceiling_iops is None:
        return []
    return [TelemetrySeries("probe", "fio-null", "ceiling_iops", (window[1],), (window[1],), (ceiling_iops,))]


def repetition_telemetry(window: tuple[float, float], proc: Sequence[ProcSnapshot], ceph: Sequence[CephSnapshot],
                         remote: Sequence[TelemetrySeries], ceiling_iops: float | None, clock_ticks_per_s: int,
                         links: LinkRates, problems: Sequence[str]) -> RepetitionTelemetry:
    series = [*series_from_snapshots(proc, clock_ticks_per_s, links), *ceph_series(ceph), *remote,
              *ceiling_series(ceiling_iops, window)]
    return RepetitionTelemetry(window[0], window[1], tuple(series), tuple(dict.fromkeys(problems)))
