"""What `storbench run` shows while it runs: a progress bar with ETA and the last result on a terminal, one line
per result otherwise (imported by `run` alone: rich's live display and the model load only for it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from storbench.fio.merge import merge_clients
from storbench.model import (
    RepetitionOutcome,
    ScheduledRepetition,
    Status,
    is_metadata,
    is_object,
    is_size_based,
    is_volume_operation,
    moves_data,
)
from storbench.report.events import event_text
from storbench.report.labels import direction_label
from storbench.safe_text import safe_text
from storbench.units import count_of, format_block_size, format_latency_ns

if TYPE_CHECKING:
    from storbench.events import RunEvent


def _outcome_line(item: ScheduledRepetition, outcome: RepetitionOutcome, distinct: str = "") -> str:
    w = item.case.workload
    operations = is_metadata(w.rw) or is_object(w.rw)
    shape = (f"files={w.files}" if is_metadata(w.rw) else f"bs={format_block_size(w.bs_bytes)} objects={w.files}"
             if is_object(w.rw) else f"bs={format_block_size(w.bs_bytes)} qd={w.iodepth}")
    jobs = f" jobs={w.numjobs}"
    if is_volume_operation(w.rw):
        shape, jobs = f"clients={item.case.clients}", ""
    label = f"{item.case.target.name} {w.rw} {shape}{jobs}{' ' + distinct if distinct else ''} " \
            f"#{item.rep_index + 1}"
    if outcome.status != Status.OK:
        return f"{label}: {outcome.status.value.upper()} {outcome.error}"
    if is_volume_operation(w.rw):  # each client's operation: its time
        times = sorted(m.lat.mean_ns for c in outcome.clients for m in c.directions)
        shown = ", ".join(format_latency_ns(t) for t in times[:8]) + (" ..." if len(times) > 8 else "")
        return f"{label}: {len(times)} done in {shown}"
    parts = []
    for m in merge_clients(outcome.clients, size_based=is_size_based(w.rw)):  # all clients: I/O summed, bins added
        p99 = m.lat.percentile_ns(99.0)
        rate = (f"{direction_label(w.rw, m.direction.value)} {m.iops:,.0f} ops/s" if operations else
                f"{m.direction.value} {m.iops:,.0f} IOPS")
        bandwidth = "" if not moves_data(w.rw) else f" {m.bw_bytes_per_s / 1048576:,.1f} MiB/s"
        parts.append(f"{rate}{bandwidth} mean {format_latency_ns(m.lat.mean_ns)} p99 {format_latency_ns(p99)}")
    clients = f" ({len(outcome.clients)} clients)" if len(outcome.clients) > 1 else ""
    return f"{label}: " + "; ".join(parts) + clients


class ConsoleObserver:
    """Progress bar with ETA and the last result, live on a terminal; one line per result otherwise."""

    def __init__(self, console: Console, distinct: Mapping[str, str] | None = None) -> None:
        self.run_id: int | None = None  # the run under way, once started (the advice after Ctrl-C names it)
        self.distinct = distinct or {}  # case id -> the hidden fields that tell it from the plan's other cases
        self.console = console
        self.interactive = console.is_terminal
        self.progress = Progress(
            TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), console=console,
        )
        self.last = Text("")
        self.live: Live | None = None
        self.task = self.progress.add_task("running", total=1)
        self.failed = 0

    def run_started(self, run_id: int, to_run: int, already_done: int, eta_s: float) -> None:
        self.run_id = run_id
        self.progress.update(self.task, total=to_run, description=f"run {run_id}")
        note = f" ({already_done} already stored, skipped)" if already_done else ""
        self.console.print(f"run {run_id}: {count_of(to_run, 'repetition')} to go{note}, about {eta_s:.0f}s")
        if self.interactive:
            self.live = Live(Group(self.progress, self.last), console=self.console, refresh_per_second=4,
                             transient=True)
            self.live.start()

    def repetition_started(self, item: ScheduledRepetition, position: int) -> None:
        w = item.case.workload
        self.progress.update(self.task, description=f"{w.rw} {format_block_size(w.bs_bytes)} qd{w.iodepth}")

    def repetition_finished(self, item: ScheduledRepetition, position: int, outcome: RepetitionOutcome) -> None:
        self.progress.advance(self.task)
        line = _outcome_line(item, outcome, self.distinct.get(item.case.case_id, ""))
        if outcome.status != Status.OK:
            self.failed += 1
        if self.live is not None:
            self.last.plain = "last: " + safe_text(line)
            if outcome.status != Status.OK:
                self.console.print(Text(safe_text(line), style="red"))
        else:
            self.console.print(f"[{position + 1}/{self.progress.tasks[0].total:.0f}] {line}", markup=False)

    def event(self, event: RunEvent) -> None:
        self.console.print(event_text(event), markup=False)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
