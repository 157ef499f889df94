"""Figures of what the host and the storage did: CPU and device utilisation against block size and iodepth, each
process's CPU, and where the time goes (the client's mean latency by layer). Pure."""

from __future__ import annotations

from collections.abc import Sequence

from storbench.report.figure_values import below_mean, half_width, scaled_mean
from storbench.report.figures import FigureSpec, Series, latency_unit, log2_ticks
from storbench.report.labels import block_size, interval_level, point_label, runs_apart, varying_lab_keys
from storbench.stats.point_summary import PointSummary
from storbench.units import format_block_size


def _one_per_case(points: Sequence[PointSummary]) -> list[PointSummary]:
    """A point per case and run: the directions of a case share their telemetry."""
    cases: dict[tuple[tuple[int, ...], str], PointSummary] = {}
    for p in points:
        cases.setdefault((p.run_ids, p.case_id), p)
    return list(cases.values())


def utilisation_figures(points: Sequence[PointSummary]) -> list[FigureSpec]:
    """Host CPU and the busiest device's utilisation against block size and against iodepth."""
    measured = [p for p in _one_per_case(points) if p.metric("host_cpu_busy_pct") is not None]
    metrics = (("host_cpu_busy_pct", "host CPU", False), ("disk_busiest_util_pct", "busiest device", True),
               ("node_cpu_busy_pct", "busiest node CPU", False), ("node_disk_util_pct", "busiest node disk", True))
    figures = []
    lab_keys, runs = [k for k in varying_lab_keys(measured) if k != "lab"], runs_apart(measured)
    for axis in ("bs", "iodepth"):
        lines: dict[str, list[PointSummary]] = {}
        for p in measured:
            lines.setdefault(point_label(p, omit=(axis,), lab_keys=lab_keys, direction=False, runs=runs), []).append(p)
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
                    y=tuple(scaled_mean(p, field) or 0.0 for p in present),
                    error_y=tuple(half_width(p, field) for p in present),
                    error_y_minus=tuple(below_mean(p, field) for p in present),
                    dash=dashed))
        tickvals, ticktext = ((), ()) if axis == "bs" else log2_ticks([p.iodepth for v in lines.values() for p in v])
        axis_label = "block size" if axis == "bs" else "iodepth"
        figures.append(FigureSpec(
            figure_id=f"utilisation-vs-{axis}", title=f"CPU and media utilisation vs {axis_label}",
            x_label=axis_label, y_label="% busy", series=tuple(series),
            x_categories=categories, x_log=axis != "bs", x_tickvals=tickvals, x_ticktext=ticktext,
            section="Utilisation and bottlenecks", y_range=(0.0, 105.0),
            caption="Solid: CPU busy (all CPUs of the host, or the busiest node); dashed: the busiest "
            f"block device's utilisation. Means over the measured window of each repetition, "
            f"{interval_level(p for v in lines.values() for p in v)} CI."))
    return figures


def process_cpu_figures(points: Sequence[PointSummary], limit: int = 6) -> list[FigureSpec]:
    """Per-process CPU (cores) at every point: which daemon eats the CPU."""
    members = [p for p in _one_per_case(points) if p.process_cpu_cores]
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
    lab_keys, runs = [k for k in varying_lab_keys(members) if k != "lab"], runs_apart(members)
    # every point its own bar group (clients included)
    labels = [point_label(p, lab_keys=lab_keys, direction=False, options=True, runs=runs) for p in members]
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
    scale, unit = latency_unit([scaled_mean(p, "lat_mean_ns") for p in members])
    lab_keys, runs = [k for k in varying_lab_keys(members) if k != "lab"], runs_apart(members)
    labels = [point_label(p, lab_keys=lab_keys, options=True, runs=runs) for p in members]

    def part(p: PointSummary) -> tuple[float, float, float]:
        """(in the storage's processing, its queue, outside it) in ``unit``; the queue only for the OSDs."""
        client, storage = scaled_mean(p, "lat_mean_ns") or 0.0, scaled_mean(p, "storage_lat_ns") or 0.0
        process = scaled_mean(p, "osd_process_lat_ns") if p.storage_layer == "OSDs" else None
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
