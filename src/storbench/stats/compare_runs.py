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

from storbench.stats.compare_cells import (
    CellComparison,
    PointComparison,
    Verdict,
    cell_level,
    cost_cells,
    verdict_of,
)
from storbench.stats.estimate import Difference, estimate, welch_difference
from storbench.stats.metric_values import METRIC_VALUES
from storbench.stats.observations import Observation
from storbench.stats.point_summary import PointSummary
from storbench.stats.sequential import paired_change, paired_values
from storbench.stats.summary import run_samples


def _rows(point: PointSummary, observations: Sequence[Observation], chosen: frozenset[int] | None = None
          ) -> list[Observation]:
    """The point's successful repetitions (all clients merged), in every run it spans; of those, the ones a
    selector chose (``chosen``: their ids; None: all)."""
    return [o for o in observations if o.run_id in point.run_ids and o.case.case_id == point.case_id
            and not o.client and o.ok and o.direction == point.direction and (chosen is None or id(o) in chosen)]


def _cell(cell: CellComparison, comparison: PointComparison, a_rows: Sequence[Observation],
          b_rows: Sequence[Observation], confidence: float, shared: bool, costs: int) -> CellComparison:
    read = METRIC_VALUES[cell.metric.field]
    a, b = run_samples(a_rows, read), run_samples(b_rows, read)  # each run's mean, one sample a run
    base, cand = estimate(list(a.values()), confidence), estimate(list(b.values()), confidence)
    if base is None or cand is None or not base.mean:
        return replace(cell, baseline=base, candidate=cand, difference=None,
                       verdict=Verdict.UNDECIDED if comparison.comparable else Verdict.NOT_COMPARABLE)
    level = cell_level(cell.metric, confidence, costs)  # a cost cell's: shared along its line
    difference: Difference = welch_difference(base, cand, level, quantised=cell.metric.quantised)
    pairs = paired_values(a, b) if shared else None
    change = paired_change(*pairs, level) if pairs is not None else None
    if change is not None and not (change.log_sd == 0 and cell.metric.quantised):
        difference = change.difference(base.mean, "paired by run")
    elif difference.method == "welch":
        difference = replace(difference, method="welch over runs")
    verdict = verdict_of(cell.metric, difference) if comparison.comparable else Verdict.NOT_COMPARABLE
    return replace(cell, baseline=base, candidate=cand, difference=difference, verdict=verdict)


def run_level(comparisons: Sequence[PointComparison], observations: Sequence[Observation],
              confidence: float, chosen: tuple[frozenset[int], frozenset[int]] | None = None
              ) -> list[PointComparison]:
    """The comparisons whose sides span several runs (with a successful repetition each) with their cells on run
    means (``_cell``), marked ``per_run``; others as they are. Each side's figures are then its run means' (n:
    runs); both sides in the same runs are paired run by run."""
    out = []
    for c in comparisons:
        a_rows, b_rows = (_rows(point, observations, None if chosen is None else chosen[side])
                          for side, point in enumerate((c.baseline, c.candidate)))
        a, b = {o.run_id for o in a_rows}, {o.run_id for o in b_rows}
        if len(a) <= 1 and len(b) <= 1:
            out.append(c)
            continue
        # paired on the runs both sides have, when two or more (a side missing from one run had made the whole
        # comparison "runs apart": its run's cluster level in one side's mean, the answer lost)
        out.append(replace(c, per_run=True, cells=tuple(_cell(cell, c, a_rows, b_rows, confidence, len(a & b) >= 2,
                                                              cost_cells(c)) for cell in c.cells)))
    return out
