"""Drift over a run: does a case's result depend on when it ran? Least squares on log ratios to each case's
geometric mean, so a change and its interval are ratios: never below -100 %."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from storbench.model import operation_of, rate_name
from storbench.stats.estimate import t_quantile
from storbench.stats.metric_values import METRIC_VALUES
from storbench.stats.observations import Observation

MIN_SAMPLES = 6


@dataclass(frozen=True)
class DriftSample:
    minutes: float
    deviation_pct: float  # from its case's geometric mean, in percent
    case_id: str
    repeat: int


@dataclass(frozen=True)
class Drift:
    """The change of a metric over time, with a t interval, estimated on the log scale
    (each repetition's metric over its case's geometric mean) and given back as ratios: a change of -x % is the
    metric times (1 - x/100), so neither the change nor its interval can fall below -100 %.

    ``rate`` names the metric as a reader would (``write IOPS``, ``creates/s``)."""

    run_id: int
    direction: str
    metric: str
    samples: tuple[DriftSample, ...]
    # the fitted slope and its 95 % interval as estimated: natural log of the ratio per minute (None: too few
    # samples); every percentage below is derived from it
    log_per_min: tuple[float, float, float] | None
    span_minutes: float = 0.0
    rate: str = ""
    operation: str = ""  # when the drift is of one operation (create, GET) rather than a direction of block I/O

    def __post_init__(self) -> None:
        if not self.rate:
            object.__setattr__(self, "rate", f"{self.direction} IOPS")

    def _per_10min(self, index: int) -> float | None:
        return None if self.log_per_min is None else _pct(10 * self.log_per_min[index])

    @property
    def slope_pct_per_10min(self) -> float | None:
        """The change per 10 minutes, in percent (unbounded above where a run of seconds would overflow it)."""
        return self._per_10min(0)

    @property
    def ci_low(self) -> float | None:
        return self._per_10min(1)

    @property
    def ci_high(self) -> float | None:
        return self._per_10min(2)

    def over_run(self) -> tuple[float, float, float] | None:
        """(change, CI low, CI high) in percent from the first to the last repetition of the run: the fitted ratio
        per minute compounded over the run's span."""
        if self.log_per_min is None:
            return None
        slope, low, high = (_pct(v * self.span_minutes) for v in self.log_per_min)
        return slope, low, high

    def trend_pct(self, minutes: float) -> float | None:
        """The fitted line at ``minutes``, in percent from the cases' geometric means (for figures)."""
        if self.log_per_min is None or not self.samples:
            return None
        mean_x = statistics.fmean(s.minutes for s in self.samples)
        mean_log = statistics.fmean(math.log1p(s.deviation_pct / 100) for s in self.samples)
        return _pct(mean_log + self.log_per_min[0] * (minutes - mean_x))

    @property
    def significant(self) -> bool:
        return self.log_per_min is not None and (self.log_per_min[1] > 0 or self.log_per_min[2] < 0)


def _pct(log_ratio: float) -> float:
    """A log ratio as a percent change (unbounded above: infinite where it would overflow)."""
    return 100 * math.expm1(log_ratio) if log_ratio < 700 else math.inf


def drift(observations: Sequence[Observation], run_id: int, direction: str, metric: str = "iops",
          operation: str | None = None) -> Drift:
    """The drift of ``metric`` in ``direction`` over run ``run_id``; with ``operation``, only the points whose
    operations are it (``operation_of``: ``read``/``write`` for block I/O, ``create``, ``GET``...)."""
    read = METRIC_VALUES[metric]
    rows = [(o, value) for o in observations
            if o.run_id == run_id and o.direction_name == direction and o.ok and not o.client
            and (operation is None or operation_of(o.case.workload.rw, direction) == operation)
            and (value := read(o)) is not None and value > 0]  # a ratio of nothing is no ratio
    by_case: dict[str, list[tuple[Observation, float]]] = {}
    for o, value in rows:
        by_case.setdefault(o.case.case_id, []).append((o, value))
    start = min((o.started_at_s for o, _ in rows), default=0.0)
    samples: list[DriftSample] = []
    logs: list[float] = []
    for case_rows in by_case.values():
        if len(case_rows) < 2:
            continue
        mean_log = statistics.fmean(math.log(value) for _, value in case_rows)
        for o, value in case_rows:
            logs.append(math.log(value) - mean_log)
            samples.append(DriftSample((o.started_at_s - start) / 60, 100 * math.expm1(logs[-1]), o.case.case_id,
                                       o.rep_index))
    fitted = fit_drift(samples, logs)
    span = max((s.minutes for s in samples), default=0.0)
    rws = {o.case.workload.rw for o, _ in rows}
    rate = rate_name(next(iter(rws)), direction) if operation is not None and rws else f"{direction} IOPS"
    if metric != "iops":
        rate = f"{direction} {metric}"
    return Drift(run_id, direction, metric, tuple(samples), fitted, span, rate,
                 "" if operation in (None, direction) else operation)


def fit_drift(samples: Sequence[DriftSample], logs: Sequence[float]) -> tuple[float, float, float] | None:
    """The within-case slope of ``logs`` (each sample's log metric less its case's mean) on time, with its 95 % t
    interval: (slope, low, high) in log ratio per minute; None with fewer than `MIN_SAMPLES` samples or no degree of
    freedom left. Time is centred per case too, so gaps between cases (a sequential order) do not dilute the
    slope. `bench/drift_rule.py` gives its false alarms and power."""
    cases = len({s.case_id for s in samples})
    df = len(samples) - cases - 1  # each case's mean of time and of the log metric was estimated first
    if len(samples) < MIN_SAMPLES or df < 1:
        return None
    by_case_minutes: dict[str, list[float]] = {}
    for sample in samples:
        by_case_minutes.setdefault(sample.case_id, []).append(sample.minutes)
    case_mean_x = {case: statistics.fmean(xs) for case, xs in by_case_minutes.items()}
    xs = [s.minutes - case_mean_x[s.case_id] for s in samples]
    sxx = sum(x * x for x in xs)
    if sxx <= 0:
        return None
    b = sum(x * y for x, y in zip(xs, logs, strict=True)) / sxx
    residuals = [y - b * x for x, y in zip(xs, logs, strict=True)]
    variance = sum(r * r for r in residuals) / df / sxx
    half = t_quantile(0.95, df) * math.sqrt(variance * serial_inflation(samples, residuals))
    return b, b - half, b + half


def serial_inflation(samples: Sequence[DriftSample], residuals: Sequence[float]) -> float:
    """How much a slope's variance grows when repetitions next to each other in time share part of their luck
    (caches, background work): (1 + r) / (1 - r) for the residuals' lag-1 autocorrelation r in run order, raised for
    its bias in short series (by 2 (1 + 3 r) / n), never below 0 nor above 0.9. Without it, a run whose
    repetitions' noise follows AR(1) with 0.5 was called drifted in 21-27 % of runs without any drift
    (bench/drift_rule.py)."""
    ordered = [r for _, r in sorted(zip((s.minutes for s in samples), residuals, strict=True))]
    n = len(ordered)
    energy = sum(r * r for r in ordered)
    if n < 3 or energy <= 0:
        return 1.0
    r1 = sum(ordered[i] * ordered[i - 1] for i in range(1, n)) / energy
    r1 = min(0.9, max(0.0, r1 + 2 * (1 + 3 * r1) / n))
    return (1 + r1) / (1 - r1)


def run_drifts(observations: Sequence[Observation], run_id: int, metric: str = "iops") -> list[Drift]:
    """One drift per operation of run ``run_id``: read, write and trim IOPS of its block I/O, and each metadata
    operation (creates/s, stats/s, deletes/s) and object request (PUT requests/s...) apart, in the order first
    seen."""
    operations: dict[tuple[str, str], None] = {}
    for o in observations:
        if o.run_id == run_id and o.ok and not o.client and o.direction_name:
            operations[(o.direction_name, operation_of(o.case.workload.rw, o.direction_name))] = None
    return [drift(observations, run_id, direction, metric, operation) for direction, operation in operations]
