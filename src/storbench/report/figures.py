"""Figures as plain data (which series, which axes, which scale), built from statistics. Pure.

Two renderers draw the same specs: plotly for the interactive HTML report, matplotlib for PNG/SVG images.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from storbench.model import Expectation, LatencyHistogram, Status, StoredRepetition
from storbench.report.labels import (
    block_size,
    comparison_label,
    curve_lab_keys,
    curve_label,
    point_label,
    rate_header,
    varying_comparison_lab,
    varying_lab_keys,
)
from storbench.report.saturation_tables import knee_text
from storbench.stats.bottleneck import Bottleneck
from storbench.stats.compare_cells import PointComparison
from storbench.stats.curve import BLOCK_SIZE, LOAD_AXES, Axis, CurveKey, axis_value
from storbench.stats.drift import Drift
from storbench.stats.knee import Curve
from storbench.stats.point_summary import PointSummary
from storbench.units import format_block_size, format_bytes

SMALL_MAX_BYTES = 16 * 1024
MEDIUM_MAX_BYTES = 256 * 1024
SIZE_GROUPS = (("small", "<= 16k"), ("medium", "32k-256k"), ("large", ">= 512k"))
BOTTLENECK_SECTION = "Bottlenecks"  # the report draws this section's figures under the verdicts' table
MIB = 1048576.0
THROUGHPUT_COLOR, LATENCY_COLOR, EXPECTED_COLOR = "#1f77b4", "#d62728", "#2ca02c"


@dataclass(frozen=True)
class Series:
    name: str
    x: tuple[float | str, ...]
    y: tuple[float, ...]
    error_y: tuple[float, ...] | None = None
    error_x: tuple[float, ...] | None = None
    text: tuple[str, ...] | None = None
    mode: str = "lines+markers"  # "lines+markers", "markers", "lines", "bar"
    marker_size: int = 7
    dash: bool = False
    show_text: bool = False  # write ``text`` beside each point or on each bar (verdicts), not only on hover
    error_y_minus: tuple[float, ...] | None = None  # the error bars' lower arms, when not ``error_y`` (asymmetric)
    color: str = ""  # '' = the renderer's next colour
    y2: bool = False  # drawn against the second y axis, on the right (``FigureSpec.y2_label``)
    text_below: bool = False  # ``show_text`` labels below the points, not above (another series' labels share x)


def y_error_arms(series: Series, y_log: bool) -> tuple[list[float], list[float]] | None:
    """(lower, upper) arms of a series' y error bars, for every renderer: the lower from ``error_y_minus`` when
    given; on a log axis cut short of zero (an interval reaching zero cannot be drawn there)."""
    if not series.error_y:
        return None
    lower = list(series.error_y_minus or series.error_y)
    if y_log:
        lower = [min(e, 0.95 * y) for e, y in zip(lower, series.y, strict=True)]
    return lower, list(series.error_y)


def x_error_arms(series: Series) -> tuple[list[float], list[float]] | None:
    """(lower, upper) arms of a series' x error bars (IOPS along x: the lower arm stops at zero)."""
    if not series.error_x:
        return None
    return [min(e, float(x)) for e, x in zip(series.error_x, series.x, strict=True)], list(series.error_x)


@dataclass(frozen=True)
class Band:
    """A horizontal band across the plot (an equivalence margin), labelled."""

    low: float
    high: float
    label: str


@dataclass(frozen=True)
class Mark:
    """A labelled reference line across the plot at ``value`` (a target's declared limit, `expect:`)."""

    value: float
    label: str
    color: str = EXPECTED_COLOR


@dataclass(frozen=True)
class FigureSpec:
    figure_id: str
    title: str  # a line break ("\n") where it is long
    x_label: str
    y_label: str
    series: tuple[Series, ...]
    x_log: bool = False
    y_log: bool = False
    x_categories: tuple[str, ...] = ()
    x_tickvals: tuple[float, ...] = ()
    x_ticktext: tuple[str, ...] = ()
    section: str = ""
    caption: str = ""
    y_range: tuple[float, float] | None = None
    x_range: tuple[float, float] | None = None
    y_lines: tuple[float, ...] = ()  # horizontal reference lines (zero change)
    y_bands: tuple[Band, ...] = ()
    notes: tuple[tuple[str, str], ...] = ()  # (what, text) shown beside the figure in the report
    y_marks: tuple[Mark, ...] = ()  # labelled horizontal lines on the (left) y axis
    x_marks: tuple[Mark, ...] = ()  # labelled vertical lines
    y2_label: str = ""  # the right y axis, for the series with ``y2`` (none when '')
    stacked: bool = False  # bar series stacked on each other (parts of one whole), not side by side
    x_from_zero: bool = False  # a rate along x (IOPS): the axis starts at zero, so a flat cap looks flat

    @property
    def points(self) -> int:
        return sum(len(s.y) for s in self.series)


def size_group(bs_bytes: int) -> str:
    if bs_bytes <= SMALL_MAX_BYTES:
        return "small"
    if bs_bytes <= MEDIUM_MAX_BYTES:
        return "medium"
    return "large"


def _half(point: PointSummary, field: str, scale: float = 1.0) -> float:
    estimate = point.metric(field)
    half = estimate.half_width if estimate else None
    return 0.0 if half is None or math.isnan(half) else half / scale


def _below(point: PointSummary, field: str, scale: float = 1.0) -> float:
    """The error bar below the mean: down to the interval's lower bound (cut at zero, see stats.estimate)."""
    estimate = point.metric(field)
    if estimate is None or estimate.ci_low is None or math.isnan(estimate.ci_low):
        return 0.0
    return (estimate.mean - estimate.ci_low) / scale


def _mean(point: PointSummary, field: str, scale: float = 1.0) -> float | None:
    estimate = point.metric(field)
    return None if estimate is None else estimate.mean / scale


def latency_unit(values_ns: Iterable[float | None]) -> tuple[float, str]:
    """(divisor, unit) for latencies in nanoseconds: ms once the largest reaches 1 ms (an axis reads "3 ms",
    not "3,000 µs"), else µs."""
    largest = max((v for v in values_ns if v is not None and not math.isnan(v)), default=0.0)
    return (1e6, "ms") if largest >= 1e6 else (1e3, "µs")


def _declared(expected: Expectation | None, field: str) -> float | None:
    """The declared limit in a figure's unit: IOPS for ``iops``, MiB/s for ``bw_bytes`` (None: not declared)."""
    if expected is None:
        return None
    if field == "iops":
        return expected.iops or None
    return expected.bw_bytes_per_s / MIB if expected.bw_bytes_per_s else None


def expected_marks(points: Sequence[PointSummary], field: str) -> tuple[Mark, ...]:
    """One line per declared limit among ``points``' targets (`expect:`), in the figure's unit (see
    ``_declared``), labelled with the target when the points span several targets."""
    targets = {p.target for p in points}
    limits: dict[float, dict[str, None]] = {}  # one line per value: targets declaring the same share it
    for p in points:
        value = _declared(p.expected, field)
        if value is not None:
            limits.setdefault(value, {})[p.target] = None
    marks = []
    for value, declaring in limits.items():
        shown = f"{value:,.0f} IOPS" if field == "iops" else f"{format_bytes(value * MIB)}/s"
        names = f" ({', '.join(declaring)})" if len(targets) > 1 else ""
        marks.append(Mark(value, f"expected{names}: {shown}"))
    return tuple(marks)


def _verdict_mark(p: PointSummary) -> str:
    """The short verdict written on a bar or point ('' when unknown)."""
    return "" if p.bottleneck.kind == "unknown" else p.bottleneck.short


def _size_groups(points: Sequence[PointSummary]) -> list[tuple[str, str, list[PointSummary]]]:
    """(group, its label, its points) for the block-size figures, each with at least two block sizes: a figure
    "vs block size" over a single size is no curve. Groups of a single size each are drawn together when there are
    several (4k and 1m: one figure of both); a lone size is left out."""
    groups = [(group, label, [p for p in points if size_group(p.bs_bytes) == group]) for group, label in SIZE_GROUPS]
    groups = [g for g in groups if g[2]]
    drawn = [g for g in groups if len({p.bs_bytes for p in g[2]}) >= 2]
    singles = [g for g in groups if len({p.bs_bytes for p in g[2]}) == 1]
    if len(singles) >= 2:
        members = [p for g in singles for p in g[2]]
        label = ", ".join(format_block_size(b) for b in sorted({p.bs_bytes for p in members}))
        drawn.append(("-".join(g[0] for g in singles), label, members))
    return drawn


def block_size_figures(points: Sequence[PointSummary]) -> list[FigureSpec]:
    """IOPS and MiB/s against block size, as grouped bars with 95 % CI error bars, per size group."""
    figures = []
    lab_keys = varying_lab_keys(points)  # points that differ only in a lab setting are separate series
    for group, group_label, members in _size_groups([p for p in points if p.metric("iops") is not None]):
        sizes = sorted({p.bs_bytes for p in members})
        categories = tuple(format_block_size(b) for b in sizes)
        for field, label, scale, unit in (("iops", "IOPS", 1.0, "IOPS"), ("bw_bytes", "bandwidth", 1048576.0, "MiB/s")):
            series_points: dict[str, dict[str, PointSummary]] = {}
            for p in members:
                series_points.setdefault(point_label(p, omit=("bs",), lab_keys=lab_keys), {})[block_size(p)] = p
            series = []
            for name, by_bs in series_points.items():
                present = [c for c in categories if c in by_bs]
                verdicts = tuple(_verdict_mark(by_bs[c]) for c in present)
                series.append(Series(
                    name=name, x=tuple(present), y=tuple(_mean(by_bs[c], field, scale) or 0.0 for c in present),
                    error_y=tuple(_half(by_bs[c], field, scale) for c in present),
                    error_y_minus=tuple(_below(by_bs[c], field, scale) for c in present), mode="bar",
                    text=verdicts, show_text=field == "iops" and any(verdicts)))
            figures.append(FigureSpec(
                figure_id=f"{field}-vs-bs-{group}",
                title=f"{label} vs block size — {group.replace('-', ' and ')} blocks ({group_label})",
                x_label="block size", y_label=unit, series=tuple(series), x_categories=categories,
                y_marks=expected_marks(members, field), section="Block size",
                caption="Bars: mean over repetitions; error bars: 95 % confidence interval. Above each IOPS bar: its "
                "bottleneck verdict (cpu, media, net, client, depth = under-driven, capped = capped beyond this "
                "host). A horizontal line: what the target was declared to deliver (expect)."))
    return figures


def _log2_ticks(values: Sequence[int]) -> tuple[tuple[float, ...], tuple[str, ...]]:
    ordered = sorted(set(values))
    return tuple(float(v) for v in ordered), tuple(str(v) for v in ordered)


def latency_vs_iodepth_figures(points: Sequence[PointSummary]) -> list[FigureSpec]:
    """Mean, p95 and p99 latency against iodepth, one figure per target/pattern/direction."""
    groups: dict[tuple[str, str, str], list[PointSummary]] = {}
    for p in points:
        if p.metric("lat_mean_ns") is not None:
            groups.setdefault((p.target, p.rw, p.direction_name), []).append(p)
    figures = []
    lab_keys = varying_lab_keys(points)
    for (target, rw, direction), members in groups.items():
        lines: dict[str, list[PointSummary]] = {}
        for p in members:
            lines.setdefault(point_label(p, omit=("iodepth", "target"), lab_keys=lab_keys), []).append(p)
        lines = {k: v for k, v in lines.items() if len({p.iodepth for p in v}) >= 2}
        if not lines:
            continue
        series = []
        fields = (("lat_mean_ns", "mean"), ("lat_p95_ns", "p95"), ("lat_p99_ns", "p99"))
        scale, unit = latency_unit(_mean(p, field) for line in lines.values() for p in line for field, _ in fields)
        for name, line in lines.items():
            line = sorted(line, key=lambda p: p.iodepth)
            for field, stat in fields:
                series.append(Series(
                    name=f"{name} {stat}", x=tuple(float(p.iodepth) for p in line),
                    y=tuple(_mean(p, field, scale) or 0.0 for p in line),
                    error_y=tuple(_half(p, field, scale) for p in line),
                    error_y_minus=tuple(_below(p, field, scale) for p in line), dash=stat != "mean"))
        tickvals, ticktext = _log2_ticks([p.iodepth for p in members])
        figures.append(FigureSpec(
            figure_id=f"latency-vs-iodepth-{target}-{rw}-{direction}",
            title=f"Latency vs iodepth — {target} {rw} {direction}", x_label="iodepth", y_label=f"latency ({unit})",
            series=tuple(series), x_log=True, y_log=True, x_tickvals=tickvals, x_ticktext=ticktext,
            section="Latency", caption="Total latency (submission to completion); percentiles from merged "
            "latency histograms; error bars: 95 % CI over repetitions."))
    return figures


def curve_figures(curve_list: Sequence[Curve]) -> list[FigureSpec]:
    """IOPS-latency curves (p99 against IOPS, one point per load level), the knee marked; a curve already
    saturated at its lowest load says so beside the figure."""
    by_axis: dict[str, list[Curve]] = {}
    for curve in curve_list:
        by_axis.setdefault(curve.axis, []).append(curve)
    figures = []
    lab_keys = curve_lab_keys(curve_list)
    for axis, members in by_axis.items():
        series = []
        knees_x, knees_y, knees_text = [], [], []
        notes = []
        scale, unit = latency_unit(c.lat_p99_ns for curve in members for c in curve.points)
        for curve in members:
            label = curve_label(curve, lab_keys)
            usable = [c for c in curve.points if c.lat_p99_ns is not None]
            if len({c.load for c in usable}) < 2:  # one load level: no curve to draw
                continue
            series.append(Series(
                name=label, x=tuple(c.iops for c in usable),
                y=tuple((c.lat_p99_ns or 0) / scale for c in usable),
                error_x=tuple(c.iops_ci_half or 0.0 for c in usable),
                text=tuple(f"{axis}={c.load}: {c.point.bottleneck.kind.value}" for c in usable)))
            knee = curve.knee
            if knee is not None and knee.lat_p99_ns is not None:
                knees_x.append(knee.iops)
                knees_y.append(knee.lat_p99_ns / scale)
                knees_text.append(f"{label}: {knee_text(curve)}" if curve.saturated_at_lowest_load
                                  else f"knee: {label} {axis}={knee.load}")
            if curve.saturated_at_lowest_load:
                notes.append((label, knee_text(curve)))
        if not series:
            continue
        if knees_x:
            series.append(Series(name="knee", x=tuple(knees_x), y=tuple(knees_y), text=tuple(knees_text),
                                 mode="markers", marker_size=16))
        figures.append(FigureSpec(
            figure_id=f"iops-latency-{axis}", title=f"IOPS vs p99 latency as {axis} grows", x_label="IOPS",
            y_label=f"p99 latency ({unit})", series=tuple(series), y_log=True, section="Saturation", x_from_zero=True,
            caption=f"Each point is one {axis} setting; the knee (large marker) is the lowest {axis} beyond which "
            "more load adds no IOPS beyond noise while latency grows; at the first point, the curve was already "
            "saturated at the lowest load. Horizontal error bars: 95 % CI of IOPS. A vertical line: the IOPS the "
            "target was declared to deliver (expect).", notes=tuple(notes),
            x_marks=expected_marks([c.point for curve in members for c in curve.points], "iops")))
    return figures


def comparison_figures(comparisons: Sequence[PointComparison], baseline: str, candidate: str) -> list[FigureSpec]:
    """Baseline and candidate side by side with 95 % CI error bars, for IOPS and p99 latency."""
    if not comparisons:
        return []
    lab_keys = varying_comparison_lab(comparisons)
    labels = tuple(comparison_label(c, lab_keys) for c in comparisons)
    figures = []
    lat_scale, lat_unit = latency_unit(_mean(p, "lat_p99_ns") for c in comparisons for p in (c.baseline, c.candidate))
    for field, title, unit, scale in (("iops", "IOPS", "IOPS", 1.0), ("lat_p99_ns", "p99 latency", lat_unit,
                                                                       lat_scale)):
        series = []
        for side, name in (("baseline", baseline), ("candidate", candidate)):
            ys, errs, below = [], [], []
            for c in comparisons:
                point = c.baseline if side == "baseline" else c.candidate
                ys.append(_mean(point, field, scale) or 0.0)
                errs.append(_half(point, field, scale))
                below.append(_below(point, field, scale))
            series.append(Series(name=f"{side}: {name}", x=labels, y=tuple(ys), error_y=tuple(errs),
                                 error_y_minus=tuple(below), mode="bar"))
        figures.append(FigureSpec(
            figure_id=f"compare-{field}", title=f"{title}: {baseline} vs {candidate}", x_label="point",
            y_label=unit, series=tuple(series), x_categories=labels, section="Comparison",
            caption="Mean over repetitions with 95 % confidence intervals."))
    return figures


def merged_latency_histograms(repetitions: Sequence[StoredRepetition]) -> dict[tuple[str, str], LatencyHistogram]:
    """Per (case, direction): every ok repetition's and client's total-latency bins, added."""
    parts: dict[tuple[str, str], list[LatencyHistogram]] = {}
    for rep in repetitions:
        if rep.status != Status.OK:
            continue
        for client in rep.clients:
            for m in client.directions:
                if m.lat.histogram is not None:
                    parts.setdefault((rep.case.case_id, m.direction.value), []).append(m.lat.histogram)
    return {key: LatencyHistogram.merge_all(value) for key, value in parts.items()}


def cdf_figures(points: Sequence[PointSummary],
                histograms: Mapping[tuple[str, str], LatencyHistogram]) -> list[FigureSpec]:
    """Latency CDF per point from the merged histogram, one figure per target/pattern/direction."""
    groups: dict[tuple[str, str, str], list[PointSummary]] = {}
    for p in points:
        if (p.case_id, p.direction_name) in histograms:
            groups.setdefault((p.target, p.rw, p.direction_name), []).append(p)
    figures = []
    lab_keys = varying_lab_keys(points)
    for (target, rw, direction), members in groups.items():
        series = []
        cdfs = {p.case_id: histograms[(p.case_id, p.direction_name)].cdf() for p in members}
        # the unit by where the bulk lies (p99), not by the slowest single I/O
        scale, unit = latency_unit(next((float(v) for v, f in cdf if f >= 0.99), None) for cdf in cdfs.values())
        for p in sorted(members, key=lambda m: (m.bs_bytes, m.iodepth, m.numjobs)):
            cdf = cdfs[p.case_id]
            series.append(Series(name=point_label(p, omit=("target",), lab_keys=lab_keys),
                                 x=tuple(v / scale for v, _ in cdf),
                                 y=tuple(100 * f for _, f in cdf), mode="lines"))
        figures.append(FigureSpec(
            figure_id=f"cdf-{target}-{rw}-{direction}", title=f"Latency CDF — {target} {rw} {direction}",
            x_label=f"total latency ({unit})", y_label="percent of I/Os at or below", series=tuple(series), x_log=True,
            section="Latency distribution", caption="From the json+ latency bins of every job, client and "
            "repetition of the point, added together (never averaged percentiles)."))
    return figures


def drift_trend_label(d: Drift) -> str:
    """The trend as a change over the run's own length ("-2.1 % over the run's 3.2 min [95 % CI -3.0, -1.2]"),
    not per a fixed span (a "%/10 min" on a 3-minute run reads as more than happened)."""
    change = d.over_run()
    if change is None:
        return "trend"
    return (f"trend {change[0]:+.1f} % over the run's {d.span_minutes:.1f} min "
            f"[95 % CI {change[1]:+.1f}, {change[2]:+.1f}]")


def drift_figures(drifts: Sequence[Drift]) -> list[FigureSpec]:
    figures = []
    for d in drifts:
        if not d.samples:
            continue
        series = [Series(name="repetitions", x=tuple(s.minutes for s in d.samples),
                         y=tuple(s.deviation_pct for s in d.samples), mode="markers",
                         text=tuple(f"{s.case_id} #{s.repeat + 1}" for s in d.samples))]
        if d.slope_pct_per_10min is not None:
            xs = tuple(d.span_minutes * i / 20 for i in range(21))  # a ratio per minute: a gentle curve in %
            series.append(Series(name=drift_trend_label(d), x=xs, y=tuple(d.trend_pct(x) or 0.0 for x in xs),
                                 mode="lines", dash=True))
        figures.append(FigureSpec(
            figure_id=f"drift-run{d.run_id}-{d.direction}{f'-{d.operation.lower()}' if d.operation else ''}",
            title=f"Drift — run {d.run_id} {d.rate}",
            x_label="minutes since the run started", y_label="% from its case's geometric mean", series=tuple(series),
            section="Drift", caption=f"Each repetition's {d.rate} relative to the geometric mean of its case, against "
            "the time it started; the trend is fitted to the logarithms, so it and its interval are ratios (never "
            "below -100 %), given as the change from the first to the last repetition of this run with its 95 % CI. "
            "One that excludes zero means results depend on when they ran."))
    return figures


def spread_labels(series: Sequence[Series]) -> tuple[list[Series], bool]:
    """Series whose written labels (``show_text``) would sit on each other at a shared x kept apart: with two
    such series, the second's labels go below its points; with more, every label is shown on hover only. Also
    says whether labels were moved to hover."""
    labelled = [s for s in series if s.show_text and s.text]
    xs = [x for s in labelled for x, t in zip(s.x, s.text or (), strict=True) if t]
    if len(xs) == len(set(xs)):
        return list(series), False
    if len(labelled) == 2:
        second = labelled[1]
        return [dataclasses.replace(s, text_below=True) if s is second else s for s in series], False
    return [dataclasses.replace(s, show_text=False) if s.show_text else s for s in series], True


def iops_vs_load_figures(points: Sequence[PointSummary]) -> list[FigureSpec]:
    """IOPS against iodepth, numjobs and clients, one line per everything else, each point labelled with its
    bottleneck verdict."""
    figures = []
    lab_keys = [k for k in varying_lab_keys(points) if k != "lab"]
    for axis in LOAD_AXES:
        lines: dict[str, list[PointSummary]] = {}
        for p in points:
            if p.metric("iops") is None:
                continue
            lines.setdefault(point_label(p, omit=(axis,), lab_keys=lab_keys), []).append(p)
        lines = {k: v for k, v in lines.items() if len({axis_value(p.case, axis) for p in v}) >= 2}
        if not lines:
            continue
        series = []
        for name, line in lines.items():
            line = sorted(line, key=lambda p: axis_value(p.case, axis))
            series.append(Series(
                name=name, x=tuple(float(axis_value(p.case, axis)) for p in line),
                y=tuple(_mean(p, "iops") or 0.0 for p in line), error_y=tuple(_half(p, "iops") for p in line),
                error_y_minus=tuple(_below(p, "iops") for p in line),
                text=tuple(_verdict_mark(p) for p in line), mode="lines+markers",
                show_text=any(_verdict_mark(p) for p in line)))
        tickvals, ticktext = _log2_ticks([axis_value(p.case, axis) for v in lines.values() for p in v])
        series, hover_only = spread_labels(series)
        marks = expected_marks([p for v in lines.values() for p in v], "iops")
        top = max([y + e for s in series for y, e in zip(s.y, s.error_y or [0.0] * len(s.y), strict=True)]
                  + [m.value for m in marks])  # headroom above the highest point for its verdict
        figures.append(FigureSpec(
            figure_id=f"iops-vs-{axis}", title=f"{rate_header(points)} vs {axis}, with bottleneck verdicts",
            x_label=axis, y_label=rate_header(points), series=tuple(series), x_log=True, x_tickvals=tickvals,
            x_ticktext=ticktext,
            section="Utilisation and bottlenecks", y_marks=marks, y_range=(0.0, 1.15 * top) if top > 0 else None,
            caption="Mean IOPS with 95 % CI; the label at each point "
            + ("(on hover: several lines share each x) " if hover_only else "")
            + "is its verdict (cpu-, media-, net-, "
            "client-bound; depth = under-driven; capped = capped beyond this host; - = not saturated); a "
            "horizontal line: the IOPS the target was declared to deliver (expect). Rules: docs/methodology.md."))
    return figures


def utilisation_figures(points: Sequence[PointSummary]) -> list[FigureSpec]:
    """Host CPU and the busiest device's utilisation against block size and against iodepth."""
    cases: dict[str, PointSummary] = {}
    for p in points:  # one per case: the directions of a case share their telemetry
        cases.setdefault(p.case_id, p)
    measured = [p for p in cases.values() if p.metric("host_cpu_busy_pct") is not None]
    metrics = (("host_cpu_busy_pct", "host CPU", False), ("disk_busiest_util_pct", "busiest device", True),
               ("node_cpu_busy_pct", "storage node CPU", False), ("node_disk_util_pct", "storage node disk", True))
    figures = []
    lab_keys = [k for k in varying_lab_keys(measured) if k != "lab"]
    for axis in ("bs", "iodepth"):
        lines: dict[str, list[PointSummary]] = {}
        for p in measured:
            lines.setdefault(point_label(p, omit=(axis,), lab_keys=lab_keys, direction=False), []).append(p)
        lines = {k: v for k, v in lines.items() if len({p.bs_bytes if axis == "bs" else p.iodepth for p in v}) >= 2}
        if not lines:
            continue
        series = []
        categories: tuple[str, ...] = ()
        if axis == "bs":
            categories = tuple(format_block_size(b) for b in sorted({p.bs_bytes for v in lines.values() for p in v}))
        for name, line in lines.items():
            line = sorted(line, key=lambda p: p.bs_bytes if axis == "bs" else p.iodepth)
            for field, label, dashed in metrics:
                present = [p for p in line if p.metric(field) is not None]
                if not present:
                    continue
                series.append(Series(
                    name=f"{name}: {label} %",
                    x=tuple(block_size(p) if axis == "bs" else float(p.iodepth) for p in present),
                    y=tuple(_mean(p, field) or 0.0 for p in present), error_y=tuple(_half(p, field) for p in present),
                    error_y_minus=tuple(_below(p, field) for p in present),
                    dash=dashed))
        tickvals, ticktext = ((), ()) if axis == "bs" else _log2_ticks([p.iodepth for v in lines.values() for p in v])
        axis_label = "block size" if axis == "bs" else "iodepth"
        figures.append(FigureSpec(
            figure_id=f"utilisation-vs-{axis}", title=f"CPU and media utilisation vs {axis_label}",
            x_label=axis_label, y_label="% busy", series=tuple(series),
            x_categories=categories, x_log=axis != "bs", x_tickvals=tickvals, x_ticktext=ticktext,
            section="Utilisation and bottlenecks", y_range=(0.0, 105.0),
            caption="Solid: CPU busy (all CPUs of the host, or the busiest storage node); dashed: the busiest "
            "block device's utilisation. Means over the measured window of each repetition, 95 % CI."))
    return figures


def process_cpu_figures(points: Sequence[PointSummary], limit: int = 6) -> list[FigureSpec]:
    """Per-process CPU (cores) at every point: which daemon eats the CPU."""
    cases: dict[str, PointSummary] = {}
    for p in points:
        cases.setdefault(p.case_id, p)
    members = [p for p in cases.values() if p.process_cpu_cores]
    if not members:
        return []
    totals: dict[str, float] = {}
    for p in members:
        for name, cores in p.process_cpu_cores:
            totals[name] = totals.get(name, 0.0) + cores
    names = [n for n, total in sorted(totals.items(), key=lambda item: -item[1]) if total / len(members) >= 0.01]
    names = names[:limit]
    if not names:
        return []
    lab_keys = [k for k in varying_lab_keys(members) if k != "lab"]
    # every point its own bar group (clients included)
    labels = [point_label(p, lab_keys=lab_keys, direction=False, options=True) for p in members]
    categories = tuple(dict.fromkeys(labels))
    series = tuple(Series(name=name, x=tuple(labels),
                          y=tuple(dict(p.process_cpu_cores).get(name, 0.0) for p in members), mode="bar")
                   for name in names)
    return [FigureSpec(
        figure_id="process-cpu", title="CPU of each process (cores)", x_label="point", y_label="cores",
        series=series, x_categories=categories, section="Utilisation and bottlenecks",
        caption="Mean CPU of all processes of each name over the measured window (1.0 = one core busy); the "
        "processes sampled are `telemetry.processes`.")]


def latency_layer_figures(points: Sequence[PointSummary]) -> list[FigureSpec]:
    """Where the time goes (`stats.layers`): per point, the client's mean latency split into the storage's own
    latency for the same I/O (the OSDs' split into queue and processing) and the rest, outside the storage."""
    members = [p for p in points if p.metric("storage_lat_ns") is not None and p.metric("lat_mean_ns") is not None]
    if not members:
        return []
    scale, unit = latency_unit([_mean(p, "lat_mean_ns") for p in members])
    lab_keys = [k for k in varying_lab_keys(members) if k != "lab"]
    labels = [point_label(p, lab_keys=lab_keys, options=True) for p in members]

    def part(p: PointSummary) -> tuple[float, float, float]:
        """(in the storage's processing, its queue, outside it) in ``unit``; the queue only for the OSDs."""
        client, storage = _mean(p, "lat_mean_ns") or 0.0, _mean(p, "storage_lat_ns") or 0.0
        process = _mean(p, "osd_process_lat_ns") if p.storage_layer == "OSDs" else None
        inside = storage if process is None else min(process, storage)
        return inside / scale, (storage - inside) / scale, max(client - storage, 0.0) / scale

    parts = [part(p) for p in members]
    layers = sorted({p.storage_layer for p in members})
    shares = [f"{100 * outside / max(sum(three), 1e-12):.0f} % outside" for three in parts
              for outside in (three[2],)]
    series = (
        Series(name=f"in the storage ({', '.join(layers)}): processing", x=tuple(labels),
               y=tuple(p[0] for p in parts), mode="bar", color="#1f77b4"),
        Series(name="in the storage: the OSDs' queue", x=tuple(labels), y=tuple(p[1] for p in parts), mode="bar",
               color="#aec7e8"),
        Series(name="outside the storage: client stack, network", x=tuple(labels), y=tuple(p[2] for p in parts),
               mode="bar", color="#ff7f0e", text=tuple(shares), show_text=True),
    )
    return [FigureSpec(
        figure_id="latency-layers", title="Where the time goes: the client's mean latency by layer",
        x_label="point", y_label=f"mean latency ({unit})", series=series, x_categories=tuple(dict.fromkeys(labels)),
        section="Utilisation and bottlenecks", stacked=True,
        caption="Each bar is the client's mean latency (fio). Blue: the storage's own latency for the same I/O at the "
        "outermost layer that served it (radosgw, an MDS or the OSDs, from their counters over the measured "
        "window; the OSDs' time in their queue lighter); orange: the rest, spent outside the storage in the client "
        "stack of the host (a kernel or FUSE client, the client library) and the network. Means over repetitions.")]


def capped_curves(points: Sequence[PointSummary]) -> list[tuple[Axis, list[PointSummary], str]]:
    """(axis, the curve's points by load, evidence) for every sweep curve judged "capped beyond this host": along
    iodepth, numjobs or clients, or along block size ("bs_bytes"). A curve is one the verdict was read from (the
    sweep verdicts' curve key, `stats.curve`: runs kept apart) when at least two of its points carry the same capped
    verdict (``judge_curve`` gives every point of the stretch one evidence; two points that differ only in one axis
    share no other curve)."""
    found = []
    for axis in (*LOAD_AXES, BLOCK_SIZE):
        groups: dict[CurveKey, list[PointSummary]] = {}
        for p in points:
            groups.setdefault(p.curve_key(axis, pool_runs=False), []).append(p)
        for members in groups.values():
            if len({axis_value(p.case, axis) for p in members}) < 2:
                continue
            capped = [p.bottleneck.evidence for p in members if p.bottleneck.kind == Bottleneck.CAPPED]
            shared = [evidence for evidence in dict.fromkeys(capped) if capped.count(evidence) >= 2]
            if shared:
                found.append((axis, sorted(members, key=lambda p: axis_value(p.case, axis)), shared[0]))
    return found


def capped_figures(points: Sequence[PointSummary]) -> list[FigureSpec]:
    """For every curve judged capped beyond this host: throughput (IOPS, or MiB/s along block size) and mean
    latency against the load on two y axes, the target's declared limit as a line, the verdict's evidence beside
    it: flat throughput while latency rises with the load."""
    figures = []
    lab_keys = varying_lab_keys(points)
    for index, (axis, line, evidence) in enumerate(capped_curves(points)):
        by_bs = axis == "bs_bytes"
        field, what = ("bw_bytes", "MiB/s") if by_bs else ("iops", "IOPS")
        scale = MIB if by_bs else 1.0
        latencies = [_mean(p, "lat_mean_ns") for p in line]
        lat_scale, lat_unit = latency_unit(latencies)
        xs: tuple[float | str, ...] = (tuple(block_size(p) for p in line) if by_bs
                                       else tuple(float(axis_value(p.case, axis)) for p in line))
        covered = tuple("capped" if p.bottleneck.evidence == evidence else "" for p in line)
        throughput = Series(
            name=f"{what} (left)", x=xs, y=tuple(_mean(p, field, scale) or 0.0 for p in line),
            error_y=tuple(_half(p, field, scale) for p in line),
            error_y_minus=tuple(_below(p, field, scale) for p in line), text=covered, show_text=True,
            color=THROUGHPUT_COLOR)
        latency = Series(
            name=f"mean latency, {lat_unit} (right)", x=xs,
            y=tuple(_mean(p, "lat_mean_ns", lat_scale) or 0.0 for p in line),
            error_y=tuple(_half(p, "lat_mean_ns", lat_scale) for p in line),
            error_y_minus=tuple(_below(p, "lat_mean_ns", lat_scale) for p in line), color=LATENCY_COLOR, y2=True)
        axis_name = "block size" if by_bs else axis
        marks = expected_marks(line, field)
        top = max([y + e for y, e in zip(throughput.y, throughput.error_y or (), strict=True)]
                  + [m.value for m in marks])  # headroom above the flat line for its labels
        tickvals, ticktext = ((), ()) if by_bs else _log2_ticks([axis_value(p.case, axis) for p in line])
        label = point_label(line[0], omit=("bs",) if by_bs else (axis,), lab_keys=lab_keys)
        figures.append(FigureSpec(
            figure_id=f"capped-{index + 1}-{axis_name.replace(' ', '-')}",
            title=f"Capped beyond this host: {label}\n{what} flat while mean latency rises with {axis_name}",
            x_label=axis_name, y_label=what, y2_label=f"mean latency ({lat_unit})", series=(throughput, latency),
            x_categories=tuple(block_size(p) for p in line) if by_bs else (), x_log=not by_bs, x_tickvals=tickvals,
            x_ticktext=ticktext, y_marks=marks, y_range=(0.0, 1.2 * top) if top > 0 else None,
            section=BOTTLENECK_SECTION,
            notes=((Bottleneck.CAPPED.value, evidence),),
            caption=f"Left axis: mean {what} over repetitions with its 95 % CI (\"capped\": the points the verdict "
            f"covers); right axis: mean total latency with its 95 % CI. {what} that stays flat while latency grows "
            "with the load is Little's law at a fixed service rate: a limit outside this host (a provisioned limit, "
            "a throttle, the remote storage). A horizontal line: what the target was declared to deliver (expect). "
            "Rules: docs/methodology.md, \"Bottleneck verdicts\"."))
    return figures
