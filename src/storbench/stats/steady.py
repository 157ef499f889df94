"""Steady state, the SNIA way: is a point's metric steady over its last rounds? Pure.

The rule is the one of the SNIA Solid State Storage Performance Test Specification (PTS 2.0, "Steady State"):
over a measurement window of the last ``window`` rounds, with y the tracked metric of each round,

- the data excursion max(y) - min(y) is at most ``range`` of the window's mean, and
- the slope excursion of the least-squares line fitted to (round, y) over the window — its value at the window's
  last round minus its value at the first, |slope| * (window - 1) — is at most ``slope`` of the window's mean.

A point is measured round by round (each round one fio repetition of the case, run back to back) and stops at
the first round whose window meets both; its figures come from the window's rounds only. A point that reaches
``max_rounds`` without meeting them is "not steady" and reports its last window, marked so. Failed rounds are
left out of the series (the window is over the last ``window`` rounds that measured).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from storbench.model import Status, StoredRepetition

# Metrics a steady-state rule may track, and how a round's value is read.
STEADY_METRICS = ("iops", "bw_bytes", "lat_mean_ns")


@dataclass(frozen=True)
class SteadyRule:
    metric: str = "iops"
    window: int = 5
    range_fraction: float = 0.20
    slope_fraction: float = 0.10
    max_rounds: int = 25

    def text(self) -> str:
        return (f"{self.metric} over the last {self.window} rounds: max - min <= {100 * self.range_fraction:g} % "
                f"and the fitted line's excursion <= {100 * self.slope_fraction:g} % of their mean "
                f"(at most {self.max_rounds} rounds)")


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

    @property
    def window_rounds(self) -> frozenset[int]:
        return frozenset(self.window.rounds) if self.window is not None else frozenset()


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
    """The first window (ending at round ``window``, then each later round) that meets the rule; rounds after it
    are not part of the answer (the point stopped there). ``attempted``: rounds run, failed ones included
    (default: the measured ones) — `max_rounds` counts them."""
    ordered = sorted(rounds)
    last: WindowCheck | None = None
    for end in range(rule.window, len(ordered) + 1):
        part = ordered[end - rule.window:end]
        last = check_window([r for r, _ in part], [v for _, v in part], rule)
        if last.steady:
            return SteadyState(SteadyStatus.STEADY, rule, tuple(ordered[:end]), last)
    ran = len(ordered) if attempted is None else attempted
    status = SteadyStatus.NOT_STEADY if ran >= rule.max_rounds else SteadyStatus.MEASURING
    return SteadyState(status, rule, tuple(ordered), last)


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
    if metric == "bw_bytes":
        return sum(d.bw_bytes for d in directions)
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
    only its window's repetitions kept (a point's figures come from its window). Other runs pass unchanged."""
    by_case: dict[tuple[int, str], list[StoredRepetition]] = {}
    for r in repetitions:
        if r.run_id in rules:
            by_case.setdefault((r.run_id, r.case.case_id), []).append(r)
    states = {key: judge_repetitions(sorted(reps, key=lambda r: r.rep_index), rules[key[0]])
              for key, reps in by_case.items()}
    return [r for r in repetitions if r.run_id not in rules or _in_window(r, states[(r.run_id, r.case.case_id)])], \
        states


def _in_window(repetition: StoredRepetition, state: SteadyState) -> bool:
    """A round counts when it is in the window; below `window` rounds (an interrupted point) every round does."""
    return state.window is None or repetition.rep_index in state.window_rounds
