"""What the candidate's setting did to the cost of an I/O (pure): per matched case, each component's CPU per I/O,
then in all and IOPS per core, with both sides' means and the change with its interval; as a terminal table, an
HTML table and Markdown (`compare` and the report). A row per figure: a line of eight "a -> b, change" parts had
been a paragraph nobody could scan."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from storbench.report.compare_tables import VERDICT_STYLE, change_text
from storbench.report.cost import cost_number
from storbench.report.export import markdown_cell
from storbench.report.labels import comparison_label, varying_comparison_lab
from storbench.report.summary_table import escaped
from storbench.report.tables import plain_cell
from storbench.stats.compare_cells import PointComparison, Verdict, cost_cells
from storbench.stats.cost import KERNEL, TOTAL_KEY
from storbench.stats.metrics import COST_COMPARED


@dataclass(frozen=True)
class CostChange:
    """One figure of a case's cost on both sides: its name with its unit, each side's mean, the change."""

    figure: str
    baseline: str
    candidate: str
    change: str
    verdict: Verdict


@dataclass(frozen=True)
class PointCostChange:
    """A matched case's cost changes; ``cells``: how many intervals share its error rate (Bonferroni, as
    `stats.compare_cells.cost_level` sets them); ``one_sided_kernel``: the kernel's part was measured on one side
    only, so the totals are left out (they would differ by it)."""

    point: str
    cells: int
    changes: tuple[CostChange, ...]
    one_sided_kernel: bool


ONE_SIDED_KERNEL = ("the kernel's part measured on one side only: the totals are not shown (they are counted in "
                    "the shared error rate)")
HEAD = ("point", "cost", "baseline", "candidate", "change")


def cost_changes(comparisons: Sequence[PointComparison]) -> list[PointCostChange]:
    """One entry per matched case where both sides have a CPU per I/O in all (a case once, whatever its directions)."""
    lab_keys = varying_comparison_lab(comparisons)
    out = []
    seen: set[tuple[str, str]] = set()
    kernel = f"{KERNEL.key}_cpu_us_per_io"
    for c in comparisons:
        key = (c.baseline.case_id, c.candidate.case_id)
        if key in seen or c.cell(f"{TOTAL_KEY}_cpu_us_per_io") is None:
            continue
        seen.add(key)
        one_sided = (c.baseline.metric(kernel) is None) != (c.candidate.metric(kernel) is None)
        changes = []
        for metric in COST_COMPARED:
            cell = c.cell(metric.field)
            if cell is None or cell.baseline is None or cell.candidate is None:
                continue
            if one_sided and metric.field in (f"{TOTAL_KEY}_cpu_us_per_io", "iops_per_core_used"):
                continue
            unit = f" ({metric.unit})" if metric.unit == "µs" else ""
            change, verdict = change_text(c, metric.field)
            changes.append(CostChange(f"{metric.label}{unit}", cost_number(cell.baseline.mean),
                                      cost_number(cell.candidate.mean), change, verdict))
        out.append(PointCostChange(comparison_label(c, lab_keys, direction=False), cost_cells(c), tuple(changes),
                                   one_sided))
    return out


def cost_caption(items: Sequence[PointCostChange]) -> str:
    """What the cost rows are, and how their intervals share their error rate."""
    counts = sorted({p.cells for p in items if p.cells > 1})
    shared = (f"; a point's intervals share its error rate among the {' or '.join(map(str, counts))} cost figures "
              "compared for it (Bonferroni)" if counts else "")
    return ("cost: each component's CPU per I/O of every direction (µs) over fio's measured window, in all, and IOPS "
            f"per core used, the candidate's change with its interval{shared} "
            "(storbench docs methodology cpu-cost-per-io)")


def _rows(items: Sequence[PointCostChange]) -> list[tuple[str, CostChange | None, str]]:
    """(the point where it starts, a figure or None for the point's note, the note)."""
    rows: list[tuple[str, CostChange | None, str]] = []
    for p in items:
        for i, change in enumerate(p.changes):
            rows.append((p.point if i == 0 else "", change, ""))
        if p.one_sided_kernel:
            rows.append(("" if p.changes else p.point, None, ONE_SIDED_KERNEL))
    return rows


def cost_change_table(items: Sequence[PointCostChange]) -> Table:
    """The terminal's table: a row per figure, the point named on its first."""
    table = Table(title=plain_cell("CPU cost per I/O, baseline vs candidate", "table.title"), title_justify="left",
                  header_style="bold")
    for head in HEAD:
        table.add_column(head, justify="left" if head in ("point", "cost") else "right")
    for point, change, note in _rows(items):
        if change is None:
            table.add_row(plain_cell(point), plain_cell(note), "", "", "")
        else:
            table.add_row(plain_cell(point), plain_cell(change.figure), change.baseline, change.candidate,
                          Text(change.change, style=VERDICT_STYLE[change.verdict]))
    return table


def cost_change_html(items: Sequence[PointCostChange]) -> str:
    """The report's table, each change coloured by its verdict as the comparison's are, with its caption."""
    if not items:
        return ""
    body = []
    for point, change, note in _rows(items):  # labels carry plan and database text: escaped as every report cell
        if change is None:
            body.append(f"<tr><td>{escaped(point)}</td><td colspan='4'>{escaped(note)}</td></tr>")
        else:
            body.append(f"<tr><td>{escaped(point)}</td><td>{escaped(change.figure)}</td>"
                        f"<td>{escaped(change.baseline)}</td><td>{escaped(change.candidate)}</td>"
                        f"<td class='verdict-{change.verdict.name.lower()}'>{escaped(change.change)}</td></tr>")
    return (f"<p>{escaped(cost_caption(items))}</p><table class='data compare cost-change'><thead><tr>"
            + "".join(f"<th>{h}</th>" for h in HEAD) + "</tr></thead><tbody>" + "".join(body) + "</tbody></table>")


def cost_change_markdown(items: Sequence[PointCostChange]) -> list[str]:
    """Markdown lines: the caption, then the table (a point's label as a cell: what Markdown acts on escaped)."""
    if not items:
        return []
    lines = [cost_caption(items), "", "| " + " | ".join(HEAD) + " |", "|---|---|---:|---:|---:|"]
    for point, change, note in _rows(items):
        lines.append(f"| {markdown_cell(point)} | {note} | | | |" if change is None else
                     f"| {markdown_cell(point)} | {change.figure} | {change.baseline} | {change.candidate} | "
                     f"{change.change} |")
    return lines
