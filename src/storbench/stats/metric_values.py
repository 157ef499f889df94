"""A metric's value in one observation (pure): one accessor per metric field, named as `stats.metrics` names them
and as exports carry them; the storage's own latency and what lies outside it, telemetry read for a metric, the
failover figures and each I/O's CPU cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial

from storbench.model import DirectionMeasurement, deletes_after, is_volume_operation, moves_data
from storbench.stats.cost import COMPONENTS, HOST_KEY, KERNEL, OSD, OTHER, TOTAL_KEY, RepetitionCost, repetition_cost
from storbench.stats.layers import StorageLatency, osd_latency_ns, storage_latency
from storbench.stats.observations import PERCENTILES, Observation
from storbench.telemetry.digest import CEPH_OSD_PROCESS, TelemetryDigest

MetricValue = Callable[[Observation], "float | int | None"]


def lat_percentile_ns(m: DirectionMeasurement, percent: float) -> int | None:
    """A total-latency percentile; where fio wrote neither total-latency bins nor percentiles (its default
    json+ without lat_percentiles=1, as imported files often are), the completion latency's, which differs by
    the submission latency only (``lat_percentiles_from`` says which)."""
    value = m.lat.percentile_ns(percent)
    return value if value is not None else m.clat.percentile_ns(percent)


def lat_percentiles_from(m: DirectionMeasurement | None) -> str:
    """"lat" (total latency), "clat" (completion latency stands in) or "" (no percentiles at all)."""
    if m is None:
        return ""
    if m.lat.percentile_ns(50.0) is not None:
        return "lat"
    return "clat" if m.clat.percentile_ns(50.0) is not None else ""


def _lat_percentile(percent: float) -> MetricValue:
    def value(o: Observation) -> int | None:
        return lat_percentile_ns(o.measurement, percent) if o.measurement else None
    return value


def _telemetry(read: Callable[[TelemetryDigest], float | None]) -> MetricValue:
    def value(o: Observation) -> float | None:
        return read(o.telemetry) if o.telemetry is not None else None
    return value


def _remote_mean(metric: str) -> Callable[[TelemetryDigest], float | None]:
    def read(d: TelemetryDigest) -> float | None:
        found = d.remote_max(metric)
        return found.mean if found else None
    return read


def _busiest_device(read: Callable[[float, float], float]) -> Callable[[TelemetryDigest], float | None]:
    def value(d: TelemetryDigest) -> float | None:
        device = d.busiest_device
        return None if device is None else read(device.util_pct, device.queue_depth)
    return value


def _interface_util(d: TelemetryDigest) -> float | None:
    interface = d.busiest_interface
    return None if interface is None else interface.util_pct


def _interface_bytes(d: TelemetryDigest) -> float | None:
    interface = d.busiest_interface
    return None if interface is None else interface.rx_bytes_per_s + interface.tx_bytes_per_s


def observed_storage(o: Observation) -> StorageLatency | None:
    """The storage's own latency for this observation's I/O (`stats.layers.storage_latency`)."""
    found = _storage(o)
    return found if isinstance(found, StorageLatency) else None


def unseparated_storage(o: Observation) -> str:
    """Why the storage's counters do not give this observation's latency by layer ('' when they do, or none)."""
    found = _storage(o)
    return found if isinstance(found, str) else ""


# why a create's counters are not its operations' (`model.deletes_after`)
DELETES_AFTER = "its files are deleted after its measured section, inside fio's run: no telemetry window is its own"


def _storage(o: Observation) -> StorageLatency | str | None:
    if o.telemetry is None or o.measurement is None or o.direction is None:
        return None
    if o.case.workload.rw == "metadata":  # its phases ran one after another over one window: each direction's
        return "the cycle's phases share one telemetry window"  # counters span the others' operations too
    if deletes_after(o.case.workload.rw, o.case.workload.ioengine):
        return DELETES_AFTER
    return storage_latency(o.telemetry, o.direction.value, o.measurement.iops, o.measurement.lat.mean_ns)


def _storage_lat(o: Observation) -> float | None:
    found = observed_storage(o)
    return None if found is None else found.lat_ns


def _outside_storage(share: bool) -> MetricValue:
    """The client's mean latency beyond the storage's (ns), or its share of the client's mean (%)."""
    def value(o: Observation) -> float | None:
        found = observed_storage(o)
        if found is None or o.measurement is None or o.measurement.lat.mean_ns <= 0:
            return None
        outside = max(o.measurement.lat.mean_ns - found.lat_ns, 0.0)
        return 100 * outside / o.measurement.lat.mean_ns if share else outside
    return value


def _osd_lat(process_only: bool) -> MetricValue:
    def value(o: Observation) -> float | None:
        if o.telemetry is None or o.direction is None:
            return None
        return osd_latency_ns(o.telemetry, o.direction.value, process_only)
    return value


def _failover(attribute: str) -> MetricValue:
    """A figure of what the repetition's fault did (`stats.timeline.Failover`); None without a fault."""
    def value(o: Observation) -> float | None:
        figures = o.failover.figures if o.failover is not None else None
        found = getattr(figures, attribute) if figures is not None else None
        return float(found) if found is not None else None
    return value


def _cluster_clean(o: Observation) -> float | None:
    """Seconds from the fault to every PG of the lab cluster active+clean again (None: not watched, or never)."""
    cluster = o.failover.cluster if o.failover is not None else None
    return cluster.clean_after_s if cluster is not None else None


def _faulted(o: Observation) -> bool:
    """A fault was done during the repetition (not one that could not be done)."""
    fault = o.failover.fault if o.failover is not None else None
    return fault is not None and not fault.error


def observation_cost(o: Observation) -> RepetitionCost | None:
    """What the repetition's I/O cost in CPU by component (`stats.cost`); None for one client's own observation
    (the host's CPU is every client's), without telemetry, without I/O, or where fio ran on other machines (this
    machine's CPU is not theirs: real fio servers, a cluster's nodes); a Kubernetes volume operation has none
    (one operation per client, timed whole: its host's CPU is the cluster's controllers' and not per operation),
    nor one with the checking writer beside fio (`check_writes`: its writes cost the storage CPU that fio's I/Os
    do not count, up to two thirds more per I/O at 300 IOPS), nor `rw: metadata`'s cycle (its phases run one after
    another, each rate over its own time: their sum is no rate of the whole, and the CPU sampled is mostly the last
    phase's), nor a create (or an NFS stat), whose job deletes its files after its measured section and before fio
    ends (`model.deletes_after`: the window counted back from fio's end had been the deleting), nor one with a fault
    in it (its I/Os per second span
    the blackout while the daemons' CPU, peering and recovery go on: a 30 s blackout against 13 s in a 60 s window
    reads as a 36 % change of every constant CPU's µs per I/O, with no change of the work an I/O takes)."""
    if (o.client or o.fio.ios_per_s is None or not o.fio.ran_here or is_volume_operation(o.case.workload.rw)
            or o.case.workload.rw == "metadata" or deletes_after(o.case.workload.rw, o.case.workload.ioengine)
            or o.write_check is not None or _faulted(o)):
        return None
    ceph = o.case.lab.ceph
    return repetition_cost(o.fio.ios_per_s, o.fio.bytes_per_s or 0.0, o.telemetry, o.fio.fio_cores, o.host_cpus,
                           ceph.osd_cores_allocated if ceph is not None else None)


def _cost(read: Callable[[RepetitionCost], float | None]) -> MetricValue:
    def value(o: Observation) -> float | None:
        cost = observation_cost(o)
        return None if cost is None else read(cost)
    return value


def _cost_values() -> dict[str, MetricValue]:
    values: dict[str, MetricValue] = {"ios_per_s": lambda o: o.fio.ios_per_s if observation_cost(o) else None}
    for component in (*COMPONENTS, KERNEL):
        values[f"{component.key}_cpu_us_per_io"] = _cost(partial(RepetitionCost.us_per_io, key=component.key))
    values[f"{TOTAL_KEY}_cpu_us_per_io"] = _cost(lambda c: c.us_per_io(TOTAL_KEY))
    values[f"{OSD.key}_cpu_us_per_mib"] = _cost(lambda c: c.us_per_mib(OSD.key))
    values[f"{TOTAL_KEY}_cpu_us_per_mib"] = _cost(lambda c: c.us_per_mib(TOTAL_KEY))
    values["iops_per_core_used"] = _cost(lambda c: c.iops_per_core(TOTAL_KEY))
    values["iops_per_osd_core"] = _cost(lambda c: c.iops_per_core(OSD.key))
    values["iops_per_core_allocated"] = _cost(lambda c: c.iops_per_core_allocated)
    for component in (*COMPONENTS, KERNEL, OTHER):
        values[f"{component.key}_host_cpu_pct"] = _cost(partial(RepetitionCost.host_pct, key=component.key))
    for key in (*(c.key for c in COMPONENTS), HOST_KEY):
        values[f"{key}_cycles_per_io"] = _cost(partial(RepetitionCost.cycles_per_io, key=key))
    return values


METRIC_VALUES: Mapping[str, MetricValue] = {
    "iops": lambda o: o.measurement.iops if o.measurement else None,
    # none where no data moves (a file created, an object deleted): operations x a size means nothing
    "bw_bytes_per_s": lambda o: (o.measurement.bw_bytes_per_s if o.measurement and moves_data(o.case.workload.rw)
                                 else None),
    "lat_mean_ns": lambda o: o.measurement.lat.mean_ns if o.measurement else None,
    **{f"lat_{suffix}_ns": _lat_percentile(percent) for percent, suffix in PERCENTILES},
    "cpu_usr_pct": lambda o: o.fio.cpu_usr_pct,
    "cpu_sys_pct": lambda o: o.fio.cpu_sys_pct,
    "disk_util_pct": lambda o: o.fio.disk_util_pct,
    "host_cpu_busy_pct": _telemetry(lambda d: d.host_cpu_busy_pct),
    "host_cpu_iowait_pct": _telemetry(lambda d: d.host_cpu_iowait_pct),
    "host_cpu_pressure_pct": _telemetry(lambda d: d.host_cpu_pressure_pct),
    "client_cpu_cores": lambda o: o.fio.fio_cores,
    "disk_busiest_util_pct": _telemetry(_busiest_device(lambda util, _queue: util)),
    "disk_busiest_queue_depth": _telemetry(_busiest_device(lambda _util, queue: queue)),
    "net_busiest_util_pct": _telemetry(_interface_util),
    "net_busiest_bytes_per_s": _telemetry(_interface_bytes),
    "ceph_osd_cpu_cores": _telemetry(lambda d: d.process_cores(CEPH_OSD_PROCESS)),
    "ceph_op_latency_ns": _telemetry(lambda d: d.ceph_op_latency_ns),
    "ceph_cache_hit_pct": _telemetry(lambda d: d.ceph_cache_hit_pct),
    "storage_lat_ns": _storage_lat,
    "outside_storage_lat_ns": _outside_storage(share=False),
    "outside_storage_pct": _outside_storage(share=True),
    "osd_lat_ns": _osd_lat(process_only=False),
    "osd_process_lat_ns": _osd_lat(process_only=True),
    "node_cpu_busy_pct": _telemetry(_remote_mean("cpu_busy_pct")),
    "node_disk_util_pct": _telemetry(_remote_mean("disk_util_pct")),
    "client_ceiling_iops": _telemetry(lambda d: d.ceiling_iops),
    "start_skew_s": lambda o: o.fio.start_skew_s,
    "slowest_client_pct_of_median": lambda o: o.fio.slowest_pct_of_median,
    **{name: _failover(attribute) for name, attribute in (
        ("blackout_s", "blackout_s"), ("client_blackout_s", "client_blackout_s"),
        ("first_io_after_fault_s", "first_completion_s"),
        ("undo_blackout_s", "restore_blackout_s"), ("dip_pct", "dip_pct"), ("dip_before_fault_pct", "dip_before_pct"),
        ("degraded_pct", "degraded_pct"),
        ("end_pct", "end_pct"), ("recovery_s", "recovery_s"))},
    "cluster_clean_s": _cluster_clean,
    **_cost_values(),
}


def metric_value(observation: Observation, field: str) -> float | int | None:
    """The value of metric ``field`` (a `stats.metrics.Metric` field) in one observation."""
    return METRIC_VALUES[field](observation)


def busiest_names(observation: Observation) -> tuple[str, str, str]:
    """(busiest device, busiest interface, busiest storage node) of the repetition's telemetry ('' unknown)."""
    d = observation.telemetry
    if d is None:
        return "", "", ""
    device, interface = d.busiest_device, d.busiest_interface
    node_cpu, node_disk = d.remote_max("cpu_busy_pct"), d.remote_max("disk_util_pct")
    node = node_cpu.entity if node_cpu else node_disk.entity if node_disk else ""
    return device.name if device else "", interface.name if interface else "", node
