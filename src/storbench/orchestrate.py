"""The run loop (shell): check everything, then run each repetition and store it the moment it ends.

check -> (new run | resume the latest run of this plan) -> for each scheduled repetition:
the target's executor renders its job texts and runs them (watchdog, judged outcome) -> store (one
transaction) -> tell the observer.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from storbench import __version__
from storbench.config import LoadedPlan
from storbench.errors import UserError, did_you_mean
from storbench.execute.base import Executor, FioSetup
from storbench.execute.fio_binary import fio_capabilities
from storbench.execute.hosts import HostsExecutor

if TYPE_CHECKING:
    from storbench.execute.kubernetes import KubernetesExecutor
    from storbench.lab.k8s import K8sLabInfo
from storbench.fio.jobfile import CEILING_RUNTIME_S, render_ceiling_job
from storbench.fio.options import REFUSED_ENGINES, FioCapabilities
from storbench.model import Case, LabPoint, PvcTarget, RepetitionOutcome, ScheduledRepetition, Status, TargetSpec
from storbench.plan import repetition_seconds, schedule, working_set_bytes
from storbench.store import Store
from storbench.targets.base import PreparedTarget
from storbench.targets.local import claim_test_files, remove_test_files, test_file_names
from storbench.targets.registry import LabEnvironment, by_target, check_targets, prepare_target

# Slowest layout speed the watchdog allows for before calling fio hung.
WATCHDOG_LAYOUT_BYTES_PER_S = 20 * 1024 * 1024


class RunObserver(Protocol):
    def run_started(self, run_id: int, to_run: int, already_done: int, eta_s: float) -> None: ...

    def repetition_started(self, item: ScheduledRepetition, position: int) -> None: ...

    def repetition_finished(self, item: ScheduledRepetition, position: int, outcome: RepetitionOutcome) -> None: ...

    def lab_event(self, message: str) -> None: ...


@dataclass(frozen=True)
class Checked:
    """Everything verified before the first byte of I/O."""

    capabilities: FioCapabilities
    targets: dict[str, PreparedTarget]


@dataclass(frozen=True)
class RunResult:
    run_id: int
    ran: int
    skipped: int
    failed: int


def check_fio_against_plan(loaded: LoadedPlan, cases: Sequence[Case], caps: FioCapabilities) -> None:
    """Engines exist and are allowed; pass-through options are options of this fio (and engine)."""
    source = loaded.source
    for case in cases:
        engine = case.workload.ioengine
        where = source.where(("workload", "ioengine"))
        if engine in REFUSED_ENGINES:
            raise UserError(f"ioengine '{engine}' runs programs instead of doing I/O", where=where,
                            hint="pick a storage engine such as libaio, io_uring or psync")
        if caps.engines and engine not in caps.engines and case.target.kind != "nfs":  # nfs: its own fio
            raise UserError(f"ioengine '{engine}' is not available in {caps.binary} ({caps.version})", where=where,
                            hint=did_you_mean(engine, caps.engines) or "see `fio --enghelp`")
        known = caps.options_for(engine)
        for name, _value in case.workload.fio_options:
            if name not in known:
                raise UserError(f"'{name}' is not an option of {caps.version} with ioengine {engine}",
                                where=source.where(("workload", "fio", name)),
                                hint=did_you_mean(name, known) or "see `fio --cmdhelp`")


def check_everything(loaded: LoadedPlan, cases: Sequence[Case], fio_binary: str, *, create: bool) -> Checked:
    """All checks that can fail, before anything runs: never a half-run on a bad plan."""
    engines = tuple(sorted({case.workload.ioengine for case in cases}))
    caps = fio_capabilities(fio_binary, engines)
    check_fio_against_plan(loaded, cases, caps)
    targets = check_targets(cases, create=create, remote=loaded.config.hosts is not None,
                            where=lambda name: loaded.source.where(("targets", name)))
    return Checked(capabilities=caps, targets=targets)


def watchdog_seconds(case: Case, grace_s: float) -> float:
    return repetition_seconds(case) + working_set_bytes(case) / WATCHDOG_LAYOUT_BYTES_PER_S + grace_s


def mem_total_bytes() -> int | None:
    """MemTotal from /proc/meminfo: how much the page cache could hold."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def group_by_lab(items: Sequence[ScheduledRepetition]) -> list[tuple[LabPoint,
                                                                      list[ScheduledRepetition]]]:
    """Repetitions grouped by lab configuration, in order of first appearance (order kept within a group):
    each configuration is brought up once."""
    groups: dict[LabPoint, list[ScheduledRepetition]] = {}
    for item in items:
        groups.setdefault(item.case.lab, []).append(item)
    return list(groups.items())


@dataclass(frozen=True)
class LabContext:
    """What a lab session hands the run loop: prepared targets, and where Ceph's admin sockets are."""

    targets: dict[str, PreparedTarget]
    ceph_socket_patterns: tuple[str, ...]


@contextmanager
def lab_session(loaded: LoadedPlan, lab: LabPoint, cases: Sequence[Case], checked: Checked,
                observer: RunObserver, *, keep: bool) -> Iterator[LabContext]:
    """Bring up the labs this group needs (if any), prepare the targets that live on them (rbd images, NFS
    files, CephFS directories), and tear the labs down afterwards — also when the run fails or is interrupted."""
    kinds = set(lab.kinds())
    targets = dict(checked.targets)
    grouped = by_target(cases)
    downs: list[Callable[[], None]] = []
    sockets: tuple[str, ...] = ()
    if any(c.target.kind in ("rbd", "cephfs") for c in cases):
        from storbench.telemetry.recorder import SYSTEM_CEPH_SOCKETS

        sockets = SYSTEM_CEPH_SOCKETS
    lab_hosts = loaded.config.lab.hosts if loaded.config.lab else None
    on_servers = loaded.config.hosts is not None or lab_hosts is not None
    try:
        ceph_conf, cephfs_mount, nfs_url = None, None, None
        if lab.ceph is not None:
            from storbench.lab.ceph import CephLab
            from storbench.lab.ceph_conf import ceph_spec_for

            pools = tuple(c[0].target.pool for c in grouped.values() if c[0].target.kind == "rbd" and
                          c[0].target.pool)
            lab_spec = ceph_spec_for(lab.ceph, pools)
            observer.lab_event(f"ceph lab: bringing up {lab.describe()}")
            ceph_lab = CephLab()
            started = time.time()
            downs.append(ceph_lab.down)
            from storbench.lab.ceph_conf import LOOPBACK
            from storbench.lab.hosts import HostsLab
            from storbench.lab.hosts_conf import BRIDGE_ADDRESS

            # fio servers in network namespaces reach the cluster over their bridge, and find its conf
            info = ceph_lab.up(lab_spec, address=BRIDGE_ADDRESS if lab_hosts is not None else LOOPBACK)
            if lab_hosts is not None:
                shutil.copyfile(info.conf, HostsLab().ceph_conf)
            ceph_conf, cephfs_mount = info.conf, info.cephfs_mount
            sockets = (f"{info.root}/run/*.asok",)
            observer.lab_event(f"ceph lab: up in {time.time() - started:.0f}s ({info.conf})")
        if lab.nfs:
            from storbench.lab.nfs import NfsLab

            nfs_lab = NfsLab()
            downs.append(nfs_lab.down)
            nfs_info = nfs_lab.up()
            nfs_url = nfs_info.url
            observer.lab_event(f"nfs lab: up ({nfs_info.url}, exporting {nfs_info.export})")
        env = LabEnvironment(fio_binary=checked.capabilities.binary, ceph_conf=ceph_conf, cephfs_mount=cephfs_mount,
                             nfs_url=nfs_url, on_servers=on_servers)
        for name, target_cases in grouped.items():
            if name not in checked.targets:
                targets[name] = prepare_target(target_cases[0].target, target_cases, env)
        yield LabContext(targets=targets, ceph_socket_patterns=sockets)
    finally:
        if not loaded.config.keep_files:
            _remove_test_files([t for name, t in targets.items() if name not in checked.targets], observer)
        if not keep:
            for down in reversed(downs):
                down()
            for kind in sorted(kinds):
                observer.lab_event(f"{kind} lab: torn down")


def measure_client_ceiling(local: Executor, case: Case, caps: FioCapabilities) -> float | None:
    """IOPS of the case's job on fio's null engine, run by ``local`` (this machine's fio): the client's own
    ceiling. None when the probe fails — a missing ceiling must not fail the run."""
    outcome = local.run_case(case, (render_ceiling_job(case),), 0, CEILING_RUNTIME_S + 30.0,
                             FioSetup(version=caps.version, binary=caps.binary))
    if outcome.status != Status.OK:
        return None
    return sum(d.iops for client in outcome.clients for d in client.directions)


def _claim_test_files(targets: Mapping[str, PreparedTarget], cases: Sequence[Case]) -> None:
    """Create the test files of local directories (storbench's own, no links followed) right before the run;
    the run removes them when it ends."""
    for name, prepared in targets.items():
        details = dict(prepared.details)
        directory = details.get("directory")
        if directory is None or details.get("checked") == "on the fio servers":
            continue
        refusal = claim_test_files(Path(directory), test_file_names([c for c in cases if c.target.name == name]))
        if refusal:
            raise UserError(f"target '{name}': {refusal}",
                            hint="remove it; storbench only writes test files it created itself")


def _remove_test_files(targets: Iterable[PreparedTarget], observer: RunObserver) -> None:
    """Test files in local directories go when the run ends (also when it fails or is interrupted), unless the
    plan says keep_files; directories on fio servers are theirs."""
    for prepared in targets:
        details = dict(prepared.details)
        directory = details.get("directory")
        if directory is None or details.get("checked") == "on the fio servers":
            continue
        removed = remove_test_files(Path(directory))
        if removed:
            observer.lab_event(f"target {prepared.spec.name}: removed {removed} test files from {directory} "
                               "(keep_files: true keeps them)")


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
    keep_lab: bool = False,
    clock: Callable[[], float] = time.time,
) -> RunResult:
    config = loaded.config
    caps = checked.capabilities
    if resume:
        previous = store.latest_run_of_plan(config.name)
        if previous is None:
            raise UserError(f"nothing to resume: no earlier run of plan '{config.name}' in {store.path}",
                            hint="run without --resume to start one")
        run_id = previous.run_id
        store.update_run_plan(run_id, loaded.source.text, plan_sha256(loaded.source.text))
        done = store.completed(run_id)
    else:
        run_id = store.create_run(
            plan_name=config.name, plan_text=loaded.source.text, plan_sha256=plan_sha256(loaded.source.text),
            source="run", storbench_version=__version__, fio_version=caps.version, host=platform.node(),
            kernel=platform.release(), run_order=config.order, seed=config.seed, tags=config.tags,
            started_at_s=clock(), mem_total_bytes=mem_total_bytes(), cpu_count=os.cpu_count(),
        )
        done = set()
    order = schedule(cases, config.repeat, config.order, config.seed)
    todo = [item for item in order if (item.case.case_id, item.rep_index) not in done]
    observer.run_started(run_id, len(todo), len(order) - len(todo), sum(repetition_seconds(i.case) for i in todo))
    failed = 0
    position = 0
    with client_hosts(loaded, caps, observer, keep=keep_lab) as servers, \
            kubernetes_lab(loaded, caps, observer, keep=keep_lab) as k8s_lab:
        executors = Executors(executor, servers, caps.binary, run_label(run_id, platform.node(), store.path), k8s_lab)
        run = _Run(loaded, checked, store, executors, observer, run_id, keep_lab, ceilings={})
        try:
            _claim_test_files(checked.targets, cases)
            for lab, items in group_by_lab(todo):
                failed += _run_group(run, lab, items, position)
                position += len(items)
        finally:
            executors.close()
            if not config.keep_files:
                _remove_test_files(checked.targets.values(), observer)
    store.finish_run(run_id, clock())
    return RunResult(run_id=run_id, ran=len(todo), skipped=len(order) - len(todo), failed=failed)


@contextmanager
def client_hosts(loaded: LoadedPlan, caps: FioCapabilities, observer: RunObserver, *,
                 keep: bool) -> Iterator[tuple[str, ...]]:
    """The fio servers the plan's clients run on: its `hosts`, or a hosts lab brought up for the run and torn
    down after it. Empty: run fio locally."""
    config = loaded.config
    if config.hosts is not None:
        yield tuple(config.hosts.servers)
        return
    lab_hosts = config.lab.hosts if config.lab else None
    if lab_hosts is None:
        yield ()
        return
    from storbench.lab.hosts import HostsLab

    lab = HostsLab()
    started = time.time()
    try:
        info = lab.up(lab_hosts.count, caps.binary)
        observer.lab_event(f"hosts lab: {info.count} fio servers up in {time.time() - started:.1f}s")
        yield info.servers
    finally:
        if not keep:
            lab.down()
            observer.lab_event("hosts lab: torn down")


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
                 k8s_lab: K8sLabInfo | None) -> None:
        self.local = local
        self.hosts = HostsExecutor(fio_binary, servers) if servers else None
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


@contextmanager
def kubernetes_lab(loaded: LoadedPlan, caps: FioCapabilities, observer: RunObserver, *,
                   keep: bool) -> Iterator[K8sLabInfo | None]:
    """The plan's single-node Kubernetes lab, up for the run and torn down after it (None: no lab)."""
    lab_config = loaded.config.lab.k8s if loaded.config.lab else None
    if lab_config is None:
        yield None
        return
    from storbench.lab.k8s import K8sLab

    lab = K8sLab()
    started = time.time()
    try:
        info = lab.up(caps.binary, block_volumes=lab_config.block_volumes, block_size_bytes=lab_config.block_size)
        observer.lab_event(f"k8s lab: up in {time.time() - started:.0f}s (KUBECONFIG={info.kubeconfig})")
        yield info
    finally:
        if not keep:
            lab.down()
            observer.lab_event("k8s lab: torn down")


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


def _run_group(run: _Run, lab: LabPoint, items: Sequence[ScheduledRepetition], first_position: int) -> int:
    """Run one lab configuration's repetitions; returns how many failed."""
    config = run.loaded.config
    caps = run.checked.capabilities
    observer, ceilings = run.observer, run.ceilings
    failed = 0
    position = first_position
    with lab_session(run.loaded, lab, [i.case for i in items], run.checked, observer,
                     keep=run.keep_lab) as session:
        recorder = None
        if config.telemetry.enabled:
            from storbench.telemetry.recorder import TelemetryRecorder

            recorder = TelemetryRecorder(config.telemetry, session.ceph_socket_patterns)
        for item in items:
            observer.repetition_started(item, position)
            prepared = session.targets[item.case.target.name]
            if recorder is not None and config.telemetry.client_ceiling and item.case.case_id not in ceilings:
                ceilings[item.case.case_id] = measure_client_ceiling(run.executors.local, item.case, caps)
            executor = run.executors.for_target(item.case.target)
            job_texts = executor.job_texts(item.case, prepared.binding, item.rep_index)
            timeout_s = watchdog_seconds(item.case, config.timeout_grace)
            fio = FioSetup(version=caps.version, binary=prepared.binding.fio_binary, env=prepared.binding.env)
            if recorder is not None:
                recorder.start()
            try:
                outcome = executor.run_case(item.case, job_texts, item.rep_index, timeout_s, fio)
            except BaseException:
                if recorder is not None:
                    recorder.stop()
                raise
            telemetry = (recorder.finish(outcome, item.case, ceilings.get(item.case.case_id))
                         if recorder is not None else None)
            run.store.save_repetition(run.run_id, item.case, item.rep_index, outcome,
                                      (*prepared.details, *item.case.lab.pairs()), telemetry)
            if outcome.status != Status.OK:
                failed += 1
            observer.repetition_finished(item, position, outcome)
            position += 1
    return failed
