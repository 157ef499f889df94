"""What a plan needs of this machine (pure): memory (lab daemons, memstore, tmpfs DB devices, fio's buffers), the lab
directory's disk and inodes, against the share a plan may use.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from storbench.config import (
    PlanConfig,
)
from storbench.lab.ceph_conf import osd_options
from storbench.lab.k8s_conf import CSI_STORAGE_CLASSES
from storbench.model import (
    Case,
    CephLabPoint,
    LabPoint,
    NfsTarget,
    PvcTarget,
    cluster_of,
    is_metadata,
    is_volume_operation,
    lab_group_key,
)
from storbench.schedule import grouped
from storbench.units import MAX_SIZE_BYTES, format_bytes
from storbench.working_set import working_set_bytes

MACHINE_SHARE = 0.9  # a plan may use at most this share of the memory, lab disk or inodes available
MON_MGR_BYTES = 1024**3  # a lab cluster's monitor and manager
FAST_DB_EXTRA_BYTES = 64 << 20  # the DB tmpfs's slack (lab.ceph._mount_fast_db)


@dataclass(frozen=True)
class Need:
    """One part of what a plan asks of the machine: ``amount`` (bytes or inodes) because of the plan key ``key``,
    said for people as ``text``, with what to change (``hint``)."""

    key: tuple[str, ...]
    text: str
    amount: int
    hint: str


@dataclass(frozen=True)
class Demand:
    """Everything a plan needs of one resource at the same time (one lab configuration, its largest case)."""

    resource: str  # "memory", "disk in the lab directory", "processes and threads"
    needs: tuple[Need, ...]
    counted: bool = False  # a number of things (tasks), not bytes

    @property
    def total(self) -> int:
        return sum(need.amount for need in self.needs)

    @property
    def largest(self) -> Need:
        return max(self.needs, key=lambda need: need.amount)


def over_share(demand: Demand, available: int, where: str) -> str | None:
    """Why ``demand`` does not fit in MACHINE_SHARE of ``available`` (``where``: what holds it), or None."""
    limit = int(available * MACHINE_SHARE)
    if demand.total <= limit:
        return None
    parts = " + ".join(need.text for need in demand.needs if need.amount)
    amount = (lambda n: f"{n:,}") if demand.counted else format_bytes
    return (f"needs {amount(demand.total)} {'' if demand.counted else 'of '}{demand.resource}: {parts}; {where} has "
            f"{amount(available)} available and a plan may use {MACHINE_SHARE:.0%} of it ({amount(limit)})")


def lab_groups(config: PlanConfig, cases: Sequence[Case]) -> list[list[Case]]:
    bring_up = config.lab.ceph.bring_up if config.lab and config.lab.ceph else "once"
    return grouped(cases, lambda case: lab_group_key(case.lab, bring_up))


def _times(count: int, what: str, each: int) -> str:
    return f"{what} {count} x {format_bytes(each)}"


def osd_memory_bytes(point: CephLabPoint) -> int:
    """What one OSD daemon of ``point`` may hold: its memory target, or its BlueStore cache when that is larger
    (both as the point sets them, `lab.ceph.config` included)."""


    options = dict(osd_options(point))
    return max(int(options.get("osd_memory_target", "0")), int(options.get("bluestore_cache_size", "0")))


def cluster_memory_needs(cluster_cases: Sequence[Case]) -> list[Need]:
    """The memory of one Ceph cluster while ``cluster_cases`` (its cases) run: each OSD daemon at the largest
    memory target its cases set, a memstore OSD's data (held in RAM), the DB devices on tmpfs, the monitor and
    manager."""
    points = [c.lab.ceph for c in cluster_cases if c.lab.ceph is not None]
    point = points[0]
    osds = point.osds
    needs = [Need(("lab", "ceph", "osds"), _times(osds, "OSD daemons", max(map(osd_memory_bytes, points))),
                  osds * max(map(osd_memory_bytes, points)), "lower osds, osd_memory_target or cache_size"),
             Need(("lab", "ceph"), f"monitor and manager {format_bytes(MON_MGR_BYTES)}", MON_MGR_BYTES, "")]
    if point.objectstore == "memstore":
        needs.append(Need(("lab", "ceph", "osd_size"), _times(osds, "memstore OSDs (in RAM)", point.osd_size_bytes),
                          osds * point.osd_size_bytes, "lower osd_size or osds, or use objectstore: bluestore "
                          "(sparse files on disk)"))
    if point.db_device == "fast" and point.db_size_bytes is not None:
        needs.append(Need(("lab", "ceph", "db_size"), _times(osds, "DB devices on tmpfs", point.db_size_bytes),
                          osds * point.db_size_bytes + FAST_DB_EXTRA_BYTES,
                          "lower db_size or osds, or use db_device: none"))
    return needs


def _fio_block_sizes(name: str, value: str) -> list[str]:
    """The block sizes written in a `workload.fio` bssplit (``4k/60:64k/40,1m/``: SIZE/PERCENT pairs per direction)
    or bsrange (``4k-64k,1m-2m``: MIN-MAX per direction) value. Pure."""
    sizes: list[str] = []
    for direction in value.split(","):
        if name == "bssplit":
            sizes += [pair.split("/", 1)[0] for pair in direction.split(":")]
        else:
            sizes += direction.split("-")
    return [size for size in sizes if size]


_FIO_SIZE_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?)([kmgtpKMGTP]?)")


def _fio_size_ceil_bytes(text: str) -> int:
    """A size as fio reads it (a unit letter a power of 1024), rounded up to whole bytes; one that cannot be read
    counts as the largest there is. Pure."""
    match = _FIO_SIZE_RE.match(text)
    if match is None:
        return MAX_SIZE_BYTES
    power = " kmgtp".index(match[2].lower() or " ")
    return min(MAX_SIZE_BYTES, math.ceil(Fraction(match[1]) * Fraction(1024) ** power))


def largest_block(case: Case) -> tuple[tuple[str, ...], str, int]:
    """The largest block size fio could use for a case (the size of each buffer it allocates): ``bs``, or a size in
    `workload.fio`'s bssplit or bsrange, which fio uses in place of bs; (plan key, name, bytes). A size that cannot
    be read counts as the largest there is. Pure."""
    w = case.workload
    key: tuple[str, ...] = ("workload", "bs")
    name, largest = "bs", w.bs_bytes
    for option, value in w.fio_options:
        if option not in ("bssplit", "bsrange"):
            continue
        for text in _fio_block_sizes(option, value):
            size = _fio_size_ceil_bytes(text)
            if size > largest:
                key, name, largest = ("workload", "fio", option), f"{option} block", size
    return key, name, largest


def fio_buffer_bytes(case: Case) -> int:
    """The I/O buffers fio allocates for a case: its largest block size x iodepth per job, every job of every
    client (an object operation and a metadata operation have one request in flight per job: iodepth 1)."""
    w = case.workload
    return largest_block(case)[2] * w.iodepth * w.numjobs * case.clients


def _fio_need(case: Case) -> Need:
    w = case.workload
    key, name, block_bytes = largest_block(case)
    return Need(key, f"fio's buffers: {name} {format_bytes(block_bytes)} x iodepth {w.iodepth} x numjobs "
                f"{w.numjobs} x clients {case.clients}", fio_buffer_bytes(case),
                f"lower {'bs' if key[-1] == 'bs' else 'the block sizes of ' + key[-1]}, iodepth, numjobs or clients")


def memory_demands(config: PlanConfig, cases: Sequence[Case]) -> list[Demand]:
    """Per lab configuration (what is up at once): its clusters' memory and the largest fio buffers of its cases
    where fio runs on this machine (not on the `hosts`' servers, nor in pods of a cluster of one's own)."""
    fio_here = config.hosts is None
    k8s_here = config.lab is not None and config.lab.k8s is not None
    out = []
    for group in lab_groups(config, cases):
        needs: list[Need] = []
        clusters: dict[LabPoint, list[Case]] = {}
        for case in group:
            if case.lab.ceph is not None:
                clusters.setdefault(cluster_of(case.lab), []).append(case)
        for cluster_cases in clusters.values():
            needs += cluster_memory_needs(cluster_cases)
        local = [c for c in group if fio_here and (c.target.kind != "pvc" or k8s_here)]
        if local:
            needs.append(_fio_need(max(local, key=fio_buffer_bytes)))
        if needs:
            out.append(Demand("memory", tuple(needs)))
    return out


def job_threads(case: Case) -> tuple[int, int, int]:
    """A job's threads besides its own: verify_async's, `io_submit_mode: offload`'s submitters (fio starts one per
    iodepth: its rate-submit workqueue) and io_uring's `sqthread_poll` kernel threads (one for each ring: the job's,
    and each submitter's own, which sets up its engine again)."""
    options = dict(case.workload.fio_options)
    submitters = case.workload.iodepth if options.get("io_submit_mode") == "offload" else 0
    polling = 1 if options.get("sqthread_poll") == "1" else 0
    return int(options.get("verify_async", "0")), submitters, polling * (1 + submitters)


def fio_tasks(case: Case) -> int:
    """The processes and threads fio runs for a case: each job (numjobs) with its own threads (`job_threads`), and
    fio's own, per client."""
    return (case.workload.numjobs * (1 + sum(job_threads(case))) + 1) * case.clients


OSD_OWN_THREADS = 64  # an OSD's threads besides its op workers and messengers (about 60 in Ceph 16)


def osd_threads(point: CephLabPoint) -> int:
    """The threads a lab cluster's OSDs run: each its op workers (shards x threads per shard), its messenger's
    and its own."""
    options = dict(osd_options(point))
    workers = int(options["osd_op_num_shards"]) * int(options["osd_op_num_threads_per_shard"])
    return point.osds * (workers + int(options.get("ms_async_op_threads", "3")) + OSD_OWN_THREADS)


def task_demands(config: PlanConfig, cases: Sequence[Case]) -> list[Demand]:
    """fio's processes and threads where they run on this machine (locally, the hosts lab's servers, the k8s lab's
    pods), for its largest case: a plan of 4,096 jobs with 64 verify threads each would exhaust the machine's pids;
    and the Ceph lab's OSD threads beside them (16 OSDs of 64 shards x 32 threads: 32,768, this machine's pid_max),
    every cluster's at once side by side."""
    needs = []
    k8s_here = config.lab is not None and config.lab.k8s is not None
    local = [c for c in cases if config.hosts is None and (c.target.kind != "pvc" or k8s_here)]
    if local:
        case = max(local, key=fio_tasks)
        w = case.workload
        asynchronous, submitters, polling = job_threads(case)
        own = "".join(f" + {name} {count:,}" for name, count in (
            ("verify_async", asynchronous), ("offload's submitters (iodepth)", submitters),
            ("sqthread_poll", polling)) if count or name == "verify_async")
        levers = ["numjobs", "clients", "verify_async"] + (["the offloaded iodepth"] if submitters else []) + (
            ["sqthread_poll"] if polling else [])
        needs.append(Need(("workload", "numjobs"), f"fio's {fio_tasks(case):,} (numjobs {w.numjobs} x (1{own}) + 1, "
                          f"x clients {case.clients})", fio_tasks(case),
                          "lower " + ", ".join(levers[:-1]) + " or " + levers[-1]))
    points = [c.lab.ceph for c in cases if c.lab.ceph is not None]
    if points:
        each = max(osd_threads(p) for p in points)
        clusters = len({cluster_of(c.lab) for c in cases if c.lab.ceph is not None}) \
            if config.lab is not None and config.lab.ceph is not None and config.lab.ceph.bring_up == "side_by_side" \
            else 1
        needs.append(Need(("lab", "ceph", "config"), f"the Ceph lab's OSD threads, {each:,} a cluster"
                          + (f" x {clusters} side by side" if clusters > 1 else ""), each * clusters,
                          "lower osds, osd_op_num_shards or osd_op_num_threads_per_shard"))
    return [Demand("processes and threads", tuple(needs), counted=True)] if needs else []


def k8s_volume_demands(config: PlanConfig, cases: Sequence[Case], host_path_class: str) -> list[Demand]:
    """Per lab configuration, what the k8s lab's host-path volumes hold once written (its provisioner ignores a
    claim's size: fio in the pods would fill the filesystem they are made on): each pvc target of the lab's own
    StorageClass (none named, or ``host_path_class``), its largest case's files."""
    if config.lab is None or config.lab.k8s is None:
        return []
    out = []
    for group in lab_groups(config, cases):
        written: dict[str, int] = {}
        for case in group:
            if isinstance(case.target, PvcTarget) and case.target.storage_class in (None, host_path_class):
                written[case.target.name] = max(written.get(case.target.name, 0), working_set_bytes(case))
        needs = [Need(("targets", name, "size"), f"k8s lab volumes of '{name}' {format_bytes(size)}", size,
                      "lower the target's size, numjobs or clients") for name, size in written.items() if size]
        if needs:
            out.append(Demand("disk of the k8s lab's volumes", tuple(needs)))
    return out


def lab_disk_demands(config: PlanConfig, cases: Sequence[Case]) -> list[Demand]:
    """Per lab configuration, the bytes its sparse files in the lab directory hold once written in full: the
    OSDs' files (or the devices they are sliced from), the volume lab's device, the NFS lab's exported test files,
    the k8s lab's block volumes (up for the whole run). Their sum must fit, since writes fill sparse files."""
    k8s = config.lab.k8s if config.lab is not None else None
    out = []
    for group in lab_groups(config, cases):
        needs: list[Need] = []
        for cluster in dict.fromkeys(cluster_of(c.lab) for c in group):
            point = cluster.ceph
            if point is not None and point.objectstore == "bluestore":
                if point.osds_per_device and point.devices and point.device_size_bytes:
                    needs.append(Need(("lab", "ceph", "device_size"), _times(point.devices, "OSD device files",
                                                                             point.device_size_bytes),
                                      point.devices * point.device_size_bytes, "lower device_size or devices"))
                else:
                    needs.append(Need(("lab", "ceph", "osd_size"), _times(point.osds, "OSD files",
                                                                          point.osd_size_bytes),
                                      point.osds * point.osd_size_bytes, "lower osd_size or osds"))
        volume = group[0].lab.volume
        if volume is not None:  # and lose-writes' two copies of it (the one served, the one kept for the next)
            copies = 3 if any(f.do == "lose-writes" for f in config.faults) else 1
            needs.append(Need(("lab", "volume", "size"), _times(copies, "volume device and copies",
                                                                volume.size_bytes) if copies > 1 else
                              f"volume device {format_bytes(volume.size_bytes)}", copies * volume.size_bytes,
                              "lower lab.volume.size"))
        exported: dict[str, int] = {}  # NFS lab targets: files in the export, in the lab directory
        for case in group:
            if case.lab.nfs and isinstance(case.target, NfsTarget) and case.target.url is None:
                exported[case.target.name] = max(exported.get(case.target.name, 0), working_set_bytes(case))
        for name, size in exported.items():
            needs.append(Need(("targets", name, "size"), f"NFS lab files of '{name}' {format_bytes(size)}", size,
                              "lower the target's size, numjobs or clients"))
        csi: dict[str, int] = {}  # the k8s lab's CSI driver keeps its volumes in the lab directory, without quota
        for case in group:
            if k8s is not None and k8s.csi and isinstance(case.target, PvcTarget) \
                    and case.target.storage_class in CSI_STORAGE_CLASSES:
                held = (2 * (case.target.size_bytes or 0) * case.clients if is_volume_operation(case.workload.rw)
                        else working_set_bytes(case))  # an operation: a volume and its snapshot, clone or restore
                csi[case.target.name] = max(csi.get(case.target.name, 0), held)
        needs += [Need(("targets", name, "size"), f"k8s lab CSI volumes of '{name}' {format_bytes(size)}", size,
                       "lower the target's size, numjobs or clients") for name, size in csi.items() if size]
        if k8s is not None and k8s.block_volumes:
            needs.append(Need(("lab", "k8s", "block_size"), _times(k8s.block_volumes, "k8s block volumes",
                                                                    k8s.block_size),
                              k8s.block_volumes * k8s.block_size, "lower block_size or block_volumes"))
        if needs:
            out.append(Demand("disk in the lab directory", tuple(needs)))
    return out


def inodes_need(cases: Sequence[Case]) -> Need | None:
    """The files (inodes) the largest of ``cases`` makes in its target's directory: `files` per job of a metadata
    operation (and their directories), else fio's nrfiles per job; every job of every client."""
    def one(case: Case) -> Need:
        w = case.workload
        metadata = is_metadata(w.rw) and w.files is not None
        per_job = w.files if metadata and w.files is not None else next(
            (int(n) for k, n in w.fio_options if k == "nrfiles"), 1)
        what = f"files {per_job}" if metadata else f"nrfiles {per_job}"
        return Need(("workload", "files" if metadata else "numjobs"),
                    f"rw {w.rw}: {what} x numjobs {w.numjobs} x clients {case.clients}",
                    per_job * w.numjobs * case.clients + (w.dirs or 1), "lower files, numjobs or clients")
    return max(map(one, cases), key=lambda need: need.amount, default=None)
