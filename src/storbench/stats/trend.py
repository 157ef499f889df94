"""One judgement of a change along a curve (pure): did more load raise throughput, leave it flat, lower it, or can
the repetitions not tell? Every section that reads a curve (the knee and `saturation`, the search's stepping, the
"capped beyond this host" verdict) asks this function, so no two sections of one report can disagree.

Overlapping per-point intervals are no evidence that nothing changed (at n=3 and CV 25 % a curve that truly rises
90 % between two points often has them). The change itself is judged: the ratio of the two points' means with
its interval on the log scale (Welch, delta method), at 90 % — the two one-sided 5 % tests of equivalence (TOST),
and a one-sided 5 % test of a rise or a fall. When the two points' repetitions alternated round by round (one run
with `order: interleaved`, repetition i of each in round i: `round_pairs`, the rule `compare` pairs by), the
change is the paired one instead, exp(mean(log higher_i / lower_i)) with a t interval on the per-round log
ratios (`stats.sequential.paired_change`), so drift shared by the round cancels:

- rising: the interval's low end is above no change and the mean gain is at least RISE_FLOOR; where a point is
  judged against several higher loads at once ("more load raises IOPS" is a rise over any of them: ``among``),
  the one-sided 5 % is shared among them (Bonferroni: the interval at 1 - 10 % / among), so that a flat curve of
  six points does not tell its lowest point "more load raises IOPS" in 12-16 % of curves (a flat or falling
  judgement needs every higher load, and keeps its 90 %);
- falling: the interval's high end is below no change and the mean loss is at least RISE_FLOOR;
- flat: the whole interval inside +-FLAT_MARGIN (equivalence);
- undecided: anything else, with about how many repetitions per point would decide it.

A point of one repetition has no interval: a gain or loss beyond NO_INTERVAL_CHANGE is still called a rise or a
fall, but nothing is ever called flat from it, and its fall does not stop a curve (`Change.stopped`): a saturated,
capped or knee answer needs the change shown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from storbench.stats.estimate import Estimate, ratio_interval, samples_for_half_width
from storbench.stats.sequential import PairedValues, paired_change, paired_values

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
    """higher / lower: the ratio of the means (paired: the geometric mean of the per-round ratios), its interval at
    ``confidence`` (90 %; a rise shown among several higher loads at its share; None without one), the judgement,
    and for an undecided one about how many repetitions per point would decide it (None: not within
    MAX_REPETITIONS, or no interval to tell from). ``pairs``: the rounds a paired change is over (0: Welch's,
    unpaired)."""

    ratio: float
    low: float | None
    high: float | None
    trend: Trend
    repetitions_needed: int | None = None
    pairs: int = 0
    confidence: float = CONFIDENCE  # of ``low``/``high``: a rise among several higher loads is shown at more
    among: int = 1  # the higher loads the lower point was judged against at once (a rise over any of them)
    by_run: bool = False  # paired run by run (points pooled over runs that alternated their cases), not by round

    @property
    def stopped(self) -> bool:
        """More load is shown not to raise throughput (flat or falling, with an interval: a fall read from two means
        of one repetition each is no evidence that the curve stopped, where a noisy point falls 20 % often)."""
        return self.trend in (Trend.FLAT, Trend.FALLING) and self.low is not None

    def text(self) -> str:
        """'+89 % [+61, +122] (90 %)' (', paired over 3 rounds' inside the brackets' note when paired); whole
        percents, never '-0'; '+25 % (no interval)' where a point had none (one repetition, a steady-state window:
        a change beyond +-NO_INTERVAL_CHANGE counts, read from the means alone)."""
        def pct(ratio: float) -> str:
            return "+inf" if ratio > 1e6 else f"{round(100 * (ratio - 1)):+d}"  # a paired interval as wide as floats

        if math.isinf(self.ratio):
            return "a rise from none"
        shown = f"{pct(self.ratio)} %"
        if self.low is not None and self.high is not None:
            paired = f", paired over {self.pairs} {'runs' if self.by_run else 'rounds'}" if self.pairs else ""
            level = f"{100 * self.confidence:.1f}".removesuffix(".0")
            if self.among > 1 and self.confidence != CONFIDENCE:  # a rise shown among several loads
                paired += f"; one of {self.among} higher loads"
            elif self.among > 1 and self.trend is Trend.UNDECIDED and self.low > 1:
                paired += (f"; a rise over any of {self.among} higher loads needs "
                           f"{100 * shared_confidence(self.among):.1f} %")
            shown += f" [{pct(self.low)}, {pct(self.high)}] ({level} %{paired})"
        else:  # one repetition a point, or a steady-state window: a rise or fall read from two means alone
            shown += " (no interval)"
        return shown


def within_margin(change: Change) -> bool:
    """The whole 90 % interval of ``change`` inside +-FLAT_MARGIN: shown to be no change beyond the margin (the
    equivalence test, whatever else the change is called: +6 % [+5, +7] is a rise and within it)."""
    return (change.low is not None and change.high is not None and change.low >= 1 / (1 + FLAT_MARGIN)
            and change.high <= 1 + FLAT_MARGIN)


def shared_confidence(among: int) -> float:
    """The interval's confidence at which a rise over any of ``among`` higher loads keeps a one-sided 5 %."""
    return 1 - (1 - CONFIDENCE) / max(1, among)


def _needed(ratio: float, low: float, high: float, n: int) -> int | None:
    """Repetitions per point (paired: rounds) at which the interval would be narrow enough for either answer, if
    the change and the spread stayed as they are (the half-width shrinks as 1/sqrt(n); ``n``: repetitions per
    point now, or pairs)."""
    if low <= 0 or not math.isfinite(high):  # a paired interval too wide to hold in floating point: no estimate
        return None
    half = (math.log(high) - math.log(low)) / 2
    log_change = abs(math.log(ratio))
    room = max(math.log(1 + FLAT_MARGIN) - log_change, log_change if abs(ratio - 1) >= RISE_FLOOR else 0.0)
    if room <= 0 or half <= 0:
        return None
    return samples_for_half_width(half, n, room, CONFIDENCE, MAX_REPETITIONS)


def round_pairs(lower: Estimate, higher: Estimate) -> PairedValues | None:
    """The two points' values of the rounds both have, when both carry values by round (their repetitions
    alternated round by round in one run: `Estimate.rounds`); None otherwise (the change is then Welch's)."""
    if not lower.rounds or not higher.rounds:
        return None
    return paired_values(dict(lower.rounds), dict(higher.rounds))


def _interval(lower: Estimate, higher: Estimate, paired: PairedValues | None,
              confidence: float) -> tuple[float, float, float, int, int] | None:
    """(ratio, low, high, n, pairs) of higher / lower at ``confidence``: paired where given, else Welch's; None
    without an interval (n < 2, a steady-state window)."""
    change = paired_change(*paired, confidence) if paired is not None else None
    if change is not None:
        return 1 + change.estimate, 1 + change.low, 1 + change.high, change.n, change.n
    if not (lower.has_interval and higher.has_interval):
        return None
    low, high = ratio_interval(lower, higher, confidence)
    return higher.mean / lower.mean, low, high, min(lower.n, higher.n), 0


def judge_change(lower: Estimate, higher: Estimate, paired: PairedValues | None = None, among: int = 1) -> Change:
    """How ``higher`` (more load) compares with ``lower``: see the module's rules. ``paired``: the two points'
    values of the rounds both ran in (``round_pairs``), when their repetitions alternated round by round; the
    change and its interval are then the per-round ratios' (paired), else Welch's over the two estimates.
    ``among``: how many higher loads ``lower`` is judged against at once, a rise over any of them counting (a rise
    is then shown at ``shared_confidence``)."""
    if lower.mean <= 0 or higher.mean <= 0:
        ratio = math.inf if higher.mean > 0 else 1.0
        trend = Trend.RISING if higher.mean > 0 else Trend.UNDECIDED
        return Change(ratio, None, None, trend)
    found = _interval(lower, higher, paired, CONFIDENCE)
    if found is None:  # n < 2, or a steady-state window
        ratio = higher.mean / lower.mean
        trend = (Trend.RISING if ratio > 1 + NO_INTERVAL_CHANGE else
                 Trend.FALLING if ratio < 1 / (1 + NO_INTERVAL_CHANGE) else Trend.UNDECIDED)
        return Change(ratio, None, None, trend, among=among)
    change = replace(classify(*found), by_run=bool(found[4]) and lower.per_run and higher.per_run)
    if among <= 1 or change.trend is not Trend.RISING:
        return replace(change, among=among)
    confidence = shared_confidence(among)
    shared = _interval(lower, higher, paired, confidence)
    assert shared is not None
    ratio, low, high, n, pairs = shared
    if low > 1:
        return Change(ratio, low, high, Trend.RISING, pairs=pairs, confidence=confidence, among=among,
                      by_run=change.by_run)
    # a rise at 90 % alone, not at the share of the 5 % one of ``among`` loads may spend: not told yet
    half = (math.log(high) - math.log(low)) / 2
    needed = samples_for_half_width(half, n, math.log(ratio), confidence, MAX_REPETITIONS)
    return replace(change, trend=Trend.UNDECIDED, repetitions_needed=needed, among=among)


def classify(ratio: float, low: float, high: float, n: int, pairs: int = 0) -> Change:
    """A change with its 90 % interval judged by the module's rules (``n``: repetitions per point, or rounds, for
    how many would decide an undecided one)."""
    if low > 1 and ratio >= 1 + RISE_FLOOR:
        return Change(ratio, low, high, Trend.RISING, pairs=pairs)
    if high < 1 and ratio <= 1 / (1 + RISE_FLOOR):
        return Change(ratio, low, high, Trend.FALLING, pairs=pairs)
    if low >= 1 / (1 + FLAT_MARGIN) and high <= 1 + FLAT_MARGIN:
        return Change(ratio, low, high, Trend.FLAT, pairs=pairs)
    return Change(ratio, low, high, Trend.UNDECIDED, _needed(ratio, low, high, n), pairs=pairs)


def what_would_tell(change: Change, lower: Estimate, higher: Estimate) -> str:
    """For an undecided change between two points: what would tell it (the knee's words and the per-point
    verdicts' alike)."""
    if change.low is None and min(lower.n, higher.n) < 2:
        return "a point of one repetition shows no flatness: repeat each point (repeat: 3 or more)"
    if change.low is None:  # a steady-state window's figures: chosen for their small spread
        return ("a steady-state window gives no interval and shows no flatness: measure rounds after it "
                "(steady_state.confirm)")
    if lower.per_run or higher.per_run:  # points pooled over runs: n counts runs
        if change.repetitions_needed is not None:
            return f"about {change.repetitions_needed} runs would tell"
        return "more runs would tell"
    if change.repetitions_needed is not None:
        return f"about {change.repetitions_needed} {'rounds' if change.pairs else 'repetitions per point'} would tell"
    return "more repetitions, or a longer runtime for steadier points, would tell"


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


def changes_above(throughput: Sequence[Estimate], k: int) -> list[tuple[int, Change]]:
    """Point ``k`` of a curve (points in increasing load) judged against every higher one, paired where the two
    alternated round by round: a rise over any of them shares the 5 % among them (``among``). The one comparison
    the knee's plateau and each point's reading of its sweep make, so that they cannot disagree."""
    among = len(throughput) - 1 - k
    return [(j, judge_change(throughput[k], throughput[j], round_pairs(throughput[k], throughput[j]), among))
            for j in range(k + 1, len(throughput))]


def plateau(throughput: Sequence[Estimate]) -> Plateau:
    """The plateau of a curve whose points are in increasing load (the knee's and the capped verdict's rule):
    each point is compared with every higher one, so a noisy dip cannot end a rise early and a slow creep counts
    once it adds up; paired where the two points alternated round by round (``round_pairs``), else Welch."""
    for k in range(len(throughput) - 1):
        changes = changes_above(throughput, k)
        if any(change.trend is Trend.RISING for _, change in changes):
            continue
        undecided = next(((j, change) for j, change in changes if not change.stopped), None)
        if undecided is not None:
            return Plateau(None, undecided[1], k, undecided[0])
        return Plateau(k)
    return Plateau()
