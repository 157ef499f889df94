"""The SNIA steady-state rule on synthetic round series with known answers (stats/steady.py)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storbench.stats.steady import SteadyRule, SteadyStatus, check_window, judge

RULE = SteadyRule(metric="iops", window=5, range_fraction=0.20, slope_fraction=0.10, max_rounds=25)


def series(values: list[float]) -> list[tuple[int, float]]:
    return list(enumerate(values))


def test_a_flat_series_is_steady_at_the_first_full_window() -> None:
    state = judge(series([1000, 1010, 990, 1005, 995, 1000, 1000]), RULE)
    assert state.status is SteadyStatus.STEADY
    assert state.window is not None and state.window.rounds == (0, 1, 2, 3, 4)
    assert len(state.rounds) == 5  # rounds after the steady window are not part of the answer
    assert state.window.mean == pytest.approx(1000)


def test_a_drift_inside_the_range_is_caught_by_the_slope() -> None:
    # +4 % a round: max - min is 16 % of the mean (within 20 %) but the fitted line moves 16 % (over 10 %)
    values = [1000 * 1.04 ** i for i in range(25)]
    window = check_window(range(5), values[:5], RULE)
    assert window.range_fraction <= 0.20
    assert window.slope_excursion_fraction > 0.10
    assert not window.steady
    state = judge(series(values), RULE)
    assert state.status is SteadyStatus.NOT_STEADY  # it never stops drifting
    assert state.window is not None and state.window.rounds == tuple(range(20, 25))


def test_an_oscillation_wider_than_the_range_is_not_steady_although_its_line_is_flat() -> None:
    values = [1000, 1300, 1000, 1300, 1000, 1300, 1000, 1300, 1000, 1300]
    window = check_window(range(5), values[:5], RULE)
    assert window.slope_excursion_fraction < 0.10
    assert window.range_fraction > 0.20
    state = judge(series(values), RULE)
    assert state.status is SteadyStatus.MEASURING  # 10 of 25 rounds, not steady yet


def test_a_step_change_is_steady_only_once_the_window_is_past_the_step() -> None:
    # fast while the cache absorbs writes (rounds 0-7), then half the speed: steady only on rounds 8-12
    values = [2000.0] * 8 + [1000.0 + (15 if i % 2 else -15) for i in range(12)]
    state = judge(series(values), RULE)
    # the first window is steady at the fast level: a rule looks back only `window` rounds (SNIA's too)
    assert state.window is not None and state.window.rounds == (0, 1, 2, 3, 4)
    after_step = judge(series(values[5:]), RULE)  # preconditioned past the cache: the step is in the window
    assert after_step.window is not None
    assert after_step.window.rounds == (3, 4, 5, 6, 7)  # positions 3..7 = rounds 8..12 of the original
    assert after_step.window.mean == pytest.approx(1000, rel=0.02)
    for end in range(5, 8):  # windows containing the step fail the rule
        part = values[5:][end - 5:end]
        assert not check_window(range(5), part, RULE).steady


def test_the_fitted_line_is_least_squares() -> None:
    window = check_window(range(5), [1.0, 2.0, 3.0, 4.0, 5.0], RULE)
    assert window.slope_per_round == pytest.approx(1.0)
    assert window.intercept == pytest.approx(1.0)
    assert window.slope_excursion_fraction == pytest.approx(4 / 3)


def test_max_rounds_counts_failed_rounds() -> None:
    measured = series([1000, 1500, 900, 1400])
    assert judge(measured, RULE, attempted=25).status is SteadyStatus.NOT_STEADY
    assert judge(measured, RULE, attempted=10).status is SteadyStatus.MEASURING


def test_zero_or_missing_throughput_is_never_steady() -> None:
    assert not check_window(range(5), [0.0] * 5, RULE).steady


@settings(max_examples=200, deadline=None)
@given(level=st.floats(10, 1e6), noise=st.floats(0, 0.05), drift=st.floats(-0.2, 0.2), seed=st.integers(0, 1000))
def test_the_verdict_follows_the_two_criteria(level: float, noise: float, drift: float, seed: int) -> None:
    rng = random.Random(seed)
    values = [level * (1 + drift * i / 4) * (1 + rng.uniform(-noise, noise)) for i in range(5)]
    if min(values) <= 0:
        return
    window = check_window(range(5), values, RULE)
    mean = sum(values) / 5
    excursion = (max(values) - min(values)) / mean
    assert window.range_fraction == pytest.approx(excursion)
    slope = float(np.polyfit(range(5), values, 1)[0])  # least squares, computed independently
    slope_excursion = abs(slope) * 4 / mean
    assert window.slope_excursion_fraction == pytest.approx(slope_excursion, rel=1e-6, abs=1e-9)
    if abs(slope_excursion - 0.1) > 1e-9:  # away from the boundary, where rounding could go either way
        assert window.steady == (excursion <= 0.2 + 1e-12 and slope_excursion <= 0.1)
    if abs(drift) > 0.15 + 4 * noise:  # a clear drift over the window (beyond what the noise can bend) fails
        assert not window.steady
    assert math.isfinite(window.slope_per_round)


def test_the_round_by_round_figure_marks_the_window_and_draws_its_fitted_line() -> None:
    from storbench.report.steady import steady_figure

    state = judge(series([2000, 1500, 1000, 1010, 990, 1005, 995]), RULE)
    assert state.status is SteadyStatus.STEADY and state.window is not None
    figure = steady_figure(state, "f", "t randwrite 4k qd4")
    assert figure is not None
    rounds, window, fit = figure.series
    assert rounds.x == (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0) and rounds.y[0] == 2000
    assert window.x == (3.0, 4.0, 5.0, 6.0, 7.0)  # the window is the last five rounds, 1-based
    w = state.window
    assert fit.y == pytest.approx((w.intercept, w.intercept + 4 * w.slope_per_round))
    band = figure.y_bands[0]
    assert band.low == pytest.approx(0.9 * w.mean) and band.high == pytest.approx(1.1 * w.mean)
    assert "(steady)" in figure.title and "steady after 7 rounds" in dict(figure.notes)["state"]
    drifting = judge(series([1000 * 1.1 ** i for i in range(6)]), SteadyRule(window=5, max_rounds=6))
    shown = steady_figure(drifting, "g", "t")
    assert shown is not None and "(not steady)" in shown.title
    assert dict(shown.notes)["state"].startswith("NOT steady after 6 rounds")
