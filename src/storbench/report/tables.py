"""rich tables for the terminal: the results table of points, its cells and the verdict lines under it; the cells
the other tables share (``plain_cell``, ``iops_with_ci``, ``fit_columns``). Pure: data in, a
renderable out (the CLI prints it)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from rich.table import Table
from rich.text import Text

from storbench.model import is_volume_operation, moves_data
from storbench.report.labels import (
    block_size,
    direction_label,
    distinct_text,
    interval_level,
    lab_text,
    options_text,
    point_label,
    rate_unit,
    run_prefix,
    runs_apart,
    varying_lab_keys,
)
from storbench.safe_text import safe_text
from storbench.stats.bottleneck import BottleneckVerdict
from storbench.stats.estimate import Estimate
from storbench.stats.point_summary import PointSummary
from storbench.units import format_latency_ns, format_percentile_ns


def plain_cell(text: str, style: str = "") -> Text:
    """A table cell (or title) from data: shown as written, never read as rich markup (``[/x]`` cannot crash
    the table, ``[link=...]`` cannot make a link), its control characters escaped (``safe_text``)."""
    return Text(safe_text(text), style=style)


def _mean(estimate: Estimate | None, fmt: str = ",.0f", scale: float = 1.0) -> str:
    return "-" if estimate is None else format(estimate.mean / scale, fmt)


def _lat(estimate: Estimate | None) -> str:
    return "-" if estimate is None else format_latency_ns(estimate.mean)


def _pct(estimate: Estimate | None, exact: bool = False) -> str:
    """A percentile's mean; in fio's last histogram bin a floor (`units.format_percentile_ns`), unless the values
    are ``exact`` (a volume operation's times: no histogram bins)."""
    return "-" if estimate is None else (format_latency_ns if exact else format_percentile_ns)(estimate.mean)


# A volume operation's repetition is one value per client: fio's nearest-rank p99 is the largest of up to 100
# values, p99.9 of up to 1,000; beyond, they are not the slowest client's
SLOWEST_CLIENTS = {"lat_p99_ns": 100, "lat_p999_ns": 1000}


def slowest_header(field: str, percentile: str, clients: Sequence[int]) -> str:
    """"slowest" where the percentile ``field`` of each repetition's clients is their largest value, else its own
    name."""
    return "slowest" if max(clients, default=0) <= SLOWEST_CLIENTS[field] else percentile


def _rate_text(value: float) -> str:
    """A rate: whole numbers from 100 on, 3 significant digits below (0.45 ops/s had been "0")."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def iops_with_ci(estimate: Estimate | None) -> str:
    if estimate is None:
        return "-"
    half = estimate.half_width
    if half is None:
        return _rate_text(estimate.mean)
    # the half-width as a rate in its own right: "150,000 ± 0" had hidden an interval, "50 ± 5.1e+02" read badly
    return f"{_rate_text(estimate.mean)} ± {_rate_text(half) if abs(half) >= 99.5 else f'{half:.2g}'}"


def time_with_ci(estimate: Estimate | None) -> str:
    """A mean time with the half-width of its 95 % interval: ``4.4s ± 0.52s``."""
    if estimate is None:
        return "-"
    half = estimate.half_width
    return format_latency_ns(estimate.mean) + ("" if half is None else f" ± {format_latency_ns(half)}")


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
            "those runs: each run's mean is one sample of the row's mean and interval (a run's repetitions share its "
            "time and instance)")


def interval_level_lines(levels: Mapping[int, float]) -> list[str]:
    """A line for each run repeated `until: ci` (``stats.run_questions.interval_levels``): its intervals' level."""
    return [f"note: run {run_id} repeated `until: ci`: its intervals are t intervals at {100 * level:g} %, the level "
            "that covers 95 % after such a stop (a plain 95 % one would cover less)"
            for run_id, level in sorted(levels.items())]


# a column of the results table: (header, justify, priority: 0 essential .. 4 first to go when narrow, its cell)
Spec = tuple[str, str, int, Callable[[PointSummary], str]]


def _cells(specs: Sequence[Spec], points: Sequence[PointSummary]) -> list[list[str]]:
    """Each point's cells, as shown (and measured)."""
    return [[safe_text(cell(p)) for _, _, _, cell in specs] for p in points]


def _laid_out(specs: Sequence[Spec], cells: Sequence[Sequence[str]], width: int | None) -> tuple[list[int], list[int]]:
    """Each column's width, and the columns kept at ``width``."""
    widths = [max([len(name), *(len(row[i]) for row in cells)]) for i, (name, _, _, _) in enumerate(specs)]
    return widths, fit_columns(widths, [priority for _, _, priority, _ in specs], width)


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
    level = interval_level(points)  # a run repeated `until: ci` shows its intervals at its own level
    # which run a row is from, where a case shows up in several runs (kept apart) or a row pools runs
    with_runs = any(len(p.run_ids) > 1 for p in points) or runs_apart(points)

    def varies(p: PointSummary) -> str:  # hidden workload fields that differ between the rows
        return " ".join(distinct_text(p, options=with_options))

    def iops_cv(p: PointSummary) -> str:
        iops = p.metric("iops")
        return "-" if iops is None or iops.cv_pct is None else f"{iops.cv_pct:.1f}%"

    def disk(p: PointSummary) -> str:
        return _mean(p.metric("disk_busiest_util_pct") or p.metric("disk_util_pct"), ".0f")

    # (header, justify, priority: 0 essential .. 4 first to go when narrow, the cell of a point)
    specs: list[Spec] = [
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
        (f"{rate_unit(p.rw for p in points)} ± {level} CI", "right", 0, lambda p: iops_with_ci(p.metric("iops"))),
        ("CV", "right", 3, iops_cv), ("MiB/s", "right", 2, lambda p: "-" if not moves_data(p.rw)  # no data moved
                                         else _mean(p.metric("bw_bytes_per_s"), ",.1f", 1048576)),
        *((("% exp", "right", 2, expected_cell),) if with_expected else ()),
        ("lat mean", "right", 2, lambda p: _lat(p.metric("lat_mean_ns"))),
        # a volume operation's times are exact in a table of mixed points too
        ("p95", "right", 3, lambda p: _pct(p.metric("lat_p95_ns"), is_volume_operation(p.rw))),
        ("p99", "right", 0, lambda p: _pct(p.metric("lat_p99_ns"), is_volume_operation(p.rw))),
        ("p99.9", "right", 3, lambda p: _pct(p.metric("lat_p999_ns"), is_volume_operation(p.rw))),
        ("cpu %", "right", 3, lambda p: _mean(p.metric("host_cpu_busy_pct"), ".0f")), ("disk %", "right", 3, disk),
        *((name, "right", TELEMETRY_PRIORITY.get(field, 4), lambda p, f=field, m=fmt: telemetry_cell(p.metric(f), m))
          for name, field, fmt in extra),
        ("verdict", "left", 0, lambda p: p.bottleneck.short), ("!", "left", 0, lambda p: "⚠" if p.warnings else ""),
    ]
    if points and all(is_volume_operation(p.rw) for p in points):  # Kubernetes operations: their times are the figure
        # each repetition is one operation per client: its "p99.9" is its slowest client's, and p95 or p99 of a
        # few values no percentile; the mean over the repetitions of each one's slowest client is what they tell,
        # an exact time (no histogram, no last bin's floor)
        specs = [(f"time ± {level} CI", "right", 0, lambda p: time_with_ci(p.metric("lat_mean_ns")))
                 if name == "lat mean" else (slowest_header("lat_p999_ns", "p99.9", [p.clients for p in points]),
                                             justify, 0, lambda p: _lat(p.metric("lat_p999_ns")))
                 if name == "p99.9"
                 else (name, justify, priority, cell)
                 for name, justify, priority, cell in specs if name not in NOT_FOR_OPERATIONS | {"p95", "p99"}]
    cells = _cells(specs, points)
    # a column that tells the rows apart (qd, jobs, clients, varies, lab with more than one value) is part of
    # the point: it stays however narrow the terminal
    specs = [(name, justify, 0 if priority == 1 and len({row[i] for row in cells}) > 1 else priority, cell)
             for i, (name, justify, priority, cell) in enumerate(specs)]
    widths, keep = _laid_out(specs, cells, width)
    if width is not None and table_width([widths[i] for i in keep]) > width:
        # the essential columns alone are too wide (a million IOPS with its interval): the interval as a share of
        # the mean and the warning mark beside the verdict, rather than a table cut at the terminal's edge
        specs = compact_specs(specs, rate=rate_unit(p.rw for p in points))
        cells = _cells(specs, points)
        widths, keep = _laid_out(specs, cells, width)
    wrapped = _wrap_to_fit(specs, widths, keep, width)
    table = Table(title=plain_cell(title, "table.title"), title_justify="left", header_style="bold")
    for i in keep:
        name, justify, _, _ = specs[i]
        if i in wrapped:  # a long label (a lab's settings) wraps between its words rather than push numbers off
            table.add_column(name, justify=justify, width=widths[i], overflow="fold")  # type: ignore[arg-type]
        else:
            table.add_column(name, justify=justify, no_wrap=True, min_width=widths[i])  # type: ignore[arg-type]
    for p, row in zip(points, cells, strict=True):
        table.add_row(*(plain_cell(row[i]) for i in keep),
                      style="red" if p.repetitions_ok < p.repetitions_total else None)
    return table


WRAPPABLE = frozenset({"lab", "varies", "fio options"})  # text that tells rows apart, wrapped when it must be
WRAPPED_MIN = 6  # the narrowest a wrapped column gets


def _wrap_to_fit(specs: Sequence[Spec], widths: list[int], keep: Sequence[int], width: int | None) -> set[int]:
    """Where the columns kept are still wider than ``width`` (the essential ones alone: a long lab label), the
    widest label columns (``WRAPPABLE``) are narrowed, widest first, to what fits: their text wraps. Changes
    ``widths``; the columns narrowed."""
    wrapped: set[int] = set()
    if width is None:
        return wrapped
    excess = table_width([widths[i] for i in keep]) - width
    for i in sorted((i for i in keep if specs[i][0] in WRAPPABLE), key=lambda i: -widths[i]):
        if excess <= 0:
            break
        cut = min(excess, widths[i] - WRAPPED_MIN)
        if cut > 0:
            widths[i] -= cut
            excess -= cut
            wrapped.add(i)
    return wrapped


# columns that say nothing of a Kubernetes volume operation (no blocks, queue, data moved or machine load measured)
NOT_FOR_OPERATIONS = frozenset({"bs", "qd", "dir", "CV", "MiB/s", "cpu %", "disk %", "slowest %"})
# (the rate column stays: each client's one operation over its time, summed; the time is the figure to read)


def table_width(widths: Sequence[int]) -> int:
    """The width of a rich table of these column widths: each with its border and padding (3), and the last
    border."""
    return sum(width + 3 for width in widths) + 1


def compact_specs(specs: Sequence[Spec], *, rate: str) -> list[Spec]:
    """``specs`` made narrower without cutting a number: the rate's interval as a percentage of its mean
    (``1,234,567 ± 9.8%``) and the warning mark in the verdict's cell (``cpu ⚠``) instead of a column of its own."""
    out: list[Spec] = []
    for name, justify, priority, cell in specs:
        if name.startswith(f"{rate} ± "):
            out.append((name, justify, priority, lambda p: iops_with_relative_ci(p.metric("iops"))))
        elif name == "verdict":
            out.append((name, justify, priority,
                        lambda p: p.bottleneck.short + (" ⚠" if p.warnings else "")))
        elif name != "!":
            out.append((name, justify, priority, cell))
    return out


def iops_with_relative_ci(estimate: Estimate | None) -> str:
    """A rate with the half-width of its 95 % interval as a share of the mean: ``1,234,567 ± 9.8%``."""
    if estimate is None:
        return "-"
    half = estimate.half_width
    if half is None or not estimate.mean:
        return iops_with_ci(estimate)
    share = 100 * half / abs(estimate.mean)
    return f"{estimate.mean:,.0f} ± {share:.1f}%" if share < 10 else f"{estimate.mean:,.0f} ± {share:.0f}%"


def fit_columns(widths: Sequence[int], priorities: Sequence[int], width: int | None) -> list[int]:
    """The columns to keep (in order) so that a table of these column ``widths`` (each with rich's border and
    padding, 3 characters) fits ``width``: columns go least essential first (highest priority number, the
    rightmost of a rank first); essential ones (priority 0) always stay. All of them without a width. Pure."""
    keep = list(range(len(widths)))
    if width is None:
        return keep
    for rank in sorted({p for p in priorities if p > 0}, reverse=True):
        for index in sorted((i for i in keep if priorities[i] == rank), reverse=True):
            if table_width([widths[i] for i in keep]) <= width:
                return keep
            keep.remove(index)
    return keep


def case_verdicts(points: Sequence[PointSummary]) -> list[tuple[str, BottleneckVerdict]]:
    """Each case once when its directions share one verdict (a point's own reading covers all of them), else each
    direction (a sweep reads each direction's curve: a mix's reads may be capped where its writes are not): its
    label and its bottleneck verdict."""
    lab_keys = varying_lab_keys(points)
    by_case: dict[tuple[tuple[int, ...], str], list[PointSummary]] = {}
    for p in points:  # a case of each run its own (`show --run all`: rows per run)
        by_case.setdefault((p.run_ids, p.case_id), []).append(p)
    out = []
    for members in by_case.values():
        verdicts = {(m.bottleneck.kind, m.bottleneck.evidence) for m in members}
        for m in members if len(verdicts) > 1 else members[:1]:
            out.append((run_prefix(m, points) + point_label(m, lab_keys=lab_keys, direction=len(verdicts) > 1,
                                                            options=True), m.bottleneck))
    return out


def verdict_lines(points: Sequence[PointSummary]) -> list[str]:
    """One line per case: the bottleneck and its evidence."""
    return [f"{label}: {verdict.kind.value} — {verdict.evidence}" for label, verdict in case_verdicts(points)]

