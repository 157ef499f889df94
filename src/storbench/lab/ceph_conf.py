"""A private ceph.conf for a one-machine lab cluster. Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from storbench.model import (
    RW_DIRECTIONS,
    Case,
    CephfsTarget,
    CephLabPoint,
    Direction,
    LabPoint,
    RbdTarget,
    S3Target,
    cluster_of,
    is_metadata,
    rbd_pool_name,
)
from storbench.model.ceph_options import CEPH_OPTIONS

GiB = 1024**3
MIN_OSD_MEMORY_TARGET = 896 * 1024 * 1024

# Ports apart from Ceph's defaults, so a lab never collides with a real cluster on the same machine. Clusters
# side by side (`lab.ceph.bring_up: side_by_side`) each have a slot: their own monitor ports and daemon range.
MON_V2_PORT = 13300
MON_V1_PORT = 16789
OSD_PORT_MIN = 16800
OSD_PORT_MAX = 17300
SIDE_BY_SIDE_MAX = 4  # clusters at once
PORTS_PER_SLOT = 300
RGW_PORT = 18580  # radosgw's S3 endpoint (lab.ceph.rgw), plus the slot


def rgw_port(slot: int = 0) -> int:
    """The port the radosgw of the cluster in ``slot`` serves S3 on."""
    return RGW_PORT + slot


def mon_ports(slot: int = 0) -> tuple[int, int]:
    """(v2, v1) ports of the monitor of the cluster in ``slot``."""
    return MON_V2_PORT + slot, MON_V1_PORT - slot


def daemon_ports(slot: int = 0) -> tuple[int, int]:
    """The port range OSDs, the mgr and the MDS of the cluster in ``slot`` bind in (ranges never overlap)."""
    if slot == 0:
        return OSD_PORT_MIN, OSD_PORT_MAX
    low = OSD_PORT_MAX + 100 + PORTS_PER_SLOT * (slot - 1)
    return low, low + PORTS_PER_SLOT - 1


@dataclass(frozen=True)
class CephLabSpec:
    """What to build. Every field is a lab parameter that plans may sweep."""

    osds: int
    osd_size_bytes: int
    objectstore: str  # bluestore or memstore
    pools: tuple[tuple[str, int], ...]  # (name, replica size)
    osd_config: tuple[tuple[str, str], ...] = ()  # OSD options at bring-up (osd_options); later ones applied live
    pg_num: int = 32
    cephfs: bool = False
    rgw: bool = False  # also run radosgw (S3) on rgw_port(slot)
    slot: int = 0  # which of several clusters side by side: its ports (mon_ports, daemon_ports)
    db_size_bytes: int | None = None  # BlueStore's RocksDB and WAL on a device of this size per OSD on tmpfs
    devices: int | None = None  # OSDs on slices of this many loop devices (lab.ceph.devices) ...
    osds_per_device: int | None = None  # ... this many per device ...
    device_size_bytes: int | None = None  # ... each of this size
    hosts: int | None = None  # emulated CRUSH hosts (host_of), the pools' failure domain; None: each OSD its own
    default_size: int | None = None  # copies of its own pools (CephFS, radosgw) with no rbd pool; None: min(3, osds)


# OSD options every lab cluster starts with: small, for a 2-core machine. They live in the monitors' config
# database, not ceph.conf, because a local file would win over `ceph config set` and hide a live change.
BASE_OSD_OPTIONS: tuple[tuple[str, str], ...] = (
    ("osd_memory_target", str(MIN_OSD_MEMORY_TARGET)),
    ("osd_op_num_shards", "1"),
    ("osd_op_num_threads_per_shard", "2"),
)


def osd_options(point: CephLabPoint | None) -> tuple[tuple[str, str], ...]:
    """Every OSD option (name, value as Ceph reads it) a lab point runs with, sorted: the lab's base options,
    then ``cache_size`` (BlueStore cache with autotune off), ``osd_memory_target`` and `lab.ceph.config`."""
    options = dict(BASE_OSD_OPTIONS)
    if point is not None:
        if point.osd_memory_target_bytes is not None:
            options["osd_memory_target"] = str(max(point.osd_memory_target_bytes, MIN_OSD_MEMORY_TARGET))
        if point.cache_size_bytes is not None:
            options.update(bluestore_cache_autotune="false", bluestore_cache_size=str(point.cache_size_bytes),
                           bluestore_cache_meta_ratio="0.4", bluestore_cache_kv_ratio="0.2")
        for name, value in point.config:
            if name == "bluestore_cache_size":
                options["bluestore_cache_autotune"] = "false"
            options[name] = str(value)
    return tuple(sorted(options.items()))


LOOPBACK = "127.0.0.1"


def mon_address(address: str = LOOPBACK, slot: int = 0) -> str:
    v2, v1 = mon_ports(slot)
    return f"[v2:{address}:{v2},v1:{address}:{v1}]"


# The manager's modules the lab's clusters load: those Ceph 16 always runs. The manager loads every module in its
# module path before it activates (about 0.2 s each on two cores, 26 in Debian's ceph-mgr: 5.5 s of a bring-up).
MGR_MODULES = ("balancer", "crash", "devicehealth", "orchestrator", "pg_autoscaler", "progress", "rbd_support",
               "status", "telemetry", "volumes")
MGR_SHARED = ("mgr_module.py", "mgr_util.py")  # what every module imports


def render_ceph_conf(spec: CephLabSpec, fsid: str, root: str, address: str = LOOPBACK) -> str:
    """ceph.conf for the lab in directory ``root``, its daemons on ``address`` (loopback, or the hosts lab's
    bridge so that fio servers in network namespaces reach them).

    Admin socket, pid and log file settings live in the daemon sections only: clients (fio's rbd engine,
    the ceph CLI) would otherwise collide on one admin socket.
    """
    default_size = max((size for _, size in spec.pools), default=spec.default_size or min(3, spec.osds))
    lines = [
        "[global]",
        f"fsid = {fsid}",
        f"mon host = {mon_address(address, spec.slot)}",
        "mon initial members = a",
        "auth cluster required = cephx",
        "auth service required = cephx",
        "auth client required = cephx",
        f"keyring = {root}/ceph.client.admin.keyring",
        # placement: each OSD its own failure domain (chooseleaf type 0), or with emulated hosts the host (1)
        f"osd crush chooseleaf type = {0 if spec.hosts is None else 1}",
        # each OSD a failure reporter of its own: on one machine, reports from two peers would count as one
        # reporter and a hung OSD would never be marked down
        "mon osd reporter subtree level = osd",
        f"osd pool default size = {default_size}",
        "osd pool default min size = 1",
        f"osd pool default pg num = {spec.pg_num}",
        f"osd pool default pgp num = {spec.pg_num}",
        "mon allow pool size one = true",
        "mon max pg per osd = 1000",
        "mon allow pool delete = true",
        "mon warn on pool no redundancy = false",
        "auth allow insecure global id reclaim = false",
        "mon warn on insecure global id reclaim allowed = false",
        "mon data avail warn = 2",
        "mon data avail crit = 1",
        "paxos propose interval = 0.1",
        # daemons report their PGs to the manager every second, not every 5 s: a bring-up, a heal and the PG
        # states sampled through a repetition with faults (lab.ceph_watch) see the cluster as it is now
        "mgr stats period = 1",
        "mgr tick period = 1",
        "ms bind ipv4 = true",
        "ms bind ipv6 = false",
        f"ms bind port min = {daemon_ports(spec.slot)[0]}",
        f"ms bind port max = {daemon_ports(spec.slot)[1]}",
        f"run dir = {root}/run",
        f"public addr = {address}",
        f"cluster addr = {address}",
        "",
        "[mon]",
        f"mon data = {root}/mon.$id",
        f"admin socket = {root}/run/$cluster-$name.asok",
        f"log file = {root}/log/$name.log",
        "",
        "[mgr]",
        f"mgr data = {root}/mgr.$id",
        f"mgr module path = {root}/mgr-modules",  # only the modules a cluster runs: the mgr loads all it finds
        f"keyring = {root}/mgr.$id/keyring",
        f"admin socket = {root}/run/$cluster-$name.asok",
        f"log file = {root}/log/$name.log",
        "",
        "[osd]",
        f"osd data = {root}/osd.$id",
        f"keyring = {root}/osd.$id/keyring",
        f"admin socket = {root}/run/$cluster-$name.asok",
        f"log file = {root}/log/$name.log",
        f"osd objectstore = {spec.objectstore}",
    ]
    if spec.objectstore == "bluestore":
        lines += [
            "bluestore block create = true",
            f"bluestore block size = {spec.osd_size_bytes}",
            "bluestore fsck on mount = false",
        ]
        if spec.db_size_bytes is not None:  # the DB device: a file on the lab's tmpfs (memory: the fast device)
            lines += [
                f"bluestore block db path = {root}/fastdb/$cluster-$id.db",
                "bluestore block db create = true",
                f"bluestore block db size = {spec.db_size_bytes}",
            ]
    else:
        lines.append(f"memstore device bytes = {spec.osd_size_bytes}")
    for osd in range(spec.osds if spec.hosts is not None else 0):  # each OSD puts itself under its host at start
        lines += ["", f"[osd.{osd}]", f"crush location = root=default host={host_name(host_of(osd, spec.hosts or 1))}"]
    lines += [
        "",
        "[mds]",
        f"mds data = {root}/mds.$id",
        f"keyring = {root}/mds.$id/keyring",
        f"admin socket = {root}/run/$cluster-$name.asok",
        f"log file = {root}/log/$name.log",
        "",
    ]
    return "\n".join(lines)


def host_of(osd: int, hosts: int) -> int:
    """The emulated host (from 1) osd.``osd`` is on: the OSDs dealt over the hosts in turn."""
    return osd % hosts + 1


def host_name(host: int) -> str:
    """An emulated host's CRUSH name."""
    return f"storbench-host{host}"


def host_osds(spec: CephLabSpec, host: int) -> list[str]:
    """The OSDs (``osd.N``) of emulated host ``host`` (from 1); none without hosts or past the last one."""
    if spec.hosts is None or not 1 <= host <= spec.hosts:
        return []
    return [f"osd.{osd}" for osd in range(spec.osds) if host_of(osd, spec.hosts) == host]


def ceph_spec_for(point: CephLabPoint, pools: tuple[tuple[str, int], ...]) -> CephLabSpec:
    """The cluster a point of a plan's lab sweep asks for, with ``pools`` as (name, replica size); its OSDs start
    with the point's options (``osd_options``)."""
    return CephLabSpec(
        osds=point.osds,
        osd_size_bytes=point.osd_size_bytes,
        objectstore=point.objectstore,
        osd_config=osd_options(point),
        pools=tuple(sorted(set(pools))),
        cephfs=point.cephfs,
        rgw=point.rgw,
        db_size_bytes=point.db_size_bytes if point.db_device == "fast" else None,
        devices=point.devices if point.osds_per_device else None,
        osds_per_device=point.osds_per_device,
        device_size_bytes=point.device_size_bytes if point.osds_per_device else None,
        hosts=point.hosts,
    )


def rbd_pools(cases: Sequence[Case]) -> dict[str, tuple[str, int]]:
    """case id -> (pool, replica size) for the rbd cases sharing one cluster: one pool per size."""
    sizes: dict[str, list[int]] = {}
    for case in cases:
        if isinstance(case.target, RbdTarget) and case.lab.ceph is not None:
            sizes.setdefault(case.target.pool, []).append(case.lab.ceph.pool_size)
    return {case.case_id: (rbd_pool_name(case.target.pool, case.lab.ceph.pool_size, sizes[case.target.pool]),
                           case.lab.ceph.pool_size)
            for case in cases if isinstance(case.target, RbdTarget) and case.lab.ceph is not None}


def _on_lab_pools(case: Case) -> bool:
    """A case on the lab's own pools: a cephfs target without a path, an s3 target without an endpoint."""
    return ((isinstance(case.target, CephfsTarget) and case.target.path is None)
            or (isinstance(case.target, S3Target) and case.target.endpoint is None))


def own_pools_size(cases: Sequence[Case]) -> int | None:
    """The copies a cluster's own pools (CephFS, radosgw) keep for ``cases`` (one cluster's): with no rbd pool, the
    one `pool_size` its cases on those pools ask (a CephFS at 2 copies on 4 OSDs had been refused: the default was
    min(3, osds)); None where rbd pools set it (their largest) or the cases ask several."""
    if any(isinstance(case.target, RbdTarget) for case in cases):
        return None
    asked = {case.lab.ceph.pool_size for case in cases if case.lab.ceph is not None and _on_lab_pools(case)}
    return asked.pop() if len(asked) == 1 else None


def unapplied_pool_size(cases: Sequence[Case]) -> tuple[Case, int] | None:
    """A case on the lab's CephFS or radosgw whose recorded ``pool_size`` is not the size its pools keep, with that
    size, or None. Those pools are the cluster's own, at its default size (`render_ceph_conf`: its largest rbd
    pool's, else the one size its cases ask, else min(3, osds)): a `pool_size` sweep had measured them all at one
    size, and compare had judged two configurations that were one."""
    by_cluster: dict[LabPoint, list[Case]] = {}
    for case in cases:
        if case.lab.ceph is not None:
            by_cluster.setdefault(cluster_of(case.lab), []).append(case)
    for on_cluster in by_cluster.values():
        rbd = [c.lab.ceph.pool_size for c in on_cluster if isinstance(c.target, RbdTarget) and c.lab.ceph]
        for case in on_cluster:
            ceph = case.lab.ceph
            if ceph is None or not _on_lab_pools(case):
                continue
            kept = max(rbd, default=own_pools_size(on_cluster) or min(3, ceph.osds))
            if ceph.pool_size != kept:
                return case, kept
    return None


def read_under_another_write_setting(cases: Sequence[Case]) -> tuple[Case, str] | None:
    """A case that reads an rbd image or CephFS files of the lab, with the name of an option BlueStore applies as
    it writes (`CephOption.at_write`: compression, checksums) that the cases on that target and cluster set to
    several values, or None. The lab writes a target once, under its first case's options (`ceph_kind`), and the
    values alternate on one cluster: the reads under each value would read the same blocks, written under one."""
    by_target: dict[tuple[LabPoint, str], list[Case]] = {}
    for case in cases:
        if case.lab.ceph is not None and isinstance(case.target, RbdTarget | CephfsTarget):
            by_target.setdefault((cluster_of(case.lab), case.target.name), []).append(case)
    for on_target in by_target.values():
        for name in sorted(name for name, option in CEPH_OPTIONS.items() if option.at_write):
            values = {dict(c.lab.ceph.config).get(name) for c in on_target if c.lab.ceph is not None}
            reader = next((c for c in on_target if Direction.READ in RW_DIRECTIONS[c.workload.rw]
                           and not is_metadata(c.workload.rw)), None)
            if len(values) > 1 and reader is not None:
                return reader, name
    return None


def clusters_of(cases: Sequence[Case]) -> list[LabPoint]:
    """The Ceph clusters the cases run on, in order of first appearance (several when side by side)."""
    return list(dict.fromkeys(cluster_of(c.lab) for c in cases if c.lab.ceph is not None))


_ABORTS = (re.compile(r'ceph_abort_msg\("([^"\n]{1,200})"\)'), re.compile(r"FAILED ceph_assert\(([^\n]{1,200})\)"),
           re.compile(r"\*\*\* Caught signal \(([^)\n]{1,80})\)"))


def abort_cause(log_tail: str) -> str | None:
    """Why a Ceph daemon stopped, as the end of its log says (its abort message, failed assertion or the signal it
    caught, the last one written), or None. Pure."""
    for pattern in _ABORTS:
        found = pattern.findall(log_tail)
        if found:
            return str(found[-1]).strip()
    return None


def lost_hint(cause: str | None) -> str:
    """What to do about a lab whose daemons stopped during a run, for the cause their log gave."""
    again = ("raise lab.ceph.osd_size (or write a smaller image) and run the plan again, a new run (its cases change "
             "with the lab's size: --resume cannot continue this one)")
    if cause is not None and "enospc" in cause.lower():
        return f"the OSDs' devices filled up: {again}"
    if cause == "unrecognized error code":  # BlueRocksEnv: an error of BlueFS's RocksDB has no name for
        return (f"BlueFS gave RocksDB an error it has no name for, most often a full device (ENOSPC; the log's lines "
                f"before it say): {again}")
    return ("see the daemon's log; once the cause is fixed, run the plan again with --resume: the repetitions stored "
            "so far are kept")

