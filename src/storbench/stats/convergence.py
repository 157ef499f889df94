"""The answer converging: the sequential rule of a run that stopped when decided, replayed look by look. Pure.

The run loop looked after every round from ``min_rounds`` on (`stats.adaptive.decided_verdicts`). The replay
gives the same rule (`stats.sequential.decide`) the first k pairs of rounds (`stats.adaptive.paired_rounds`,
the pairs the run loop saw) for every k, so each row is what the rule said after k rounds, with the interval at
that look's level, and the last row is the verdict `decided_verdicts` gives on all the pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from storbench.stats.adaptive import paired_rounds
from storbench.stats.compare import PointComparison, Selector
from storbench.stats.observations import Observation
from storbench.stats.sequential import Decision, SequentialPlan, SequentialVerdict, decide


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


def replay(baseline: Sequence[float], candidate: Sequence[float], plan: SequentialPlan) -> tuple[Look, ...]:
    """The rule after k pairs for k = ``plan.min_rounds`` .. ``len(baseline)`` (only the last k when fewer pairs
    than ``min_rounds`` exist: a run stopped early; nothing below two pairs)."""
    n = len(baseline)
    if len(candidate) != n:
        raise ValueError("paired samples differ in length")
    ks = sorted(set(range(plan.min_rounds, n + 1)) | ({n} if n >= 2 else set()))
    return tuple(_look(decide(baseline[:k], candidate[:k], plan)) for k in ks)


def convergence(observations: Sequence[Observation], baseline: Selector, candidate: Selector,
                metrics: Sequence[str], plan: SequentialPlan) -> list[Convergence]:
    """Every named metric at every matched point (as `decided_verdicts` sees them), replayed look by look."""
    return [Convergence(p.comparison, p.metric, plan, replay(p.baseline, p.candidate, plan),
                        decide(p.baseline, p.candidate, plan))
            for p in paired_rounds(observations, baseline, candidate, metrics)]


def stopping_rule(plan: SequentialPlan) -> str:
    """The stopping rule in words, with its constants."""
    margin = f"; equivalent when the interval lies within ±{100 * plan.margin:g} %" if plan.margin else \
        "; no margin, so never 'equivalent'"
    return (f"group-sequential, looks after rounds {plan.min_rounds}-{plan.max_rounds}, error rate "
            f"{100 * plan.alpha:g} % spent over the looks (Lan-DeMets power family, rho = {plan.rho:g}); "
            f"stop when every compared metric is decided or at {plan.max_rounds} rounds{margin}")
