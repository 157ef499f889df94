"""Bottleneck rules on synthetic figures with known answers, and the verdict through summaries."""

from __future__ import annotations

from dataclasses import replace

import pytest

from storbench.stats.bottleneck import (
    CLIENT_CORES_PER_JOB,
    CPU_PRESSURE_PCT,
    DEVICE_UTIL_PCT,
    HOST_CPU_BUSY_PCT,
    LINK_UTIL_PCT,
    Bottleneck,
    BottleneckInputs,
    configured_slots,
    judge,
)
from storbench.stats.point_summary import PointSummary
from storbench.stats.summary import summarize_points
from synthetic import observation

IDLE = BottleneckInputs(
    host_cpu_busy_pct=20.0, host_cpu_pressure_pct=5.0, process_cpu_cores=(("fio", 0.2), ("ceph-osd", 0.1)),
    client_cpu_cores=0.2,
    busiest_device="vda", device_util_pct=30.0, device_queue_depth=1.0, busiest_interface="", interface_util_pct=None,
    interface_bytes_per_s=None, storage_node="", node_cpu_busy_pct=None, node_disk_util_pct=None, iops=1000.0,
    in_flight=4.0, ceiling_iops=None, iodepth=16, jobs=1, ioengine="libaio",
)


def test_nothing_saturated_and_queue_not_full() -> None:
    verdict = judge(IDLE)
    assert verdict.kind == Bottleneck.NOT_SATURATED
    assert "4.0 of 16 I/O slots" in verdict.evidence


def test_under_driven_when_every_slot_is_busy_and_nothing_saturated() -> None:
    verdict = judge(replace(IDLE, in_flight=15.9))
    assert verdict.kind == Bottleneck.UNDER_DRIVEN
    assert "15.9 of 16" in verdict.evidence and "more iodepth" in verdict.evidence


@pytest.mark.parametrize(("changes", "kind", "says"), [
    ({"host_cpu_busy_pct": HOST_CPU_BUSY_PCT + 5, "process_cpu_cores": (("ceph-osd", 1.4), ("fio", 0.3))},
     Bottleneck.CPU, "host CPU 85 % busy, runnable tasks waited for a CPU 5 % of the time (ceph-osd 1.40, fio "
                     "0.30 cores)"),
    ({"host_cpu_busy_pct": 76.0, "host_cpu_pressure_pct": CPU_PRESSURE_PCT + 33},
     Bottleneck.CPU, "host CPU 76 % busy, runnable tasks waited for a CPU 63 % of the time"),
    ({"node_cpu_busy_pct": 97.0, "storage_node": "osd1:9100"}, Bottleneck.CPU, "node osd1:9100 CPU 97 %"),
    # a Kubernetes cluster on this host: the host's CPU binds, and the node whose pods use most of it is named
    ({"host_cpu_busy_pct": 90.0, "node_cpu_busy_pct": 41.0, "storage_node": "storbench-node-1"}, Bottleneck.CPU,
     "ceph-osd 0.10 cores); busiest node storbench-node-1 CPU 41 %"),
    ({"node_cpu_busy_pct": 41.0, "storage_node": "storbench-node-2"}, Bottleneck.NOT_SATURATED,
     "busiest node storbench-node-2 CPU 41 %"),
    ({"device_util_pct": DEVICE_UTIL_PCT + 8, "device_queue_depth": 12.0}, Bottleneck.MEDIA,
     "vda busy 98 % of the time, average queue 12.0"),
    ({"node_disk_util_pct": 95.0, "storage_node": "osd2:9100"}, Bottleneck.MEDIA, "node osd2:9100 busy 95 %"),
    ({"busiest_interface": "eth0", "interface_util_pct": LINK_UTIL_PCT + 4, "interface_bytes_per_s": 1.1e9},
     Bottleneck.NETWORK, "eth0 at 94 % of its link rate in its busier direction; 1.02GiB/s both ways"),
    ({"client_cpu_cores": 2 * 0.97, "jobs": 2}, Bottleneck.CLIENT, "fio uses 0.97 cores per job (2 jobs)"),
    ({"ceiling_iops": 1100.0}, Bottleneck.CLIENT, "IOPS are 91% of what one client drives on fio's null engine"),
    ({"ceiling_iops": 270.0, "clients": 4, "jobs": 4}, Bottleneck.CLIENT,
     "each of the 4 clients' IOPS are 93% of what one client drives"),
    ({"process_cpu_cores": (("ceph-osd", 1.26), ("fio", 0.2)), "osd_quota_cores": 0.5, "osds": 3}, Bottleneck.CPU,
     "each OSD uses 0.42 of its 0.5-core CPU quota (84 %)"),
])
def test_each_rule_fires_with_its_evidence(changes: dict[str, object], kind: Bottleneck, says: str) -> None:
    verdict = judge(replace(IDLE, **changes))  # type: ignore[arg-type]
    assert verdict.kind == kind
    assert says in verdict.evidence


@pytest.mark.parametrize(("changes", "kind"), [
    ({"host_cpu_busy_pct": HOST_CPU_BUSY_PCT - 0.1}, Bottleneck.NOT_SATURATED),
    ({"device_util_pct": DEVICE_UTIL_PCT - 0.1}, Bottleneck.NOT_SATURATED),
    ({"interface_util_pct": LINK_UTIL_PCT - 0.1, "busiest_interface": "eth0"}, Bottleneck.NOT_SATURATED),
    ({"client_cpu_cores": CLIENT_CORES_PER_JOB - 0.01}, Bottleneck.NOT_SATURATED),
    ({"host_cpu_pressure_pct": CPU_PRESSURE_PCT - 0.1}, Bottleneck.NOT_SATURATED),
    ({"ceiling_iops": 1251.0}, Bottleneck.NOT_SATURATED),  # 1000 / 1251 < 80 %
    # four clients at 250 IOPS each against one client's 1,100: each at 23 % (the summed 1,000 read as 91 %)
    ({"ceiling_iops": 1100.0, "clients": 4, "jobs": 4}, Bottleneck.NOT_SATURATED),
    ({"process_cpu_cores": (("ceph-osd", 1.19),), "osd_quota_cores": 0.5, "osds": 3}, Bottleneck.NOT_SATURATED),
])
def test_just_below_each_threshold_nothing_fires(changes: dict[str, object], kind: Bottleneck) -> None:
    assert judge(replace(IDLE, **changes)).kind == kind  # type: ignore[arg-type]


def test_the_resource_furthest_past_its_threshold_wins_and_the_others_are_listed() -> None:
    verdict = judge(replace(IDLE, host_cpu_busy_pct=88.0, device_util_pct=99.9))  # 1.035 vs 1.11
    assert verdict.kind == Bottleneck.MEDIA
    assert [f.kind for f in verdict.findings] == [Bottleneck.MEDIA, Bottleneck.CPU]
    assert "also host CPU 88 % busy" in verdict.evidence
    verdict = judge(replace(IDLE, host_cpu_busy_pct=99.0, device_util_pct=91.0))
    assert verdict.kind == Bottleneck.CPU


def test_a_busy_device_is_fios_limit_only_where_fio_saw_its_files_there_or_its_own_devices_busy() -> None:
    """A tmpfs or sdb target beside a busy vda (a backup, a log) had read media-bound on vda."""
    busy = replace(IDLE, device_util_pct=98.0)
    elsewhere = judge(replace(busy, fio_disks=("sdb",), fio_disk_util_pct=40.0))
    assert elsewhere.kind == Bottleneck.NOT_SATURATED and "vda 98 %" in elsewhere.evidence, elsewhere
    for fio_saw in ({"fio_disks": ("vda", "dm-0"), "fio_disk_util_pct": 40.0},  # its files are on vda
                    {"fio_disks": ("loop0",), "fio_disk_util_pct": 95.0},  # a loop device whose file is on vda
                    {}):  # fio saw no device of its own (rbd, NFS): the busy device may be the storage's
        assert judge(replace(busy, **fio_saw)).kind == Bottleneck.MEDIA, fio_saw  # type: ignore[arg-type]
    rows = [{**_BASE, "repeat": r, "direction": "read", "iops": 1000.0, "lat_mean_ns": 1e6,
             "disk_busiest_util_pct": 97.0} for r in range(3)]
    fio_saw = [replace(o, fio=replace(o.fio, disks=("sdb",), disk_util_pct=30.0)) for o in
               (observation(**r) for r in rows)]
    assert summarize_points(fio_saw)[0].bottleneck.kind != Bottleneck.MEDIA
    assert summarize_points([observation(**r) for r in rows])[0].bottleneck.kind == Bottleneck.MEDIA
    # a target on tmpfs: fio sees no device, and no device of this host is its (the rbd/NFS reading does not hold)
    tmpfs = [replace(observation(**r), filesystem="tmpfs") for r in rows]
    assert summarize_points(tmpfs)[0].bottleneck.kind != Bottleneck.MEDIA, summarize_points(tmpfs)[0].bottleneck
    assert judge(replace(busy, in_memory=True)).kind == Bottleneck.NOT_SATURATED


def test_osds_with_a_quota_and_a_cpuset_are_judged_against_both() -> None:
    """Each OSD at a third of its 1-core quota, all three sharing one pinned CPU at 97 %: the cpuset is their limit
    (it had been looked at only without a quota)."""
    both = judge(replace(IDLE, process_cpu_cores=(("ceph-osd", 0.97),), osds=3, osd_quota_cores=1.0,
                         osd_cpuset_cores=1.0))
    assert both.kind == Bottleneck.CPU and "pinned to" in both.evidence, both


def test_no_telemetry_is_unknown_not_a_guess() -> None:
    blank = replace(IDLE, host_cpu_busy_pct=None, host_cpu_pressure_pct=None, client_cpu_cores=None,
                    device_util_pct=None)
    assert judge(blank).kind == Bottleneck.UNKNOWN


def test_sync_engines_have_one_slot_per_job() -> None:
    assert configured_slots(32, 4, "psync") == 4
    assert configured_slots(32, 4, "io_uring") == 128
    assert judge(replace(IDLE, ioengine="psync", in_flight=0.95)).kind == Bottleneck.UNDER_DRIVEN


# ---------------------------------------------------------------------------------------------------------------
# Through the summary: per repetition, then the mean; directions of a mixed workload together

_BASE: dict[str, object] = dict(
    case_id="c", run_id=1, target="t", target_kind="path", rw="randrw", rwmixread=70, bs="4k", bs_bytes=4096,
    iodepth=8, numjobs=1, clients=1, ioengine="libaio", direct=True, runtime_s=5.0, ramp_s=1.0, size_bytes=1 << 30,
    fio_options="", lab="", repeat=0, direction="read", status="ok", started_at_s=0.0, finished_at_s=6.0,
    fio_version="fio-3.33", error="", process_cpu_cores=(("fio", 0.3),), disk_busiest="vda", net_busiest="",
    node_busiest="", host_cpu_busy_pct=40.0, client_cpu_cores=0.3, disk_busiest_util_pct=50.0,
)


def test_fio_on_other_machines_is_not_judged_from_this_machines_figures() -> None:
    """fio ran on real hosts elsewhere: this machine's host CPU (idle, or busy with something else) and its devices
    are none of theirs. Read as theirs, an idle orchestrator had made the point "under-driven ... nothing saturated
    (host CPU 4 %)" and a busy one cpu-bound; now it is unknown, saying why, unless fio's own figures show more."""
    rows = [{**_BASE, "repeat": r, "direction": "read", "iops": 1000.0, "lat_mean_ns": 8e6, "host_cpu_busy_pct": h,
             "disk_busiest_util_pct": 2.0} for r in range(3) for h in (4.0,)]
    here = summarize_points([observation(**r) for r in rows])[0].bottleneck
    assert here.kind == Bottleneck.UNDER_DRIVEN and "host CPU 4 %" in here.evidence
    elsewhere = [replace(o, fio=replace(o.fio, ran_here=False)) for o in (observation(**r) for r in rows)]
    remote = summarize_points(elsewhere)[0].bottleneck
    assert remote.kind == Bottleneck.UNKNOWN and "fio ran on other machines" in remote.evidence, remote
    busy = [replace(o, fio=replace(o.fio, ran_here=False)) for o in (observation(**{**r, "host_cpu_busy_pct": 97.0})
                                                                      for r in rows)]
    assert summarize_points(busy)[0].bottleneck.kind == Bottleneck.UNKNOWN  # this machine's CPU is not theirs


def test_summary_judges_each_case_from_its_repetitions() -> None:
    rows: list[dict[str, object]] = []
    for repeat, (read_iops, write_iops) in enumerate(((700.0, 300.0), (1400.0, 600.0))):
        # Little's law per repetition: 700 x 8 ms + 300 x 8 ms = 8 in flight; 1400 x 4 ms + 600 x 4 ms = 8
        latency = 8e6 if repeat == 0 else 4e6
        rows.append({**_BASE, "repeat": repeat, "direction": "read", "iops": read_iops, "lat_mean_ns": latency})
        rows.append({**_BASE, "repeat": repeat, "direction": "write", "iops": write_iops, "lat_mean_ns": latency})
    points = summarize_points([observation(**r) for r in rows])
    assert [p.direction for p in points] == ["read", "write"]
    verdict = points[0].bottleneck
    assert verdict.kind == Bottleneck.UNDER_DRIVEN and verdict == points[1].bottleneck
    assert verdict.in_flight == pytest.approx(8.0) and verdict.slots == 8
    # a saturated device in both repetitions turns it media-bound
    busy = [observation(**{**r, "disk_busiest_util_pct": 96.0}) for r in rows]
    assert summarize_points(busy)[0].bottleneck.kind == Bottleneck.MEDIA
    # imported results carry no telemetry: unknown
    blank = [observation(**{**r, "host_cpu_busy_pct": None, "client_cpu_cores": None, "disk_busiest_util_pct": None})
             for r in rows]
    assert summarize_points(blank)[0].bottleneck.kind == Bottleneck.UNKNOWN


def test_figures_keep_client_counts_apart_and_leave_out_lab_settings_shared_by_all() -> None:
    from storbench.report.saturation_figures import iops_vs_load_figures
    from storbench.report.utilisation_figures import process_cpu_figures, utilisation_figures

    records = [observation(**{**_BASE, "case_id": f"c{clients}-{bs}", "clients": clients, "bs": f"{bs}k",
                              "bs_bytes": bs * 1024, "rw": "randread", "rwmixread": None, "repeat": repeat,
                              "iops": 1000.0 * clients + repeat, "lat_mean_ns": 1e6, "lab": "lab=ceph osds=3",
                              "process_cpu_cores": (("ceph-osd", 0.1 * clients),)})
               for clients in (1, 2, 4) for bs in (4, 64) for repeat in (0, 1)]
    points = summarize_points(records)
    (by_clients,) = [f for f in iops_vs_load_figures(points) if f.figure_id == "iops-vs-clients"]
    assert sorted(s.name for s in by_clients.series) == ["t randread 4k qd8 read", "t randread 64k qd8 read"]
    assert all(s.x == (1.0, 2.0, 4.0) for s in by_clients.series)
    (cpu,) = process_cpu_figures(points)
    assert len(cpu.x_categories) == 6 and "t randread 4k qd8 2 clients" in cpu.x_categories
    assert not any("osds=3" in label for label in cpu.x_categories)  # the same for every point: no news
    (util,) = [f for f in utilisation_figures(points) if f.figure_id == "utilisation-vs-bs"]
    lines = {s.name.split(":")[0] for s in util.series}
    assert lines == {"t randread qd8", "t randread qd8 2 clients", "t randread qd8 4 clients"}


def test_report_summary_tells_apart_points_that_differ_in_clients_or_lab() -> None:
    from storbench.report.summary_table import summary_table as _summary_table

    records = [observation(**{**_BASE, "case_id": f"c{clients}-{size}", "clients": clients, "rw": "randread",
                              "rwmixread": None, "repeat": repeat, "iops": 1000.0 + repeat, "lat_mean_ns": 1e6,
                              "lab": f"lab=ceph pool_size={size}"})
               for clients in (1, 4) for size in (2, 3) for repeat in (0, 1)]
    html_text = _summary_table(summarize_points(records)).replace("<td class='wrap'>", "<td>")  # text cells wrap
    head = html_text.split("</thead>")[0]
    assert "<th>clients</th>" in head and "<th>lab</th>" in head
    rows = [row.split("<td>")[1:8] for row in html_text.split("<tr>")[2:]]
    assert len(rows) == 4 and len({tuple(r) for r in rows}) == 4  # no two rows read the same
    assert any("<td>pool_size=3</td>" in row for row in html_text.split("<tr>"))


def _sweep(axis: str, values: list[int], iops: list[list[float]], lat_ms: list[float],
           **extra: object) -> list[PointSummary]:
    """Points of one sweep over ``axis`` (iodepth or bs_bytes): per value its repetitions' IOPS and mean
    latency, telemetry idle (host CPU 10 %, the disk 20 % busy), unless ``extra`` says otherwise."""
    rows = []
    for value, per_rep, lat in zip(values, iops, lat_ms, strict=True):
        for rep, rate in enumerate(per_rep):
            fields: dict[str, object] = {**_BASE, "case_id": f"{axis}{value}", axis: value, "repeat": rep,
                                         "direction": "read", "rw": "randread", "iops": rate,
                                         "lat_mean_ns": lat * 1e6, "host_cpu_busy_pct": 10.0,
                                         "disk_busiest_util_pct": 20.0}
            if axis == "bs_bytes":
                fields["bw_bytes_per_s"] = rate * value
            fields.update(extra)
            rows.append(fields)
    return summarize_points([observation(**r) for r in rows])


def test_a_throttled_device_is_capped_beyond_this_host_at_every_depth() -> None:
    """The issue's numbers: 3,000 read IOPS whatever the depth, latency growing with it, nothing busy here."""
    points = _sweep("iodepth", [1, 16, 64], [[2999, 2998, 3000], [2999, 3001, 2997], [3013, 3010, 3016]],
                    [0.33, 5.5, 22.0])
    assert [p.bottleneck.kind for p in points] == [Bottleneck.CAPPED] * 3
    evidence = points[0].bottleneck.evidence
    assert "IOPS flat at 2,999 from iodepth 1 to iodepth 64 (+0.5 %" in evidence
    assert "mean latency grew 66.7x" in evidence and "outside this host" in evidence
    assert "more iodepth" not in evidence


def test_a_fall_between_points_of_one_repetition_is_no_cap() -> None:
    """One repetition a point, 1,000 then 820 and 830 IOPS as latency grows 1 -> 4 -> 16 ms: the fall is read from
    means alone, no evidence that the curve stopped ("capped beyond this host ... shown lower from iodepth 4")."""
    single = _sweep("iodepth", [1, 4, 16], [[1000], [820], [830]], [1.0, 4.0, 16.0])
    assert Bottleneck.CAPPED not in [p.bottleneck.kind for p in single]
    repeated = _sweep("iodepth", [1, 4, 16], [[1000, 1005, 995], [820, 822, 818], [830, 832, 828]],
                      [1.0, 4.0, 16.0])  # the same fall shown: capped, and said as a fall
    assert [p.bottleneck.kind for p in repeated] == [Bottleneck.CAPPED] * 3
    assert "shown lower from iodepth 4" in repeated[0].bottleneck.evidence


def test_rising_then_flat_is_capped_only_where_it_is_flat() -> None:
    points = _sweep("iodepth", [1, 4, 16, 64], [[1000, 1010], [3900, 3950], [4000, 4020], [4010, 4000]],
                    [1.0, 1.0, 4.0, 16.0])
    kinds = [p.bottleneck.kind for p in points]
    assert kinds[0] != Bottleneck.CAPPED and kinds[1:] == [Bottleneck.CAPPED] * 3


def test_a_curve_that_falls_is_said_to_fall_not_to_be_flat() -> None:
    """5,000, 5,000 and 2,550 IOPS at iodepth 4, 16 and 64 had been "IOPS flat at 5,017 ... (-49.2 %)": a curve
    shown to fall is said so, from where."""
    points = _sweep("iodepth", [4, 16, 64], [[4990, 5010, 5000], [5005, 4995, 5002], [2540, 2560, 2550]],
                    [0.8, 3.2, 25.0])
    evidence = points[0].bottleneck.evidence
    assert "flat at" not in evidence and "IOPS stop rising at 5,000 at iodepth 4 and fall by iodepth 64" in evidence
    assert "shown lower from iodepth 64" in evidence, evidence


def test_a_curve_that_keeps_rising_or_a_saturated_resource_is_not_capped() -> None:
    rising = _sweep("iodepth", [1, 4, 16], [[1000, 1010], [3000, 3050], [9000, 9100]], [1.0, 1.3, 1.8])
    assert Bottleneck.CAPPED not in [p.bottleneck.kind for p in rising]
    local = _sweep("iodepth", [1, 16, 64], [[2999, 3000], [2999, 3001], [3013, 3010]], [0.33, 5.5, 22.0],
                   disk_busiest_util_pct=99.0)  # the local disk is the limit: media-bound, not beyond the host
    assert [p.bottleneck.kind for p in local] == [Bottleneck.MEDIA] * 3
    no_latency_growth = _sweep("iodepth", [1, 16, 64], [[2999, 3000], [2999, 3001], [3013, 3010]], [1.0, 1.1, 1.2])
    assert Bottleneck.CAPPED not in [p.bottleneck.kind for p in no_latency_growth]


def test_noise_neither_creates_a_gain_nor_hides_a_flat_curve() -> None:
    # 3,000 +- ~10 % (CV 10 %, 3 repetitions): nothing shows a gain, and nothing shows the curve flat within
    # +-10 % either (the changes' 90 % intervals reach about +-17 %), so "capped" is not claimed: the knee's rule
    noisy = _sweep("iodepth", [1, 16, 64], [[2700, 3300, 3000], [2800, 3200, 3100], [3300, 3000, 3330]],
                   [0.33, 5.3, 21.0])
    assert all(p.bottleneck.kind is not Bottleneck.CAPPED for p in noisy)
    # the same curve at CV 2 % is shown flat: capped throughout
    steady = _sweep("iodepth", [1, 16, 64], [[2940, 3060, 3000], [2950, 3050, 3010], [3080, 3000, 3040]],
                    [0.33, 5.3, 21.0])
    assert [p.bottleneck.kind for p in steady] == [Bottleneck.CAPPED] * 3
    # a real gain (3,000 -> 6,000) with the same noise is a gain
    gaining = _sweep("iodepth", [1, 16, 64], [[2700, 3300, 3000], [5800, 6200, 6000], [6100, 5900, 6050]],
                     [0.33, 2.6, 10.5])
    kinds = [p.bottleneck.kind for p in gaining]
    assert kinds[0] != Bottleneck.CAPPED and kinds[1:] == [Bottleneck.CAPPED] * 2


def test_bandwidth_capped_across_block_sizes() -> None:
    kib = 1024
    sizes = [64 * kib, 256 * kib, 1024 * kib, 4096 * kib]
    mib_per_s = 125 * 1024 * 1024  # 125 MiB/s whatever the block size
    points = _sweep("bs_bytes", sizes, [[mib_per_s / s] * 2 for s in sizes], [0.5, 2.0, 8.0, 32.0], iodepth=1)
    assert [p.bottleneck.kind for p in points] == [Bottleneck.CAPPED] * 4
    assert "MiB/s flat at 125MiB/s from bs 64k to bs 4m" in points[0].bottleneck.evidence


def test_a_capped_curve_at_its_declared_limit_says_so() -> None:
    from storbench.model import Expectation

    rows = []
    for depth, rate, lat in ((1, 2999.0, 0.33), (16, 2999.0, 5.5), (64, 3013.0, 22.0)):
        for rep in range(2):
            rows.append(observation(**{**_BASE, "case_id": f"d{depth}", "iodepth": depth, "repeat": rep,
                                       "direction": "read", "rw": "randread", "iops": rate, "lat_mean_ns": lat * 1e6,
                                       "host_cpu_busy_pct": 10.0, "disk_busiest_util_pct": 20.0}))
    declared = {(1, "t"): Expectation(iops=3000)}
    points = summarize_points(rows, expectations=declared)
    assert all("at its declared 3,000 IOPS (100 % of expected)" in p.bottleneck.evidence for p in points)
    share = points[0].share_of_expected()
    assert share is not None and share[1] == "IOPS" and abs(share[0] - 0.9997) < 1e-3
    # 2,900 to 3,000 a point: the mean is 98 % of the limit, but the interval reaches 6 % below it: near, not at
    spread = [observation(**{**_BASE, "case_id": f"d{depth}", "iodepth": depth, "repeat": rep, "direction": "read",
                             "rw": "randread", "iops": rate, "lat_mean_ns": lat * 1e6 * (1 + rep / 100),
                             "host_cpu_busy_pct": 10.0, "disk_busiest_util_pct": 20.0})
              for depth, lat in ((1, 0.33), (16, 5.5), (64, 22.0)) for rep, rate in enumerate((2900.0, 2950.0, 3000.0))]
    near = summarize_points(spread, expectations=declared)
    assert all("near its declared 3,000 IOPS (its mean 98 % of it, not shown within 5%)" in p.bottleneck.evidence
               for p in near), [p.bottleneck.evidence for p in near]
    far = summarize_points(rows, expectations={(1, "t"): Expectation(iops=6000)})
    assert all("declared" not in p.bottleneck.evidence for p in far)  # capped, but not at what was sold
    assert summarize_points(rows)[0].share_of_expected() is None


def test_a_busy_device_at_its_declared_limit_is_the_cap_not_the_media() -> None:
    """A provisioned volume at its cap is busy all the time from inside (the cap queues the I/Os on it: the volume
    lab's loop device 93-98 %, a cloud VM's disk alike). With the limit declared and the flat curve at it, the cap
    explains the busy device; without a declaration, or away from it, a busy device stays media-bound."""
    from storbench.model import Expectation

    rows = []
    for depth, rate, lat in ((1, 2987.0, 0.333), (6, 2991.0, 2.0), (32, 2993.0, 10.7)):
        for rep in range(2):
            rows.append(observation(**{**_BASE, "case_id": f"d{depth}", "iodepth": depth, "repeat": rep,
                                       "direction": "read", "rw": "randread", "iops": rate, "lat_mean_ns": lat * 1e6,
                                       "host_cpu_busy_pct": 20.0, "disk_busiest_util_pct": 96.0,
                                       "disk_busiest": "loop0"}))
    capped = summarize_points(rows, expectations={(1, "t"): Expectation(iops=3000)})
    assert [p.bottleneck.kind for p in capped] == [Bottleneck.CAPPED] * 3
    assert all("at its declared 3,000 IOPS" in p.bottleneck.evidence and
               "saturated but the device itself (loop0 busy 96 % of the time)" in p.bottleneck.evidence and
               "as a device held at a provisioned cap is" in p.bottleneck.evidence
               for p in capped), [p.bottleneck.evidence for p in capped]
    assert len({p.bottleneck.evidence for p in capped}) == 1  # one curve, one evidence: the report draws it
    assert [p.bottleneck.kind for p in summarize_points(rows)] == [Bottleneck.MEDIA] * 3
    elsewhere = summarize_points(rows, expectations={(1, "t"): Expectation(iops=6000)})
    assert [p.bottleneck.kind for p in elsewhere] == [Bottleneck.MEDIA] * 3


def test_a_capped_curve_names_what_the_storage_itself_reports() -> None:
    """Ceph counters from the (remote) cluster along the curve: the OSD op latency growing with the load says
    where the I/O waits; storage nodes' CPU and disks (Prometheus) below their thresholds are shown too."""
    points = _sweep("iodepth", [1, 16, 64], [[2999, 3000], [2999, 3001], [3013, 3010]], [0.33, 5.5, 22.0],
                    osd_lat_ns=None)
    assert "OSDs' op latency" not in points[0].bottleneck.evidence
    rows = []
    for depth, lat, osd_ms, node_cpu in ((1, 0.33, 0.2, 20.0), (16, 5.5, 5.0, 30.0), (64, 22.0, 20.0, 35.0)):
        for rep in range(2):
            rows.append(observation(**{**_BASE, "case_id": f"d{depth}", "iodepth": depth, "repeat": rep,
                                       "direction": "read", "rw": "randread", "iops": 3000.0, "lat_mean_ns": lat * 1e6,
                                       "host_cpu_busy_pct": 10.0, "disk_busiest_util_pct": 20.0,
                                       "osd_lat_ns": osd_ms * 1e6, "node_cpu_busy_pct": node_cpu,
                                       "node_busiest": "osd1:9100"}))
    evidence = summarize_points(rows)[0].bottleneck.evidence
    assert "capped" in summarize_points(rows)[0].bottleneck.kind
    assert "the OSDs' op latency went 0.20 ms to 20.00 ms (100.0x)" in evidence
    assert "node CPU 20 % to 35 % busy" in evidence


def test_a_curve_fio_itself_holds_back_is_not_capped_beyond_the_host() -> None:
    """rate_iops=300: flat IOPS by the plan's own choice; even if latency grows, the limit is not the storage's."""
    points = _sweep("iodepth", [1, 16, 64], [[300, 300], [300, 301], [299, 300]], [0.33, 5.5, 22.0],
                    fio_options="rate_iops=300")
    assert Bottleneck.CAPPED not in [p.bottleneck.kind for p in points]


def test_a_flat_curve_whose_storage_answers_fast_is_limited_in_the_client_stack() -> None:
    """Issue 29: CephFS through ceph-fuse, 4k random reads over iodepth 4, 16, 64: IOPS flat at ~2,470 while mean
    latency grew 16x, and the OSDs answered in 0.17 ms of a 6.5 ms mean: the time goes in the client stack (ceph-fuse,
    busy on this host), not in the cluster; with the OSDs taking most of the latency the same curve is capped beyond
    this host; OSDs that saw too few of the reads (a page cache in front) say nothing either way."""
    flat = [[2440, 2450, 2460], [2500, 2480, 2490], [2470, 2510, 2490]]
    fuse = (("ceph-fuse", 0.33),)
    stack = _sweep("iodepth", [4, 16, 64], flat, [1.6, 6.4, 26.0], osd_lat_ns=0.17e6, process_cpu_cores=fuse)
    assert [p.bottleneck.kind for p in stack] == [Bottleneck.CLIENT_STACK] * 3
    assert stack[-1].storage_layer == "OSDs"
    evidence = stack[-1].bottleneck.evidence
    assert ("limited in the client stack: ceph-fuse on this host, 99% of the latency outside the OSDs (they answered "
            "in 0.17 ms of a 26.00 ms mean at iodepth 64)") in evidence, evidence
    unnamed = _sweep("iodepth", [4, 16, 64], flat, [1.6, 6.4, 26.0], osd_lat_ns=0.17e6)
    assert "client stack: the client stack of this host" in unnamed[-1].bottleneck.evidence
    rows = [observation(**{**_BASE, "case_id": f"d{depth}", "iodepth": depth, "repeat": rep, "direction": "read",
                           "rw": "randread", "iops": rate, "lat_mean_ns": lat * 1e6, "host_cpu_busy_pct": 10.0,
                           "disk_busiest_util_pct": 20.0, "osd_lat_ns": osd * 1e6, "process_cpu_cores": fuse})
            for depth, per_rep, lat, osd in zip([4, 16, 64], flat, [1.6, 6.4, 26.0], [1.5, 6.0, 24.0], strict=True)
            for rep, rate in enumerate(per_rep)]
    cluster = summarize_points(rows)  # the OSDs take most of the latency at every depth
    assert [p.bottleneck.kind for p in cluster] == [Bottleneck.CAPPED] * 3
    assert "the OSDs' op latency went 1.50 ms to 24.00 ms (16.0x), 92% of the client's mean" \
        in cluster[-1].bottleneck.evidence
    cached = _sweep("iodepth", [4, 16, 64], flat, [1.6, 6.4, 26.0], process_cpu_cores=fuse,
                    ceph_counters=(("op_r", 100.0, 0.17e6),))  # 100 of ~2,470 reads/s reached the OSDs
    assert [p.bottleneck.kind for p in cached] == [Bottleneck.CAPPED] * 3
    assert cached[-1].metric("storage_lat_ns") is None and cached[-1].storage_layer == ""


def test_a_client_stack_verdict_needs_the_storage_latency_shown_not_one_repetitions_mean() -> None:
    """The same flat curve, the OSDs' latency known from one repetition at the highest load only (7.5 ms of a 26 ms
    mean, no interval): means alone had made "client stack ... 71% outside the OSDs"; now capped as the curve is."""
    flat = [[2440, 2450, 2460], [2500, 2480, 2490], [2470, 2510, 2490]]
    rows = [observation(**{**_BASE, "case_id": f"d{depth}", "iodepth": depth, "repeat": rep, "direction": "read",
                           "rw": "randread", "iops": rate, "lat_mean_ns": lat * 1e6, "host_cpu_busy_pct": 10.0,
                           "disk_busiest_util_pct": 20.0,
                           "osd_lat_ns": 7.5e6 if depth == 64 and rep == 0 else None})
            for depth, per_rep, lat in zip([4, 16, 64], flat, [1.6, 6.4, 26.0], strict=True)
            for rep, rate in enumerate(per_rep)]
    points = summarize_points(rows)
    assert Bottleneck.CLIENT_STACK not in [p.bottleneck.kind for p in points]
    assert [p.bottleneck.kind for p in points] == [Bottleneck.CAPPED] * 3


def test_the_storage_layer_is_the_outermost_that_served_the_io() -> None:
    """radosgw in front of the OSDs answers an S3 GET; an MDS answers metadata operations; writes read the OSDs'
    write counter; the share outside the storage is the client's mean beyond it."""
    from storbench.stats.metric_values import metric_value, observed_storage

    s3 = observation(direction="read", iops=500.0, lat_mean_ns=4e6,
                     ceph_counters=(("rgw_get", 500.0, 3e6), ("op_r", 1500.0, 0.5e6)))
    found = observed_storage(s3)
    assert found is not None and (found.layer, found.lat_ns) == ("radosgw", 3e6)
    assert metric_value(s3, "outside_storage_pct") == pytest.approx(25.0)
    assert metric_value(s3, "osd_lat_ns") == 0.5e6
    write = observation(direction="write", iops=800.0, lat_mean_ns=2e6,
                        ceph_counters=(("op_r", 800.0, 0.1e6), ("op_w", 800.0, 1.5e6), ("op_w_process", 800.0, 1e6)))
    assert metric_value(write, "storage_lat_ns") == 1.5e6 and metric_value(write, "osd_process_lat_ns") == 1e6
    assert metric_value(write, "outside_storage_lat_ns") == pytest.approx(0.5e6)
    meta = observation(direction="write", iops=300.0, lat_mean_ns=2e6,
                       ceph_counters=(("mds_reply", 290.0, 1.2e6), ("op_w", 40.0, 0.8e6)))
    found = observed_storage(meta)
    assert found is not None and found.layer == "MDS"


def test_every_verdict_says_where_the_points_time_went_by_layer() -> None:
    """A single point (no sweep): its own verdict, and beside it the split of its mean latency by layer; without
    the storage's counters nothing is added."""
    rows = [observation(**{**_BASE, "repeat": rep, "direction": "read", "iops": 2000.0, "lat_mean_ns": 2e6,
                           "host_cpu_busy_pct": 10.0, "disk_busiest_util_pct": 20.0, "osd_lat_ns": 0.5e6})
            for rep in range(3)]
    (point,) = summarize_points(rows)
    assert point.bottleneck.evidence.endswith(
        "; by layer: the OSDs answered in 0.50 ms of the 2.00 ms mean (25%), 75% outside the OSDs (client stack, "
        "network)"), point.bottleneck.evidence
    (bare,) = summarize_points([replace(o, telemetry=replace(o.telemetry, ceph_counters=())) for o in rows])
    assert "by layer" not in bare.bottleneck.evidence


def test_an_under_driven_point_on_a_sweep_says_what_the_sweep_shows() -> None:
    """Issue 29: a point of a sweep does not say "one point cannot show it": its change to the higher loads (rising,
    flat, undecided) is read from the sweep, and the highest load of a curve still rising says a deeper sweep would
    tell (tests/test_curve_sections.py: against every higher load, as the knee judges)."""
    rising = _sweep("iodepth", [1, 16], [[1000, 1010, 990], [7900, 8000, 8100]], [1.0, 2.0])
    assert "more load raises IOPS: iodepth 16 gave +700 % [" in rising[0].bottleneck.evidence, rising[0]
    assert "it still rose into iodepth 16 (+700 % [" in rising[1].bottleneck.evidence, rising[1]
    assert all("one point cannot show it" not in p.bottleneck.evidence for p in rising)
    flat = _sweep("iodepth", [1, 2], [[1000, 1010, 990], [1005, 995, 1000]], [1.0, 1.2])  # latency barely grows
    assert "yet iodepth 2 gave the same IOPS within +-10% (+0 % [" in flat[0].bottleneck.evidence, flat[0]
    noisy = _sweep("iodepth", [1, 2], [[1000, 1500, 700], [1300, 800, 1600]], [1.0, 1.2])
    assert "which cannot tell yet" in noisy[0].bottleneck.evidence, noisy[0]
    (single,) = _sweep("iodepth", [1], [[1000, 1010, 990]], [1.0])
    assert "one point cannot show it" in single.bottleneck.evidence


def test_a_storage_holding_more_in_flight_than_the_client_was_not_in_its_path() -> None:
    """librbd's writeback cache (Ceph lab, rbd-cephfs-nfs example): the client saw 1.9 ms at 4,886 writes/s (9 in
    flight) while the OSDs took 80 ms for each of 5,500 writes/s (440 in flight): acknowledged by the cache, written
    back later; the OSDs' latency is not part of the client's, and no storage latency is given."""
    from storbench.stats.metric_values import observed_storage

    cached = observation(direction="write", iops=4886.0, lat_mean_ns=1.89e6, ceph_counters=(("op_w", 5519.0, 78.7e6),))
    assert observed_storage(cached) is None
    synchronous = observation(direction="write", iops=4886.0, lat_mean_ns=1.89e6,
                              ceph_counters=(("op_w", 5100.0, 1.6e6),))
    found = observed_storage(synchronous)
    assert found is not None and found.lat_ns == 1.6e6
    # 16 MiB writes on RBD's 4 MiB objects: each is 4 OSD ops at once, more in flight than the client's, no cache
    from storbench.stats.metric_values import unseparated_storage

    spanning = observation(direction="write", iops=50.0, lat_mean_ns=100e6, ceph_counters=(("op_w", 200.0, 60e6),))
    assert observed_storage(spanning) is None
    said = unseparated_storage(spanning)
    assert said.startswith("the OSDs did 4.0 writes for each of the client's") and "cache" not in said, said


def test_a_verdict_says_why_its_time_is_not_split_by_layer() -> None:
    """The rbd-cephfs-nfs example: RBD writes behind librbd's writeback cache, CephFS reads that mostly never
    reached the OSDs: each verdict says why the storage's counters do not split its latency; with no counters at all
    (a local disk, NFS) nothing is said."""
    def point(**fields: object) -> PointSummary:
        (found,) = summarize_points([observation(**{**_BASE, "repeat": rep, "iops": 4886.0, "lat_mean_ns": 1.89e6,
                                                     "host_cpu_busy_pct": 10.0, **fields}) for rep in range(3)])
        return found

    written_back = point(direction="write", ceph_counters=(("op_w", 5519.0, 78.7e6),))
    assert "by layer: not split (the OSDs held 434 writes in flight against the client's 9: a writeback cache" \
        in written_back.bottleneck.evidence, written_back.bottleneck.evidence
    cached = point(direction="read", ceph_counters=(("op_r", 1368.0, 0.16e6),))
    assert "by layer: not split (the OSDs saw 28% of the client's reads: a cache in front answered the rest" \
        in cached.bottleneck.evidence, cached.bottleneck.evidence
    assert "by layer" not in point(direction="read").bottleneck.evidence


def test_points_on_the_throttled_volume_lab_say_their_percentiles_are_not_a_provisioned_volumes() -> None:
    """Issue 30: the kernel's block throttle passes I/Os in bursts and holds them up to a 100 ms slice (measured on
    this lab at 3,000 IOPS, iodepth 1: mean 333 µs as the cap says, p50 4 µs, p99.9 98 ms): every point of the lab
    says its percentiles are not a provisioned volume's; an uncapped volume lab, or no lab, says nothing."""
    def warned(lab: str) -> bool:
        (point,) = summarize_points([observation(**{**_BASE, "repeat": rep, "lab": lab}) for rep in range(3)])
        return any(w.code == "throttle_latency" for w in point.warnings)

    assert warned("lab=volume volume_size=268435456 volume_iops=3000")
    assert warned("lab=volume volume_size=268435456 volume_bw=10485760")
    assert not warned("lab=volume volume_size=268435456")
    assert not warned("")


def test_a_file_operation_point_with_its_slot_full_names_the_resources_once_and_why_more_jobs_add_load() -> None:
    """One create at a time per job, its one slot busy (under-driven by the block-I/O rule): the verdict names what
    was busiest, taken from the verdict itself (`BottleneckVerdict.busiest`), not carved out of its evidence, which
    once carried the block-I/O sentence along with it."""
    from storbench.stats.bottleneck import UNDER_DRIVEN_UNTOLD

    (point,) = summarize_points([observation(rw="create", ioengine="filecreate", direction="write", repeat=rep,
                                             iops=1000.0, lat_mean_ns=1e6, host_cpu_busy_pct=12.0) for rep in range(3)])
    assert point.bottleneck.kind == Bottleneck.NOT_SATURATED
    assert point.bottleneck.evidence.startswith("nothing saturated (host CPU 12 %): each job runs one file operation "
                                                "at a time"), point.bottleneck.evidence
    assert UNDER_DRIVEN_UNTOLD not in point.bottleneck.evidence


def test_a_curve_flat_along_iodepth_is_not_capped_when_more_jobs_raise_iops() -> None:
    """One job tops out at 3,000 IOPS at any depth; four jobs give 12,000. Along iodepth at numjobs 1 the curve is
    flat while latency grows, which alone reads "capped beyond this host": the jobs sweep of the same run shows the
    limit is per job, and the verdict says so (and more jobs, not more depth, raise IOPS)."""
    rows = [observation(case_id=f"j{jobs}d{depth}", numjobs=jobs, iodepth=depth, repeat=rep,
                        iops=3000.0 * jobs * (1 + 0.002 * rep), lat_mean_ns=depth / 3000.0 * 1e9,
                        host_cpu_busy_pct=30.0, client_cpu_cores=0.3 * jobs, disk_busiest_util_pct=40.0)
            for jobs in (1, 4) for depth in (1, 4, 16) for rep in range(3)]
    verdicts = {p.case_id: p.bottleneck for p in summarize_points(rows)}
    assert verdicts["j1d16"].kind == Bottleneck.UNDER_DRIVEN, verdicts["j1d16"]
    assert "yet iodepth 1, numjobs 4 gave +300 % [" in verdicts["j1d16"].evidence
    assert "a limit per job or per client, not beyond this host" in verdicts["j1d16"].evidence
    assert verdicts["j4d16"].kind == Bottleneck.CAPPED  # nothing measured above it says otherwise


def test_a_declared_limit_explains_a_busy_device_not_a_saturated_cpu_beside_it() -> None:
    """At its declared 3,000 IOPS a device busy all the time is explained by the cap ("capped"); a host CPU 86 %
    busy with tasks waiting 31 % of the time is not, and stays in the verdict (it had gone with the device's)."""
    from storbench.model import Expectation

    def curve(cpu: float, pressure: float) -> list[PointSummary]:
        rows = [observation(case_id=f"d{depth}", target="t", iodepth=depth, repeat=rep, iops=rate + rep,
                            lat_mean_ns=lat * 1e6, host_cpu_busy_pct=cpu, host_cpu_pressure_pct=pressure,
                            disk_busiest_util_pct=98.0, client_cpu_cores=0.3)
                for depth, rate, lat in ((1, 2987.0, 0.333), (6, 2991.0, 2.0), (32, 2993.0, 10.7)) for rep in range(3)]
        return summarize_points(rows, expectations={(1, "t"): Expectation(iops=3000)})

    busy = curve(86.0, 31.0)
    assert all(p.bottleneck.kind == Bottleneck.MEDIA and "host CPU 86 % busy" in p.bottleneck.evidence
               for p in busy), [p.bottleneck for p in busy]
    calm = curve(30.0, 1.0)
    assert all(p.bottleneck.kind == Bottleneck.CAPPED and "but the device itself" in p.bottleneck.evidence
               for p in calm), [p.bottleneck for p in calm]


def test_a_sync_engine_on_an_iodepth_sweep_is_told_more_jobs_not_that_the_limit_is_elsewhere() -> None:
    """psync at iodepth 1, 4 and 16 keeps one I/O in flight each time: along iodepth the load never changed, so
    the sweep says nothing of "the limit is elsewhere"; the point says more jobs may raise IOPS."""
    rows = [observation(case_id=f"d{depth}", iodepth=depth, ioengine="psync", repeat=rep, iops=5000.0 + rep,
                        lat_mean_ns=0.2e6, host_cpu_busy_pct=15.0, disk_busiest_util_pct=40.0, client_cpu_cores=0.2)
            for depth in (1, 4, 16) for rep in range(3)]
    for point in summarize_points(rows):
        assert point.bottleneck.kind == Bottleneck.UNDER_DRIVEN, point.bottleneck
        assert "more jobs may raise IOPS (a sync engine keeps one I/O per job" in point.bottleneck.evidence
        assert "the limit is elsewhere" not in point.bottleneck.evidence and "more iodepth" not in \
            point.bottleneck.evidence


def test_a_busy_disk_of_the_storage_nodes_is_named_with_its_own_node() -> None:
    """osd1's CPU is the busiest (60 %), osd2's sdb is 97 % busy: the disk is osd2's, not the busiest-CPU node's."""
    from storbench.stats.bottleneck import judge
    from storbench.stats.summary import bottleneck_inputs
    from storbench.telemetry.digest import RemoteDigest

    o = observation(iops=1000.0, lat_mean_ns=1e6, host_cpu_busy_pct=20.0, node_cpu_busy_pct=30.0)
    assert o.telemetry is not None
    remote = (RemoteDigest("osd1:9100", "cpu_busy_pct", 60.0, 70.0),
              RemoteDigest("osd2:9100", "cpu_busy_pct", 20.0, 25.0),
              RemoteDigest("osd2:9100 device=sdb", "disk_util_pct", 97.0, 99.0),
              RemoteDigest("osd1:9100 device=sda", "disk_util_pct", 10.0, 12.0))
    verdict = judge(bottleneck_inputs([replace(o, telemetry=replace(o.telemetry, remote=remote))]))
    assert verdict.kind == Bottleneck.MEDIA and verdict.evidence.startswith("sdb of node osd2:9100 busy 97 %")
    assert [f.resource for f in verdict.findings] == ["sdb of node osd2:9100"]


def test_client_stack_needs_the_storage_latency_shown_below_half_the_clients() -> None:
    """A flat curve whose OSDs answered in 4.2, 16.8 and 9.9 ms of a 21 ms client mean at its top: half by the mean,
    but the interval of the OSDs' latency reaches 26 ms, so "client stack" is not shown (it stays capped); with
    the OSDs steady at 4.2 ms it is."""
    def top(osd: tuple[float, float, float]) -> PointSummary:
        rows = [observation(case_id=f"d{depth}", iodepth=depth, repeat=r, iops=3000.0 + r, lat_mean_ns=lat * 1e6,
                            host_cpu_busy_pct=15.0, client_cpu_cores=0.2, disk_busiest_util_pct=20.0,
                            osd_lat_ns=(osd if depth == 64 else (lat / 2, lat / 2, lat / 2))[r] * 1e6)
                for depth, lat in ((1, 0.33), (16, 5.3), (64, 21.0)) for r in range(3)]
        return summarize_points(rows)[-1]

    assert top((4.2, 16.8, 9.87)).bottleneck.kind == Bottleneck.CAPPED
    assert top((4.2, 4.3, 4.1)).bottleneck.kind == Bottleneck.CLIENT_STACK


def test_a_capped_curve_is_not_refuted_by_its_own_points_or_by_fewer_jobs() -> None:
    """One job, iodepth 1/4/16/64 giving 1,000/3,000/3,000/2,700 IOPS: a capped curve that sags at its top. Its own
    iodepth 4 point has more IOPS than iodepth 64, but it is not more jobs or clients: the cap stands."""
    rows = [observation(case_id=f"d{depth}", iodepth=depth, repeat=rep, iops=iops * (1 + 0.002 * rep),
                        lat_mean_ns=depth / iops * 1e9, host_cpu_busy_pct=30.0, client_cpu_cores=0.3,
                        disk_busiest_util_pct=40.0)
            for depth, iops in ((1, 1000.0), (4, 3000.0), (16, 3000.0), (64, 2700.0)) for rep in range(3)]
    verdicts = {p.case_id: p.bottleneck for p in summarize_points(rows)}
    assert verdicts["d64"].kind == Bottleneck.CAPPED, verdicts["d64"]
    assert "per job" not in verdicts["d64"].evidence


def test_a_mix_whose_directions_read_differently_says_each() -> None:
    """A 70/30 mix whose reads the OSDs answered fast (client stack) and whose writes they did not (capped): the
    bottleneck lines give each direction its own verdict, not the reads' for both."""
    from storbench.report.tables import verdict_lines

    rows = [observation(case_id=f"d{depth}", rw="randrw", rwmixread=70, iodepth=depth, repeat=r, direction=d,
                        iops=iops + r, lat_mean_ns=lat * 1e6, host_cpu_busy_pct=15.0, client_cpu_cores=0.2,
                        disk_busiest_util_pct=20.0, osd_lat_ns=share * lat * 1e6)
            for depth, lat in ((1, 0.33), (16, 5.3), (64, 21.0)) for r in range(3)
            for d, iops, share in (("read", 2100.0, 0.1), ("write", 900.0, 0.9))]
    lines = [line for line in verdict_lines(summarize_points(rows)) if "qd64" in line]
    assert len(lines) == 2, lines
    assert " read: client stack" in lines[0] and " write: capped beyond this host" in lines[1], lines
    one = [observation(case_id="d1", rw="randrw", rwmixread=70, iodepth=1, repeat=r, direction=d, iops=iops + r,
                       lat_mean_ns=0.33e6, host_cpu_busy_pct=15.0, client_cpu_cores=0.2, disk_busiest_util_pct=20.0)
           for r in range(3) for d, iops in (("read", 2100.0), ("write", 900.0))]
    alone = verdict_lines(summarize_points(one))  # no sweep, the same reading for both: one line
    assert len(alone) == 1 and " read:" not in alone[0], alone


def test_process_cores_are_a_mean_over_the_repetitions_that_sampled_them() -> None:
    """Runs pooled where one had telemetry off: its repetitions knew nothing of the processes, yet counted in the
    mean, halving fio's cores (and the OSD-quota rule's); a sampled repetition without a process counts it as 0."""
    from storbench.stats.summary import bottleneck_inputs

    sampled = [observation(case_id="c", run_id=1, repeat=i, iops=1000.0, process_cpu_cores=(("fio", 0.5),),
                           host_cpu_busy_pct=20.0) for i in range(2)]
    blind = [observation(case_id="c", run_id=2, repeat=i, iops=1000.0) for i in range(2)]
    inputs = bottleneck_inputs([*sampled, *blind])
    assert inputs is not None and dict(inputs.process_cpu_cores) == {"fio": 0.5}
    idle = observation(case_id="c", run_id=3, repeat=0, iops=1000.0, host_cpu_busy_pct=20.0)  # sampled, no fio seen
    inputs = bottleneck_inputs([*sampled, idle])
    assert inputs is not None and dict(inputs.process_cpu_cores)["fio"] == pytest.approx(1.0 / 3)


def test_more_jobs_refute_a_cap_by_the_rule_the_jobs_curve_reads_itself_with() -> None:
    """One curve, one answer: at iodepth 16 two jobs give +9 % [+2, +17] (90 %) over one, shown at 90 % (the jobs
    curve through the point has that one higher load) but not at 96.7 % (a rise over any of the three other loads
    with more jobs). The cap along iodepth is refuted, as the jobs curve's own reading says more load raises IOPS:
    the 5 % shared among every other load had left it capped beside that reading."""
    from storbench.stats.bottleneck import CurveStep
    from storbench.stats.point_verdicts import sweep_reading

    one, two = (3000.0, 3090.0, 2910.0), (3270.0, 3120.0, 3420.0)
    rows = [observation(case_id=f"j{jobs}d{depth}", numjobs=jobs, iodepth=depth, repeat=rep,
                        iops=(one if jobs == 1 else two)[rep], lat_mean_ns=depth * jobs / 3000.0 * 1e9,
                        host_cpu_busy_pct=30.0, client_cpu_cores=0.3 * jobs, disk_busiest_util_pct=40.0)
            for jobs in (1, 2) for depth in (1, 4, 16) for rep in range(3)]
    points = {p.case_id: p for p in summarize_points(rows)}
    steps = [CurveStep(load=jobs * 16, label=f"numjobs {jobs}", throughput=points[f"j{jobs}d16"].metric("iops"),
                       lat_mean_ns=None, verdict=points[f"j{jobs}d16"].bottleneck) for jobs in (1, 2)]
    assert (sweep_reading(steps, 0) or "").startswith("more load raises IOPS: numjobs 2 gave +9 % [+2, +17] (90 %")
    verdict = points["j1d16"].bottleneck
    assert verdict.kind == Bottleneck.UNDER_DRIVEN, verdict
    assert "iodepth 16, numjobs 2 gave +9 % [+2, +17] (90 %)" in verdict.evidence, verdict.evidence


def test_a_point_whose_clients_did_not_all_report_says_so() -> None:
    """clients: 2, one pod's output lost with its node in one repetition: the repetition is one client's figures
    under a point of two; the point warns, naming how many clients and repetitions."""
    rows = [{**_BASE, "repeat": r, "clients": 2, "clients_reporting": 1 if r == 1 else 2, "iops": 1000.0,
             "lat_mean_ns": 8e6} for r in range(3)]
    (point,) = [p for p in summarize_points([observation(**r) for r in rows]) if p.direction == "read"]
    (warning,) = [w for w in point.warnings if w.code == "missing_clients"]
    assert warning.message.startswith("1 of 2 clients returned no fio output (repetition 2; 1 repetitions short)")
    full = [{**r, "clients_reporting": 2} for r in rows]
    assert "missing_clients" not in {w.code for w in summarize_points([observation(**r) for r in full])[0].warnings}


def test_osds_pinned_to_a_cpuset_are_cpu_bound_at_it() -> None:
    """`osd_cpuset: 1`: three OSDs at 0.97 cores on their one CPU, the host 55 % busy: the OSDs are CPU-bound on their
    CPUs (it had read under-driven, nothing saturated); at 0.5 of it, not."""
    pinned = replace(IDLE, process_cpu_cores=(("ceph-osd", 0.97),), osds=3, osd_cpuset_cores=1.0)
    verdict = judge(pinned)
    assert verdict.kind == Bottleneck.CPU and "the OSDs use 0.97 of the 1 CPUs they are pinned to (97 %)" in \
        verdict.evidence, verdict.evidence
    assert judge(replace(pinned, process_cpu_cores=(("ceph-osd", 0.5),))).kind != Bottleneck.CPU



def test_the_time_split_by_layer_is_over_the_same_repetitions() -> None:
    """The OSDs answered in 2 ms of a 4 ms mean in one repetition; in the two others a cache answered (no OSD
    reads) at a 1 ms mean: set against the mean of all three, 2 ms of 2 ms had read "100 %, 0 % outside"; now the
    time is not split, saying why."""
    rows = [observation(**{**_BASE, "repeat": rep, "direction": "read", "rw": "randread", "iops": 1000.0,
                           "lat_mean_ns": lat, "osd_lat_ns": osd})
            for rep, lat, osd in ((0, 4e6, 2e6), (1, 1e6, None), (2, 1e6, None))]
    (point,) = summarize_points(rows)
    assert "by layer: not split (the OSDs' latency known in 1 of 3 repetitions)" in point.bottleneck.evidence
    assert "0% outside" not in point.bottleneck.evidence


def test_clients_that_started_far_apart_are_warned_of() -> None:
    """Two clients of a 10 s run, one 8 s late (a pod pulled after its start time): each client's rate is over its
    own window, so their sum counts 8 s in which one of them did not run; the point says so. 0.2 s apart it does
    not."""
    rows = [{**_BASE, "repeat": r, "clients": 2, "runtime_s": 10.0, "start_skew_s": 8.0 if r == 2 else 0.2,
             "iops": 1000.0, "lat_mean_ns": 8e6} for r in range(3)]
    (point,) = [p for p in summarize_points([observation(**r) for r in rows]) if p.direction == "read"]
    (warning,) = [w for w in point.warnings if w.code == "start_skew"]
    assert warning.message.startswith("clients started up to 8.0 s apart (repetition 3), 80% of the 10 s runtime")
    close = [{**r, "start_skew_s": 0.2} for r in rows]
    assert "start_skew" not in {w.code for w in summarize_points([observation(**r) for r in close])[0].warnings}


def test_the_metadata_cycles_later_phases_of_many_clients_are_warned_of() -> None:
    """Only the create phase waits at the start barrier: each client's stat and delete begin when its own create
    ends, and the merged rate (every operation over the longest client's phase) may count stretches in which not
    all of them ran. The create phase, and one client, are not warned of."""
    def points(clients: int) -> dict[str, set[str]]:
        rows = [{**_BASE, "repeat": r, "rw": "metadata", "rwmixread": None, "clients": clients, "iops": 900.0,
                 "direction": direction} for r in range(3) for direction in ("write", "read", "trim")]
        return {p.direction: {w.code for w in p.warnings} for p in summarize_points([observation(**r) for r in rows])}

    many = points(3)
    assert "phases_apart" in many["read"] and "phases_apart" in many["trim"] and "phases_apart" not in many["write"]
    assert all("phases_apart" not in codes for codes in points(1).values())


def test_a_rise_on_any_load_curve_through_a_point_wins_over_another_curves_elsewhere() -> None:
    """numjobs 1 iodepth 1 sits on an iodepth curve (iodepth 4 gave the same IOPS) and a numjobs curve (numjobs 2
    gave +100 %): the iodepth curve had been read first and said "the limit is elsewhere", and the numjobs curve was
    never read. More load is shown to raise IOPS there: that is what the point says."""
    rows = [observation(**{**_BASE, "case_id": f"j{jobs}q{depth}", "numjobs": jobs, "iodepth": depth, "repeat": r,
                           "direction": "read", "iops": iops * (1 + 0.003 * (r - 2)),
                           "lat_mean_ns": lat * (1 + 0.003 * (r - 2)), "host_cpu_busy_pct": 20.0})
            for jobs, depth, iops, lat in ((1, 1, 1000.0, 1e6), (1, 4, 1000.0, 1.3e6), (2, 1, 2000.0, 1e6))
            for r in range(5)]
    (first,) = [p for p in summarize_points(rows) if (p.case.workload.numjobs, p.case.workload.iodepth) == (1, 1)]
    assert "more load raises IOPS: numjobs 2 gave +100 %" in first.bottleneck.evidence, first.bottleneck
    assert "the limit is elsewhere" not in first.bottleneck.evidence, first.bottleneck
