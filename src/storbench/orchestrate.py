"""The run loop (shell): with everything checked (checks.py), run each repetition and store it the moment it ends;
the labs are brought up and torn down by sessions.py.

check -> (new run | resume the latest run of this plan) -> for each scheduled repetition:
the target's executor renders its job texts and runs them (watchdog, judged outcome) -> store (one
transaction) -> tell the observer.
"""

from __future__ import annotations

import hashlib
import os
import platform
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import partial

from storbench import __version__
from storbench.checks import Checked, meminfo_bytes
from storbench.config import LoadedPlan, RepeatConfig, plan_design, repeat_bounds, run_order
from storbench.config.schema import PlanConfig
from storbench.durability import writer_id
from storbench.errors import UserError
from storbench.events import CleanUpFailed, LaidOut, LayoutFailed, PlanVersionAdded, PreconditionRan
from storbench.execute.base import Executor, FioSetup, stored_job_text
from storbench.execute.checker import CheckingWriter
from storbench.execute.k8s_access import DEFAULT_CLUSTER, ClusterAccess
from storbench.fault_driver import FaultDriver
from storbench.faults import FaultStep
from storbench.fio.jobfile import CEILING_RUNTIME_S, fill_job, render_ceiling_job
from storbench.fio.layout import consumes_its_files, has_fill_section, layout_job, lays_out_at_start, without_fill
from storbench.fio.options import FioCapabilities
from storbench.lab.registry import plan_software
from storbench.model import (
    Case,
    LabPoint,
    Precondition,
    PreconditionRecord,
    ScheduledRepetition,
    Status,
    lab_group_key,
)
from storbench.plan import expand
from storbench.redact import env_secrets, redact_outcome, redact_text
from storbench.report.events import case_text
from storbench.resume import check_design_unchanged, restart_unsettled_points, resumed_run, running_elsewhere
from storbench.run_search import in_order
from storbench.run_state import Executors, RunObserver, RunState, answered, run_label
from storbench.schedule import (
    FILL_RUNTIME_CAP_S,
    precondition_case,
    precondition_jobs,
    preconditions,
    repetition_seconds,
    schedule,
)
from storbench.sessions import (
    LabContext,
    claim_run_test_files,
    clear_left_files,
    client_hosts,
    group_by_lab,
    kubernetes_lab,
    lab_session,
    remove_earlier_objects,
    remove_run_test_files,
    session_object_prefixes,
)
from storbench.shell import interrupts_held
from storbench.store import Store
from storbench.targets.base import CheckPlace, PreparedTarget
from storbench.targets.nfs import clear_after
from storbench.telemetry.recorder import TelemetryRecorder
from storbench.watchdog import WATCHDOG_LAYOUT_BYTES_PER_S, layout_seconds, watchdog_seconds
from storbench.working_set import working_set_bytes


@dataclass(frozen=True)
class RunResult:
    run_id: int
    ran: int
    skipped: int  # stored already (resume)
    failed: int
    not_needed: int = 0  # rounds left out because the answer was known (repeat: {until: ...})



def _absolute(path: str | None) -> str | None:
    """The plan's path as the resume hint shows it, from wherever it is read later (`show` in another directory had
    said `storbench run m11.yaml`, a file not there)."""
    return None if path is None else os.path.abspath(path)


def measure_client_ceiling(local: Executor, case: Case, caps: FioCapabilities) -> float | None:
    """IOPS of the case's job on fio's null engine, run by ``local`` (this machine's fio): the client's own
    ceiling. None when the probe fails — a missing ceiling must not fail the run."""
    outcome = local.run_case(case, (render_ceiling_job(case),), 0, CEILING_RUNTIME_S + 30.0,
                             FioSetup(version=caps.version, binary=caps.binary))
    if outcome.status != Status.OK:
        return None
    return sum(d.iops for client in outcome.clients for d in client.directions)


def plan_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def run_plan(
    loaded: LoadedPlan,
    cases: Sequence[Case],
    checked: Checked,
    store: Store,
    executor: Executor,
    observer: RunObserver,
    *,
    resume: bool,
    resume_run: int | None = None,
    accept_changed_design: bool = False,
    keep_lab: bool = False,
    clock: Callable[[], float] = time.time,
    budget_s: float | None = None,
    cluster: ClusterAccess = DEFAULT_CLUSTER,
    labels: Sequence[tuple[str, str]] = (),
) -> RunResult:
    config = loaded.config
    caps = checked.capabilities
    design = plan_design(config, len(expand(loaded)))  # stored with the run: its readers never parse the plan again
    if resume:
        previous = resumed_run(store, config.name, resume_run, platform.node())
        run_id = previous.run_id
        if not store.leases.claim(run_id):  # before anything of it changes
            raise running_elsewhere(run_id)
        if previous.run_order != run_order(config):  # the rounds left would not pair with those run
            raise UserError(f"plan '{config.name}' changed its order since run {run_id} started ({previous.run_order} "
                            f"-> {run_order(config)}): the repetitions left would not run as the ones stored did",
                            hint=f"set order: {previous.run_order} to resume it, or run without --resume")
        # the order left is the seed's (Random(-5) shuffles as Random(5): a run stored with -5 resumes with 5)
        if previous.run_order == "shuffled" and abs(previous.seed) != config.seed:
            raise UserError(f"plan '{config.name}' changed its seed since run {run_id} started ({previous.seed} -> "
                            f"{config.seed}): the repetitions left would run in another order than the one stored",
                            hint=f"set seed: {abs(previous.seed)} to resume it, or run without --resume")
        check_design_unchanged(loaded, store, run_id, accept=accept_changed_design, observer=observer)
        stored = store.run_case_ids(run_id)
        planned = {c.case_id for c in cases}
        gone = stored - planned
        if gone:
            first = next(r.case for r in store.repetitions([run_id]) if r.case.case_id in gone)
            raise UserError(f"plan '{config.name}' changed since run {run_id}: {len(gone)} of the {len(stored)} "
                            f"cases it stored are not in this plan (first: {case_text(first)})",
                            hint="run without --resume to start a new run of it; a resume may only add points")
        version = store.update_run_plan(run_id, loaded.source.text, plan_sha256(loaded.source.text), design=design,
                                        at_s=clock(), plan_path=_absolute(loaded.source.path))
        if version > 1 and planned - stored:
            observer.event(PlanVersionAdded(run_id, version, len(planned - stored)))
        restart_unsettled_points(loaded, store, run_id, observer)
        # `repeat: {until: ...}`: a failed repetition of a round already looked at stays failed (a round that
        # failed on one side still was a look); run again now, it would not have run next to its pair, and the
        # rule would look again at a look it has made
        attempted = store.completed(run_id, failed_too=True)
        # and steady_state's: its window reads rounds in order, which a round run again after later ones is not;
        # and a search's: the load's repetitions left were read to choose the next load
        done = (attempted if isinstance(config.repeat, RepeatConfig) or config.steady_state is not None
                or config.search is not None else store.completed(run_id))
        looked_at = max((index for _, index in attempted), default=-1)
    else:
        run_id = store.create_run(
            plan_name=config.name, plan_text=loaded.source.text, plan_sha256=plan_sha256(loaded.source.text),
            source="run", storbench_version=__version__, fio_version=caps.version, host=platform.node(),
            kernel=platform.release(), run_order=run_order(config), seed=config.seed, tags=config.tags,
            started_at_s=clock(), mem_total_bytes=meminfo_bytes("MemTotal"), cpu_count=os.cpu_count(),
            plan_path=_absolute(loaded.source.path), design=design, labels=labels, software=plan_software(loaded),
        )
        if not store.leases.claim(run_id):  # a --resume of it from elsewhere is refused while this one runs it
            raise running_elsewhere(run_id)  # (one that took it in the moment since it was made)
        done, looked_at = set(), -1
    # S3 objects of an earlier session of the run that was killed; this session's prefixes recorded before any fill
    earlier = store.object_prefixes(run_id, adding=session_object_prefixes(checked.targets.values()))
    bring_up = design.bring_up
    order = schedule(cases, repeat_bounds(config)[1], run_order(config), config.seed,
                     lambda case: lab_group_key(case.lab, bring_up))
    todo = [item for item in order if (item.case.case_id, item.rep_index) not in done]
    observer.run_started(run_id, len(todo), len(order) - len(todo), sum(repetition_seconds(i.case) for i in todo))
    failed = ran = 0
    position = 0
    with client_hosts(loaded, caps, observer, keep=keep_lab) as servers, \
            kubernetes_lab(loaded, caps, observer, keep=keep_lab) as k8s_lab:
        executors = Executors(executor, servers, caps.binary, run_label(run_id, platform.node(), store.path), k8s_lab,
                              lab_servers=config.hosts is None, cluster=cluster)
        deadline = None if budget_s is None else clock() + budget_s
        # a round begun before the run was stopped was looked at before it began: it is finished before the next look
        run = RunState(loaded, checked, store, executors, observer, run_id, keep_lab, ceilings={}, clock=clock,
                       deadline_s=deadline, cases=tuple(cases), looks={"looked_at": looked_at, "stopped": 0})
        try:
            claim_run_test_files(checked.targets, cases)
            groups = list(group_by_lab(todo, bring_up=bring_up))
            for index, (lab, items) in enumerate(groups):
                if run.stop_before(items[0].rep_index):  # a round ended with the previous cluster
                    break
                group_failed, group_ran = _run_group(run, lab, items, position,
                                                     keep=partial(_keeps, run, bring_up, groups, index))
                failed, ran = failed + group_failed, ran + group_ran
                position += len(items)
                if run.stopped:
                    break
            else:  # every round ran: say how the answer stands at the end
                if todo and not isinstance(config.repeat, int) and todo[-1].rep_index + 1 >= repeat_bounds(config)[0]:
                    answered(run, todo[-1].rep_index + 1)
            # finished before the clean-up: a Ctrl-C held in it, given back after it, leaves the run whole
            store.finish_run(run_id, clock())
        finally:
            with interrupts_held():  # fio's servers and pods stopped, the test files removed, whatever is pressed
                executors.close()
                remove_run_test_files(checked.targets.values(), observer, keep_files=config.keep_files)
                remove_earlier_objects(checked.targets.values(), earlier, observer)
    return RunResult(run_id=run_id, ran=ran, skipped=len(order) - len(todo), failed=failed,
                     not_needed=len(todo) - ran)


def _precondition(run: RunState, pre: Precondition, cases: Sequence[Case], prepared: PreparedTarget) -> None:
    """Write the target before its first measurement on this lab (its `precondition`), store what ran; a
    precondition that fails stops the run (measuring without it would answer another question)."""
    config = run.loaded.config
    caps = run.checked.capabilities
    case = precondition_case(pre, cases)
    executor = run.executors.for_target(case.target)
    texts = executor.job_texts(case, prepared.binding, 0)
    if pre.passes is not None:
        texts = tuple(fill_job(text, pre.passes) for text in texts)
        volume = working_set_bytes(case) * pre.passes
        timeout_s = (volume / WATCHDOG_LAYOUT_BYTES_PER_S if volume else FILL_RUNTIME_CAP_S) + config.timeout_grace
    else:
        timeout_s = (pre.duration_s or 0.0) + config.timeout_grace
    run.observer.event(PreconditionRan(case.target.name, pre))
    fio = FioSetup(version=caps.version, binary=prepared.binding.fio_binary, env=prepared.binding.env)
    outcome = redact_outcome(run.executors.for_target(case.target).run_case(case, texts, 0, timeout_s, fio),
                             env_secrets(fio.env))
    written = sum(d.io_bytes for client in outcome.clients for d in client.directions)
    run.store.save_precondition(run.run_id, PreconditionRecord(
        target=case.target.name, lab=case.lab.pairs(), precondition=pre, status=outcome.status,
        started_at_s=outcome.started_at_s, finished_at_s=outcome.finished_at_s, written_bytes=written,
        job_text=stored_job_text(texts), error=outcome.error))
    if outcome.status != Status.OK:
        raise UserError(f"precondition of target '{case.target.name}' failed: {outcome.error or outcome.status.value}",
                        hint="fix the target or the precondition, then run again with --resume")
    run.observer.event(PreconditionRan(case.target.name, pre, written, outcome.finished_at_s - outcome.started_at_s))


def _checking_writer(config: PlanConfig, place: CheckPlace | None, writer: int) -> CheckingWriter | None:
    """`check_writes`' writer for one repetition, where the target has a place for it (the plan check refuses
    targets that have none)."""
    check = config.check_writes
    if check is None or place is None:
        return None
    return CheckingWriter(place.region(), blocks=check.region_blocks(config.workload),
                          block_bytes=check.bs, depth=check.depth, iops=check.iops, writer=writer)


def _fault(session: LabContext, case: Case, recorder: TelemetryRecorder | None, step: FaultStep, restore: bool) -> str:
    try:
        return session.fault(step, case, restore=restore)
    finally:  # telemetry told of a link a fault shaped (stamped once done): its utilisation against the rate then
        if recorder is not None:
            recorder.links_shaped_by(lambda: session.link_rates(case), time.time())


def _keeps(run: RunState, bring_up: str, groups: Sequence[tuple[LabPoint, Sequence[ScheduledRepetition]]],
           index: int, failing: bool) -> bool:
    """--keep-lab, as group ``index`` ends: the last lab configuration stays up. A fresh cluster a round
    (`each_repetition`) is torn down after its round unless the run ends there (its last round, a stopping rule or
    a budget that stops before the next, an error), or the next round's cluster of the same settings would reuse
    it, data and all."""
    if not run.keep_lab:
        return False
    if bring_up == "once" or index == len(groups) - 1 or failing:
        return True
    return run.stop_before(groups[index + 1][1][0].rep_index)  # asked once: the loop's own ask gets the same


def _run_group(run: RunState, lab: LabPoint, items: Sequence[ScheduledRepetition], first_position: int, *,
               keep: Callable[[bool], bool]) -> tuple[int, int]:
    """Run one lab configuration's repetitions, round by round; returns how many failed and how many ran. With
    `repeat: {until: ...}` the rounds stop once the answer is known (looked at after each round from `min`)."""
    config = run.loaded.config
    caps = run.checked.capabilities
    observer, ceilings = run.observer, run.ceilings
    failed = ran = 0
    position = first_position
    wanted = preconditions(config)
    cases = [i.case for i in items]
    # the precondition jobs go to the session too: an image they write meets the write guard like any case's
    servers = run.executors.hosts.servers if run.executors.hosts is not None else ()
    with lab_session(run.loaded, lab, [*cases, *precondition_jobs(wanted, cases)], run.checked, observer,
                     keep=keep, servers=servers) as session:
        recorders: dict[tuple[str, ...], TelemetryRecorder] = {}  # per cluster: its own OSDs' sockets
        written: set[tuple[str, tuple[tuple[str, str], ...]]] = set()  # (target, its prepared details) written
        laid_out: set[str] = set()  # cases whose files were laid out before their first repetition with faults
        for item in in_order(run, items):
            if run.stop_before(item.rep_index):  # a round has ended: is the answer known?
                break
            if run.settled_case(item.case):  # steady_state: this point is steady already
                continue
            for changed in session.enter(item.case):
                observer.event(changed)
            name, details = item.case.target.name, session.for_case(item.case).details
            if name in wanted and (name, details) not in written:  # once per image, pool, file set or cluster
                written.add((name, details))
                same = [c for c in cases if c.target.name == name and session.for_case(c).details == details]
                _precondition(run, wanted[name], same, session.for_case(item.case))
            prepared = session.for_case(item.case)
            clear_left_files(prepared, item.case, cleared=run.cleared)  # a create makes its files, none left before
            executor = run.executors.for_target(item.case.target)
            try:  # a lab's target (not rendered at `plan`): a value no job file can hold stops the run in one line
                job_texts = executor.job_texts(item.case, prepared.binding, item.rep_index)
            except ValueError as exc:
                raise UserError(f"target '{name}': {exc}", hint="a shorter path, or fewer dirs") from None
            fio = FioSetup(version=caps.version, binary=prepared.binding.fio_binary, env=prepared.binding.env)
            steps = session.faults_for(item.case, run.faults)
            first = item.case.case_id not in laid_out
            filled = False  # its files or objects made by its fill section alone (a fill case's, each repetition)
            if (steps and (first or consumes_its_files(item.case))
                    and lays_out_at_start(item.case, prepared.binding)):
                # fio would lay the files out after its launch, the moment the faults are timed from
                laid_out.add(item.case.case_id)
                began_s = time.monotonic()
                why = redact_text(executor.lay_out(item.case, tuple(layout_job(text) for text in job_texts),
                                                   layout_seconds(item.case, config.timeout_grace), fio),
                                  env_secrets(fio.env))  # fio's complaint may echo a key (shown, never stored)
                if why or first:
                    observer.event(LayoutFailed(item.case.target.name, why) if why
                                   else LaidOut(item.case.target.name, time.monotonic() - began_s,
                                                has_fill_section(item.case)))
                filled = not why and has_fill_section(item.case)
            if filled:  # the job without its fill
                job_texts = tuple(without_fill(text) for text in job_texts)
            observer.repetition_started(item, position)
            recorder = None
            if config.telemetry.enabled:

                sockets = session.sockets_for(item.case)
                if sockets not in recorders:
                    recorders[sockets] = TelemetryRecorder(config.telemetry, sockets)
                recorder = recorders[sockets]
                recorder.links_shaped(session.link_rates(item.case))  # shaped veths have no speed of their own
            if recorder is not None and config.telemetry.client_ceiling and item.case.case_id not in ceilings:
                ceilings[item.case.case_id] = measure_client_ceiling(run.executors.local, item.case, caps)
            timeout_s = watchdog_seconds(item.case, config.timeout_grace)
            if recorder is not None:
                recorder.start(executor.telemetry(item.case, config.telemetry.interval))
            case = item.case
            checking = _checking_writer(config, prepared.check_place, writer_id(run.run_id, run.session, position))
            watch = session.watch(case) if run.faults else None  # the lab's own state, through its settling
            try:
                with watch or nullcontext():
                    # the checking writer outside the faults: a fault still on when fio ends (its undoing planned
                    # later) is undone before the writer waits for its writes in flight, which it would stall
                    with (checking or nullcontext(),
                          FaultDriver(steps,
                                      executor.start_delay_s(case) + case.workload.start_delay_s[0]
                                      + case.workload.ramp_s,
                                      partial(_fault, session, case, recorder)) as faults):
                        outcome = redact_outcome(executor.run_case(case, job_texts, item.rep_index, timeout_s, fio),
                                                 env_secrets(fio.env))
                    outcome = replace(outcome, faults=tuple(faults.records))
                    # a daemon of the lab that stopped with no fault asking: this repetition measured a broken lab,
                    # and so would every one after it (checked before the settling, which would start it again)
                    lost = session.lost_for(item.case, frozenset(
                        r.target for r in faults.records if not r.restore and not r.error))
                    unsettled: BaseException | None = None
                    if run.faults and lost is None:  # the next repetition's fault meets a whole lab
                        try:
                            for healed in session.settle(case):
                                observer.event(healed)
                        except BaseException as exc:  # a lab that did not heal, or a Ctrl-C in its long wait: the
                            unsettled = exc  # repetition was measured whole; it is saved, then the run stops
            except BaseException:
                if recorder is not None:
                    recorder.stop()
                if checking is not None:  # its image or file would be left, and refuse every later check
                    checking.abandon()
                raise
            try:
                if watch is not None:
                    outcome = replace(outcome, logs=(*outcome.logs, watch.log()))
                if checking is not None and (lost is not None or unsettled is not None):  # a broken lab: none read
                    outcome = replace(outcome, write_check=checking.abandon(
                        "a daemon of the lab was lost" if lost is not None else "the lab did not settle after its "
                        "faults"))
                elif checking is not None:  # read back once the faults are undone and the lab is whole
                    outcome = replace(outcome, write_check=checking.result())
            except BaseException:
                if recorder is not None:  # its perf stat runs in a session of its own: it would outlive us
                    recorder.stop()
                raise
            telemetry = (recorder.finish(outcome, item.case, ceilings.get(item.case.case_id))
                         if recorder is not None else None)
            if lost is not None:
                outcome = replace(outcome, status=Status.FAILED if outcome.status == Status.OK else outcome.status,
                                  error="; ".join(part for part in (outcome.error, lost.said) if part))
            if outcome.status != Status.OK and (health := session.health_for(item.case)):
                outcome = replace(outcome, error=f"{outcome.error}; cluster health: {health}")
            run.store.save_repetition(run.run_id, item.case, item.rep_index, outcome,
                                      (*prepared.details, *item.case.lab.pairs()), telemetry)
            if lost is not None:
                observer.repetition_finished(item, position, outcome)
                raise UserError(f"{lost.said}: the run stops rather than measure a broken lab", hint=lost.hint)
            if unsettled is not None:
                observer.repetition_finished(item, position, outcome)
                raise unsettled
            if outcome.status != Status.OK:
                failed += 1
            observer.repetition_finished(item, position, outcome)
            if why := clear_after(prepared, item.case, outcome):  # what it left on an NFS export: none stays there
                run.cleared.discard(item.case.case_id)  # cleared before its next repetition, which stops if it fails
                observer.event(CleanUpFailed(f"target {item.case.target.name}'s files", why))
            position += 1
            ran += 1
            run.settled_case(item.case, tell=True)
    return failed, ran
