"""Paired % change and a stopping rule that stays valid however often it looks. Pure.

A comparison that runs its two arms in balanced rounds (A B, B A, ...) yields one pair per round; the ratio
B/A of a pair cancels slow drift. The change is estimated on the log scale, exp(mean(log B/A)) - 1, with a
Student-t interval on the log ratios (it cannot go below -100 %).

Repetitions that stop "when the answer is known" look at the data after every round. Stopping at the first
look whose ordinary 95 % interval excludes zero inflates false differences far beyond 5 % (optional
stopping). Here the looks are fixed in advance (rounds ``min_rounds`` .. ``max_rounds``): a group-sequential
design whose boundaries have a power-family spending shape, alpha_k = alpha * ((k/K)**rho - ((k-1)/K)**rho) for
look k of K (Lan & DeMets, "Discrete sequential boundaries for clinical trials", Biometrika 70(3), 1983, for
the shape; a larger rho keeps most of the error rate for the later looks, where decisions are likely), scaled
by one factor c so that the chance an A/A comparison (no true change) is called different at any look is
exactly ``alpha``: look k uses a t interval at level 1 - c * alpha_k.

The shares alone add up to alpha, so by the union bound (Bonferroni over the looks) they would be valid but
spend only 1-3 % of a 5 % error rate, because the looks' t statistics are strongly correlated. For normal log
ratios the joint distribution of the looks' t statistics under no change does not depend on the spread, so c
is found once per (min_rounds, max_rounds, rho, alpha) by simulating that distribution (``calibrate``:
a fixed seed, so the same plan always gets the same boundaries; cached), with no large-sample approximation,
which matters at 3-30 repetitions. c is at least 1 (the union bound) and at most alpha / max(alpha_k) (no
single look may spend more than alpha).

Decisions: **different** (the interval excludes zero; error rate ``alpha`` over all looks), **equivalent**
(the whole interval inside +-margin: two one-sided tests in interval form, each at c * alpha_k / 2, so a true
change exactly at the margin is called equivalent in at most about alpha / 2 of comparisons; "not
significantly different" is never reported as equivalent), or **undecided**, with an estimate of how many
more rounds would decide it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import lru_cache
from typing import TypeVar

from storbench.stats.estimate import Difference
from storbench.stats.metrics import QUANTISED_FIELDS
from storbench.stats.special import t_quantile

K = TypeVar("K", int, tuple[int, ...])  # a round: its index, or (run id, index, stretch)

CALIBRATION_SEED = 20_240_611
CALIBRATION_PATHS = 200_000  # simulated A/A comparisons: the A/A rate's Monte Carlo error is about +-0.1 % (2 SE)
CALIBRATION_VALUES = 6_000_000  # normals at most, so a schedule of many rounds simulates fewer paths
CALIBRATION_MIN_PATHS = 20_000
_CHUNK_VALUES = 500_000  # normals simulated at a time (bounded memory)


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

    @property
    def calibration(self) -> Calibration:
        """The boundaries of this look schedule (computed on first use, then cached for every plan like it)."""
        return calibrate(self.min_rounds, self.max_rounds, self.rho, self.alpha)

    def share(self, rounds: int) -> float:
        """The power-family spending function's share of alpha at the look after ``rounds`` rounds, before
        calibration (the shares add up to alpha; 0 before min_rounds or after max_rounds)."""
        k = rounds - self.min_rounds + 1
        if not 1 <= k <= self.looks:
            return 0.0
        return _share(k, self.looks, self.rho, self.alpha)

    def look_alpha(self, rounds: int) -> float:
        """The error rate of the look after ``rounds`` rounds: its share times the calibration factor, so that
        an A/A comparison is called different at some look with chance alpha (0 before min_rounds or after
        max_rounds)."""
        k = rounds - self.min_rounds + 1
        if not 1 <= k <= self.looks:
            return 0.0
        return self.calibration.look_alphas[k - 1]


def _share(k: int, looks: int, rho: float, alpha: float) -> float:
    return float(alpha * (k / looks) ** rho - alpha * ((k - 1) / looks) ** rho)


@dataclass(frozen=True)
class Calibration:
    """The boundaries of one look schedule: every look's share of alpha times ``factor``, the factor that makes
    the chance of calling an A/A comparison different at any look equal to alpha (normal log ratios)."""

    factor: float
    look_alphas: tuple[float, ...]  # the error rate of each look, min_rounds .. max_rounds
    paths: int  # the simulated A/A comparisons it was found from (0: exact, a single look)


@lru_cache(maxsize=64)
def calibrate(min_rounds: int, max_rounds: int, rho: float, alpha: float) -> Calibration:
    """The calibration factor c of a look schedule, by simulation with a fixed seed (deterministic; cached).

    Under no change the log ratios are N(0, sigma^2) and the t statistic of the first n of them, T_n, has a joint
    distribution over the looks that does not depend on sigma. A comparison is called different at look n when
    its interval at level 1 - c * alpha_n excludes zero, i.e. when its two-sided p-value p_n < c * alpha_n, so at
    some look exactly when c > min_n p_n / alpha_n. c is the alpha-quantile of that minimum over simulated
    paths, kept within [1, alpha / max(alpha_n)]: at least the union bound's, and no look's error rate above
    alpha (each look alone is an exact t test, so a larger c could not keep the overall rate at alpha)."""
    import numpy as np  # lazy: only the calibration simulates; loading numpy costs every `run` a tenth of a second
    from scipy.special import stdtr, stdtrit  # lazy: on first use, see stats.estimate.t_quantile

    looks = max_rounds - min_rounds + 1
    shares = np.array([_share(k, looks, rho, alpha) for k in range(1, looks + 1)])
    ceiling = alpha / float(shares.max())
    if looks == 1:
        return Calibration(factor=1.0, look_alphas=(alpha,), paths=0)
    paths = min(CALIBRATION_PATHS, max(CALIBRATION_MIN_PATHS, CALIBRATION_VALUES // max_rounds))
    n = np.arange(min_rounds, max_rounds + 1, dtype=float)
    df = n - 1
    # only |T_n| beyond the widest boundary c may reach can matter: their p-values are computed, the rest skipped
    lowest = stdtrit(df, 1 - ceiling * shares / 2)
    rng = np.random.default_rng(CALIBRATION_SEED)
    rows = max(1, _CHUNK_VALUES // max_rounds)
    minima = []
    for start in range(0, paths, rows):
        x = rng.standard_normal((min(rows, paths - start), max_rounds))
        sums = np.cumsum(x, axis=1)[:, min_rounds - 1:]
        squares = np.cumsum(x * x, axis=1)[:, min_rounds - 1:]
        between = sums * sums / n  # n * mean^2
        t = np.sqrt(between / ((squares - between) / df))  # |T_n|
        beyond = t > lowest
        ratio = np.full(t.shape, np.inf)
        look = np.nonzero(beyond)[1]
        ratio[beyond] = 2 * stdtr(df[look], -t[beyond]) / shares[look]
        minima.append(ratio.min(axis=1))
    found = float(np.quantile(np.concatenate(minima), alpha, method="inverted_cdf"))
    factor = min(max(found, 1.0), ceiling)
    return Calibration(factor=factor, look_alphas=tuple(float(factor * a) for a in shares), paths=paths)


@dataclass(frozen=True)
class PairedChange:
    """The change B/A - 1 of paired repetitions, as fractions, with a two-sided interval at ``confidence``."""

    n: int
    estimate: float
    low: float
    high: float
    confidence: float
    log_sd: float  # standard deviation of the log ratios

    def difference(self, mean: float, method: str) -> Difference:
        """The change as a comparison's `Difference` against a baseline of ``mean`` (in the metric's unit and in %),
        made by ``method`` ("paired", "sequential", "paired by run")."""
        return Difference(diff=mean * self.estimate, ci_low=mean * self.low, ci_high=mean * self.high,
                          change_pct=100 * self.estimate, change_ci_low_pct=100 * self.low,
                          change_ci_high_pct=100 * self.high, method=method, pairs=self.n)


def _expm1_or_inf(x: float) -> float:
    return math.expm1(x) if x < 700 else math.inf


def paired_change(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> PairedChange | None:
    """exp(mean(log(b_i / a_i))) - 1 with a t interval on the log ratios. None below two positive pairs."""
    if len(a) != len(b):
        raise ValueError("paired samples differ in length")
    logs = [math.log(y / x) for x, y in zip(a, b, strict=True) if x > 0 and y > 0]
    n = len(logs)
    if n < 2:
        return None
    mean = sum(logs) / n
    # exact (rational sums): a percentile in one histogram bin a side gives equal log ratios, whose spread must be 0
    # (`decide_metric`, `compare` test it); the two-pass sum had left 1.8e-18 at ten pairs: a zero-width "worse"
    sd = statistics.stdev(logs)
    half = t_quantile(0.5 + confidence / 2, n - 1) * sd / math.sqrt(n)
    # at a first look's tiny error rate with two pairs the t quantile is huge: the high end is then unbounded
    return PairedChange(n=n, estimate=math.expm1(mean), low=math.expm1(mean - half), high=_expm1_or_inf(mean + half),
                        confidence=confidence, log_sd=sd)


PairedValues = tuple[list[float], list[float]]  # (a_i, b_i) of the rounds both sides have, in round order


def paired_values(a: Mapping[K, float | int | None], b: Mapping[K, float | int | None], *,
                  positive: bool = True) -> PairedValues | None:
    """Two sides' values by round (a[i] and b[i] ran next to each other), paired: the rounds both have, in order.
    None when fewer than two, or when a round both have lacks a value (``positive``: a positive one, as a ratio
    needs) on either side: then the interval is the unpaired one."""
    common = sorted(set(a) & set(b))
    pairs = [(a[k], b[k]) for k in common]
    if len(pairs) < 2 or any(x is None or y is None or (positive and (x <= 0 or y <= 0)) for x, y in pairs):
        return None
    return [float(x) for x, _ in pairs if x is not None], [float(y) for _, y in pairs if y is not None]


def rounds_run(a: Collection[int], b: Collection[int]) -> int:
    """The rounds run so far, as the rule counts its looks, from the rounds each side attempted (repetition
    indices, ok or failed: a round that failed on one side still was a look): the rounds both sides reached. A
    round one side has not reached (a run stopped halfway through it) is not a look yet: counted, it would test
    the pairs before it at a later look's level than the run loop did."""
    if not a or not b:
        return 0
    return min(max(a), max(b)) + 1


@dataclass(frozen=True)
class SequentialVerdict:
    decision: Decision
    rounds: int
    change: PairedChange | None  # at this look's level (None before two pairs)
    more_rounds: int | None  # for an undecided answer: rounds that would likely decide it (None: even
    # max_rounds would likely not, or the answer is final)
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


def decide_metric(metric: str, a: Sequence[float], b: Sequence[float], plan: SequentialPlan, rounds: int
                  ) -> SequentialVerdict:
    """`sequential.decide` for one metric: a percentile read from histogram bins whose pairs all have one ratio (no
    spread: each side's rounds in one bin) decides nothing, as `compare` judges it (its interval of width zero had
    stopped the run on a claim `compare` then would not make)."""
    verdict = decide(a, b, plan, rounds)
    change = verdict.change
    if metric in QUANTISED_FIELDS and change is not None and change.log_sd == 0:
        return replace(verdict, decision=Decision.UNDECIDED, more_rounds=None, final=rounds >= plan.max_rounds)
    return verdict


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
        half = t_quantile(1 - alpha_k / 2, later - 1) * change.log_sd / math.sqrt(later)
        if half < distance:
            return later - rounds
    return None
