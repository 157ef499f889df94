"""`repeat: {until: "ci <= N%"}`: the interval it judges and shows, and its coverage after a stop, on simulated points
with known truth (log-normal repetitions, true mean 1000).

Stopping at the first round whose plain 95 % interval is narrow enough picks samples with a small spread by luck,
and that interval then covers too few true means; the rule (the interval at CI_STOP_CONFIDENCE, from
CI_STOP_MIN_ROUNDS rounds on) keeps the coverage at 95 %."""

from __future__ import annotations

import math

import numpy as np
import pytest

from storbench.config import CI_STOP_CONFIDENCE, CI_STOP_MIN_ROUNDS, load_plan_text, repeat_bounds
from storbench.stats.adaptive import ci_reached
from storbench.stats.estimate import CONFIDENCE, estimate, t_quantile
from storbench.stats.summary import summarize_points
from synthetic import observation

MAX_ROUNDS = 30
PATHS = 4000


def _coverage(ci_pct: float, cv: float, least: int, confidence: float, seed: int) -> float:
    """The share of simulated points whose interval (``estimate`` at ``confidence``) contains the true mean when the
    run stops at the first look from round ``least`` on whose interval is within +-``ci_pct`` % of its mean (or at
    MAX_ROUNDS). The looks are found for all rounds at once with the same t quantile ``estimate`` uses."""
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv * cv))
    values = 1000.0 * rng.lognormal(-sigma * sigma / 2, sigma, (PATHS, MAX_ROUNDS))
    n = np.arange(1, MAX_ROUNDS + 1, dtype=float)
    mean = np.cumsum(values, axis=1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.maximum(np.cumsum(values * values, axis=1) - n * mean * mean, 0) / (n - 1))
        t = np.array([math.inf] + [t_quantile(confidence, k - 1) for k in range(2, MAX_ROUNDS + 1)])
        narrow = (100 * t * sd / np.sqrt(n) / mean <= ci_pct) & (n >= least)
    narrow[:, -1] = True
    stops = narrow.argmax(axis=1) + 1
    covered = 0
    for row, stop in zip(values, stops, strict=True):
        found = estimate(list(row[:stop]), confidence)
        assert found is not None and found.ci_low is not None and found.ci_high is not None
        assert stop == MAX_ROUNDS or (found.half_width_pct or 0) <= ci_pct + 1e-9  # the look agrees with estimate
        covered += found.ci_low <= 1000.0 <= found.ci_high
    return covered / PATHS


def test_a_wide_target_on_noisy_points_is_judged_at_a_wider_level_that_keeps_95_percent() -> None:
    """N = 20 %, CV 40 %: few rounds meet a wide target, and a lucky small spread among them is likelier; at 97.5 %
    the interval after the stop covered about 94 %, at the wide level (99 %) above 96 %."""
    from storbench.config import ci_stop_confidence

    assert ci_stop_confidence(10.0) == CI_STOP_CONFIDENCE and ci_stop_confidence(20.0) > CI_STOP_CONFIDENCE
    ruled = _coverage(20.0, 0.40, CI_STOP_MIN_ROUNDS, ci_stop_confidence(20.0), seed=2040)
    assert ruled >= 0.95, ruled
    assert _coverage(20.0, 0.40, CI_STOP_MIN_ROUNDS, CI_STOP_CONFIDENCE, seed=2040) < 0.95  # what it replaced


@pytest.mark.parametrize("cv", [0.15, 0.20])
def test_the_interval_after_a_ci_stop_covers_95_percent_where_a_plain_one_does_not(cv: float) -> None:
    """N = 10 %, CV 15-20 %: the settings where the plain rule does worst (90 % at the default min 3; bench/ci_stop.py
    has the whole table). 4,000 points each, Monte Carlo error +-0.7 %."""
    ruled = _coverage(10.0, cv, CI_STOP_MIN_ROUNDS, CI_STOP_CONFIDENCE, seed=int(100 * cv))
    assert ruled >= 0.935, ruled
    plain = _coverage(10.0, cv, 3, CONFIDENCE, seed=int(100 * cv))
    assert plain < 0.92, plain  # what the rule replaced: the test above can fail
    if cv == 0.20:  # a higher minimum alone is not the fix: 93 % at min 10
        assert _coverage(10.0, cv, 10, CONFIDENCE, seed=int(100 * cv)) < 0.94


def test_ci_reached_judges_the_interval_at_the_rules_level() -> None:
    """Four repetitions whose plain 95 % interval is within +-5 % but whose 97.5 % one is not."""
    iops = [1000.0, 1030.0, 970.0, 1005.0]
    observations = [observation(repeat=rep, iops=value) for rep, value in enumerate(iops)]
    plain = estimate(iops, CONFIDENCE)
    ruled = estimate(iops, CI_STOP_CONFIDENCE)
    assert plain is not None and ruled is not None
    assert (plain.half_width_pct or 0) < 5.0 < (ruled.half_width_pct or 0)
    assert not ci_reached(observations, 5.0)
    assert ci_reached(observations, math.ceil(ruled.half_width_pct or 0))


def test_a_run_that_stopped_on_ci_shows_its_intervals_at_the_rules_level() -> None:
    from storbench.model import RunInfo
    from storbench.stats.run_questions import interval_levels
    from storbench.store.migrations import design_of_text

    def run(run_id: int, repeat: str) -> RunInfo:
        text = ("name: p\ntargets:\n  a: {kind: path, path: ./a, size: 1MiB}\nworkload: {rw: randread, runtime: 1s}\n"
                f"repeat: {repeat}\n")
        return RunInfo(run_id=run_id, plan_name="p", plan_text=text, source="run", storbench_version="0",
                       fio_version="", host="h", kernel="k", run_order="interleaved", seed=0, tags=(),
                       started_at_s=0.0, finished_at_s=1.0, design=design_of_text(text))

    levels = interval_levels([run(1, "{until: 'ci <= 5%', min: 3, max: 9}"), run(2, "3")])
    assert levels == {1: CI_STOP_CONFIDENCE}
    # a wide target: a run this storbench made keeps its level (99 %) with its design; one stored before the
    # level was kept (its design read from its plan by a migration) was judged at 97.5 %, and is shown so
    from dataclasses import replace

    from storbench.config import load_plan_text, plan_design

    wide = run(3, "{until: 'ci <= 20%', min: 3, max: 9}")
    assert wide.design.stopping is not None and wide.design.stopping.ci_confidence is None
    made = replace(wide, run_id=4, design=plan_design(load_plan_text(wide.plan_text, "p.yaml").config, 1))
    assert interval_levels([wide, made]) == {3: CI_STOP_CONFIDENCE, 4: 0.99}
    observations = [observation(repeat=rep, iops=value) for rep, value in enumerate([1000.0, 1040.0, 960.0])]
    (shown,) = summarize_points(observations, levels=levels)  # synthetic observations are of run 1
    (plain,) = summarize_points(observations)
    shown_iops, plain_iops = shown.metric("iops"), plain.metric("iops")
    assert shown_iops is not None and plain_iops is not None
    assert shown_iops.confidence == CI_STOP_CONFIDENCE and plain_iops.confidence == CONFIDENCE
    assert (shown_iops.half_width or 0) > (plain_iops.half_width or 0)


@pytest.mark.parametrize(("repeat", "least"), [
    ("{until: 'ci <= 5%', min: 2, max: 20}", CI_STOP_MIN_ROUNDS),
    ("{until: 'ci <= 5%', max: 20}", CI_STOP_MIN_ROUNDS),  # the default min, 3
    ("{until: 'ci <= 5%', min: 6, max: 20}", 6),
    ("{until: 'ci <= 5%', min: 2, max: 3}", 3),  # never beyond max: no look before the last round
])
def test_until_ci_looks_from_the_rules_minimum_on(repeat: str, least: int) -> None:
    text = (f"name: p\ntargets:\n  a: {{kind: path, path: ./a, size: 1MiB}}\nworkload: {{rw: randread}}\n"
            f"repeat: {repeat}\n")
    assert repeat_bounds(load_plan_text(text, "p.yaml").config)[0] == least


def test_two_points_of_a_run_repeated_until_ci_are_compared_at_its_level() -> None:
    """Pairs whose change is shown at a plain 95 % but not at the run's 97.5 %: a run repeated until its intervals
    were narrow compares its points at that level (a plain 95 % after such a stop calls no change different in up
    to 6.3 %), says so in the caption, and shows the points at it; a run without the rule keeps 95 %, which its
    caption says."""
    from dataclasses import replace

    from storbench.report.compare_export import comparison_markdown
    from storbench.report.compare_tables import interval_caption
    from storbench.stats.compare import compare_observations
    from storbench.stats.compare_cells import PointComparison, Verdict
    from storbench.stats.selectors import parse_selector

    logs = [0.03, 0.07, 0.02, 0.05]  # t = 3.83 on 3 df: between 3.18 (95 %) and 4.18 (97.5 %)
    base_iops = [1000.0, 1100.0, 950.0, 1050.0]
    observations = [observation(case_id=t, target=t, repeat=r, iops=x * (math.exp(lr) if t == "b" else 1.0))
                    for r, (x, lr) in enumerate(zip(base_iops, logs, strict=True)) for t in "ab"]

    def compared(levels: dict[int, float] | None) -> tuple[Verdict, float, str, PointComparison]:
        (c,) = compare_observations(observations, parse_selector("target=a"), parse_selector("target=b"), {},
                                    interleaved_runs=frozenset({1}), levels=levels)
        cell = c.cell("iops")
        assert cell is not None and cell.difference is not None and cell.difference.method == "paired"
        assert cell.baseline is not None and cell.baseline.confidence == (levels or {}).get(1, CONFIDENCE)
        return cell.verdict, cell.difference.change_ci_low_pct or 0.0, comparison_markdown([c], "a", "b"), c

    plain_verdict, plain_low, plain_text, plain = compared(None)
    ruled_verdict, ruled_low, ruled_text, ruled = compared({1: CI_STOP_CONFIDENCE})
    assert plain_verdict is Verdict.BETTER and plain_low > 0
    assert ruled_verdict is Verdict.UNDECIDED and ruled_low < 0
    assert "until: ci" in ruled_text and "until: ci" not in plain_text
    assert "97.5 %" in ruled_text
    # the caption says the plain intervals' level, and no 95 % where every interval is at the run's level
    assert "intervals paired (95 %): per-pair ratios" in plain_text and "(95 %)" not in ruled_text
    # beside another run's plain Welch intervals, the ruled paired ones keep their own level (not "95 %")
    welch = replace(plain, cells=tuple(replace(cell, difference=replace(cell.difference, method="welch"))
                                       for cell in plain.cells if cell.difference is not None))
    mixed = interval_caption([ruled, welch])
    assert "paired: per-pair" in mixed and "Welch (95 %): independent" in mixed and "at 97.5 % where" in mixed, mixed


def test_a_comparison_after_a_ci_stop_keeps_its_error_rate_at_the_runs_level() -> None:
    """Two points with the same truth in one run stopped by the rule (bench/ci_stop.py's second table): at a plain
    95 % they are called different in more than 5 % of runs at the worst settings; at the run's level in at most
    about 3 %. 4,000 runs, Monte Carlo error +-0.35 %."""
    from helpers import bench_module

    bench = bench_module("ci_stop")
    a, b = bench.simulate(0.05, PATHS, 11), bench.simulate(0.05, PATHS, 12)
    stop = bench.stops(np.stack([a, b]), 5.0, CI_STOP_CONFIDENCE)
    ruled = bench.called_different(a, b, stop, CI_STOP_CONFIDENCE)
    plain = bench.called_different(a, b, stop, CONFIDENCE)
    assert ruled <= 0.04, ruled
    assert plain > ruled + 0.02, (plain, ruled)  # what it replaced: this test can fail


def test_two_runs_one_repeated_until_ci_are_compared_at_its_level_and_several_runs_at_95() -> None:
    """A before/after of two runs (Welch on their repetitions), one of them repeated `until: ci`: the change's
    interval at that run's level, as its points are shown; sides spanning several runs take the run as the sample
    and keep 95 %."""
    from dataclasses import replace

    from storbench.stats.compare import compare_observations
    from storbench.stats.estimate import welch_difference
    from storbench.stats.selectors import parse_selector

    one = [observation(case_id="c", repeat=r, iops=x) for r, x in enumerate([1000.0, 1040.0, 980.0, 1010.0])]
    two = [replace(o, run_id=2, measurement=replace(o.measurement, iops=o.measurement.iops * 1.04))  # type: ignore
           for o in one]
    (c,) = compare_observations([*one, *two], parse_selector("run=1"), parse_selector("run=2"), {},
                                levels={2: CI_STOP_CONFIDENCE})
    cell = c.cell("iops")
    assert c.ci_level == CI_STOP_CONFIDENCE and cell is not None and cell.difference is not None
    assert cell.baseline is not None and cell.candidate is not None
    expected = welch_difference(cell.baseline, cell.candidate, CI_STOP_CONFIDENCE)
    assert cell.difference.change_ci_low_pct == pytest.approx(expected.change_ci_low_pct)
    plain = welch_difference(cell.baseline, cell.candidate, CONFIDENCE)
    assert (plain.change_ci_low_pct or 0) > (cell.difference.change_ci_low_pct or 0)  # wider than a plain 95 %
    three = [replace(o, run_id=3) for o in two]
    (several,) = compare_observations([*one, *two, *three], parse_selector("run=1"),
                                      parse_selector("tag=x"), {2: ("x",), 3: ("x",)}, levels={2: CI_STOP_CONFIDENCE})
    assert several.ci_level is None
