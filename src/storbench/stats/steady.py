"""Steady state, the SNIA way: is a point's metric steady over its last rounds? Pure.

The rule is the one of the SNIA Solid State Storage Performance Test Specification (PTS 2.0, "Steady State"):
over a measurement window of the last ``window`` rounds, with y the tracked metric of each round,

- the data excursion max(y) - min(y) is at most ``range`` of the window's mean, and
- the slope excursion of the least-squares line fitted to (round, y) over the window — its value at the window's
  last round minus its value at the first, |slope| * (window - 1) — is at most ``slope`` of the window's mean.

A point is measured round by round (each round one fio repetition of the case, run back to back) until the first
round whose window meets both, then ``confirm`` rounds more: its figures (means, intervals, percentiles) come from
those confirmation rounds. The window is chosen *because* its spread is small, so an interval over its own rounds
is too narrow (at CV 10 % a 95 % t interval over the window covered its rounds' true level 85.6 % of the time;
`bench/steady_interval.py`); rounds measured after it were chosen by nothing, so their interval is an ordinary
one. A point with fewer than two rounds after its window (``confirm: 0``, an interrupted run, a run stored before
confirmation rounds existed) reports its window's mean with no interval, said so. A point that reaches
``max_rounds`` without meeting the rule is "not steady" and reports its last window (the last rounds, not chosen
for their spread), marked so. Failed rounds are left out of the series (the window is over the last ``window``
rounds that measured).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from storbench.model import Status, StoredRepetition
from storbench.stats.estimate import t_quantile
from storbench.stats.trend import CONFIDENCE, FLAT_MARGIN, Change, Trend, classify, within_margin

# Metrics a steady-state rule may track, and how a round's value is read.
STEADY_METRICS = ("iops", "bw_bytes_per_s", "lat_mean_ns")
MIN_CONFIRMATION = 2  # rounds after the window needed for an interval (below: the window's mean, no interval)


@dataclass(frozen=True)
class SteadyRule:
    metric: str = "iops"
    window: int = 5
    range_fraction: float = 0.20
    slope_fraction: float = 0.10
    max_rounds: int = 25  # rounds at most until steady (the confirmation rounds come on top)
    confirm: int = 5  # rounds measured after the steady window; the point's figures come from them

    def text(self) -> str:
        shown = (f"; steadiness shown when the level's change across the window and those rounds is within "
                 f"+-{100 * FLAT_MARGIN:g} % ({100 * CONFIDENCE:g} % interval)" if self.confirm >= MIN_CONFIRMATION
                 else "")
        then = (f"; then {self.confirm} rounds more, the point's figures" if self.confirm >= MIN_CONFIRMATION
                else "; the point reports its window's mean, with no interval")
        return (f"{self.metric} over the last {self.window} rounds: max - min <= {100 * self.range_fraction:g} % "
                f"and the fitted line's excursion <= {100 * self.slope_fraction:g} % of their mean "
                f"(at most {self.max_rounds} rounds){then}{shown}")


class SteadyStatus(StrEnum):
    STEADY = "steady"
    NOT_STEADY = "not steady"  # max_rounds reached without meeting the rule
    MEASURING = "measuring"  # fewer than max_rounds so far and not yet steady (an interrupted run, or running)


@dataclass(frozen=True)
class WindowCheck:
    """The rule applied to one window of rounds."""

    rounds: tuple[int, ...]  # the rounds' indices (rep_index), in order
    values: tuple[float, ...]
    mean: float
    range_fraction: float  # (max - min) / mean
    slope_per_round: float  # least-squares slope of value against round position
    intercept: float  # the fitted line's value at the window's first round
    slope_excursion_fraction: float  # |slope| * (window - 1) / mean
    steady: bool


@dataclass(frozen=True)
class SteadyState:
    """A point's rounds judged by the rule: where it became steady (or did not), and the window its figures
    come from."""

    status: SteadyStatus
    rule: SteadyRule
    rounds: tuple[tuple[int, float], ...]  # every measured round: (rep_index, value), in order
    window: WindowCheck | None  # the steady window, or the last full window examined; None below `window` rounds
    confirmation: tuple[tuple[int, float], ...] = ()  # rounds measured after the steady window (at most `confirm`)

    @property
    def window_rounds(self) -> frozenset[int]:
        return frozenset(self.window.rounds) if self.window is not None else frozenset()

    @property
    def settled(self) -> bool:
        """No more rounds are needed: not steady within max_rounds, or steady with its confirmation rounds done."""
        return self.status is SteadyStatus.NOT_STEADY or (
            self.status is SteadyStatus.STEADY and len(self.confirmation) >= self.rule.confirm)

    @property
    def window_only(self) -> bool:
        """Its figures are its steady window's (fewer than MIN_CONFIRMATION rounds after it): rounds chosen for their
        small spread, which give no honest interval."""
        return self.status is SteadyStatus.STEADY and len(self.confirmation) < MIN_CONFIRMATION

    @property
    def change(self) -> Change | None:
        """The level's change across the steady window and the rounds measured after it (`level_change`), None
        below MIN_CONFIRMATION rounds after the window or when not steady."""
        if self.status is not SteadyStatus.STEADY or self.window_only or self.window is None:
            return None
        judged = [pair for pair in self.rounds if pair[0] >= self.window.rounds[0]]
        return level_change(judged)

    @property
    def shown_steady(self) -> bool:
        """Steady by SNIA's rule and its level's change shown within +-FLAT_MARGIN (`change`: its whole 90 %
        interval inside, the equivalence test; a change shown to rise 6 % [5, 7] is within it too)."""
        change = self.change
        return change is not None and within_margin(change)

    @property
    def judged_rounds(self) -> int:
        """Rounds the level's change is judged across: the window's and those measured after it."""
        return len(self.window.rounds) + len(self.confirmation) if self.window is not None else 0

    @property
    def rounds_to_show(self) -> int | None:
        """About how many rounds across the window and after it would show the change within +-FLAT_MARGIN if the
        level is flat (`rounds_to_show_flat`). None when it is shown already, has no interval, or the level is
        shown still rising or falling: then more rounds grow its change as fast as they narrow its interval (the
        advice is to precondition longer, `what_would_show`)."""
        change = self.change
        n = self.judged_rounds
        if change is None or change.low is None or change.high is None or within_margin(change) or n < 3 \
                or _moving(change):
            return None
        return rounds_to_show_flat((math.log(change.high) - math.log(change.low)) / 2, n)

    @property
    def figure_rounds(self) -> frozenset[int] | None:
        """The rounds the point's figures come from: its confirmation rounds, or (window only, not steady, still
        measuring) its window; None below `window` rounds (every round counts)."""
        if self.status is SteadyStatus.STEADY and not self.window_only:
            return frozenset(index for index, _ in self.confirmation)
        return self.window_rounds if self.window is not None else None


MAX_ROUNDS_ADVISED = 200  # beyond this many rounds no advice of a number
POWER_Z = 1.2816  # the advice is for about 80 % power: the interval's half-width plus this many standard errors


def rounds_to_show_flat(log_half: float, rounds: int) -> int | None:
    """The fewest rounds (more than ``rounds``) over which a flat level, its rounds as spread as the ``rounds``
    consecutive ones whose change's 90 % half-width (in log terms) is ``log_half``, would have its change shown
    inside +-FLAT_MARGIN about 80 % of the time: its estimate wanders by a standard error, so the half-width plus
    POWER_Z standard errors must fit; over m consecutive rounds the standard error is sd x (m - 1) / sqrt(the sum
    of squares of the m positions about their mean). None when none up to MAX_ROUNDS_ADVISED."""

    def spread(m: int) -> float:  # (m - 1) / sqrt(sxx) over m consecutive rounds
        return (m - 1) / math.sqrt(m * (m * m - 1) / 12)

    sd = log_half / (t_quantile(CONFIDENCE, rounds - 2) * spread(rounds))
    limit = math.log1p(FLAT_MARGIN)
    for m in range(rounds + 1, MAX_ROUNDS_ADVISED + 1):
        if (t_quantile(CONFIDENCE, m - 2) + POWER_Z) * sd * spread(m) < limit:
            return m
    return None


def check_window(rounds: Sequence[int], values: Sequence[float], rule: SteadyRule) -> WindowCheck:
    """The two SNIA criteria over one window (``values`` in round order; positions 0..n-1 are the x axis)."""
    n = len(values)
    mean = statistics.fmean(values)
    xs = range(n)
    x_mean = (n - 1) / 2
    sxx = sum((x - x_mean) ** 2 for x in xs)
    slope = sum((x - x_mean) * (y - mean) for x, y in zip(xs, values, strict=True)) / sxx if sxx else 0.0
    intercept = mean - slope * x_mean
    if mean <= 0 or not math.isfinite(mean):
        range_fraction = slope_fraction = math.inf
    else:
        range_fraction = (max(values) - min(values)) / mean
        slope_fraction = abs(slope) * (n - 1) / mean
    steady = range_fraction <= rule.range_fraction + 1e-12 and slope_fraction <= rule.slope_fraction + 1e-12
    return WindowCheck(rounds=tuple(rounds), values=tuple(values), mean=mean, range_fraction=range_fraction,
                       slope_per_round=slope, intercept=intercept, slope_excursion_fraction=slope_fraction,
                       steady=steady)


def judge(rounds: Sequence[tuple[int, float]], rule: SteadyRule, attempted: int | None = None) -> SteadyState:
    """The first window (ending at round ``window``, then each later round) that meets the rule, and the (at most
    ``confirm``) rounds measured after it; later rounds are not part of the answer (the point stopped there).
    ``attempted``: rounds run, failed ones included (default: the measured ones) — `max_rounds` counts them."""
    ordered = sorted(rounds)
    last: WindowCheck | None = None
    for end in range(rule.window, min(len(ordered), rule.max_rounds) + 1):  # a window within max_rounds
        part = ordered[end - rule.window:end]
        last = check_window([r for r, _ in part], [v for _, v in part], rule)
        if last.steady:
            after = tuple(ordered[end:end + rule.confirm])
            return SteadyState(SteadyStatus.STEADY, rule, tuple(ordered[:end + len(after)]), last, after)
    ran = len(ordered) if attempted is None else attempted
    status = SteadyStatus.NOT_STEADY if ran >= rule.max_rounds else SteadyStatus.MEASURING
    return SteadyState(status, rule, tuple(ordered), last)


def level_change(rounds: Sequence[tuple[int, float]]) -> Change | None:
    """How the level changed across ``rounds`` ((rep_index, value), in order): the least-squares line through
    (round, log value), its value at the last round over its value at the first, with a 90 % t interval
    (n - 2 degrees of freedom), judged like any change along a curve (`stats.trend.classify`: flat when the whole
    interval is inside +-FLAT_MARGIN). None below three rounds or for a value that is not positive."""
    if len(rounds) < 3 or any(value <= 0 or not math.isfinite(value) for _, value in rounds):
        return None
    xs = [float(index) for index, _ in rounds]
    ys = [math.log(value) for _, value in rounds]
    x_mean, y_mean = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - x_mean) ** 2 for x in xs)
    if sxx <= 0:
        return None
    slope = sum((x - x_mean) * (y - y_mean) for x, y in zip(xs, ys, strict=True)) / sxx
    df = len(rounds) - 2
    residual = sum((y - y_mean - slope * (x - x_mean)) ** 2 for x, y in zip(xs, ys, strict=True))
    half = t_quantile(CONFIDENCE, df) * math.sqrt(residual / df / sxx)
    span = xs[-1] - xs[0]
    return classify(math.exp(slope * span), math.exp((slope - half) * span), math.exp((slope + half) * span),
                    len(rounds))


def _moving(change: Change) -> bool:
    """The level shown to move: rising or falling, or its interval excluding no change at all (+3 % [+1, +12] is
    below the trend's floor, and no flat level)."""
    return change.trend in (Trend.RISING, Trend.FALLING) or (
        change.low is not None and change.high is not None and (change.low > 1 or change.high < 1))


def what_would_show(state: SteadyState) -> str:
    """For a point steady by SNIA's rule whose level's change is not shown within the margin: a level still
    moving says so; else about how many rounds would show it (`SteadyState.rounds_to_show`)."""
    needed = state.rounds_to_show
    if needed is not None:  # none is worked out for a level shown to move
        extra = max(needed - state.rule.window, state.rule.confirm + 1)
        return (f"if its level is flat, about {needed} rounds would show it within +-{100 * FLAT_MARGIN:g} %, 4 "
                f"times in 5 (steady_state.confirm: {extra})")
    change = state.change
    moving = ("its level is still " + ("rising" if change.ratio > 1 else "falling")
              if change is not None and _moving(change) else "")
    if moving:
        return f"{moving}: precondition longer, or raise max_rounds so the window comes later"
    return "steadier rounds would tell (a longer runtime or ramp, or precondition)"


def round_value(repetition: StoredRepetition, metric: str) -> float | None:
    """One round's figure for the rule: IOPS or bytes/s summed over clients and directions, or the mean latency
    over all their I/Os. None when the round did not measure."""
    if repetition.status != Status.OK:
        return None
    directions = [d for client in repetition.clients for d in client.directions]
    if not directions:
        return None
    if metric == "iops":
        return sum(d.iops for d in directions)
    if metric == "bw_bytes_per_s":
        return sum(d.bw_bytes_per_s for d in directions)
    if metric != "lat_mean_ns":
        raise ValueError(f"steady state tracks iops, bw_bytes_per_s or lat_mean_ns, not {metric!r}")
    samples = sum(d.lat.samples for d in directions)
    return sum(d.lat.mean_ns * d.lat.samples for d in directions) / samples if samples else None


def judge_repetitions(repetitions: Sequence[StoredRepetition], rule: SteadyRule) -> SteadyState:
    """The rule over one case's stored repetitions (its rounds)."""
    values = [(r.rep_index, round_value(r, rule.metric)) for r in repetitions]
    measured = [(index, value) for index, value in values if value is not None]
    return judge(measured, rule, attempted=len(values))


def steady_windows(repetitions: Sequence[StoredRepetition], rules: Mapping[int, SteadyRule]
                   ) -> tuple[list[StoredRepetition], dict[tuple[int, str], SteadyState]]:
    """For runs measured with a steady-state rule (``rules``: run id -> rule): each case's rounds judged, and
    only the repetitions its figures come from kept (``SteadyState.figure_rounds``: the rounds after its steady
    window, or its window). Other runs pass unchanged."""
    by_case: dict[tuple[int, str], list[StoredRepetition]] = {}
    for r in repetitions:
        if r.run_id in rules:
            by_case.setdefault((r.run_id, r.case.case_id), []).append(r)
    states = {key: judge_repetitions(sorted(reps, key=lambda r: r.rep_index), rules[key[0]])
              for key, reps in by_case.items()}
    return [r for r in repetitions if r.run_id not in rules or _counted(r, states[(r.run_id, r.case.case_id)])], \
        states


def _counted(repetition: StoredRepetition, state: SteadyState) -> bool:
    """A round counts when the point's figures come from it; below `window` rounds (an interrupted point) every
    round does."""
    rounds = state.figure_rounds
    return rounds is None or repetition.rep_index in rounds
