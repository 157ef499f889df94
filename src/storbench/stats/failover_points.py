"""A point's failover figures (pure; issue 32): each repetition of a plan with faults is one fault, read from its
fio timeline logs and the fault's recorded time (`stats.timeline.failover`); a point's figures are their means with
t intervals over its repetitions (the repetition, one fault on one instance of the lab, is the sample unit).

The first fault a repetition did is the one its timeline is read against (a stall that begins from its next fault
is that one's); a repetition whose fault could not be
done (its record carries an error) or that has no logs gives no failover figures, and says so. The measured
section is where fio's logs say it was (fio logs after its ramp: from one window before the first row, for the
runtime, or to the last row when later), not where the run loop expected it: fio's own start-up (0.1-0.5 s on the
volume lab) comes between the two, so a fault lands that much earlier into the measured section than planned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from storbench.faults import LAST_SECOND_S
from storbench.fio.jobfile import TIMELINE_LOG, timeline_log_client
from storbench.fio.logs import LogRow, parse_log
from storbench.model import Status, StoredRepetition, is_size_based
from storbench.model.fault_record import FaultRecord
from storbench.stats.estimate import Estimate, estimate
from storbench.stats.timeline import ClientLog, Failover, Recovery, failover
from storbench.telemetry.cluster_state import LOG_NAME, ClusterRecovery, cluster_recovery
from storbench.telemetry.cluster_state import parse_log as parse_cluster_log
from storbench.telemetry.k8s_events import LOG_NAME as EVENTS_LOG
from storbench.telemetry.k8s_events import PodEvent, after_fault
from storbench.telemetry.k8s_events import parse_log as parse_events_log


@dataclass(frozen=True)
class RepetitionFailover:
    repetition_id: int
    rep_index: int
    fault: FaultRecord | None  # the fault its figures are read against (None: none was done)
    restore: FaultRecord | None
    figures: Failover | None  # None: no fault done, or no timeline logs
    problem: str = ""  # why there are no figures
    cluster: ClusterRecovery | None = None  # the lab cluster's PGs after the fault (a Ceph lab's, watched)
    pod_events: tuple[tuple[float, PodEvent], ...] = ()  # Kubernetes' events about the pods from the fault on
    undo_error: str = ""  # its undoing was tried and failed (the lab's error): its figures read as never undone


def client_logs(repetition: StoredRepetition) -> list[ClientLog]:
    """The repetition's logs as one client per fio client: every job's IOPS rows together, and their longest
    latencies (`fio.jobfile.timeline_logs` names them ``timeline_iops.<job>.log`` and ``timeline_clat.<job>.log``,
    a fio server's with its name after them; a log that does not parse is left out (`timeline_logs` says which
    for a repetition's figures), and a client that logged no IOPS row has no timeline)."""
    return timeline_logs(repetition)[0]


def timeline_logs(repetition: StoredRepetition) -> tuple[list[ClientLog], str | None]:
    """`client_logs`, and the first of the logs that does not parse, with why (None when all do): each read once."""
    iops: dict[str, list[LogRow]] = {}
    lat: dict[str, list[LogRow]] = {}
    bad: str | None = None
    for name, text in repetition.logs:
        if not name.startswith(f"{TIMELINE_LOG}_"):  # a lab's own log (the cluster's PGs), not fio's
            continue
        try:
            rows = parse_log(text)
        except ValueError as exc:
            bad = bad or f"{name}: {exc}"
            continue
        client = timeline_log_client(name) or (repetition.clients[0].client if repetition.clients else "local")
        (iops if "_iops." in name else lat).setdefault(client, []).extend(rows)
    return [ClientLog(client, tuple(sorted(rows, key=lambda r: r.t_ms)), tuple(lat.get(client, ())))
            for client, rows in sorted(iops.items()) if rows], bad


def repetition_failover(repetition: StoredRepetition) -> RepetitionFailover:
    """One repetition read against its first fault done."""
    done = [f for f in repetition.faults if not f.restore and not f.error]
    fault = done[0] if done else None
    # its own restore: the first after it (an earlier fault of the same action and target that failed is undone too)
    after = repetition.faults[repetition.faults.index(fault) + 1:] if fault is not None else ()
    own = next((f for f in after if f.restore and f.target == fault.target and f.action == fault.action),
               None) if fault is not None else None
    restore = own if own is not None and not own.error else None
    undo_error = own.error if own is not None else ""
    if fault is None:
        failed = next((f for f in repetition.faults if f.error), None)
        problem = f"its fault was not done: {failed.error}" if failed else "no fault was done"
        return RepetitionFailover(repetition.repetition_id, repetition.rep_index, None, None, None, problem)
    window = repetition.case.workload.timeline_window_ms
    logs, bad = timeline_logs(repetition)
    if bad is not None:  # read without that client, its stall would go unseen
        return RepetitionFailover(repetition.repetition_id, repetition.rep_index, fault, restore, None,
                                  f"a timeline log does not read ({bad})")
    if window is None or not logs:
        return RepetitionFailover(repetition.repetition_id, repetition.rep_index, fault, restore, None,
                                  NO_CYCLE_TIMELINE if repetition.case.workload.rw == "metadata"
                                  else "no timeline logs")
    ran_s = run_length_s(repetition)
    later = [f.at_s for f in done[1:] if f.at_s >= fault.at_s]  # the next fault's stalls are its own
    figures = logs_failover(logs, window, ran_s, round(fault.at_s * 1000),
                            round(restore.at_s * 1000) if restore is not None else None,
                            too_late=TOO_LATE if ran_s == repetition.case.workload.runtime_s
                            else done_before(repetition, ran_s),
                            next_fault_ms=round(min(later) * 1000) if later else None,
                            actions_ms=tuple(round(f.at_s * 1000) for f in repetition.faults if not f.error))
    if isinstance(figures, str):
        return RepetitionFailover(repetition.repetition_id, repetition.rep_index, fault, restore, None, figures)
    cluster_log = next((text for name, text in repetition.logs if name == LOG_NAME), None)
    cluster = cluster_recovery(parse_cluster_log(cluster_log), round(fault.at_s * 1000)) if cluster_log else None
    events_log = next((text for name, text in repetition.logs if name == EVENTS_LOG), None)
    events = tuple(after_fault(parse_events_log(events_log), round(fault.at_s * 1000))) if events_log else ()
    return RepetitionFailover(repetition.repetition_id, repetition.rep_index, fault, restore, figures,
                              cluster=cluster, pod_events=events, undo_error=undo_error)


# the last row may come this much before the planned end of a run whose I/O never stopped (a plan's fault is
# refused this close to the end: `faults.fault_problems`)
END_SLACK_MS = round(LAST_SECOND_S * 1000)


def measured_section(logs: Sequence[ClientLog], window_ms: int, runtime_s: float, fault_ms: int | None = None,
                     start_ms: int | None = None) -> tuple[int, int]:
    """(start, end) of the measured section in epoch ms, from fio's logs (at least one row): one window before the
    first row (or ``start_ms``), to the last row (fio logs no partial last window, and its clients start a little
    apart: the last row comes up to a few windows before the planned end), or for ``runtime_s`` when the last row is
    more than END_SLACK_MS (at least three windows) short of it, or no later than the window of the fault at
    ``fault_ms`` (I/O that never came back, however late the fault)."""
    rows = [row.t_ms for log in logs for row in log.iops]
    start = min(rows) - window_ms if start_ms is None else start_ms
    last = max(rows)
    planned_end = start + round(runtime_s * 1000)
    stopped = last < planned_end - max(END_SLACK_MS, 3 * window_ms) or (
        fault_ms is not None and last <= fault_ms + window_ms < planned_end)
    return start, planned_end if stopped else last


TOO_LATE = "its fault came in the last second of the run: too late to read what it did"
NO_CYCLE_TIMELINE = ("no timeline: the metadata cycle's phases (create, stat, delete) run one after another at "
                     "rates of their own; give a fault to one operation at a time (rw: [create, stat, delete])")


def run_length_s(repetition: StoredRepetition) -> float:
    """How long the measured section was to run: the runtime of a time-based job, or of a size-based one (metadata
    operations, S3 deletes: each file or object once, the runtime only a cap) that fio did not end before its cap;
    a size-based job's own time (fio's, its longest job's) when fio ended it sooner: its files done, so its logs
    stop there and the I/O did not stop for good."""
    w = repetition.case.workload
    if not is_size_based(w.rw) or w.timeline_window_ms is None:
        return w.runtime_s
    ran_ms = max((d.runtime_ms for c in repetition.clients for d in c.directions), default=0)
    cap_ms = round(w.runtime_s * 1000) - max(END_SLACK_MS, 3 * w.timeline_window_ms)
    return ran_ms / 1000 if 0 < ran_ms < cap_ms else w.runtime_s


def done_before(repetition: StoredRepetition, ran_s: float) -> str:
    """Why a size-based repetition that ended before its cap has no figures for a fault in its last second or
    after it."""
    return (f"its fault came after fio had done its {repetition.case.workload.files:,} files a job (size based: "
            f"{ran_s:.1f} s, its runtime only a cap): more files make a run long enough to read the fault in")


def too_early(gap_s: float) -> str:
    """Why a fault ``gap_s`` before fio's first logged I/O is not read."""
    return (f"its fault came {gap_s:.1f} s before fio's first I/O was logged (fio still starting: opening or making "
            "its files): no I/O before it to read it against; a later `at` leaves room for the start")


def logs_failover(logs: Sequence[ClientLog], window_ms: int, runtime_s: float, fault_ms: int,
                  restore_ms: int | None = None, too_late: str = TOO_LATE, next_fault_ms: int | None = None,
                  actions_ms: Sequence[int] = ()) -> Failover | str:
    """The failover figures of clients' logs (each with at least one row) of a run of ``runtime_s``: its measured
    section, and each client's own end by the same rule (a client whose log ends a little before another's did not
    stall at the end). Why there are none instead: a fault within END_SLACK_MS of the planned end (there the logs
    end a little early anyway, so no row after it is no evidence that the I/O stopped, and a row is none that it did
    not), or before the section's start (fio not yet doing I/O: a stall from it would be taken for fio's start);
    ``too_late`` says the first."""
    start_ms, end_ms = measured_section(logs, window_ms, runtime_s, fault_ms)
    if fault_ms > start_ms + round(runtime_s * 1000) - max(END_SLACK_MS, 3 * window_ms):
        return too_late
    if fault_ms < start_ms:
        return too_early((min(row.t_ms for log in logs for row in log.iops) - fault_ms) / 1000)
    ends = {log.client: measured_section([log], window_ms, runtime_s, fault_ms, start_ms)[1] for log in logs}
    return failover(logs, window_ms, fault_ms, start_ms, end_ms, restore_ms, ends, next_fault_ms, actions_ms)


@dataclass(frozen=True)
class PointFailover:
    """A point's failover figures over its repetitions (each one fault)."""

    case_id: str
    run_id: int
    action: str
    target: str
    repetitions: tuple[RepetitionFailover, ...]
    blackout_s: Estimate | None
    restore_blackout_s: Estimate | None  # at the undoing (None: nothing undone within the runs)
    first_completion_s: Estimate | None
    dip_pct: Estimate | None
    degraded_pct: Estimate | None  # over the repetitions that recovered after a degraded stretch
    recovery_s: Estimate | None  # over the repetitions that recovered
    longest_io_ns: Estimate | None  # each repetition's longest I/O, over the repetitions
    recovered: int
    not_recovered: int
    undecided: int  # undecided or too short to tell
    # the lab cluster's own recovery (a Ceph lab, watched through the repetition and its settling): every PG
    # active+clean again after the fault (over the repetitions where PGs left active+clean and came back), how many
    # repetitions a PG left active+clean in, how many it never came back in while watched, most degraded objects
    client_blackouts_s: tuple[tuple[str, Estimate], ...] = ()  # each fio client's own (several clients)
    cluster_clean_s: Estimate | None = None
    cluster_disturbed: int = 0
    cluster_never_clean: int = 0
    degraded_objects_max: int | None = None
    longest_io_max_ns: int | None = None  # the longest I/O of all the repetitions
    end_pct: Estimate | None = None  # the level at the end, over the repetitions the recovery test could read
    left_pct: Estimate | None = None  # the level at the end of the repetitions shown not back (what they were left at)
    dip_before_pct: Estimate | None = None  # the lowest of as many windows before the fault: the noise's own dip
    # repetitions with the fault that failed (fio's error, the watchdog): none of the figures, said beside them
    failed: int = 0
    failed_error: str = ""  # the first one's error
    too_short: int = 0  # of ``undecided``, those too short to tell (fewer than HOLD_BLOCKS s after the stall and the
    # last fault action, or no level before the fault)

    @property
    def measured(self) -> int:
        return sum(1 for r in self.repetitions if r.figures is not None)

    @property
    def figures(self) -> tuple[Failover, ...]:
        return tuple(r.figures for r in self.repetitions if r.figures is not None)

    @property
    def stopped(self) -> int:
        """In how many repetitions the I/O of all clients together stopped for a whole window or more, beyond what
        the gaps before the fault make likely by chance (`Failover.stalled`)."""
        return sum(1 for f in self.figures if f.stalled)

    @property
    def by_chance(self) -> int:
        """In how many repetitions the blackout was no longer than chance allows (a stall that is no evidence)."""
        return sum(1 for f in self.figures if f.blackout_s > 0 and f.by_chance)

    @property
    def restore_by_chance(self) -> int:
        """In how many repetitions the stall after the undoing was no longer than chance allows."""
        return sum(1 for f in self.figures if (f.restore_blackout_s or 0) > 0 and f.restore_by_chance)

    @property
    def gap_before_s(self) -> float:
        """The longest stretch without a completion before the fault, over the repetitions."""
        return max((f.gap_before_s for f in self.figures), default=0.0)

    @property
    def stopped_for_good(self) -> int:
        """In how many repetitions no I/O completed after the fault to the end of the run."""
        return sum(1 for f in self.figures if f.first_completion_s is None)

    @property
    def undo_stopped_for_good(self) -> int:
        """In how many repetitions no I/O completed after the undoing to the end of the run."""
        return sum(1 for f in self.figures if f.restore_open)

    @property
    def undo_errors(self) -> tuple[str, ...]:
        """The errors of the undoings that failed, one per repetition with figures whose undoing failed."""
        return tuple(r.undo_error for r in self.repetitions if r.undo_error and r.figures is not None)

    def client_stopped(self, client: str) -> int:
        """In how many repetitions ``client``'s own I/O stopped for a whole window or more, beyond chance."""
        return sum(1 for f in self.figures if f.client_stalled(client))


def _estimate(values: Sequence[float | None]) -> Estimate | None:
    return estimate([v for v in values if v is not None])


def _per_client(figures: Sequence[Failover]) -> tuple[tuple[str, Estimate], ...]:
    """Each client's own blackout over the repetitions, when there are several clients."""
    by_client: dict[str, list[float]] = {}
    for f in figures:
        for client, seconds in f.client_blackouts_s:
            by_client.setdefault(client, []).append(seconds)
    if len(by_client) < 2:
        return ()
    return tuple((client, found) for client, values in sorted(by_client.items())
                 if (found := estimate(values)) is not None)


def point_failovers(repetitions: Sequence[StoredRepetition]) -> list[PointFailover]:
    """One entry per (run, case) whose repetitions had faults, in the order first seen; failed repetitions are
    left out (a fault that made fio fail is in its error)."""
    groups: dict[tuple[int, str], list[RepetitionFailover]] = {}
    failed: dict[tuple[int, str], list[StoredRepetition]] = {}
    for r in repetitions:
        if r.faults and r.status == Status.OK:
            groups.setdefault((r.run_id, r.case.case_id), []).append(repetition_failover(r))
        elif r.faults:  # e.g. I/O that never came back, fio then ended by the watchdog
            failed.setdefault((r.run_id, r.case.case_id), []).append(r)
    out = []
    for (run_id, case_id), found in groups.items():
        figures = [f.figures for f in found if f.figures is not None]
        first = next((f.fault for f in found if f.fault is not None), None)
        states = [f.recovery for f in figures]
        clusters = [f.cluster for f in found if f.cluster is not None and f.figures is not None]
        out.append(PointFailover(
            case_id=case_id, run_id=run_id, action=first.action if first else "", target=first.target if first else "",
            repetitions=tuple(found),
            blackout_s=_estimate([f.blackout_s for f in figures]),
            restore_blackout_s=_estimate([f.restore_blackout_s for f in figures]),
            first_completion_s=_estimate([f.first_completion_s for f in figures]),
            dip_pct=_estimate([f.dip_pct for f in figures]),
            dip_before_pct=_estimate([f.dip_before_pct for f in figures]),
            degraded_pct=_estimate([f.degraded_pct for f in figures]),
            recovery_s=_estimate([f.recovery_s for f in figures]),
            longest_io_ns=_estimate([f.longest_io_ns for f in figures]),
            recovered=states.count(Recovery.RECOVERED), not_recovered=states.count(Recovery.NOT_RECOVERED),
            undecided=sum(1 for s in states if s in (Recovery.UNDECIDED, Recovery.UNTOLD)),
            too_short=states.count(Recovery.UNTOLD),
            client_blackouts_s=_per_client(figures),
            cluster_clean_s=_estimate([c.clean_after_s for c in clusters]),
            cluster_disturbed=sum(1 for c in clusters if c.disturbed),
            cluster_never_clean=sum(1 for c in clusters if c.disturbed and c.clean_after_s is None),
            degraded_objects_max=max((c.degraded_objects_max for c in clusters), default=None),
            longest_io_max_ns=max((f.longest_io_ns for f in figures if f.longest_io_ns is not None), default=None),
            end_pct=_estimate([f.end_pct for f in figures]),
            left_pct=_estimate([f.end_pct for f in figures if f.recovery is Recovery.NOT_RECOVERED]),
            failed=len(failed.get((run_id, case_id), [])),
            failed_error=next((r.error or r.status.value for r in failed.get((run_id, case_id), [])), "")))
    return out
