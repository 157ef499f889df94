"""One repetition's telemetry summarised over fio's measured window (ramp excluded). Pure.

Mean and max of each series over the window; Ceph latencies weighted by ops and cache hit ratios from
summed bytes, never averaged ratios.
"""

from __future__ import annotations

from dataclasses import dataclass

from storbench.telemetry.series import (
    RepetitionTelemetry,
    TelemetrySeries,
    in_window,
    window_indices,
    window_max,
    window_mean,
)

CEPH_OSD_PROCESS = "ceph-osd"
REMOTE_SOURCES = ("prometheus", "kubelet")  # other machines' figures, each node its own entity


@dataclass(frozen=True)
class DeviceDigest:
    name: str
    util_pct: float
    util_max_pct: float
    queue_depth: float
    iops: float
    read_bytes_per_s: float
    write_bytes_per_s: float
    await_ms: float


@dataclass(frozen=True)
class InterfaceDigest:
    name: str
    rx_bytes_per_s: float
    tx_bytes_per_s: float
    util_pct: float | None  # None: link rate unknown (virtual interfaces)


@dataclass(frozen=True)
class RemoteDigest:
    """A metric of one node (entity: a Prometheus target, a Kubernetes node), mean and max over the window."""

    entity: str
    metric: str
    mean: float
    max: float


@dataclass(frozen=True)
class CounterDigest:
    """A Ceph latency counter summed over its daemons: requests per second and their mean latency over the window
    (``op_r``/``op_w``: the OSDs' client reads and writes; ``op_r_process``/``op_w_process``: their part without
    the queue; ``mds_reply``: MDS requests; ``rgw_get``/``rgw_put``: radosgw)."""

    name: str
    per_s: float
    latency_ns: float | None


@dataclass(frozen=True)
class TelemetryDigest:
    host_cpu_busy_pct: float | None
    host_cpu_busy_max_pct: float | None
    host_cpu_iowait_pct: float | None
    host_cpu_pressure_pct: float | None  # Linux PSI: share of time some runnable task waited for a CPU
    host_cpu_modes_pct: tuple[tuple[str, float], ...]
    process_cpu_cores: tuple[tuple[str, float], ...]  # name -> mean cores, busiest first
    devices: tuple[DeviceDigest, ...]  # busiest first
    interfaces: tuple[InterfaceDigest, ...]  # busiest first
    mem_used_bytes: float | None
    page_cache_bytes: float | None
    ceph_ops_per_s: float | None
    ceph_op_latency_ns: float | None
    ceph_cache_hit_pct: float | None
    ceph_onode_hit_pct: float | None
    remote: tuple[RemoteDigest, ...]
    ceiling_iops: float | None
    ceph_counters: tuple[CounterDigest, ...] = ()
    cycles_per_s: tuple[tuple[str, float], ...] = ()  # perf's count: process name, or "host" (the machine)
    problems: tuple[str, ...] = ()  # sources that could not be read (`RepetitionTelemetry.problems`)

    def counter(self, name: str) -> CounterDigest | None:
        return next((c for c in self.ceph_counters if c.name == name), None)

    def process_cores(self, name: str) -> float | None:
        return dict(self.process_cpu_cores).get(name)

    @property
    def busiest_device(self) -> DeviceDigest | None:
        return self.devices[0] if self.devices else None

    @property
    def busiest_interface(self) -> InterfaceDigest | None:
        return self.interfaces[0] if self.interfaces else None

    def remote_max(self, metric: str) -> RemoteDigest | None:
        candidates = [r for r in self.remote if r.metric == metric]
        return max(candidates, key=lambda r: r.mean, default=None)


def _mean(telemetry: RepetitionTelemetry, series: TelemetrySeries | None) -> float | None:
    return None if series is None else window_mean(series, telemetry.window_start_s, telemetry.window_end_s)


def _intervals(series: TelemetrySeries, start_s: float, end_s: float) -> set[tuple[float, float]]:
    """The (start, end) of each of ``series``' samples that belong to the window."""
    return {(series.starts_s[i], series.times_s[i]) for i in window_indices(series, start_s, end_s)}


def _one(telemetry: RepetitionTelemetry, source: str, metric: str, entity: str | None = None) -> TelemetrySeries | None:
    found = telemetry.find(source, metric, entity)
    return found[0] if found else None


def _window_total(telemetry: RepetitionTelemetry, series: TelemetrySeries) -> float:
    """Integral of a rate series over the window (rate x interval length)."""
    return sum(w * v for w, v in in_window(series, telemetry.window_start_s, telemetry.window_end_s))


def _ops_times_latency(ops: TelemetrySeries, latency: TelemetrySeries, start_s: float, end_s: float) -> float:
    """Sum over the window's intervals of (ops completed x their mean latency): the OSD's total op time, so that
    dividing by the ops gives the mean latency of an op. An interval with a handful of slow ops (a background
    flush between two repetitions) weighs by its ops, not by its length."""
    by_interval = {(b, e): v for b, e, v in zip(latency.starts_s, latency.times_s, latency.values, strict=True)}
    total = 0.0
    for i in window_indices(ops, start_s, end_s):
        begin, end = ops.starts_s[i], ops.times_s[i]
        mean = by_interval.get((begin, end))
        if mean is not None and end > begin:
            total += ops.values[i] * (end - begin) * mean
    return total


def _counter(telemetry: RepetitionTelemetry, name: str) -> CounterDigest | None:
    """Counter ``name`` (its ``<name>_per_s`` and ``<name>_latency_ns`` series) over every daemon that has it."""
    rates = telemetry.find("ceph", f"{name}_per_s")
    if not rates:
        return None
    start, end = telemetry.window_start_s, telemetry.window_end_s
    count = weighted = per_s = 0.0
    for rate in rates:
        count += _window_total(telemetry, rate)
        # the rate over the intervals read (which may reach an interval past the window either side), not their
        # total over the window's length: a 5 s interval on a 5 s window had counted two intervals as one
        per_s += window_mean(rate, start, end) or 0.0
        latency = _one(telemetry, "ceph", f"{name}_latency_ns", rate.entity)
        if latency is not None:
            weighted += _ops_times_latency(rate, latency, start, end)
    return CounterDigest(name, per_s, weighted / count if count > 0 else None)


COUNTERS = ("op_r", "op_w", "op_r_process", "op_w_process", "mds_reply", "rgw_get", "rgw_put")


def _ratio_pct(hits: float, misses: float) -> float | None:
    return None if hits + misses <= 0 else 100.0 * hits / (hits + misses)


def digest(telemetry: RepetitionTelemetry) -> TelemetryDigest:
    start, end = telemetry.window_start_s, telemetry.window_end_s
    modes = []
    for series in telemetry.series:
        if series.source == "cpu" and series.entity == "host" and series.metric not in ("busy_pct",
                                                                                          "pressure_pct"):
            value = window_mean(series, start, end)
            if value is not None:
                modes.append((series.metric.removesuffix("_pct"), value))
    busy = _one(telemetry, "cpu", "busy_pct", "host")
    processes = []
    for series in telemetry.find("process", "cpu_cores"):
        value = window_mean(series, start, end)
        if value is not None:
            processes.append((series.entity, value))
    processes.sort(key=lambda item: -item[1])

    devices = []
    for util in telemetry.find("disk", "util_pct"):
        name = util.entity
        values = {metric: _mean(telemetry, _one(telemetry, "disk", metric, name)) or 0.0
                  for metric in ("util_pct", "queue_depth", "iops", "read_bytes_per_s", "write_bytes_per_s")}
        ios = _one(telemetry, "disk", "iops", name)
        waits = _one(telemetry, "disk", "await_ms", name)
        await_ms = 0.0
        if ios is not None and waits is not None:  # await weighted by I/Os, as iostat computes it
            pairs = list(zip(in_window(ios, start, end), in_window(waits, start, end), strict=False))
            count = sum(w * v for (w, v), _ in pairs)
            await_ms = sum(w * v * a for (w, v), (_, a) in pairs) / count if count else 0.0
        devices.append(DeviceDigest(name=name, util_pct=values["util_pct"],
                                    util_max_pct=window_max(util, start, end) or 0.0,
                                    queue_depth=values["queue_depth"], iops=values["iops"],
                                    read_bytes_per_s=values["read_bytes_per_s"],
                                    write_bytes_per_s=values["write_bytes_per_s"], await_ms=await_ms))
    devices.sort(key=lambda d: (-d.util_pct, d.name))

    interfaces = []
    for rx in telemetry.find("net", "rx_bytes_per_s"):
        name = rx.entity
        link_util = _one(telemetry, "net", "util_pct", name)
        # a mean over the whole window or none: a veth whose rate is known only while a fault shaped it would read
        # as busy as it was then
        whole = link_util is not None and _intervals(link_util, start, end) == _intervals(rx, start, end)
        interfaces.append(InterfaceDigest(
            name=name, rx_bytes_per_s=_mean(telemetry, rx) or 0.0,
            tx_bytes_per_s=_mean(telemetry, _one(telemetry, "net", "tx_bytes_per_s", name)) or 0.0,
            util_pct=_mean(telemetry, link_util) if whole else None))
    interfaces.sort(key=lambda i: (-(i.util_pct or 0.0), -(i.rx_bytes_per_s + i.tx_bytes_per_s), i.name))

    ceph_ops = ceph_ops_per_s = ceph_latency_weighted = 0.0
    hits = misses = onode_hits = onode_misses = 0.0
    for ops in telemetry.find("ceph", "ops_per_s"):
        latency = _one(telemetry, "ceph", "op_latency_ns", ops.entity)
        ceph_ops += _window_total(telemetry, ops)
        ceph_ops_per_s += window_mean(ops, start, end) or 0.0
        if latency is not None:
            ceph_latency_weighted += _ops_times_latency(ops, latency, start, end)
    for metric, series_list in (("hit", telemetry.find("ceph", "cache_hit_bytes_per_s")),
                                ("miss", telemetry.find("ceph", "cache_miss_bytes_per_s")),
                                ("onode_hit", telemetry.find("ceph", "onode_hits_per_s")),
                                ("onode_miss", telemetry.find("ceph", "onode_misses_per_s"))):
        total = sum(_window_total(telemetry, s) for s in series_list)
        if metric == "hit":
            hits = total
        elif metric == "miss":
            misses = total
        elif metric == "onode_hit":
            onode_hits = total
        else:
            onode_misses = total
    has_ceph = bool(telemetry.find("ceph", "ops_per_s"))

    remote = []
    for series in telemetry.series:
        if series.source in REMOTE_SOURCES:
            mean = window_mean(series, start, end)
            peak = window_max(series, start, end)
            if mean is not None and peak is not None:
                remote.append(RemoteDigest(series.entity, series.metric, mean, peak))
    ceiling = _one(telemetry, "probe", "ceiling_iops")
    cycles = [(s.entity, value) for s in telemetry.find("perf", "cycles_per_s")
              if (value := window_mean(s, start, end)) is not None]
    return TelemetryDigest(
        host_cpu_busy_pct=_mean(telemetry, busy),
        host_cpu_busy_max_pct=None if busy is None else window_max(busy, start, end),
        host_cpu_iowait_pct=dict(modes).get("iowait"),
        host_cpu_pressure_pct=_mean(telemetry, _one(telemetry, "cpu", "pressure_pct", "host")),
        host_cpu_modes_pct=tuple(modes),
        process_cpu_cores=tuple(processes),
        devices=tuple(devices),
        interfaces=tuple(interfaces),
        mem_used_bytes=_mean(telemetry, _one(telemetry, "memory", "used_bytes")),
        page_cache_bytes=_mean(telemetry, _one(telemetry, "memory", "page_cache_bytes")),
        ceph_ops_per_s=ceph_ops_per_s if has_ceph else None,
        ceph_op_latency_ns=ceph_latency_weighted / ceph_ops if ceph_ops > 0 else None,
        ceph_cache_hit_pct=_ratio_pct(hits, misses),
        ceph_onode_hit_pct=_ratio_pct(onode_hits, onode_misses),
        remote=tuple(remote),
        ceiling_iops=ceiling.values[-1] if ceiling is not None and ceiling.values else None,
        ceph_counters=tuple(c for name in COUNTERS if (c := _counter(telemetry, name)) is not None),
        cycles_per_s=tuple(cycles),
        problems=telemetry.problems,
    )
