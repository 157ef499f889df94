"""rich tables for the terminal. Pure: data in, a renderable out (the CLI prints it)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from storbench.model import Case
from storbench.plan import PlanEstimate
from storbench.report.records import CaseSummary
from storbench.units import format_bytes, format_duration, format_latency_ns


def _num(value: float | None, fmt: str = ",.0f") -> str:
    return "-" if value is None else format(value, fmt)


def results_table(rows: Sequence[CaseSummary], title: str) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold")
    for name, justify in (("run", "right"), ("target", "left"), ("rw", "left"), ("bs", "right"),
                          ("qd", "right"), ("jobs", "right"), ("dir", "left"), ("n", "right"), ("IOPS", "right"),
                          ("±CV", "right"), ("MiB/s", "right"), ("lat mean", "right"), ("p50", "right"),
                          ("p95", "right"), ("p99", "right"), ("p99.9", "right"), ("cpu usr/sys %", "right"),
                          ("disk %", "right")):
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for row in rows:
        n = f"{row.repetitions_ok}/{row.repetitions_total}"
        style = "red" if row.repetitions_ok < row.repetitions_total else None
        cv = "-" if row.iops_cv_pct is None else f"{row.iops_cv_pct:.1f}%"
        mib = None if row.bw_bytes_mean is None else row.bw_bytes_mean / 1048576
        cpu = "-" if row.cpu_usr_mean is None else f"{row.cpu_usr_mean:.0f}/{row.cpu_sys_mean or 0:.0f}"
        table.add_row(
            str(row.run_id), row.target, row.rw, row.bs, str(row.iodepth), str(row.numjobs), row.direction or "-", n,
            _num(row.iops_mean), cv, _num(mib, ",.1f"), format_latency_ns(row.lat_mean_ns),
            format_latency_ns(row.lat_p50_ns), format_latency_ns(row.lat_p95_ns),
            format_latency_ns(row.lat_p99_ns), format_latency_ns(row.lat_p999_ns), cpu,
            _num(row.disk_util_pct_mean, ".0f"), style=style,
        )
    return table


def plan_table(cases: Sequence[Case], title: str) -> tuple[Table, str]:
    """The cases, one row each, with a column per parameter that varies; constants go in a line."""
    params = [case.parameters() for case in cases]
    names = list(params[0]) if params else []
    for p in params[1:]:
        names += [k for k in p if k not in names]
    varying = [n for n in names if len({p.get(n, "") for p in params}) > 1]
    constant = [n for n in names if n not in varying and params and params[0].get(n, "")]
    table = Table(title=title, title_justify="left", header_style="bold")
    table.add_column("#", justify="right")
    table.add_column("case id", no_wrap=True)
    for name in varying:
        table.add_column(name, no_wrap=True)
    for index, (case, p) in enumerate(zip(cases, params, strict=True), 1):
        table.add_row(str(index), case.case_id, *(p.get(n, "") for n in varying))
    return table, "same for every case: " + ", ".join(f"{n}={params[0][n]}" for n in constant)


def plan_summary_lines(estimate: PlanEstimate, repeat: int, fio_version: str, fio_binary: str) -> list[str]:
    lines = [
        f"{estimate.cases} cases x {repeat} repetitions = {estimate.repetitions} fio runs",
        f"estimated time: {format_duration(estimate.seconds)}",
        f"test files laid out: {format_bytes(estimate.layout_bytes)} (runs are time based: the volume written "
        "while measuring depends on the storage's speed)",
        f"fio: {fio_binary} ({fio_version})",
    ]
    if estimate.destructive_cases:
        lines.append(f"DESTRUCTIVE: {estimate.destructive_cases} cases write to raw block devices")
    return lines
