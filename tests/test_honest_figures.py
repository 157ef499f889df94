"""Figures that do not exaggerate (issue 30, item 8): rate axes from zero, plain PNG ticks, no curve over a single
x value, drift over the run's own length, labels that do not sit on each other, a toolbar that leaves the title
alone. Figure specs are pure: these read the specs and the two renderers' axes."""

from __future__ import annotations

import math
from dataclasses import replace

import matplotlib.pyplot as plt
import pytest

from storbench.report.drift_figures import drift_figures
from storbench.report.figures import FigureSpec, Series, spread_labels
from storbench.report.images import PlainFormatter, draw_figure
from storbench.report.plotly_render import TOP_MARGIN, plotly_figure
from storbench.report.point_figures import block_size_figures, latency_vs_iodepth_figures
from storbench.report.saturation_figures import curve_figures, iops_vs_load_figures
from storbench.report.utilisation_figures import utilisation_figures
from storbench.stats.drift import Drift, DriftSample, drift
from storbench.stats.knee import curves
from storbench.stats.observations import Observation
from storbench.stats.point_summary import PointSummary
from storbench.stats.summary import summarize_points
from synthetic import observation

# the volume: capped at 3,000 IOPS, swept over iodepth
DEPTHS = (1, 2, 4, 8)
FLAT = ((2999.0, 2999.5), (2999.2, 3000.0), (2999.6, 3000.0), (2999.9, 3000.0))


def _flat(target: str = "vol", bs_bytes: int = 4096, **extra: object) -> list[Observation]:
    return [observation(case_id=f"{target}-{bs_bytes}-qd{depth}", target=target, target_kind="block", iodepth=depth,
                        bs_bytes=bs_bytes, repeat=rep, iops=rate, lat_mean_ns=depth * 333_000.0,
                        lat_p99_ns=depth * 400_000, host_cpu_busy_pct=10.0, disk_busiest_util_pct=20.0, **extra)
            for depth, rates in zip(DEPTHS, FLAT, strict=True) for rep, rate in enumerate(rates)]


def _points(*observations: list[Observation]) -> list[PointSummary]:
    return summarize_points([o for group in observations for o in group])


def _y_limits(spec: FigureSpec) -> tuple[float, float]:
    figure = draw_figure(spec)
    try:
        low, high = figure.axes[0].get_ylim()
        return float(low), float(high)
    finally:
        plt.close(figure)


def test_a_flat_cap_is_drawn_flat_rate_axes_start_at_zero() -> None:
    """2,999-3,000 IOPS on an axis from 2,999 to 3,000 looks like a steep line; from zero it is flat."""
    points = _points(_flat())
    (iops,) = iops_vs_load_figures(points)
    assert all(2990 < y < 3010 for y in iops.series[0].y)
    drawn = plotly_figure(iops)
    assert drawn.layout.yaxis.rangemode == "tozero" and drawn.layout.yaxis.type == "linear"
    low, high = _y_limits(iops)
    assert low == 0.0 and 3000 <= high < 3600  # the PNG too: from zero, the flat line near the top
    # the saturation curve has IOPS along x: that axis starts at zero as well
    (saturation,) = curve_figures(curves(points, "iodepth"))
    assert saturation.x_label == "IOPS" and saturation.x_from_zero and not saturation.x_log
    assert plotly_figure(saturation).layout.xaxis.rangemode == "tozero"
    figure = draw_figure(saturation)
    try:
        assert figure.axes[0].get_xlim()[0] == 0.0
    finally:
        plt.close(figure)
    # the check can fail: a spec whose y_range starts above zero is drawn from there
    zoomed = replace(iops, y_range=(2998.0, 3001.0))
    assert _y_limits(zoomed)[0] == 2998.0


def _tick_labels(spec: FigureSpec, axis: str = "y") -> list[str]:
    figure = draw_figure(spec)
    try:
        figure.canvas.draw()
        ticks = figure.axes[0].get_yticklabels() if axis == "y" else figure.axes[0].get_xticklabels()
        return [t.get_text() for t in ticks if t.get_text()]
    finally:
        plt.close(figure)


def test_png_ticks_are_plain_numbers_with_thousands_separators() -> None:
    """Never "-1.0 ... 0.0 +3e3" (matplotlib's offset) or "1e6": plain numbers, separated in thousands."""
    zoomed = FigureSpec(figure_id="z", title="t", x_label="x", y_label="IOPS", y_range=(2999.0, 3000.0),
                        series=(Series(name="a", x=(1.0, 2.0), y=(2999.0, 3000.0)),))
    labels = _tick_labels(zoomed)
    assert labels and all("e" not in t and "+" not in t for t in labels), labels
    assert "3,000.0" in labels or "3,000" in labels
    big = FigureSpec(figure_id="b", title="t", x_label="x", y_label="bytes/s",
                     series=(Series(name="a", x=(1.0, 2.0), y=(1.0e6, 3.5e6)),))
    labels = _tick_labels(big)
    assert "3,000,000" in labels and all("e" not in t for t in labels), labels
    # the formatter itself: decimals as the spacing needs, none when whole
    formatter = PlainFormatter()
    formatter.set_locs([2999.0, 2999.25, 2999.5])
    assert formatter(2999.25) == "2,999.25" and formatter(2999.0) == "2,999.00"
    formatter.set_locs([0.0, 1000.0, 2000.0])
    assert formatter(2000.0) == "2,000" and formatter(0.0) == "0"
    log = PlainFormatter(log=True)
    log.set_locs([0.01, 0.1, 1.0, 10.0])
    assert [log(v) for v in (0.01, 0.1, 1.0, 10.0)] == ["0.01", "0.1", "1", "10"]


def test_no_curve_figure_over_a_single_x_value() -> None:
    """A sweep of one block size draws no "vs block size" figure; one iodepth no "vs iodepth" figure; two block
    sizes in different size groups are drawn together."""
    one_depth = [o for o in _flat() if o.case.workload.iodepth == 1]
    points = _points(one_depth)
    assert block_size_figures(points) == []
    assert iops_vs_load_figures(points) == [] and latency_vs_iodepth_figures(points) == []
    assert curve_figures(curves(points, "iodepth")) == [] and utilisation_figures(points) == []
    swept = _points(_flat())
    assert block_size_figures(swept) == []  # iodepth swept, one block size
    assert {f.figure_id for f in utilisation_figures(swept)} == {"utilisation-vs-iodepth"}
    small_and_large = _points(one_depth, [o for o in _flat(bs_bytes=1 << 20) if o.case.workload.iodepth == 1])
    figures = block_size_figures(small_and_large)
    assert [f.figure_id for f in figures] == ["iops-vs-bs-small-large", "bw_bytes_per_s-vs-bs-small-large"]
    assert figures[0].x_categories == ("4k", "1m") and "small and large blocks (4k, 1m)" in figures[0].title
    for spec in [*figures, *iops_vs_load_figures(swept), *utilisation_figures(swept)]:
        assert all(len(set(s.x)) >= 2 for s in spec.series), spec.figure_id


def _drift(minutes: float) -> Drift:
    samples = tuple(DriftSample(minutes * i / 5, -i * 1.0, f"c{i % 2}", i) for i in range(6))
    per_min = tuple(math.log1p(pct / 100) / minutes for pct in (-6.0, -9.0, -3.0))  # over the run's minutes
    return Drift(run_id=1, direction="read", metric="iops", samples=samples, log_per_min=per_min,
                 span_minutes=minutes)


def test_drift_is_given_over_the_runs_own_length_not_per_ten_minutes() -> None:
    """A 3-minute run's trend reads "-6.0 % over the run's 3.0 min", never "%/10 min"."""
    d = _drift(3.0)
    assert d.over_run() == pytest.approx((-6.0, -9.0, -3.0))
    (figure,) = drift_figures([d])
    trend = figure.series[1]
    assert trend.name == "trend -6.0 % over the run's 3.0 min [95 % CI -9.0, -3.0]"
    assert "10 min" not in trend.name and "10 min" not in figure.caption
    # the line drawn agrees: it falls by the stated change (a ratio) from x=0 to the run's end
    assert trend.x[0] == 0.0 and trend.x[-1] == 3.0
    assert (1 + trend.y[-1] / 100) / (1 + trend.y[0] / 100) == pytest.approx(0.94)
    # stats.drift fits the logarithms: -1 % a minute compounds to about -9.6 % per 10 minutes
    rows = [observation(case_id=f"c{i % 2}", repeat=i, iops=1000.0 * 0.99 ** i, started_at_s=60.0 * i)
            for i in range(8)]
    assert drift(rows, 1, "read").slope_pct_per_10min == pytest.approx(-9.56, abs=0.1)


def test_verdict_labels_at_a_shared_x_do_not_sit_on_each_other() -> None:
    """Two lines capped at the same IOPS: the second's verdicts go below its points; three or more: on hover."""
    one = Series(name="a", x=(1.0, 2.0), y=(3000.0, 3000.0), text=("capped", "capped"), show_text=True)
    two = replace(one, name="b")
    three = replace(one, name="c")
    alone, hover = spread_labels([one, replace(two, x=(4.0, 8.0))])
    assert not hover and not any(s.text_below for s in alone)
    pair, hover = spread_labels([one, two])
    assert not hover and [s.text_below for s in pair] == [False, True] and all(s.show_text for s in pair)
    many, hover = spread_labels([one, two, three])
    assert hover and not any(s.show_text for s in many) and all(s.text for s in many)  # still on hover
    # through the figure builder: two targets capped alike
    figure = iops_vs_load_figures(_points(_flat("vol", bs_bytes=4096), _flat("gp3", bs_bytes=4096)))[0]
    labelled = [s for s in figure.series if s.show_text]
    assert len(labelled) == 2 and [s.text_below for s in labelled] == [False, True]
    drawn = plotly_figure(figure)
    assert [t.textposition for t in drawn.data] == ["top center", "bottom center"]


def test_the_toolbar_leaves_the_title_alone() -> None:
    """The title sits on the plot's top edge, left, with room above it for the toolbar (modebar)."""
    (figure,) = iops_vs_load_figures(_points(_flat()))
    layout = plotly_figure(figure).layout
    assert layout.title.yref == "paper" and layout.title.yanchor == "bottom" and layout.title.xanchor == "left"
    assert layout.margin.t == TOP_MARGIN >= 90


def test_one_line_for_a_limit_several_targets_declare_and_room_for_the_verdicts() -> None:
    """Two targets sold as 3,000 IOPS: one line naming both (two lines drawn on each other hid one label); the
    IOPS axis reaches above the highest point so the verdicts written above it stay inside the plot."""
    from storbench.model import Expectation

    sold = Expectation(iops=3000)
    points = summarize_points([*_flat("vol"), *_flat("gp3")], expectations={(1, "vol"): sold, (1, "gp3"): sold})
    (figure,) = iops_vs_load_figures(points)
    assert [m.label for m in figure.y_marks] == ["expected (vol, gp3): 3,000 IOPS"]
    assert figure.y_range is not None and figure.y_range[0] == 0.0 and figure.y_range[1] >= 1.1 * 3000


def test_a_log_axis_within_one_decade_still_has_plain_labels() -> None:
    """Latencies of 0.3-0.9 ms on a log axis have no power of ten to label: the minor ticks carry plain numbers."""
    spec = FigureSpec(figure_id="l", title="t", x_label="x", y_label="ms", y_log=True,
                      series=(Series(name="a", x=(1.0, 2.0), y=(0.3, 0.9)),))
    figure = draw_figure(spec)
    try:
        figure.canvas.draw()
        axis = figure.axes[0].yaxis
        labels = [t.get_text() for t in [*axis.get_majorticklabels(), *axis.get_minorticklabels()] if t.get_text()]
    finally:
        plt.close(figure)
    assert labels and all("times" not in t and "^" not in t and "e" not in t for t in labels), labels
    assert "0.4" in labels or "0.5" in labels, labels


def test_a_lone_block_size_joins_the_group_beside_it() -> None:
    """4k, 16k and 64k: 64k, alone in its size group, had been in no block-size figure."""
    one = [[o for o in _flat(bs_bytes=size) if o.case.workload.iodepth == 1] for size in (4096, 16384, 65536)]
    figures = block_size_figures(_points(*one))
    assert [f.figure_id for f in figures] == ["iops-vs-bs-small-medium", "bw_bytes_per_s-vs-bs-small-medium"]
    assert figures[0].x_categories == ("4k", "16k", "64k") and "(4k-64k)" in figures[0].title


def test_images_write_the_ticks_own_words_and_hover_boxes_no_doubled_percent() -> None:
    """A history's x ticks are "run 4", "run 7", "run 12": the PNG had numbered them 1, 2, 3. plotly.js has no
    "%%": a series named "all (95 % CI)" had been "all (95 %% CI)" in its hover box."""
    spec = FigureSpec(figure_id="h", title="t", x_label="run", y_label="IOPS", x_tickvals=(1.0, 2.0, 3.0),
                      x_ticktext=("run 4", "run 7", "run 12"),
                      series=(Series(name="all (95 % CI) %{x}", x=(1.0, 2.0, 3.0), y=(5.0, 6.0, 7.0)),))
    figure = draw_figure(spec)
    try:
        figure.canvas.draw()
        assert [t.get_text() for t in figure.axes[0].get_xticklabels()] == ["run 4", "run 7", "run 12"]
    finally:
        plt.close(figure)
    hover = plotly_figure(spec).data[0].hovertemplate
    assert "all (95 % CI)" in hover and "%%" not in hover and "%{x}</extra>" not in hover


def test_a_clients_blackout_bar_is_not_drawn_below_zero_and_slow_rates_keep_their_digits() -> None:
    """The per-client blackout figure used its upper arm both ways (0.04 s [0.00, 0.19] drawn down to -0.12 s);
    volume operations at 0.45 ops/s were "0 ± 0" in tables."""
    from storbench.report.failover import client_blackout_figure
    from storbench.report.tables import iops_with_ci
    from storbench.stats.estimate import Estimate
    from storbench.stats.failover_points import PointFailover

    short = Estimate(n=3, mean=0.0353, stddev=0.06, ci_low=-0.117, ci_high=0.187)
    point = PointFailover("c", 1, "fail", "node.1", (), *(None,) * 7, 3, 0, 0,
                          client_blackouts_s=(("client.1", short), ("client.2", short)))
    spec = client_blackout_figure(point, "x")
    assert spec is not None
    (series,) = spec.series
    assert series.error_y_minus == pytest.approx((0.0353, 0.0353)) and series.error_y == pytest.approx((0.1517,) * 2)
    assert iops_with_ci(Estimate(n=4, mean=0.4512, stddev=0.05, ci_low=0.37, ci_high=0.53)) == "0.451 ± 0.079"
    assert iops_with_ci(Estimate(n=4, mean=2993.4, stddev=10.0, ci_low=2969.0, ci_high=3017.8)) == "2,993 ± 24"
