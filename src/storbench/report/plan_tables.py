"""What `storbench plan` shows: the cases as a table (a column per parameter that varies, a large sweep cut to its
first and last rows) and the lines under it (repetitions, estimated time, files laid out, fio, lab designs). Pure."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from storbench.fio.allowlist import SYNC_ENGINES
from storbench.model import Case, is_metadata, is_volume_operation
from storbench.report.tables import plain_cell
from storbench.schedule import PlanEstimate
from storbench.units import format_bytes, format_duration

PLAN_ROWS_HEAD = 20
PLAN_ROWS_TAIL = 10


# What a metadata operation's job has but does not depend on: one file operation at a time (no queue), no
# blocks transferred, no page cache to bypass, size based (each file once) with no warm-up to leave out.
NOT_FOR_METADATA = ("bs", "iodepth", "direct", "ramp")


def plan_parameters(case: Case) -> dict[str, str]:
    """A case's parameters as `storbench plan` shows them: a metadata operation without the block I/O ones
    (``NOT_FOR_METADATA``) and its runtime as what it is, a cap."""
    params = case.parameters()
    if is_volume_operation(case.workload.rw):  # no fio: the operation, its clients and the time it may take
        shown = {k: v for k, v in params.items() if k not in (*NOT_FOR_METADATA, "numjobs", "ioengine", "runtime")}
        return {**shown, "time limit": params["runtime"]}
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
        *([f"test files laid out: {format_bytes(estimate.layout_bytes)} ({_how_long_runs_are(estimate)})"]
          if estimate.layout_bytes else []),
        f"fio: {fio_binary} ({fio_version})",
    ]
    if estimate.destructive_cases:
        lines.append(f"DESTRUCTIVE: {estimate.destructive_cases} cases write to raw block devices")
    lines += [f"lab design: {design}" for design in estimate.lab_designs]
    return lines


def depth_notes(cases: Sequence[Case]) -> list[str]:
    """Cases whose iodepth never reaches the storage, said while the plan is cheap to change: a sync engine (fio
    caps its queue depth at 1) and libaio without direct (Linux submits buffered libaio one I/O at a time). Their
    points measure what iodepth 1 does, and a sweep of iodepth reads flat for that reason alone."""
    sync: dict[str, set[int]] = {}
    buffered: set[int] = set()
    for case in cases:
        w = case.workload
        if w.iodepth <= 1 or is_metadata(w.rw) or is_volume_operation(w.rw):
            continue
        if w.ioengine in SYNC_ENGINES:  # vsync too: fio caps it at 1 ("queue depth will be capped at 1")
            sync.setdefault(w.ioengine, set()).add(w.iodepth)
        elif w.ioengine == "libaio" and not w.direct:
            buffered.add(w.iodepth)
    lines = [f"⚠ iodepth {_depths(depths)} with ioengine {engine}: a sync engine keeps one I/O a job in flight (fio "
             "caps its queue depth at 1), so those cases measure what iodepth 1 does; numjobs or clients add load, "
             "or use libaio or io_uring" for engine, depths in sorted(sync.items())]
    if buffered:
        lines.append(f"⚠ iodepth {_depths(buffered)} with libaio and direct: false: Linux submits buffered libaio "
                     "one I/O at a time, so those cases measure what iodepth 1 does; set direct: true, or use "
                     "io_uring")
    return lines


def _depths(depths: set[int]) -> str:
    return ", ".join(str(d) for d in sorted(depths))
