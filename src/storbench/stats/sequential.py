"""Paired % change and a stopping rule that stays valid however often it looks. Pure.

A comparison that runs its two arms in balanced rounds (A B, B A, ...) yields one pair per round; the ratio
B/A of a pair cancels slow drift. The change is estimated on the log scale, exp(mean(log B/A)) - 1, with a
Student-t interval on the log ratios (it cannot go below -100 %).

Repetitions that stop "when the answer is known" look at the data after every round. Stopping at the first
look whose ordinary 95 % interval excludes zero inflates false differences far beyond 5 % (optional
stopping). Here the looks are fixed in advance (rounds ``min_rounds`` .. ``max_rounds``) and the error rate
``alpha`` is split over them by a power-family spending function, alpha * (k/K)**rho: look k
uses a t interval at level 1 - alpha_k with alpha_k = alpha * ((k/K)**rho - ((k-1)/K)**rho). The alpha_k add
up to alpha, so by the union bound the chance that any look's interval misses the true change is at most
alpha, exactly for normal log ratios at any number of pairs (no large-sample approximation, which matters at
3-30 repetitions). It is a conservative group-sequential design (Bonferroni over the looks; Lan & DeMets,
"Discrete sequential boundaries for clinical trials", Biometrika 70(3), 1983, for the spending function); a
larger rho keeps most of alpha for the later looks, where decisions are likely.

Decisions, each with error rate at most ``alpha``: **different** (the interval excludes zero), **equivalent**
(the whole interval inside +-margin: two one-sided tests in interval form; "not significantly different" is
never reported as equivalent), or **undecided**, with an estimate of how many more rounds would decide it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import TypeVar

K = TypeVar("K", int, tuple[int, int])  # a round: its index, or (run id, index)


@lru_cache(maxsize=4096)
def _t_quantile(p: float, df: int) -> float:
    from scipy.special import stdtrit  # on first use: see stats.estimate.t_quantile

    return float(stdtrit(df, p))


class Decision(StrEnum):
    HIGHER = "higher"  # B is higher than A (interval above zero)
    LOWER = "lower"  # B is lower than A
    EQUIVALENT = "equivalent"  # within +-margin
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class SequentialPlan:
    """The looks and the error rate, fixed before the first repetition."""

    min_rounds: int = 3
    max_rounds: int = 30
    alpha: float = 0.05
    margin: float | None = None  # equivalence margin as a fraction (0.05 = +-5 %); None: never "equivalent"
    rho: float = 2.0  # power of the alpha spending function

    def __post_init__(self) -> None:
        if not 2 <= self.min_rounds <= self.max_rounds:
            raise ValueError("need 2 <= min_rounds <= max_rounds")
        if not 0 < self.alpha < 1:
            raise ValueError("alpha must be between 0 and 1")
        if self.margin is not None and not 0 < self.margin < 1:
            raise ValueError("margin must be between 0 and 1 (a fraction)")

    @property
    def looks(self) -> int:
        return self.max_rounds - self.min_rounds + 1

    def look_alpha(self, rounds: int) -> float:
        """The error rate spent at the look after ``rounds`` rounds (0 before min_rounds or after max_rounds)."""
        k = rounds - self.min_rounds + 1
        if not 1 <= k <= self.looks:
            return 0.0
        spent = self.alpha * (k / self.looks) ** self.rho
        before = self.alpha * ((k - 1) / self.looks) ** self.rho
        return float(spent - before)


@dataclass(frozen=True)
class PairedChange:
    """The change B/A - 1 of paired repetitions, as fractions, with a two-sided interval at ``confidence``."""

    n: int
    estimate: float
    low: float
    high: float
    confidence: float
    log_sd: float  # standard deviation of the log ratios


def paired_change(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> PairedChange | None:
    """exp(mean(log(b_i / a_i))) - 1 with a t interval on the log ratios. None below two positive pairs."""
    if len(a) != len(b):
        raise ValueError("paired samples differ in length")
    logs = [math.log(y / x) for x, y in zip(a, b, strict=True) if x > 0 and y > 0]
    n = len(logs)
    if n < 2:
        return None
    mean = sum(logs) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / (n - 1))
    half = _t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    return PairedChange(n=n, estimate=math.expm1(mean), low=math.expm1(mean - half), high=math.expm1(mean + half),
                        confidence=confidence, log_sd=sd)


PairedValues = tuple[list[float], list[float]]  # (a_i, b_i) of the rounds both sides have, in round order


def paired_values(a: Mapping[K, float | int | None], b: Mapping[K, float | int | None]) -> PairedValues | None:
    """Two sides' values by round (a[i] and b[i] ran next to each other), paired: the rounds both have, in order.
    None when fewer than two, or when a round both have lacks a positive value on either side (a ratio needs
    both): then the interval is the unpaired one."""
    common = sorted(set(a) & set(b))
    pairs = [(a[k], b[k]) for k in common]
    if len(pairs) < 2 or any(x is None or y is None or x <= 0 or y <= 0 for x, y in pairs):
        return None
    return [float(x) for x, _ in pairs if x is not None], [float(y) for _, y in pairs if y is not None]


def rounds_run(a: Mapping[int, object], b: Mapping[int, object]) -> int:
    """The rounds run so far, as the rule counts its looks, from each side's values by round (repetition index):
    the highest round either side has, plus one (a round that failed on one side still was a look)."""
    return max((*a, *b), default=-1) + 1


@dataclass(frozen=True)
class SequentialVerdict:
    decision: Decision
    rounds: int
    change: PairedChange | None  # at this look's level (None before two pairs)
    more_rounds: int | None  # for an undecided answer: rounds that would likely decide it (None: not within max)
    final: bool  # True when the comparison should stop (decided, or max_rounds reached)


def decide(a: Sequence[float], b: Sequence[float], plan: SequentialPlan, rounds: int | None = None
           ) -> SequentialVerdict:
    """The verdict at the look after ``rounds`` rounds (default ``len(a)``) from the pairs of repetitions both sides
    have (a[i], b[i] ran next to each other). Looks are indexed by round, not by pair: a round whose repetition
    failed on one side still spent its look, so it is not spent again."""
    rounds = len(a) if rounds is None else rounds
    alpha_k = plan.look_alpha(rounds)
    change = paired_change(a, b, 1 - alpha_k) if alpha_k > 0 else paired_change(a, b)
    decision = Decision.UNDECIDED
    if alpha_k > 0 and change is not None:
        if change.low > 0:
            decision = Decision.HIGHER
        elif change.high < 0:
            decision = Decision.LOWER
        elif plan.margin is not None and -plan.margin < change.low and change.high < plan.margin:
            decision = Decision.EQUIVALENT
    final = decision != Decision.UNDECIDED or rounds >= plan.max_rounds
    more = None if final or change is None else rounds_to_decide(change, plan, rounds)
    return SequentialVerdict(decision=decision, rounds=rounds, change=change, more_rounds=more, final=final)


def rounds_to_decide(change: PairedChange, plan: SequentialPlan, rounds: int) -> int | None:
    """How many more rounds would likely decide, if the estimate and the spread stay as they are: the first
    later look whose interval half-width is below the distance to the nearest decision (zero, or the margin).
    None when even ``max_rounds`` would not."""
    log_estimate = math.log1p(change.estimate)
    distance = abs(log_estimate)
    if plan.margin is not None:
        distance = max(distance, math.log1p(plan.margin) - abs(log_estimate))
    if change.log_sd == 0:
        return 1
    for later in range(max(rounds + 1, plan.min_rounds), plan.max_rounds + 1):
        alpha_k = plan.look_alpha(later)
        half = _t_quantile(1 - alpha_k / 2, later - 1) * change.log_sd / math.sqrt(later)
        if half < distance:
            return later - rounds
    return None
