"""What each I/O costs in CPU, by component (pure): the cores each measured process name used over fio's measured
window (`telemetry.digest`), divided by the I/Os per second of the repetition in every direction together (a
mixed read/write job's CPU cannot be split by direction), in microseconds of CPU per I/O and per MiB; IOPS per
core used, per OSD core, and per core allocated (the OSDs' quota or cpuset, else the machine's CPUs).

The kernel's own part is the host's interrupt and soft-interrupt time (network and block completions, done on
behalf of no process); what the host was busy with beyond the listed processes and that (kernel threads such as
kworkers and loop devices, other processes) is `other`, never counted as the I/O's cost. A component that polls
(fio's `hipri` or `sqthread_poll`) spends CPU while waiting: its time is not all work, and it is flagged.
docs/methodology.md#cpu-cost-per-io says how each figure is computed and what it leaves out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from storbench.telemetry.digest import TelemetryDigest
from storbench.units import fio_flag_set

MIB = 1024 * 1024


@dataclass(frozen=True)
class Component:
    key: str  # the fields' prefix: osd -> osd_cpu_us_per_io
    label: str
    processes: tuple[str, ...]  # process names (/proc/PID/comm) whose CPU is its


CLIENT = Component("client", "fio", ("fio",))
OSD = Component("osd", "ceph-osd", ("ceph-osd",))
COMPONENTS: tuple[Component, ...] = (
    CLIENT, OSD, Component("mon", "ceph-mon", ("ceph-mon",)), Component("mgr", "ceph-mgr", ("ceph-mgr",)),
    Component("mds", "ceph-mds", ("ceph-mds",)), Component("fuse", "ceph-fuse", ("ceph-fuse",)),
    Component("ganesha", "nfs-ganesha", ("ganesha.nfsd",)), Component("rgw", "radosgw", ("radosgw",)),
)
KERNEL = Component("kernel", "kernel (irq, softirq)", ())
OTHER = Component("other", "other (host busy beyond these)", ())
TOTAL_KEY = "total"  # every component and the kernel: the I/O's cost on this machine (other left out)
HOST_KEY = "host"  # cycles counted on every CPU of the machine (`telemetry.cycles`): everything, other included
# fio options with which the client polls for completions or submissions: its CPU is not all work (io_uring's polled
# completions and submission thread, libaio reaping its ring from user space, librbd's busy polling)
POLLING_OPTIONS = ("hipri", "sqthread_poll", "userspace_reap", "busy_poll")


@dataclass(frozen=True)
class RepetitionCost:
    """One repetition's CPU by component (cores over its measured window) and the I/O it did."""

    ios_per_s: float
    bytes_per_s: float
    cores: tuple[tuple[str, float], ...]  # (component key, cores), in COMPONENTS order, then kernel and other
    host_cpus: int | None
    allocated_cores: float | None  # the OSDs' quota or cpuset (`CephLabPoint.osd_cores_allocated`), else host_cpus
    cycles_per_s: tuple[tuple[str, float], ...] = ()  # (component key or HOST_KEY, CPU cycles per second)

    def core(self, key: str) -> float | None:
        if key == TOTAL_KEY:
            used = [c for k, c in self.cores if k != OTHER.key]
            return sum(used) if used else None
        return dict(self.cores).get(key)

    def us_per_io(self, key: str) -> float | None:
        cores = self.core(key)
        return None if cores is None or self.ios_per_s <= 0 else cores * 1e6 / self.ios_per_s

    def us_per_mib(self, key: str) -> float | None:
        cores = self.core(key)
        return None if cores is None or self.bytes_per_s <= 0 else cores * 1e6 * MIB / self.bytes_per_s

    def host_pct(self, key: str) -> float | None:
        """The share of the host's CPUs the component took, in % (100: every CPU busy)."""
        cores = self.core(key)
        return None if cores is None or not self.host_cpus else 100.0 * cores / self.host_cpus

    def iops_per_core(self, key: str) -> float | None:
        cores = self.core(key)
        return None if not cores else self.ios_per_s / cores

    def cycles_per_io(self, key: str) -> float | None:
        """CPU cycles per I/O of a component, or of the whole machine (HOST_KEY), where perf counted them."""
        cycles = dict(self.cycles_per_s).get(key)
        return None if cycles is None or self.ios_per_s <= 0 else cycles / self.ios_per_s

    @property
    def iops_per_core_allocated(self) -> float | None:
        return None if not self.allocated_cores else self.ios_per_s / self.allocated_cores


def repetition_cost(ios_per_s: float, bytes_per_s: float, telemetry: TelemetryDigest | None,
                    fio_cores: float | None, host_cpus: int | None,
                    osd_cores_allocated: float | None) -> RepetitionCost | None:
    """The repetition's cost; None without telemetry (nothing but fio's own CPU is known then) or without I/O.
    The client is fio's processes as sampled (every fio process, its parent too), or fio's own accounting of its
    jobs (``fio_cores``: usr + sys over the jobs' runtime) where that is more: where telemetry did not list fio,
    or its samples missed a job process that lived between two of them (a fio server's job of a short run)."""
    if telemetry is None or ios_per_s <= 0:
        return None
    sampled = dict(telemetry.process_cpu_cores)
    cores: list[tuple[str, float]] = []
    for component in COMPONENTS:
        found = [sampled[name] for name in component.processes if name in sampled]
        if component is CLIENT and fio_cores is not None and (not found or sum(found) < fio_cores):
            cores.append((CLIENT.key, fio_cores))
        elif found:
            cores.append((component.key, sum(found)))
    modes = dict(telemetry.host_cpu_modes_pct)
    if host_cpus and ("softirq" in modes or "irq" in modes):
        cores.append((KERNEL.key, (modes.get("softirq", 0.0) + modes.get("irq", 0.0)) * host_cpus / 100.0))
    if host_cpus and telemetry.host_cpu_busy_pct is not None:
        busy = telemetry.host_cpu_busy_pct * host_cpus / 100.0
        cores.append((OTHER.key, max(busy - sum(c for _, c in cores), 0.0)))
    counted = dict(telemetry.cycles_per_s)
    cycles = [(c.key, sum(counted[n] for n in c.processes if n in counted))
              for c in COMPONENTS if any(n in counted for n in c.processes)]
    if HOST_KEY in counted:
        cycles.append((HOST_KEY, counted[HOST_KEY]))
    if osd_cores_allocated is not None and host_cpus:  # no more cores than the machine has: 3 OSDs of 2 cores each
        osd_cores_allocated = min(osd_cores_allocated, float(host_cpus))  # on 2 CPUs had divided by 6
    return RepetitionCost(ios_per_s, bytes_per_s, tuple(cores), host_cpus,
                          osd_cores_allocated if osd_cores_allocated is not None else (
                              float(host_cpus) if host_cpus else None), tuple(cycles))


def polls(fio_options: Sequence[tuple[str, object]]) -> bool:
    """Whether fio polls (``POLLING_OPTIONS`` set, not to 0 or false): its CPU then includes waiting, not only work."""
    return any(name in POLLING_OPTIONS and fio_flag_set(value) for name, value in fio_options)
