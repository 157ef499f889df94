"""Figures of saturation: the IOPS-latency curves with their knees, IOPS against the load with each point's
verdict, and every curve judged capped beyond this host (throughput and latency against the load). Pure."""

from __future__ import annotations

from collections.abc import Sequence

from storbench.report.figure_values import below_mean, expected_marks, half_width, scaled_mean, verdict_mark
from storbench.report.figures import (
    BOTTLENECK_SECTION,
    LATENCY_COLOR,
    MIB,
    THROUGHPUT_COLOR,
    FigureSpec,
    Series,
    latency_unit,
    log2_ticks,
    spread_labels,
)
from storbench.report.labels import (
    block_size,
    curve_lab_keys,
    curve_label,
    curves_runs_apart,
    interval_level,
    point_label,
    rate_unit,
    runs_apart,
    varying_lab_keys,
)
from storbench.report.saturation_tables import knee_text
from storbench.stats.bottleneck import Bottleneck
from storbench.stats.curve import BLOCK_SIZE, LOAD_AXES, Axis, CurveKey, axis_value
from storbench.stats.knee import Curve
from storbench.stats.point_summary import PointSummary


def curve_figures(curve_list: Sequence[Curve]) -> list[FigureSpec]:
    """IOPS-latency curves (p99 against IOPS, one point per load level), the knee marked; a curve already
    saturated at its lowest load says so beside the figure."""
    by_axis: dict[str, list[Curve]] = {}
    for curve in curve_list:
        by_axis.setdefault(curve.axis, []).append(curve)
    figures = []
    lab_keys, runs = curve_lab_keys(curve_list), curves_runs_apart(curve_list)
    for axis, members in by_axis.items():
        series = []
        knees_x, knees_y, knees_text = [], [], []
        notes = []
        scale, unit = latency_unit(c.lat_p99_ns for curve in members for c in curve.points)
        for curve in members:
            label = curve_label(curve, lab_keys, runs=runs)
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
        curve_points = [c.point for curve in members for c in curve.points]
        if knees_x:
            series.append(Series(name="knee", x=tuple(knees_x), y=tuple(knees_y), text=tuple(knees_text),
                                 mode="markers", marker_size=16))
        figures.append(FigureSpec(
            figure_id=f"iops-latency-{axis}", title=f"IOPS vs p99 latency as {axis} grows", x_label="IOPS",
            y_label=f"p99 latency ({unit})", series=tuple(series), y_log=True, section="Saturation", x_from_zero=True,
            caption=f"Each point is one {axis} setting; the knee (large marker) is the lowest {axis} beyond which "
            "more load adds no IOPS beyond noise while latency grows; at the first point, the curve was already "
            f"saturated at the lowest load. Horizontal error bars: {interval_level(curve_points)} CI of IOPS. A "
            "vertical line: the IOPS the "
            "target was declared to deliver (expect).", notes=tuple(notes),
            x_marks=expected_marks(curve_points, "iops")))
    return figures


def iops_vs_load_figures(points: Sequence[PointSummary]) -> list[FigureSpec]:
    """IOPS against iodepth, numjobs and clients, one line per everything else, each point labelled with its
    bottleneck verdict."""
    figures = []
    lab_keys, runs = [k for k in varying_lab_keys(points) if k != "lab"], runs_apart(points)
    for axis in LOAD_AXES:
        lines: dict[str, list[PointSummary]] = {}
        for p in points:
            if p.metric("iops") is None:
                continue
            lines.setdefault(point_label(p, omit=(axis,), lab_keys=lab_keys, runs=runs), []).append(p)
        lines = {k: v for k, v in lines.items() if len({axis_value(p.case, axis) for p in v}) >= 2}
        if not lines:
            continue
        series = []
        for name, line in lines.items():
            line = sorted(line, key=lambda p: axis_value(p.case, axis))
            series.append(Series(
                name=name, x=tuple(float(axis_value(p.case, axis)) for p in line),
                y=tuple(scaled_mean(p, "iops") or 0.0 for p in line),
                error_y=tuple(half_width(p, "iops") for p in line),
                error_y_minus=tuple(below_mean(p, "iops") for p in line),
                text=tuple(verdict_mark(p) for p in line), mode="lines+markers",
                show_text=any(verdict_mark(p) for p in line)))
        tickvals, ticktext = log2_ticks([axis_value(p.case, axis) for v in lines.values() for p in v])
        series, hover_only = spread_labels(series)
        marks = expected_marks([p for v in lines.values() for p in v], "iops")
        top = max([y + e for s in series for y, e in zip(s.y, s.error_y or [0.0] * len(s.y), strict=True)]
                  + [m.value for m in marks])  # headroom above the highest point for its verdict
        rate = rate_unit(p.rw for p in points)
        figures.append(FigureSpec(
            figure_id=f"iops-vs-{axis}", title=f"{rate} vs {axis}, with bottleneck verdicts",
            x_label=axis, y_label=rate, series=tuple(series), x_log=True, x_tickvals=tickvals,
            x_ticktext=ticktext,
            section="Utilisation and bottlenecks", y_marks=marks, y_range=(0.0, 1.15 * top) if top > 0 else None,
            caption=f"Mean IOPS with {interval_level(points)} CI; the label at each point "
            + ("(on hover: several lines share each x) " if hover_only else "")
            + "is its verdict (cpu-, media-, net-, "
            "client-bound; depth = under-driven; capped = capped beyond this host; - = not saturated); a "
            "horizontal line: the IOPS the target was declared to deliver (expect). Rules: "
            "storbench docs methodology bottleneck-verdicts."))
    return figures


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
    lab_keys, runs = varying_lab_keys(points), runs_apart(points)
    for index, (axis, line, evidence) in enumerate(capped_curves(points)):
        by_bs = axis == "bs_bytes"
        field, what = ("bw_bytes_per_s", "MiB/s") if by_bs else ("iops", "IOPS")
        scale = MIB if by_bs else 1.0
        latencies = [scaled_mean(p, "lat_mean_ns") for p in line]
        lat_scale, lat_unit = latency_unit(latencies)
        xs: tuple[float | str, ...] = (tuple(block_size(p) for p in line) if by_bs
                                       else tuple(float(axis_value(p.case, axis)) for p in line))
        covered = tuple("capped" if p.bottleneck.evidence == evidence else "" for p in line)
        throughput = Series(
            name=f"{what} (left)", x=xs, y=tuple(scaled_mean(p, field, scale) or 0.0 for p in line),
            error_y=tuple(half_width(p, field, scale) for p in line),
            error_y_minus=tuple(below_mean(p, field, scale) for p in line), text=covered, show_text=True,
            color=THROUGHPUT_COLOR)
        latency = Series(
            name=f"mean latency, {lat_unit} (right)", x=xs,
            y=tuple(scaled_mean(p, "lat_mean_ns", lat_scale) or 0.0 for p in line),
            error_y=tuple(half_width(p, "lat_mean_ns", lat_scale) for p in line),
            error_y_minus=tuple(below_mean(p, "lat_mean_ns", lat_scale) for p in line), color=LATENCY_COLOR, y2=True)
        axis_name = "block size" if by_bs else axis
        marks = expected_marks(line, field)
        top = max([y + e for y, e in zip(throughput.y, throughput.error_y or (), strict=True)]
                  + [m.value for m in marks])  # headroom above the flat line for its labels
        tickvals, ticktext = ((), ()) if by_bs else log2_ticks([axis_value(p.case, axis) for p in line])
        label = point_label(line[0], omit=("bs",) if by_bs else (axis,), lab_keys=lab_keys, runs=runs)
        figures.append(FigureSpec(
            figure_id=f"capped-{index + 1}-{axis_name.replace(' ', '-')}",
            title=f"Capped beyond this host: {label}\n{what} flat while mean latency rises with {axis_name}",
            x_label=axis_name, y_label=what, y2_label=f"mean latency ({lat_unit})", series=(throughput, latency),
            x_categories=tuple(block_size(p) for p in line) if by_bs else (), x_log=not by_bs, x_tickvals=tickvals,
            x_ticktext=ticktext, y_marks=marks, y_range=(0.0, 1.2 * top) if top > 0 else None,
            section=BOTTLENECK_SECTION,
            notes=((Bottleneck.CAPPED.value, evidence),),
            caption=f"Left axis: mean {what} over repetitions with its {interval_level(line)} CI (\"capped\": the "
            f"points the verdict covers); right axis: mean total latency with its {interval_level(line)} CI. {what} "
            "that stays flat while latency grows "
            "with the load is Little's law at a fixed service rate: a limit outside this host (a provisioned limit, "
            "a throttle, the remote storage). A horizontal line: what the target was declared to deliver (expect). "
            "Rules: storbench docs methodology bottleneck-verdicts."))
    return figures
