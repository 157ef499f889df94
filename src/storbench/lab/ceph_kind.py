"""Ceph as a lab kind (shell, `lab.registry`): `storbench lab ceph up|down|status`, and the run's clusters: one for
each lab configuration with `lab.ceph` or several side by side, the targets on them prepared as each comes up,
each case's live OSD settings applied before its turn, and the cluster's health when a repetition fails.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from pydantic import ValidationError

from storbench.checks import meminfo_bytes
from storbench.config import CephLabConfig
from storbench.demands import cluster_memory_needs
from storbench.errors import UserError, described
from storbench.events import LabBringingUp, LabHealed, LabUp, OsdCpusSet, OsdsRestarted, RunEvent
from storbench.faults import PAST_TENSE, FaultOffer, FaultStep, find_offer
from storbench.lab.base import (
    CliOption,
    LabCommand,
    LabGroup,
    LabKindBase,
    LabLost,
    Say,
    SessionLabs,
    SoftwareProbe,
    StateWatch,
)
from storbench.lab.ceph import CephLab
from storbench.lab.ceph_conf import (
    LOOPBACK,
    MIN_OSD_MEMORY_TARGET,
    CephLabSpec,
    ceph_spec_for,
    clusters_of,
    host_osds,
    osd_options,
    own_pools_size,
    rbd_pools,
)
from storbench.lab.ceph_daemons import RGW_USER, CephLabInfo, rgw_endpoint
from storbench.lab.ceph_faults import HOST_NAME, OSD_NAME
from storbench.lab.ceph_watch import PgWatch
from storbench.lab.hosts import HostsLab
from storbench.lab.hosts_conf import BRIDGE_ADDRESS
from storbench.model import CephLabPoint, cluster_of, interleaved_setting
from storbench.s3sign import S3Credentials
from storbench.targets.registry import LabEnvironment, by_target
from storbench.targets.s3 import LAB_BUCKET, S3Service, create_bucket
from storbench.units import format_bytes, parse_size_bytes

if TYPE_CHECKING:
    from storbench.model import Case, LabPoint


def _plan_default(name: str) -> int | str:
    """A Ceph lab setting's default: the plan schema's (`lab.ceph`), the one place defaults live."""

    default = CephLabConfig.model_fields[name].default
    value = default[0] if isinstance(default, list) else default
    assert isinstance(value, int | str)
    return value


def _command_options() -> tuple[CliOption, ...]:

    osds, osd_size, objectstore = (_plan_default(name) for name in ("osds", "osd_size", "objectstore"))
    return (
        CliOption(("--osds",), {"type": int, "default": osds, "help": f"number of OSDs (default {osds})"}),
        CliOption(("--osd-size",), {"default": format_bytes(int(osd_size)),
                                    "help": f"size of each OSD (default {format_bytes(int(osd_size))}, sparse file)"}),
        CliOption(("--objectstore",), {"choices": ("bluestore", "memstore"), "default": objectstore,
                                       "help": f"the OSDs' object store (default {objectstore}; memstore: in RAM)"}),
        CliOption(("--pool",), {"action": "append", "metavar": "NAME:SIZE",
                                "help": "a pool and its replica size (repeatable; default rbd:3)"}),
        CliOption(("--cache-size",), {"default": None,
                                      "help": "BlueStore cache per OSD, autotune off (e.g. 256MiB)"}),
        CliOption(("--osd-memory-target",), {"default": None, "help": "osd_memory_target (>= 896MiB)"}),
        CliOption(("--cephfs",), {"action": "store_true", "help": "also run an MDS and mount CephFS with ceph-fuse"}),
        CliOption(("--rgw",), {"action": "store_true", "help": "also run radosgw, serving S3"}),
    )


def _check_as_a_plan(osds: int, pool_sizes: list[int]) -> None:
    """`--osds` and the pools' sizes within the bounds a plan's `lab.ceph` has (1 to 16)."""
    try:
        CephLabConfig.model_validate({"osds": osds, "pool_size": sorted(set(pool_sizes))})
    except ValidationError as exc:
        error = exc.errors()[0]
        given = f"--osds {osds}" if error["loc"][0] == "osds" else f"--pool size {error['input']}"
        raise UserError(f"{given}: {error['msg'].lower().removeprefix('input ')}",
                        hint="a plan's lab.ceph takes 1 to 16 OSDs and pool sizes of 1 to 16") from None


def _command_up(lab: CephLab, args: argparse.Namespace, say: Say) -> None:

    pools = []
    for item in args.pool or [f"rbd:{_plan_default('pool_size')}"]:
        name, _, size = item.partition(":")
        if not name or not size.isdigit():
            raise UserError(f"--pool {item!r} is not NAME:SIZE", hint="e.g. --pool rbd2:2 --pool rbd3:3")
        pools.append((name, int(size)))
    _check_as_a_plan(args.osds, [size for _, size in pools])
    try:
        point = CephLabPoint(
            osds=args.osds, osd_size_bytes=parse_size_bytes(args.osd_size), objectstore=args.objectstore,
            pool_size=0, cache_size_bytes=parse_size_bytes(args.cache_size) if args.cache_size else None,
            osd_memory_target_bytes=parse_size_bytes(args.osd_memory_target) if args.osd_memory_target else None,
            cephfs=args.cephfs, rgw=args.rgw)
        spec = ceph_spec_for(point, tuple(pools))
    except ValueError as exc:
        raise UserError(str(exc), hint="sizes look like 2GiB, 512MiB") from None
    if point.osd_memory_target_bytes is not None and point.osd_memory_target_bytes < MIN_OSD_MEMORY_TARGET:
        raise UserError(f"--osd-memory-target {args.osd_memory_target} is below Ceph's least, "
                        f"{format_bytes(MIN_OSD_MEMORY_TARGET)}, which it would run at instead",
                        hint=f"give {format_bytes(MIN_OSD_MEMORY_TARGET)} or more, or --cache-size for a smaller cache")
    if any(size > spec.osds for _, size in spec.pools):
        raise UserError(f"a pool of size {max(s for _, s in spec.pools)} needs as many OSDs, --osds is {spec.osds}")
    say(f"ceph lab: bringing up {spec.osds} OSDs ({spec.objectstore}) in {lab.root} ...")
    info = lab.up(spec)
    say(f"ceph lab: up; conf {info.conf}")
    say("pools: " + ", ".join(f"{n} (size {s})" for n, s in spec.pools))
    if info.cephfs_mount:
        say(f"cephfs: mounted at {info.cephfs_mount}")
    if info.spec.rgw:
        say(f"s3: radosgw at {rgw_endpoint(info)} (keys: radosgw-admin -c {info.conf} user info --uid {RGW_USER})")
    say(f"try: CEPH_CONF={info.conf} ceph -s")


def _command_down(lab: CephLab, say: Say) -> None:
    """The lab and the clusters a side-by-side run left beside it, each whatever another's `down` raised: the first
    error raised once all have gone, the others said."""
    failed: list[tuple[CephLab, Exception]] = []
    for one in (lab, *(beside for beside in CephLab.side_by_side(lab.root) if beside.root.exists())):
        try:
            one.down()
        except Exception as error:
            failed.append((one, error))
            continue
        say(f"ceph lab: down; {one.root} removed" if not one.root.exists() else
            f"ceph lab: down, but {one.root} is still there (something in it is busy: see `findmnt -R {one.root}`)")
    for one, failure in failed[1:]:
        say(f"ceph lab: {one.root} not down: {described(failure)}")
    if failed:
        raise failed[0][1]


def _lab_s3(ceph_lab: CephLab, info: CephLabInfo) -> S3Service:
    """The lab radosgw as an S3 service for the run: its S3 user (made on first use; the keys stay in memory)
    and storbench's bucket on it."""

    service = S3Service(rgw_endpoint(info), "us-east-1", S3Credentials(*ceph_lab.s3_credentials()))
    create_bucket(service, LAB_BUCKET)
    return service


@runtime_checkable
class _AnswersCeph(Protocol):
    def ceph(self, *args: str, timeout_s: float = 60) -> str: ...


ON_CLUSTER_KINDS = ("rbd", "cephfs", "s3")  # the target kinds a lab cluster serves: prepared on it as it comes up


FAULT_SIGNALS = {"kill": signal.SIGKILL, "freeze": signal.SIGSTOP}


class CephKind(LabKindBase):
    """The Ceph lab: one cluster for each lab configuration with `lab.ceph`, or several side by side, each on its
    own ports and directory; it prepares the targets that live on it (rbd images, CephFS directories, S3 on its
    radosgw) as each cluster comes up, offers telemetry its OSDs' admin sockets, and applies each case's live
    OSD options (cache size, memory target, `lab.ceph.config`, CPU quota and pinning) before its turn."""

    name = "ceph"
    command: LabCommand[CephLab] = LabCommand(
        help="a Ceph cluster (mon, mgr, OSDs) from Debian's packages on this machine",
        open=CephLab, up=_command_up, down=_command_down, options=_command_options)
    # "ceph version 16.2.15 (618f...) pacific (stable)": the daemons the lab runs are these packages
    software: tuple[SoftwareProbe, ...] = (SoftwareProbe("ceph", ("ceph-osd", "--version"), r"ceph version (\S+)"),)

    def wanted(self, group: LabGroup) -> bool:
        return group.lab.ceph is not None

    def bring_up(self, group: LabGroup, labs: SessionLabs) -> None:

        cases, observer, checked = group.cases, group.observer, group.checked
        lab_hosts = group.loaded.config.lab.hosts if group.loaded.config.lab else None
        clusters = clusters_of(cases)
        if len(clusters) > 1:

            needed = sum(need.amount for cluster in clusters  # the same arithmetic `plan` checked, memory now
                         for need in cluster_memory_needs([c for c in cases if cluster_of(c.lab) == cluster]))
            available = meminfo_bytes("MemAvailable")
            if available is not None and needed > available:
                raise UserError(f"ceph lab: {len(clusters)} clusters side by side need about {format_bytes(needed)} "
                                f"of memory, {format_bytes(available)} is available",
                                hint="use lab.ceph.bring_up: each_repetition (one cluster at a time)")
        for slot, cluster in enumerate(clusters):
            assert cluster.ceph is not None
            on_cluster = [c for c in cases if cluster_of(c.lab) == cluster]
            pools = rbd_pools(on_cluster)
            # the OSDs start with the first case's options: no restart before the first repetition
            first = next(c.lab.ceph for c in on_cluster if c.lab.ceph is not None)
            lab_spec = replace(ceph_spec_for(cluster.ceph, tuple(pools.values())), osd_config=osd_options(first),
                               slot=slot, default_size=own_pools_size(on_cluster))
            settings = tuple((name, value) for name, value in cluster.pairs() if name not in ("lab", "pool_size"))
            observer.event(LabBringingUp("ceph", settings, slot, len(clusters), tuple(lab_spec.pools)))
            ceph_lab = CephLab.for_slot(slot)
            started = time.time()
            labs.downs.append(ceph_lab.down)
            # fio servers in network namespaces reach the cluster over their bridge, and find its conf
            info = ceph_lab.up(lab_spec, address=BRIDGE_ADDRESS if lab_hosts is not None else LOOPBACK)
            if lab_hosts is not None:
                shutil.copyfile(info.conf, HostsLab().ceph_conf)
            labs.running[cluster] = ceph_lab
            labs.sockets_by_cluster[cluster] = (f"{info.root}/run/*.asok",)
            observer.event(LabUp("ceph", str(info.conf), time.time() - started))
            env = LabEnvironment(fio_binary=checked.capabilities.binary, ceph_conf=info.conf,
                                 cephfs_mount=info.cephfs_mount, nfs_url=labs.environment.nfs_url,
                                 servers=group.servers, s3=_lab_s3(ceph_lab, info) if info.spec.rgw else None)
            on_ceph = {name: target_group for name, target_group in by_target(on_cluster).items()
                       if name not in checked.targets and target_group[0].target.kind in ON_CLUSTER_KINDS}
            labs.prepare(on_ceph, env, f" ({settings})" if len(clusters) > 1 else "", len(clusters) > 1)
        # rbd, cephfs and s3 targets of the user's own cluster (no Ceph lab) are left to be prepared once
        on_a_lab_cluster = {c.case_id for c in cases if c.lab.ceph is not None}
        labs.claimed.update(name for name, target_group in by_target(cases).items()
                            if name not in checked.targets and target_group[0].target.kind in ON_CLUSTER_KINDS
                            and target_group[0].case_id in on_a_lab_cluster)

    faults: tuple[FaultOffer, ...] = (
        FaultOffer("ceph", "kill", OSD_NAME, "restart", "SIGKILL an OSD, a crashed daemon: its host still answers, so "
                   "its peers see it gone at once"),
        FaultOffer("ceph", "freeze", OSD_NAME, "thaw", "SIGSTOP an OSD, as a host that hangs or drops off the network: "
                   "its peers notice after osd_heartbeat_grace"),
        FaultOffer("ceph", "stop", OSD_NAME, "restart", "stop an OSD cleanly (it tells the monitors first)"),
        FaultOffer("ceph", "out", OSD_NAME, "in", "mark an OSD out: the cluster moves its data to the others"),
        FaultOffer("ceph", "kill", HOST_NAME, "restart", "SIGKILL every OSD of an emulated host (lab.ceph.hosts), "
                   "as a host that crashes"),
        FaultOffer("ceph", "freeze", HOST_NAME, "thaw", "SIGSTOP every OSD of an emulated host (lab.ceph.hosts), as "
                   "a host that hangs or drops off the network: its OSDs' peers notice after osd_heartbeat_grace"),
        FaultOffer("ceph", "stop", HOST_NAME, "restart", "stop every OSD of an emulated host cleanly "
                   "(lab.ceph.hosts), as a host shut down for maintenance"),
        FaultOffer("ceph", "out", HOST_NAME, "in", "mark every OSD of an emulated host out (lab.ceph.hosts): the "
                   "cluster moves their data to the other hosts"),
    )

    def fault(self, step: FaultStep, case: Case, running: Mapping[LabPoint, object], *, restore: bool) -> str:
        if find_offer(step, self.faults) is None:
            return super().fault(step, case, running, restore=restore)
        lab = running.get(cluster_of(case.lab))
        if not isinstance(lab, CephLab) or (info := lab.info()) is None:
            raise UserError(f"ceph lab: no lab cluster under this case for {step.action} {step.target}")
        osds = _osds_of(step.target, info.spec)
        if not osds:
            raise UserError(f"ceph lab: no {step.target}: the cluster has "
                            + (f"hosts 1 to {info.spec.hosts}" if info.spec.hosts else "no emulated hosts"),
                            hint="set lab.ceph.hosts, and name a host from 1")
        named = step.target if osds == [step.target] else f"{step.target} ({', '.join(osds)})"
        for osd in osds:
            if step.action == "out":
                lab.mark_osd(osd, out=not restore)
            elif restore:
                lab.start_osd(osd)
            elif step.action == "stop":
                lab.stop_osd(osd)
            else:
                lab.signal_osd(osd, FAULT_SIGNALS[step.action])
        if step.action == "out":
            return f"ceph lab: {named} marked {'in' if restore else 'out'}"
        if restore:
            return f"ceph lab: {named} {'thawed' if step.action == 'freeze' else 'started again'}"
        return f"ceph lab: {named} {PAST_TENSE[step.action]}"

    def settle(self, case: Case, running: Mapping[LabPoint, object]) -> RunEvent | None:
        lab = running.get(cluster_of(case.lab))
        if not isinstance(lab, CephLab) or (info := lab.info()) is None:
            return None
        return LabHealed("ceph", lab.heal(info.spec))

    def watch(self, case: Case, running: Mapping[LabPoint, object]) -> StateWatch | None:
        lab = running.get(cluster_of(case.lab))
        return PgWatch(str(lab.conf)) if isinstance(lab, CephLab) else None

    def enter(self, case: Case, running: Mapping[LabPoint, object]) -> RunEvent | None:

        ceph_lab = running.get(cluster_of(case.lab))
        if not isinstance(ceph_lab, CephLab) or case.lab.ceph is None:
            return None

        options = osd_options(case.lab.ceph)
        seconds = ceph_lab.apply_osd_options(options)
        cpus_changed = ceph_lab.limit_osd_cpus(case.lab.ceph.osd_cpus)  # after a restart: the new OSD processes
        pinned = ceph_lab.pin_osds(case.lab.ceph.osd_cpuset)
        if seconds is None and not cpus_changed and not pinned:
            return None
        if seconds is None:
            return OsdCpusSet("ceph", cpus_changed, case.lab.ceph.osd_cpus, pinned, case.lab.ceph.osd_cpuset)
        live = tuple((name, value) for name, value in case.lab.pairs()
                     if name != "lab" and interleaved_setting(name) and name not in ("pool_size", "cephfs"))
        return OsdsRestarted("ceph", live, seconds)

    def lost(self, case: Case, running: Mapping[LabPoint, object], faulted: frozenset[str] = frozenset()
             ) -> LabLost | None:
        lab = running.get(cluster_of(case.lab))
        if not isinstance(lab, CephLab):
            return None
        info = lab.info() if faulted else None  # the lab's spec only where a fault may name an emulated host
        return lab.lost(frozenset(osd for target in faulted
                                  for osd in (_osds_of(target, info.spec) if info is not None else [target])))

    def health(self, case: Case, running: Mapping[LabPoint, object]) -> str | None:
        """The health of the lab cluster ``case`` runs on, in one line (`ceph health detail`'s summary and its
        first checks); None off a lab cluster or when the cluster does not answer."""

        lab = running.get(cluster_of(case.lab))
        if not isinstance(lab, _AnswersCeph):
            return None
        try:
            lines = [line.strip() for line in lab.ceph("health", "detail", timeout_s=15).splitlines() if line.strip()]
        except UserError as exc:
            return f"the cluster did not answer `ceph health` ({exc.message})"
        return "; ".join(lines[:4]) or None


def _osds_of(target: str, spec: CephLabSpec) -> list[str]:
    """The OSDs a fault's target names: itself (``osd.1``), or every OSD of an emulated host (``host.2``)."""
    return host_osds(spec, int(target.partition(".")[2])) if re.fullmatch(HOST_NAME, target) else [target]


KIND = CephKind()
