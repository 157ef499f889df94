"""rich tables and lines for a comparison: one row per matched point with each metric's change and interval, the
lines under it (each design, the stopping rule's answers, each side's bottleneck evidence) and the intervals'
caption. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from storbench.model import is_volume_operation
from storbench.report.labels import comparison_label, rate_unit, varying_comparison_lab
from storbench.report.tables import fit_columns, iops_with_ci, plain_cell, slowest_header
from storbench.report.warning_text import points_text
from storbench.safe_text import safe_text
from storbench.stats.compare_cells import STOPPING_RULE_MARKS, PointComparison, Verdict
from storbench.stats.compare_design import CONFOUNDED, DESIGN_CAVEATS, DESIGNS
from storbench.stats.estimate import CONFIDENCE

VERDICT_STYLE = {Verdict.BETTER: "green", Verdict.WORSE: "red", Verdict.UNDECIDED: "dim",
                 Verdict.NOT_COMPARABLE: "yellow"}


def design_lines(comparisons: Sequence[PointComparison]) -> list[str]:
    """The design of every comparison (`stats.compare_design.DESIGNS`), one line per design with the points it concerns
    ("all N points" when it is every one); a design that confounds the setting with the instance, with time or with
    whatever else changed between two runs is marked and says what that means for its verdicts."""
    lab_keys = varying_comparison_lab(comparisons)
    groups: dict[str, list[str]] = {}
    for c in comparisons:
        if c.design:
            groups.setdefault(c.design, []).append(comparison_label(c, lab_keys))
    lines = []
    for design, labels in groups.items():
        named = list(dict.fromkeys(labels))
        where = (f"all {len(labels)} points" if len(labels) == len(comparisons) and len(labels) > 1
                 else points_text(named))
        caveat = f"; {DESIGN_CAVEATS[design]}" if design in DESIGN_CAVEATS else ""
        mark = "⚠ " if design in CONFOUNDED else ""
        lines.append(f"{mark}design: {design} ({where}): {DESIGNS.get(design, design)}{caveat}")
    return lines


def change_text(comparison: PointComparison, field: str) -> tuple[str, Verdict]:
    cell = comparison.cell(field)
    if cell is None or cell.difference is None:
        return "-", Verdict.UNDECIDED
    d = cell.difference
    mark = {Verdict.BETTER: "▲", Verdict.WORSE: "▼", Verdict.UNDECIDED: "~", Verdict.NOT_COMPARABLE: "x"}[cell.verdict]
    if cell.stopping_rule is not None:  # outside the question a run stopped on (stopping_rule_lines)
        mark += STOPPING_RULE_MARKS[cell.stopping_rule]
    unit = "pt" if cell.metric.unit == "%" else cell.metric.unit
    interval = "" if d.ci_low is None or d.ci_high is None else f" [{d.ci_low:+.2f}, {d.ci_high:+.2f}]"
    if math.isnan(d.change_pct):  # from a baseline of 0 (no stall): no percent, the change in the metric's unit
        return f"{d.diff:+.2f} {unit}{interval} from 0 {mark}", cell.verdict
    if d.change_ci_low_pct is None or d.change_ci_high_pct is None:
        if interval:  # to 0 (a stall gone): judged in the metric's unit
            return f"{d.change_pct:+.1f}% ({d.diff:+.2f} {unit}{interval}) {mark}", cell.verdict
        sides = [e for e in (cell.baseline, cell.candidate) if e is not None]
        why = ("n<2" if any(e.n < 2 for e in sides) else  # else every repetition alike, or a steady-state window
               "no spread: cannot judge" if sides and all(e.stddev == 0 for e in sides) else "no interval")
        return f"{d.change_pct:+.1f}% {mark} ({why})", cell.verdict
    return (f"{d.change_pct:+.1f}% [{_bound(d.change_ci_low_pct)}, {_bound(d.change_ci_high_pct)}] {mark}",
            cell.verdict)


LARGEST_PCT_SHOWN = 10_000.0


def _bound(pct: float) -> str:
    """An interval's bound in %: beyond 100 times the baseline it says only that (two repetitions far apart had
    printed "+32014955800813912064.0")."""
    return f">+{LARGEST_PCT_SHOWN:,.0f}" if pct > LARGEST_PCT_SHOWN else f"{pct:+.1f}"


def bottleneck_change(c: PointComparison, short: bool = False) -> str:
    """'cpu-bound → media-bound' ('cpu → media' when short), or one verdict when both sides share it."""
    if short:
        before, after = c.baseline.bottleneck.short, c.candidate.bottleneck.short
    else:
        before, after = c.baseline.bottleneck.kind.value, c.candidate.bottleneck.kind.value
    return before if before == after else f"{before} → {after}"


def bottleneck_evidence_lines(comparisons: Sequence[PointComparison]) -> list[str]:
    """Per compared case: each side's verdict with its evidence (nothing when neither side was sampled)."""
    lab_keys = varying_comparison_lab(comparisons)
    lines: list[str] = []
    seen: set[tuple[str, str]] = set()
    for c in comparisons:
        key = (c.baseline.case_id, c.candidate.case_id)
        if key in seen or (c.baseline.bottleneck.kind == "unknown" and c.candidate.bottleneck.kind == "unknown"):
            continue
        seen.add(key)
        lines.append(f"{comparison_label(c, lab_keys)}: baseline {c.baseline.bottleneck.kind.value} — "
                     f"{c.baseline.bottleneck.evidence}; candidate {c.candidate.bottleneck.kind.value} — "
                     f"{c.candidate.bottleneck.evidence}")
    return lines


# what the marks mean, under a comparison in Markdown and the report (the terminal's title says it shorter): `~` is
# an interval that includes no change, which is no evidence that nothing changed
VERDICT_LEGEND = "▲ better, ▼ worse, ~ undecided (the interval includes 0 %), x not comparable."

# failover figures the terminal's comparison shows where both sides had faults: (field, header, priority)
TERMINAL_FAILOVER_COLUMNS = (("blackout_s", "blackout", 0), ("client_blackout_s", "a client's blackout", 1),
                             ("first_io_after_fault_s", "first I/O", 2),
                             ("end_pct", "level at end", 2))


def volume_operations_only(comparisons: Sequence[PointComparison]) -> bool:
    """Kubernetes operations alone, one time per client: no data moved, and a repetition's p99 of a few values is
    its slowest client's time (as `show` says it): their comparisons give "time" and "slowest"."""
    return bool(comparisons) and all(is_volume_operation(c.baseline.rw) for c in comparisons)


def _slowest(comparisons: Sequence[PointComparison]) -> str:
    return slowest_header("lat_p99_ns", "p99", [p.clients for c in comparisons for p in (c.baseline, c.candidate)])


def compared_fields(comparisons: Sequence[PointComparison], rate: str) -> list[tuple[str, str]]:
    """(field, header) of the changes a comparison's markdown and HTML tables give."""
    if volume_operations_only(comparisons):
        return [("iops", rate), ("lat_mean_ns", "time"), ("lat_p99_ns", _slowest(comparisons))]
    return [("iops", rate), ("bw_bytes_per_s", "bandwidth"), ("lat_mean_ns", "mean latency"), ("lat_p95_ns", "p95"),
            ("lat_p99_ns", "p99")]


def compare_table(comparisons: Sequence[PointComparison], baseline: str, candidate: str,
                  width: int | None = None) -> Table:
    """One row per matched point: both sides' IOPS and each metric's change with its interval. With ``width``
    (a terminal's columns) the least essential columns go first (``fit_columns``) and the point label wraps:
    a number is never cut."""
    table = Table(title=plain_cell(f"baseline {baseline}  vs  candidate {candidate}   (change [interval, below]; ▲ "
                                   "better ▼ worse ~ undecided x not comparable)", "table.title"),
                  title_justify="left", header_style="bold")
    lab_keys = varying_comparison_lab(comparisons)
    # (header, priority: 0 essential .. 3 first to go; the point label wraps instead of going)
    rate = rate_unit(c.baseline.rw for c in comparisons)  # ops/s for creates, stats, deletes and S3 requests
    # what a fault did, where the points had faults: the blackout essential, the others before bandwidth goes
    faulted = [(field, header, priority) for field, header, priority in TERMINAL_FAILOVER_COLUMNS
               if any(c.cell(field) is not None for c in comparisons)]
    measured = [("iops", rate, 0), ("bw_bytes_per_s", "bandwidth", 3), ("lat_mean_ns", "mean lat", 2),
                ("lat_p95_ns", "p95", 3), ("lat_p99_ns", "p99", 0)]
    if volume_operations_only(comparisons):
        measured = [("iops", rate, 0), ("lat_mean_ns", "time", 0), ("lat_p99_ns", _slowest(comparisons), 0)]
    fields = (*(field for field, _, _ in measured), *(field for field, _, _ in faulted))
    columns = (("point", 0), (f"{rate} base", 2), (f"{rate} cand", 2),
               *((header, priority) for _, header, priority in measured),
               *((header, priority) for _, header, priority in faulted), ("bottleneck", 1))
    changing = range(3, 3 + len(fields))  # the change columns: they wrap between words, never inside a number
    rows: list[list[tuple[str, Verdict | None]]] = []
    for c in comparisons:
        label = safe_text(comparison_label(c, lab_keys) + ("" if c.comparable else f" (x: {c.reason})"))
        changes = [change_text(c, f) for f in fields]
        row: list[tuple[str, Verdict | None]] = [(label, None), (iops_with_ci(c.baseline.metric("iops")), None),
                                                 (iops_with_ci(c.candidate.metric("iops")), None)]
        row += [(text, verdict) for text, verdict in changes]
        rows.append([*row, (bottleneck_change(c, short=True), None)])
    longest = max([len("point"), *(len(r[0][0]) for r in rows)])
    narrowest = min(longest, 18)  # the point label wraps down to this
    widths = [narrowest if i == 0 else max([len(name), *(len(r[i][0]) for r in rows)])
              for i, (name, _) in enumerate(columns)]
    keep = fit_columns(widths, [priority for _, priority in columns], width)
    others = sum(widths[i] + 3 for i in keep if i != 0) + 1
    widths[0] = longest if width is None else max(narrowest, min(longest, width - others - 3))
    for i in keep:
        name = columns[i][0]
        left = name in ("point", "bottleneck")
        # a change wraps between its words ("+10.5%" / "[-11.5, +37.9] ~") when even the essential columns are
        # too wide: never inside a number
        words = max([len(word) for r in rows for word in r[i][0].split()] or [1]) if i in changing else widths[i]
        table.add_column(name, justify="left" if left else "right", no_wrap=not (i == 0 or i in changing),
                         min_width=words if i in changing and width is not None else widths[i],
                         overflow="fold" if i == 0 else "ellipsis")
    for c, row in zip(comparisons, rows, strict=True):
        cells = [plain_cell(text, "" if verdict is None else VERDICT_STYLE[verdict])
                 for text, verdict in (row[i] for i in keep)]
        if not c.comparable:  # the reason in yellow after the label
            cells[0] = Text.assemble(plain_cell(comparison_label(c, lab_keys)), " ",
                                     plain_cell(f"(x: {c.reason})", "yellow"))
        table.add_row(*cells)
    table.caption = interval_caption(comparisons)
    table.caption_justify = "left"
    return table


def rule_answer_lines(comparisons: Sequence[PointComparison]) -> list[str]:
    """For each cell of a run's question (`until: decided`), the stopping rule's final verdict: which way (or
    equivalent within the margin, or undecided: at max, or the run ended before it), the change with its last
    look's interval, the rounds and the minutes the run took."""
    lab_keys = varying_comparison_lab(comparisons)
    lines = []
    for c in comparisons:
        for cell in c.cells:
            if cell.answer is not None:
                lines.append(f"run {c.baseline.run_ids[0]}'s stopping rule, {cell.metric.label} at "
                             f"{comparison_label(c, lab_keys)}: {cell.answer.text()}")
    return lines


def interval_caption(comparisons: Sequence[PointComparison]) -> str:
    """Which intervals the changes carry: paired (alternating repetitions of one run) or Welch's, and at which
    level (a stopping rule's cells at the rule's)."""
    methods = {cell.difference.method for c in comparisons for cell in c.cells if cell.difference is not None}
    # a method's level where some of its intervals are plain ones; those of runs stopped `until: ci` are said below
    at = {cell.difference.method: f" ({100 * CONFIDENCE:g} %)" for c in comparisons if c.ci_level is None
          for cell in c.cells if cell.difference is not None}
    names = {
        "sequential": "sequential: per-pair ratios at the error rate the stopping rule spent on its last look (the "
                      "run looked after every round under `until: decided`; a plain 95 % interval would overstate "
                      "it)",
        "paired": f"paired{at.get('paired', '')}: per-pair ratios of repetitions that alternated in one run (drift "
                  "cancels)",
        "welch": f"Welch{at.get('welch', '')}: independent repetitions",
        "paired by run": f"paired by run{at.get('paired by run', '')}: each run's two means one pair (sides that span "
                         "several runs: the run is the sample)",
        "welch over runs": f"Welch over runs{at.get('welch over runs', '')}: each run's mean one sample (sides that "
                           "span several runs)",
        "none": "none where a side has none (n < 2, or a steady-state window: rounds chosen for their small "
                "spread), or where no repetition differs from another (a percentile in one histogram bin a side: "
                "below its resolution)",
    }
    levels = sorted({c.ci_level for c in comparisons if c.ci_level is not None})
    stopped = ([f"at {' or '.join(f'{100 * level:g} %' for level in levels)} where a side's run was repeated "
                "until its intervals were narrow (`until: ci`: the level its points are shown at; a plain 95 % "
                "interval after such a stop calls no change different more often than 5 %)"] if levels else [])
    return "intervals " + "; ".join([*(text for method, text in names.items() if method in methods), *stopped])
