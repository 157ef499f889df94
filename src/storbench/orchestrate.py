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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from storbench import __version__
from storbench.config import LoadedPlan, plan_design, repeat_bounds, run_order
from storbench.errors import UserError
from storbench.execute.base import Executor, FioSetup, stored_job_text
from storbench.execute.hosts import HostsExecutor
from storbench.lab.hosts_conf import is_lab_server

if TYPE_CHECKING:
    from storbench.execute.kubernetes import KubernetesExecutor
    from storbench.lab.k8s import K8sLabInfo
    from storbench.stats.curve import LoadAxis, SearchKey
    from storbench.stats.knee import LatencyObjective
    from storbench.stats.observations import Observation
    from storbench.stats.search import SearchPoint
    from storbench.stats.steady import SteadyState
    from storbench.telemetry.recorder import TelemetryRecorder
from storbench.checks import Checked, meminfo_bytes
from storbench.fio.jobfile import CEILING_RUNTIME_S, fill_job, render_ceiling_job
from storbench.fio.options import FioCapabilities
from storbench.model import (
    Case,
    LabPoint,
    Precondition,
    PreconditionRecord,
    PvcTarget,
    RepetitionOutcome,
    RunInfo,
    ScheduledRepetition,
    Status,
    StoredRepetition,
    TargetSpec,
)
from storbench.plan import (
    FILL_RUNTIME_CAP_S,
    expand,
    precondition_case,
    precondition_jobs,
    preconditions,
    repetition_seconds,
    schedule,
    working_set_bytes,
)
from storbench.redact import env_secrets, redact_outcome
from storbench.sessions import (
    LabObserver,
    claim_run_test_files,
    client_hosts,
    group_by_lab,
    kubernetes_lab,
    lab_session,
    remove_run_test_files,
)
from storbench.store import Store
from storbench.targets.base import PreparedTarget
from storbench.units import format_block_size, format_bytes, format_latency_ns

# Slowest layout speed the watchdog allows for before calling fio hung.
WATCHDOG_LAYOUT_BYTES_PER_S = 20 * 1024 * 1024


class RunObserver(LabObserver, Protocol):
    def run_started(self, run_id: int, to_run: int, already_done: int, eta_s: float) -> None: ...

    def repetition_started(self, item: ScheduledRepetition, position: int) -> None: ...

    def repetition_finished(self, item: ScheduledRepetition, position: int, outcome: RepetitionOutcome) -> None: ...


@dataclass(frozen=True)
class RunResult:
    run_id: int
    ran: int
    skipped: int  # stored already (resume)
    failed: int
    not_needed: int = 0  # rounds left out because the answer was known (repeat: {until: ...})


def watchdog_seconds(case: Case, grace_s: float) -> float:
    return repetition_seconds(case) + working_set_bytes(case) / WATCHDOG_LAYOUT_BYTES_PER_S + grace_s


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
) -> RunResult:
    config = loaded.config
    caps = checked.capabilities
    design = plan_design(config, len(expand(loaded)))  # stored with the run: its readers never parse the plan again
    if resume:
        previous = resumed_run(store, config.name, resume_run)
        run_id = previous.run_id
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
                                        at_s=clock(), plan_path=loaded.source.path)
        if version > 1 and planned - stored:
            observer.lab_event(f"run {run_id}: plan version {version} adds {len(planned - stored)} new points; "
                               "every stored point is unchanged")
        restart_unsettled_points(loaded, store, run_id, observer)
        done = store.completed(run_id)
    else:
        run_id = store.create_run(
            plan_name=config.name, plan_text=loaded.source.text, plan_sha256=plan_sha256(loaded.source.text),
            source="run", storbench_version=__version__, fio_version=caps.version, host=platform.node(),
            kernel=platform.release(), run_order=run_order(config), seed=config.seed, tags=config.tags,
            started_at_s=clock(), mem_total_bytes=meminfo_bytes("MemTotal"), cpu_count=os.cpu_count(),
            plan_path=loaded.source.path, design=design,
        )
        done = set()
    order = schedule(cases, repeat_bounds(config)[1], run_order(config), config.seed)
    todo = [item for item in order if (item.case.case_id, item.rep_index) not in done]
    observer.run_started(run_id, len(todo), len(order) - len(todo), sum(repetition_seconds(i.case) for i in todo))
    failed = ran = 0
    position = 0
    with client_hosts(loaded, caps, observer, keep=keep_lab) as servers, \
            kubernetes_lab(loaded, caps, observer, keep=keep_lab) as k8s_lab:
        executors = Executors(executor, servers, caps.binary, run_label(run_id, platform.node(), store.path), k8s_lab,
                              lab_servers=config.hosts is None)
        deadline = None if budget_s is None else clock() + budget_s
        run = _Run(loaded, checked, store, executors, observer, run_id, keep_lab, ceilings={}, clock=clock,
                   deadline_s=deadline, cases=tuple(cases))
        bring_up = config.lab.ceph.bring_up if config.lab is not None and config.lab.ceph is not None else "once"
        try:
            claim_run_test_files(checked.targets, cases)
            for lab, items in group_by_lab(todo, bring_up=bring_up):
                if run.stop_before(items[0].rep_index):  # a round ended with the previous cluster
                    break
                group_failed, group_ran = _run_group(run, lab, items, position)
                failed, ran = failed + group_failed, ran + group_ran
                position += len(items)
                if run.stopped:
                    break
            else:  # every round ran: say how the answer stands at the end
                if todo and not isinstance(config.repeat, int) and todo[-1].rep_index + 1 >= repeat_bounds(config)[0]:
                    answered(run, todo[-1].rep_index + 1)
        finally:
            executors.close()
            if not config.keep_files:
                remove_run_test_files(checked.targets.values(), observer)
    store.finish_run(run_id, clock())
    return RunResult(run_id=run_id, ran=ran, skipped=len(order) - len(todo), failed=failed,
                     not_needed=len(todo) - ran)


def resumed_run(store: Store, plan_name: str, run_id: int | None) -> RunInfo:
    """The run a `--resume` continues: the latest run of the plan, or run ``run_id`` when named (one of this
    plan's, stored by `run`)."""
    if run_id is None:
        previous = store.latest_run_of_plan(plan_name)
        if previous is None:
            raise UserError(f"nothing to resume: no earlier run of plan '{plan_name}' in {store.path}",
                            hint="run without --resume to start one")
        return previous
    runs = {r.run_id: r for r in store.runs()}
    ours = sorted(r.run_id for r in runs.values() if r.plan_name == plan_name and r.source == "run")
    found = runs.get(run_id)
    if found is None or found.plan_name != plan_name or found.source != "run":
        what = (f"no run {run_id} in {store.path}" if found is None else
                f"run {run_id} is {'an import' if found.source != 'run' else f'of plan {found.plan_name!r}'}, "
                f"not of plan '{plan_name}'")
        raise UserError(f"cannot resume: {what}",
                        hint=(f"runs of plan '{plan_name}': {', '.join(map(str, ours))}" if ours else
                              "run without --resume to start one"))
    return found


def check_design_unchanged(loaded: LoadedPlan, store: Store, run_id: int, *, accept: bool,
                           observer: RunObserver | None) -> None:
    """A resume may not change a sequential design's stopping rule (`repeat: {min, max, until}`, `compare`) from
    the one the run last ran with (its latest plan version's stored design): its error rates hold only for a rule
    fixed before the data were seen. With ``accept`` the change is kept (as a new plan version, which marks the
    run's answer: ``run_design_changes``)."""
    from storbench.config import design_changes

    versions = store.design_versions(run_id)
    if not versions:
        return
    version, before = versions[-1]
    if not before.from_plan:
        return  # a stored plan no storbench read a design in: nothing to compare the rule with
    changed = design_changes(before, plan_design(loaded.config, None))
    if not changed:
        return
    since = "it started" if version == 1 else f"plan version {version}"
    what = ", ".join(changed)
    if not accept:
        raise UserError(f"plan '{loaded.config.name}' changed the stopping rule of run {run_id} since {since} "
                        f"({what}): its error rates hold only for the rule it started with",
                        hint="run without --resume to start a new run with this rule, or pass "
                        "--accept-changed-design to continue, its answer marked as not holding its error rates")
    if observer is not None:
        observer.lab_event(f"run {run_id}: stopping rule changed ({what}), accepted: its answer no longer holds the "
                           "sequential design's error rates, and says so")


def case_text(case: Case, leave_out: str = "") -> str:
    """A case in the run's progress lines: target, pattern, block size, queue depth, jobs, clients (beyond one) and
    lab settings; ``leave_out`` the load a search varies."""
    w = case.workload
    parts = [case.target.name, w.rw, format_block_size(w.bs_bytes)]
    parts += [f"qd={w.iodepth}"] if leave_out != "iodepth" else []
    parts += [f"jobs={w.numjobs}"] if leave_out != "numjobs" else []
    parts += [f"clients={case.clients}"] if leave_out != "clients" and case.clients > 1 else []
    parts += [case.lab.describe()] if case.lab.pairs() else []
    return " ".join(parts)


def restart_unsettled_points(loaded: LoadedPlan, store: Store, run_id: int, observer: RunObserver) -> None:
    """Resuming a steady-state run on a lab or a preconditioned target: the lab comes up anew and the target is
    written again, so a point that was not yet steady, or not yet through its rounds after the steady window,
    starts over; its earlier rounds are dropped (a window or figures mixing rounds from before and after would
    judge two instances as one)."""
    from storbench.stats.run_questions import steady_rule
    from storbench.stats.steady import SteadyStatus, judge_repetitions

    rule = steady_rule(loaded.config)
    wanted = preconditions(loaded.config)
    if rule is None or (loaded.config.lab is None and not wanted):
        return
    by_case: dict[str, list[StoredRepetition]] = {}
    for r in store.repetitions([run_id]):
        by_case.setdefault(r.case.case_id, []).append(r)
    for case_id, reps in by_case.items():
        case = reps[0].case
        if loaded.config.lab is None and case.target.name not in wanted:
            continue
        state = judge_repetitions(sorted(reps, key=lambda r: r.rep_index), rule)
        if not state.settled:
            dropped = store.drop_case_repetitions(run_id, case_id)
            where = ("not steady" if state.status is SteadyStatus.MEASURING
                     else "steady but its rounds after the window not all measured")
            observer.lab_event(f"{case_text(case)}: {where} when interrupted; starts over "
                               f"({dropped} earlier rounds dropped: the lab or the precondition is new)")


def run_label(run_id: int, host: str, db_path: str) -> str:
    """The label of everything a run creates in a cluster: the run id alone repeats across results databases
    (two operators' "run 1"), so a token of this machine and database is added; a resumed run keeps it."""
    token = hashlib.sha256(f"{host}:{os.path.realpath(db_path)}".encode()).hexdigest()[:8]
    return f"run{run_id}-{token}"


class Executors:
    """The executor of each target, chosen once per target: a pvc target runs in Kubernetes pods (an executor
    per target, made on first use), any other on the plan's fio servers when it has some, else on ``local``
    (which also measures client ceilings). `close` removes what the pods' executors made (their claims)."""

    def __init__(self, local: Executor, servers: Sequence[str], fio_binary: str, label: str,
                 k8s_lab: K8sLabInfo | None, *, lab_servers: bool = False) -> None:
        """``lab_servers``: the servers are storbench's hosts lab on this machine (not a plan's `hosts`)."""
        self.local = local
        self.hosts = (HostsExecutor(fio_binary, servers, lab_servers=lab_servers and all(map(is_lab_server, servers)))
                      if servers else None)
        self.run_label = label
        self.k8s_lab = k8s_lab
        self.chosen: dict[str, Executor] = {}
        self.pods: list[KubernetesExecutor] = []

    def for_target(self, spec: TargetSpec) -> Executor:
        if spec.name not in self.chosen:
            self.chosen[spec.name] = self._pods(spec) if isinstance(spec, PvcTarget) else self.hosts or self.local
        return self.chosen[spec.name]

    def _pods(self, spec: PvcTarget) -> KubernetesExecutor:
        """Pods on the k8s lab, else on the cluster of $KUBECONFIG or ~/.kube/config (never a plan's)."""
        from storbench.execute.kubernetes import KubernetesExecutor

        kubeconfig = self.k8s_lab.kubeconfig if self.k8s_lab else None
        executor = KubernetesExecutor(
            kubeconfig, spec.namespace, self.run_label,
            default_storage_class=None if self.k8s_lab is None else (
                "storbench-local-block" if spec.volume_mode == "Block" else self.k8s_lab.storage_class))
        self.pods.append(executor)
        return executor

    def close(self) -> None:
        for executor in self.pods:
            executor.close()


@dataclass(frozen=True)
class _Run:
    """What every lab group of a run shares."""

    loaded: LoadedPlan
    checked: Checked
    store: Store
    executors: Executors
    observer: RunObserver
    run_id: int
    keep_lab: bool
    ceilings: dict[str, float | None]  # case id -> client ceiling (IOPS), measured once per case
    clock: Callable[[], float] = time.time
    deadline_s: float | None = None  # --budget: no new round after this moment
    looks: dict[str, int] = field(default_factory=lambda: {"looked_at": -1, "stopped": 0})
    settled: set[str] = field(default_factory=set)  # steady_state: cases steady (or out of rounds) already
    cases: tuple[Case, ...] = ()  # every case of the plan (a search reads its group's stored points by them)

    def settled_case(self, case: Case, *, tell: bool = False) -> bool:
        """For `steady_state`: whether ``case``'s rounds so far are steady with their rounds after the window
        measured (or reached max_rounds), so no more of them run; with ``tell``, the observer hears how the point
        stands."""
        from storbench.stats.run_questions import steady_rule

        rule = steady_rule(self.loaded.config)
        if rule is None:
            return False
        if case.case_id in self.settled:
            return True
        from storbench.stats.steady import judge_repetitions

        mine = [r for r in self.store.repetitions([self.run_id]) if r.case.case_id == case.case_id]
        state = judge_repetitions(mine, rule)
        if tell and state.window is not None:
            self._tell_steady(case, state, len(mine), max(r.rep_index for r in mine))
        if state.settled:
            self.settled.add(case.case_id)
        return case.case_id in self.settled

    def _tell_steady(self, case: Case, state: SteadyState, ran: int, last: int) -> None:
        """How a steady-state point stands after round ``last`` (``ran`` rounds run): its window's figures until
        it is steady, then (once each) that it is and that the rounds after the window that give its figures are
        measured."""
        from storbench.stats.steady import SteadyStatus

        w, rule, label = state.window, state.rule, case_text(case)
        assert w is not None
        window = (f"(last {rule.window}: range {100 * w.range_fraction:.1f} %, slope "
                  f"{100 * w.slope_excursion_fraction:.1f} % of their mean)")
        if state.status is not SteadyStatus.STEADY:
            status = "not steady yet" if state.status is SteadyStatus.MEASURING else state.status.value
            self.observer.lab_event(f"{label}: {status} after {ran} rounds {window}")
        elif last == w.rounds[-1]:
            more = (f"; its figures come from the next {rule.confirm} rounds" if rule.confirm
                    else "; its figures are the window's (confirm: 0: no interval)")
            self.observer.lab_event(f"{label}: steady after {ran} rounds {window}{more}")
        elif state.settled:
            first, last = state.confirmation[0][0] + 1, state.confirmation[-1][0] + 1
            self.observer.lab_event(f"{label}: rounds {first}-{last} after its steady window measured: its figures")

    @property
    def stopped(self) -> bool:
        return bool(self.looks["stopped"])

    def stop_before(self, rep_index: int) -> bool:
        """Before a repetition of round ``rep_index``: when it starts a new round from `repeat.min` on, look at
        the answer so far (once per round) and at the budget; True when the run should stop here."""
        if self.stopped:
            return True
        least = repeat_bounds(self.loaded.config)[0]
        if rep_index < least or rep_index <= self.looks["looked_at"]:
            return False
        self.looks["looked_at"] = rep_index
        if answered(self, rep_index):
            self.looks["stopped"] = 1
        elif self.deadline_s is not None and self.clock() >= self.deadline_s:
            self.observer.lab_event(f"budget reached after {rep_index} rounds: stopping with the answer so far")
            self.looks["stopped"] = 1
        return self.stopped


def answered(run: _Run, rounds: int) -> bool:
    """For `repeat: {until: ...}`: whether the rounds stored so far answer the plan's question (the stopping rule
    stays valid however often this looks; see stats/sequential.py). Tells the observer how each metric stands."""
    from storbench.config import CI_STOP_CONFIDENCE, RepeatConfig
    from storbench.report.labels import comparison_label
    from storbench.stats.adaptive import all_decided, ci_reached, decided_verdicts
    from storbench.stats.observations import observations
    from storbench.stats.selectors import parse_selector
    from storbench.stats.sequential import SequentialPlan

    config = run.loaded.config
    repeat = config.repeat
    if not isinstance(repeat, RepeatConfig):
        return False
    seen = observations(run.store.repetitions([run.run_id]))
    ci_pct = repeat.ci_pct
    if ci_pct is not None:
        done = ci_reached(seen, ci_pct)
        run.observer.lab_event(f"after {rounds} rounds: IOPS interval ({100 * CI_STOP_CONFIDENCE:g} %) within "
                               f"±{ci_pct:g} % at every point: {'yes, stopping' if done else 'not yet'}")
        return done
    assert config.compare is not None
    plan = SequentialPlan(min_rounds=repeat.min, max_rounds=repeat.max, margin=config.compare.margin)
    verdicts = decided_verdicts(seen, parse_selector(config.compare.baseline), parse_selector(config.compare.candidate),
                                config.compare.metrics, plan)
    for v in verdicts:
        change = v.verdict.change
        shown = (f"{100 * change.estimate:+.1f} % [{100 * change.low:+.1f}, {100 * change.high:+.1f}]"
                 if change is not None else "no pairs yet")
        status = v.verdict.decision.value
        if v.verdict.more_rounds is not None:
            status += f", about {v.verdict.more_rounds} more rounds"
        elif v.verdict.decision == "undecided":
            status = (f"reached max {plan.max_rounds} rounds undecided" if v.verdict.final else
                      f"undecided, and at this spread even max {plan.max_rounds} rounds would likely not decide it")
        run.observer.lab_event(f"after {rounds} rounds: {comparison_label(v.comparison)} {v.metric}: {shown} "
                               f"{status}")
    return all_decided(verdicts)


def _precondition(run: _Run, pre: Precondition, cases: Sequence[Case], prepared: PreparedTarget) -> None:
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
    run.observer.lab_event(f"precondition {case.target.name}: {pre.text()}")
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
    run.observer.lab_event(f"precondition {case.target.name}: {format_bytes(written)} written in "
                           f"{outcome.finished_at_s - outcome.started_at_s:.0f} s")


def _in_order(run: _Run, items: Sequence[ScheduledRepetition]) -> Iterator[ScheduledRepetition]:
    """The repetitions to run, in order: ``items`` as scheduled, or with a `search` only those of the load values
    the search asks for, one value at a time (each asked once its predecessors are stored)."""
    search = run.loaded.config.search
    if search is None:
        yield from items
        return
    from storbench.stats.knee import parse_slo
    from storbench.stats.search import next_values, search_answer, search_grid

    objective = parse_slo(search.slo)
    grid = search_grid(*search.range)
    groups: dict[SearchKey, dict[int, list[ScheduledRepetition]]] = {}
    for item in items:
        key, load = _search_key(item.case, search.axis)
        groups.setdefault(key, {}).setdefault(load, []).append(item)
    for key, by_load in groups.items():
        first = next(iter(by_load.values()))[0].case
        label = case_text(first, leave_out=search.axis)
        asked: list[int] = []
        for load in sorted(_search_points(run, key, search.axis, objective)):  # resumed: finish the points begun
            if load in by_load:
                asked.append(load)
                yield from by_load[load]
        while True:
            measured = _search_points(run, key, search.axis, objective)
            values = next_values(grid, measured, objective, search.tolerance)
            if not values:
                break
            value = values[0]
            if value in asked or value not in by_load:  # measured nothing, or excluded from the plan
                run.observer.lab_event(f"search {label}: {search.axis}={value} "
                                       + ("measured nothing" if value in asked else "is not in the plan's cases")
                                       + ": the search stops here")
                break
            asked.append(value)
            yield from by_load[value]
        answer = search_answer(grid, measured, objective, search.tolerance, axis=search.axis)
        best = answer.best
        said = (f"best {best.iops.mean:,.0f} IOPS at {search.axis}={best.load} within {objective.label}<="
                f"{format_latency_ns(objective.limit_ns)}" if best is not None else "no load meets the objective")
        knee = (f"; knee at {search.axis}={answer.knee}" if answer.knee is not None
                else f"; knee: {answer.knee_kind.value}")
        run.observer.lab_event(f"search {label}: {said}{knee} ({answer.reason}); measured {answer.measured} of "
                               f"{answer.grid_size} grid values: {', '.join(str(v) for v in sorted(measured))}")


def _search_key(case: Case, axis: LoadAxis) -> tuple[SearchKey, int]:
    """(what a search group shares: the case without its load, `stats.curve.search_key`; the load)."""
    from storbench.stats.curve import axis_value, search_key

    return search_key(case, axis), axis_value(case, axis)


def _search_points(run: _Run, key: SearchKey, axis: LoadAxis, objective: LatencyObjective
                   ) -> dict[int, SearchPoint]:
    """The load values of one search group (``key``) measured so far in this run (its stored repetitions, those
    of an interrupted run's earlier session too)."""
    from storbench.stats.observations import observations
    from storbench.stats.search import search_point

    loads = {c.case_id: load for c in run.cases for k, load in [_search_key(c, axis)] if k == key}
    found: dict[int, list[Observation]] = {}
    for o in observations(r for r in run.store.repetitions([run.run_id]) if r.case.case_id in loads):
        found.setdefault(loads[o.case.case_id], []).append(o)
    points = {load: search_point(load, obs, objective) for load, obs in found.items()}
    return {load: point for load, point in points.items() if point is not None}


def _run_group(run: _Run, lab: LabPoint, items: Sequence[ScheduledRepetition], first_position: int
               ) -> tuple[int, int]:
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
                     keep=run.keep_lab, servers=servers) as session:
        recorders: dict[tuple[str, ...], TelemetryRecorder] = {}  # per cluster: its own OSDs' sockets
        written: set[tuple[str, tuple[tuple[str, str], ...]]] = set()  # (target, its prepared details) written
        for item in _in_order(run, items):
            if run.stop_before(item.rep_index):  # a round has ended: is the answer known?
                break
            if run.settled_case(item.case):  # steady_state: this point is steady already
                continue
            changed = session.enter(item.case)
            for line in (changed or "").splitlines():
                observer.lab_event(line)
            name, details = item.case.target.name, session.for_case(item.case).details
            if name in wanted and (name, details) not in written:  # once per image, pool, file set or cluster
                written.add((name, details))
                same = [c for c in cases if c.target.name == name and session.for_case(c).details == details]
                _precondition(run, wanted[name], same, session.for_case(item.case))
            observer.repetition_started(item, position)
            prepared = session.for_case(item.case)
            recorder = None
            if config.telemetry.enabled:
                from storbench.telemetry.recorder import TelemetryRecorder

                sockets = session.sockets_for(item.case)
                if sockets not in recorders:
                    recorders[sockets] = TelemetryRecorder(config.telemetry, sockets)
                recorder = recorders[sockets]
                recorder.link_overrides = session.link_rates(item.case)  # shaped veths have no speed of their own
            if recorder is not None and config.telemetry.client_ceiling and item.case.case_id not in ceilings:
                ceilings[item.case.case_id] = measure_client_ceiling(run.executors.local, item.case, caps)
            executor = run.executors.for_target(item.case.target)
            job_texts = executor.job_texts(item.case, prepared.binding, item.rep_index)
            timeout_s = watchdog_seconds(item.case, config.timeout_grace)
            fio = FioSetup(version=caps.version, binary=prepared.binding.fio_binary, env=prepared.binding.env)
            if recorder is not None:
                recorder.start()
            try:
                outcome = redact_outcome(executor.run_case(item.case, job_texts, item.rep_index, timeout_s, fio),
                                         env_secrets(fio.env))
            except BaseException:
                if recorder is not None:
                    recorder.stop()
                raise
            telemetry = (recorder.finish(outcome, item.case, ceilings.get(item.case.case_id))
                         if recorder is not None else None)
            if outcome.status != Status.OK and (health := session.health_for(item.case)):
                outcome = replace(outcome, error=f"{outcome.error}; cluster health: {health}")
            run.store.save_repetition(run.run_id, item.case, item.rep_index, outcome,
                                      (*prepared.details, *item.case.lab.pairs()), telemetry)
            if outcome.status != Status.OK:
                failed += 1
            observer.repetition_finished(item, position, outcome)
            position += 1
            ran += 1
            run.settled_case(item.case, tell=True)
    return failed, ran
