"""The shape every telemetry source produces: named time series of one repetition. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class TelemetrySeries:
    """One metric of one entity over time.

    ``source`` says where it came from ("cpu", "process", "disk", "net", "memory", "ceph", "prometheus",
    "probe"); ``entity`` what it describes ("host", "fio", "vda", "eth0", "osd.0", ...); ``metric`` carries
    its unit ("busy_pct", "cpu_cores", "util_pct", "rx_bytes_per_s", ...). A rate sample at ``times_s[i]``
    covers the interval (``starts_s[i]``, ``times_s[i]``]; a gauge has ``starts_s == times_s``.
    """

    source: str
    entity: str
    metric: str
    starts_s: tuple[float, ...]
    times_s: tuple[float, ...]
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if not len(self.starts_s) == len(self.times_s) == len(self.values):
            raise ValueError("a series needs as many starts and times as values")


@dataclass(frozen=True)
class RepetitionTelemetry:
    """Everything sampled during one repetition, and the window fio measured in (ramp excluded)."""

    window_start_s: float
    window_end_s: float
    series: tuple[TelemetrySeries, ...]
    problems: tuple[str, ...] = ()  # sources that could not be read, e.g. an unreachable Prometheus

    def find(self, source: str, metric: str, entity: str | None = None) -> list[TelemetrySeries]:
        return [s for s in self.series if s.source == source and s.metric == metric and
                (entity is None or s.entity == entity)]


class TelemetrySource(Protocol):
    """Readings taken beside a repetition by something other than this host's sampler (an executor's remote
    machines: a Kubernetes cluster's nodes): ``start`` before fio, ``stop`` after it, which returns the series and
    the problems met (a source that cannot be read is a problem, never a failed repetition)."""

    def start(self) -> None: ...

    def stop(self) -> tuple[Sequence[TelemetrySeries], Sequence[str]]: ...


def in_window(series: TelemetrySeries, start_s: float, end_s: float) -> list[tuple[float, float]]:
    """(weight s, value) of the samples that belong to the window.

    A rate sample belongs when at least half of its interval lies inside the window; a gauge when its time
    does. If the window is shorter than any interval, the sample overlapping it most stands for it.
    """
    out = []
    for i in window_indices(series, start_s, end_s):
        begin, end = series.starts_s[i], series.times_s[i]
        out.append((1.0 if end <= begin else end - begin, series.values[i]))
    return out


def window_indices(series: TelemetrySeries, start_s: float, end_s: float) -> list[int]:
    """Indices of the samples that belong to the window (see ``in_window``)."""
    chosen: list[int] = []
    best: int | None = None
    best_overlap = 0.0
    for i, (begin, end) in enumerate(zip(series.starts_s, series.times_s, strict=True)):
        if end <= begin:  # gauge
            if start_s <= end <= end_s:
                chosen.append(i)
            continue
        overlap = max(0.0, min(end, end_s) - max(begin, start_s))
        if overlap >= 0.5 * (end - begin):
            chosen.append(i)
        if overlap > best_overlap:
            best, best_overlap = i, overlap
    if not chosen and best is not None:
        chosen.append(best)
    return chosen


def window_mean(series: TelemetrySeries, start_s: float, end_s: float) -> float | None:
    samples = in_window(series, start_s, end_s)
    weight = sum(w for w, _ in samples)
    if not samples or weight <= 0:
        return None
    return sum(w * v for w, v in samples) / weight


def window_max(series: TelemetrySeries, start_s: float, end_s: float) -> float | None:
    samples = in_window(series, start_s, end_s)
    return max((v for _, v in samples), default=None)
