"""Figures of the measured points: IOPS and bandwidth against block size, latency against iodepth, latency CDFs from
the merged histograms, and baseline against candidate. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from storbench.model import LatencyHistogram, Status, StoredRepetition
from storbench.report.figure_values import below_mean, expected_marks, half_width, scaled_mean, verdict_mark
from storbench.report.figures import FigureSpec, Series, latency_unit, log2_ticks
from storbench.report.labels import (
    block_size,
    comparison_label,
    interval_level,
    point_label,
    rate_unit,
    runs_apart,
    varying_comparison_lab,
    varying_lab_keys,
)
from storbench.stats.compare_cells import PointComparison
from storbench.stats.point_summary import PointSummary
from storbench.units import format_block_size

SMALL_MAX_BYTES = 16 * 1024
MEDIUM_MAX_BYTES = 256 * 1024
SIZE_GROUPS = (("small", "<= 16k"), ("medium", "32k-256k"), ("large", ">= 512k"))


def size_group(bs_bytes: int) -> str:
    if bs_bytes <= SMALL_MAX_BYTES:
        return "small"
    if bs_bytes <= MEDIUM_MAX_BYTES:
        return "medium"
    return "large"


def _size_groups(points: Sequence[PointSummary]) -> list[tuple[str, str, list[PointSummary]]]:
    """(group, its label, its points) for the block-size figures, each with at least two block sizes: a figure
    "vs block size" over a single size is no curve. Groups of a single size each are drawn together when there are
    several (4k and 1m: one figure of both); a lone size beside drawn groups joins the nearest of them."""
    groups = [(group, label, [p for p in points if size_group(p.bs_bytes) == group]) for group, label in SIZE_GROUPS]
    groups = [g for g in groups if g[2]]
    drawn = [g for g in groups if len({p.bs_bytes for p in g[2]}) >= 2]
    singles = [g for g in groups if len({p.bs_bytes for p in g[2]}) == 1]
    if len(singles) >= 2:
        members = [p for g in singles for p in g[2]]
        label = ", ".join(format_block_size(b) for b in sorted({p.bs_bytes for p in members}))
        drawn.append(("-".join(g[0] for g in singles), label, members))
    elif singles and drawn:  # a lone size joins the group beside it (4k, 16k and 64k: it had been in no figure)
        order = [group for group, _ in SIZE_GROUPS]
        (lone, _, members), = singles
        near = min(range(len(drawn)), key=lambda i: abs(order.index(drawn[i][0]) - order.index(lone)))
        group, _, joined = drawn[near]
        joined = sorted([*joined, *members], key=lambda p: p.bs_bytes)
        sizes = sorted({p.bs_bytes for p in joined})
        drawn[near] = (f"{group}-{lone}" if order.index(group) < order.index(lone) else f"{lone}-{group}",
                       f"{format_block_size(sizes[0])}-{format_block_size(sizes[-1])}", joined)
    return drawn


def block_size_figures(points: Sequence[PointSummary]) -> list[FigureSpec]:
    """IOPS and MiB/s against block size, as grouped bars with 95 % CI error bars, per size group."""
    figures = []
    lab_keys = varying_lab_keys(points)  # points that differ only in a lab setting are separate series
    runs = runs_apart(points)  # and points of different runs
    for group, group_label, members in _size_groups([p for p in points if p.metric("iops") is not None]):
        sizes = sorted({p.bs_bytes for p in members})
        categories = tuple(format_block_size(b) for b in sizes)
        for field, label, scale, unit in (("iops", "IOPS", 1.0, "IOPS"),
                                          ("bw_bytes_per_s", "bandwidth", 1048576.0, "MiB/s")):
            series_points: dict[str, dict[str, PointSummary]] = {}
            for p in members:
                series_points.setdefault(point_label(p, omit=("bs",), lab_keys=lab_keys, runs=runs), {})[
                    block_size(p)] = p
            series = []
            for name, by_bs in series_points.items():
                present = [c for c in categories if c in by_bs]
                verdicts = tuple(verdict_mark(by_bs[c]) for c in present)
                series.append(Series(
                    name=name, x=tuple(present), y=tuple(scaled_mean(by_bs[c], field, scale) or 0.0 for c in present),
                    error_y=tuple(half_width(by_bs[c], field, scale) for c in present),
                    error_y_minus=tuple(below_mean(by_bs[c], field, scale) for c in present), mode="bar",
                    text=verdicts, show_text=field == "iops" and any(verdicts)))
            figures.append(FigureSpec(
                figure_id=f"{field}-vs-bs-{group}",
                title=f"{label} vs block size — {group.replace('-', ' and ')} blocks ({group_label})",
                x_label="block size", y_label=unit, series=tuple(series), x_categories=categories,
                y_marks=expected_marks(members, field), section="Block size",
                caption=f"Bars: mean over repetitions; error bars: {interval_level(members)} confidence interval. "
                "Above each IOPS bar: its "
                "bottleneck verdict (cpu, media, net, client, depth = under-driven, capped = capped beyond this "
                "host). A horizontal line: what the target was declared to deliver (expect)."))
    return figures


def latency_vs_iodepth_figures(points: Sequence[PointSummary]) -> list[FigureSpec]:
    """Mean, p95 and p99 latency against iodepth, one figure per target/pattern/direction."""
    groups: dict[tuple[str, str, str], list[PointSummary]] = {}
    for p in points:
        if p.metric("lat_mean_ns") is not None:
            groups.setdefault((p.target, p.rw, p.direction_name), []).append(p)
    figures = []
    lab_keys, runs = varying_lab_keys(points), runs_apart(points)
    for (target, rw, direction), members in groups.items():
        lines: dict[str, list[PointSummary]] = {}
        for p in members:
            lines.setdefault(point_label(p, omit=("iodepth", "target"), lab_keys=lab_keys, runs=runs), []).append(p)
        lines = {k: v for k, v in lines.items() if len({p.iodepth for p in v}) >= 2}
        if not lines:
            continue
        series = []
        fields = (("lat_mean_ns", "mean"), ("lat_p95_ns", "p95"), ("lat_p99_ns", "p99"))
        scale, unit = latency_unit(scaled_mean(p, field)
                                   for line in lines.values() for p in line for field, _ in fields)
        for name, line in lines.items():
            line = sorted(line, key=lambda p: p.iodepth)
            for field, stat in fields:
                series.append(Series(
                    name=f"{name} {stat}", x=tuple(float(p.iodepth) for p in line),
                    y=tuple(scaled_mean(p, field, scale) or 0.0 for p in line),
                    error_y=tuple(half_width(p, field, scale) for p in line),
                    error_y_minus=tuple(below_mean(p, field, scale) for p in line), dash=stat != "mean"))
        tickvals, ticktext = log2_ticks([p.iodepth for p in members])
        figures.append(FigureSpec(
            figure_id=f"latency-vs-iodepth-{target}-{rw}-{direction}",
            title=f"Latency vs iodepth — {target} {rw} {direction}", x_label="iodepth", y_label=f"latency ({unit})",
            series=tuple(series), x_log=True, y_log=True, x_tickvals=tickvals, x_ticktext=ticktext,
            section="Latency", caption="Total latency (submission to completion); percentiles from merged "
            f"latency histograms; error bars: {interval_level(members)} CI over repetitions."))
    return figures


def comparison_figures(comparisons: Sequence[PointComparison], baseline: str, candidate: str) -> list[FigureSpec]:
    """Baseline and candidate side by side with 95 % CI error bars, for IOPS and p99 latency."""
    if not comparisons:
        return []
    lab_keys = varying_comparison_lab(comparisons)
    labels = tuple(comparison_label(c, lab_keys) for c in comparisons)
    sides = [p for c in comparisons for p in (c.baseline, c.candidate)]
    figures = []
    lat_scale, lat_unit = latency_unit(scaled_mean(p, "lat_p99_ns")
                                       for c in comparisons for p in (c.baseline, c.candidate))
    rate = rate_unit(p.rw for p in sides)
    for field, title, unit, scale in (("iops", rate, rate, 1.0), ("lat_p99_ns", "p99 latency", lat_unit, lat_scale)):
        # a pair with a side that has no value (an import without percentiles) is left out, not drawn as a 0 bar
        kept = [(c, label) for c, label in zip(comparisons, labels, strict=True)
                if scaled_mean(c.baseline, field, scale) is not None
                and scaled_mean(c.candidate, field, scale) is not None]
        if not kept:
            continue
        shown = tuple(label for _, label in kept)
        series = []
        for side, name in (("baseline", baseline), ("candidate", candidate)):
            ys, errs, below = [], [], []
            for c, _ in kept:
                point = c.baseline if side == "baseline" else c.candidate
                ys.append(scaled_mean(point, field, scale) or 0.0)
                errs.append(half_width(point, field, scale))
                below.append(below_mean(point, field, scale))
            series.append(Series(name=f"{side}: {name}", x=shown, y=tuple(ys), error_y=tuple(errs),
                                 error_y_minus=tuple(below), mode="bar"))
        figures.append(FigureSpec(
            figure_id=f"compare-{field}", title=f"{title}: {baseline} vs {candidate}", x_label="point",
            y_label=unit, series=tuple(series), x_categories=shown, section="Comparison",
            caption=f"Mean over repetitions with {interval_level(sides)} confidence intervals."))
    return figures


def merged_latency_histograms(repetitions: Sequence[StoredRepetition]
                              ) -> dict[tuple[int, str, str], LatencyHistogram]:
    """Per (run, case, direction): every ok repetition's and client's total-latency bins, added."""
    parts: dict[tuple[int, str, str], list[LatencyHistogram]] = {}
    for rep in repetitions:
        if rep.status != Status.OK:
            continue
        for client in rep.clients:
            for m in client.directions:
                if m.lat.histogram is not None:
                    parts.setdefault((rep.run_id, rep.case.case_id, m.direction.value), []).append(m.lat.histogram)
    return {key: LatencyHistogram.merge_all(value) for key, value in parts.items()}


def _point_histogram(p: PointSummary, histograms: Mapping[tuple[int, str, str], LatencyHistogram]
                     ) -> LatencyHistogram | None:
    """The bins of ``p``'s runs (one run's, or the runs a pooled point holds), added; None when none has bins."""
    found = [h for run in p.run_ids if (h := histograms.get((run, p.case_id, p.direction_name))) is not None]
    return LatencyHistogram.merge_all(found) if found else None


def cdf_figures(points: Sequence[PointSummary],
                histograms: Mapping[tuple[int, str, str], LatencyHistogram]) -> list[FigureSpec]:
    """Latency CDF per point from the merged histogram of its runs, one figure per target/pattern/direction."""
    groups: dict[tuple[str, str, str], list[tuple[PointSummary, LatencyHistogram]]] = {}
    for p in points:
        if (histogram := _point_histogram(p, histograms)) is not None:
            groups.setdefault((p.target, p.rw, p.direction_name), []).append((p, histogram))
    figures = []
    lab_keys, runs = varying_lab_keys(points), runs_apart(points)
    for (target, rw, direction), members in groups.items():
        series = []
        cdfs = [(p, histogram.cdf()) for p, histogram in members]
        # the unit by where the bulk lies (p99), not by the slowest single I/O
        scale, unit = latency_unit(next((float(v) for v, f in cdf if f >= 0.99), None) for _, cdf in cdfs)
        for p, cdf in sorted(cdfs, key=lambda m: (m[0].bs_bytes, m[0].iodepth, m[0].numjobs)):
            series.append(Series(name=point_label(p, omit=("target",), lab_keys=lab_keys, runs=runs),
                                 x=tuple(v / scale for v, _ in cdf),
                                 y=tuple(100 * f for _, f in cdf), mode="lines"))
        figures.append(FigureSpec(
            figure_id=f"cdf-{target}-{rw}-{direction}", title=f"Latency CDF — {target} {rw} {direction}",
            x_label=f"total latency ({unit})", y_label="percent of I/Os at or below", series=tuple(series), x_log=True,
            section="Latency distribution", caption="From the json+ latency bins of every job, client and "
            "repetition of the point, added together (never averaged percentiles)."))
    return figures
