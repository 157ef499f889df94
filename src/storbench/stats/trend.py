"""One judgement of a change along a curve (pure): did more load raise throughput, leave it flat, lower it, or can
the repetitions not tell? Every section that reads a curve (the knee and `saturation`, the search's stepping, the
"capped beyond this host" verdict) asks this function, so no two sections of one report can disagree.

Overlapping per-point intervals are no evidence that nothing changed (at n=3 and CV 25 % a curve that truly rises
90 % between two points often has them). The change itself is judged: the ratio of the two points' means with
its interval on the log scale (Welch, delta method), at 90 % — the two one-sided 5 % tests of equivalence (TOST),
and a one-sided 5 % test of a rise or a fall:

- rising: the interval's low end is above no change and the mean gain is at least RISE_FLOOR;
- falling: the interval's high end is below no change and the mean loss is at least RISE_FLOOR;
- flat: the whole interval inside +-FLAT_MARGIN (equivalence);
- undecided: anything else, with about how many repetitions per point would decide it.

A point of one repetition has no interval: a gain or loss beyond NO_INTERVAL_CHANGE is still called a rise or a
fall, but nothing is ever called flat from it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from storbench.stats.estimate import Estimate, ratio_interval

CONFIDENCE = 0.90  # TOST at 5 %: flat when the 90 % interval is inside the margin; rising: its one-sided 5 %
FLAT_MARGIN = 0.10  # "flat": the change is shown to be within +-10 %
RISE_FLOOR = 0.05  # "rising": at least +5 % (a gain below it is no reason to add load)
NO_INTERVAL_CHANGE = 0.20  # without intervals (n < 2), only a change beyond +-20 % counts
MAX_REPETITIONS = 1000  # "about N repetitions would decide it" is not said beyond this


class Trend(StrEnum):
    RISING = "rising"
    FLAT = "flat"
    FALLING = "falling"
    UNDECIDED = "undecided"


@dataclass(frozen=True)
class Change:
    """higher / lower: the ratio of the means, its 90 % interval (None without one), the judgement, and for an
    undecided one about how many repetitions per point would decide it (None: not within MAX_REPETITIONS, or no
    interval to tell from)."""

    ratio: float
    low: float | None
    high: float | None
    trend: Trend
    repetitions_needed: int | None = None

    @property
    def stopped(self) -> bool:
        """More load is shown not to raise throughput (flat or falling)."""
        return self.trend in (Trend.FLAT, Trend.FALLING)


def _needed(lower: Estimate, higher: Estimate, low: float, high: float) -> int | None:
    """Repetitions per point at which the interval would be narrow enough for either answer, if the means and
    spreads stayed as they are (the half-width shrinks as 1/sqrt(n))."""
    ratio = higher.mean / lower.mean
    half = (math.log(high) - math.log(low)) / 2
    log_change = abs(math.log(ratio))
    room = max(math.log(1 + FLAT_MARGIN) - log_change, log_change if abs(ratio - 1) >= RISE_FLOOR else 0.0)
    if room <= 0 or half <= 0:
        return None
    n = min(lower.n, higher.n)
    needed = math.ceil(n * (half / room) ** 2)
    return needed if needed <= MAX_REPETITIONS else None


def judge_change(lower: Estimate, higher: Estimate) -> Change:
    """How ``higher`` (more load) compares with ``lower``: see the module's rules."""
    if lower.mean <= 0 or higher.mean <= 0:
        ratio = math.inf if higher.mean > 0 else 1.0
        trend = Trend.RISING if higher.mean > 0 else Trend.UNDECIDED
        return Change(ratio, None, None, trend)
    ratio = higher.mean / lower.mean
    if not (lower.has_interval and higher.has_interval):  # n < 2, or a steady-state window
        trend = (Trend.RISING if ratio > 1 + NO_INTERVAL_CHANGE else
                 Trend.FALLING if ratio < 1 / (1 + NO_INTERVAL_CHANGE) else Trend.UNDECIDED)
        return Change(ratio, None, None, trend)
    low, high = ratio_interval(lower, higher, CONFIDENCE)
    if low > 1 and ratio >= 1 + RISE_FLOOR:
        return Change(ratio, low, high, Trend.RISING)
    if high < 1 and ratio <= 1 / (1 + RISE_FLOOR):
        return Change(ratio, low, high, Trend.FALLING)
    if low >= 1 / (1 + FLAT_MARGIN) and high <= 1 + FLAT_MARGIN:
        return Change(ratio, low, high, Trend.FLAT)
    return Change(ratio, low, high, Trend.UNDECIDED, _needed(lower, higher, low, high))


@dataclass(frozen=True)
class Plateau:
    """Where a curve's throughput is shown to stop rising: ``start``, the first point against which every higher
    load is judged flat or falling; or, when the first point no higher load raises is not shown flat against all
    of them, the change that could not be told (``pending``, from point ``pending_from`` to ``pending_to``).
    Neither: the curve rises to its end (or has fewer than 2 points)."""

    start: int | None = None
    pending: Change | None = None
    pending_from: int | None = None
    pending_to: int | None = None


def plateau(throughput: Sequence[Estimate]) -> Plateau:
    """The plateau of a curve whose points are in increasing load (the knee's and the capped verdict's rule):
    each point is compared with every higher one, so a noisy dip cannot end a rise early and a slow creep counts
    once it adds up."""
    for k in range(len(throughput) - 1):
        changes = [(j, judge_change(throughput[k], throughput[j])) for j in range(k + 1, len(throughput))]
        if any(change.trend is Trend.RISING for _, change in changes):
            continue
        undecided = next(((j, change) for j, change in changes if not change.stopped), None)
        if undecided is not None:
            return Plateau(None, undecided[1], k, undecided[0])
        return Plateau(k)
    return Plateau()
