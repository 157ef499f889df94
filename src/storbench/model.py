"""Typed data that flows through the pure core. Frozen, with units in the field names."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt

from storbench.run_design import NO_DESIGN, RunDesign
from storbench.telemetry.series import RepetitionTelemetry


class Direction(StrEnum):
    READ = "read"
    WRITE = "write"
    TRIM = "trim"


class Status(StrEnum):
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"


# fio rw patterns and the directions they move data in.
RW_DIRECTIONS: dict[str, tuple[Direction, ...]] = {
    "read": (Direction.READ,),
    "randread": (Direction.READ,),
    "write": (Direction.WRITE,),
    "randwrite": (Direction.WRITE,),
    "rw": (Direction.READ, Direction.WRITE),
    "readwrite": (Direction.READ, Direction.WRITE),
    "randrw": (Direction.READ, Direction.WRITE),
    "trim": (Direction.TRIM,),
    "randtrim": (Direction.TRIM,),
    "trimwrite": (Direction.TRIM, Direction.WRITE),
    "randtrimwrite": (Direction.TRIM, Direction.WRITE),
    # metadata operations, one file each (fio's filecreate, filestat and filedelete engines): creating and deleting
    # files are accounted as writes, stat as reads
    "create": (Direction.WRITE,),
    "stat": (Direction.READ,),
    "delete": (Direction.WRITE,),
    # the three in sequence over one file set, the way mdtest runs its phases: create (write), stat (read), delete
    # (accounted as trim, so each phase keeps its own figures)
    "metadata": (Direction.WRITE, Direction.READ, Direction.TRIM),
    # object operations on S3, one whole object of bs each (fio's http engine in S3 mode): PUT writes, GET reads,
    # DELETE is fio's trim; getput mixes GETs (rwmixread of them) and PUTs
    "put": (Direction.WRITE,),
    "get": (Direction.READ,),
    "delete_object": (Direction.TRIM,),
    "getput": (Direction.READ, Direction.WRITE),
}
MIXED_RW = frozenset({"rw", "readwrite", "randrw", "getput"})
# Object operation -> fio rw with the http engine.
OBJECT_RW: dict[str, str] = {"put": "write", "get": "read", "delete_object": "trim", "getput": "randrw"}
# The unmeasured job section that PUTs the objects a get, getput or delete_object job then works on (fio's http
# engine names objects by job clone, offset and size, so the same geometry finds them); parsing leaves it out.
FILL_JOB = "storbench-fill"
# Metadata operation -> (fio engine, fio rw): each I/O of such a job is one operation on one file.
METADATA_RW: dict[str, tuple[str, str]] = {"create": ("filecreate", "write"), "stat": ("filestat", "read"),
                                           "delete": ("filedelete", "write"), "metadata": ("filecreate", "write")}
# The phases of rw: metadata, each a stonewalled job section named "<case id>.<phase>" on the same files; the
# delete phase's operations are counted as trims (PHASE_AS_TRIM) so that they stay apart from the creates.
METADATA_PHASES = ("create", "stat", "delete")
PHASE_AS_TRIM = ".delete"


# The metadata engine for NFS exports over libnfs (scripts/fio-engines/storbench_nfsmeta.c, a fio external engine).
NFS_METADATA_ENGINE = "storbench_nfsmeta"


def is_metadata(rw: str) -> bool:
    """True for the file operations (create, stat, delete) rather than block I/O."""
    return rw in METADATA_RW


def is_object(rw: str) -> bool:
    """True for the S3 object operations (put, get, delete_object, getput)."""
    return rw in OBJECT_RW


# Object operations by the direction fio accounts them in.
OBJECT_REQUESTS = {"read": "GET", "write": "PUT", "trim": "DELETE"}


def operation_of(rw: str, direction: str) -> str:
    """What one of a point's operations is: the direction for block I/O (read, write, trim), the file operation
    for metadata (create, stat, delete; the phases of rw: metadata by the direction fio counts them in), the S3
    request for objects (PUT, GET, DELETE)."""
    if is_object(rw):
        return OBJECT_REQUESTS.get(direction, direction)
    if rw == "metadata":  # its phases: create, stat, delete
        return {"write": "create", "read": "stat", "trim": "delete"}.get(direction, direction)
    if is_metadata(rw):
        return rw
    return direction


def rate_name(rw: str, direction: str) -> str:
    """A rate as a reader names it: ``read IOPS`` for block I/O, ``creates/s`` for files created, ``GET
    requests/s`` for object requests."""
    operation = operation_of(rw, direction)
    if is_object(rw):
        return f"{operation} requests/s"
    if is_metadata(rw):
        return f"{operation}s/s"
    return f"{operation} IOPS"


def rw_writes(rw: str) -> bool:
    """True when the pattern modifies data (writes or trims)."""
    return any(d in (Direction.WRITE, Direction.TRIM) for d in RW_DIRECTIONS[rw])


# ---------------------------------------------------------------------------------------------
# What to run


@dataclass(frozen=True)
class PathTarget:
    """A directory on any mounted filesystem; each fio job gets a file of ``size_bytes``."""

    name: str
    path: str
    size_bytes: int
    expect_fs: str | None = None  # refuse the directory unless it lands on this filesystem (ceph, nfs, ext4, ...)
    kind: ClassVar[Literal["path"]] = "path"


@dataclass(frozen=True)
class BlockTarget:
    """A raw block device; written only with ``destructive``. ``size_bytes``: only the first bytes (None: all).
    ``device`` None: the volume lab's (storbench's own loop device, which may be written)."""

    name: str
    device: str | None
    size_bytes: int | None = None
    destructive: bool = False
    kind: ClassVar[Literal["block"]] = "block"


@dataclass(frozen=True)
class RbdTarget:
    """A Ceph RBD image through fio's rbd engine. ``conf`` None: the plan's Ceph lab, or /etc/ceph/ceph.conf."""

    name: str
    size_bytes: int
    pool: str
    image: str
    client: str
    conf: str | None = None
    destructive: bool = False  # write an existing image storbench did not create
    kind: ClassVar[Literal["rbd"]] = "rbd"


@dataclass(frozen=True)
class CephfsTarget:
    """A directory on CephFS: ``path`` of a CephFS mounted by the user, or None for the Ceph lab's mount."""

    name: str
    size_bytes: int
    path: str | None = None
    kind: ClassVar[Literal["cephfs"]] = "cephfs"


@dataclass(frozen=True)
class NfsTarget:
    """An NFS export through fio's nfs engine (libnfs): ``url`` nfs://server/export, or None for the NFS lab."""

    name: str
    size_bytes: int
    url: str | None = None
    kind: ClassVar[Literal["nfs"]] = "nfs"


@dataclass(frozen=True)
class PvcTarget:
    """PersistentVolumeClaims of a StorageClass measured from fio pods."""

    name: str
    size_bytes: int
    storage_class: str | None  # None: the k8s lab's
    access_mode: str
    volume_mode: str
    namespace: str
    container_image: str
    image_pull_policy: str
    node_selector: tuple[tuple[str, str], ...]
    destructive: bool
    start_budget_s: float
    kind: ClassVar[Literal["pvc"]] = "pvc"


@dataclass(frozen=True)
class ImportedTarget:
    """Where imported fio results were measured, as far as their job text says (a directory or a file)."""

    name: str
    location: str | None = None
    kind: ClassVar[Literal["imported"]] = "imported"

    @property
    def size_bytes(self) -> int | None:
        return None


@dataclass(frozen=True)
class S3Target:
    """An S3 bucket through fio's http engine: ``endpoint`` None for the Ceph lab's radosgw (its bucket
    ``storbench`` made by storbench). Keys come from the operator at run time (the command line or the environment)
    and are never part of the target."""

    name: str
    endpoint: str | None
    bucket: str | None
    region: str
    kind: ClassVar[Literal["s3"]] = "s3"

    @property
    def size_bytes(self) -> int | None:
        return None


TargetSpec = (PathTarget | BlockTarget | RbdTarget | CephfsTarget | NfsTarget | PvcTarget | S3Target
              | ImportedTarget)


@dataclass(frozen=True)
class Expectation:
    """What a target was sold or provisioned as (its plan's `expect`): results are shown as a share of it."""

    iops: float | None = None
    bw_bytes_per_s: int | None = None


@dataclass(frozen=True)
class WorkloadPoint:
    """One point of the workload sweep: every fio setting of one case."""

    rw: str
    bs_bytes: int
    iodepth: int
    numjobs: int
    runtime_s: float
    ramp_s: float
    direct: bool
    ioengine: str
    rwmixread: int | None = None
    size_bytes: int | None = None
    fio_options: tuple[tuple[str, str], ...] = ()
    # metadata operations (create, stat, delete): files per job and each file's size; object operations: objects
    # per job (their size is bs); None for block I/O (and then left out of the case id, so block cases keep theirs)
    files: int | None = None
    file_size_bytes: int | None = None
    dirs: int | None = None  # metadata operations: the jobs' files spread over this many directories (None: one)


# Fields of WorkloadPoint a case id leaves out while they are None (added after ids were pinned).
OPTIONAL_WORKLOAD_FIELDS = ("files", "file_size_bytes", "dirs")


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
        return (*((name, value) for name in CEPH_SETTINGS if (value := values[name]) is not None), *db_size,
                *layout, *self.config)


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


@dataclass(frozen=True)
class LabPoint:
    """The test beds one case runs on: a Ceph cluster configuration and/or the NFS server, or nothing (the
    storage is the user's own). Hashable: a run brings each distinct point up once."""

    ceph: CephLabPoint | None = None
    nfs: bool = False
    volume: VolumeLabPoint | None = None
    link_bits_per_s: int | None = None  # lab.hosts.link: each client host's link rate
    link_delay_s: float | None = None  # lab.hosts.link_delay

    def __bool__(self) -> bool:
        return self.ceph is not None or self.nfs or self.volume is not None or self.link_bits_per_s is not None

    def kinds(self) -> tuple[str, ...]:
        return tuple(kind for kind, present in (("ceph", self.ceph is not None), ("nfs", self.nfs),
                                                ("volume", self.volume is not None),
                                                ("hosts", self.link_bits_per_s is not None)) if present)

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
                                   if name not in (*CEPH_SETTINGS, *VOLUME_SETTINGS, *LINK_SETTINGS, "lab",
                                                   "cephfs", "rgw", "db_size", "devices", "device_size")))
            ceph = CephLabPoint(osds=int(values["osds"]), osd_size_bytes=int(values["osd_size"]),
                                objectstore=values["objectstore"], pool_size=int(values["pool_size"]),
                                cache_size_bytes=size("cache_size"), osd_memory_target_bytes=size("osd_memory_target"),
                                cephfs=values.get("cephfs") == "1", rgw=values.get("rgw") == "1", config=options,
                                osd_cpus=float(values["osd_cpus"]) if "osd_cpus" in values else None,
                                db_device=values.get("db_device"), db_size_bytes=size("db_size"),
                                osds_per_device=size("osds_per_device"), devices=size("devices"),
                                osd_cpuset=values.get("osd_cpuset"),
                                device_size_bytes=size("device_size"))
        volume = None
        if "volume" in kinds:
            def number(name: str) -> int | None:
                return int(values[name]) if name in values else None

            volume = VolumeLabPoint(size_bytes=int(values["volume_size"]), iops=number("volume_iops"),
                                    bw_bytes_per_s=number("volume_bw"),
                                    pacing=values.get("volume_pacing", "bursts"))  # stored before the pacer
        return LabPoint(ceph=ceph, nfs="nfs" in kinds, volume=volume,
                        link_bits_per_s=int(values["link"]) if "link" in values else None,
                        link_delay_s=float(values["link_delay"]) if "link_delay" in values else None)

    def describe(self) -> str:
        """``cache_size=1GiB objectstore=bluestore osd_size=2GiB ...``: the settings with units, for people."""
        return " ".join(f"{k}={setting_text(k, v)}" for k, v in self.pairs() if k != "lab")


NO_LAB = LabPoint()


def setting_text(name: str, value: str) -> str:
    """A lab setting's stored text as people read it: sizes with their unit, link rates in bits."""
    from storbench.units import format_bytes, format_link_rate

    if not value.isdigit():
        return value
    if name == "link":
        return format_link_rate(int(value))
    return format_bytes(int(value)) if size_setting(name) else value


def size_setting(name: str) -> bool:
    """Whether a lab setting (or `lab.ceph.config` option) is a size in bytes."""
    from storbench.lab.ceph_options import CEPH_OPTIONS

    return name in CEPH_SIZE_SETTINGS or (name in CEPH_OPTIONS and CEPH_OPTIONS[name].kind == "size")


def cluster_of(lab: LabPoint) -> LabPoint:
    """The cluster a lab point runs on. A running cluster holds pools of several replica sizes side by side and
    takes OSD options live, so points that differ only in ``pool_size`` or in live settings share one cluster and
    alternate on it (``pool_size`` 0 here: the cluster's pools have each size the points ask for; no live
    settings: each case's are applied before its turn)."""
    lab = replace(lab, link_bits_per_s=None, link_delay_s=None)  # the hosts' links change live
    if lab.ceph is None:
        return lab
    return LabPoint(ceph=replace(lab.ceph, pool_size=0, cache_size_bytes=None, osd_memory_target_bytes=None,
                                 config=(), osd_cpus=None, osd_cpuset=None), nfs=lab.nfs, volume=lab.volume)


def interleaved_setting(name: str) -> bool:
    """Whether a Ceph setting's values alternate on one running cluster (a pool per value, or applied live)
    rather than each needing a cluster of its own."""
    return name not in CLUSTER_SETTINGS


def rbd_pool_name(pool: str, pool_size: int, sizes: Iterable[int]) -> str:
    """The pool a case with ``pool_size`` uses when its cluster serves ``sizes``: the plan's name when there is
    one size, ``<pool>-size<N>`` when several share the cluster."""
    return pool if len(set(sizes)) <= 1 else f"{pool}-size{pool_size}"


@dataclass(frozen=True)
class Case:
    """One point of the sweep. ``case_id`` is a stable hash of its definition."""

    case_id: str
    target: TargetSpec
    workload: WorkloadPoint
    clients: int = 1
    lab: LabPoint = NO_LAB

    def parameters(self) -> dict[str, str]:
        """The values people filter and compare on, as display strings (sizes with their unit)."""
        from storbench.units import format_block_size, format_duration

        w = self.workload
        params = {
            "target": self.target.name,
            "rw": w.rw,
            "bs": format_block_size(w.bs_bytes),
            "iodepth": str(w.iodepth),
            "numjobs": str(w.numjobs),
            "runtime": format_duration(w.runtime_s),
            "ramp": format_duration(w.ramp_s),
            "direct": "1" if w.direct else "0",
            "ioengine": w.ioengine,
            "rwmixread": "" if w.rwmixread is None else str(w.rwmixread),
            "clients": str(self.clients),
        }
        if w.files is not None:  # metadata and object operations
            params["objects" if is_object(w.rw) else "files"] = str(w.files)
        if w.file_size_bytes is not None:
            params["file_size"] = format_block_size(w.file_size_bytes)
        if w.dirs is not None:
            params["dirs"] = str(w.dirs)
        params.update(dict(w.fio_options))
        params.update((k, setting_text(k, v)) for k, v in self.lab.pairs())
        return params


@dataclass(frozen=True)
class Precondition:
    """What a target is written with before its first measurement (a plan's `precondition`): its working set
    written sequentially ``passes`` times, or a workload for ``duration_s``."""

    rw: str
    bs_bytes: int
    iodepth: int
    passes: int | None = None
    duration_s: float | None = None

    def text(self) -> str:
        from storbench.units import format_block_size, format_duration

        what = f"{self.rw} {format_block_size(self.bs_bytes)} qd{self.iodepth}"
        if self.passes is not None:
            return f"fill {self.passes}x ({what})"
        return f"{what} for {format_duration(self.duration_s or 0.0)}"


@dataclass(frozen=True)
class PreconditionRecord:
    """A precondition as it ran on one target (in one lab configuration), stored with the run."""

    target: str
    lab: tuple[tuple[str, str], ...]
    precondition: Precondition
    status: Status
    started_at_s: float
    finished_at_s: float
    written_bytes: int
    job_text: str
    error: str = ""


@dataclass(frozen=True)
class ScheduledRepetition:
    """One execution of a case in the run order."""

    case: Case
    rep_index: int


# ---------------------------------------------------------------------------------------------
# What came back


# The most a count (I/Os, bytes, samples, a latency bin) can be: SQLite's INTEGER and numpy's int64 hold no more.
MAX_COUNT = 2**63 - 1


def count_sum(counts: Iterable[int], what: str) -> int:
    """Counts added exactly; a negative count, or a sum the store could not hold, is refused (ValueError), never
    wrapped."""
    total = 0
    for count in counts:
        if count < 0:
            raise ValueError(f"{what}: a count of {count}")
        total += count
    if total > MAX_COUNT:
        raise ValueError(f"{what} add up to {total}, past {MAX_COUNT}, the most a count can be")
    return total


@dataclass(frozen=True, eq=False)
class LatencyHistogram:
    """fio's json+ latency bins: bin values in ns (sorted, unique) and the number of I/Os in each.

    fio's bins are the same for every job and client, so merging is adding counts per bin. Arrays keep
    merging thousands of clients fast; ``bins`` gives the (value, count) pairs. Counts are added as integers,
    never through floats; a negative count, or a histogram of more than MAX_COUNT I/Os, is refused (ValueError).
    """

    values_ns: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]

    @staticmethod
    def from_arrays(values_ns: npt.ArrayLike, counts: npt.ArrayLike) -> LatencyHistogram:
        try:
            values = np.asarray(values_ns, dtype=np.int64)
            weights = np.asarray(counts, dtype=np.int64)
        except OverflowError:
            raise ValueError(f"bins hold a value or count past {MAX_COUNT}") from None
        if values.size == 0:
            return LatencyHistogram(np.zeros(0, np.int64), np.zeros(0, np.int64))
        if weights.min() < 0:
            raise ValueError(f"bins hold a count of {int(weights.min())} I/Os")
        if int(weights.max()) * weights.size > MAX_COUNT:  # int64 sums could wrap: add them exactly first
            count_sum(weights.tolist(), "bins")
        order = np.argsort(values, kind="stable")
        ordered = values[order]
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        summed = np.add.reduceat(weights[order], starts)
        keep = summed != 0
        return LatencyHistogram(ordered[starts][keep], summed[keep])

    @staticmethod
    def from_counts(pairs: Iterable[tuple[int, int]]) -> LatencyHistogram:
        items = list(pairs)
        return LatencyHistogram.from_arrays([v for v, _ in items], [c for _, c in items])

    @staticmethod
    def merge_all(histograms: Sequence[LatencyHistogram]) -> LatencyHistogram:
        if not histograms:
            return LatencyHistogram.from_arrays([], [])
        if len(histograms) == 1:
            return histograms[0]
        return LatencyHistogram.from_arrays(np.concatenate([h.values_ns for h in histograms]),
                                            np.concatenate([h.counts for h in histograms]))

    @property
    def bins(self) -> tuple[tuple[int, int], ...]:
        return tuple(zip(self.values_ns.tolist(), self.counts.tolist(), strict=True))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LatencyHistogram):
            return NotImplemented
        return bool(np.array_equal(self.values_ns, other.values_ns) and np.array_equal(self.counts, other.counts))

    def __hash__(self) -> int:
        return hash((self.values_ns.tobytes(), self.counts.tobytes()))

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def merged(self, *others: LatencyHistogram) -> LatencyHistogram:
        return LatencyHistogram.merge_all([self, *others])

    def percentile_ns(self, percent: float) -> int | None:
        """fio's own rule: the first bin whose cumulative count reaches percent/100 of all I/Os."""
        total = self.total
        if total == 0:
            return None
        cumulative = np.cumsum(self.counts)
        index = int(np.searchsorted(cumulative, percent / 100.0 * total, side="left"))
        return int(self.values_ns[min(index, self.values_ns.size - 1)])

    def cdf(self) -> tuple[tuple[int, float], ...]:
        """(value ns, fraction of I/Os at or below it) per bin."""
        total = self.total
        if total == 0:
            return ()
        fractions = np.cumsum(self.counts) / total
        return tuple(zip(self.values_ns.tolist(), fractions.tolist(), strict=True))


@dataclass(frozen=True)
class LatencySummary:
    """fio's ``clat_ns`` or ``lat_ns`` block for one direction (one job, or several merged)."""

    samples: int
    min_ns: int
    max_ns: int
    mean_ns: float
    stddev_ns: float
    histogram: LatencyHistogram | None = None
    # fio's own percentiles; used only where no bins exist (imported plain-json output of one job).
    reported_percentiles_ns: tuple[tuple[float, int], ...] = ()

    def percentile_ns(self, percent: float) -> int | None:
        if self.histogram is not None and self.histogram.total:
            return self.histogram.percentile_ns(percent)
        for pct, value in self.reported_percentiles_ns:
            if abs(pct - percent) < 1e-9:
                return value
        return None


@dataclass(frozen=True)
class DirectionMeasurement:
    """What one direction (read, write or trim) did in one job, client or repetition."""

    direction: Direction
    total_ios: int
    io_bytes: int
    runtime_ms: int
    iops: float
    bw_bytes: float
    clat: LatencySummary
    lat: LatencySummary


@dataclass(frozen=True)
class DiskUtil:
    """fio's ``disk_util`` entry: the device's own view while fio ran."""

    name: str
    read_ios: int
    write_ios: int
    util_pct: float
    host: str = ""


@dataclass(frozen=True)
class JobOutput:
    """One fio job (a numjobs clone is its own job) as fio reported it."""

    jobname: str
    error: int
    usr_cpu_pct: float
    sys_cpu_pct: float
    directions: tuple[DirectionMeasurement, ...]
    options: tuple[tuple[str, str], ...] = ()
    host: str = ""  # "address:port" of the fio server that ran it (client/server mode); "" for a local run


@dataclass(frozen=True)
class FioOutput:
    """A whole fio json/json+ document, parsed."""

    fio_version: str
    timestamp_s: int
    jobs: tuple[JobOutput, ...]
    disks: tuple[DiskUtil, ...]
    global_options: tuple[tuple[str, str], ...] = ()
    timestamp_ms: int = 0  # when fio wrote its report (end of the run), on the clock of the machine it ran on


@dataclass(frozen=True)
class ClientMeasurement:
    """One fio process tree (a host, a pod; one for a local run), its jobs merged."""

    client: str
    jobs: int
    job_errors: tuple[int, ...]
    cpu_usr_pct: float
    cpu_sys_pct: float
    directions: tuple[DirectionMeasurement, ...]
    disks: tuple[DiskUtil, ...] = ()

    def direction(self, direction: Direction) -> DirectionMeasurement | None:
        for measurement in self.directions:
            if measurement.direction == direction:
                return measurement
        return None


@dataclass(frozen=True)
class RepetitionOutcome:
    """What the executor hands back for one repetition: status, the exact inputs, the raw output."""

    status: Status
    started_at_s: float
    finished_at_s: float
    job_text: str
    command: tuple[str, ...]
    fio_version: str
    raw_output: str
    stderr_tail: str
    error: str = ""
    clients: tuple[ClientMeasurement, ...] = field(default=())
    start_skew_s: float | None = None  # spread of the moments the clients' servers started their jobs


# ---------------------------------------------------------------------------------------------
# What the store gives back


@dataclass(frozen=True)
class RunInfo:
    run_id: int
    plan_name: str
    plan_text: str
    source: str
    storbench_version: str
    fio_version: str
    host: str
    kernel: str
    run_order: str
    seed: int
    tags: tuple[str, ...]
    started_at_s: float
    finished_at_s: float | None
    mem_total_bytes: int | None = None
    cpu_count: int | None = None
    plan_path: str | None = None  # the plan file a `run` read (None: imports, and runs stored before it was kept)
    design: RunDesign = NO_DESIGN  # what its plan asked, stored when it was created (run_design.py)


@dataclass(frozen=True)
class StoredRepetition:
    """A repetition as stored, with its case and its clients' measurements."""

    repetition_id: int
    run_id: int
    case: Case
    rep_index: int
    status: Status
    started_at_s: float
    finished_at_s: float
    fio_version: str
    error: str
    clients: tuple[ClientMeasurement, ...]
    job_text: str = ""
    telemetry: RepetitionTelemetry | None = None
    start_skew_s: float | None = None
