"""The test beds a case runs on: a Ceph cluster configuration, the volume lab's device, the NFS server and the
client hosts' links (``LabPoint``), their settings as plans name them, and which settings share a cluster. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from storbench.model.ceph_options import CEPH_OPTIONS
from storbench.units import format_bytes, format_link_rate, parse_cpu_list

__all__ = [
    "CEPH_SETTINGS",
    "CEPH_SIZE_SETTINGS",
    "CLUSTER_SETTINGS",
    "K8S_SETTINGS",
    "LINK_SETTINGS",
    "LIVE_SETTINGS",
    "NEVER",
    "NO_LAB",
    "SIDE_BY_SIDE_SETTINGS",
    "VOLUME_SETTINGS",
    "CephLabPoint",
    "K8sLabPoint",
    "LabPoint",
    "VolumeLabPoint",
    "cluster_of",
    "interleaved_setting",
    "lab_group_key",
    "rbd_pool_name",
    "setting_text",
    "size_setting",
]

# Ceph lab settings as plans name them, and which of them are sizes in bytes (shown with units, matched as sizes).
CEPH_SETTINGS = ("osds", "osd_size", "objectstore", "pool_size", "cache_size", "osd_memory_target", "osd_cpus",
                 "db_device", "osds_per_device", "osd_cpuset")
CEPH_SIZE_SETTINGS = frozenset({"osd_size", "cache_size", "osd_memory_target", "volume_size", "db_size",
                                "device_size"})
# Ceph settings a running cluster holds side by side (a pool per value): their values alternate on one cluster.
SIDE_BY_SIDE_SETTINGS = frozenset({"pool_size"})
# Ceph settings applied to a running cluster (`ceph config set` and an OSD restart) before each case's turn; so
# are the options of `lab.ceph.config`. Their values alternate on one cluster too.
LIVE_SETTINGS = frozenset({"cache_size", "osd_memory_target", "osd_cpus", "osd_cpuset"})
# Settings that need a cluster of their own per value (a blocked design).
CLUSTER_SETTINGS = frozenset({"osds", "osd_size", "objectstore", "db_device", "osds_per_device"})


@dataclass(frozen=True)
class CephLabPoint:
    """One Ceph cluster configuration of a plan's lab sweep. Every value comes from the plan (its defaults are
    the plan schema's); optional settings are None when the plan leaves them to Ceph."""

    osds: int
    osd_size_bytes: int
    objectstore: str
    pool_size: int
    cache_size_bytes: int | None = None
    osd_memory_target_bytes: int | None = None
    cephfs: bool = False
    rgw: bool = False  # lab.ceph.rgw: radosgw serves S3 from the cluster
    config: tuple[tuple[str, int | str], ...] = ()  # lab.ceph.config: OSD options by name, sorted
    osd_cpus: float | None = None  # a CPU quota per OSD daemon, in cores (a cgroup each)
    osd_cpuset: str | None = None  # the CPUs the OSD daemons are pinned to, e.g. "1" or "0-3" (a cpuset each)
    db_device: str | None = None  # "fast": BlueStore's RocksDB and WAL on a memory-backed device (None: on the data)
    db_size_bytes: int | None = None  # the DB device's size per OSD, with db_device fast
    osds_per_device: int | None = None  # OSDs on slices of `devices` loop devices (osds = devices x this)
    devices: int | None = None
    device_size_bytes: int | None = None
    hosts: int | None = None  # emulated CRUSH hosts the OSDs are spread over (None: each OSD its own domain)

    @property
    def osd_cores_allocated(self) -> float | None:
        """The cores the plan gave the OSDs all together: a quota per OSD times the OSDs, else the CPUs of the
        cpuset they share (the fewer where both); None when it left them the machine."""
        limits = [*([self.osd_cpus * self.osds] if self.osd_cpus is not None else []),
                  *([float(len(parse_cpu_list(self.osd_cpuset)))] if self.osd_cpuset is not None else [])]
        return min(limits) if limits else None

    def settings(self) -> tuple[tuple[str, int | str], ...]:
        """(name as in the plan, value) of every setting that is set, in CEPH_SETTINGS order, then the
        `lab.ceph.config` options by name."""
        values: dict[str, int | str | None] = {
            "osds": self.osds, "osd_size": self.osd_size_bytes, "objectstore": self.objectstore,
            "pool_size": self.pool_size, "cache_size": self.cache_size_bytes,
            "osd_memory_target": self.osd_memory_target_bytes,
            "osd_cpus": None if self.osd_cpus is None else f"{self.osd_cpus:g}", "db_device": self.db_device,
            "osds_per_device": self.osds_per_device, "osd_cpuset": self.osd_cpuset}
        db_size = (("db_size", self.db_size_bytes),) if self.db_device == "fast" and self.db_size_bytes else ()
        layout: tuple[tuple[str, int | str], ...] = ()
        if self.osds_per_device is not None and self.devices is not None and self.device_size_bytes is not None:
            layout = (("devices", self.devices), ("device_size", self.device_size_bytes))
        hosts = (("hosts", self.hosts),) if self.hosts is not None else ()
        return (*((name, value) for name in CEPH_SETTINGS if (value := values[name]) is not None), *db_size,
                *layout, *hosts, *self.config)


VOLUME_SETTINGS = ("volume_size", "volume_iops", "volume_bw", "volume_pacing")
LINK_SETTINGS = ("link", "link_delay")


@dataclass(frozen=True)
class VolumeLabPoint:
    """The volume lab's device: a loop device of ``size_bytes`` capped at ``iops`` and ``bw_bytes_per_s`` (None:
    not capped). ``pacing`` says how: "even" — storbench's pacer (`lab.pacer`) starts reads and writes together
    no faster than the caps, evenly, as a provisioned volume does; "bursts" — the kernel's block throttle, per
    direction, which the lab used before the pacer (stored results from then read back so)."""

    size_bytes: int
    iops: int | None = None
    bw_bytes_per_s: int | None = None
    pacing: str = "even"

    @property
    def bursty(self) -> bool:
        """Capped by the kernel's block throttle, which releases I/Os in bursts each time slice (100 ms) and then
        holds them: mean latency follows the cap (Little's law), the percentiles do not pace evenly as a
        provisioned volume's do."""
        return self.pacing == "bursts" and (self.iops is not None or self.bw_bytes_per_s is not None)

    def settings(self) -> tuple[tuple[str, int | str], ...]:
        values = {"volume_size": self.size_bytes, "volume_iops": self.iops, "volume_bw": self.bw_bytes_per_s,
                  "volume_pacing": self.pacing}
        return tuple((name, value) for name in VOLUME_SETTINGS if (value := values[name]) is not None)


K8S_SETTINGS = ("nodes", "out_of_service_after")
NEVER = "never"


@dataclass(frozen=True)
class K8sLabPoint:
    """The Kubernetes lab's nodes, and how long after a node fails it gets Kubernetes' out-of-service taint
    (``out_of_service_after_s``; None: never, Kubernetes' default path). The delay changes nothing until a node
    fails: its values alternate on one cluster."""

    nodes: int
    out_of_service_after_s: float | None = None

    def settings(self) -> tuple[tuple[str, int | str], ...]:
        after = NEVER if self.out_of_service_after_s is None else f"{self.out_of_service_after_s:g}"
        return ("nodes", self.nodes), ("out_of_service_after", after)


@dataclass(frozen=True)
class LabPoint:
    """The test beds one case runs on: a Ceph cluster configuration and/or the NFS server, or nothing (the
    storage is the user's own). Hashable: a run brings each distinct point up once."""

    ceph: CephLabPoint | None = None
    nfs: bool = False
    volume: VolumeLabPoint | None = None
    link_bits_per_s: int | None = None  # lab.hosts.link: each client host's link rate
    link_delay_s: float | None = None  # lab.hosts.link_delay
    k8s: K8sLabPoint | None = None  # lab.k8s (up for the whole run)

    def __bool__(self) -> bool:
        return (self.ceph is not None or self.nfs or self.volume is not None or self.link_bits_per_s is not None
                or self.k8s is not None)

    def kinds(self) -> tuple[str, ...]:
        return tuple(kind for kind, present in (("ceph", self.ceph is not None), ("nfs", self.nfs),
                                                ("volume", self.volume is not None),
                                                ("hosts", self.link_bits_per_s is not None),
                                                ("k8s", self.k8s is not None)) if present)

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The point as text pairs: what case ids hash and the store keeps (``lab_json``), and what exports and
        selectors show. ``("lab", "ceph+nfs")`` first, then the Ceph settings by name, then cephfs."""
        if not self:
            return ()
        out = [("lab", "+".join(self.kinds()))]
        if self.ceph is not None:
            out += sorted((name, str(value)) for name, value in self.ceph.settings())
            if self.ceph.cephfs:
                out.append(("cephfs", "1"))
            if self.ceph.rgw:
                out.append(("rgw", "1"))
        if self.volume is not None:
            out += [(name, str(value)) for name, value in self.volume.settings()]
        if self.link_bits_per_s is not None:
            out.append(("link", str(self.link_bits_per_s)))
            if self.link_delay_s is not None:
                out.append(("link_delay", f"{self.link_delay_s:g}"))
        if self.k8s is not None:
            out += [(name, str(value)) for name, value in self.k8s.settings()]
        return tuple(out)

    @staticmethod
    def from_pairs(pairs: Iterable[tuple[str, str]]) -> LabPoint:
        """The inverse of ``pairs`` (reading the store)."""
        values = dict(pairs)
        if not values:
            return LabPoint()
        kinds = values.get("lab", "").split("+")
        ceph = None
        if "ceph" in kinds:
            def size(name: str) -> int | None:
                return int(values[name]) if name in values else None

            options = tuple(sorted((name, int(value) if value.isdigit() else value) for name, value in values.items()
                                   if name not in (*CEPH_SETTINGS, *VOLUME_SETTINGS, *LINK_SETTINGS, *K8S_SETTINGS,
                                                   "lab", "cephfs", "rgw", "db_size", "devices", "device_size",
                                                   "hosts")))
            ceph = CephLabPoint(osds=int(values["osds"]), osd_size_bytes=int(values["osd_size"]),
                                objectstore=values["objectstore"], pool_size=int(values["pool_size"]),
                                cache_size_bytes=size("cache_size"), osd_memory_target_bytes=size("osd_memory_target"),
                                cephfs=values.get("cephfs") == "1", rgw=values.get("rgw") == "1", config=options,
                                osd_cpus=float(values["osd_cpus"]) if "osd_cpus" in values else None,
                                db_device=values.get("db_device"), db_size_bytes=size("db_size"),
                                osds_per_device=size("osds_per_device"), devices=size("devices"),
                                osd_cpuset=values.get("osd_cpuset"),
                                device_size_bytes=size("device_size"), hosts=size("hosts"))
        volume = None
        if "volume" in kinds:
            def number(name: str) -> int | None:
                return int(values[name]) if name in values else None

            volume = VolumeLabPoint(size_bytes=int(values["volume_size"]), iops=number("volume_iops"),
                                    bw_bytes_per_s=number("volume_bw"),
                                    pacing=values.get("volume_pacing", "bursts"))  # stored before the pacer
        k8s = None
        if "k8s" in kinds:
            after = values.get("out_of_service_after", NEVER)
            k8s = K8sLabPoint(nodes=int(values["nodes"]),
                              out_of_service_after_s=None if after == NEVER else float(after))
        return LabPoint(ceph=ceph, nfs="nfs" in kinds, volume=volume,
                        link_bits_per_s=int(values["link"]) if "link" in values else None,
                        link_delay_s=float(values["link_delay"]) if "link_delay" in values else None, k8s=k8s)

    def describe(self) -> str:
        """``cache_size=1GiB objectstore=bluestore osd_size=2GiB ...``: the settings with units, for people."""
        return " ".join(f"{k}={setting_text(k, v)}" for k, v in self.pairs() if k != "lab")


NO_LAB = LabPoint()


def setting_text(name: str, value: str) -> str:
    """A lab setting's stored text as people read it: sizes with their unit, link rates in bits."""
    if name == "out_of_service_after" and value != NEVER:
        return f"{value}s"
    if not value.isdigit():
        return value
    if name == "link":
        return format_link_rate(int(value))
    return format_bytes(int(value)) if size_setting(name) else value


def size_setting(name: str) -> bool:
    """Whether a lab setting (or `lab.ceph.config` option) is a size in bytes."""
    return name in CEPH_SIZE_SETTINGS or (name in CEPH_OPTIONS and CEPH_OPTIONS[name].kind == "size")


def cluster_of(lab: LabPoint) -> LabPoint:
    """The cluster a lab point runs on. A running cluster holds pools of several replica sizes side by side and
    takes OSD options live, so points that differ only in ``pool_size`` or in live settings share one cluster and
    alternate on it (``pool_size`` 0 here: the cluster's pools have each size the points ask for; no live
    settings: each case's are applied before its turn)."""
    lab = replace(lab, link_bits_per_s=None, link_delay_s=None,  # the hosts' links change live
                  k8s=None if lab.k8s is None else replace(lab.k8s, out_of_service_after_s=None))
    if lab.ceph is None:
        return lab
    return replace(lab, ceph=replace(lab.ceph, pool_size=0, cache_size_bytes=None, osd_memory_target_bytes=None,
                                     config=(), osd_cpus=None, osd_cpuset=None))


def lab_group_key(lab: LabPoint, bring_up: str) -> object:
    """Which labs are up at the same time: each cluster on its own (brought up once, or once per round), or with
    `bring_up: side_by_side` every Ceph cluster of the plan at once. Points of two keys run one after the other
    (unless ``bring_up`` is ``each_repetition``: a fresh cluster per value and round, A B B A)."""
    cluster = cluster_of(lab)
    return ("side by side", cluster.nfs) if bring_up == "side_by_side" and cluster.ceph is not None else cluster


def interleaved_setting(name: str) -> bool:
    """Whether a Ceph setting's values alternate on one running cluster (a pool per value, or applied live)
    rather than each needing a cluster of its own."""
    return name not in CLUSTER_SETTINGS


def rbd_pool_name(pool: str, pool_size: int, sizes: Iterable[int]) -> str:
    """The pool a case with ``pool_size`` uses when its cluster serves ``sizes``: the plan's name when there is
    one size, ``<pool>-size<N>`` when several share the cluster."""
    return pool if len(set(sizes)) <= 1 else f"{pool}-size{pool_size}"
