"""A comparison as data: the matched points (`PointComparison`), a verdict per metric (`CellComparison`), how
each cell stands to the stopping rule of a run repeated `until: decided` (`StoppingRule`, the rule's final answer:
`RuleAnswer`), the line under a table for each marker, and what a regression gate reads of them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from storbench.stats.estimate import CONFIDENCE, Difference, Estimate
from storbench.stats.metrics import COST_COMPARED, DESCRIPTIVE_METRICS, Metric
from storbench.stats.point_summary import PointSummary
from storbench.stats.selectors import Question
from storbench.stats.sequential import Decision, PairedChange


class Verdict(StrEnum):
    BETTER = "better"
    WORSE = "worse"
    UNDECIDED = "~"  # the interval includes no change: not shown different, which is no evidence of no difference
    NOT_COMPARABLE = "x"


class StoppingRule(StrEnum):
    """How a cell stands to the stopping rule of a run that stopped when decided (`repeat: {until: decided}`);
    a cell on no such run has none (None)."""

    IN = "in"  # the plan's question (a named metric at a point its baseline/candidate matched): the rule's interval
    OUTSIDE = "outside"  # not the question; still the rule's interval, which holds at whichever look the run stopped
    NOT_COVERED = "not covered"  # a plain interval on repetitions whose number the rule chose: descriptive


# The marker a cell outside the plan's question carries in tables, and the line under them that explains it.
STOPPING_RULE_MARKS = {StoppingRule.IN: "", StoppingRule.OUTSIDE: "†", StoppingRule.NOT_COVERED: "‡"}


def _pct(value: float) -> str:
    return f"{100 * value:+.1f}" if math.isfinite(value) else "+inf"


@dataclass(frozen=True)
class RuleAnswer:
    """The stopping rule's final verdict on one metric of a run's question (`repeat: {until: decided}`), as the
    run loop gave it on all the run's pairs, turned to the comparison's way round (baseline -> candidate): which
    way, the change with the interval of the last look, the rounds and the minutes the run took."""

    decision: Decision
    rounds: int  # rounds run (the last look's index)
    max_rounds: int
    margin: float | None
    change: PairedChange | None  # the candidate's change against the baseline; None below two pairs
    minutes: float | None  # the whole run, first repetition's start to the last one's end
    turned: bool = False  # the comparison is the question the other way round: the margin is on the question's ratio

    @property
    def reached_max(self) -> bool:
        return self.rounds >= self.max_rounds

    def text(self) -> str:
        """"equivalent within ±10 % (-1.8 % [-9.3, +6.3]) after 7 of at most 10 rounds, 12.5 min", "reached max 10
        rounds undecided (+2.0 % [-12.1, +18.3]), 25.0 min": what the run's stopping rule answered."""
        c = self.change
        shown = f" ({_pct(c.estimate)} % [{_pct(c.low)}, {_pct(c.high)}])" if c is not None else " (no pairs)"
        took = f", {self.minutes:.1f} min" if self.minutes is not None else ""
        if self.decision == Decision.UNDECIDED:
            if self.reached_max:
                return f"reached max {self.max_rounds} rounds undecided{shown}{took}"
            return (f"undecided after {self.rounds} of at most {self.max_rounds} rounds{shown}: the run ended "
                    f"before max (a --budget, or interrupted; --resume goes on){took}")
        what = self.decision.value
        if self.decision == Decision.EQUIVALENT:
            what += f" within ±{100 * (self.margin or 0.0):g} %"
            if self.turned:  # the inverse of a ratio inside 1 +- m may reach past +m: the margin is the question's
                what += " of the plan's question, asked the other way round"
        return f"{what}{shown} after {self.rounds} of at most {self.max_rounds} rounds{took}"


@dataclass(frozen=True)
class CellComparison:
    metric: Metric
    baseline: Estimate | None
    candidate: Estimate | None
    difference: Difference | None
    verdict: Verdict
    stopping_rule: StoppingRule | None = None  # None: no side ran under a rule that stopped when decided
    answer: RuleAnswer | None = None  # a cell of its run's question (StoppingRule.IN): the rule's final verdict

    @property
    def gated(self) -> bool:
        """Whether a regression gate may judge this cell: its interval holds at the error rate it claims (a plain
        interval on repetitions a stopping rule counted does not), and it is one of the metrics a gate is about
        (where the time goes and what an I/O costs, DESCRIPTIVE_METRICS, are descriptive)."""
        return self.stopping_rule != StoppingRule.NOT_COVERED and self.metric not in DESCRIPTIVE_METRICS


@dataclass(frozen=True)
class PointComparison:
    key: tuple[tuple[str, object], ...]  # the fields the two points were matched on, typed; lab settings as "lab.NAME"
    baseline: PointSummary
    candidate: PointSummary
    comparable: bool
    reason: str
    cells: tuple[CellComparison, ...]
    design: str = ""  # how the two sides ran (DESIGNS); "" when not known (built outside compare_observations)
    question: Question | None = None  # both sides in one run that stopped when decided: what that run asked
    per_run: bool = False  # a side spans several runs: its cells' samples are the runs' means (`stats.compare_runs`)
    # both sides in one run repeated `until: "ci <= N%"`: the level its points are shown at (97.5 % or 99 %), to
    # which its intervals' error rate is scaled (`stopped_alpha`); None otherwise
    ci_level: float | None = None

    def cell(self, field: str) -> CellComparison | None:
        return next((c for c in self.cells if c.metric.field == field), None)


def stopped_alpha(comparison: PointComparison, alpha: float) -> float:
    """The error rate of a comparison's intervals: ``alpha``, or for both sides in one run repeated until its
    intervals were narrow, ``alpha`` scaled as that run's level is to 95 %. Such a run stops when the spreads happen
    to look small, and a plain 95 % interval on its pairs then calls no change different in up to 6.3 % of
    comparisons; at the run's level in 1.0-3.1 % (bench/ci_stop.py's second table)."""
    return alpha if comparison.ci_level is None else alpha * (1 - comparison.ci_level) / (1 - CONFIDENCE)


def cost_level(confidence: float, cells: int) -> float:
    """The level of each cell of a comparison's cost line (each component's CPU per I/O, in all, IOPS per core):
    ``confidence``'s error rate shared among its ``cells`` (Bonferroni). At 95 % a cell, a Ceph line of eight cells
    marked a change (▲ or ▼) between sides with the same truth in 16-23 % of points; shared, in 1.1-3.5 %
    (bench/cost_compare.py)."""
    return 1 - (1 - confidence) / max(cells, 1)


def cell_level(metric: Metric, confidence: float, cost_cells: int) -> float:
    """The level of a cell's interval: a cost cell's shared among the ``cost_cells`` of its line (``cost_level``),
    any other cell's ``confidence``."""
    return cost_level(confidence, cost_cells) if metric in COST_COMPARED else confidence


def cost_cells(comparison: PointComparison) -> int:
    """How many cells the comparison's cost line has (those ``cost_level`` shares the error among)."""
    return cost_cell_count(comparison.baseline, comparison.candidate)


def cost_cell_count(baseline: PointSummary, candidate: PointSummary) -> int:
    """How many cost cells two points compare: each figure of COST_COMPARED both have, the baseline's not 0."""
    return sum(1 for m in COST_COMPARED if (b := baseline.metric(m.field)) is not None and b.mean
               and candidate.metric(m.field) is not None)


def verdict_of(metric: Metric, difference: Difference | None) -> Verdict:
    if difference is None or not difference.significant:
        return Verdict.UNDECIDED
    improved = difference.diff > 0 if metric.higher_is_better else difference.diff < 0
    return Verdict.BETTER if improved else Verdict.WORSE


def stopping_rule_lines(comparisons: Sequence[PointComparison]) -> list[str]:
    """One line for each marker the cells carry (``STOPPING_RULE_MARKS``): what those cells' intervals are."""
    rules = {cell.stopping_rule for c in comparisons for cell in c.cells}
    lines = []
    if StoppingRule.OUTSIDE in rules:
        asked = sorted({c.question.text(c.baseline.run_ids[0]) for c in comparisons if c.question is not None})
        what = f"the question its stopping rule asked ({'; '.join(asked)})" if asked else \
            "the question its stopping rule asked"
        lines.append(f"{STOPPING_RULE_MARKS[StoppingRule.OUTSIDE]} not {what}: the run did not wait for these "
                     "to be decided, so ~ there means undecided when it stopped, not no difference; their interval "
                     "is still the stopping rule's, valid at whichever look the run stopped")
    if StoppingRule.NOT_COVERED in rules:
        lines.append(f"{STOPPING_RULE_MARKS[StoppingRule.NOT_COVERED]} a plain interval on repetitions whose "
                     "number a stopping rule chose (a run that stopped when decided, compared across runs or "
                     "without pairs): descriptive, not covered by the rule's error rate; --fail-on-regression "
                     "leaves these out")
    return lines


@dataclass(frozen=True)
class Regression:
    comparison: PointComparison
    cell: CellComparison


def regressions(comparisons: Sequence[PointComparison], threshold_pct: float) -> list[Regression]:
    """Cells that are significantly worse and whose estimated change is at least ``threshold_pct`` bad (of those a
    gate may judge: ``CellComparison.gated``)."""
    found = []
    for comparison in comparisons:
        for cell in comparison.cells:
            if cell.verdict != Verdict.WORSE or cell.difference is None or not cell.gated:
                continue
            pct = cell.difference.change_pct  # NaN: worse than a baseline of 0, by any percent
            if math.isnan(pct) or abs(pct) >= threshold_pct:
                found.append(Regression(comparison, cell))
    return found


def tested_cells(comparisons: Sequence[PointComparison]) -> int:
    """How many cells a regression gate tests: every comparable cell with a change whose interval holds at the
    error rate it claims (``CellComparison.gated``)."""
    return sum(1 for c in comparisons if c.comparable for cell in c.cells
               if cell.difference is not None and cell.gated)


def ungated_cells(comparisons: Sequence[PointComparison]) -> int:
    """Comparable cells with a change that a regression gate leaves out (``StoppingRule.NOT_COVERED``)."""
    return sum(1 for c in comparisons if c.comparable for cell in c.cells
               if cell.difference is not None and cell.stopping_rule == StoppingRule.NOT_COVERED)
