"""The metrics statistics are computed for, and which way is better."""

from __future__ import annotations

from dataclasses import dataclass

from storbench.stats.cost import COMPONENTS, HOST_KEY, KERNEL, OSD, OTHER, TOTAL_KEY


@dataclass(frozen=True)
class Metric:
    field: str
    label: str
    higher_is_better: bool
    unit: str
    # read from histogram bins (a percentile): repetitions in the same bin are equal to the bin's resolution, so a
    # side (or pairs) without spread gives no interval rather than a zero-width one
    quantised: bool = False


IOPS = Metric("iops", "IOPS", True, "IOPS")
BANDWIDTH = Metric("bw_bytes_per_s", "bandwidth", True, "B/s")
LAT_MEAN = Metric("lat_mean_ns", "mean latency", False, "ns")
LAT_P50 = Metric("lat_p50_ns", "p50 latency", False, "ns", quantised=True)
LAT_P95 = Metric("lat_p95_ns", "p95 latency", False, "ns", quantised=True)
LAT_P99 = Metric("lat_p99_ns", "p99 latency", False, "ns", quantised=True)
LAT_P999 = Metric("lat_p999_ns", "p99.9 latency", False, "ns", quantised=True)
QUANTISED_FIELDS = frozenset(m.field for m in (LAT_P50, LAT_P95, LAT_P99, LAT_P999))  # read from histogram bins
# fio's latency bins: 64 to each power of two (FIO_IO_U_PLAT_BITS 6), so neighbouring bins are at most 1/64 of the
# larger value apart: the resolution of a percentile read from them
BIN_RESOLUTION = 1 / 64
CPU_USR = Metric("cpu_usr_pct", "fio usr CPU", False, "%")
CPU_SYS = Metric("cpu_sys_pct", "fio sys CPU", False, "%")
DISK_UTIL = Metric("disk_util_pct", "disk utilisation", False, "%")

HOST_CPU = Metric("host_cpu_busy_pct", "host CPU busy", False, "%")
HOST_IOWAIT = Metric("host_cpu_iowait_pct", "host CPU iowait", False, "%")
HOST_PRESSURE = Metric("host_cpu_pressure_pct", "time runnable tasks waited for a CPU", False, "%")
CLIENT_CORES = Metric("client_cpu_cores", "fio CPU", False, "cores")
DEVICE_UTIL = Metric("disk_busiest_util_pct", "busiest device utilisation", False, "%")
DEVICE_QUEUE = Metric("disk_busiest_queue_depth", "busiest device queue", False, "I/Os")
NET_UTIL = Metric("net_busiest_util_pct", "busiest link utilisation", False, "%")
NET_BYTES = Metric("net_busiest_bytes_per_s", "busiest interface traffic", False, "B/s")
OSD_CORES = Metric("ceph_osd_cpu_cores", "ceph-osd CPU", False, "cores")
OSD_LATENCY = Metric("ceph_op_latency_ns", "OSD op latency", False, "ns")
STORAGE_LATENCY = Metric("storage_lat_ns", "storage latency (its own, same I/O)", False, "ns")
OUTSIDE_LATENCY = Metric("outside_storage_lat_ns", "latency outside the storage", False, "ns")
OUTSIDE_SHARE = Metric("outside_storage_pct", "share of latency outside the storage", False, "%")
OSD_DIRECTION_LATENCY = Metric("osd_lat_ns", "OSD op latency (this direction)", False, "ns")
OSD_PROCESS_LATENCY = Metric("osd_process_lat_ns", "OSD op latency without the queue", False, "ns")
CACHE_HIT = Metric("ceph_cache_hit_pct", "BlueStore cache hit ratio", True, "%")
NODE_CPU = Metric("node_cpu_busy_pct", "busiest node CPU busy", False, "%")
NODE_DISK = Metric("node_disk_util_pct", "busiest node disk utilisation", False, "%")
CEILING = Metric("client_ceiling_iops", "client ceiling (null engine)", True, "IOPS")
START_SKEW = Metric("start_skew_s", "start skew between clients", False, "s")
SLOWEST_CLIENT = Metric("slowest_client_pct_of_median", "slowest client, % of the median client", True, "%")

# what a plan's fault did, per repetition (each repetition one fault: docs/methodology.md#failover); `compare`
# judges them like any metric where both sides had faults (never gating the stopping rule)
BLACKOUT = Metric("blackout_s", "blackout", False, "s")
CLIENT_BLACKOUT = Metric("client_blackout_s", "longest blackout of one client", False, "s")
FIRST_IO = Metric("first_io_after_fault_s", "first I/O after the fault", False, "s")
UNDO_BLACKOUT = Metric("undo_blackout_s", "blackout when undone", False, "s")
DIP = Metric("dip_pct", "lowest window, % of the level before", True, "%")
DEGRADED = Metric("degraded_pct", "level until back, % of before", True, "%")
END_LEVEL = Metric("end_pct", "level at the end, % of before", True, "%")
RECOVERY_TIME = Metric("recovery_s", "time to recover", False, "s")
CLUSTER_CLEAN = Metric("cluster_clean_s", "time to every PG active+clean", False, "s")
FAILOVER_METRICS = (BLACKOUT, CLIENT_BLACKOUT, FIRST_IO, UNDO_BLACKOUT, DIP, DEGRADED, END_LEVEL, RECOVERY_TIME,
                    CLUSTER_CLEAN)

# what each I/O costs in CPU (`stats.cost`): per component and in all, per I/O and per MiB; IOPS per core; the
# share of the host's CPUs each took
COST_PER_IO = tuple(Metric(f"{c.key}_cpu_us_per_io", f"{c.label} CPU per I/O", False, "µs")
                    for c in (*COMPONENTS, KERNEL))
TOTAL_COST = Metric(f"{TOTAL_KEY}_cpu_us_per_io", "CPU per I/O, all components", False, "µs")
COST_PER_MIB = (Metric(f"{OSD.key}_cpu_us_per_mib", "ceph-osd CPU per MiB", False, "µs"),
                Metric(f"{TOTAL_KEY}_cpu_us_per_mib", "CPU per MiB, all components", False, "µs"))
IOPS_PER_CORE = (Metric("iops_per_core_used", "IOPS per core used", True, "IOPS"),
                 Metric("iops_per_osd_core", "IOPS per ceph-osd core used", True, "IOPS"),
                 Metric("iops_per_core_allocated", "IOPS per core allocated", True, "IOPS"))
HOST_SHARES = tuple(Metric(f"{c.key}_host_cpu_pct", f"{c.label}, % of the host's CPUs", False, "%")
                    for c in (*COMPONENTS, KERNEL, OTHER))
IOS_PER_S = Metric("ios_per_s", "I/Os per second, every direction", True, "IOPS")
# CPU cycles per I/O where perf counted them (`telemetry.cycles`): each component (a process name running when the
# repetition started) and the whole machine
CYCLES_PER_IO = (*(Metric(f"{c.key}_cycles_per_io", f"{c.label} cycles per I/O", False, "cycles")
                   for c in COMPONENTS),
                 Metric(f"{HOST_KEY}_cycles_per_io", "the machine's cycles per I/O", False, "cycles"))
COST_METRICS = (IOS_PER_S, *COST_PER_IO, TOTAL_COST, *COST_PER_MIB, *IOPS_PER_CORE, *HOST_SHARES, *CYCLES_PER_IO)
# compared where both sides have them (descriptive, never gated): what a setting did to the cost of an I/O
COST_COMPARED = (*COST_PER_IO, TOTAL_COST, IOPS_PER_CORE[0], IOPS_PER_CORE[1], *CYCLES_PER_IO)

TELEMETRY_METRICS = (HOST_CPU, HOST_IOWAIT, HOST_PRESSURE, CLIENT_CORES, DEVICE_UTIL, DEVICE_QUEUE, NET_UTIL, NET_BYTES,
                     OSD_CORES,
                     OSD_LATENCY, STORAGE_LATENCY, OUTSIDE_LATENCY, OUTSIDE_SHARE, OSD_DIRECTION_LATENCY,
                     OSD_PROCESS_LATENCY, CACHE_HIT, NODE_CPU, NODE_DISK, CEILING, START_SKEW, SLOWEST_CLIENT)
SUMMARY_METRICS = (IOPS, BANDWIDTH, LAT_MEAN, LAT_P50, LAT_P95, LAT_P99, LAT_P999, CPU_USR, CPU_SYS, DISK_UTIL,
                   *TELEMETRY_METRICS, *FAILOVER_METRICS, *COST_METRICS)
COMPARE_METRICS = (IOPS, BANDWIDTH, LAT_MEAN, LAT_P95, LAT_P99)
# compared too where both sides' storage reported its own latency (where the time goes); descriptive: never gated
LAYER_METRICS = (STORAGE_LATENCY, OUTSIDE_LATENCY)
# compared where both sides have them, never gated: where the time goes, and what an I/O costs in CPU
DESCRIPTIVE_METRICS = (*LAYER_METRICS, *COST_COMPARED)
