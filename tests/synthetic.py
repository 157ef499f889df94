"""Synthetic observations for statistics tests, written with the export record's field names.

``observation(iops=1000.0, lat_p99_ns=2_000_000, lab="lab=ceph pool_size=2", ...)`` builds the typed
`Observation` (a Case with its workload and lab point, a DirectionMeasurement whose latency percentiles are the
given ones, fio's client figures and a telemetry digest) that a stored repetition with those numbers gives.
"""

from __future__ import annotations

from dataclasses import replace

from storbench.model import (
    BlockTarget,
    Case,
    Direction,
    DirectionMeasurement,
    ImportedTarget,
    LabPoint,
    LatencySummary,
    PathTarget,
    RbdTarget,
    Status,
    TargetSpec,
    WorkloadPoint,
)
from storbench.stats.observations import PERCENTILES, ClientFigures, Observation
from storbench.telemetry.digest import (
    CEPH_OSD_PROCESS,
    CounterDigest,
    DeviceDigest,
    InterfaceDigest,
    RemoteDigest,
    TelemetryDigest,
)

GIB = 1 << 30
DEFAULTS: dict[str, object] = dict(
    case_id="case-a", run_id=1, target="a", target_kind="path", rw="randread", rwmixread=None, bs_bytes=4096,
    iodepth=1, numjobs=1, clients=1, ioengine="libaio", direct=True, runtime_s=30.0, ramp_s=5.0, size_bytes=GIB,
    fio_options="", lab="", repeat=0, direction="read", status="ok", started_at_s=0.0, finished_at_s=35.0,
    fio_version="fio-3.36", iops=1000.0, bw_bytes_per_s=None, total_ios=None, io_bytes=None, lat_mean_ns=1e6,
    lat_p50_ns=None, lat_p90_ns=None, lat_p95_ns=None, lat_p99_ns=None, lat_p999_ns=None, lat_p9999_ns=None,
    cpu_usr_pct=None, cpu_sys_pct=None, disk_util_pct=None, error="", client_cpu_cores=None, start_skew_s=None,
    slowest_client="", slowest_client_pct_of_median=None, clients_reporting=1, client="",
    host_cpu_busy_pct=None, host_cpu_iowait_pct=None, host_cpu_pressure_pct=None, process_cpu_cores=(),
    disk_busiest="", disk_busiest_util_pct=None, disk_busiest_queue_depth=None, net_busiest="",
    net_busiest_util_pct=None, net_busiest_bytes_per_s=None, ceph_osd_cpu_cores=None, ceph_op_latency_ns=None,
    ceph_cache_hit_pct=None, node_busiest="", node_cpu_busy_pct=None, node_disk_util_pct=None,
    client_ceiling_iops=None,
    # the OSDs' op latency for this observation's direction, their op rate the client's IOPS (telemetry.digest's
    # op_r / op_w counters); ceph_counters: further (name, per_s, latency_ns) counters
    osd_lat_ns=None, ceph_counters=(),
)
# A Ceph lab point's settings when a test names only some of them.
CEPH_DEFAULTS = {"osds": "3", "osd_size": str(2 * GIB), "objectstore": "bluestore", "pool_size": "2"}


def _target(name: str, kind: str) -> TargetSpec:
    """A target of ``kind`` with placeholder details (statistics look only at its name and kind)."""
    if kind == "path":
        return PathTarget(name, path="/x", size_bytes=1 << 20)
    if kind == "block":
        return BlockTarget(name, device="/dev/x")
    if kind == "rbd":
        return RbdTarget(name, size_bytes=1 << 20, pool="p", image="i", client="admin")
    return ImportedTarget(name)


def _lab(text: str) -> LabPoint:
    pairs = dict(part.split("=", 1) for part in text.split())
    if "ceph" in pairs.get("lab", "").split("+"):
        pairs = {**CEPH_DEFAULTS, **pairs}
    return LabPoint.from_pairs(pairs.items())


def _telemetry(v: dict[str, object]) -> TelemetryDigest | None:
    names = ("host_cpu_busy_pct", "host_cpu_iowait_pct", "host_cpu_pressure_pct", "disk_busiest_util_pct",
             "net_busiest_util_pct", "net_busiest_bytes_per_s", "ceph_osd_cpu_cores", "ceph_op_latency_ns",
             "ceph_cache_hit_pct", "node_cpu_busy_pct", "node_disk_util_pct", "client_ceiling_iops", "osd_lat_ns")
    if all(v[n] is None for n in names) and not v["process_cpu_cores"] and not v["ceph_counters"]:
        return None
    devices = ()
    if v["disk_busiest_util_pct"] is not None:
        devices = (DeviceDigest(str(v["disk_busiest"]) or "vda", float(v["disk_busiest_util_pct"]),
                                float(v["disk_busiest_util_pct"]), float(v["disk_busiest_queue_depth"] or 0.0),
                                0.0, 0.0, 0.0, 0.0),)
    interfaces = ()
    if v["net_busiest_util_pct"] is not None or v["net_busiest_bytes_per_s"] is not None:
        interfaces = (InterfaceDigest(str(v["net_busiest"]) or "eth0", float(v["net_busiest_bytes_per_s"] or 0.0),
                                      0.0, v["net_busiest_util_pct"]),)
    remote = tuple(RemoteDigest(str(v["node_busiest"]) or "node", metric, float(v[field]), float(v[field]))
                   for field, metric in (("node_cpu_busy_pct", "cpu_busy_pct"), ("node_disk_util_pct", "disk_util_pct"))
                   if v[field] is not None)
    processes = tuple(v["process_cpu_cores"])
    if v["ceph_osd_cpu_cores"] is not None:
        processes = ((CEPH_OSD_PROCESS, v["ceph_osd_cpu_cores"]), *processes)
    counters = tuple(CounterDigest(name, float(per_s), latency) for name, per_s, latency in v["ceph_counters"])
    if v["osd_lat_ns"] is not None:
        name = "op_w" if v["direction"] == "write" else "op_r"
        counters = (CounterDigest(name, float(v["iops"]), float(v["osd_lat_ns"])), *counters)
    return TelemetryDigest(
        host_cpu_busy_pct=v["host_cpu_busy_pct"], host_cpu_busy_max_pct=v["host_cpu_busy_pct"],
        host_cpu_iowait_pct=v["host_cpu_iowait_pct"], host_cpu_pressure_pct=v["host_cpu_pressure_pct"],
        host_cpu_modes_pct=(), process_cpu_cores=processes, devices=devices, interfaces=interfaces,
        mem_used_bytes=None, page_cache_bytes=None, ceph_ops_per_s=None,
        ceph_op_latency_ns=v["ceph_op_latency_ns"], ceph_cache_hit_pct=v["ceph_cache_hit_pct"],
        ceph_onode_hit_pct=None, remote=remote, ceiling_iops=v["client_ceiling_iops"],
        ceph_counters=counters)


def observation(**fields: object) -> Observation:
    """An observation with the record fields given (the rest from ``DEFAULTS``). ``direction=""`` is a
    repetition that measured nothing (a failed one); ``bs`` is ignored (``bs_bytes`` is the size)."""
    host_cpus = fields.pop("host_cpus", None)  # the run's machine (not a record field)
    unknown = set(fields) - set(DEFAULTS) - {"bs"}
    assert not unknown, f"no such record field in the synthetic observation: {unknown}"
    v = {**DEFAULTS, **fields}
    if "clients_reporting" not in fields:  # every client reported, unless a test says otherwise
        v["clients_reporting"] = v["clients"]
    options = tuple(tuple(part.split("=", 1)) for part in str(v["fio_options"]).split())
    workload = WorkloadPoint(
        rw=str(v["rw"]), bs_bytes=int(v["bs_bytes"]), iodepth=int(v["iodepth"]), numjobs=int(v["numjobs"]),
        runtime_s=float(v["runtime_s"]), ramp_s=float(v["ramp_s"]), direct=bool(v["direct"]),
        ioengine=str(v["ioengine"]), rwmixread=v["rwmixread"], size_bytes=v["size_bytes"],
        fio_options=options)
    case = Case(case_id=str(v["case_id"]), target=_target(str(v["target"]), str(v["target_kind"])),
                workload=workload, clients=int(v["clients"]), lab=_lab(str(v["lab"])))
    measurement = None
    if v["direction"]:
        assert v["iops"] is not None, "a direction measured something: give iops"
        percentiles = tuple((pct, int(v[f"lat_{suffix}_ns"])) for pct, suffix in PERCENTILES
                            if v[f"lat_{suffix}_ns"] is not None)
        lat = LatencySummary(samples=0, min_ns=0, max_ns=0, mean_ns=float(v["lat_mean_ns"]), stddev_ns=0.0,
                             reported_percentiles_ns=percentiles)
        iops = float(v["iops"])
        measurement = DirectionMeasurement(
            direction=Direction(v["direction"]), total_ios=int(v["total_ios"] or 0), io_bytes=int(v["io_bytes"] or 0),
            runtime_ms=0, iops=iops,
            bw_bytes_per_s=float(v["bw_bytes_per_s"]) if v["bw_bytes_per_s"] is not None else iops * int(v["bs_bytes"]),
            clat=replace(lat), lat=lat)
    figures = ClientFigures(
        cpu_usr_pct=v["cpu_usr_pct"], cpu_sys_pct=v["cpu_sys_pct"], disk_util_pct=v["disk_util_pct"],
        fio_cores=v["client_cpu_cores"], reporting=int(v["clients_reporting"]), start_skew_s=v["start_skew_s"],
        slowest=str(v["slowest_client"]), slowest_pct_of_median=v["slowest_client_pct_of_median"],
        ios_per_s=measurement.iops if measurement else None,
        bytes_per_s=measurement.bw_bytes_per_s if measurement else None)
    return Observation(
        run_id=int(v["run_id"]), case=case, rep_index=int(v["repeat"]), status=Status(v["status"]),
        direction=measurement.direction if measurement else None, measurement=measurement,
        started_at_s=float(v["started_at_s"]), finished_at_s=float(v["finished_at_s"]),
        fio_version=str(v["fio_version"]), error=str(v["error"]), fio=figures, telemetry=_telemetry(v),
        client=str(v["client"]), host_cpus=host_cpus)  # type: ignore[arg-type]
