"""Mean, Student-t confidence interval and coefficient of variation over independent repetitions."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from storbench.stats import special

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    """A metric over n repetitions. ``ci_low``/``ci_high`` are None when no interval exists: n < 2, or rounds
    chosen for their small spread (``estimate(..., interval=False)``)."""

    n: int
    mean: float
    stddev: float
    ci_low: float | None
    ci_high: float | None
    confidence: float = CONFIDENCE
    # each repetition's value by round, (run id, repetition index, stretch) -> value, when the point's repetitions
    # all ran in one run that alternated its cases round by round (`stats.observations.alternated_rounds`): what
    # pairs it with another point of that run; () otherwise
    rounds: tuple[tuple[tuple[int, ...], float], ...] = field(default=(), compare=False, repr=False)
    # n counts runs, not repetitions: a point pooled over several runs, each run's mean one sample (its rounds then
    # keyed (run, -1): what pairs two points of the same runs run by run)
    per_run: bool = field(default=False, compare=False)

    @property
    def has_interval(self) -> bool:
        """Whether there is an interval: not below 2 repetitions, nor over rounds chosen for their small spread (a
        steady-state window, whose spread understates the noise)."""
        return self.ci_low is not None and self.ci_high is not None

    @property
    def half_width(self) -> float | None:
        """The t interval's half-width (the upper bound's distance: a lower bound is cut at zero, see
        ``estimate``)."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return self.ci_high - self.mean

    @property
    def cv_pct(self) -> float | None:
        if self.n < 2 or self.mean == 0:
            return None
        return 100.0 * self.stddev / abs(self.mean)

    @property
    def half_width_pct(self) -> float | None:
        hw = self.half_width
        return None if hw is None or self.mean == 0 else 100.0 * hw / abs(self.mean)


def t_quantile(confidence: float, df: float) -> float:
    """The two-sided interval's Student t quantile, t(df) at 0.5 + confidence / 2."""
    return special.t_quantile(0.5 + confidence / 2, df)


def samples_for_half_width(half: float, n: int, target: float, confidence: float, most: int) -> int | None:
    """The fewest samples (more than ``n``) whose t interval would be ``target`` wide or less, if the spread stayed
    as it is now, when ``n`` samples give ``half`` (both half-widths in one unit): t(m-1) s / sqrt(m) falls
    with the t quantile as well as with sqrt(m). None beyond ``most``, or without a spread."""
    if n < 2 or half <= 0 or target <= 0:
        return None
    sd = half * math.sqrt(n) / t_quantile(confidence, n - 1)
    for m in range(n + 1, most + 1):
        if t_quantile(confidence, m - 1) * sd / math.sqrt(m) <= target:
            return m
    return None


def estimate(values: Sequence[float], confidence: float = CONFIDENCE, *, interval: bool = True) -> Estimate | None:
    """Student-t interval for the mean of independent repetitions: mean ± t(n-1) · s / sqrt(n), its lower bound
    cut at zero when no value is negative. ``interval=False``: the mean and spread alone, for values chosen for
    their small spread (a steady-state window), whose t interval would be too narrow."""
    data = [float(v) for v in values if v is not None and not math.isnan(v)]
    if not data:
        return None
    mean = statistics.fmean(data)
    if len(data) < 2:
        return Estimate(n=1, mean=mean, stddev=0.0, ci_low=None, ci_high=None, confidence=confidence)
    stddev = statistics.stdev(data)
    if not interval:
        return Estimate(n=len(data), mean=mean, stddev=stddev, ci_low=None, ci_high=None, confidence=confidence)
    half = t_quantile(confidence, len(data) - 1) * stddev / math.sqrt(len(data))
    # a mean of values none of which is negative (IOPS, bandwidth, latency) is not negative either: cutting the
    # interval at zero loses no coverage, and a bound like "-3,000 IOPS" (n=2: t = 12.7) is not shown
    low = max(0.0, mean - half) if min(data) >= 0 else mean - half
    return Estimate(n=len(data), mean=mean, stddev=stddev, ci_low=low, ci_high=mean + half, confidence=confidence)


@dataclass(frozen=True)
class Difference:
    """candidate - baseline, with Welch's confidence interval; also as percent of the baseline mean."""

    diff: float
    ci_low: float | None
    ci_high: float | None
    change_pct: float  # NaN against a baseline mean of 0 (a failover figure): the change is then ``diff`` alone
    change_ci_low_pct: float | None
    change_ci_high_pct: float | None
    # "welch": independent samples; "paired": per-pair ratios of alternating repetitions; "none": a side has no
    # interval (n < 2, or a steady-state window chosen for its small spread)
    method: str = "welch"
    pairs: int = 0  # for "paired": how many pairs

    @property
    def significant(self) -> bool:
        """The interval excludes no change: the percent interval when there is one (the ratio's, see
        ``welch_difference``), else the difference's."""
        if self.change_ci_low_pct is not None and self.change_ci_high_pct is not None:
            return self.change_ci_low_pct > 0 or self.change_ci_high_pct < 0
        if self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_low > 0 or self.ci_high < 0


def paired_shift(baseline: Sequence[float], candidate: Sequence[float], confidence: float = CONFIDENCE, *,
                 method: str = "paired") -> Difference | None:
    """The mean of paired differences candidate_i - baseline_i with its t interval: for figures that can be 0 (a
    blackout of none, a dip to nothing), where no ratio of a pair exists. Its percent is over the baseline's mean
    (NaN, with no percent interval, from a mean of 0). None below two pairs, or when every pair differs alike."""
    n = len(baseline)
    if n != len(candidate):
        raise ValueError("paired samples differ in length")
    if n < 2:
        return None
    shifts = [c - b for b, c in zip(baseline, candidate, strict=True)]
    mean = sum(shifts) / n
    sd = statistics.stdev(shifts)  # exact (rational sums): equal shifts give 0, not a rounding residue
    if sd == 0:
        return None
    half = t_quantile(confidence, n - 1) * sd / math.sqrt(n)
    base = sum(baseline) / n
    if not base:
        return Difference(mean, mean - half, mean + half, math.nan, None, None, method=method, pairs=n)
    return Difference(mean, mean - half, mean + half, 100 * mean / base, 100 * (mean - half) / base,
                      100 * (mean + half) / base, method=method, pairs=n)


def welch_difference(baseline: Estimate, candidate: Estimate, confidence: float = CONFIDENCE, *,
                     quantised: bool = False) -> Difference:
    """Welch's t interval for the difference of two means (unequal variances, Welch-Satterthwaite df).

    The percent change is the ratio of the means minus one, and its interval is the ratio's, built on the log
    scale (the delta method: var(log mean) ~ s^2 / (n mean^2), Welch-Satterthwaite df over those two terms) and
    taken back: it respects the ratio's range, so a change can never be below -100 % and a tenfold rise is as
    far from no change as a tenfold fall. Both means must be positive (every metric compared is); otherwise the
    difference interval over the baseline mean stands in.
    """
    diff = candidate.mean - baseline.mean
    base = baseline.mean
    pct = 100.0 * diff / base if base else math.nan
    if not (baseline.has_interval and candidate.has_interval):  # n < 2, or a steady-state window
        return Difference(diff, None, None, pct, None, None, method="none")
    vb = baseline.stddev**2 / baseline.n
    vc = candidate.stddev**2 / candidate.n
    se = math.sqrt(vb + vc)
    if se == 0 or (quantised and not (baseline.stddev and candidate.stddev)):
        # every repetition of both sides the same value, or (``quantised``: a percentile read from histogram bins)
        # of one side: a spread below the bins' resolution is unknown, not none; a zero-width interval, or one as
        # narrow as the other side's spread alone, would call a step of a bin (1.6 %) a change
        return Difference(diff, None, None, pct, None, None, method="none")
    df = (vb + vc) ** 2 / ((vb**2 / (baseline.n - 1)) + (vc**2 / (candidate.n - 1)))
    half = t_quantile(confidence, df) * se
    low, high = diff - half, diff + half
    if not base:
        return Difference(diff, low, high, pct, None, None)
    if base > 0 and candidate.mean > 0:
        ratio_low, ratio_high = ratio_interval(baseline, candidate, confidence)
        return Difference(diff, low, high, pct, 100.0 * (ratio_low - 1), 100.0 * (ratio_high - 1))
    # a candidate of 0 (no stall any more): the change in the figure's own unit, with its interval; over the
    # baseline's mean, as if that were exact, it would reach below -100 %
    return Difference(diff, low, high, pct, None, None)


def ratio_interval(baseline: Estimate, candidate: Estimate, confidence: float) -> tuple[float, float]:
    """Interval of candidate mean / baseline mean, on the log scale (both means positive, n >= 2 each)."""
    ratio = candidate.mean / baseline.mean
    ab = baseline.stddev**2 / (baseline.n * baseline.mean**2)
    ac = candidate.stddev**2 / (candidate.n * candidate.mean**2)
    se = math.sqrt(ab + ac)
    if se == 0:
        return ratio, ratio
    df = (ab + ac) ** 2 / ((ab**2 / (baseline.n - 1)) + (ac**2 / (candidate.n - 1)))
    half = t_quantile(confidence, df) * se
    return ratio * math.exp(-half), ratio * math.exp(half)
