"""What each I/O costs in CPU, in words and tables (pure): `show --cost`'s table (a row per case: CPU per I/O by
component with its interval, in all, IOPS per core) and the lines under `compare` that say what a setting did to
it ("ceph-osd CPU per I/O 85 µs -> 126 µs, +48.2 % [+39.1, +58.0] ▼"). A mixed read/write case is one row: its
CPU is its I/O's in both directions."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from storbench.report.compare_tables import change_text
from storbench.report.labels import comparison_label, point_label, varying_comparison_lab, varying_lab_keys
from storbench.report.tables import iops_with_ci, plain_cell
from storbench.stats.compare_cells import PointComparison
from storbench.stats.cost import COMPONENTS, KERNEL, TOTAL_KEY
from storbench.stats.estimate import Estimate
from storbench.stats.metrics import COST_COMPARED
from storbench.stats.point_summary import PointSummary

PER_IO = tuple((f"{c.key}_cpu_us_per_io", c.label) for c in (*COMPONENTS, KERNEL))


def us_with_ci(estimate: Estimate | None) -> str:
    """Microseconds of CPU with the half-width of their interval: ``85.2 ± 3.1``."""
    if estimate is None:
        return "-"
    digits = 1 if estimate.mean < 100 else 0
    half = estimate.half_width
    return f"{estimate.mean:,.{digits}f}" + ("" if half is None else f" ± {half:,.{digits}f}")


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
    table = Table(title=plain_cell(f"{title} — CPU per I/O (µs of CPU per I/O, every direction together; ± 95% CI)",
                                   "table.title"), title_justify="left", header_style="bold")
    table.add_column("point", justify="left", overflow="fold")
    table.add_column("IOPS", justify="right")
    for _, label in shown:
        table.add_column(label, justify="right")
    table.add_column("all", justify="right")
    table.add_column("IOPS/core", justify="right")
    if osd:
        table.add_column("IOPS/osd core", justify="right")
    for p in rows:
        cells = [point_label(p, direction=False, lab_keys=lab_keys), iops_with_ci(p.metric("ios_per_s")),
                 *(us_with_ci(p.metric(field)) for field, _ in shown),
                 us_with_ci(p.metric(f"{TOTAL_KEY}_cpu_us_per_io")), iops_with_ci(p.metric("iops_per_core_used"))]
        if osd:
            cells.append(iops_with_ci(p.metric("iops_per_osd_core")))
        table.add_row(*(plain_cell(c) for c in cells))
    return table


def cost_notes(points: Sequence[PointSummary]) -> list[str]:
    """What the cost table leaves out, and the polling clients whose CPU is not all work."""
    rows = cost_points(points)
    notes = []
    if rows:
        notes.append("cost: each process name's CPU over fio's measured window divided by the I/Os per second of "
                     "every direction; kernel = the host's irq and softirq time; the host's other busy time (kernel "
                     "threads, other processes) is not counted (docs/methodology.md#cpu-cost-per-io)")
    polling = [point_label(p, direction=False) for p in rows
               if any(name in ("hipri", "sqthread_poll") for name, _ in p.case.workload.fio_options)]
    if polling:
        notes.append(f"⚠ fio polls at {', '.join(polling)} (hipri or sqthread_poll): its CPU includes waiting, not "
                     "only work")
    return notes


def cost_lines(comparisons: Sequence[PointComparison]) -> list[str]:
    """What the candidate's setting did to the cost of an I/O, a line per matched case where both sides have it:
    each component's CPU per I/O, then in all and IOPS per core, with the change and its interval."""
    lab_keys = varying_comparison_lab(comparisons)
    lines = []
    seen: set[tuple[str, str]] = set()
    for c in comparisons:
        key = (c.baseline.case_id, c.candidate.case_id)
        if key in seen or c.cell(f"{TOTAL_KEY}_cpu_us_per_io") is None:
            continue
        seen.add(key)
        parts = []
        for metric in COST_COMPARED:
            cell = c.cell(metric.field)
            if cell is None or cell.baseline is None or cell.candidate is None:
                continue
            unit = " µs" if metric.unit == "µs" else ""
            values = (f"{us_with_ci(cell.baseline).split(' ±')[0]}{unit} -> "
                      f"{us_with_ci(cell.candidate).split(' ±')[0]}{unit}") if unit else (
                f"{cell.baseline.mean:,.0f} -> {cell.candidate.mean:,.0f}")
            parts.append(f"{metric.label} {values}, {change_text(c, metric.field)[0]}")
        lines.append(f"cost at {comparison_label(c, lab_keys, direction=False)}: " + "; ".join(parts))
    return lines
