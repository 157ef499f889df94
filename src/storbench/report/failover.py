"""What a fault did, in words and figures (pure; issue 32): one line per point with faults (`show`, the end of
`run`), and per point the timeline of one repetition — IOPS window by window and the longest I/O of each window,
the fault and its undoing marked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from storbench.faults import PAST_TENSE
from storbench.fio.logs import LogRow
from storbench.model import Status, StoredRepetition
from storbench.report.figures import LATENCY_COLOR, THROUGHPUT_COLOR, FigureSpec, Mark, Series
from storbench.report.labels import rate_unit
from storbench.report.write_checks import none_lost_text, write_check_text
from storbench.safe_text import safe_text
from storbench.stats.estimate import Estimate
from storbench.stats.failover_points import (
    PointFailover,
    client_logs,
    measured_section,
    repetition_failover,
    run_length_s,
)
from storbench.stats.timeline import HOLD_BLOCKS, LEVEL_BLOCKS, merged_iops
from storbench.stats.write_checks import PointWriteCheck
from storbench.units import format_latency_ns

SECTION = "Failover"
CLIENTS_SHOWN = 8  # clients named in a `show` line (the report's strip has them all)
FAULT_COLOR, RESTORE_COLOR, CLUSTER_COLOR = "#d62728", "#2ca02c", "#1f77b4"


def _figure(value: Estimate | None, unit: str, digits: int = 2) -> str:
    """'1.52 s [1.47, 1.57]' (95 %), or the mean alone without an interval; '-' without a value."""
    if value is None:
        return "-"
    shown = f"{value.mean:.{digits}f}{unit}"
    if value.ci_low is not None and value.ci_high is not None:
        shown += f" [{value.ci_low:.{digits}f}, {value.ci_high:.{digits}f}]"
    return shown


def _in_some(value: Estimate, n: int) -> str:
    """' (in 2 of 3)' when a figure stands for some of a point's repetitions only; '' when for all."""
    return "" if value.n == n else f" (in {value.n} of {n})"


def _digits(seconds: Estimate) -> int:
    """Tenths of a second for a stall of a second or more, hundredths below (a 100 ms window's: not "0.0 s")."""
    return 1 if seconds.mean >= 1 else 2


def _ones(k: int, n: int) -> str:
    """' in 2 of 3' where something held in some of a point's repetitions only; '' in all."""
    return "" if k == n else f" in {k} of {n}"


def _times(k: int, n: int) -> str:
    """' (in 2 of 3)' when something happened in some of a point's repetitions only; '' when in all."""
    return f" ({_ones(k, n).lstrip()})" if k != n else ""


def _some_figure(value: Estimate | None, n: int, digits: int = 0) -> str:
    """A scorecard cell of a figure some repetitions may not have: '23 (in 1 of 3)'."""
    return _figure(value, "", digits) + (_in_some(value, n) if value is not None else "")


def longest_io_text(point: PointFailover) -> str:
    """The longest I/O of all the repetitions and, over several, the mean of each one's longest (a typical
    repetition's worst I/O, not the worst seen)."""
    longest = point.longest_io_ns
    if longest is None or point.longest_io_max_ns is None:
        return "-"
    shown = format_latency_ns(point.longest_io_max_ns)
    if longest.n > 1:
        shown += f" (each repetition's: mean {format_latency_ns(longest.mean)})"
    return shown


def failover_line(point: PointFailover, label: str) -> str:
    """One point's failover figures over its repetitions, each a fault: blackout, first I/O after the fault, dip,
    degraded level until back, level at the end, recovery, the longest I/O; intervals are 95 % t intervals over the
    repetitions (a figure of some of them says of how many)."""
    n = point.measured
    if n == 0:
        problems = sorted({r.problem for r in point.repetitions if r.problem})
        return f"  run {point.run_id} {label}: no failover figures ({'; '.join(problems)})"
    longest = point.longest_io_ns
    first = point.first_completion_s
    parts = [f"blackout {_figure(point.blackout_s, ' s')}" + (
                 f" (to the end in {point.stopped_for_good} of {n}: there a lower bound)"
                 if point.stopped_for_good else "") + (
                 f" (within chance{_ones(point.by_chance, n)}: gaps before the fault up to {point.gap_before_s:.1f}"
                 " s)" if point.by_chance else ""),
             "no I/O after the fault to the end" if first is None else
             f"first I/O {_figure(first, ' s')} after the fault{_in_some(first, n)}"]
    if point.restore_blackout_s is not None:
        parts.append(f"blackout {_figure(point.restore_blackout_s, ' s')} when undone" + (
            f" (to the end in {point.undo_stopped_for_good} of {n}: there a lower bound)"
            if point.undo_stopped_for_good else "") + (
            f" (within chance{_ones(point.restore_by_chance, n)})" if point.restore_by_chance else ""))
    if errors := point.undo_errors:  # read as never undone: what follows is the fault's still
        parts.append(f"its undoing failed in {len(errors)} of {n} ({errors[0]}): read as never undone there")
    parts.append(f"dip to {_figure(point.dip_pct, ' %', 0)} of the level before" + (
        "" if point.dip_before_pct is None else
        f" (the noise alone: as low as {_figure(point.dip_before_pct, ' %', 0)} in the windows before the fault)"))
    if point.degraded_pct is not None:
        parts.append(f"then {_figure(point.degraded_pct, ' %', 0)} of it until back{_in_some(point.degraded_pct, n)}")
    if point.end_pct is not None:
        parts.append(f"at the end {_figure(point.end_pct, ' %', 0)} of it{_in_some(point.end_pct, n)}")
    recovery = f"recovered {point.recovered} of {n}"
    if point.recovery_s is not None:
        recovery += f" (back {_figure(point.recovery_s, ' s', 1)} after the fault)"
    if point.not_recovered:
        recovery += f", not recovered {point.not_recovered}"
    if point.undecided:
        recovery += f", undecided or too short to tell {point.undecided}"
    parts.append(recovery)
    if longest is not None:
        parts.append(f"longest I/O {longest_io_text(point)}")
    if point.client_blackouts_s:
        shown = point.client_blackouts_s[:CLIENTS_SHOWN]
        parts.append("each client's blackout: " + ", ".join(f"{client} {_figure(seconds, ' s')}"
                                                            for client, seconds in shown)
                     + (f" (and {len(point.client_blackouts_s) - len(shown)} more)"
                        if len(point.client_blackouts_s) > len(shown) else ""))
    if (cluster := cluster_text(point)) != "-":
        parts.append(f"cluster: {cluster}")
    if (events := pod_events_text(point)) != "":
        parts.append(events)
    return (f"  run {point.run_id} {label}: {point.action} {point.target}, {n} repetition{'s' if n > 1 else ''}: "
            + "; ".join(parts))


EVENTS_SHOWN = 8  # Kubernetes events told at the most


def pod_events_text(point: PointFailover) -> str:
    """What Kubernetes said of the pods after the fault, in the first repetition that has events: 'Kubernetes
    (repetition 1): Killing +0.0 s, Scheduled +0.2 s, ... Started +1.0 s'; '' without."""
    found = next((r for r in point.repetitions if r.pod_events), None)
    if found is None:
        return ""
    shown = ", ".join(f"{event.reason} +{seconds:.1f} s" for seconds, event in found.pod_events[:EVENTS_SHOWN])
    more = f" (and {len(found.pod_events) - EVENTS_SHOWN} more)" if len(found.pod_events) > EVENTS_SHOWN else ""
    return f"Kubernetes (repetition {found.rep_index + 1}, whole seconds): {shown}{more}"


def failover_verdict(point: PointFailover, check: PointWriteCheck | None, label: str) -> str:
    """What the storage did, in one sentence built only from what the figures show: the stall (said only when its
    interval is above zero), on how many clients, the level after it and whether it came back, the cluster's own
    recovery, and the acknowledged writes read back. '' without figures."""
    n = point.measured
    if n == 0 or point.blackout_s is None:
        return ""
    named = point.target if "." in point.target else f"the {point.target}"  # osd.1, client.2; the server, the volume
    what = f"{named} was {PAST_TENSE.get(point.action, point.action)}"
    blackout, stopped = point.blackout_s, point.stopped
    # counted repetition by repetition: "in 2 of 3" is what happened, an interval reaching zero is not "not every
    # time"
    own = [(client, seconds, times) for client, seconds in point.client_blackouts_s
           if seconds.mean > 0 and (times := point.client_stopped(client))]
    # a client stopped in a repetition where the others went on: each stalled client's own stall
    per_client = bool(own) and max(times for _, _, times in own) > stopped
    if per_client:
        listed = "; ".join(f"{client} for {_figure(seconds, ' s', _digits(seconds))}{_times(times, n)}"
                           for client, seconds, times in own)
        total = len(point.client_blackouts_s)
        others = (f", on all of them at once in {stopped} of {n}" if stopped else
                  ", the others went on" if len(own) < total else ", never on all of them at once")
        said = f"I/O stopped on {len(own)} of {total} clients after {what}{others}: {listed}"
    elif stopped == 0 and point.by_chance:  # gaps as long as those the I/O had anyway: no evidence of a stall
        said = (f"I/O never stopped for longer than chance allows after {what} (the longest stretch without a "
                f"completion {_figure(blackout, ' s', _digits(blackout))}; before the fault, up to "
                f"{point.gap_before_s:.1f} s)")
    elif stopped == 0:
        said = f"I/O never stopped for a whole window after {what}"
    else:
        said = f"I/O stopped for {_figure(blackout, ' s', _digits(blackout))} after {what}{_times(stopped, n)}"
        if point.stopped_for_good:
            said += f", to the end of the run in {point.stopped_for_good} of {n} (there a lower bound)"
    if point.client_blackouts_s and stopped and not per_client:
        stalled = sum(1 for _, seconds in point.client_blackouts_s if seconds.mean >= blackout.mean / 2)
        total = len(point.client_blackouts_s)
        said += " on every client" if stalled == total else f" on {stalled} of {total} clients"
    parts = [said]
    level = "the level before"  # named once: "it" after the first part that names it
    if point.degraded_pct is not None:
        parts.append(f"then {_figure(point.degraded_pct, ' %', 0)} of {level} until it was back"
                     f"{_in_some(point.degraded_pct, n)}")
        level = "it"
    short = (f"too short to tell in {'every repetition' if point.too_short == n else point.too_short} (fewer than "
             f"{HOLD_BLOCKS} s of the run after the stall and the last fault action, or than {LEVEL_BLOCKS} s of I/O "
             "before the fault)") if point.too_short else ""
    if point.recovered == n:
        parts.append(f"back to at least 90 % of {level} in every repetition"
                     + (" that ended" if point.failed else ""))
    elif point.not_recovered:
        left = f", left at {_figure(point.left_pct, ' %', 0)}" if point.left_pct is not None else ""
        parts.append(f"shown below {level} to the end in {point.not_recovered} of {n}{left}"
                     + (f"; {short}" if short else ""))
    elif point.too_short == n:
        parts.append(f"whether it came back {short}")
    elif point.too_short:
        parts.append(f"back to at least 90 % of {level} in {point.recovered} of {n}, {short}"
                     + (", the rest undecided" if point.undecided > point.too_short else ""))
    else:
        parts.append(f"back to at least 90 % of {level} in {point.recovered} of {n}, the rest undecided")
    if point.cluster_disturbed and point.cluster_clean_s is not None:  # the repetitions whose PGs were clean again
        parts.append(f"every PG active+clean {_figure(point.cluster_clean_s, ' s', 1)} after the fault"
                     f"{_in_some(point.cluster_clean_s, n)}")
    if point.cluster_never_clean:
        parts.append(f"a PG not active+clean again within the watch in {point.cluster_never_clean} of {n}")
    if errors := point.undo_errors:
        parts.append(f"its undoing failed in {len(errors)} of {n}")
    if point.failed:  # none of the figures: "every repetition" had counted only the ones that ended
        parts.append(f"{point.failed} more {'repetition' if point.failed == 1 else 'repetitions'} with the fault "
                     f"failed, left out of these figures ({safe_text(point.failed_error)[:160]})")
    if check is not None and check.checked:
        bad = check.total.bad
        said = (f"acknowledged writes lost or damaged: {bad:,} of the {check.blocks_read:,} blocks read back did "
                f"not hold their last acknowledged write ({check.total.acknowledged:,} writes acknowledged)" if bad
                else none_lost_text(check.total))
        if check.unchecked:  # what was not read back is no evidence either way
            said += (f" in the {check.checked} of {check.checked + check.unchecked} repetitions read back; the "
                     f"other {check.unchecked} not checked")
        parts.append(said)
    elif check is not None and check.unchecked:
        parts.append(f"acknowledged writes not checked in any of {check.unchecked} repetitions")
    return f"{label}: " + "; ".join(parts) + "."


def cluster_text(point: PointFailover) -> str:
    """What the lab cluster did after the fault, from its PGs watched through the repetitions and their settling:
    'every PG active+clean again 38.2 s [30.1, 46.3] after the fault (at most 1,234 objects degraded)'; '-' when
    nothing was watched."""
    if point.degraded_objects_max is None:
        return "-"
    if not point.cluster_disturbed:
        return "every PG stayed active+clean"
    text = f"every PG active+clean again {_figure(point.cluster_clean_s, ' s', 1)} after the fault"
    if point.cluster_disturbed < point.measured:
        text += f" (in {point.cluster_disturbed} of {point.measured} a PG left active+clean)"
    if point.cluster_never_clean:
        text += f"; not within the watch in {point.cluster_never_clean}"
    if point.degraded_objects_max:
        text += f"; at most {point.degraded_objects_max:,} objects degraded"
    return text


def cluster_cell(point: PointFailover) -> str:
    """The scorecard's short form of ``cluster_text``: '68.7 [51.3, 86.1]; 141 objects degraded at most'."""
    if point.degraded_objects_max is None:
        return "-"
    if not point.cluster_disturbed:
        return "stayed clean"
    cell = _figure(point.cluster_clean_s, "", 1)
    if point.cluster_never_clean:
        cell += f" ({point.cluster_never_clean} never)"
    return cell + (f"; {point.degraded_objects_max:,} objects degraded at most" if point.degraded_objects_max else "")


SCORECARD_CAPTION = ("Each repetition is one fault; figures are means with 95 % intervals over the repetitions (a "
                     "figure of some of them says of how many). Blackout: the longest time no I/O completed (fio's "
                     "100 ms logs); recovered: the last third of the run after the stall and the last fault action "
                     "(an undoing) shown at least 90 % of the level before the fault; dip: the lowest 100 ms window "
                     "after the fault, beside the lowest of as many before it (what the noise alone gives); until "
                     "back: a recovered run's level from the stall to then; at the end: the seconds that test read "
                     "(storbench docs methodology failover).")
SCORECARD_HEAD = ("point", "fault", "n", "blackout (s)", "first I/O after (s)", "blackout when undone (s)",
                  "dip (% of before)", "until back (% of before)", "at the end (% of before)", "recovered",
                  "longest I/O",
                  "every PG active+clean after (s)", "acknowledged writes")

def _dip_cell(point: PointFailover) -> str:
    """'21 [18, 24]; before the fault 66': the dip beside the lowest of as many windows before the fault."""
    before = point.dip_before_pct
    return _figure(point.dip_pct, "", 0) + ("" if before is None else f"; before the fault {before.mean:.0f}")


def scorecard_rows(points: Sequence[PointFailover], labels: Mapping[tuple[str, int], str],
                   checks: Sequence[PointWriteCheck] = ()) -> list[tuple[str, ...]]:
    """The report's failover table: one row per point, its figures with 95 % intervals over its repetitions
    (``SCORECARD_HEAD``), and what `check_writes` found. ``labels``: (case id, run) -> the point's label."""
    checked = {(c.run_id, c.case_id): c for c in checks}
    rows: list[tuple[str, ...]] = []
    for p in points:
        n = p.measured
        recovered = f"{p.recovered} of {n}" + (f" ({p.not_recovered} not)" if p.not_recovered else "")
        rows.append((labels.get((p.case_id, p.run_id), p.case_id), f"{p.action} {p.target}", str(n),
                     _figure(p.blackout_s, ""), _some_figure(p.first_completion_s, n, 2),
                     _figure(p.restore_blackout_s, ""),
                     _dip_cell(p), _some_figure(p.degraded_pct, n), _some_figure(p.end_pct, n),
                     recovered if n else "-",
                     longest_io_text(p), cluster_cell(p),
                     write_check_text(checked.get((p.run_id, p.case_id)))))
    return rows


def failover_lines(points: Sequence[PointFailover], labels: Mapping[str, str],
                   checks: Sequence[PointWriteCheck] = ()) -> list[str]:
    """The failover block: what the figures mean, one line of figures per point (``labels``: case id -> its
    label), then each point's verdict in a sentence."""
    if not points:
        return []
    checked = {(c.run_id, c.case_id): c for c in checks}
    verdicts = [verdict for p in points
                if (verdict := failover_verdict(p, checked.get((p.run_id, p.case_id)),
                                                f"run {p.run_id} {labels.get(p.case_id, p.case_id)}"))]
    return ["failover (each repetition one fault; 95 % intervals over the repetitions; blackout: the longest time "
            "no I/O completed, from fio's 100 ms logs; recovered: the last third of the run after the stall and the "
            "last fault action (an undoing) shown at least 90 % of the level before the fault; "
            "storbench docs methodology failover):",
            *(failover_line(p, labels.get(p.case_id, p.case_id)) for p in points),
            *(f"  in short: {verdict}" for verdict in verdicts)]


def _seconds(rows: Sequence[LogRow], start_ms: int) -> tuple[float, ...]:
    return tuple((row.t_ms - start_ms) / 1000 for row in rows)


def timeline_figure(repetition: StoredRepetition, figure_id: str, label: str) -> FigureSpec | None:
    """One repetition's I/O window by window through its measured section: all clients' IOPS (a window without a
    completion is 0: the stall), the longest I/O of each window on the right axis, the fault and its undoing
    marked. None without a fault done or logs."""
    found = repetition_failover(repetition)
    window = repetition.case.workload.timeline_window_ms
    logs = client_logs(repetition)
    if found.fault is None or window is None or not logs:
        return None
    start_ms, end_ms = measured_section(logs, window, run_length_s(repetition), round(found.fault.at_s * 1000))
    rate = rate_unit([repetition.case.workload.rw])
    iops = merged_iops(logs, window, start_ms, end_ms)
    xs = tuple((k + 0.5) * window / 1000 for k in range(len(iops)))
    lat = sorted((row for log in logs for row in log.max_lat if start_ms < row.t_ms <= end_ms), key=lambda r: r.t_ms)
    series = [Series(name=f"{rate}, all clients", x=xs, y=tuple(iops), mode="lines", color=THROUGHPUT_COLOR),
              Series(name="longest I/O in the window (ms)", x=_seconds(lat, start_ms),
                     y=tuple(row.value / 1e6 for row in lat), mode="markers", marker_size=4, color=LATENCY_COLOR,
                     y2=True)]
    marks = [Mark((found.fault.at_s * 1000 - start_ms) / 1000, f"{found.fault.action} {found.fault.target}",
                  FAULT_COLOR)]
    if found.restore is not None:
        marks.append(Mark((found.restore.at_s * 1000 - start_ms) / 1000, "undone", RESTORE_COLOR))
    clean_s = found.cluster.clean_after_s if found.cluster is not None else None
    at = (found.fault.at_s * 1000 - start_ms) / 1000 + (clean_s or 0.0)
    if clean_s is not None and at <= (end_ms - start_ms) / 1000:
        marks.append(Mark(at, "every PG active+clean", CLUSTER_COLOR))
    for seconds, event in found.pod_events:  # a pod made again after a deletion: when Kubernetes started it
        at = (found.fault.at_s * 1000 - start_ms) / 1000 + seconds
        if event.reason == "Started" and at <= (end_ms - start_ms) / 1000:
            marks.append(Mark(at, "pod started", CLUSTER_COLOR))
    figures = found.figures
    notes: tuple[tuple[str, str], ...] = ()
    if figures is not None:
        notes = (("blackout", f"{figures.blackout_s:.2f} s"), ("recovery", figures.recovery.value))
    return FigureSpec(
        figure_id=figure_id, title=f"{label}: I/O through the fault (repetition {repetition.rep_index + 1})",
        x_label="seconds into the measured section", y_label=rate, y2_label="longest I/O (ms)",
        series=tuple(series), section=SECTION, x_marks=tuple(marks), notes=notes,
        y_range=(0.0, max(iops, default=1.0) * 1.15 or 1.0), x_range=(0.0, (end_ms - start_ms) / 1000),
        caption=f"fio's IOPS log in {window} ms windows on the wall clock, all clients summed (a window in which "
        "nothing completed is 0: the stall), and the longest completion latency of each window (right axis). "
        "Red: when the fault was done; green: when it was undone; blue: when every placement group of the lab "
        "cluster was active+clean again, or when Kubernetes started a pod (when that came before the end).")


def client_blackout_figure(point: PointFailover, label: str) -> FigureSpec | None:
    """A point with several clients: each client's own blackout (the longest time none of its I/O completed,
    ending after the fault), a bar each with its 95 % interval over the repetitions. None with one client."""
    if not point.client_blackouts_s:
        return None
    clients = tuple(client for client, _ in point.client_blackouts_s)
    values = [seconds for _, seconds in point.client_blackouts_s]
    arms = tuple((v.ci_high - v.mean) if v.ci_high is not None else 0.0 for v in values)
    # the lower arm to the interval's low end, cut at 0 (a blackout is never below it): the upper arm used both
    # ways had drawn 0.04 s [0.00, 0.19] down to -0.12 s
    below = tuple(v.mean - max(v.ci_low, 0.0) if v.ci_low is not None else 0.0 for v in values)
    return FigureSpec(
        figure_id=f"failover-clients-run{point.run_id}-{point.case_id}",
        title=f"{label}: each client's blackout ({point.action} {point.target})",
        x_label="client", y_label="blackout (s)", x_categories=clients, section=SECTION,
        series=(Series(name="blackout", x=clients, y=tuple(v.mean for v in values), mode="bar",
                       error_y=arms if any(arms) else None, error_y_minus=below if any(arms) else None,
                       color=FAULT_COLOR),),
        caption="Each fio client's longest time without a completion that ended after the fault, mean over the "
        "repetitions with its 95 % interval: a fault that stalls one client and not the others shows here, "
        "where the timeline sums them.")


def timeline_figures(repetitions: Sequence[StoredRepetition], labels: Mapping[str, str],
                     points: Sequence[PointFailover] = ()) -> list[FigureSpec]:
    """One timeline per point with faults (its first repetition that did its fault and succeeded: a failed one's is
    none of the figures beside it), and with several clients each client's blackout. Over several runs each title
    says its run (one case's figures of two runs had read alike)."""
    several = len({r.run_id for r in repetitions if r.faults} | {p.run_id for p in points}) > 1

    def label(case_id: str, run_id: int) -> str:
        return (f"run {run_id}: " if several else "") + labels[case_id]

    figures: list[FigureSpec] = [figure for p in points if p.case_id in labels
                                 and (figure := client_blackout_figure(p, label(p.case_id, p.run_id))) is not None]
    seen: set[tuple[int, str]] = set()
    for r in repetitions:
        key = (r.run_id, r.case.case_id)
        if key in seen or not r.faults or r.case.case_id not in labels or r.status != Status.OK:
            continue
        figure = timeline_figure(r, f"failover-run{r.run_id}-{r.case.case_id}", label(r.case.case_id, r.run_id))
        if figure is not None:
            seen.add(key)
            figures.append(figure)
    return figures
