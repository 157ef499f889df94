"""A run's events (`storbench.events`) in words, one line each, for the terminal (`storbench run`). Pure."""

from __future__ import annotations

from storbench.events import (
    BudgetReached,
    CiLook,
    CleanUpFailed,
    LabBringingUp,
    LabHealed,
    LabLeftAlone,
    LabTornDown,
    LabUp,
    LaidOut,
    LayoutFailed,
    LinksShaped,
    OsdCpusSet,
    OsdsRestarted,
    PlanVersionAdded,
    PointRestarted,
    PreconditionRan,
    RunEvent,
    SearchAnswered,
    SearchStopped,
    SequentialLook,
    SteadyProgress,
    StoppingRuleChanged,
    TestDataCleaned,
)
from storbench.model import Case, is_volume_operation, setting_text
from storbench.report.labels import comparison_label
from storbench.report.steady import change_words
from storbench.stats.slo import Verdict, verdict
from storbench.stats.steady import SteadyStatus
from storbench.units import format_block_size, format_bytes, format_latency_ns, format_link_rate


def case_text(case: Case, leave_out: str = "") -> str:
    """A case in the run's progress lines: target, pattern, block size, queue depth, jobs, clients (beyond one) and
    lab settings; ``leave_out`` the load a search varies."""
    w = case.workload
    parts = [case.target.name, w.rw]
    if not is_volume_operation(w.rw):  # one Kubernetes operation per client: no blocks, queue or jobs
        parts += [format_block_size(w.bs_bytes)]
        parts += [f"qd={w.iodepth}"] if leave_out != "iodepth" else []
        parts += [f"jobs={w.numjobs}"] if leave_out != "numjobs" else []
    parts += [f"clients={case.clients}"] if leave_out != "clients" and case.clients > 1 else []
    parts += [case.lab.describe()] if case.lab.pairs() else []
    return " ".join(parts)


def _settings(pairs: tuple[tuple[str, str], ...]) -> str:
    """Lab settings as `LabPoint.describe` gives them: with their units."""
    return " ".join(f"{name}={setting_text(name, value)}" for name, value in pairs)


def _lab_up(e: LabUp) -> str:
    if e.servers is not None:
        return f"{e.lab} lab: {e.servers} fio servers up" + (f" in {e.seconds:.1f}s" if e.seconds is not None else "")
    took = f" in {e.seconds:.0f}s" if e.seconds is not None else ""
    where = f" ({e.where})" if e.where else ""
    return f"{e.lab} lab: up{took}{where}" + (f": {e.detail}" if e.detail else "")


def _cleaned(e: TestDataCleaned) -> str:
    said = []
    if e.removed:
        kept = "" if e.unit == "objects" else " (keep_files: true keeps them)"
        said.append(f"removed {e.removed} {e.unit} from {'bucket ' if e.unit == 'objects' else ''}{e.place}{kept}")
    if e.left:
        said.append(f"{e.left} {e.unit} stay on {e.place} (storbench.*): {e.why}")
    elif e.why:
        said.append(f"{e.unit} may stay on {'bucket ' if e.unit == 'objects' else ''}{e.place}: {e.why}")
    return f"target {e.target}: " + "; ".join(said)


def _steady(e: SteadyProgress) -> str:
    state, label = e.state, case_text(e.case)
    w, rule = state.window, state.rule
    window = (f"(last {rule.window}: range {100 * w.range_fraction:.1f} %, slope "
              f"{100 * w.slope_excursion_fraction:.1f} % of their mean)") if w is not None else ""
    if e.phase == "measuring":
        status = "not steady yet" if state.status is SteadyStatus.MEASURING else state.status.value
        return f"{label}: {status} after {e.ran} rounds {window}"
    if e.phase == "found":
        more = (f"; its figures come from the next {rule.confirm} rounds" if rule.confirm
                else "; its figures are the window's (confirm: 0: no interval)")
        return f"{label}: steady by SNIA's rule after {e.ran} rounds {window}{more}"
    first, last = state.confirmation[0][0] + 1, state.confirmation[-1][0] + 1
    judged = change_words(state)
    return (f"{label}: rounds {first}-{last} after its steady window measured: its figures"
            + (f"; {judged}" if judged else ""))


def _sequential(e: SequentialLook) -> str:
    v = e.verdict
    change = v.verdict.change
    shown = (f"{100 * change.estimate:+.1f} % [{100 * change.low:+.1f}, {100 * change.high:+.1f}]"
             if change is not None else "no pairs yet")
    status = v.verdict.decision.value
    if v.verdict.more_rounds is not None:
        status += f", about {v.verdict.more_rounds} more rounds"
    elif v.verdict.decision == "undecided":
        status = (f"reached max {e.max_rounds} rounds undecided" if v.verdict.final else
                  f"undecided, and at this spread even max {e.max_rounds} rounds would likely not decide it")
    return f"after {e.rounds} rounds: {comparison_label(v.comparison)} {v.metric}: {shown} {status}"


def _search(e: SearchAnswered) -> str:
    answer, best = e.answer, e.answer.best
    said = (f"best {best.iops.mean:,.0f} IOPS at {e.axis}={best.load} within {e.objective.label}<="
            f"{format_latency_ns(e.objective.limit_ns)}" if best is not None else "no load meets the objective")
    if best is not None and verdict(best.latency, e.objective) is Verdict.MEAN_MEETS:
        said += " (by its mean: no interval, not shown)"
    knee = f"; knee at {e.axis}={answer.knee}" if answer.knee is not None else f"; knee: {answer.knee_kind.value}"
    return (f"search {case_text(e.case, leave_out=e.axis)}: {said}{knee} ({answer.reason}); measured "
            f"{answer.measured} of {answer.grid_size} grid values: {', '.join(str(v) for v in sorted(e.measured))}")


def event_text(event: RunEvent) -> str:
    """One line for ``event``."""
    match event:
        case LabBringingUp():
            beside = f" (cluster {event.slot + 1} of {event.slots} side by side)" if event.slots > 1 else ""
            pools = ", ".join(f"{name} (size {size})" for name, size in event.pools)
            return f"{event.lab} lab: bringing up {_settings(event.settings)}{beside}" + (
                f"; pools {pools}" if pools else "")
        case LabUp():
            return _lab_up(event)
        case LabTornDown():
            return f"{event.lab} lab: torn down"
        case CleanUpFailed():
            again = f" (storbench lab {event.lab} down removes what is left)" if event.lab else ""
            return f"{event.what}: not cleaned up: {event.error}{again}"
        case LabLeftAlone():
            return event.what
        case LabHealed():
            return f"{event.lab} lab: healthy again after the fault ({event.seconds:.1f}s)"
        case OsdsRestarted():
            return (f"{event.lab} lab: OSDs restarted with {_settings(event.settings) or 'the base options'} in "
                    f"{event.seconds:.0f}s")
        case OsdCpusSet():
            said = []
            if event.quota_changed:
                said.append(f"CPU quota {'lifted' if event.cores is None else f'set to {event.cores:g} cores per OSD'}")
            if event.pinned:
                said.append("pinned to every CPU" if event.cpuset is None else f"pinned to CPUs {event.cpuset}")
            return f"{event.lab} lab: OSD " + ", ".join(said)
        case LinksShaped():
            return (f"{event.lab} lab: links shaped to {format_link_rate(event.bits_per_s)}"
                    + (f", {event.delay_s * 1e3:g} ms delay" if event.delay_s else ""))
        case TestDataCleaned():
            return _cleaned(event)
        case LaidOut():
            if event.by_fill:
                return (f"target {event.target}: its files or objects made before its faults in "
                        f"{event.seconds:.1f} s (its job's fill section alone, not measured)")
            return (f"target {event.target}: files laid out before its faults in {event.seconds:.1f} s (fio's set-up "
                    "alone, not measured)")
        case LayoutFailed():
            return (f"target {event.target}: laying its files out before the faults failed ({event.why}); fio lays "
                    "them out in the repetition, across the faults' times")
        case PreconditionRan():
            if event.written_bytes is None:
                return f"precondition {event.target}: {event.precondition.text()}"
            return (f"precondition {event.target}: {format_bytes(event.written_bytes)} written in "
                    f"{event.seconds or 0:.0f} s")
        case PlanVersionAdded():
            return (f"run {event.run_id}: plan version {event.version} adds {event.new_points} new points; every "
                    "stored point is unchanged")
        case StoppingRuleChanged():
            return (f"run {event.run_id}: stopping rule changed ({event.what}), accepted: its answer no longer holds "
                    "the sequential design's error rates, and says so")
        case PointRestarted():
            where = ("a search's load, its repetitions not all measured" if event.searched else
                     "steady by SNIA's rule but its rounds after the window not all measured" if event.steady_found
                     else "not steady")
            return (f"{case_text(event.case)}: {where} when interrupted; starts over ({event.dropped} earlier rounds "
                    "dropped: the lab or the precondition is new)")
        case SteadyProgress():
            return _steady(event)
        case BudgetReached():
            return f"budget reached after {event.rounds} rounds: stopping with the answer so far"
        case CiLook():
            return (f"after {event.rounds} rounds: IOPS interval ({100 * event.confidence:g} %) within "
                    f"±{event.ci_pct:g} % at every point: {'yes, stopping' if event.done else 'not yet'}")
        case SequentialLook():
            return _sequential(event)
        case SearchStopped():
            why = "measured nothing" if event.measured_nothing else "is not in the plan's cases"
            return f"search {case_text(event.case, leave_out=event.axis)}: {event.axis}={event.value} {why}: the " \
                   "search stops here"
        case SearchAnswered():
            return _search(event)
    raise AssertionError(f"no words for {event!r}")
