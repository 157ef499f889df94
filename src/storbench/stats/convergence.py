"""The answer converging: the sequential rule of a run that stopped when decided, replayed look by look. Pure.

The run loop looked after every round from ``min_rounds`` on (`stats.adaptive.decided_verdicts`). The replay
gives the same rule (`stats.sequential.decide`), at the look after each round r, the pairs of rounds before r
(`stats.adaptive.paired_rounds`, the pairs the run loop saw), so each row is what the rule said after r rounds,
with the interval at that look's level, and the last row is the verdict `decided_verdicts` gives on all the
pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from storbench.stats.adaptive import paired_rounds
from storbench.stats.compare_cells import PointComparison
from storbench.stats.observations import Attempts, Observation
from storbench.stats.selectors import Selector
from storbench.stats.sequential import Decision, SequentialPlan, SequentialVerdict, decide_metric


@dataclass(frozen=True)
class Look:
    """What the rule said after ``rounds`` pairs: the change B/A - 1 and its interval as fractions (None below
    two usable pairs), the interval's confidence (the look's spent error rate), and the decision."""

    rounds: int
    estimate: float | None
    low: float | None
    high: float | None
    confidence: float | None
    decision: Decision


@dataclass(frozen=True)
class Convergence:
    """One compared point and metric of an adaptive run: every look, and the rule's verdict on all the pairs."""

    comparison: PointComparison
    metric: str
    plan: SequentialPlan
    looks: tuple[Look, ...]
    verdict: SequentialVerdict

    @property
    def first_decided(self) -> int | None:
        """The rounds after which the rule first decided this comparison (None: never)."""
        return next((look.rounds for look in self.looks if look.decision != Decision.UNDECIDED), None)


def _look(verdict: SequentialVerdict) -> Look:
    change = verdict.change
    if change is None:
        return Look(verdict.rounds, None, None, None, None, verdict.decision)
    return Look(verdict.rounds, change.estimate, change.low, change.high, change.confidence, verdict.decision)


def replay(baseline: Sequence[float], candidate: Sequence[float], plan: SequentialPlan,
           rounds: Sequence[int] | None = None, rounds_run: int | None = None, metric: str = "") -> tuple[Look, ...]:
    """The rule at the look after r rounds for r = ``plan.min_rounds`` .. ``rounds_run``, each from the pairs of
    rounds before r (``rounds``: the round of each pair, default 0, 1, ...; ``rounds_run``: default the number of
    pairs). Only the last look when fewer rounds than ``min_rounds`` ran (a run stopped early); nothing below two
    pairs. Each look judges as the run did (`decide_metric`: a percentile without spread decides nothing; the
    replay had said "decided after 3 rounds" of a run that went on to its max)."""
    n = len(baseline)
    if len(candidate) != n:
        raise ValueError("paired samples differ in length")
    of_pair = tuple(range(n)) if rounds is None else tuple(rounds)
    if len(of_pair) != n:
        raise ValueError("one round per pair")
    total = n if rounds_run is None else rounds_run
    looks_at = sorted(set(range(plan.min_rounds, total + 1)) | ({total} if total >= 2 else set()))
    out = []
    for r in looks_at:
        k = sum(1 for i in of_pair if i < r)
        if k >= 2 or r == total:
            out.append(_look(decide_metric(metric, baseline[:k], candidate[:k], plan, r)))
    return tuple(out)


def convergence(observations: Sequence[Observation], baseline: Selector, candidate: Selector,
                metrics: Sequence[str], plan: SequentialPlan, attempts: Attempts | None = None) -> list[Convergence]:
    """Every named metric at every matched point (as `decided_verdicts` sees them), replayed look by look."""
    return [Convergence(p.comparison, p.metric, plan,
                        replay(p.baseline, p.candidate, plan, p.rounds, p.rounds_run, metric=p.metric),
                        decide_metric(p.metric, p.baseline, p.candidate, plan, p.rounds_run))
            for p in paired_rounds(observations, baseline, candidate, metrics, attempts)]


def stopping_rule(plan: SequentialPlan) -> str:
    """The stopping rule in words, with its constants."""
    margin = f"; equivalent when the interval lies within ±{100 * plan.margin:g} %" if plan.margin else \
        "; no margin, so never 'equivalent'"
    return (f"group-sequential, looks after rounds {plan.min_rounds}-{plan.max_rounds}, error rate "
            f"{100 * plan.alpha:g} % over all looks: each look tested at its power-family share of it (rho = "
            f"{plan.rho:g}) times {plan.calibration.factor:.2f}, the factor that makes the chance of calling no change "
            f"different at any look {100 * plan.alpha:g} % for normal log ratios (calibrated by simulation); "
            f"stop when every compared metric is decided or at {plan.max_rounds} rounds{margin}")
