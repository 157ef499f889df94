"""Comparisons whose sides span several runs: the run is the sample unit (pure).

A run is one stretch of time on one instance of the storage: its repetitions share that instance and that time,
so over several runs they are not independent samples of the setting. Where a side's point spans more than one
run, each run's mean is one sample: both sides in the same runs are paired run by run (the ratio of each run's
two means: what differs from run to run cancels), else Welch's interval over the run means. A side of one run
against several then has no interval: its own run-to-run spread is unknown. Two single runs stay as they were
(repetitions, with the before/after caveat of `compare_design`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from storbench.stats.compare_cells import CellComparison, PointComparison, Verdict, verdict_of
from storbench.stats.estimate import Difference, estimate, welch_difference
from storbench.stats.observations import Observation, metric_value
from storbench.stats.point_summary import PointSummary
from storbench.stats.sequential import paired_change, paired_values


def ok_runs(point: PointSummary, observations: Sequence[Observation]) -> frozenset[int]:
    """The runs with a successful repetition of the point (a run whose repetitions all failed gives no sample)."""
    return frozenset(o.run_id for o in observations
                     if o.run_id in point.run_ids and o.case.case_id == point.case_id and not o.client and o.ok
                     and o.direction == point.direction)


def run_means(point: PointSummary, observations: Sequence[Observation], field: str) -> dict[int, float]:
    """Each run's mean of ``field`` over the point's successful repetitions in it (runs without a value left out)."""
    by_run: dict[int, list[float]] = {}
    for o in observations:
        if (o.run_id in point.run_ids and o.case.case_id == point.case_id and not o.client and o.ok
                and o.direction == point.direction and (value := metric_value(o, field)) is not None):
            by_run.setdefault(o.run_id, []).append(float(value))
    return {run: sum(values) / len(values) for run, values in by_run.items()}


def _cell(cell: CellComparison, comparison: PointComparison, observations: Sequence[Observation],
          confidence: float, shared: bool) -> CellComparison:
    field = cell.metric.field
    a = run_means(comparison.baseline, observations, field)
    b = run_means(comparison.candidate, observations, field)
    base, cand = estimate(list(a.values()), confidence), estimate(list(b.values()), confidence)
    if base is None or cand is None or not base.mean:
        return replace(cell, baseline=base, candidate=cand, difference=None,
                       verdict=Verdict.SAME if comparison.comparable else Verdict.NOT_COMPARABLE)
    difference: Difference = welch_difference(base, cand, confidence)
    pairs = paired_values(a, b) if shared else None
    change = paired_change(*pairs, confidence) if pairs is not None else None
    if change is not None and not (change.log_sd == 0 and cell.metric.quantised):
        mean = base.mean
        difference = Difference(diff=mean * change.estimate, ci_low=mean * change.low, ci_high=mean * change.high,
                                change_pct=100 * change.estimate, change_ci_low_pct=100 * change.low,
                                change_ci_high_pct=100 * change.high, method="paired by run", pairs=change.n)
    elif difference.method == "welch":
        difference = replace(difference, method="welch over runs")
    verdict = verdict_of(cell.metric, difference) if comparison.comparable else Verdict.NOT_COMPARABLE
    return replace(cell, baseline=base, candidate=cand, difference=difference, verdict=verdict)


def run_level(comparisons: Sequence[PointComparison], observations: Sequence[Observation],
              confidence: float) -> list[PointComparison]:
    """The comparisons whose sides span several runs (with a successful repetition each: ``ok_runs``) with their
    cells on run means (``_cell``), marked ``per_run``; others as they are. Each side's figures are then its run
    means' (n: runs); both sides in the same runs are paired run by run."""
    out = []
    for c in comparisons:
        a, b = ok_runs(c.baseline, observations), ok_runs(c.candidate, observations)
        if len(a) <= 1 and len(b) <= 1:
            out.append(c)
            continue
        shared = a == b
        out.append(replace(c, per_run=True, cells=tuple(_cell(cell, c, observations, confidence, shared)
                                                        for cell in c.cells)))
    return out
