"""Drift over a run: does a case's result depend on when it ran? Least squares on relative deviations."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from storbench.stats.estimate import t_quantile
from storbench.stats.observations import METRIC_VALUES, Observation

MIN_SAMPLES = 6


@dataclass(frozen=True)
class DriftSample:
    minutes: float
    deviation_pct: float
    case_id: str
    repeat: int


@dataclass(frozen=True)
class Drift:
    """Slope of (metric / its case's mean - 1) against time, in percent per minute, with a t interval; shown as the
    change over the run's own length (``over_run``), never per a fixed span the run may not have lasted."""

    run_id: int
    direction: str
    metric: str
    samples: tuple[DriftSample, ...]
    slope_pct_per_min: float | None
    ci_low: float | None
    ci_high: float | None
    span_minutes: float = 0.0

    def over_run(self) -> tuple[float, float, float] | None:
        """(change, CI low, CI high) in percent from the first to the last repetition of the run."""
        if self.slope_pct_per_min is None or self.ci_low is None or self.ci_high is None:
            return None
        scale = self.span_minutes
        return self.slope_pct_per_min * scale, self.ci_low * scale, self.ci_high * scale

    @property
    def significant(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None and (self.ci_low > 0 or self.ci_high < 0)


def drift(observations: Sequence[Observation], run_id: int, direction: str, metric: str = "iops") -> Drift:
    read = METRIC_VALUES[metric]
    rows = [(o, value) for o in observations
            if o.run_id == run_id and o.direction_name == direction and o.ok and not o.client
            and (value := read(o)) is not None]
    by_case: dict[str, list[tuple[Observation, float]]] = {}
    for o, value in rows:
        by_case.setdefault(o.case.case_id, []).append((o, value))
    start = min((o.started_at_s for o, _ in rows), default=0.0)
    samples: list[DriftSample] = []
    for case_rows in by_case.values():
        if len(case_rows) < 2:
            continue
        mean = statistics.fmean(value for _, value in case_rows)
        if not mean:
            continue
        samples.extend(DriftSample((o.started_at_s - start) / 60, 100 * (value / mean - 1), o.case.case_id,
                                   o.rep_index) for o, value in case_rows)
    slope = low = high = None
    cases = len({s.case_id for s in samples})
    df = len(samples) - cases - 1  # each case's mean of time and of IOPS was estimated first
    if len(samples) >= MIN_SAMPLES and df >= 1:
        # within-case regression: centre time per case too, so gaps between cases (sequential order) do not
        # dilute the slope
        by_case_minutes: dict[str, list[float]] = {}
        for sample in samples:
            by_case_minutes.setdefault(sample.case_id, []).append(sample.minutes)
        case_mean_x = {case: statistics.fmean(xs) for case, xs in by_case_minutes.items()}
        xs = [s.minutes - case_mean_x[s.case_id] for s in samples]
        ys = [s.deviation_pct for s in samples]  # already centred per case
        sxx = sum(x * x for x in xs)
        if sxx > 0:
            b = sum(x * y for x, y in zip(xs, ys, strict=True)) / sxx
            residual = sum((y - b * x) ** 2 for x, y in zip(xs, ys, strict=True))
            half = t_quantile(0.95, df) * math.sqrt(residual / df / sxx)
            slope, low, high = b, b - half, b + half
    span = max((s.minutes for s in samples), default=0.0)
    return Drift(run_id, direction, metric, tuple(samples), slope, low, high, span)
