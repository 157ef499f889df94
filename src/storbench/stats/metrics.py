"""The metrics statistics are computed for, and which way is better."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    field: str
    label: str
    higher_is_better: bool
    unit: str


IOPS = Metric("iops", "IOPS", True, "IOPS")
BANDWIDTH = Metric("bw_bytes", "bandwidth", True, "B/s")
LAT_MEAN = Metric("lat_mean_ns", "mean latency", False, "ns")
LAT_P50 = Metric("lat_p50_ns", "p50 latency", False, "ns")
LAT_P95 = Metric("lat_p95_ns", "p95 latency", False, "ns")
LAT_P99 = Metric("lat_p99_ns", "p99 latency", False, "ns")
LAT_P999 = Metric("lat_p999_ns", "p99.9 latency", False, "ns")
CPU_USR = Metric("cpu_usr", "fio usr CPU", False, "%")
CPU_SYS = Metric("cpu_sys", "fio sys CPU", False, "%")
DISK_UTIL = Metric("disk_util_pct", "disk utilisation", False, "%")

SUMMARY_METRICS = (IOPS, BANDWIDTH, LAT_MEAN, LAT_P50, LAT_P95, LAT_P99, LAT_P999, CPU_USR, CPU_SYS, DISK_UTIL)
COMPARE_METRICS = (IOPS, BANDWIDTH, LAT_MEAN, LAT_P95, LAT_P99)
METRICS_BY_FIELD = {m.field: m for m in SUMMARY_METRICS}
