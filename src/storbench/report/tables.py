"""rich tables for the terminal. Pure: data in, a renderable out (the CLI prints it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.table import Table
from rich.text import Text

from storbench.model import Case, is_metadata, is_object
from storbench.plan import PlanEstimate
from storbench.report.labels import (
    block_size,
    comparison_label,
    curve_lab_keys,
    curve_label,
    direction_label,
    distinct_text,
    lab_text,
    options_text,
    point_label,
    rate_header,
    varying_comparison_lab,
    varying_lab_keys,
)
from storbench.safe_text import safe_text
from storbench.stats.compare_cells import STOPPING_RULE_MARKS, PointComparison, Verdict
from storbench.stats.compare_design import CONFOUNDED, DESIGN_CAVEATS, DESIGNS
from storbench.stats.estimate import Estimate
from storbench.stats.knee import Curve, CurvePoint, Knee, KneeKind, LatencyObjective, best_under_objective
from storbench.stats.point_summary import PointSummary
from storbench.stats.point_warnings import WARNING_TITLES, StatWarning
from storbench.stats.trend import FLAT_MARGIN
from storbench.units import format_bytes, format_duration, format_latency_ns

VERDICT_STYLE = {Verdict.BETTER: "green", Verdict.WORSE: "red", Verdict.SAME: "dim", Verdict.NOT_COMPARABLE: "yellow"}


def plain_cell(text: str, style: str = "") -> Text:
    """A table cell (or title) from data: shown as written, never read as rich markup (``[/x]`` cannot crash
    the table, ``[link=...]`` cannot make a link), its control characters escaped (``safe_text``)."""
    return Text(safe_text(text), style=style)


def _mean(estimate: Estimate | None, fmt: str = ",.0f", scale: float = 1.0) -> str:
    return "-" if estimate is None else format(estimate.mean / scale, fmt)


def _lat(estimate: Estimate | None) -> str:
    return "-" if estimate is None else format_latency_ns(estimate.mean)


def iops_with_ci(estimate: Estimate | None) -> str:
    if estimate is None:
        return "-"
    half = estimate.half_width
    return f"{estimate.mean:,.0f}" + ("" if half is None else f" ± {half:,.0f}")


def pct_of_expected(p: PointSummary) -> float | None:
    """The point's mean as a percentage of what its target was declared to deliver (`expect:`): IOPS where
    declared, else throughput; None when nothing was declared."""
    share = p.share_of_expected()
    return None if share is None else 100 * share[0]


def expected_cell(p: PointSummary) -> str:
    """'% exp' in a table: '99.8%', blank when the target declared nothing."""
    pct = pct_of_expected(p)
    return "" if pct is None else f"{pct:.1f}%"


# telemetry columns kept longer than the rest when a table must drop columns: where the time went
TELEMETRY_PRIORITY = {"outside_storage_pct": 2}


def telemetry_columns(points: Sequence[PointSummary]) -> list[tuple[str, str, str]]:
    """(header, metric field, format) of the telemetry columns some point has data for (OSD CPU only when an
    OSD did work: an idle cluster beside a local run is not worth a column)."""
    optional = (("osd cores", "ceph_osd_cpu_cores", ".2f"), ("storage lat", "storage_lat_ns", "lat"),
                ("outside %", "outside_storage_pct", ".0f"),  # kept before the rest (TELEMETRY_PRIORITY)
                ("cache hit %", "ceph_cache_hit_pct", ".0f"), ("node cpu %", "node_cpu_busy_pct", ".0f"),
                ("node disk %", "node_disk_util_pct", ".0f"), ("net %", "net_busiest_util_pct", ".0f"),
                ("skew", "start_skew_s", "s"), ("slowest %", "slowest_client_pct_of_median", ".0f"))
    floor = {"ceph_osd_cpu_cores": 0.05}
    # what belongs to the targets: Ceph's figures for Ceph targets or a Ceph lab, the network for targets reached
    # over it or many clients; an idle cluster or a busy link beside a local run is someone else's
    ceph = any(p.target_kind in ("rbd", "cephfs", "s3") or any(k != "lab" for k, _ in p.lab) for p in points)
    network = ceph or any(p.target_kind in ("nfs", "s3", "pvc") or p.clients > 1 for p in points)
    belongs = {"ceph_osd_cpu_cores": ceph, "storage_lat_ns": ceph, "outside_storage_pct": ceph,
               "ceph_cache_hit_pct": ceph,
               "net_busiest_util_pct": network}

    def shown(field: str) -> bool:
        return belongs.get(field, True) and any(
            (e := p.metric(field)) is not None and e.mean >= floor.get(field, float("-inf")) for p in points)

    return [column for column in optional if shown(column[1])]


def telemetry_cell(estimate: Estimate | None, fmt: str) -> str:
    if estimate is None:
        return "-"
    if fmt == "s":
        return format_latency_ns(estimate.mean * 1e9)
    return format_latency_ns(estimate.mean) if fmt == "lat" else format(estimate.mean, fmt)


def pooled_runs_line(points: Sequence[PointSummary]) -> str | None:
    """A line for points that pool the repetitions of several runs (``show --pool``, the report), naming them;
    None when every point is one run's."""
    pooled = sorted({p.run_ids for p in points if len(p.run_ids) > 1})
    if not pooled:
        return None
    return ("note: rows of run " + "; ".join(",".join(map(str, r)) for r in pooled) + " pool the repetitions of "
            "those runs: one mean and interval over runs made at different times")


def results_table(points: Sequence[PointSummary], title: str, width: int | None = None) -> Table:
    """One row per case and direction: mean over repetitions, IOPS with its 95 % confidence interval, the
    telemetry beside it and the bottleneck verdict (its evidence: ``verdict_lines``); "% exp" is the share of
    what the target was declared to deliver (`expect:`). Columns that would say nothing (jobs when every point
    has one, "% exp" when no target declared anything, telemetry nobody measured) are left out; p50 and the rest
    are in the report and the exports. With ``width`` (a terminal's columns), the least essential columns go
    until the rest fit whole (``fit_columns``): no number is ever cut."""
    with_options = any(p.case.workload.fio_options for p in points)
    with_jobs = any(p.numjobs != 1 for p in points)
    with_clients = any(p.clients != 1 for p in points)
    lab_keys = varying_lab_keys(points)
    extra = telemetry_columns(points)
    with_expected = any(p.expected is not None for p in points)
    # which run a row is from, where a case shows up in several runs (kept apart) or a row pools runs
    runs_of_case: dict[str, set[tuple[int, ...]]] = {}
    for p in points:
        runs_of_case.setdefault(p.case_id, set()).add(p.run_ids)
    with_runs = any(len(p.run_ids) > 1 for p in points) or any(len(r) > 1 for r in runs_of_case.values())

    def varies(p: PointSummary) -> str:  # hidden workload fields that differ between the rows
        return " ".join(distinct_text(p, options=with_options))

    def iops_cv(p: PointSummary) -> str:
        iops = p.metric("iops")
        return "-" if iops is None or iops.cv_pct is None else f"{iops.cv_pct:.1f}%"

    def disk(p: PointSummary) -> str:
        return _mean(p.metric("disk_busiest_util_pct") or p.metric("disk_util_pct"), ".0f")

    # (header, justify, priority: 0 essential .. 4 first to go when narrow, the cell of a point)
    specs: list[tuple[str, str, int, Callable[[PointSummary], str]]] = [
        *((("run", "right", 0, lambda p: ",".join(map(str, p.run_ids))),) if with_runs else ()),
        ("target", "left", 0, lambda p: p.target), ("rw", "left", 0, lambda p: p.rw),
        ("bs", "right", 0, lambda p: block_size(p)), ("qd", "right", 1, lambda p: str(p.iodepth)),
        *((("jobs", "right", 1, lambda p: str(p.numjobs)),) if with_jobs else ()),
        *((("clients", "right", 1, lambda p: str(p.clients)),) if with_clients else ()),
        *((("fio options", "left", 2, lambda p: options_text(p.case.workload)),) if with_options else ()),
        *((("varies", "left", 1, varies),) if any(varies(p) for p in points) else ()),
        *((("lab", "left", 1, lambda p: lab_text(p, lab_keys)),) if lab_keys else ()),
        ("dir", "left", 0, lambda p: direction_label(p.rw, p.direction_name) or "-"),
        ("n", "right", 0, lambda p: f"{p.repetitions_ok}/{p.repetitions_total}"),
        (f"{rate_header(points)} ± 95% CI", "right", 0, lambda p: iops_with_ci(p.metric("iops"))),
        ("CV", "right", 3, iops_cv), ("MiB/s", "right", 2, lambda p: "-" if is_metadata(p.rw)  # no data moved
                                         else _mean(p.metric("bw_bytes"), ",.1f", 1048576)),
        *((("% exp", "right", 2, expected_cell),) if with_expected else ()),
        ("lat mean", "right", 2, lambda p: _lat(p.metric("lat_mean_ns"))),
        ("p95", "right", 3, lambda p: _lat(p.metric("lat_p95_ns"))),
        ("p99", "right", 0, lambda p: _lat(p.metric("lat_p99_ns"))),
        ("p99.9", "right", 3, lambda p: _lat(p.metric("lat_p999_ns"))),
        ("cpu %", "right", 3, lambda p: _mean(p.metric("host_cpu_busy_pct"), ".0f")), ("disk %", "right", 3, disk),
        *((name, "right", TELEMETRY_PRIORITY.get(field, 4), lambda p, f=field, m=fmt: telemetry_cell(p.metric(f), m))
          for name, field, fmt in extra),
        ("verdict", "left", 0, lambda p: p.bottleneck.short), ("!", "left", 0, lambda p: "⚠" if p.warnings else ""),
    ]
    cells = [[safe_text(cell(p)) for _, _, _, cell in specs] for p in points]  # measured as shown
    # a column that tells the rows apart (qd, jobs, clients, varies, lab with more than one value) is part of
    # the point: it stays however narrow the terminal
    specs = [(name, justify, 0 if priority == 1 and len({row[i] for row in cells}) > 1 else priority, cell)
             for i, (name, justify, priority, cell) in enumerate(specs)]
    widths = [max([len(name), *(len(row[i]) for row in cells)]) for i, (name, _, _, _) in enumerate(specs)]
    keep = fit_columns(widths, [priority for _, _, priority, _ in specs], width)
    table = Table(title=plain_cell(title, "table.title"), title_justify="left", header_style="bold")
    for i in keep:
        name, justify, _, _ = specs[i]
        table.add_column(name, justify=justify, no_wrap=True, min_width=widths[i])  # type: ignore[arg-type]
    for p, row in zip(points, cells, strict=True):
        table.add_row(*(plain_cell(row[i]) for i in keep),
                      style="red" if p.repetitions_ok < p.repetitions_total else None)
    return table


def fit_columns(widths: Sequence[int], priorities: Sequence[int], width: int | None) -> list[int]:
    """The columns to keep (in order) so that a table of these column ``widths`` (each with rich's border and
    padding, 3 characters) fits ``width``: columns go least essential first (highest priority number, the
    rightmost of a rank first); essential ones (priority 0) always stay. All of them without a width. Pure."""
    keep = list(range(len(widths)))
    if width is None:
        return keep
    for rank in sorted({p for p in priorities if p > 0}, reverse=True):
        for index in sorted((i for i in keep if priorities[i] == rank), reverse=True):
            if sum(widths[i] + 3 for i in keep) + 1 <= width:
                return keep
            keep.remove(index)
    return keep


def verdict_lines(points: Sequence[PointSummary]) -> list[str]:
    """One line per case (its directions share one verdict): the bottleneck and its evidence."""
    lab_keys = varying_lab_keys(points)
    seen: set[str] = set()
    lines = []
    for p in points:
        if p.case_id in seen:
            continue
        seen.add(p.case_id)
        lines.append(f"{point_label(p, lab_keys=lab_keys, direction=False, options=True)}: "
                     f"{p.bottleneck.kind.value} — {p.bottleneck.evidence}")
    return lines


# A warning's short name, for a row that carries it (the HTML summary's column); its advice is said once, below.
WARNING_TAGS = {
    "failed_repetitions": "failed repetitions", "few_repetitions": "few repetitions", "high_cv": "high CV",
    "wide_interval": "wide interval", "runtime_shorter_than_ramp": "runtime < ramp", "page_cache": "page cache",
    "stragglers": "stragglers", "not_steady": "not steady", "steady_incomplete": "steady state unfinished",
    "steady_window": "steady window", "throttle_latency": "block throttle", "uneven_pacing": "uneven pacing",
}
LISTED_POINTS = 8  # a line that names the points it concerns names this many, then "and N more"


def warning_tag(code: str) -> str:
    return WARNING_TAGS.get(code, code.replace("_", " "))


def points_text(labels: Sequence[str], limit: int = LISTED_POINTS) -> str:
    """'a, b and c'; past ``limit`` labels, 'a, b, ..., h and 6 more'."""
    if len(labels) <= 1:
        return "".join(labels)
    if len(labels) > limit:
        return f"{', '.join(labels[:limit])} and {len(labels) - limit} more"
    return f"{', '.join(labels[:-1])} and {labels[-1]}"


def warning_groups(points: Sequence[PointSummary]) -> list[tuple[str, str]]:
    """(code, line) per kind of warning, in the order the points first show them: the line names the points it
    concerns (the worst first, with its figures, for the spread and the interval's width) and says the fix once."""
    lab_keys = varying_lab_keys(points)
    groups: dict[str, list[tuple[PointSummary, StatWarning]]] = {}
    for p in points:
        for w in p.warnings:
            groups.setdefault(w.code, []).append((p, w))
    lines = []
    for code, members in groups.items():
        if code in ("high_cv", "wide_interval"):  # the worst point first
            field = "cv_pct" if code == "high_cv" else "half_width_pct"
            members.sort(key=lambda m: -(getattr(m[0].metric("iops"), field, None) or 0))
        labels = list(dict.fromkeys(point_label(p, lab_keys=lab_keys) for p, _ in members))
        warning = members[0][1]
        title = WARNING_TITLES.get(code, code)
        if len(labels) == 1:
            lines.append((code, f"⚠ {title} at {labels[0]} ({warning.message}): {warning.fix}"))
            continue
        worst = "worst " if code in ("high_cv", "wide_interval") else ""
        others = points_text(labels[1:], LISTED_POINTS - 1)
        lines.append((code, f"⚠ {title} at {len(labels)} points ({worst}{labels[0]}: {warning.message}; also "
                            f"{others}): {warning.fix}"))
    return lines


def warning_lines(points: Sequence[PointSummary]) -> list[str]:
    """One line per kind of warning: the points it concerns, the worst one's figures, and the fix."""
    return [line for _, line in warning_groups(points)]


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
        return "-", Verdict.SAME
    d = cell.difference
    mark = {Verdict.BETTER: "▲", Verdict.WORSE: "▼", Verdict.SAME: "~", Verdict.NOT_COMPARABLE: "x"}[cell.verdict]
    if cell.stopping_rule is not None:  # outside the question a run stopped on (stopping_rule_lines)
        mark += STOPPING_RULE_MARKS[cell.stopping_rule]
    if d.change_ci_low_pct is None or d.change_ci_high_pct is None:
        sides = [e for e in (cell.baseline, cell.candidate) if e is not None]
        why = "n<2" if any(e.n < 2 for e in sides) else "no interval"  # else a steady-state window
        return f"{d.change_pct:+.1f}% {mark} ({why})", cell.verdict
    return f"{d.change_pct:+.1f}% [{d.change_ci_low_pct:+.1f}, {d.change_ci_high_pct:+.1f}] {mark}", cell.verdict


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


def compare_table(comparisons: Sequence[PointComparison], baseline: str, candidate: str,
                  width: int | None = None) -> Table:
    """One row per matched point: both sides' IOPS and each metric's change with its interval. With ``width``
    (a terminal's columns) the least essential columns go first (``fit_columns``) and the point label wraps:
    a number is never cut."""
    table = Table(title=plain_cell(f"baseline {baseline}  vs  candidate {candidate}   (change [interval, below]; ▲ "
                                   "better ▼ worse ~ no detectable difference x not comparable)", "table.title"),
                  title_justify="left", header_style="bold")
    lab_keys = varying_comparison_lab(comparisons)
    # (header, priority: 0 essential .. 3 first to go; the point label wraps instead of going)
    rate = _rate_unit([c.baseline for c in comparisons])  # ops/s for creates, stats, deletes and S3 requests
    columns = (("point", 0), (f"{rate} base", 2), (f"{rate} cand", 2), (rate, 0), ("bandwidth", 3), ("mean lat", 2),
               ("p95", 3), ("p99", 0), ("bottleneck", 1))
    rows: list[list[tuple[str, Verdict | None]]] = []
    for c in comparisons:
        label = safe_text(comparison_label(c, lab_keys) + ("" if c.comparable else f" (x: {c.reason})"))
        changes = [change_text(c, f) for f in ("iops", "bw_bytes", "lat_mean_ns", "lat_p95_ns", "lat_p99_ns")]
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
        words = max([len(word) for r in rows for word in r[i][0].split()] or [1]) if 3 <= i <= 7 else widths[i]
        table.add_column(name, justify="left" if left else "right", no_wrap=not (i == 0 or 3 <= i <= 7),
                         min_width=words if 3 <= i <= 7 and width is not None else widths[i],
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
    """Which intervals the changes carry: paired (alternating repetitions of one run) or Welch's."""
    methods = {cell.difference.method for c in comparisons for cell in c.cells if cell.difference is not None}
    names = {
        "sequential": "sequential: per-pair ratios at the error rate the stopping rule spent on its last look (the "
                      "run looked after every round under `until: decided`; a plain 95 % interval would overstate "
                      "it)",
        "paired": "paired: per-pair ratios of repetitions that alternated in one run (drift cancels)",
        "welch": "Welch: independent repetitions",
        "none": "none where a side has none (n < 2, or a steady-state window: rounds chosen for their small "
                "spread)",
    }
    return "intervals " + "; ".join(text for method, text in names.items() if method in methods)


def _point_figures(point: CurvePoint) -> str:
    return f"{point.iops:,.0f} {_rate_unit([point.point])}, p99 {format_latency_ns(point.lat_p99_ns)}"


def _rate_unit(points: Sequence[PointSummary]) -> str:
    """IOPS for block I/O, ops/s for file operations and object requests (a file created is no I/O), both for a
    mix."""
    operations = [is_metadata(p.rw) or is_object(p.rw) for p in points]
    return "IOPS" if not any(operations) else "ops/s" if all(operations) else "IOPS/ops/s"


def _knee_text(point: CurvePoint, axis: str) -> str:
    return f"{axis}={point.load}: {_point_figures(point)}"


def undecided_text(knee: Knee, points: Sequence[CurvePoint], axis: str) -> str:
    """An undecided curve in words: which change could not be told, its interval, and what would tell."""
    change = knee.pending
    if change is None or knee.pending_from is None or knee.pending_to is None:
        return "undecided"
    a, b = points[knee.pending_from].load, points[knee.pending_to].load
    shown = change.text()
    single = any(e is not None and e.n < 2 for e in (points[knee.pending_from].point.metric("iops"),
                                                      points[knee.pending_to].point.metric("iops")))
    if change.low is None and single:
        more = "a point of one repetition shows no flatness: repeat each point (repeat: 3 or more)"
    elif change.low is None:  # a steady-state window's figures: chosen for their small spread
        more = ("a steady-state window gives no interval and shows no flatness: measure rounds after it "
                "(steady_state.confirm)")
    elif change.repetitions_needed is not None:
        more = f"about {change.repetitions_needed} repetitions per point would tell"
    else:
        more = "more repetitions, or a longer runtime for steadier points, would tell"
    return (f"undecided: IOPS from {axis} {a} to {b} changed {shown}, neither a rise nor shown within "
            f"+-{FLAT_MARGIN:.0%}; no knee is claimed ({more})")


def knee_text(curve: Curve) -> str:
    """The knee in words: where it is, that the curve was already saturated at its lowest load, or why there is
    none (see `stats.knee.locate_knee`)."""
    knee, axis = curve.knee, curve.axis
    if knee is not None and curve.saturated_at_lowest_load:
        return f"already saturated at the lowest load ({axis} {knee.load}): {_point_figures(knee)}"
    if knee is not None:
        return _knee_text(knee, axis)
    if curve.knee_kind is KneeKind.UNDECIDED and curve.pending is not None:
        return undecided_text(curve.pending, curve.points, axis)
    if curve.knee_kind is KneeKind.LATENCY_FLAT:
        return f"none: IOPS stopped rising but latency did not grow (did more {axis} reach the storage?)"
    if curve.knee_kind is KneeKind.TOO_FEW_POINTS:
        return "none: fewer than 2 load levels"
    return f"none in sweep: IOPS still rising at {axis} {curve.points[-1].load}"


def saturation_table(curve_list: Sequence[Curve], objective: LatencyObjective | None) -> Table:
    rate = _rate_unit([p.point for curve in curve_list for p in curve.points])
    table = Table(title=f"saturation: {rate} against load", title_justify="left", header_style="bold")
    table.add_column("curve")
    table.add_column("points", justify="right")
    table.add_column(f"knee (load stops adding {rate})")
    table.add_column(f"max {rate}")
    if objective:
        table.add_column(f"max {rate} with {objective.label} <= {format_latency_ns(objective.limit_ns)}")
    lab_keys = curve_lab_keys(curve_list)
    for curve in curve_list:
        peak = max(curve.points, key=lambda c: c.iops)
        row = [curve_label(curve, lab_keys), str(len(curve.points)), knee_text(curve),
               _knee_text(peak, curve.axis)]
        if objective:
            best = best_under_objective(curve, objective)
            row.append("none meets it" if best is None else _knee_text(best, curve.axis))
        table.add_row(*map(plain_cell, row))
    return table


PLAN_ROWS_HEAD = 20
PLAN_ROWS_TAIL = 10


# What a metadata operation's job has but does not depend on: one file operation at a time (no queue), no
# blocks transferred, no page cache to bypass, size based (each file once) with no warm-up to leave out.
NOT_FOR_METADATA = ("bs", "iodepth", "direct", "ramp")


def plan_parameters(case: Case) -> dict[str, str]:
    """A case's parameters as `storbench plan` shows them: a metadata operation without the block I/O ones
    (``NOT_FOR_METADATA``) and its runtime as what it is, a cap."""
    params = case.parameters()
    if not is_metadata(case.workload.rw):
        return params
    shown = {k: v for k, v in params.items() if k not in NOT_FOR_METADATA and k != "runtime"}
    return {**shown, "runtime cap": params["runtime"]}


def plan_table(cases: Sequence[Case], title: str) -> tuple[Table, str]:
    """The cases, one row each, with a column per parameter that varies; constants go in a line. A large sweep
    shows its first and last rows and how many are between."""
    params = [plan_parameters(case) for case in cases]
    names = list(params[0]) if params else []
    for p in params[1:]:
        names += [k for k in p if k not in names]
    varying = [n for n in names if len({p.get(n, "") for p in params}) > 1]
    constant = [n for n in names if n not in varying and params and params[0].get(n, "")]
    table = Table(title=plain_cell(title, "table.title"), title_justify="left", header_style="bold")
    table.add_column("#", justify="right")
    table.add_column("case id", no_wrap=True)
    for name in varying:
        table.add_column(plain_cell(name), no_wrap=True)
    shown = list(enumerate(zip(cases, params, strict=True), 1))
    if len(shown) > PLAN_ROWS_HEAD + PLAN_ROWS_TAIL + 1:
        hidden = len(shown) - PLAN_ROWS_HEAD - PLAN_ROWS_TAIL
        for index, (case, p) in shown[:PLAN_ROWS_HEAD]:
            table.add_row(str(index), plain_cell(case.case_id), *(plain_cell(p.get(n, "")) for n in varying))
        table.add_row("…", f"{hidden:,} more", *("…" for _ in varying))
        shown = shown[-PLAN_ROWS_TAIL:]
    for index, (case, p) in shown:
        table.add_row(str(index), plain_cell(case.case_id), *(plain_cell(p.get(n, "")) for n in varying))
    return table, "same for every case: " + ", ".join(f"{n}={params[0][n]}" for n in constant)


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


def _how_long_runs_are(estimate: PlanEstimate) -> str:
    timed = "runs are time based: the volume written while measuring depends on the storage's speed"
    sized = ("metadata operations are size based: each job creates, stats or deletes its files once, runtime "
             "only caps it")
    if not estimate.metadata_cases:
        return timed
    if estimate.metadata_cases == estimate.cases:
        return sized
    return f"block I/O {timed}; {sized}"


def plan_summary_lines(estimate: PlanEstimate, repeat: int, fio_version: str, fio_binary: str) -> list[str]:
    lines = [
        f"{_count(estimate.cases, 'case')} x {_count(repeat, 'repetition')} = "
        f"{_count(estimate.repetitions, 'fio run')}",
        f"estimated time: {format_duration(estimate.seconds)}",
        f"test files laid out: {format_bytes(estimate.layout_bytes)} ({_how_long_runs_are(estimate)})",
        f"fio: {fio_binary} ({fio_version})",
    ]
    if estimate.destructive_cases:
        lines.append(f"DESTRUCTIVE: {estimate.destructive_cases} cases write to raw block devices")
    lines += [f"lab design: {design}" for design in estimate.lab_designs]
    return lines
