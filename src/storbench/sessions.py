"""Lab sessions (shell): the test beds a run needs, up for it and torn down after it, also when it fails or is
interrupted, with the targets that live on them prepared; and storbench's own test files, made when the run
starts and removed when it ends."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from storbench.checks import Checked
from storbench.config import LoadedPlan, NfsTargetConfig, S3TargetConfig
from storbench.errors import UserError
from storbench.fio.options import FioCapabilities
from storbench.model import (
    Case,
    LabPoint,
    RbdTarget,
    ScheduledRepetition,
    cluster_of,
    interleaved_setting,
    is_metadata,
    rbd_pool_name,
)
from storbench.targets.base import PreparedTarget
from storbench.targets.local import (
    claim_metadata_dir,
    claim_test_files,
    remove_metadata_dir,
    remove_test_files,
    test_file_names,
)
from storbench.targets.registry import LabEnvironment, by_target, prepare_target
from storbench.targets.s3 import remove_objects, service_of
from storbench.units import format_link_rate

if TYPE_CHECKING:
    from storbench.lab.ceph import CephLab, CephLabInfo
    from storbench.lab.k8s import K8sLabInfo
    from storbench.targets.s3 import S3Service


class LabObserver(Protocol):
    def lab_event(self, message: str) -> None: ...


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
    from storbench.plan import lab_group_key

    groups: dict[tuple[object, int], list[ScheduledRepetition]] = {}
    for item in items:
        fresh = bring_up == "each_repetition" and item.case.lab.ceph is not None
        groups.setdefault((lab_group_key(item.case.lab, bring_up), item.rep_index if fresh else -1), []).append(item)
    return [(cluster_of(group[0].case.lab), group) for group in groups.values()]


@dataclass(frozen=True)
class LabContext:
    """What a lab session hands the run loop: prepared targets (by name, and by case where a case of the target
    has a pool or a cluster of its own), where Ceph's admin sockets are, and the running Ceph clusters."""

    targets: dict[str, PreparedTarget]
    ceph_socket_patterns: tuple[str, ...]
    per_case: Mapping[str, PreparedTarget] = field(default_factory=dict)
    ceph_labs: Mapping[LabPoint, CephLab] = field(default_factory=dict)  # by cluster_of(case.lab)
    sockets_by_cluster: Mapping[LabPoint, tuple[str, ...]] = field(default_factory=dict)

    def for_case(self, case: Case) -> PreparedTarget:
        return self.per_case.get(case.case_id) or self.targets[case.target.name]

    def sockets_for(self, case: Case) -> tuple[str, ...]:
        """The admin sockets telemetry reads for ``case``: its own cluster's, not the one idling beside it."""
        return self.sockets_by_cluster.get(cluster_of(case.lab), self.ceph_socket_patterns)

    def health_for(self, case: Case) -> str | None:
        """The health of the lab cluster ``case`` runs on, in one line (`ceph health detail`'s summary and its
        first checks), for the evidence of a repetition that failed; None off a lab cluster or when the cluster
        does not answer."""
        lab = self.ceph_labs.get(cluster_of(case.lab))
        if lab is None:
            return None
        try:
            lines = [line.strip() for line in lab.ceph("health", "detail", timeout_s=15).splitlines() if line.strip()]
        except UserError as exc:
            return f"the cluster did not answer `ceph health` ({exc.message})"
        return "; ".join(lines[:4]) or None

    def link_rates(self, case: Case) -> dict[str, int]:
        """Interface -> bits/s of the hosts lab's shaped links while ``case`` runs (telemetry's link speeds)."""
        if case.lab.link_bits_per_s is None:
            return {}
        from storbench.lab.hosts import HostsLab

        return HostsLab().link_rates()

    def enter(self, case: Case) -> str | None:
        """Make the lab what ``case`` asks for before its turn: the client hosts' link rate (traffic control),
        its OSD options (cache size, memory target, `lab.ceph.config`, CPU quota) applied to its running cluster.
        Says what changed, or None."""
        said = []
        if case.lab.link_bits_per_s is not None:
            from storbench.lab.hosts import HostsLab

            if HostsLab().set_link(case.lab.link_bits_per_s, case.lab.link_delay_s):
                said.append(f"hosts lab: links shaped to {format_link_rate(case.lab.link_bits_per_s)}"
                            + (f", {case.lab.link_delay_s * 1e3:g} ms delay" if case.lab.link_delay_s else ""))
        ceph = self._enter_ceph(case)
        if ceph:
            said.append(ceph)
        return "\n".join(said) or None

    def _enter_ceph(self, case: Case) -> str | None:
        ceph_lab = self.ceph_labs.get(cluster_of(case.lab))
        if ceph_lab is None or case.lab.ceph is None:
            return None
        from storbench.lab.ceph_conf import osd_options

        options = osd_options(case.lab.ceph)
        seconds = ceph_lab.apply_osd_options(options)
        cpus_changed = ceph_lab.limit_osd_cpus(case.lab.ceph.osd_cpus)  # after a restart: the new OSD processes
        pinned = ceph_lab.pin_osds(case.lab.ceph.osd_cpuset)
        if seconds is None and not cpus_changed and not pinned:
            return None
        live = " ".join(part for part in case.lab.describe().split()
                        if interleaved_setting(name := part.partition("=")[0]) and name not in ("pool_size", "cephfs"))
        if seconds is None:
            cores, cpus = case.lab.ceph.osd_cpus, case.lab.ceph.osd_cpuset
            said = []
            if cpus_changed:
                said.append(f"CPU quota {'lifted' if cores is None else f'set to {cores:g} cores per OSD'}")
            if pinned:
                said.append("pinned to every CPU" if cpus is None else f"pinned to CPUs {cpus}")
            return "ceph lab: OSD " + ", ".join(said)
        return f"ceph lab: OSDs restarted with {live or 'the base options'} in {seconds:.0f}s"


def rbd_pools(cases: Sequence[Case]) -> dict[str, tuple[str, int]]:
    """case id -> (pool, replica size) for the rbd cases sharing one cluster: one pool per size."""
    sizes: dict[str, list[int]] = {}
    for case in cases:
        if isinstance(case.target, RbdTarget) and case.lab.ceph is not None:
            sizes.setdefault(case.target.pool, []).append(case.lab.ceph.pool_size)
    return {case.case_id: (rbd_pool_name(case.target.pool, case.lab.ceph.pool_size, sizes[case.target.pool]),
                           case.lab.ceph.pool_size)
            for case in cases if isinstance(case.target, RbdTarget) and case.lab.ceph is not None}


def clusters_of(cases: Sequence[Case]) -> list[LabPoint]:
    """The Ceph clusters the cases run on, in order of first appearance (several when side by side)."""
    return list(dict.fromkeys(cluster_of(c.lab) for c in cases if c.lab.ceph is not None))


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
                observer: LabObserver, *, keep: bool, servers: Sequence[str] = ()) -> Iterator[LabContext]:
    """Bring up the labs this group needs (if any): its Ceph cluster, or its clusters side by side, each on its
    own ports and directory; prepare the targets that live on them (rbd images, NFS files, CephFS directories),
    and tear the labs down afterwards — also when the run fails or is interrupted. ``servers``: the fio servers
    the cases run on (empty: this machine)."""
    from storbench.units import format_bytes

    kinds = set(lab.kinds()) - {"hosts"}  # the hosts lab lives for the whole run (client_hosts)
    prepared = _Prepared(dict(checked.targets), {})
    downs: list[Callable[[], None]] = []
    sockets: tuple[str, ...] = ()
    ceph_labs: dict[LabPoint, CephLab] = {}
    sockets_by_cluster: dict[LabPoint, tuple[str, ...]] = {}
    if any(c.target.kind in ("rbd", "cephfs") for c in cases):
        from storbench.telemetry.recorder import SYSTEM_CEPH_SOCKETS

        sockets = SYSTEM_CEPH_SOCKETS
    lab_hosts = loaded.config.lab.hosts if loaded.config.lab else None
    clusters = clusters_of(cases)
    try:
        nfs_url, volume_device = None, None
        if lab.volume is not None:
            from storbench.lab.volume import VolumeLab, VolumeSpec, caps_text

            volume_lab = VolumeLab()

            def volume_down() -> None:
                if left_alone := volume_lab.down():
                    observer.lab_event(left_alone)

            downs.append(volume_down)
            volume, left_alone = volume_lab.up(VolumeSpec(lab.volume.size_bytes, lab.volume.iops,
                                                          lab.volume.bw_bytes_per_s))
            if left_alone:
                observer.lab_event(left_alone)
            volume_device = volume.device
            observer.lab_event(f"volume lab: up ({volume.device}, {format_bytes(lab.volume.size_bytes)}): "
                               f"{caps_text(volume.spec, volume.device)}")
        if lab.nfs:
            from storbench.lab.hosts_conf import BRIDGE
            from storbench.lab.nfs import NfsLab
            from storbench.lab.nfs_conf import NfsLabSpec

            nfs_lab = NfsLab()
            downs.append(nfs_lab.down)
            # with namespace hosts, the server joins their bridge: the clients mount it from there
            nfs_info = nfs_lab.up(NfsLabSpec(bridge=BRIDGE if lab_hosts is not None else None))
            nfs_url = nfs_info.servers_url or nfs_info.url
            observer.lab_event(f"nfs lab: up ({nfs_url}, exporting {nfs_info.export})")
        if len(clusters) > 1:
            from storbench.checks import meminfo_bytes
            from storbench.plan import cluster_memory_needs

            needed = sum(need.amount for cluster in clusters  # the same arithmetic `plan` checked, memory now
                         for need in cluster_memory_needs([c for c in cases if cluster_of(c.lab) == cluster]))
            available = meminfo_bytes("MemAvailable")
            if available is not None and needed > available:
                raise UserError(f"ceph lab: {len(clusters)} clusters side by side need about {format_bytes(needed)} "
                                f"of memory, {format_bytes(available)} is available",
                                hint="use lab.ceph.bring_up: each_repetition (one cluster at a time)")
        for slot, cluster in enumerate(clusters):
            from storbench.lab.ceph import CephLab
            from storbench.lab.ceph_conf import LOOPBACK, ceph_spec_for, osd_options
            from storbench.lab.hosts import HostsLab
            from storbench.lab.hosts_conf import BRIDGE_ADDRESS

            assert cluster.ceph is not None
            on_cluster = [c for c in cases if cluster_of(c.lab) == cluster]
            pools = rbd_pools(on_cluster)
            # the OSDs start with the first case's options: no restart before the first repetition
            first = next(c.lab.ceph for c in on_cluster if c.lab.ceph is not None)
            lab_spec = replace(ceph_spec_for(cluster.ceph, tuple(pools.values())), osd_config=osd_options(first),
                               slot=slot)
            settings = " ".join(part for part in cluster.describe().split() if not part.startswith("pool_size="))
            shown = ", ".join(f"{name} (size {size})" for name, size in lab_spec.pools)
            beside = f" (cluster {slot + 1} of {len(clusters)} side by side)" if len(clusters) > 1 else ""
            observer.lab_event(f"ceph lab: bringing up {settings}{beside}" + (f"; pools {shown}" if shown else ""))
            ceph_lab = CephLab.for_slot(slot)
            started = time.time()
            downs.append(ceph_lab.down)
            # fio servers in network namespaces reach the cluster over their bridge, and find its conf
            info = ceph_lab.up(lab_spec, address=BRIDGE_ADDRESS if lab_hosts is not None else LOOPBACK)
            if lab_hosts is not None:
                shutil.copyfile(info.conf, HostsLab().ceph_conf)
            ceph_labs[cluster] = ceph_lab
            sockets_by_cluster[cluster] = (f"{info.root}/run/*.asok",)
            observer.lab_event(f"ceph lab: up in {time.time() - started:.0f}s ({info.conf})")
            env = LabEnvironment(fio_binary=checked.capabilities.binary, ceph_conf=info.conf,
                                 cephfs_mount=info.cephfs_mount, nfs_url=nfs_url, servers=tuple(servers),
                                 s3=_lab_s3(ceph_lab, info) if info.spec.rgw else None)
            on_ceph = {name: group for name, group in by_target(on_cluster).items()
                       if name not in checked.targets and group[0].target.kind in ("rbd", "cephfs", "s3")}
            _prepare(on_ceph, env, prepared, f" ({settings})" if len(clusters) > 1 else "",
                     several=len(clusters) > 1)
        if len(sockets_by_cluster) == 1:
            sockets = next(iter(sockets_by_cluster.values()))
        elif sockets_by_cluster:
            sockets = tuple(p for patterns in sockets_by_cluster.values() for p in patterns)
        env = LabEnvironment(fio_binary=checked.capabilities.binary, ceph_conf=None, cephfs_mount=None,
                             nfs_url=nfs_url, volume_device=volume_device, servers=tuple(servers))
        # every other target a lab serves (NFS files, the volume lab's device), and rbd/cephfs targets of the
        # user's own cluster (no Ceph lab): prepared once
        on_a_lab_cluster = {c.case_id for c in cases if c.lab.ceph is not None}
        rest = {name: group for name, group in by_target(cases).items()
                if name not in checked.targets
                and not (group[0].target.kind in ("rbd", "cephfs", "s3") and group[0].case_id in on_a_lab_cluster)}
        _prepare(rest, env, prepared, "", several=False)
        yield LabContext(targets=prepared.targets, ceph_socket_patterns=sockets, per_case=prepared.per_case,
                         ceph_labs=ceph_labs, sockets_by_cluster=sockets_by_cluster)
    finally:
        if not loaded.config.keep_files:
            remove_run_test_files([t for name, t in prepared.targets.items() if name not in checked.targets],
                                  observer)
        if not keep:
            for down in reversed(downs):
                down()
            for kind in sorted(kinds):
                observer.lab_event(f"{kind} lab: torn down")


def _lab_s3(ceph_lab: CephLab, info: CephLabInfo) -> S3Service:
    """The lab radosgw as an S3 service for the run: its S3 user (made on first use; the keys stay in memory)
    and storbench's bucket on it."""
    from storbench.lab.ceph import rgw_endpoint
    from storbench.s3sign import S3Credentials
    from storbench.targets.s3 import LAB_BUCKET, S3Service, create_bucket

    service = S3Service(rgw_endpoint(info), "us-east-1", S3Credentials(*ceph_lab.s3_credentials()))
    create_bucket(service, LAB_BUCKET)
    return service


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


def remove_run_test_files(targets: Iterable[PreparedTarget], observer: LabObserver) -> None:
    """Test files in local directories go when the run ends (also when it fails or is interrupted), unless the
    plan says keep_files; directories on fio servers are theirs."""
    for prepared in targets:
        details = dict(prepared.details)
        directory = details.get("directory")
        objects = service_of(prepared)
        if objects is not None:
            removed = remove_objects(objects.service, objects.bucket, objects.prefix)
            if removed:
                observer.lab_event(f"target {prepared.spec.name}: removed {removed} objects from bucket "
                                   f"{objects.bucket}")
            continue
        if prepared.laid_out:  # an NFS export: no directory of ours, the files by name
            from storbench.targets.nfs import remove_laid_out

            removed, why = remove_laid_out(prepared)
            url = details.get("url", "")
            if removed:
                observer.lab_event(f"target {prepared.spec.name}: removed {removed} test files from {url} "
                                   "(keep_files: true keeps them)")
            if why:
                observer.lab_event(f"target {prepared.spec.name}: {len(prepared.laid_out) - removed} test files "
                                   f"stay on {url} (storbench.*): {why}")
            continue
        if directory is None or details.get("checked") == "on the fio servers":
            continue
        removed = remove_test_files(Path(directory)) + remove_metadata_dir(Path(directory))
        if removed:
            observer.lab_event(f"target {prepared.spec.name}: removed {removed} test files from {directory} "
                               "(keep_files: true keeps them)")


def servers_fio(loaded: LoadedPlan, caps: FioCapabilities) -> str:
    """The fio the namespace hosts' servers run: with an s3 target, the one with the http engine; with an nfs
    target, the one with the nfs engine (the same build)."""
    if any(isinstance(t, S3TargetConfig) for t in loaded.config.targets.values()):
        from storbench.targets.s3 import http_fio_binary

        return http_fio_binary()
    if any(isinstance(t, NfsTargetConfig) for t in loaded.config.targets.values()):
        from storbench.targets.nfs import nfs_fio_binary

        return nfs_fio_binary()
    return caps.binary


@contextmanager
def client_hosts(loaded: LoadedPlan, caps: FioCapabilities, observer: LabObserver, *,
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
        info = lab.up(lab_hosts.count, servers_fio(loaded, caps))
        observer.lab_event(f"hosts lab: {info.count} fio servers up in {time.time() - started:.1f}s")
        yield info.servers
    finally:
        if not keep:
            lab.down()
            observer.lab_event("hosts lab: torn down")


@contextmanager
def kubernetes_lab(loaded: LoadedPlan, caps: FioCapabilities, observer: LabObserver, *,
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
