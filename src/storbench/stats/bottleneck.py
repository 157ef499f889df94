"""Bottleneck verdicts: which resource limited a point, with the evidence. Pure, rules with fixed thresholds.

Every rule and threshold is stated (and defended) in docs/methodology.md, "Bottleneck verdicts":

- client-bound  the fio processes use >= 0.9 cores per job (a job is one process: it cannot use more than
                one core), or IOPS reach >= 80 % of the client's null-engine ceiling;
- cpu-bound     this host's CPU, or a node's (Prometheus; a Kubernetes node's pods, from its kubelet), is >= 80 %
                busy over the window, or runnable tasks waited for a CPU >= 30 % of the window (Linux PSI,
                /proc/pressure/cpu "some"), or the lab's OSDs use >= 80 % of their CPU quota
                (`lab.ceph.osd_cpus`) even with the host idle;
- media-bound   a block device (here or on a node) is busy >= 90 % of the window (one of the devices fio saw
                its files on, or with one of those as busy, where fio saw any);
- network-bound an interface moves >= 90 % of its link rate (in its busier direction);
- under-driven  none of the above, and Little's law says every configured I/O slot was occupied
                (IOPS x mean latency >= 80 % of iodepth x jobs): more depth may raise IOPS (a sweep tells; on a
                sweep, the verdict says what it shows);
- not saturated none of the above, and the queue was not kept full either: whether more load raises IOPS a
                sweep tells (on a sweep, the verdict says what it shows: ``stats.point_verdicts``);
- capped beyond this host
                read from the sweep, not the point (``judge_curve``): along a load curve (iodepth, numjobs or
                clients) IOPS stop rising beyond noise while mean latency grows with the load, and no resource
                of this host is saturated at those points: a provisioned limit, a throttle or remote storage.
                Along a block-size curve the same with bandwidth. It replaces under-driven / not saturated
                there: the sweep already showed that more load does not help;
- unknown       no telemetry (imported results, or `telemetry.enabled: false`).

When several resources are saturated, the verdict is the one furthest past its threshold (value /
threshold, "pressure"); the others are listed with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from storbench.fio.allowlist import SYNC_ENGINES
from storbench.stats.estimate import Estimate
from storbench.stats.trend import Trend, judge_change, plateau, round_pairs
from storbench.units import format_bytes

MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})  # a target on these measures memory

HOST_CPU_BUSY_PCT = 80.0
CPU_PRESSURE_PCT = 30.0
CLIENT_CORES_PER_JOB = 0.9
CEILING_FRACTION = 0.8
DEVICE_UTIL_PCT = 90.0
LINK_UTIL_PCT = 90.0
QUEUE_FULL_FRACTION = 0.8
QUOTA_FRACTION = 0.8  # a daemon using this share of its CPU quota (on average, over 100 ms periods) is held by it


class Bottleneck(StrEnum):
    CLIENT = "client-bound"
    CPU = "cpu-bound"
    MEDIA = "media-bound"
    NETWORK = "network-bound"
    UNDER_DRIVEN = "under-driven"
    NOT_SATURATED = "not saturated"
    CAPPED = "capped beyond this host"
    CLIENT_STACK = "client stack"
    UNKNOWN = "unknown"


SHORT_LABELS = {
    Bottleneck.CLIENT: "client", Bottleneck.CPU: "cpu", Bottleneck.MEDIA: "media", Bottleneck.NETWORK: "net",
    Bottleneck.UNDER_DRIVEN: "depth", Bottleneck.NOT_SATURATED: "-", Bottleneck.CAPPED: "capped",
    Bottleneck.CLIENT_STACK: "stack",
    Bottleneck.UNKNOWN: "?",
}


@dataclass(frozen=True)
class BottleneckInputs:
    """One point's figures, each the mean over its successful repetitions (None: not measured)."""

    host_cpu_busy_pct: float | None
    host_cpu_pressure_pct: float | None
    process_cpu_cores: tuple[tuple[str, float], ...]  # busiest first
    client_cpu_cores: float | None
    busiest_device: str
    device_util_pct: float | None
    device_queue_depth: float | None
    busiest_interface: str
    interface_util_pct: float | None
    interface_bytes_per_s: float | None
    storage_node: str  # the storage node whose CPU is busiest (else whose disk is)
    node_cpu_busy_pct: float | None
    node_disk_util_pct: float | None
    iops: float | None  # all directions together
    in_flight: float | None  # Little's law per repetition: sum over directions of IOPS x mean total latency
    ceiling_iops: float | None
    iodepth: int
    jobs: int  # numjobs x clients
    ioengine: str
    osd_quota_cores: float | None = None  # lab.ceph.osd_cpus: each OSD's CPU quota
    osds: int | None = None
    clients: int = 1  # fio clients (hosts or pods): the ceiling is one client's
    storage_disk: str = ""  # the storage nodes' busiest disk, "sdb of node osd2:9100" ('' unknown)
    # what each I/O cost in CPU (`stats.cost`): (component, µs per I/O), the costliest first
    cost_us_per_io: tuple[tuple[str, float], ...] = ()
    # fio ran on other machines (real hosts, a cluster's pods): this machine's figures are none of theirs and are
    # left out above; the verdict reads fio's own and the storage nodes' (Prometheus) figures only
    clients_elsewhere: bool = False
    osd_cpuset_cores: float | None = None  # lab.ceph.osd_cpuset: the CPUs all OSDs are pinned to
    # fio's own `disk_util`: the devices it saw its files on and the busiest one's share of time (none where it saw
    # none: rbd, tmpfs, NFS)
    fio_disks: tuple[str, ...] = ()
    fio_disk_util_pct: float | None = None
    in_memory: bool = False  # the target's directory on a memory filesystem (tmpfs): no device of this host is its



@dataclass(frozen=True)
class Finding:
    kind: Bottleneck
    pressure: float  # measured value / threshold; >= 1 means the rule fired
    evidence: str
    resource: str = ""  # what was busy, for a device: "nvme0n1", "a disk of node osd1"


@dataclass(frozen=True)
class BottleneckVerdict:
    kind: Bottleneck
    evidence: str
    findings: tuple[Finding, ...] = ()  # every saturated resource, the verdict's first
    in_flight: float | None = None  # Little's law: IOPS x mean latency
    slots: int | None = None  # configured I/Os in flight: iodepth x jobs
    # nothing saturated (under-driven, not saturated): the busiest resources, as its evidence names them
    busiest: str | None = None

    @property
    def short(self) -> str:
        return SHORT_LABELS[self.kind]


def configured_slots(iodepth: int, jobs: int, ioengine: str) -> int:
    """I/Os fio can keep in flight: iodepth per job for asynchronous engines, one per job for sync ones."""
    return jobs * (1 if ioengine in SYNC_ENGINES else iodepth)


def _processes_text(processes: Sequence[tuple[str, float]], limit: int = 3) -> str:
    shown = [f"{name} {cores:.2f}" for name, cores in processes[:limit] if cores >= 0.01]
    return f" ({', '.join(shown)} cores)" if shown else ""


def findings_for(x: BottleneckInputs) -> list[Finding]:
    found: list[Finding] = []
    if x.client_cpu_cores is not None and x.jobs > 0:
        per_job = x.client_cpu_cores / x.jobs
        if per_job >= CLIENT_CORES_PER_JOB:
            found.append(Finding(Bottleneck.CLIENT, per_job / CLIENT_CORES_PER_JOB,
                                 f"fio uses {per_job:.2f} cores per job ({x.jobs} job{'s' * (x.jobs > 1)}): the "
                                 "client process is saturated"))
    if x.ceiling_iops and x.iops is not None:
        share = x.iops / max(1, x.clients) / x.ceiling_iops  # the ceiling is one client's (fio on this host)
        if share >= CEILING_FRACTION:
            whose = "IOPS are" if x.clients <= 1 else f"each of the {x.clients} clients' IOPS are"
            found.append(Finding(Bottleneck.CLIENT, share / CEILING_FRACTION,
                                 f"{whose} {share:.0%} of what one client drives on fio's null engine "
                                 f"({x.ceiling_iops:,.0f})"))
    busy_pressure = (x.host_cpu_busy_pct or 0.0) / HOST_CPU_BUSY_PCT
    wait_pressure = (x.host_cpu_pressure_pct or 0.0) / CPU_PRESSURE_PCT
    if max(busy_pressure, wait_pressure) >= 1.0:
        waited = ("" if x.host_cpu_pressure_pct is None else
                  f", runnable tasks waited for a CPU {x.host_cpu_pressure_pct:.0f} % of the time")
        node = ("" if x.node_cpu_busy_pct is None or not x.storage_node else
                f"; busiest node {x.storage_node} CPU {x.node_cpu_busy_pct:.0f} %")  # a cluster on this host
        costs = [f"{name} {us:,.0f}" for name, us in x.cost_us_per_io[:3] if us >= 0.5]
        cost = f"; CPU per I/O: {', '.join(costs)} µs" if costs else ""
        found.append(Finding(Bottleneck.CPU, max(busy_pressure, wait_pressure),
                             f"host CPU {x.host_cpu_busy_pct or 0.0:.0f} % busy{waited}"
                             f"{_processes_text(x.process_cpu_cores)}{node}{cost}"))
    osd_cores = dict(x.process_cpu_cores).get("ceph-osd")
    if x.osd_quota_cores and x.osds and osd_cores is not None:
        per_osd = osd_cores / x.osds
        if per_osd >= QUOTA_FRACTION * x.osd_quota_cores:
            found.append(Finding(Bottleneck.CPU, per_osd / (QUOTA_FRACTION * x.osd_quota_cores),
                                 f"each OSD uses {per_osd:.2f} of its {x.osd_quota_cores:g}-core CPU quota "
                                 f"({100 * per_osd / x.osd_quota_cores:.0f} %): the OSDs are CPU-bound at their "
                                 "quota"))
    # both a quota and a cpuset: each is a limit of its own (the OSDs may be under their quotas and fill the CPUs
    # they share)
    if x.osd_cpuset_cores and osd_cores is not None and osd_cores >= QUOTA_FRACTION * x.osd_cpuset_cores:
        found.append(Finding(Bottleneck.CPU, osd_cores / (QUOTA_FRACTION * x.osd_cpuset_cores),
                             f"the OSDs use {osd_cores:.2f} of the {x.osd_cpuset_cores:g} CPUs they are pinned to "
                             f"({100 * osd_cores / x.osd_cpuset_cores:.0f} %): the OSDs are CPU-bound on their CPUs"))
    if x.node_cpu_busy_pct is not None and x.node_cpu_busy_pct >= HOST_CPU_BUSY_PCT:
        found.append(Finding(Bottleneck.CPU, x.node_cpu_busy_pct / HOST_CPU_BUSY_PCT,
                             f"node {x.storage_node} CPU {x.node_cpu_busy_pct:.0f} % busy"))
    # a busy device is fio's limit if fio saw its files there, or saw its own devices busy too (a loop device's
    # file on it); fio's devices idle more than 10 % of the time: another load keeps that one busy (a backup)
    # (fio saw none: rbd and NFS, whose I/O may reach this host's devices; not a target on tmpfs, whose I/O reaches
    # none, so another load's busy disk is not its limit)
    fios = ((not x.fio_disks and not x.in_memory) or x.busiest_device in x.fio_disks
            or (x.fio_disk_util_pct is not None and x.fio_disk_util_pct >= DEVICE_UTIL_PCT))
    if x.device_util_pct is not None and x.device_util_pct >= DEVICE_UTIL_PCT and fios:
        queue = "" if x.device_queue_depth is None else f", average queue {x.device_queue_depth:.1f}"
        found.append(Finding(Bottleneck.MEDIA, x.device_util_pct / DEVICE_UTIL_PCT,
                             f"{x.busiest_device} busy {x.device_util_pct:.0f} % of the time{queue}",
                             x.busiest_device))
    if x.node_disk_util_pct is not None and x.node_disk_util_pct >= DEVICE_UTIL_PCT:
        disk = x.storage_disk or f"a disk of node {x.storage_node}"
        found.append(Finding(Bottleneck.MEDIA, x.node_disk_util_pct / DEVICE_UTIL_PCT,
                             f"{disk} busy {x.node_disk_util_pct:.0f} %", disk))
    if x.interface_util_pct is not None and x.interface_util_pct >= LINK_UTIL_PCT:
        # the rate in its busier direction; the traffic both ways beside it (alone it had read more than the link)
        moved = "" if x.interface_bytes_per_s is None else f"; {format_bytes(x.interface_bytes_per_s)}/s both ways"
        found.append(Finding(Bottleneck.NETWORK, x.interface_util_pct / LINK_UTIL_PCT,
                             f"{x.busiest_interface} at {x.interface_util_pct:.0f} % of its link rate in its busier "
                             f"direction{moved}"))
    return sorted(found, key=lambda f: -f.pressure)


def _busiest_text(x: BottleneckInputs) -> str:
    parts = []
    if x.host_cpu_busy_pct is not None:
        parts.append(f"host CPU {x.host_cpu_busy_pct:.0f} %" + (
            "" if x.host_cpu_pressure_pct is None else f" (waited {x.host_cpu_pressure_pct:.0f} %)"))
    if x.device_util_pct is not None and x.busiest_device:
        parts.append(f"{x.busiest_device} {x.device_util_pct:.0f} %")
    if x.interface_util_pct is not None and x.busiest_interface:
        parts.append(f"{x.busiest_interface} {x.interface_util_pct:.0f} % of link")
    if x.node_cpu_busy_pct is not None and x.storage_node:  # the busiest node (Prometheus, a cluster's kubelets)
        parts.append(f"busiest node {x.storage_node} CPU {x.node_cpu_busy_pct:.0f} %")
    if x.client_cpu_cores is not None:
        parts.append(f"fio {x.client_cpu_cores:.2f} cores")
    # the storage side's busiest daemons (ceph-osd, ceph-mds, ceph-fuse, radosgw, ganesha.nfsd)
    daemons = [f"{name} {cores:.2f}" for name, cores in x.process_cpu_cores if name != "fio" and cores >= 0.01][:3]
    if daemons:
        parts.append(", ".join(daemons) + " cores")
    return ", ".join(parts)


def judge(x: BottleneckInputs) -> BottleneckVerdict:
    """The point's verdict. Without telemetry of the machines (imported results, `telemetry.enabled: false`) only
    fio's own CPU accounting is known: it can show the client bound, but "nothing saturated" (under-driven, not
    saturated) would be a guess about a host no one measured, so such a point is unknown."""
    slots = configured_slots(x.iodepth, x.jobs, x.ioengine)
    in_flight = x.in_flight
    found = findings_for(x)
    telemetry = any(v is not None for v in (x.host_cpu_busy_pct, x.device_util_pct, x.node_cpu_busy_pct,
                                            x.node_disk_util_pct))
    if not found and not telemetry:
        fio = ("" if x.client_cpu_cores is None else
               f"; fio used {x.client_cpu_cores:.2f} cores, not enough to bind the client")
        why = ("fio ran on other machines, whose host figures this machine's are not, and no storage node was "
               "sampled (telemetry.prometheus)" if x.clients_elsewhere else "imported, or telemetry off")
        return BottleneckVerdict(Bottleneck.UNKNOWN, f"no telemetry for this point ({why}){fio}", (), in_flight, slots)
    if found:
        primary = found[0]
        others = "; ".join(f.evidence for f in found[1:])
        return BottleneckVerdict(primary.kind, primary.evidence + (f"; also {others}" if others else ""),
                                 tuple(found), in_flight, slots)
    busiest = _busiest_text(x)
    if in_flight is not None and slots > 0 and in_flight >= QUEUE_FULL_FRACTION * slots:
        untold = UNDER_DRIVEN_SYNC_UNTOLD if x.ioengine in SYNC_ENGINES else UNDER_DRIVEN_UNTOLD
        return BottleneckVerdict(
            Bottleneck.UNDER_DRIVEN,
            f"{in_flight:.1f} of {slots} I/O slots busy (IOPS x mean latency) and nothing saturated "
            f"({busiest}): {untold}", (), in_flight, slots, busiest)
    queue = (f"; {in_flight:.1f} of {slots} I/O slots busy: fio did not keep its queue full"
             if in_flight is not None and slots > 0 else "")
    return BottleneckVerdict(Bottleneck.NOT_SATURATED,
                             f"nothing saturated ({busiest}){queue}; {NOT_SATURATED_UNTOLD}", (), in_flight, slots,
                             busiest)


# Whether a load step raised throughput, left it flat or cannot be told is `stats.trend.judge_change`'s answer,
# the knee's too: "capped" needs flatness shown.
# ... and a curve is "capped" over a stretch when, across it, mean latency grew at least this many times while the
# load (outstanding I/Os, or block size) grew at least LOAD_GROWTH times.
# what a single under-driven point cannot show; a sweep replaces it with what it does show (stats.point_verdicts)
UNDER_DRIVEN_UNTOLD = ("more iodepth or jobs may raise IOPS (one point cannot show it: a sweep of iodepth, or search:, "
                       "would tell)")
# ... for a sync engine, whose iodepth keeps no more I/Os in flight (one per job)
UNDER_DRIVEN_SYNC_UNTOLD = ("more jobs may raise IOPS (a sync engine keeps one I/O per job in flight whatever its "
                            "iodepth; one point cannot show it: a sweep of numjobs would tell)")
# ... and what a single point where nothing saturated cannot show either (replaced the same way on a sweep)
NOT_SATURATED_UNTOLD = ("whether more load raises IOPS one point cannot show (a sweep of iodepth, or search:, would "
                        "tell)")
LATENCY_GROWTH = 1.5
LOAD_GROWTH = 2.0
# Verdicts the sweep may overrule: nothing of this host was saturated at the point.
OVERRULABLE = frozenset({Bottleneck.UNDER_DRIVEN, Bottleneck.NOT_SATURATED})


@dataclass(frozen=True)
class CurveStep:
    """One point of a sweep curve, as the curve rule needs it."""

    load: float  # outstanding I/Os (iodepth x jobs x clients), or block size in bytes
    label: str  # how people name the point's load, e.g. "iodepth 16" or "bs 64k"
    throughput: Estimate  # IOPS along a load curve, bytes/s along a block-size curve, over repetitions
    lat_mean_ns: float | None
    verdict: BottleneckVerdict
    storage_lat_ns: float | None = None  # the storage's own latency for the same I/O (`stats.layers`)
    storage_layer: str = ""  # where that latency was measured: "OSDs", "MDS", "radosgw"
    client_daemon: str = ""  # a client stack of its own that was busy on this host (ceph-fuse), '' none
    # the high end of the storage latency's 95 % interval and the low end of the client mean's (their means when
    # there is none): "client stack" needs the storage shown below STORAGE_SHARE of the client's latency
    storage_lat_high_ns: float | None = None
    lat_mean_low_ns: float | None = None


def flat_from(steps: Sequence[CurveStep]) -> int | None:
    """The first index against which every higher load is shown not to raise throughput (`stats.trend.plateau`,
    the knee's rule); None when throughput rises to the end or the repetitions cannot tell."""
    return plateau([step.throughput for step in steps]).start


# Along a flat curve, when the storage's own latency for the I/O (the OSDs' op latency) is below this share of the
# client's mean latency at the highest load, the time goes outside the storage: in the client stack of this host.
STORAGE_SHARE = 0.5
# A capped curve within this share of the target's declared limit (`expect:`) is said to be at that limit.
AT_DECLARED_FRACTION = 0.05


def judge_curve(steps: Sequence[CurveStep], what: str, declared: float | None = None, remote: str = ""
                ) -> list[BottleneckVerdict | None]:
    """Verdicts the sweep gives its points (None: keep the point's own). ``steps`` are sorted by load; ``what``
    names the throughput ("IOPS" or "MiB/s"). From the first point where throughput is shown to stop rising,
    if mean latency then grows at least LATENCY_GROWTH times while load grows at least LOAD_GROWTH times, every
    point of that stretch that saturated nothing of this host is "capped beyond this host"; with the target's
    ``declared`` limit (same unit as the throughput) within AT_DECLARED_FRACTION, the evidence says it is at it;
    ``remote`` is what the storage nodes' telemetry says along the curve, added to the evidence."""
    out: list[BottleneckVerdict | None] = [None] * len(steps)
    start = flat_from(steps)
    if start is None:
        return out
    stretch = steps[start:]
    first, last = stretch[0], stretch[-1]
    # a later load shown below it is no flat stretch: said as a fall (5,000, 5,000 and 2,550 IOPS had been "flat at
    # 5,017 (-49.2 %)"), the cap a limit the throughput then drops from, not a fixed service rate
    falls = [s for s in stretch[1:] if (fall := judge_change(first.throughput, s.throughput, round_pairs(
        first.throughput, s.throughput))).trend is Trend.FALLING and fall.stopped]  # shown lower: with its interval
    if first.lat_mean_ns is None or last.lat_mean_ns is None or first.lat_mean_ns <= 0 or first.load <= 0:
        return out
    latency_growth = last.lat_mean_ns / first.lat_mean_ns
    load_growth = last.load / first.load
    if latency_growth < LATENCY_GROWTH or load_growth < LOAD_GROWTH:
        return out
    level = sum(s.throughput.mean for s in stretch) / len(stretch)
    at_declared = bool(declared) and abs(level / declared - 1) <= AT_DECLARED_FRACTION  # type: ignore[operator]
    # a device at a provisioned cap is busy all the time from inside (the cap queues the I/Os on it): at the
    # declared limit, the cap explains a busy device
    explained = {Bottleneck.MEDIA} if at_declared else set()
    # a point busy in anything the cap does not explain (its CPU beside the device) stays as its own verdict says
    local = [s for s in stretch if s.verdict.kind not in OVERRULABLE | explained
             or any(f.kind not in explained for f in s.verdict.findings)]
    if local:  # something of this host saturated along the stretch: its own verdict explains it
        return out
    lowest, highest = min(s.throughput.mean for s in stretch), max(s.throughput.mean for s in stretch)
    base = first.throughput.mean
    change = 100 * (stretch[-1].throughput.mean - base) / base if base else 0.0
    shown = (f"{base:,.0f}" if what == "IOPS" else format_bytes(base) + "/s")
    spread = (f"{lowest:,.0f} to {highest:,.0f}" if what == "IOPS"
              else f"{format_bytes(lowest)}/s to {format_bytes(highest)}/s")
    storage = last.storage_lat_ns
    # shown, not read from means: the storage's interval below the share of the client mean's (a storage latency of
    # one repetition, no interval, had made a client-stack verdict)
    storage_high, client_low = last.storage_lat_high_ns, last.lat_mean_low_ns
    if storage is not None and storage_high is not None and client_low is not None and \
            storage_high < STORAGE_SHARE * client_low:
        kind, share = Bottleneck.CLIENT_STACK, storage / last.lat_mean_ns
        layer = last.storage_layer or "storage"
        stack = (f"{last.client_daemon} on this host" if last.client_daemon
                 else "the client stack of this host (a kernel or FUSE client, the client library) or the network")
        cause = (f"; limited in the client stack: {stack}, {1 - share:.0%} of the latency outside the {layer} "
                 f"(they answered in {storage / 1e6:.2f} ms of a {last.lat_mean_ns / 1e6:.2f} ms mean at "
                 f"{last.label}), which serialises or queues the requests")
    else:
        kind, cause = Bottleneck.CAPPED, (": a limit outside this host (a provisioned IOPS or throughput limit, a "
                                          "throttle, or the remote storage)")
        if storage is not None and first.storage_lat_ns:  # where the I/O waits: the storage's own latency
            layer = last.storage_layer
            whose = ("the OSDs' op latency" if layer == "OSDs" else f"the {layer}'s latency" if layer
                     else "the storage's latency")
            cause += (f"; {whose} went {first.storage_lat_ns / 1e6:.2f} ms to {storage / 1e6:.2f} ms "
                      f"({storage / first.storage_lat_ns:.1f}x), {storage / last.lat_mean_ns:.0%} of the client's mean")
    course = (f"{what} stop rising at {shown} at {first.label} and fall by {last.label} ({change:+.1f} %, {spread}; "
              f"shown lower from {falls[0].label})" if falls else
              f"{what} flat at {shown} from {first.label} to {last.label} ({change:+.1f} %, {spread})")
    evidence = f"{course} while mean latency grew {latency_growth:.1f}x, and nothing of this host saturated{cause}"
    if declared and at_declared:
        limit = f"{declared:,.0f} IOPS" if what == "IOPS" else f"{format_bytes(declared)}/s"
        # "at" is an equivalence: every point's interval within the margin of the limit; else its mean is near it
        bound = AT_DECLARED_FRACTION * declared
        within = all(s.throughput.ci_low is not None and s.throughput.ci_high is not None
                     and declared - bound <= s.throughput.ci_low and s.throughput.ci_high <= declared + bound
                     for s in stretch)
        evidence += (f"; at its declared {limit} ({100 * level / declared:.0f} % of expected)" if within else
                     f"; near its declared {limit} (its mean {100 * level / declared:.0f} % of it, not shown "
                     f"within {AT_DECLARED_FRACTION:.0%})")
    if remote:
        evidence += f"; {remote}"
    busy = [f for s in stretch for f in s.verdict.findings if f.kind in explained]
    if busy:  # one evidence for the whole stretch: the report draws the curve that shares it
        device = busy[0].resource
        low, high = (round(f(b.pressure for b in busy) * DEVICE_UTIL_PCT) for f in (min, max))
        evidence = evidence.replace(
            "nothing of this host saturated", f"nothing of this host saturated but the device itself ({device} busy "
            f"{low if low == high else f'{low}-{high}'} % of the time), as a device held at a provisioned cap is", 1)
    for i, step in enumerate(stretch, start=start):
        out[i] = BottleneckVerdict(kind, evidence, (), step.verdict.in_flight, step.verdict.slots)
    return out
