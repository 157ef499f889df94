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


def test_a_flat_series_is_steady_at_the_first_full_window_and_its_figures_come_after_it() -> None:
    values = [1000, 1010, 990, 1005, 995, 1002, 998, 1004, 996, 1001, 1020, 980]
    state = judge(series(values), RULE)
    assert state.status is SteadyStatus.STEADY
    assert state.window is not None and state.window.rounds == (0, 1, 2, 3, 4)
    assert state.window.mean == pytest.approx(1000)
    # the `confirm` rounds after the window give the figures; later rounds are not part of the answer
    assert [r for r, _ in state.confirmation] == [5, 6, 7, 8, 9] and len(state.rounds) == 10
    assert state.settled and not state.window_only and state.figure_rounds == frozenset(range(5, 10))
    early = judge(series(values[:7]), RULE)  # interrupted two rounds after the window
    assert early.status is SteadyStatus.STEADY and not early.settled and not early.window_only
    assert early.figure_rounds == frozenset({5, 6})  # two rounds after the window already give an interval
    just = judge(series(values[:6]), RULE)  # one round after it: the window's figures, with no interval
    assert just.window_only and just.figure_rounds == frozenset(range(5))
    no_confirmation = judge(series(values), SteadyRule(confirm=0))
    assert no_confirmation.settled and no_confirmation.window_only and len(no_confirmation.rounds) == 5


def test_a_window_is_looked_for_within_max_rounds_only() -> None:
    values = [1000.0 * (1.3 if i % 2 else 0.7) for i in range(25)] + [1000.0] * 10
    state = judge(series(values), RULE, attempted=35)
    assert state.status is SteadyStatus.NOT_STEADY and state.settled
    assert state.window is not None and state.window.rounds == tuple(range(20, 25))


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
    # its window only: steady by SNIA's rule, no judgement of the level's change (no round after it)
    assert "(steady by SNIA's rule)" in figure.title
    assert "steady by SNIA's rule after 7 rounds" in dict(figure.notes)["state"]
    assert "no interval" in dict(figure.notes)["state"]  # no round after the window: the window's figures
    confirmed = judge(series([2000, 1500, 1000, 1010, 990, 1005, 995, 1003, 997, 1001, 999, 1000]), RULE)
    shown = steady_figure(confirmed, "c", "t")
    assert shown is not None
    after = next(s for s in shown.series if s.name == "after the window (the figures)")
    assert after.x == (8.0, 9.0, 10.0, 11.0, 12.0)
    assert "the figures come from rounds 8-12, measured after it" in dict(shown.notes)["state"]
    # rounds 3-12 within 1 % of each other: the level's change is shown within +-10 %
    assert "(steady)" in shown.title and "steady shown (within +-10 %)" in dict(shown.notes)["state"]
    drifting = judge(series([1000 * 1.1 ** i for i in range(6)]), SteadyRule(window=5, max_rounds=6))
    shown = steady_figure(drifting, "g", "t")
    assert shown is not None and "(not steady)" in shown.title
    assert dict(shown.notes)["state"].startswith("NOT steady after 6 rounds")


def _rounds(rng: random.Random, n: int, cv: float, start: float) -> tuple[list[float], list[float]]:
    """n rounds around 1000 IOPS: approaching it from ``start`` (+0.5: 50 % above) with tau = 3 rounds, plus
    independent normal noise of ``cv``; (measured, noise-free)."""
    levels = [1000.0 * (1 + start * math.exp(-t / 3)) for t in range(n)]
    return [level + rng.gauss(0.0, cv * 1000.0) for level in levels], levels


@pytest.mark.parametrize("start", [0.0, 0.5])
def test_the_rounds_after_the_window_give_an_interval_that_covers_and_the_window_does_not(start: float) -> None:
    """The window is chosen because its spread is small: at CV 10 % its own 95 % interval covers the true level
    of its rounds about 85 % of the time. The rounds after it were chosen by nothing: about 95 %
    (bench/steady_interval.py, docs/methodology.md)."""
    from storbench.stats.estimate import estimate

    rng = random.Random(17 if start else 16)
    hits = {"window": 0, "after": 0}
    steady = 0
    for _ in range(3000):
        values, levels = _rounds(rng, RULE.max_rounds + RULE.confirm, 0.10, start)
        state = judge(series(values), RULE)
        if state.status is not SteadyStatus.STEADY or state.window is None:
            continue
        steady += 1
        for name, chosen in (("window", state.window.rounds), ("after", [r for r, _ in state.confirmation])):
            interval = estimate([values[i] for i in chosen])
            assert interval is not None and interval.ci_low is not None and interval.ci_high is not None
            truth = sum(levels[i] for i in chosen) / len(chosen)
            hits[name] += interval.ci_low <= truth <= interval.ci_high
    assert steady > 2700
    assert hits["after"] / steady >= 0.93, hits
    assert hits["window"] / steady <= 0.90, hits


def test_a_window_only_point_has_no_interval_anywhere() -> None:
    """A steady window's own rounds give the mean and the spread, but no interval: not in the estimate, not in
    a comparison, not in a judgement along a curve."""
    from storbench.stats.estimate import estimate, welch_difference
    from storbench.stats.trend import Trend, judge_change

    window = estimate([1000.0, 1010.0, 995.0, 1005.0, 990.0], interval=False)
    other = estimate([1002.0, 1008.0, 997.0, 1003.0, 992.0], interval=False)
    assert window is not None and other is not None
    assert window.n == 5 and window.stddev > 0 and not window.has_interval and window.half_width is None
    difference = welch_difference(window, other)
    assert difference.change_ci_low_pct is None and difference.method == "none" and not difference.significant
    assert judge_change(window, other).trend is Trend.UNDECIDED  # never shown flat without an interval


def test_the_round_by_round_figure_starts_at_zero_and_needs_two_rounds() -> None:
    """Rounds of 990-1,010 IOPS are drawn from zero (the band shows the allowed range at its true size, not a
    zoom that makes 2 % look like a cliff); a single round draws no figure."""
    from storbench.report.steady import steady_figure

    state = judge(series([1000, 1010, 990, 1005, 995]), RULE)
    figure = steady_figure(state, "f", "t")
    assert figure is not None and figure.y_range is not None
    assert figure.y_range[0] == 0.0 and figure.y_range[1] > 1010
    assert steady_figure(judge(series([1000]), RULE), "one", "t") is None


def test_the_level_change_is_the_fitted_lines_with_its_interval() -> None:
    """Across rounds 0-9 a level rising exactly 1 % a round (log-linear, no noise) changed 1.01^9: the fitted line
    gives it exactly, with a zero-width interval; with noise the 90 % interval holds the true change."""
    from storbench.stats.steady import level_change
    from storbench.stats.trend import Trend

    exact = level_change(series([1000 * 1.01 ** i for i in range(10)]))
    assert exact is not None and exact.ratio == pytest.approx(1.01 ** 9)
    assert exact.low == pytest.approx(1.01 ** 9) and exact.high == pytest.approx(1.01 ** 9)
    assert exact.trend is Trend.RISING  # +9.4 %, known exactly: a rise, and inside +-10 %: steady shown
    state = judge(series([1000 * 1.01 ** i for i in range(10)]), RULE)
    assert state.change == exact and state.shown_steady
    steep = judge(series([1000 * 1.02 ** i for i in range(10)]), RULE)  # +19.5 %: SNIA's window holds (8.2 %)
    assert steep.status is SteadyStatus.STEADY and steep.change is not None and not steep.shown_steady
    assert level_change(series([1000.0, 1001.0])) is None  # two rounds: no spread about a line
    assert level_change(series([1000.0, 0.0, 1000.0])) is None
    rng = random.Random(3)
    hits = 0
    for _ in range(1000):
        change = level_change(series([1000 * 1.01 ** i * (1 + rng.gauss(0, 0.05)) for i in range(10)]))
        assert change is not None and change.low is not None and change.high is not None
        hits += change.low <= 1.01 ** 9 <= change.high
    assert 0.86 <= hits / 1000 <= 0.94  # a 90 % interval


@pytest.mark.parametrize(("cv", "change", "low", "high"), [
    (0.02, 0.0, 0.95, 1.0),  # flat, CV 2 %: shown steady almost always (98.6 % in bench/steady_change.py)
    (0.05, 0.10, 0.0, 0.075),  # +10 % across the judged rounds, the margin: shown at most about 5 % (4.8 %)
    (0.05, -1 / 11, 0.0, 0.075),  # -9.1 %, the margin below (5.0 %)
])
def test_shown_steady_holds_its_error_rate_at_the_margin_and_its_power_when_flat(
        cv: float, change: float, low: float, high: float) -> None:
    """SNIA's rule calls nearly all of these steady; a steady claim that needs the change across the window and the
    rounds after it inside +-10 % (90 % interval: two one-sided tests at 5 %) is false at most ~5 % of the time at
    the margin, and still made for a flat level at CV 2 % (docs/methodology.md, bench/steady_change.py)."""
    rng = random.Random(int(1000 * cv) + int(100 * change))
    per_round = math.log1p(change) / (RULE.window + RULE.confirm - 1)
    snia = shown = 0
    trials = 1500
    for _ in range(trials):
        values = [1000 * math.exp(per_round * t) * (1 + rng.gauss(0, cv)) for t in range(RULE.max_rounds + 5)]
        state = judge(series(values), RULE)
        snia += state.status is SteadyStatus.STEADY
        shown += state.shown_steady
    assert snia / trials > 0.95
    assert low <= shown / trials <= high, shown / trials


def test_a_point_steady_by_snias_rule_only_says_so_with_its_change_and_what_would_tell() -> None:
    """Rounds at CV 8 %: SNIA's excursions hold, but the level's change across the window and the five rounds after
    it has a 90 % interval wider than +-10 %: `show`'s line says "steady by SNIA's rule" with the change, and
    about how many rounds would show it; a level shown still falling says so."""
    from storbench.report.show_export import steady_lines
    from storbench.stats.trend import Trend

    values = [1000, 1080, 930, 1050, 960, 1070, 920, 1060, 940, 1000]
    state = judge(series(values), RULE)
    assert state.status is SteadyStatus.STEADY and not state.window_only
    change = state.change
    assert change is not None and change.trend is Trend.UNDECIDED and not state.shown_steady
    line = steady_lines({(1, "c"): state}, {"c": "randread 4k qd4"})[-1]
    assert line.startswith("  run 1 randread 4k qd4: steady by SNIA's rule (")
    assert "across rounds 1-10 the level changed" in line and "not shown within +-10 %" in line
    assert state.rounds_to_show is not None and state.rounds_to_show > 10
    assert f"if its level is flat, about {state.rounds_to_show} rounds would show it within +-10 %" in line


def test_a_level_still_falling_is_said_to_be_falling() -> None:
    """SNIA's window (rounds 1-5 within 8 %) holds while the level falls 1.5 % a round: across the ten rounds it
    fell about 13 %, shown (its interval below -5 %): the advice is about the fall, not more rounds."""
    from storbench.stats.steady import what_would_show
    from storbench.stats.trend import Trend

    values = [1000 * 0.985 ** i * (1 + 0.004 * (-1) ** i) for i in range(10)]
    state = judge(series(values), RULE)
    assert state.status is SteadyStatus.STEADY and state.change is not None
    assert state.change.trend is Trend.FALLING and not state.shown_steady and state.rounds_to_show is None
    assert what_would_show(state).startswith("its level is still falling: precondition longer")


def test_the_rounds_advised_for_a_level_not_shown_steady_show_it_when_it_is_flat() -> None:
    """The advice holds the level flat and its rounds' spread: followed, a flat level is shown within +-10 % about
    4 times in 5 (simulated here); a level shown still falling is given no number, since more rounds grow its
    change as fast as they narrow its interval (advising 25 rounds for a fall of 0.8 % a round was never right)."""
    import math
    import random

    from storbench.stats.steady import level_change, rounds_to_show_flat
    from storbench.stats.trend import within_margin

    rng = random.Random(7)

    def rounds(n: int, slope: float, cv: float) -> list[tuple[int, float]]:
        return [(i, math.exp(slope * i) * (1 + rng.gauss(0, cv))) for i in range(n)]

    advised = shown = 0
    for _ in range(400):
        change = level_change(rounds(10, 0.0, 0.06))
        assert change is not None and change.low is not None and change.high is not None
        if within_margin(change):
            continue
        needed = rounds_to_show_flat((math.log(change.high) - math.log(change.low)) / 2, 10)
        if needed is None:
            continue
        advised += 1
        after = level_change(rounds(needed, 0.0, 0.06))
        shown += after is not None and within_margin(after)
    assert advised > 200 and 0.65 <= shown / advised <= 0.95, (advised, shown)
    # the half-width shrinks with the rounds: more spread, more rounds; none beyond what is worth advising
    assert rounds_to_show_flat(0.10, 10) < rounds_to_show_flat(0.15, 10) < rounds_to_show_flat(0.2, 10)
    assert rounds_to_show_flat(5.0, 10) is None


def test_a_level_shown_to_move_a_little_gets_no_flat_advice() -> None:
    """+3 % [+1, +12]: below the trend's floor, yet no flat level (its interval excludes no change): the advice
    is about the level moving, not a number of rounds for a flat one."""
    from storbench.stats.steady import what_would_show
    from storbench.stats.trend import Change, Trend

    state = judge(series([1000, 1080, 930, 1050, 960, 1070, 920, 1060, 940, 1000]), RULE)
    moving = Change(ratio=1.03, low=1.01, high=1.12, trend=Trend.UNDECIDED)
    import dataclasses

    class Moving(type(state)):  # type: ignore[misc]
        @property
        def change(self) -> Change:
            return moving

    shown = Moving(**{f.name: getattr(state, f.name) for f in dataclasses.fields(state)})
    assert shown.rounds_to_show is None
    assert what_would_show(shown).startswith("its level is still rising")


def test_a_latency_rules_window_mean_is_said_with_its_unit() -> None:
    """`show`'s line under a steady point gave a latency rule's window mean bare ("window mean 1.235e+06", in ns):
    in µs, named, as the steady figure does."""
    from storbench.report.show_export import steady_detail
    from storbench.stats.steady import SteadyRule, judge

    rule = SteadyRule(metric="lat_mean_ns", window=3, max_rounds=6, confirm=2)
    said = steady_detail(judge([(i, 1_235_000.0 + 1000 * (i % 2)) for i in range(5)], rule))
    assert "window mean 1,235 mean latency (µs)" in said and "e+" not in said, said
    assert "mean 1,236 mean latency (µs)" in said or "mean 1,235 mean latency (µs)" in said, said
