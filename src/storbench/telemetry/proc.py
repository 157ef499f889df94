"""Linux /proc readings -> typed snapshots -> per-interval rate series. Pure: text in, data out.

The sampler (shell) reads /proc/stat, /proc/diskstats, /proc/net/dev, /proc/meminfo and /proc/PID/stat
every interval; everything below turns two consecutive readings into one sample per metric.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from storbench.telemetry.series import TelemetrySeries

SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's sector size


@dataclass(frozen=True)
class CpuTimes:
    """Aggregate ticks per mode from the ``cpu`` line of /proc/stat (guest time is inside user)."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int

    @property
    def total(self) -> int:
        return (self.user + self.nice + self.system + self.idle + self.iowait + self.irq + self.softirq +
                self.steal)


@dataclass(frozen=True)
class DiskCounters:
    """One line of /proc/diskstats (the fields storbench uses)."""

    name: str
    reads: int
    sectors_read: int
    read_ms: int
    writes: int
    sectors_written: int
    write_ms: int
    io_ticks_ms: int
    queue_ms: int


@dataclass(frozen=True)
class NetCounters:
    name: str
    rx_bytes: int
    rx_packets: int
    tx_bytes: int
    tx_packets: int


@dataclass(frozen=True)
class ProcessTicks:
    pid: int
    name: str
    ticks: int  # utime + stime


@dataclass(frozen=True)
class ProcSnapshot:
    """Everything read at one instant."""

    t_s: float
    cpu: CpuTimes | None
    disks: tuple[DiskCounters, ...]
    nets: tuple[NetCounters, ...]
    mem_used_bytes: int | None
    page_cache_bytes: int | None
    processes: tuple[ProcessTicks, ...]
    cpu_pressure_us: int | None = None  # /proc/pressure/cpu "some total": µs runnable tasks waited for a CPU


C = TypeVar("C", DiskCounters, NetCounters)


def parse_proc_stat(text: str) -> CpuTimes | None:
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            numbers = [int(p) for p in parts[1:9]] + [0] * max(0, 8 - len(parts[1:9]))
            return CpuTimes(*numbers)
    return None


def parse_pressure_some_us(text: str) -> int | None:
    """The cumulative 'some' stall time (µs) from a /proc/pressure file (Linux PSI); None without PSI."""
    for line in text.splitlines():
        if line.startswith("some "):
            for field in line.split():
                if field.startswith("total="):
                    return int(field[6:])
    return None


def parse_diskstats(text: str, whole_devices: frozenset[str] | None = None) -> tuple[DiskCounters, ...]:
    """Whole devices only when ``whole_devices`` (the names in /sys/block) is given: partitions would count
    the same I/O twice. RAM disks are left out."""
    out: list[DiskCounters] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 14:
            continue
        name = parts[2]
        if name.startswith("ram") or (whole_devices is not None and name not in whole_devices):
            continue
        f = [int(p) for p in parts[3:14]]
        out.append(DiskCounters(name=name, reads=f[0], sectors_read=f[2], read_ms=f[3], writes=f[4],
                                sectors_written=f[6], write_ms=f[7], io_ticks_ms=f[9], queue_ms=f[10]))
    return tuple(out)


def parse_net_dev(text: str) -> tuple[NetCounters, ...]:
    out: list[NetCounters] = []
    for line in text.splitlines():
        if ":" not in line:
            continue
        name, _, rest = line.partition(":")
        fields = rest.split()
        if len(fields) < 10 or not fields[0].isdigit():
            continue
        out.append(NetCounters(name=name.strip(), rx_bytes=int(fields[0]), rx_packets=int(fields[1]),
                               tx_bytes=int(fields[8]), tx_packets=int(fields[9])))
    return tuple(out)


def parse_meminfo(text: str) -> tuple[int | None, int | None]:
    """(used bytes = MemTotal - MemAvailable, page cache bytes = Cached)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[key] = int(parts[0]) * 1024
    used = values["MemTotal"] - values["MemAvailable"] if "MemTotal" in values and "MemAvailable" in values else None
    return used, values.get("Cached")


def parse_pid_stat(pid: int, text: str) -> ProcessTicks | None:
    """/proc/PID/stat: the name sits in parentheses and may contain spaces or parentheses itself."""
    open_paren, close_paren = text.find("("), text.rfind(")")
    if open_paren < 0 or close_paren < open_paren:
        return None
    rest = text[close_paren + 1:].split()
    if len(rest) < 13:
        return None
    return ProcessTicks(pid=pid, name=text[open_paren + 1:close_paren], ticks=int(rest[11]) + int(rest[12]))


def _series(source: str, entity: str, metric: str, samples: Sequence[tuple[float, float, float]]) -> TelemetrySeries:
    return TelemetrySeries(source, entity, metric, tuple(s[0] for s in samples), tuple(s[1] for s in samples),
                           tuple(s[2] for s in samples))


def cpu_series(snapshots: Sequence[ProcSnapshot]) -> list[TelemetrySeries]:
    """Host CPU by mode, in % of all CPUs (100 = every CPU busy)."""
    modes = ("busy_pct", "user_pct", "system_pct", "iowait_pct", "irq_pct", "softirq_pct", "steal_pct")
    samples: dict[str, list[tuple[float, float, float]]] = {m: [] for m in modes}
    for before, after in itertools.pairwise(snapshots):
        if before.cpu is None or after.cpu is None:
            continue
        a, b = before.cpu, after.cpu
        total = b.total - a.total
        if total <= 0:
            continue
        idle = (b.idle - a.idle) + (b.iowait - a.iowait)
        shares = {
            "busy_pct": total - idle, "user_pct": (b.user - a.user) + (b.nice - a.nice),
            "system_pct": b.system - a.system, "iowait_pct": b.iowait - a.iowait, "irq_pct": b.irq - a.irq,
            "softirq_pct": b.softirq - a.softirq, "steal_pct": b.steal - a.steal,
        }
        for mode in modes:
            samples[mode].append((before.t_s, after.t_s, 100.0 * shares[mode] / total))
    pressure = [(a.t_s, b.t_s, min(100.0, (b.cpu_pressure_us - a.cpu_pressure_us) / ((b.t_s - a.t_s) * 1e4)))
                for a, b in itertools.pairwise(snapshots)
                if a.cpu_pressure_us is not None and b.cpu_pressure_us is not None and b.t_s > a.t_s]
    out = [_series("cpu", "host", mode, values) for mode, values in samples.items() if values]
    if pressure:
        out.append(_series("cpu", "host", "pressure_pct", pressure))
    return out


def process_series(snapshots: Sequence[ProcSnapshot], clock_ticks_per_s: int) -> list[TelemetrySeries]:
    """CPU of each process name (all its processes together), in cores (1.0 = one CPU fully busy).

    A process first seen in an interval counts all its ticks there (it started after the last reading)."""
    names = sorted({p.name for s in snapshots for p in s.processes})
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in names}
    for before, after in itertools.pairwise(snapshots):
        elapsed = after.t_s - before.t_s
        if elapsed <= 0:
            continue
        previous = {p.pid: p.ticks for p in before.processes}
        ticks: dict[str, int] = dict.fromkeys(names, 0)
        for process in after.processes:
            ticks[process.name] += max(0, process.ticks - previous.get(process.pid, 0))
        for name in names:
            samples[name].append((before.t_s, after.t_s, ticks[name] / clock_ticks_per_s / elapsed))
    return [_series("process", name, "cpu_cores", values) for name, values in samples.items() if values]


def _device_series(source: str, snapshots: Sequence[ProcSnapshot], names: Sequence[str],
                   counters: Callable[[ProcSnapshot], Sequence[C]], metrics: tuple[str, ...],
                   rates: Callable[[C, C, float, float], tuple[bool, dict[str, float]]]) -> list[TelemetrySeries]:
    """Per device of ``names``: each of ``metrics`` over every interval whose two readings both list the device,
    as ``rates`` gives them from its counters before and after and the interval's start and end (with whether it
    was active). Devices active in no interval are left out."""
    out: list[TelemetrySeries] = []
    for name in names:
        samples: dict[str, list[tuple[float, float, float]]] = {m: [] for m in metrics}
        active = False
        for before, after in itertools.pairwise(snapshots):
            a = next((c for c in counters(before) if c.name == name), None)
            b = next((c for c in counters(after) if c.name == name), None)
            elapsed = after.t_s - before.t_s
            if a is None or b is None or elapsed <= 0:
                continue
            busy, values = rates(a, b, before.t_s, after.t_s)
            active = active or busy
            for metric, value in values.items():
                samples[metric].append((before.t_s, after.t_s, value))
        if active:
            out.extend(_series(source, name, metric, values) for metric, values in samples.items() if values)
    return out


MS_COUNTER_WRAP = 2**32  # the kernel prints diskstats' millisecond fields as 32-bit unsigned: they wrap (time in
# queue at a depth of 256 within five hours)


def _ms(before: int, after: int) -> int:
    """A diskstats millisecond counter's increase across its wrap."""
    return (after - before) % MS_COUNTER_WRAP


def _disk_rates(a: DiskCounters, b: DiskCounters, begin_s: float, end_s: float) -> tuple[bool, dict[str, float]]:
    """A device's rates over one interval; none where a 64-bit counter went back (the device made anew)."""
    elapsed = end_s - begin_s
    if min(b.reads - a.reads, b.writes - a.writes, b.sectors_read - a.sectors_read,
           b.sectors_written - a.sectors_written) < 0:
        return False, {}
    ios = (b.reads - a.reads) + (b.writes - a.writes)
    wait_ms = _ms(a.read_ms, b.read_ms) + _ms(a.write_ms, b.write_ms)
    ticks_ms = _ms(a.io_ticks_ms, b.io_ticks_ms)
    return ios > 0 or ticks_ms > 0, {
        "util_pct": min(100.0, ticks_ms / (elapsed * 10.0)),
        "queue_depth": _ms(a.queue_ms, b.queue_ms) / (elapsed * 1000.0),
        "iops": ios / elapsed,
        "read_bytes_per_s": (b.sectors_read - a.sectors_read) * SECTOR_BYTES / elapsed,
        "write_bytes_per_s": (b.sectors_written - a.sectors_written) * SECTOR_BYTES / elapsed,
        "await_ms": wait_ms / ios if ios else 0.0,
    }


def disk_series(snapshots: Sequence[ProcSnapshot]) -> list[TelemetrySeries]:
    """Per device: utilisation % (time with I/O in flight), average queue depth, IOPS, bytes/s and await.
    Devices that did no I/O in the whole sampling are left out."""
    names = sorted({d.name for s in snapshots for d in s.disks})
    return _device_series("disk", snapshots, names, lambda s: s.disks, (
        "util_pct", "queue_depth", "iops", "read_bytes_per_s", "write_bytes_per_s", "await_ms"), _disk_rates)


@dataclass(frozen=True)
class LinkRates:
    """The links' rates over a repetition: their own (what the kernel says of a NIC), and the rates a lab shaped
    interfaces to (a veth has no speed of its own), each from its moment (epoch seconds, in time order; the first
    from before the repetition): a fault that slows one client's link changes them midway."""

    speeds_bits_per_s: Mapping[str, int]
    shaped_bits_per_s: tuple[tuple[float, Mapping[str, int]], ...] = ()

    def at(self, name: str, t_s: float) -> int | None:
        """``name``'s rate at ``t_s``: as shaped then, else its own speed; None when neither is known."""
        shaped: Mapping[str, int] = {}
        for from_s, rates in self.shaped_bits_per_s:
            if from_s > t_s:
                break
            shaped = rates
        return shaped.get(name, self.speeds_bits_per_s.get(name))

    def mean_bits_per_s(self, name: str, begin_s: float, end_s: float) -> float | None:
        """``name``'s mean rate over [begin, end] (a change midway weighs by its time); None when it is not known
        for all of it (a veth shaped for part of it only)."""
        moments = [begin_s, *sorted(t for t, _ in self.shaped_bits_per_s if begin_s < t < end_s), end_s]
        total = 0.0
        for start, stop in itertools.pairwise(moments):
            rate = self.at(name, start)
            if not rate:
                return None
            total += rate * (stop - start)
        return total / (end_s - begin_s) if end_s > begin_s else self.at(name, begin_s)


def net_series(snapshots: Sequence[ProcSnapshot], links: LinkRates) -> list[TelemetrySeries]:
    """Per interface: bytes and packets per second, and utilisation % of the link rate where it is known over the
    whole interval (the busier direction, as links are full duplex). Idle interfaces and loopback are left out."""

    def rates(a: NetCounters, b: NetCounters, begin_s: float, end_s: float) -> tuple[bool, dict[str, float]]:
        elapsed = end_s - begin_s
        rx, tx = (b.rx_bytes - a.rx_bytes) / elapsed, (b.tx_bytes - a.tx_bytes) / elapsed
        values = {"rx_bytes_per_s": rx, "tx_bytes_per_s": tx,
                  "rx_packets_per_s": (b.rx_packets - a.rx_packets) / elapsed,
                  "tx_packets_per_s": (b.tx_packets - a.tx_packets) / elapsed}
        speed = links.mean_bits_per_s(a.name, begin_s, end_s)
        if speed:
            values["util_pct"] = 100.0 * max(rx, tx) * 8 / speed
        return rx > 0 or tx > 0, values

    names = sorted({n.name for s in snapshots for n in s.nets} - {"lo"})
    return _device_series("net", snapshots, names, lambda s: s.nets, (
        "rx_bytes_per_s", "tx_bytes_per_s", "rx_packets_per_s", "tx_packets_per_s", "util_pct"), rates)


def memory_series(snapshots: Sequence[ProcSnapshot]) -> list[TelemetrySeries]:
    """Gauges: memory in use and page cache at each reading."""
    used = [(s.t_s, s.t_s, float(s.mem_used_bytes)) for s in snapshots if s.mem_used_bytes is not None]
    cache = [(s.t_s, s.t_s, float(s.page_cache_bytes)) for s in snapshots if s.page_cache_bytes is not None]
    out = []
    if used:
        out.append(_series("memory", "host", "used_bytes", used))
    if cache:
        out.append(_series("memory", "host", "page_cache_bytes", cache))
    return out


def series_from_snapshots(snapshots: Sequence[ProcSnapshot], clock_ticks_per_s: int,
                          links: LinkRates) -> list[TelemetrySeries]:
    ordered = sorted(snapshots, key=lambda s: s.t_s)
    return [*cpu_series(ordered), *process_series(ordered, clock_ticks_per_s), *disk_series(ordered),
            *net_series(ordered, links), *memory_series(ordered)]
