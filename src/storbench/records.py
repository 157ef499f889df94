"""The flat export record: one per repetition and direction, built from `stats.observations`. Pure.

Only exports (`report/export.py`) read it; statistics read the observations themselves.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from storbench.model import DirectionMeasurement, Expectation, LatencySummary, moves_data
from storbench.model.fault_record import WriteCheck
from storbench.stats.metric_values import (
    busiest_names,
    lat_percentile_ns,
    lat_percentiles_from,
    metric_value,
    observed_storage,
)
from storbench.stats.metrics import COST_METRICS
from storbench.stats.observations import Observation
from storbench.units import format_block_size


@dataclass(frozen=True)
class Record:
    """One repetition and direction. Field names are a stable interface (export, scripts)."""

    case_id: str
    run_id: int
    target: str
    target_kind: str
    rw: str
    rwmixread: int | None
    bs: str
    bs_bytes: int
    iodepth: int
    numjobs: int
    clients: int
    ioengine: str
    direct: bool
    runtime_s: float
    ramp_s: float
    size_bytes: int | None
    files: int | None  # metadata operations (rw: create, stat, delete): files per job, and their size
    file_size_bytes: int | None
    fio_options: str
    lab: str
    repeat: int  # the repetition's number from 1, as progress prints it (#1)
    direction: str
    status: str
    started_at_s: float
    finished_at_s: float
    fio_version: str
    iops: float | None
    bw_bytes_per_s: float | None
    total_ios: int | None
    io_bytes: int | None
    lat_mean_ns: float | None
    lat_stddev_ns: float | None
    lat_min_ns: int | None
    lat_max_ns: int | None
    lat_p50_ns: int | None
    lat_p90_ns: int | None
    lat_p95_ns: int | None
    lat_p99_ns: int | None
    lat_p999_ns: int | None
    lat_p9999_ns: int | None
    lat_percentiles_from: str  # "lat", or "clat" where fio wrote no total-latency bins (lat_percentiles=0)
    clat_mean_ns: float | None
    clat_stddev_ns: float | None
    clat_min_ns: int | None
    clat_max_ns: int | None
    clat_p50_ns: int | None
    clat_p90_ns: int | None
    clat_p95_ns: int | None
    clat_p99_ns: int | None
    clat_p999_ns: int | None
    clat_p9999_ns: int | None
    cpu_usr_pct: float | None
    cpu_sys_pct: float | None
    disk_util_pct: float | None
    error: str
    # Telemetry over fio's measured window (see docs/methodology.md, "Telemetry"); None when not sampled.
    host_cpu_busy_pct: float | None
    host_cpu_iowait_pct: float | None
    host_cpu_pressure_pct: float | None
    client_cpu_cores: float | None
    process_cpu_cores: tuple[tuple[str, float], ...]
    disk_busiest: str
    disk_busiest_util_pct: float | None
    disk_busiest_queue_depth: float | None
    net_busiest: str
    net_busiest_util_pct: float | None
    net_busiest_bytes_per_s: float | None
    mem_used_bytes: float | None
    page_cache_bytes: float | None
    ceph_osd_cpu_cores: float | None
    ceph_op_latency_ns: float | None
    ceph_cache_hit_pct: float | None
    # where the time goes (stats.layers): the storage's own latency for this I/O at its outermost layer that
    # served it (storage_layer: OSDs, MDS, radosgw), the rest of the client's mean outside it, the OSDs' op
    # latency for this direction and its part without the queue
    storage_layer: str
    storage_lat_ns: float | None
    outside_storage_lat_ns: float | None
    outside_storage_pct: float | None
    osd_lat_ns: float | None
    osd_process_lat_ns: float | None
    node_cpu_busy_pct: float | None
    node_busiest: str
    node_disk_util_pct: float | None
    client_ceiling_iops: float | None
    # Many clients: which client a record is ("" = all clients merged), how far apart they started, and the
    # slowest client's IOPS relative to the median client's (a straggler is far below 100).
    client: str = ""
    clients_reporting: int | None = None
    start_skew_s: float | None = None
    slowest_client: str = ""
    slowest_client_pct_of_median: float | None = None
    # What the target was declared to deliver (its plan's `expect:`): this record's IOPS as a percentage of the
    # declared IOPS, else its throughput of the declared throughput; None when the target declared nothing.
    pct_of_expected: float | None = None
    # A plan with faults: the repetition's fault ("kill osd.1") and what it did (docs/methodology.md#failover):
    # the blackout (longest time no I/O completed), the first completion after the fault, the stall when it was
    # undone, the lowest window and the mean until recovery (of a recovered run) as % of the level before, the level
    # at the end (the seconds the recovery test read) as % of it, the recovery's verdict and time.
    fault: str = ""
    blackout_s: float | None = None
    client_blackout_s: float | None = None  # the longest any one client waited (its own blackout)
    first_io_after_fault_s: float | None = None
    undo_blackout_s: float | None = None
    dip_pct: float | None = None
    dip_before_fault_pct: float | None = None  # the lowest of as many windows before the fault: the noise's own dip
    degraded_pct: float | None = None
    end_pct: float | None = None
    recovery: str = ""
    recovery_s: float | None = None
    cluster_clean_s: float | None = None  # a lab Ceph cluster: fault to every PG active+clean again
    # A plan with `check_writes`: what its writer beside fio had acknowledged, how many of those were read back
    # (each block's last), and the blocks read back lost, stale, torn or corrupt after the repetition
    # (docs/methodology.md, "Nothing acknowledged lost").
    writes_acknowledged: int | None = None
    writes_read_back: int | None = None
    writes_lost: int | None = None
    writes_stale: int | None = None
    writes_torn: int | None = None
    writes_corrupt: int | None = None
    # What each I/O cost in CPU (docs/methodology.md#cpu-cost-per-io): by component (client = fio, the Ceph daemons,
    # nfs-ganesha, radosgw, the kernel's irq and softirq) and all together, in µs of CPU per I/O (every direction of
    # the repetition together) and per MiB; IOPS per core; each component's share of the host's CPUs (other: the
    # host's busy time beyond them). None without telemetry, and on one client's own record.
    ios_per_s: float | None = None
    client_cpu_us_per_io: float | None = None
    osd_cpu_us_per_io: float | None = None
    mon_cpu_us_per_io: float | None = None
    mgr_cpu_us_per_io: float | None = None
    mds_cpu_us_per_io: float | None = None
    fuse_cpu_us_per_io: float | None = None
    ganesha_cpu_us_per_io: float | None = None
    rgw_cpu_us_per_io: float | None = None
    kernel_cpu_us_per_io: float | None = None
    total_cpu_us_per_io: float | None = None
    osd_cpu_us_per_mib: float | None = None
    total_cpu_us_per_mib: float | None = None
    iops_per_core_used: float | None = None
    iops_per_osd_core: float | None = None
    iops_per_core_allocated: float | None = None
    client_host_cpu_pct: float | None = None
    osd_host_cpu_pct: float | None = None
    mon_host_cpu_pct: float | None = None
    mgr_host_cpu_pct: float | None = None
    mds_host_cpu_pct: float | None = None
    fuse_host_cpu_pct: float | None = None
    ganesha_host_cpu_pct: float | None = None
    rgw_host_cpu_pct: float | None = None
    kernel_host_cpu_pct: float | None = None
    other_host_cpu_pct: float | None = None
    client_cycles_per_io: float | None = None  # telemetry.cycles: where perf counted them
    osd_cycles_per_io: float | None = None
    mon_cycles_per_io: float | None = None
    mgr_cycles_per_io: float | None = None
    mds_cycles_per_io: float | None = None
    fuse_cycles_per_io: float | None = None
    ganesha_cycles_per_io: float | None = None
    rgw_cycles_per_io: float | None = None
    host_cycles_per_io: float | None = None


RECORD_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Record))
# Fields read against the run's plan, not the repetition: not `--where` keys (`stats.match.FIELDS`).
PLAN_FIELDS = ("pct_of_expected",)


def _percentile(summary: LatencySummary | None, percent: float) -> int | None:
    return summary.percentile_ns(percent) if summary else None


def _lat(m: DirectionMeasurement | None, percent: float) -> int | None:
    return lat_percentile_ns(m, percent) if m else None


def pct_of_expected(o: Observation, expected: Expectation | None,
                    case_total: tuple[float, float] | None = None) -> float | None:
    """The observation's IOPS as a percentage of the declared IOPS, else its throughput of the declared
    throughput (the rule of `PointSummary.share_of_expected`); None when nothing was declared or measured.
    ``case_total``: (IOPS, throughput) of its repetition over all its directions, for a mixed case (a declared
    limit is of all directions)."""
    m = o.measurement
    if expected is None or m is None:
        return None
    iops, bw = case_total or (m.iops, m.bw_bytes_per_s)
    if expected.iops:
        return 100 * iops / expected.iops
    if expected.bw_bytes_per_s:
        return 100 * bw / expected.bw_bytes_per_s
    return None


def record(o: Observation, expected: Expectation | None = None,
           case_total: tuple[float, float] | None = None) -> Record:
    """One observation as the flat export record: the case's parameters as text, every number by name;
    ``expected`` is what its target was declared to deliver (`expect:`), ``case_total`` its repetition's IOPS and
    throughput over all directions where it has several."""
    case, w, m = o.case, o.case.workload, o.measurement
    moving = moves_data(w.rw)  # a file created, an object deleted: no bandwidth, no bytes
    device, interface, node = busiest_names(o)
    d = o.telemetry
    clat = m.clat if m else None
    return Record(
        case_id=case.case_id, run_id=o.run_id, target=case.target.name, target_kind=case.target.kind,
        rw=w.rw, rwmixread=w.rwmixread, bs=format_block_size(w.bs_bytes), bs_bytes=w.bs_bytes,
        iodepth=w.iodepth, numjobs=w.numjobs, clients=case.clients, ioengine=w.ioengine,
        direct=w.direct, runtime_s=w.runtime_s, ramp_s=w.ramp_s, size_bytes=w.size_bytes,
        files=w.files, file_size_bytes=w.file_size_bytes,
        fio_options=" ".join(f"{k}={v}" for k, v in w.fio_options),
        lab=" ".join(f"{k}={v}" for k, v in case.lab.pairs()), repeat=o.rep_index + 1,
        direction=o.direction_name, status=o.status.value,
        started_at_s=o.started_at_s, finished_at_s=o.finished_at_s, fio_version=o.fio_version,
        iops=m.iops if m else None, bw_bytes_per_s=m.bw_bytes_per_s if m and moving else None,
        total_ios=m.total_ios if m else None, io_bytes=m.io_bytes if m and moving else None,
        lat_mean_ns=m.lat.mean_ns if m else None, lat_stddev_ns=m.lat.stddev_ns if m else None,
        lat_min_ns=m.lat.min_ns if m else None, lat_max_ns=m.lat.max_ns if m else None,
        lat_p50_ns=_lat(m, 50.0), lat_p90_ns=_lat(m, 90.0), lat_p95_ns=_lat(m, 95.0), lat_p99_ns=_lat(m, 99.0),
        lat_p999_ns=_lat(m, 99.9), lat_p9999_ns=_lat(m, 99.99), lat_percentiles_from=lat_percentiles_from(m),
        clat_mean_ns=m.clat.mean_ns if m else None, clat_stddev_ns=m.clat.stddev_ns if m else None,
        clat_min_ns=m.clat.min_ns if m else None, clat_max_ns=m.clat.max_ns if m else None,
        clat_p50_ns=_percentile(clat, 50.0), clat_p90_ns=_percentile(clat, 90.0),
        clat_p95_ns=_percentile(clat, 95.0), clat_p99_ns=_percentile(clat, 99.0),
        clat_p999_ns=_percentile(clat, 99.9), clat_p9999_ns=_percentile(clat, 99.99),
        cpu_usr_pct=o.fio.cpu_usr_pct, cpu_sys_pct=o.fio.cpu_sys_pct, disk_util_pct=o.fio.disk_util_pct, error=o.error,
        host_cpu_busy_pct=_metric(o, "host_cpu_busy_pct"), host_cpu_iowait_pct=_metric(o, "host_cpu_iowait_pct"),
        host_cpu_pressure_pct=_metric(o, "host_cpu_pressure_pct"), client_cpu_cores=o.fio.fio_cores,
        process_cpu_cores=d.process_cpu_cores if d else (), disk_busiest=device,
        disk_busiest_util_pct=_metric(o, "disk_busiest_util_pct"),
        disk_busiest_queue_depth=_metric(o, "disk_busiest_queue_depth"), net_busiest=interface,
        net_busiest_util_pct=_metric(o, "net_busiest_util_pct"),
        net_busiest_bytes_per_s=_metric(o, "net_busiest_bytes_per_s"),
        mem_used_bytes=d.mem_used_bytes if d else None, page_cache_bytes=d.page_cache_bytes if d else None,
        ceph_osd_cpu_cores=_metric(o, "ceph_osd_cpu_cores"), ceph_op_latency_ns=_metric(o, "ceph_op_latency_ns"),
        ceph_cache_hit_pct=_metric(o, "ceph_cache_hit_pct"),
        storage_layer=storage.layer if (storage := observed_storage(o)) is not None else "",
        storage_lat_ns=_metric(o, "storage_lat_ns"), outside_storage_lat_ns=_metric(o, "outside_storage_lat_ns"),
        outside_storage_pct=_metric(o, "outside_storage_pct"), osd_lat_ns=_metric(o, "osd_lat_ns"),
        osd_process_lat_ns=_metric(o, "osd_process_lat_ns"), node_cpu_busy_pct=_metric(o, "node_cpu_busy_pct"),
        node_busiest=node, node_disk_util_pct=_metric(o, "node_disk_util_pct"),
        client_ceiling_iops=_metric(o, "client_ceiling_iops"),
        client=o.client, clients_reporting=o.fio.reporting, start_skew_s=o.fio.start_skew_s,
        slowest_client=o.fio.slowest, slowest_client_pct_of_median=o.fio.slowest_pct_of_median,
        pct_of_expected=pct_of_expected(o, expected, case_total),
        fault=f"{fault.action} {fault.target}" if (fault := o.failover.fault if o.failover else None) else "",
        blackout_s=_metric(o, "blackout_s"), client_blackout_s=_metric(o, "client_blackout_s"),
        first_io_after_fault_s=_metric(o, "first_io_after_fault_s"),
        undo_blackout_s=_metric(o, "undo_blackout_s"), dip_pct=_metric(o, "dip_pct"),
        dip_before_fault_pct=_metric(o, "dip_before_fault_pct"),
        degraded_pct=_metric(o, "degraded_pct"), end_pct=_metric(o, "end_pct"),
        recovery=f.recovery.value if (f := o.failover.figures if o.failover else None) else "",
        recovery_s=_metric(o, "recovery_s"), cluster_clean_s=_metric(o, "cluster_clean_s"),
        **_write_check_fields(o.write_check),
        **_cost_fields(o),
    )


def _write_check_fields(check: WriteCheck | None) -> dict[str, int | None]:
    if check is None or check.error:
        return {}
    return {"writes_acknowledged": check.acknowledged, "writes_read_back": check.read_back, "writes_lost": check.lost,
            "writes_stale": check.stale, "writes_torn": check.torn, "writes_corrupt": check.corrupt}


def _cost_fields(o: Observation) -> dict[str, Any]:
    return {m.field: _metric(o, m.field) for m in COST_METRICS}


def _metric(o: Observation, field: str) -> float | None:
    value = metric_value(o, field)
    return None if value is None else float(value)


def export_records(items: Iterable[Observation],
                   expectations: Mapping[tuple[int, str], Expectation] | None = None) -> list[Record]:
    """The flat records of observations, in their order; ``expectations`` ((run, target) -> `expect:`,
    `stats.run_questions.expectations`) gives each its ``pct_of_expected``."""
    declared = expectations or {}
    chosen = list(items)
    directions: dict[tuple[int, str, int, str], list[Observation]] = {}
    for o in chosen:
        if o.measurement is not None:
            directions.setdefault((o.run_id, o.case.case_id, o.rep_index, o.client), []).append(o)
    totals = {key: (sum(o.measurement.iops for o in found if o.measurement),
                    sum(o.measurement.bw_bytes_per_s for o in found if o.measurement))
              for key, found in directions.items()
              if len(found) > 1 and found[0].case.workload.rw != "metadata"}  # its phases ran in turn: no sum
    return [record(o, declared.get((o.run_id, o.case.target.name)),
                   totals.get((o.run_id, o.case.case_id, o.rep_index, o.client))) for o in chosen]

