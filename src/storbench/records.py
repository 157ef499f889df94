"""Flat, stable records for users: one per repetition and direction, and per-case summaries. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

from storbench.fio.parse import merge_clients
from storbench.model import ClientMeasurement, DirectionMeasurement, Status, StoredRepetition
from storbench.telemetry.digest import CEPH_OSD_PROCESS, digest
from storbench.telemetry.series import RepetitionTelemetry
from storbench.units import format_block_size, parse_size_bytes

# (percent, field suffix) of the percentiles every record carries.
PERCENTILES: tuple[tuple[float, str], ...] = (
    (50.0, "p50"), (90.0, "p90"), (95.0, "p95"), (99.0, "p99"), (99.9, "p999"), (99.99, "p9999"),
)


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
    fio_options: str
    lab: str
    repeat: int
    direction: str
    status: str
    started_at_s: float
    finished_at_s: float
    fio_version: str
    iops: float | None
    bw_bytes: float | None
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
    cpu_usr: float | None
    cpu_sys: float | None
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


RECORD_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Record))


def _latency_fields(prefix: str, m: DirectionMeasurement | None) -> dict[str, float | int | None]:
    summary = None if m is None else (m.lat if prefix == "lat" else m.clat)
    out: dict[str, float | int | None] = {
        f"{prefix}_mean_ns": summary.mean_ns if summary else None,
        f"{prefix}_stddev_ns": summary.stddev_ns if summary else None,
        f"{prefix}_min_ns": summary.min_ns if summary else None,
        f"{prefix}_max_ns": summary.max_ns if summary else None,
    }
    for percent, suffix in PERCENTILES:
        out[f"{prefix}_{suffix}_ns"] = summary.percentile_ns(percent) if summary else None
    return out


def _fio_cores(clients: Sequence[ClientMeasurement]) -> float | None:
    """CPU of the fio jobs in cores, from fio's own accounting (usr + sys % of one CPU, summed over jobs):
    exact over each job's run, where sampling /proc would miss jobs shorter than its interval."""
    if not clients:
        return None
    return sum(c.cpu_usr_pct + c.cpu_sys_pct for c in clients) / 100.0


def telemetry_fields(telemetry: RepetitionTelemetry | None) -> dict[str, object]:
    """The record fields one repetition's telemetry gives (the same for each of its directions)."""
    d = digest(telemetry) if telemetry is not None else None
    device = d.busiest_device if d else None
    interface = d.busiest_interface if d else None
    node_cpu = d.remote_max("cpu_busy_pct") if d else None
    node_disk = d.remote_max("disk_util_pct") if d else None
    return {
        "host_cpu_busy_pct": d.host_cpu_busy_pct if d else None,
        "host_cpu_iowait_pct": d.host_cpu_iowait_pct if d else None,
        "host_cpu_pressure_pct": d.host_cpu_pressure_pct if d else None,
        "process_cpu_cores": d.process_cpu_cores if d else (),
        "disk_busiest": device.name if device else "",
        "disk_busiest_util_pct": device.util_pct if device else None,
        "disk_busiest_queue_depth": device.queue_depth if device else None,
        "net_busiest": interface.name if interface else "",
        "net_busiest_util_pct": interface.util_pct if interface else None,
        "net_busiest_bytes_per_s": interface.rx_bytes_per_s + interface.tx_bytes_per_s if interface else None,
        "mem_used_bytes": d.mem_used_bytes if d else None,
        "page_cache_bytes": d.page_cache_bytes if d else None,
        "ceph_osd_cpu_cores": d.process_cores(CEPH_OSD_PROCESS) if d else None,
        "ceph_op_latency_ns": d.ceph_op_latency_ns if d else None,
        "ceph_cache_hit_pct": d.ceph_cache_hit_pct if d else None,
        "node_cpu_busy_pct": node_cpu.mean if node_cpu else None,
        "node_busiest": (node_cpu.entity if node_cpu else node_disk.entity if node_disk else ""),
        "node_disk_util_pct": node_disk.mean if node_disk else None,
        "client_ceiling_iops": d.ceiling_iops if d else None,
    }


def slowest_client(clients: Sequence[ClientMeasurement]) -> tuple[str, float | None]:
    """(the client with the fewest IOPS, its IOPS in % of the median client's); ('', None) below 2 clients."""
    if len(clients) < 2:
        return "", None
    totals = sorted((sum(d.iops for d in c.directions), c.client) for c in clients)
    values = [t for t, _ in totals]
    middle = len(values) // 2
    median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
    return totals[0][1], (100.0 * totals[0][0] / median if median > 0 else None)


def repetition_records(repetitions: Iterable[StoredRepetition], per_client: bool = False) -> list[Record]:
    """Flatten stored repetitions. Several clients are merged exactly (I/O summed, bins merged);
    a failed repetition gives one record with its error and no numbers. ``per_client`` adds each client's
    own records (``client`` names it) after the merged ones."""
    records: list[Record] = []
    for rep in repetitions:
        case, w = rep.case, rep.case.workload
        merged = merge_clients(rep.clients) if rep.status == Status.OK else ()
        cpu_usr = sum(c.cpu_usr_pct for c in rep.clients) if rep.clients else None
        cpu_sys = sum(c.cpu_sys_pct for c in rep.clients) if rep.clients else None
        utils = [d.util_pct for c in rep.clients for d in c.disks]
        observed = telemetry_fields(rep.telemetry if rep.status == Status.OK else None)
        slowest, slowest_pct = slowest_client(rep.clients)
        many = {"clients_reporting": len(rep.clients), "start_skew_s": rep.start_skew_s,
                "slowest_client": slowest, "slowest_client_pct_of_median": slowest_pct}
        groups: list[tuple[str, Sequence[DirectionMeasurement | None]]] = [("", merged or [None])]
        if per_client and rep.status == Status.OK and len(rep.clients) > 1:
            groups += [(c.client, c.directions or [None]) for c in rep.clients]
        for client_name, directions in groups:
            own = [c for c in rep.clients if c.client == client_name] if client_name else rep.clients
            for m in directions:
                records.append(
                    Record(
                        case_id=case.case_id, run_id=rep.run_id, target=case.target.name, target_kind=case.target.kind,
                        rw=w.rw, rwmixread=w.rwmixread, bs=format_block_size(w.bs_bytes), bs_bytes=w.bs_bytes,
                        iodepth=w.iodepth, numjobs=w.numjobs, clients=case.clients, ioengine=w.ioengine,
                        direct=w.direct, runtime_s=w.runtime_s, ramp_s=w.ramp_s, size_bytes=w.size_bytes,
                        fio_options=" ".join(f"{k}={v}" for k, v in w.fio_options),
                        lab=" ".join(f"{k}={v}" for k, v in case.lab.pairs()), repeat=rep.rep_index,
                        direction=m.direction.value if m else "", status=rep.status.value,
                        started_at_s=rep.started_at_s, finished_at_s=rep.finished_at_s, fio_version=rep.fio_version,
                        iops=m.iops if m else None, bw_bytes=m.bw_bytes if m else None,
                        total_ios=m.total_ios if m else None, io_bytes=m.io_bytes if m else None,
                        cpu_usr=cpu_usr, cpu_sys=cpu_sys, disk_util_pct=max(utils) if utils else None,
                        error=rep.error,
                        **_latency_fields("lat", m),  # type: ignore[arg-type]
                        **_latency_fields("clat", m),  # type: ignore[arg-type]
                        **observed,  # type: ignore[arg-type]
                        client_cpu_cores=_fio_cores(own) if rep.status == Status.OK else None,
                        client=client_name, **many,  # type: ignore[arg-type]
                    )
                )
    return records


def filter_records(records: Sequence[Record], where: Sequence[tuple[str, str]]) -> list[Record]:
    """Keep records matching every ``field=value`` pair (compared as text; ``bs`` also by bytes).

    Raises ValueError naming an unknown field.
    """
    for key, _value in where:
        if key not in RECORD_FIELDS:
            raise ValueError(key)
    out: list[Record] = []
    for record in records:
        keep = True
        for key, value in where:
            actual = getattr(record, key)
            if key == "bs":
                try:
                    keep = record.bs_bytes == parse_size_bytes(value)
                except ValueError:
                    keep = False
            elif isinstance(actual, bool):
                keep = str(actual).lower() == value.lower() or str(int(actual)) == value
            elif isinstance(actual, float):
                try:
                    keep = actual == float(value)
                except ValueError:
                    keep = False
            else:
                keep = str(actual) == value
            if not keep:
                break
        if keep:
            out.append(record)
    return out


def lab_parameters(record: Record) -> dict[str, str]:
    """The lab configuration a record was measured on, as a mapping ("pool_size" -> "2")."""
    return dict(part.split("=", 1) for part in record.lab.split() if "=" in part)
