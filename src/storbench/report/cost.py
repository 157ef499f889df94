"""What each I/O costs in CPU, in tables and figures (pure): `show --cost`'s table (a row per case: CPU per I/O by
component with its interval, in all, IOPS per core) and the report's cost figures; what a setting did to it is
`report.cost_compare`'s. A mixed read/write case is one row: its CPU is its I/O's in both directions."""

from __future__ import annotations

import html
from collections.abc import Sequence

from rich.table import Table

from storbench.report.figure_values import below_mean
from storbench.report.figures import FigureSpec, Series
from storbench.report.labels import (
    interval_level,
    point_label,
    run_prefix,
    runs_apart,
    varying_lab_keys,
)
from storbench.report.tables import iops_with_ci, plain_cell
from storbench.safe_text import safe_text
from storbench.stats.cost import COMPONENTS, KERNEL, TOTAL_KEY, polls
from storbench.stats.estimate import Estimate
from storbench.stats.metrics import CYCLES_PER_IO
from storbench.stats.point_summary import PointSummary

PER_IO = tuple((f"{c.key}_cpu_us_per_io", c.label) for c in (*COMPONENTS, KERNEL))
CYCLES = tuple((m.field, m.field.removesuffix("_cycles_per_io")) for m in CYCLES_PER_IO)


def cycle_columns(rows: Sequence[PointSummary]) -> list[tuple[str, str]]:
    """(field, header) of the cycles per I/O some row has (`telemetry.cycles` where perf counted them)."""
    return [(field, f"{name} cycles/I/O") for field, name in CYCLES if any(p.metric(field) is not None for p in rows)]


def us_with_ci(estimate: Estimate | None) -> str:
    """Microseconds of CPU with the half-width of their interval: ``85.2 ± 3.1``."""
    if estimate is None:
        return "-"
    half = estimate.half_width
    return cost_number(estimate.mean) + ("" if half is None else f" ± {half:,.{_digits(estimate.mean)}f}")


def cost_number(value: float) -> str:
    """A cost figure (µs per I/O, IOPS per core): a decimal below 100 (a monitor's ``2.5``), whole above
    (``1,760``); `compare`'s cost table shows its means so too."""
    return f"{value:,.{_digits(value)}f}"


def _digits(value: float) -> int:
    return 1 if abs(value) < 100 else 0


def cost_points(points: Sequence[PointSummary]) -> list[PointSummary]:
    """One point per case that has a cost (its first direction: every direction carries the same)."""
    seen: set[tuple[tuple[int, ...], str]] = set()
    out = []
    for p in points:
        key = (p.run_ids, p.case_id)
        if key not in seen and p.metric(f"{TOTAL_KEY}_cpu_us_per_io") is not None:
            seen.add(key)
            out.append(p)
    return out


def cost_table(points: Sequence[PointSummary], title: str) -> Table:
    """A row per case: IOPS (every direction), CPU per I/O in µs for each component some case has, in all, and
    IOPS per core used (and per ceph-osd core where OSDs ran)."""
    rows = cost_points(points)
    lab_keys = varying_lab_keys(rows)
    shown = [(field, label) for field, label in PER_IO if any(p.metric(field) is not None for p in rows)]
    osd = any(p.metric("iops_per_osd_core") is not None for p in rows)
    cycles = cycle_columns(rows)
    level = interval_level(rows)
    table = Table(title=plain_cell(f"{title} — CPU per I/O (µs of CPU per I/O, every direction together; ± {level} "
                                   "CI)",
                                   "table.title"), title_justify="left", header_style="bold")
    table.add_column("point", justify="left", overflow="fold")
    table.add_column("IOPS", justify="right")
    for _, label in shown:
        table.add_column(label, justify="right")
    table.add_column("all", justify="right")
    table.add_column("IOPS/core", justify="right")
    if osd:
        table.add_column("IOPS/osd core", justify="right")
    for _, header in cycles:
        table.add_column(header, justify="right")
    for p in rows:
        cells = [run_prefix(p, rows) + point_label(p, direction=False, lab_keys=lab_keys),
                 iops_with_ci(p.metric("ios_per_s")), *(us_with_ci(p.metric(field)) for field, _ in shown),
                 us_with_ci(p.metric(f"{TOTAL_KEY}_cpu_us_per_io")), iops_with_ci(p.metric("iops_per_core_used"))]
        if osd:
            cells.append(iops_with_ci(p.metric("iops_per_osd_core")))
        cells.extend(iops_with_ci(p.metric(field)) for field, _ in cycles)
        table.add_row(*(plain_cell(c) for c in cells))
    return table


def cost_notes(points: Sequence[PointSummary]) -> list[str]:
    """What the cost table leaves out, and the polling clients whose CPU is not all work."""
    rows = cost_points(points)
    notes = []
    if rows:
        notes.append("cost: each process name's CPU over fio's measured window divided by the I/Os per second of "
                     "every direction; kernel = the host's irq and softirq time; the host's other busy time (kernel "
                     "threads, other processes) is not counted (storbench docs methodology cpu-cost-per-io)")
    polling = list(dict.fromkeys(point_label(p, direction=False) for p in rows if polls(p.case.workload.fio_options)))
    if polling:
        notes.append(f"⚠ fio polls at {', '.join(polling)} (hipri, sqthread_poll, userspace_reap or busy_poll): its "
                     "CPU includes waiting, not only work")
    return notes


COMPONENT_COLOURS = {"client": "#ff7f0e", "osd": "#1f77b4", "mon": "#aec7e8", "mgr": "#9edae5", "mds": "#2ca02c",
                     "fuse": "#98df8a", "ganesha": "#9467bd", "rgw": "#8c564b", "kernel": "#7f7f7f"}


def cost_figures(points: Sequence[PointSummary]) -> list[FigureSpec]:
    """A stacked bar per case: its CPU per I/O by component (the total's interval on top); and, where cases differ
    only in their load or a lab setting, IOPS per core used across them."""
    members = cost_points(points)
    if not members:
        return []
    lab_keys, runs = [k for k in varying_lab_keys(members) if k != "lab"], runs_apart(members)
    labels = [point_label(p, lab_keys=lab_keys, direction=False, options=True, runs=runs) for p in members]
    series = []
    for component in (*COMPONENTS, KERNEL):
        field = f"{component.key}_cpu_us_per_io"
        values = [p.metric(field) for p in members]
        if all(v is None for v in values):
            continue
        series.append(Series(name=component.label, x=tuple(labels), y=tuple(v.mean if v else 0.0 for v in values),
                             mode="bar", color=COMPONENT_COLOURS.get(component.key, "")))
    totals = [p.metric(f"{TOTAL_KEY}_cpu_us_per_io") for p in members]
    level = interval_level(members)
    series.append(Series(name=f"all ({level} CI)", x=tuple(labels), y=tuple(t.mean if t else 0.0 for t in totals),
                         error_y=tuple((t.half_width or 0.0) if t else 0.0 for t in totals),
                         error_y_minus=tuple(below_mean(p, f"{TOTAL_KEY}_cpu_us_per_io") for p in members),
                         mode="markers",
                         color="#000000", text=tuple(f"{t.mean:,.0f} µs" if t else "" for t in totals),
                         show_text=True))
    figures = [FigureSpec(
        figure_id="cpu-cost", title="CPU per I/O by component", x_label="point", y_label="µs of CPU per I/O",
        series=tuple(series), x_categories=tuple(dict.fromkeys(labels)), section=COST_SECTION, stacked=True,
        caption="Each bar: the CPU each component used over the measured window per I/O of every direction "
        f"(µs), means over repetitions; the dot is their sum with its {level} interval. Kernel: the host's irq and "
        "softirq time; the host's other busy time (kernel threads, other processes) is left out "
        "(storbench docs methodology cpu-cost-per-io).")]
    per_core = [p for p in members if p.metric("iops_per_core_used") is not None]
    if len(per_core) >= 2:
        figures.append(FigureSpec(
            figure_id="iops-per-core", title="IOPS per core used", x_label="point", y_label="IOPS per core",
            series=tuple(Series(name=name, x=tuple(point_label(p, lab_keys=lab_keys, direction=False, options=True,
                                                               runs=runs) for p in per_core),
                                y=tuple(e.mean if (e := p.metric(field)) else 0.0 for p in per_core),
                                error_y=tuple((e.half_width or 0.0) if (e := p.metric(field)) else 0.0
                                              for p in per_core),
                                error_y_minus=tuple(below_mean(p, field) for p in per_core), mode="bar")
                         for name, field in (("every component", "iops_per_core_used"),
                                             ("ceph-osd", "iops_per_osd_core"))
                         if any(p.metric(field) is not None for p in per_core)),
            x_categories=tuple(dict.fromkeys(point_label(p, lab_keys=lab_keys, direction=False, options=True,
                                                         runs=runs) for p in per_core)),
            section=COST_SECTION,
            caption="I/Os per second of every direction per core of CPU used (every component and the kernel), and "
            f"per core the OSDs used (Ceph's sizing figure); means over repetitions, {level} CI."))
    return figures


COST_SECTION = "CPU cost per I/O"


def cost_table_html(points: Sequence[PointSummary]) -> str:
    """The report's table of `show --cost` (escaped HTML); '' when no point has a cost."""
    rows = cost_points(points)
    if not rows:
        return ""
    lab_keys = varying_lab_keys(rows)
    shown = [(field, label) for field, label in PER_IO if any(p.metric(field) is not None for p in rows)]
    osd = any(p.metric("iops_per_osd_core") is not None for p in rows)
    cycles = cycle_columns(rows)
    head = ["point", "IOPS", *(f"{label} µs" for _, label in shown), "all µs", "IOPS/core",
            *(["IOPS/osd core"] if osd else []), *(header for _, header in cycles)]
    body = []
    for p in rows:
        cells = [run_prefix(p, rows) + point_label(p, direction=False, lab_keys=lab_keys),
                 iops_with_ci(p.metric("ios_per_s")),
                 *(us_with_ci(p.metric(field)) for field, _ in shown),
                 us_with_ci(p.metric(f"{TOTAL_KEY}_cpu_us_per_io")), iops_with_ci(p.metric("iops_per_core_used")),
                 *([iops_with_ci(p.metric("iops_per_osd_core"))] if osd else []),
                 *(iops_with_ci(p.metric(field)) for field, _ in cycles)]
        body.append("<tr>" + "".join(f"<td>{_escaped(c)}</td>" for c in cells) + "</tr>")
    notes = "".join(f"<p class='warn'>{_escaped(n)}</p>" if n.startswith("⚠") else f"<p>{_escaped(n)}</p>"
                    for n in cost_notes(points))
    return (f"<p>µs of CPU per I/O of every direction, by component, ± {interval_level(rows)} CI over "
            "repetitions.</p>"
            "<table class='data'><thead><tr>" + "".join(f"<th>{_escaped(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>" + notes)


def _escaped(text: str) -> str:
    return html.escape(safe_text(text, multiline=True), quote=True)
