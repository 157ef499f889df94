"""Known answers for the saturation knee (stats/knee.py) on synthetic curves built as the store gives them
(observations → PointSummaries → curves), and how the table, the report and the figures say it."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import pytest
from rich.console import Console

from storbench.report.figures import curve_figures
from storbench.report.html import ReportDocument, render_html
from storbench.report.tables import knee_text, saturation_table
from storbench.stats.estimate import Estimate, estimate
from storbench.stats.knee import (
    Curve,
    KneeKind,
    curves,
    locate_knee,
    rises_beyond_noise,
)
from storbench.stats.summary import summarize_points
from synthetic import observation


def curve_of(iops: Mapping[int, Sequence[float]], lat_mean_ms: Mapping[int, float], axis: str = "iodepth") -> Curve:
    """One curve over ``axis``: per load level, one IOPS figure per repetition and the mean latency."""
    found = [observation(case_id=f"{axis}{load}", repeat=r, iops=value, lat_mean_ns=lat_mean_ms[load] * 1e6,
                         lat_p99_ns=2 * lat_mean_ms[load] * 1e6, **{axis: load})
             for load, values in iops.items() for r, value in enumerate(values)]
    (curve,) = curves(summarize_points(found), axis)
    return curve


def three(mean: float, spread: float = 0.002) -> tuple[float, float, float]:
    """Three repetitions around ``mean``, ± ``spread`` of it."""
    return (mean * (1 - spread), mean, mean * (1 + spread))


def table_text(curve: Curve) -> str:
    console = Console(record=True, width=300)
    console.print(saturation_table([curve], None))
    return console.export_text()


# ---------------------------------------------------------------------------------------------------------------
# The rule on one step


def _e(mean: float, half: float | None) -> Estimate:
    if half is None:
        return Estimate(n=1, mean=mean, stddev=0.0, ci_low=None, ci_high=None)
    return Estimate(n=3, mean=mean, stddev=half / 2.5, ci_low=mean - half, ci_high=mean + half)


def test_a_rise_must_be_material_and_beyond_the_intervals() -> None:
    assert rises_beyond_noise(_e(1000, 10), _e(1060, 10), 0.05, 0.2)  # +6 %, intervals apart
    assert not rises_beyond_noise(_e(1000, 10), _e(1040, 10), 0.05, 0.2)  # intervals apart, but +4 %
    assert not rises_beyond_noise(_e(1000, 40), _e(1070, 40), 0.05, 0.2)  # +7 %, but the intervals overlap
    assert not rises_beyond_noise(_e(1000, 10), _e(900, 10), 0.05, 0.2)  # a fall
    # Without an interval at either point: the larger threshold, on the means alone.
    assert not rises_beyond_noise(_e(1000, None), _e(1150, 10), 0.05, 0.2)
    assert rises_beyond_noise(_e(1000, None), _e(1210, None), 0.05, 0.2)
    assert not rises_beyond_noise(_e(1000, 10), _e(1190, None), 0.05, 0.2)
    assert rises_beyond_noise(_e(1000, 10), _e(1201, None), 0.05, 0.2)


# ---------------------------------------------------------------------------------------------------------------
# Curves with known knees


def test_flat_from_the_start_has_its_knee_at_the_first_point() -> None:
    curve = curve_of({q: three(5000.0) for q in (1, 4, 16, 64)}, {q: 0.2 * q for q in (1, 4, 16, 64)})
    assert curve.knee_index == 0 and curve.knee is not None and curve.knee.load == 1
    assert curve.knee_kind is KneeKind.AT_LOWEST_LOAD and curve.saturated_at_lowest_load


@pytest.mark.parametrize("bend", [2, 8, 32])
def test_rising_then_flat_has_its_knee_at_the_bend(bend: int) -> None:
    loads = (1, 2, 4, 8, 16, 32, 64)
    # Linear up to the bend, then flat with a slow creep (+0.8 % per doubling, under +5 % in all) that two
    # doublings on is beyond the intervals but not material: it must not drag the knee along.
    iops = {q: three(1000.0 * min(q, bend) * (1.008 ** max(0, loads.index(q) - loads.index(bend)))) for q in loads}
    curve = curve_of(iops, {q: 0.5 * q / min(q, bend) for q in loads})
    assert curve.knee is not None and curve.knee.load == bend
    assert curve.knee_kind is KneeKind.WITHIN_SWEEP and not curve.saturated_at_lowest_load


def test_a_peak_that_falls_after_is_the_knee() -> None:
    iops = {1: 1000.0, 2: 2000.0, 4: 4000.0, 8: 9000.0, 16: 7000.0, 32: 6000.0}
    curve = curve_of({q: three(v) for q, v in iops.items()}, {q: 0.1 * q for q in iops})
    assert curve.knee is not None and curve.knee.load == 8


def test_noisy_flat_curve_gets_no_mid_knee_and_keeps_its_flat_start() -> None:
    # Means wander by up to +9 % (more than the 5 % threshold) but the repetitions are noisy (CV ~8 %): the
    # intervals overlap, so no step raised throughput beyond noise.
    means = {1: 3000.0, 2: 3270.0, 4: 2900.0, 8: 3250.0, 16: 3100.0}
    curve = curve_of({q: three(m, spread=0.08) for q, m in means.items()}, {q: 0.3 * q for q in means})
    assert curve.knee is not None and curve.knee.load == 1 and curve.saturated_at_lowest_load


def test_noisy_flat_curves_at_random_keep_their_knee_at_the_first_point() -> None:
    rng = random.Random(17)
    loads = (1, 2, 4, 8, 16, 32)
    at_first = 0
    trials = 1000
    for _ in range(trials):  # 3 repetitions, run-to-run CV 5 % (reads: 1-6 %); about 1 % get a later knee
        iops = [estimate([rng.gauss(3000.0, 150.0) for _ in range(3)]) for _ in loads]
        lat = [estimate([0.3e6 * q * rng.gauss(1.0, 0.05) for _ in range(3)]) for q in loads]
        knee = locate_knee([e for e in iops if e is not None], lat)
        at_first += knee.index == 0
    assert at_first / trials >= 0.97


def test_steadily_rising_curve_has_no_knee_in_the_sweep() -> None:
    loads = (1, 2, 4, 8, 16, 32, 64)
    curve = curve_of({q: three(1000.0 * q) for q in loads}, {q: 0.5 for q in loads})
    assert curve.knee is None and curve.knee_kind is KneeKind.STILL_RISING
    assert "none in sweep: IOPS still rising at iodepth 64" in table_text(curve)
    # Log-linear growth (+1,000 IOPS a doubling) still rises beyond noise at every step.
    curve = curve_of({q: three(1000.0 * (1 + loads.index(q))) for q in loads}, {q: 0.1 * q for q in loads})
    assert curve.knee is None and curve.knee_kind is KneeKind.STILL_RISING


def test_a_noisy_dip_does_not_end_a_rise() -> None:
    # 1 → 2 doubled; 4 is a noisy point no higher than 2; 8 is far above both: still rising throughout.
    iops = {1: three(1000.0), 2: three(2000.0), 4: three(2050.0, spread=0.3), 8: three(8000.0)}
    curve = curve_of(iops, {q: 0.1 * q for q in iops})
    assert curve.knee is None and curve.knee_kind is KneeKind.STILL_RISING


def test_flat_iops_with_flat_latency_is_no_knee() -> None:
    # A sync engine ignores iodepth (or fio's rate limit holds I/Os back): more load reached nothing.
    curve = curve_of({q: three(4000.0) for q in (1, 4, 16)}, {q: 0.25 for q in (1, 4, 16)})
    assert curve.knee is None and curve.knee_kind is KneeKind.LATENCY_FLAT
    assert "latency did not grow" in knee_text(curve)


@pytest.mark.parametrize(("growth", "kind"), [(1.4, KneeKind.LATENCY_FLAT), (1.6, KneeKind.AT_LOWEST_LOAD)])
def test_latency_must_grow_one_and_a_half_times_beyond_the_knee(growth: float, kind: KneeKind) -> None:
    curve = curve_of({q: three(4000.0) for q in (1, 2, 4)}, {1: 1.0, 2: 1.0 + (growth - 1) / 2, 4: growth})
    assert curve.knee_kind is kind


def test_single_repetitions_use_the_larger_threshold() -> None:
    loads = (1, 2, 4, 8)
    lat = {q: 0.3 * q for q in loads}
    flat = curve_of({1: [3000.0], 2: [3500.0], 4: [2950.0], 8: [3400.0]}, lat)  # within +20 %
    assert flat.knee is not None and flat.knee.load == 1 and flat.saturated_at_lowest_load
    rising = curve_of({1: [1000.0], 2: [1250.0], 4: [1560.0], 8: [1950.0]}, lat)  # +25 % a doubling
    assert rising.knee is None and rising.knee_kind is KneeKind.STILL_RISING


def test_the_throttled_device_is_already_saturated_at_its_lowest_depth() -> None:
    """The device of issue 17: throttled to 3,000 read IOPS; iodepth 1, 16 and 64 gave 2,999, 2,999 and 3,013
    IOPS while mean latency went 0.33 ms → 5.5 ms → 22 ms."""
    iops = {1: (2997.0, 2999.0, 3001.0), 16: (2998.0, 2999.0, 3000.0), 64: (3011.0, 3013.0, 3015.0)}
    curve = curve_of(iops, {1: 0.33, 16: 5.5, 64: 22.0})
    assert curve.knee is not None and curve.knee.load == 1 and curve.saturated_at_lowest_load
    text = table_text(curve)
    assert "already saturated at the lowest load (iodepth 1): 2,999 IOPS" in text and "none in sweep" not in text
    html = render_html(ReportDocument(title="t", runs=(), points=(), figures=(), curves=(curve,)), "")
    assert "already saturated at the lowest load (iodepth 1)" in html and "none within the sweep" not in html
    (figure,) = curve_figures([curve])
    assert any("already saturated at the lowest load (iodepth 1)" in text for _, text in figure.notes)
    knee_series = [s for s in figure.series if s.name == "knee"]
    assert len(knee_series) == 1 and knee_series[0].x == (pytest.approx(2999.0),)
    assert "already saturated at the lowest load" in knee_series[0].text[0]


def test_a_knee_within_the_sweep_reads_as_before() -> None:
    loads = (1, 2, 4, 8)
    curve = curve_of({q: three(1000.0 * min(q, 4)) for q in loads}, {q: 0.5 * q for q in loads})
    assert "iodepth=4: 4,000 IOPS" in table_text(curve)
    (figure,) = curve_figures([curve])
    assert figure.notes == ()


def test_curve_keeps_its_three_field_constructor() -> None:
    curve = curve_of({q: three(1000.0 * min(q, 4)) for q in (1, 2, 4, 8)}, {q: 0.5 * q for q in (1, 2, 4, 8)})
    assert Curve(curve.axis, curve.points, 2).knee_kind is KneeKind.WITHIN_SWEEP
    assert Curve(curve.axis, curve.points, 0).saturated_at_lowest_load
    assert Curve(curve.axis, curve.points, None).knee_kind is KneeKind.STILL_RISING
    with pytest.raises(ValueError):
        Curve(curve.axis, curve.points, None, KneeKind.AT_LOWEST_LOAD)
