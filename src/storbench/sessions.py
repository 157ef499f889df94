"""Lab sessions (shell): the test beds a run needs, up for it and torn down after it, also when it fails or is
interrupted, with the targets that live on them prepared; and storbench's own test files, made when the run
starts and removed when it ends."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from storbench.checks import Checked
from storbench.config import LoadedPlan
from storbench.errors import UserError, described
from storbench.events import CleanUpFailed, LabTornDown, RunEvent, TestDataCleaned
from storbench.faults import FaultStep, find_offer
from storbench.fio.options import FioCapabilities
from storbench.lab.base import LabGroup, LabLost, RunLab, SessionLabs, StateWatch
from storbench.lab.base import LabObserver as LabObserver
from storbench.lab.ceph_conf import clusters_of as clusters_of
from storbench.lab.ceph_conf import rbd_pools as rbd_pools
from storbench.lab.hosts_kind import KIND as HOSTS
from storbench.lab.k8s_kind import KIND as K8S
from storbench.lab.labdir import each_step
from storbench.lab.registry import KINDS
from storbench.model import Case, LabPoint, RbdTarget, ScheduledRepetition, cluster_of, is_metadata, lab_group_key
from storbench.shell import interrupts_held
from storbench.targets.base import PreparedTarget
from storbench.targets.local import (
    claim_metadata_dir,
    claim_test_files,
    empty_operation_dir,
    remove_metadata_dir,
    remove_test_files,
    test_file_names,
)
from storbench.targets.nfs import clear_nfs_metadata_files, clears_by_name, remove_laid_out
from storbench.targets.registry import LabEnvironment, by_target, prepare_target
from storbench.targets.s3 import Removal, RunObjects, is_run_object_prefix, remove_objects, service_of
from storbench.telemetry.recorder import SYSTEM_CEPH_SOCKETS

if TYPE_CHECKING:
    from storbench.lab.hosts import HostsLabInfo
    from storbench.lab.k8s import K8sLabInfo

T = TypeVar("T")


def group_by_lab(items: Sequence[ScheduledRepetition], *, bring_up: str = "once"
                 ) -> list[tuple[LabPoint, list[ScheduledRepetition]]]:
    """Repetitions grouped by the labs they run on, in order of first appearance, the run order kept within a
    group (a lab session each). By `lab.ceph.bring_up`:

    - ``once``: a group per cluster (``cluster_of``), brought up once; points that differ only in settings a
      running cluster holds side by side (pool sizes, live OSD options) alternate on it as the schedule
      interleaves them;
    - ``each_repetition``: a group per cluster and round, so the interleaved schedule brings the configurations
      up in the order A B B A, one instance per round;
    - ``side_by_side``: one group for all the Ceph clusters, up at once, their repetitions alternating.
    The group's lab point is that of its first repetition's cluster."""

    groups: dict[tuple[object, int], list[ScheduledRepetition]] = {}
    for item in items:
        fresh = bring_up == "each_repetition" and item.case.lab.ceph is not None
        groups.setdefault((lab_group_key(item.case.lab, bring_up), item.rep_index if fresh else -1), []).append(item)
    return [(cluster_of(group[0].case.lab), group) for group in groups.values()]


@dataclass(frozen=True)
class LabContext:
    """What a lab session hands the run loop: prepared targets (by name, and by case where a case of the target
    has a pool or a cluster of its own), where Ceph's admin sockets are, and the labs running per cluster (the Ceph
    clusters, by ``cluster_of(case.lab)``), which the lab kinds' live settings and health read."""

    targets: dict[str, PreparedTarget]
    ceph_socket_patterns: tuple[str, ...]
    per_case: Mapping[str, PreparedTarget] = field(default_factory=dict)
    ceph_labs: Mapping[LabPoint, object] = field(default_factory=dict)  # by cluster_of(case.lab)
    sockets_by_cluster: Mapping[LabPoint, tuple[str, ...]] = field(default_factory=dict)

    def for_case(self, case: Case) -> PreparedTarget:
        return self.per_case.get(case.case_id) or self.targets[case.target.name]

    def sockets_for(self, case: Case) -> tuple[str, ...]:
        """The admin sockets telemetry reads for ``case``: its own cluster's, not the one idling beside it."""
        return self.sockets_by_cluster.get(cluster_of(case.lab), self.ceph_socket_patterns)

    def health_for(self, case: Case) -> str | None:
        """The health of the lab ``case`` runs on, in one line, for the evidence of a repetition that failed (a
        Ceph cluster's `ceph health detail`); None off a lab or when no lab kind has a health to tell."""
        for kind in KINDS.values():
            said = kind.health(case, self.ceph_labs)
            if said is not None:
                return said
        return None

    def lost_for(self, case: Case, faulted: frozenset[str] = frozenset()) -> LabLost | None:
        """What of the lab ``case`` runs on stopped with no fault asking, and what to do (`LabKind.lost`;
        ``faulted``: the targets of the faults done in the repetition)."""
        return next((said for kind in KINDS.values() if (said := kind.lost(case, self.ceph_labs, faulted)) is not None),
                    None)

    def link_rates(self, case: Case) -> dict[str, int]:
        """Interface -> bits/s of the shaped links while ``case`` runs (telemetry's link speeds: the hosts lab's)."""
        rates: dict[str, int] = {}
        for kind in KINDS.values():
            rates.update(kind.link_rates(case))
        return rates

    def enter(self, case: Case) -> list[RunEvent]:
        """Make the labs what ``case`` asks for before its turn, each kind in the registry's order: the client
        hosts' link rate (traffic control), its OSD options (cache size, memory target, `lab.ceph.config`, CPU
        quota) applied to its running cluster. What changed."""
        return [event for kind in KINDS.values() if (event := kind.enter(case, self.ceph_labs)) is not None]

    def fault(self, step: FaultStep, case: Case, *, restore: bool) -> str:
        """Do (or undo) one of a plan's faults on the lab ``case`` runs on: the kind that offers it does it
        (`lab.base.LabKind.fault`); says what was done."""
        for kind in KINDS.values():
            if find_offer(step, kind.faults) is not None:
                return kind.fault(step, case, self.ceph_labs, restore=restore)
        raise UserError(f"no lab offers {step.action} {step.target}")

    def faults_for(self, case: Case, steps: Sequence[FaultStep]) -> tuple[FaultStep, ...]:
        """A plan's faults for one case, with those the lab kinds add from the case's lab settings, in time order
        (`LabKind.timed_faults`)."""
        added = [extra for kind in KINDS.values() for extra in kind.timed_faults(case, steps)]
        return tuple(sorted((*steps, *added), key=lambda step: step.at_s))

    def watch(self, case: Case) -> StateWatch | None:
        """What the lab ``case`` runs on watches of itself through a repetition with faults (`LabKind.watch`)."""
        return next((found for kind in KINDS.values() if (found := kind.watch(case, self.ceph_labs)) is not None),
                    None)

    def settle(self, case: Case) -> list[RunEvent]:
        """After a repetition with faults: every lab kind makes its lab whole again (`LabKind.settle`)."""
        return [event for kind in KINDS.values() if (event := kind.settle(case, self.ceph_labs)) is not None]


@dataclass
class _Prepared:
    targets: dict[str, PreparedTarget]
    per_case: dict[str, PreparedTarget]


def _prepare(grouped: Mapping[str, Sequence[Case]], env: LabEnvironment, prepared: _Prepared, suffix: str,
             *, several: bool) -> None:
    """Prepare the targets of ``grouped`` on one lab environment: rbd targets of several pool sizes get one
    prepared target per pool; with ``several`` clusters every prepared target is per case (named with
    ``suffix``)."""
    for name, target_cases in grouped.items():
        spec = target_cases[0].target
        pools = rbd_pools(target_cases)
        if isinstance(spec, RbdTarget) and len({pools.get(c.case_id) for c in target_cases} - {None}) > 1:
            for pool in sorted({pools[c.case_id][0] for c in target_cases}):
                on_pool = [c for c in target_cases if pools[c.case_id][0] == pool]
                made = prepare_target(replace(spec, pool=pool), on_pool, env)
                prepared.per_case.update((c.case_id, made) for c in on_pool)
                prepared.targets[f"{name} {pool}{suffix}"] = made
        else:
            made = prepare_target(spec, target_cases, env)
            prepared.targets[f"{name}{suffix}"] = made
            if several:
                prepared.per_case.update((c.case_id, made) for c in target_cases)


@contextmanager
def lab_session(loaded: LoadedPlan, lab: LabPoint, cases: Sequence[Case], checked: Checked,
                observer: LabObserver, *, keep: bool | Callable[[bool], bool],
                servers: Sequence[str] = ()) -> Iterator[LabContext]:
    """Bring up the labs this group needs (if any), each kind in the registry's order (`lab.registry`): the
    volume, the NFS server, its Ceph cluster or its clusters side by side, each on its own ports and directory;
    prepare the targets that live on them (rbd images, NFS files, CephFS directories, the volume's device), and
    tear the labs down afterwards, in reverse — also when the run fails or is interrupted. ``keep``: leave them up
    (asked when the group ends, told whether it is failing). ``servers``: the fio servers the cases run on (empty:
    this machine)."""
    group = LabGroup(loaded, lab, cases, checked, tuple(servers), observer)
    wanted = [kind for kind in KINDS.values() if kind.wanted(group)]
    prepared = _Prepared(dict(checked.targets), {})
    sockets: tuple[str, ...] = ()
    if any(c.target.kind in ("rbd", "cephfs") for c in cases):

        sockets = SYSTEM_CEPH_SOCKETS

    def prepare(grouped: Mapping[str, Sequence[Case]], env: LabEnvironment, suffix: str, several: bool) -> None:
        _prepare(grouped, env, prepared, suffix, several=several)

    labs = SessionLabs(LabEnvironment(fio_binary=checked.capabilities.binary, servers=tuple(servers)), prepare)
    failing = False
    owners: list[str] = []  # the lab kind of each of labs.downs
    try:
        for kind in wanted:
            try:
                kind.bring_up(group, labs)
            finally:
                owners += [kind.name] * (len(labs.downs) - len(owners))
        if len(labs.sockets_by_cluster) == 1:
            sockets = next(iter(labs.sockets_by_cluster.values()))
        elif labs.sockets_by_cluster:
            sockets = tuple(p for patterns in labs.sockets_by_cluster.values() for p in patterns)
        # every other target a lab serves (NFS files, the volume lab's device), and rbd/cephfs targets of the
        # user's own cluster (no Ceph lab): prepared once
        rest = {name: target_cases for name, target_cases in by_target(cases).items()
                if name not in checked.targets and name not in labs.claimed}
        _prepare(rest, labs.environment, prepared, "", several=False)
        yield LabContext(targets=prepared.targets, ceph_socket_patterns=sockets, per_case=prepared.per_case,
                         ceph_labs=labs.running, sockets_by_cluster=labs.sockets_by_cluster)
    except BaseException:
        failing = True
        raise
    finally:
        # every step of the clean-up runs, whichever of them fails (an S3 listing on an unhealthy cluster, an
        # unmount): one error must not leave the labs after it up; the first is raised once all have run, unless
        # the session is ending on an error of its own, which is the one to tell
        steps: list[tuple[str, Callable[[], None]]] = [("", lambda: remove_run_test_files(
            [t for name, t in prepared.targets.items() if name not in checked.targets], observer,
            keep_files=loaded.config.keep_files))]
        with interrupts_held():  # a Ctrl-C meanwhile waits for the last step: a lab half torn down stays up
            kept, errors = False, []
            try:  # asked now (held too): whether a later group runs is known now
                kept = keep(failing) if callable(keep) else keep
            except Exception as asking:  # the asking failed (the store unread): the labs go
                errors.append(("whether to keep the labs", "", asking))
            if not kept:
                steps += reversed(list(zip(owners, labs.downs, strict=True)))
            errors += [(f"{owner} lab" if owner else "the run's test data", owner, raised)
                       for owner, step in steps for raised in each_step([step])]
            # every error told but the one the session ends on (its own, else the first of these)
            for what, owner, told in errors[0 if failing else 1:]:
                observer.event(CleanUpFailed(what, described(told), owner))
            if not kept:
                failed = {owner for _, owner, _ in errors}
                for name in sorted(kind.name for kind in wanted if kind.name not in failed):
                    observer.event(LabTornDown(name))
            if errors and not failing:  # inside: a step's error goes on, not a press held meanwhile
                raise errors[0][2]


def claim_run_test_files(targets: Mapping[str, PreparedTarget], cases: Sequence[Case]) -> None:
    """Create the test files of local directories (storbench's own, no links followed) right before the run;
    the run removes them when it ends."""
    for name, prepared in targets.items():
        details = dict(prepared.details)
        directory = details.get("directory")
        if directory is None or details.get("checked") == "on the fio servers":
            continue
        mine = [c for c in cases if c.target.name == name]
        refusal = claim_test_files(Path(directory), test_file_names(mine))
        if refusal is None and any(is_metadata(c.workload.rw) for c in mine):
            refusal = claim_metadata_dir(Path(directory), max((c.workload.dirs or 0 for c in mine), default=0) or None)
        if refusal:
            raise UserError(f"target '{name}': {refusal}",
                            hint="remove it; storbench only writes test files it created itself")


def clear_left_files(prepared: PreparedTarget, case: Case, *, cleared: set[str]) -> int:
    """Before a repetition of a create or of the metadata cycle: the files an earlier repetition left in its
    operation's directory removed (`targets.local.empty_operation_dir`), so every create makes its files. On an NFS
    export by name (`targets.nfs`), once a session for each case (``cleared``: those done; what a killed session left),
    each repetition after clearing what it left itself (`targets.nfs.clear_after`). On fio servers they are not
    reached from here."""
    details = dict(prepared.details)
    if case.workload.rw not in ("create", "metadata"):
        return 0
    if clears_by_name(prepared):
        if case.case_id not in cleared:
            clear_nfs_metadata_files(prepared, case)
            cleared.add(case.case_id)
        return 0
    directory = details.get("directory")
    if directory is None or prepared.laid_out or details.get("checked") == "on the fio servers":
        return 0
    return empty_operation_dir(Path(directory), case.workload.rw)


def session_object_prefixes(targets: Iterable[PreparedTarget]) -> set[tuple[str, str, str]]:
    """(endpoint, bucket, object prefix) of the S3 targets this session prepared (each session a prefix of its own)."""
    return {(o.service.endpoint, o.bucket, o.prefix) for t in targets if (o := service_of(t)) is not None}


def remove_earlier_objects(targets: Iterable[PreparedTarget], earlier: Iterable[tuple[str, str, str]],
                           observer: LabObserver) -> None:
    """A resumed run's S3 objects that an earlier session of it wrote (each takes a prefix of its own; one killed
    left its objects in the operator's bucket, with nothing to remove them): removed where this session's target has
    the same endpoint and bucket, and only under a prefix storbench makes."""
    for prepared in targets:
        objects = service_of(prepared)
        if objects is None:
            continue
        for endpoint, bucket, prefix in sorted(earlier):
            if (endpoint, bucket) != (objects.service.endpoint, objects.bucket) or prefix == objects.prefix \
                    or not is_run_object_prefix(prefix):
                continue
            _remove_prefix(prepared.spec.name, objects, prefix, observer)


def _remove_prefix(name: str, objects: RunObjects, prefix: str, observer: LabObserver) -> None:
    """The objects under ``prefix`` in the target's bucket removed, and said (one target's failure is said, and
    leaves the others' clean-up and the run's own error as they are)."""
    try:
        removal = remove_objects(objects.service, objects.bucket, prefix)
    except UserError as exc:
        removal = Removal(0, 0, f"{exc.message} (objects {prefix}*)")
    if removal.removed or removal.why:
        observer.event(TestDataCleaned(name, objects.bucket, "objects", removal.removed, removal.refused,
                                       removal.why))


def remove_run_test_files(targets: Iterable[PreparedTarget], observer: LabObserver, *, keep_files: bool = False
                          ) -> None:
    """Test files go when the run ends (also when it fails or is interrupted), unless the plan says keep_files;
    directories on fio servers are theirs. An S3 target's objects go whatever keep_files says: they are PUT again
    every repetition (kept, they had stayed in the operator's bucket with nothing said and nothing to remove them)."""
    for prepared in targets:
        details = dict(prepared.details)
        directory = details.get("directory")
        objects = service_of(prepared)
        if objects is not None:
            _remove_prefix(prepared.spec.name, objects, objects.prefix, observer)
            continue
        if keep_files:
            continue
        if prepared.laid_out:  # an NFS export: no directory of ours, the files by name

            removed, why = remove_laid_out(prepared)
            url = details.get("url", "")
            if removed or why:
                left = len(prepared.laid_out) - removed if why else 0
                observer.event(TestDataCleaned(prepared.spec.name, url, "test files", removed, left, why))
            continue
        if directory is None or details.get("checked") == "on the fio servers":
            continue
        removed = remove_test_files(Path(directory)) + remove_metadata_dir(Path(directory))
        if removed:
            observer.event(TestDataCleaned(prepared.spec.name, str(directory), "test files", removed))


@contextmanager
def run_lab(lab: RunLab[T] | None, name: str, observer: LabObserver, *, keep: bool) -> Iterator[T | None]:
    """A lab kind's lab up for the whole run and torn down after it, also when the run fails or is interrupted
    (None: the plan has no such lab)."""
    if lab is None:
        yield None
        return
    failing = False
    try:
        info, said = lab.up()
        observer.event(said)
        yield info
    except BaseException:
        failing = True
        raise
    finally:
        if not keep:
            with interrupts_held():  # a Ctrl-C meanwhile waits for the lab to be down
                try:
                    lab.down()
                except Exception as error:
                    if not failing:
                        raise
                    # the run's own error is the one to end on: this one is told, not put in its place
                    observer.event(CleanUpFailed(f"{name} lab", described(error), name))
                else:
                    observer.event(LabTornDown(name))


@contextmanager
def client_hosts(loaded: LoadedPlan, caps: FioCapabilities, observer: LabObserver, *,
                 keep: bool) -> Iterator[tuple[str, ...]]:
    """The fio servers the plan's clients run on: its `hosts`, or a hosts lab brought up for the run and torn
    down after it. Empty: run fio locally."""
    config = loaded.config
    if config.hosts is not None:
        yield tuple(config.hosts.servers)
        return

    hosts: RunLab[HostsLabInfo] | None = HOSTS.for_run(loaded, caps)
    with run_lab(hosts, HOSTS.name, observer, keep=keep) as info:
        yield info.servers if info is not None else ()


@contextmanager
def kubernetes_lab(loaded: LoadedPlan, caps: FioCapabilities, observer: LabObserver, *,
                   keep: bool) -> Iterator[K8sLabInfo | None]:
    """The plan's single-node Kubernetes lab, up for the run and torn down after it (None: no lab)."""

    k8s: RunLab[K8sLabInfo] | None = K8S.for_run(loaded, caps)
    with run_lab(k8s, K8S.name, observer, keep=keep) as info:
        yield info
