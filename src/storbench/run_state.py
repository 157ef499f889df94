"""A run in progress (shell): what its lab groups share (`RunState`: the plan, the store, the executor of each
target: `Executors`) and when it stops: a steady-state point once steady and its `confirm` rounds measured, the
run once `repeat: {until: ...}` is answered (`answered`) or its `--budget` is spent.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from storbench.checks import Checked
from storbench.config import LoadedPlan, RepeatConfig, ci_stop_confidence, repeat_bounds
from storbench.config.faults import fault_steps
from storbench.events import BudgetReached, CiLook, SequentialLook, SteadyProgress
from storbench.execute.base import Executor
from storbench.execute.hosts import HostsExecutor
from storbench.execute.k8s_access import DEFAULT_CLUSTER, ClusterAccess
from storbench.execute.kubernetes import KubernetesExecutor
from storbench.faults import FaultStep
from storbench.lab.hosts import HostsLab
from storbench.lab.hosts_conf import is_lab_server
from storbench.model import Case, PvcTarget, RepetitionOutcome, ScheduledRepetition, TargetSpec
from storbench.sessions import LabObserver
from storbench.stats.adaptive import all_decided, ci_reached, decided_verdicts
from storbench.stats.observations import observations
from storbench.stats.run_questions import steady_rule
from storbench.stats.selectors import parse_selector
from storbench.stats.sequential import SequentialPlan
from storbench.stats.steady import SteadyStatus, judge_repetitions
from storbench.store import Store

if TYPE_CHECKING:
    from storbench.lab.k8s import K8sLabInfo
    from storbench.stats.steady import SteadyState


class RunObserver(LabObserver, Protocol):
    def run_started(self, run_id: int, to_run: int, already_done: int, eta_s: float) -> None: ...

    def repetition_started(self, item: ScheduledRepetition, position: int) -> None: ...

    def repetition_finished(self, item: ScheduledRepetition, position: int, outcome: RepetitionOutcome) -> None: ...


def run_label(run_id: int, host: str, db_path: str) -> str:
    """The label of everything a run creates in a cluster: the run id alone repeats across results databases
    (two operators' "run 1"), so a token of this machine and database is added; a resumed run keeps it."""
    # a PostgreSQL store by its URL as given (a path made of it would change with the working directory)
    where = db_path if "://" in db_path else os.path.realpath(db_path)
    token = hashlib.sha256(f"{host}:{where}".encode()).hexdigest()[:8]
    return f"run{run_id}-{token}"


class Executors:
    """The executor of each target, chosen once per target: a pvc target runs in Kubernetes pods (an executor
    per target, made on first use), any other on the plan's fio servers when it has some, else on ``local``
    (which also measures client ceilings). `close` removes what the pods' executors made (their claims)."""

    def __init__(self, local: Executor, servers: Sequence[str], fio_binary: str, label: str,
                 k8s_lab: K8sLabInfo | None, *, lab_servers: bool = False,
                 cluster: ClusterAccess = DEFAULT_CLUSTER) -> None:
        """``lab_servers``: the servers are storbench's hosts lab on this machine (not a plan's `hosts`)."""
        self.local = local
        in_lab = lab_servers and all(map(is_lab_server, servers))
        self.hosts = (HostsExecutor(fio_binary, servers, lab_servers=in_lab,
                                    end_left_jobs=(lambda: HostsLab().end_jobs()) if in_lab else None)
                      if servers else None)
        self.run_label = label
        self.k8s_lab = k8s_lab
        self.cluster = cluster
        self.chosen: dict[str, Executor] = {}
        self.pods: list[KubernetesExecutor] = []

    def for_target(self, spec: TargetSpec) -> Executor:
        if spec.name not in self.chosen:
            self.chosen[spec.name] = self._pods(spec) if isinstance(spec, PvcTarget) else self.hosts or self.local
        return self.chosen[spec.name]

    def _pods(self, spec: PvcTarget) -> KubernetesExecutor:
        """Pods on the k8s lab, else on the operator's cluster (`--kubeconfig`, `--context`; else $KUBECONFIG or
        ~/.kube/config), never a plan's."""
        lab = self.k8s_lab
        executor = KubernetesExecutor(
            lab.kubeconfig if lab else self.cluster.kubeconfig, spec.namespace, self.run_label,
            default_storage_class=None if lab is None else (
                "storbench-local-block" if spec.volume_mode == "Block" else lab.storage_class),
            context=None if lab else self.cluster.context, default_image=lab.fio_image if lab else None,
            pod_security=spec.pod_security)
        self.pods.append(executor)
        return executor

    def close(self) -> None:
        for executor in self.pods:
            executor.close()


@dataclass(frozen=True)
class RunState:
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
    session: str = field(default_factory=lambda: secrets.token_hex(8))  # this session of the run, apart from others
    cleared: set[str] = field(default_factory=set)  # cases whose NFS metadata files this session cleared before

    @property
    def faults(self) -> tuple[FaultStep, ...]:
        """The plan's faults, done in every repetition (none: the driver does nothing)."""
        return fault_steps(self.loaded.config.faults)

    def settled_case(self, case: Case, *, tell: bool = False) -> bool:
        """For `steady_state`: whether ``case``'s rounds so far are steady with their rounds after the window
        measured (or reached max_rounds), so no more of them run; with ``tell``, the observer hears how the point
        stands."""

        rule = steady_rule(self.loaded.config)
        if rule is None:
            return False
        if case.case_id in self.settled:
            return True

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

        assert state.window is not None
        if state.status is not SteadyStatus.STEADY:
            self.observer.event(SteadyProgress(case, state, ran, "measuring"))
        elif last == state.window.rounds[-1]:
            self.observer.event(SteadyProgress(case, state, ran, "found"))
        elif state.settled:
            self.observer.event(SteadyProgress(case, state, ran, "settled"))

    @property
    def stopped(self) -> bool:
        return bool(self.looks["stopped"])

    def stop_before(self, rep_index: int) -> bool:
        """Before a repetition of round ``rep_index``: when it starts a new round, look at the budget, and from
        `repeat.min` on at the answer so far (once per round); True when the run should stop here. A steady-state
        point runs its rounds back to back, each repetition its next: the budget is looked at before every one
        (another point's first too).
        (The rounds of the run's order only grow: a second point's had never passed the first's, and a budget
        had stopped nothing after the first steady-state point; nor before `min`, which only the answer waits
        for.)"""
        if self.stopped:
            return True
        new_round = rep_index > self.looks["looked_at"]
        if not new_round and self.loaded.config.steady_state is None:
            return False
        if new_round:
            self.looks["looked_at"] = rep_index
        if new_round and rep_index >= repeat_bounds(self.loaded.config)[0] and answered(self, rep_index):
            self.looks["stopped"] = 1
        elif (self.deadline_s is not None and (rep_index > 0 or self.loaded.config.steady_state is not None)
              and self.clock() >= self.deadline_s):  # the run's first round runs whatever came before it
            self.observer.event(BudgetReached(rep_index))
            self.looks["stopped"] = 1
        return self.stopped


def answered(run: RunState, rounds: int) -> bool:
    """For `repeat: {until: ...}`: whether the rounds stored so far answer the plan's question (the stopping rule
    stays valid however often this looks; see stats/sequential.py). Tells the observer how each metric stands."""

    config = run.loaded.config
    repeat = config.repeat
    if not isinstance(repeat, RepeatConfig):
        return False
    seen = observations(run.store.repetitions([run.run_id]))
    ci_pct = repeat.ci_pct
    if ci_pct is not None:
        done = ci_reached(seen, ci_pct)
        run.observer.event(CiLook(rounds, ci_stop_confidence(ci_pct), ci_pct, done))
        return done
    assert config.compare is not None
    plan = SequentialPlan(min_rounds=repeat.min, max_rounds=repeat.max, margin=config.compare.margin)
    verdicts = decided_verdicts(seen, parse_selector(config.compare.baseline), parse_selector(config.compare.candidate),
                                config.compare.metrics, plan)
    for v in verdicts:
        run.observer.event(SequentialLook(rounds, v, plan.max_rounds))
    return all_decided(verdicts)
