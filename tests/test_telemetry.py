"""Telemetry: /proc parsers and rates with known answers, Ceph counters from a real perf dump, Prometheus
answers, the window rule, the store round trip, and the sampler against real load (fio) and idleness."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from storbench.config import TelemetryConfig
from storbench.store import open_store
from storbench.telemetry.ceph_counters import (
    CephSnapshot,
    ceph_series,
    daemon_name_from_socket,
    parse_perf_dump,
)
from storbench.telemetry.collect import repetition_telemetry
from storbench.telemetry.digest import digest
from storbench.telemetry.proc import (
    CpuTimes,
    DiskCounters,
    LinkRates,
    NetCounters,
    ProcessTicks,
    ProcSnapshot,
    cpu_series,
    disk_series,
    net_series,
    parse_diskstats,
    parse_meminfo,
    parse_net_dev,
    parse_pid_stat,
    parse_proc_stat,
    process_series,
)
from storbench.telemetry.prometheus import entity_from_labels, parse_range_response, queries_for
from storbench.telemetry.series import RepetitionTelemetry, TelemetrySeries, in_window, window_max, window_mean
from storbench.telemetry.sources import Sampler, admin_socket_command

HAVE_FIO = shutil.which("fio") is not None

# ---------------------------------------------------------------------------------------------------------------
# Parsers


def test_proc_stat_first_cpu_line() -> None:
    text = "cpu  100 5 50 800 20 1 4 2 7 0\ncpu0 50 2 25 400 10 0 2 1 0 0\nintr 1 2 3\n"
    assert parse_proc_stat(text) == CpuTimes(user=100, nice=5, system=50, idle=800, iowait=20, irq=1, softirq=4,
                                             steal=2)
    assert parse_proc_stat("intr 1\n") is None


DISKSTATS = """\
 253       0 vda 1000 10 16000 500 2000 20 32000 1500 0 1800 2100 0 0 0 0 100 50
 253       1 vda1 900 10 14000 450 1900 20 31000 1400 0 1700 2000 0 0 0 0 0 0
   1       0 ram0 0 0 0 0 0 0 0 0 0 0 0
   7       0 loop0 5 0 40 1 0 0 0 0 0 1 1
"""


def test_diskstats_whole_devices_only() -> None:
    disks = parse_diskstats(DISKSTATS, frozenset({"vda", "loop0", "ram0"}))
    assert [d.name for d in disks] == ["vda", "loop0"]  # the partition and the RAM disk are left out
    vda = disks[0]
    assert (vda.reads, vda.sectors_read, vda.read_ms, vda.writes, vda.sectors_written, vda.write_ms,
            vda.io_ticks_ms, vda.queue_ms) == (1000, 16000, 500, 2000, 32000, 1500, 1800, 2100)
    assert [d.name for d in parse_diskstats(DISKSTATS)] == ["vda", "vda1", "loop0"]


def test_net_dev_and_meminfo() -> None:
    text = ("Inter-|   Receive                                                |  Transmit\n"
            " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls"
            " carrier compressed\n"
            "    lo: 500 5 0 0 0 0 0 0 500 5 0 0 0 0 0 0\n"
            "  eth0: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n")
    assert parse_net_dev(text) == (NetCounters("lo", 500, 5, 500, 5), NetCounters("eth0", 1000, 10, 2000, 20))
    meminfo = "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    400 kB\nCached:          250 kB\n"
    assert parse_meminfo(meminfo) == (600 * 1024, 250 * 1024)


def test_pid_stat_name_with_spaces_and_parentheses() -> None:
    fields = " ".join(["S", "1", "1", "1", "0", "-1", "4194560", "10", "0", "0", "0", "123", "45", "0", "0"])
    ticks = parse_pid_stat(42, f"42 (evil) name) x) {fields}")
    assert ticks == ProcessTicks(pid=42, name="evil) name) x", ticks=168)
    assert parse_pid_stat(1, "garbage") is None


# ---------------------------------------------------------------------------------------------------------------
# Rates from consecutive snapshots


def snapshot(t_s: float, cpu: CpuTimes | None = None, disks: tuple[DiskCounters, ...] = (),
             nets: tuple[NetCounters, ...] = (), processes: tuple[ProcessTicks, ...] = ()) -> ProcSnapshot:
    return ProcSnapshot(t_s=t_s, cpu=cpu, disks=disks, nets=nets, mem_used_bytes=None, page_cache_bytes=None,
                        processes=processes)


def test_cpu_busy_is_everything_but_idle_and_iowait() -> None:
    a = CpuTimes(100, 0, 100, 700, 100, 0, 0, 0)
    b = CpuTimes(160, 0, 130, 700, 110, 0, 0, 0)  # 100 ticks: 60 user, 30 system, 10 iowait
    series = {s.metric: s for s in cpu_series([snapshot(0.0, a), snapshot(1.0, b)])}
    assert series["busy_pct"].values == pytest.approx((90.0,))
    assert series["user_pct"].values == pytest.approx((60.0,))
    assert series["iowait_pct"].values == pytest.approx((10.0,))
    assert series["busy_pct"].starts_s == (0.0,) and series["busy_pct"].times_s == (1.0,)


def test_disk_rates_known_answer() -> None:
    a = DiskCounters("vda", reads=0, sectors_read=0, read_ms=0, writes=0, sectors_written=0, write_ms=0,
                     io_ticks_ms=0, queue_ms=0)
    b = DiskCounters("vda", reads=300, sectors_read=2400, read_ms=600, writes=100, sectors_written=800, write_ms=200,
                     io_ticks_ms=1000, queue_ms=8000)
    idle = DiskCounters("sdb", 5, 40, 1, 0, 0, 0, 1, 1)
    series = {(s.entity, s.metric): s.values[0]
              for s in disk_series([snapshot(0.0, disks=(a, idle)), snapshot(2.0, disks=(b, idle))])}
    assert series[("vda", "util_pct")] == pytest.approx(50.0)  # 1000 ms busy in 2 s
    assert series[("vda", "queue_depth")] == pytest.approx(4.0)  # 8000 ms of queue time in 2000 ms
    assert series[("vda", "iops")] == pytest.approx(200.0)
    assert series[("vda", "read_bytes_per_s")] == pytest.approx(2400 * 512 / 2)
    assert series[("vda", "await_ms")] == pytest.approx(2.0)  # 800 ms waited by 400 I/Os
    assert not any(entity == "sdb" for entity, _ in series)  # no I/O in the whole sampling: left out
    # the kernel's millisecond fields are 32-bit: across their wrap the same figures, not -429,496,630 % busy
    wrap = 2**32
    a = DiskCounters("vda", reads=0, sectors_read=0, read_ms=wrap - 100, writes=0, sectors_written=0,
                     write_ms=wrap - 50, io_ticks_ms=wrap - 400, queue_ms=wrap - 3000)
    b = DiskCounters("vda", reads=300, sectors_read=2400, read_ms=500, writes=100, sectors_written=800, write_ms=150,
                     io_ticks_ms=600, queue_ms=5000)
    wrapped = {s.metric: s.values[0] for s in disk_series([snapshot(0.0, disks=(a,)), snapshot(2.0, disks=(b,))])}
    assert wrapped["util_pct"] == pytest.approx(50.0) and wrapped["queue_depth"] == pytest.approx(4.0)
    assert wrapped["await_ms"] == pytest.approx(2.0)
    # a device made anew between two samples (its 64-bit counters back to small values): that interval gives none
    again = DiskCounters("vda", reads=3, sectors_read=24, read_ms=5, writes=0, sectors_written=0, write_ms=0,
                         io_ticks_ms=5, queue_ms=5)
    assert disk_series([snapshot(0.0, disks=(b,)), snapshot(2.0, disks=(again,))]) == []


def test_process_cores_sum_a_name_and_count_new_processes() -> None:
    before = (ProcessTicks(1, "fio", 100), ProcessTicks(2, "ceph-osd", 0))
    after = (ProcessTicks(1, "fio", 150), ProcessTicks(3, "fio", 30), ProcessTicks(2, "ceph-osd", 200))
    series = {s.entity: s.values[0]
              for s in process_series([snapshot(0.0, processes=before), snapshot(2.0, processes=after)], 100)}
    assert series["fio"] == pytest.approx((50 + 30) / 100 / 2)  # 0.4 cores: pid 3 started in the interval
    assert series["ceph-osd"] == pytest.approx(1.0)


def test_network_utilisation_against_link_rate() -> None:
    a, b = NetCounters("eth0", 0, 0, 0, 0), NetCounters("eth0", 62_500_000, 1000, 1_000_000, 10)
    lo_a, lo_b = NetCounters("lo", 0, 0, 0, 0), NetCounters("lo", 10**9, 1, 10**9, 1)
    series = {(s.entity, s.metric): s.values[0]
              for s in net_series([snapshot(0.0, nets=(a, lo_a)), snapshot(1.0, nets=(b, lo_b))],
                                  LinkRates({"eth0": 1_000_000_000}))}
    assert series[("eth0", "util_pct")] == pytest.approx(50.0)  # 500 Mb/s received on a 1 Gb/s link
    assert series[("eth0", "tx_bytes_per_s")] == pytest.approx(1e6)
    assert not any(entity == "lo" for entity, _ in series)
    no_speed = net_series([snapshot(0.0, nets=(a,)), snapshot(1.0, nets=(b,))], LinkRates({}))
    assert "util_pct" not in {s.metric for s in no_speed}


def test_a_link_slowed_midway_is_measured_against_its_rate_then() -> None:
    """A fault that shapes a link for part of a repetition: each interval's utilisation is against the rate in
    effect then (time-weighted where the change falls inside it), not the rate from before the repetition."""
    received = (0, 62_500_000, 72_500_000, 135_000_000, 190_000_000)  # 500, 80, 500, 440 Mbit/s over 1 s each
    nets = [snapshot(float(t), nets=(NetCounters("eth0", rx, 0, 0, 0),)) for t, rx in enumerate(received)]
    links = LinkRates({"eth0": 1_000_000_000}, ((0.0, {}), (1.0, {"eth0": 100_000_000}), (2.0, {}),
                                                (3.5, {"eth0": 100_000_000})))
    (util,) = [s for s in net_series(nets, links) if s.metric == "util_pct"]
    # 1 Gbit/s, then 100 Mbit/s (a flat 1 Gbit/s had said 8 %), then 1 Gbit/s, then half of each: 550 Mbit/s
    assert util.values == pytest.approx((50.0, 80.0, 50.0, 80.0))
    assert links.at("eth0", 0.5) == 1_000_000_000 and links.at("eth0", 1.0) == 100_000_000
    assert links.at("veth9", 1.5) is None


def test_the_recorder_keeps_each_link_rate_a_fault_sets_and_a_rate_it_cannot_read_is_a_problem() -> None:
    """The rates from before a repetition, then each change a fault makes (an unchanged one adds nothing); rates
    that cannot be read after a fault are said with the telemetry, and the fault is not failed for it: the run
    loop's `_fault` tells the recorder whatever the fault did, and its own outcome goes on."""
    from storbench.orchestrate import _fault
    from storbench.telemetry.recorder import TelemetryRecorder

    recorder = TelemetryRecorder(TelemetryConfig(), [])
    recorder.links_shaped({"sbh1a": 100})
    recorder.links_shaped({"sbh1a": 100}, 5.0)

    class Session:
        def __init__(self) -> None:
            self.rates = {"sbh1a": 10}

        def fault(self, step: object, case: object, *, restore: bool) -> str:
            if restore:
                raise OSError("tc failed")
            return "slowed"

        def link_rates(self, case: object) -> dict[str, int]:
            if not self.rates:
                raise OSError("state file gone")
            return self.rates

    session = Session()
    assert _fault(session, None, recorder, None, False) == "slowed"  # type: ignore[arg-type]
    session.rates = {}
    with pytest.raises(OSError, match="tc failed"):  # the fault's own error, not the rates'
        _fault(session, None, recorder, None, True)  # type: ignore[arg-type]
    assert [rates for _, rates in recorder.shaped_bits_per_s] == [{"sbh1a": 100}, {"sbh1a": 10}]
    assert recorder.link_problems == ["link rates after a fault not read: state file gone"]
    recorder.links_shaped({})  # the next repetition: its own rates and problems
    assert recorder.shaped_bits_per_s == [(0.0, {})] and recorder.link_problems == []


def test_a_veth_known_only_while_a_fault_shaped_it_has_no_mean_utilisation() -> None:
    """An unshaped lab's veth has no rate; a `slow` fault gives it one for a second: that second has a
    utilisation, and the repetition's mean has none (it would read as busy as the link was while slowed)."""
    received = (0, 1_000_000, 2_000_000, 3_000_000)
    nets = [snapshot(100.0 + t, nets=(NetCounters("sbh1", rx, 0, 0, 0),)) for t, rx in enumerate(received)]
    links = LinkRates({}, ((0.0, {}), (101.0, {"sbh1": 8_000_000}), (102.0, {})))
    telemetry = repetition_telemetry((100.0, 103.0), nets, [], [], None, 100, links, [])
    (util,) = telemetry.find("net", "util_pct")
    assert util.starts_s == (101.0,) and util.values == pytest.approx((100.0,))
    (interface,) = digest(telemetry).interfaces
    assert interface.name == "sbh1" and interface.util_pct is None and interface.rx_bytes_per_s == pytest.approx(1e6)
    shaped = repetition_telemetry((100.0, 103.0), nets, [], [], None, 100, LinkRates({"sbh1": 80_000_000}), [])
    assert digest(shaped).interfaces[0].util_pct == pytest.approx(10.0)  # known throughout: its mean


# ---------------------------------------------------------------------------------------------------------------
# The measured window


def rate(values: list[float], start: float = 0.0, step: float = 1.0, metric: str = "busy_pct",
         source: str = "cpu", entity: str = "host") -> TelemetrySeries:
    starts = tuple(start + i * step for i in range(len(values)))
    return TelemetrySeries(source, entity, metric, starts, tuple(s + step for s in starts), tuple(values))


def test_window_excludes_ramp_and_layout() -> None:
    series = rate([99.0, 99.0, 10.0, 20.0, 30.0, 99.0])  # intervals (0,1] .. (5,6]
    assert [v for _, v in in_window(series, 2.0, 5.0)] == [10.0, 20.0, 30.0]
    assert window_mean(series, 2.0, 5.0) == pytest.approx(20.0)
    assert window_max(series, 2.0, 5.0) == 30.0
    # an interval counts when at least half of it is inside
    assert [v for _, v in in_window(series, 2.4, 5.0)] == [10.0, 20.0, 30.0]
    assert [v for _, v in in_window(series, 2.6, 5.0)] == [20.0, 30.0]


def test_window_shorter_than_an_interval_takes_the_best_overlap() -> None:
    series = rate([10.0, 50.0], step=2.0)
    assert window_mean(series, 2.5, 2.9) == 50.0


# ---------------------------------------------------------------------------------------------------------------
# Ceph counters


FIXTURES = Path(__file__).parent / "fixtures"


def test_perf_dump_from_a_real_pacific_osd() -> None:
    counters = parse_perf_dump("osd.0", (FIXTURES / "ceph-osd-perf-dump-pacific.json").read_text())
    assert counters.ops == 0 and counters.op_latency is not None and counters.op_latency.count == 0
    assert counters.buffer_hit_bytes == 32381 and counters.buffer_miss_bytes == 567
    assert counters.onode_hits == 165 and counters.onode_misses == 202
    with pytest.raises(ValueError, match="not JSON"):
        parse_perf_dump("osd.1", "{")
    # a real Pacific MDS (its mds section): requests and their reply latency; no OSD counters
    mds = parse_perf_dump("mds.a", (FIXTURES / "ceph-mds-perf-dump-pacific.json").read_text())
    assert dict(mds.latencies)["mds_reply"].count == 16 and mds.ops is None


def _dump(ops: int, lat_count: int, lat_sum: float, hit: int, miss: int) -> str:
    return json.dumps({"osd": {"op": ops, "op_latency": {"avgcount": lat_count, "sum": lat_sum}},
                       "bluestore": {"bluestore_buffer_hit_bytes": hit, "bluestore_buffer_miss_bytes": miss}})


def _layer_dump(reads: int, read_s: float, process_s: float) -> str:
    return json.dumps({"osd": {"op": reads, "op_r_latency": {"avgcount": reads, "sum": read_s},
                               "op_r_process_latency": {"avgcount": reads, "sum": process_s}}})


def test_the_layers_counters_by_direction_and_daemon() -> None:
    """The OSDs' reads and their part without the queue, an MDS's replies and radosgw's GETs: each a rate and a
    latency weighted by its requests over the daemons that have it; a daemon without the counter adds nothing."""
    mds = [json.dumps({"mds": {"request": n, "reply_latency": {"avgcount": n, "sum": s}}}) for n, s in ((0, 0.0),
                                                                                                         (50, 0.1))]
    rgw = [json.dumps({"rgw": {"get": n, "get_initial_lat": {"avgcount": n, "sum": s}}}) for n, s in ((10, 1.0),
                                                                                                    (110, 1.3))]
    snapshots = [
        CephSnapshot(0.0, (parse_perf_dump("osd.0", _layer_dump(0, 0.0, 0.0)),
                           parse_perf_dump("osd.1", _layer_dump(0, 0.0, 0.0)),
                           parse_perf_dump("mds.a", mds[0]), parse_perf_dump("client.rgw.a", rgw[0]))),
        CephSnapshot(2.0, (parse_perf_dump("osd.0", _layer_dump(100, 0.1, 0.05)),
                           parse_perf_dump("osd.1", _layer_dump(300, 0.9, 0.3)),
                           parse_perf_dump("mds.a", mds[1]), parse_perf_dump("client.rgw.a", rgw[1]))),
    ]
    d = digest(RepetitionTelemetry(0.0, 2.0, tuple(ceph_series(snapshots))))
    reads = d.counter("op_r")
    assert reads is not None and reads.per_s == pytest.approx(200.0)
    assert reads.latency_ns == pytest.approx(1e9 / 400)  # (0.1 + 0.9) s over 400 reads
    process = d.counter("op_r_process")
    assert process is not None and process.latency_ns == pytest.approx(0.35e9 / 400)
    replies = d.counter("mds_reply")
    assert replies is not None and replies.per_s == pytest.approx(25.0) and replies.latency_ns == pytest.approx(2e6)
    gets = d.counter("rgw_get")
    assert gets is not None and gets.per_s == pytest.approx(50.0) and gets.latency_ns == pytest.approx(3e6)
    assert d.counter("op_w") is None and d.counter("rgw_put") is None
    assert d.ceph_ops_per_s == pytest.approx(200.0)  # client ops are the OSDs' alone


def test_the_sockets_read_are_the_osds_mdss_and_radosgw(tmp_path: Path) -> None:
    from storbench.telemetry.sources import ceph_admin_sockets

    for name in ("ceph-osd.0", "ceph-mds.a", "ceph-client.rgw.a", "ceph-mon.a", "ceph-mgr.x", "ceph-client.admin.7"):
        (tmp_path / f"{name}.asok").touch()
    found = [Path(p).name for p in ceph_admin_sockets([str(tmp_path / "*.asok")])]
    assert found == ["ceph-client.rgw.a.asok", "ceph-mds.a.asok", "ceph-osd.0.asok"]


def test_ceph_rates_latency_and_cache_hit_ratio() -> None:
    snapshots = [
        CephSnapshot(0.0, (parse_perf_dump("osd.0", _dump(0, 0, 0.0, 0, 0)),
                           parse_perf_dump("osd.1", _dump(0, 0, 0.0, 0, 0)))),
        CephSnapshot(1.0, (parse_perf_dump("osd.0", _dump(100, 100, 0.1, 900, 100)),
                           parse_perf_dump("osd.1", _dump(300, 300, 0.9, 0, 1000)))),
    ]
    series = {(s.entity, s.metric): s.values[0] for s in ceph_series(snapshots)}
    assert series[("osd.0", "ops_per_s")] == 100.0
    assert series[("osd.0", "op_latency_ns")] == pytest.approx(1e6)  # 0.1 s over 100 ops
    assert series[("osd.1", "op_latency_ns")] == pytest.approx(3e6)
    d = digest(RepetitionTelemetry(0.0, 1.0, tuple(ceph_series(snapshots))))
    assert d.ceph_op_latency_ns == pytest.approx((100 * 1e6 + 300 * 3e6) / 400)  # weighted by ops
    assert d.ceph_cache_hit_pct == pytest.approx(100 * 900 / 2000)  # summed bytes, not averaged ratios
    assert d.ceph_ops_per_s == pytest.approx(400.0)


def test_each_daemons_counters_are_timed_when_its_dump_was_read() -> None:
    """The sockets are read one after another, each within a 2 s timeout: with osd.0 frozen, osd.1's dumps came
    2 s after the snapshot's time, and its rate over the first frozen interval (stamped 1 s, read 3 s) was 3x."""
    from dataclasses import replace

    snapshots = [
        CephSnapshot(0.0, (replace(parse_perf_dump("osd.1", _dump(0, 0, 0.0, 0, 0)), t_s=0.0),)),
        CephSnapshot(1.0, (replace(parse_perf_dump("osd.1", _dump(300, 300, 0.3, 0, 0)), t_s=3.0),)),
        CephSnapshot(3.0, (replace(parse_perf_dump("osd.1", _dump(500, 500, 0.5, 0, 0)), t_s=5.0),)),
    ]
    ops = next(s for s in ceph_series(snapshots) if s.metric == "ops_per_s")
    assert ops.values == pytest.approx((100.0, 100.0)) and ops.starts_s == (0.0, 3.0) and ops.times_s == (3.0, 5.0)
    # dumps without their own time (older readings) keep the snapshot's
    plain = [CephSnapshot(t, (parse_perf_dump("osd.1", _dump(n, n, 0.1, 0, 0)),)) for t, n in ((0.0, 0), (2.0, 200))]
    assert next(s for s in ceph_series(plain) if s.metric == "ops_per_s").values == (100.0,)


def test_a_daemon_started_again_leaves_out_the_interval_its_counters_went_back_in() -> None:
    """A `restart` fault sets a daemon's counters back to 0: that interval had a rate of minus all the ops it had
    ever done, and the window's op rate and latency came out wrong."""
    dumps = [_dump(20_000, 20_000, 20.0, 0, 0), _dump(21_000, 21_000, 21.0, 0, 0), _dump(500, 500, 0.5, 0, 0),
             _dump(1_500, 1_500, 1.5, 0, 0)]
    snapshots = [CephSnapshot(float(t), (parse_perf_dump("osd.0", dump),)) for t, dump in enumerate(dumps)]
    ops = next(s for s in ceph_series(snapshots) if s.metric == "ops_per_s")
    assert ops.values == (1000.0, 1000.0) and ops.starts_s == (0.0, 2.0)  # the interval 1-2 is not known
    d = digest(RepetitionTelemetry(0.0, 3.0, tuple(ceph_series(snapshots))))
    assert d.ceph_ops_per_s == pytest.approx(1000.0) and d.ceph_op_latency_ns == pytest.approx(1e6)


def test_a_counters_rate_is_over_the_intervals_read_not_the_windows_length() -> None:
    """An OSD at 1,000 ops/s read every 5 s over a 5 s window that two intervals overlap by half: their total
    over the window's 5 s had said 2,000 ops/s."""
    snapshots = [CephSnapshot(t, (parse_perf_dump("osd.0", _dump(1000 * int(t), 1000 * int(t), t, 0, 0)),))
                 for t in (0.0, 5.0, 10.0)]
    d = digest(RepetitionTelemetry(2.5, 7.5, tuple(ceph_series(snapshots))))
    assert d.ceph_ops_per_s == pytest.approx(1000.0)


def test_daemon_names_from_socket_paths() -> None:
    assert daemon_name_from_socket("/run/ceph/ceph-osd.12.asok") == "osd.12"
    assert daemon_name_from_socket("/x/run/mycluster-osd.0.asok") == "osd.0"


# ---------------------------------------------------------------------------------------------------------------
# Prometheus answers


def test_prometheus_range_answer_to_series() -> None:
    answer = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"instance": "node1:9100", "device": "sda", "job": "node"},
         "values": [[100, "50"], [101, "70"], [102, "NaN"]]},
        {"metric": {"instance": "node2:9100", "device": "sdb"}, "values": [[100, "10"]]},
    ]}})
    series = parse_range_response("disk_util_pct", answer, 1.0)
    assert [s.entity for s in series] == ["node1:9100 device=sda", "node2:9100 device=sdb"]
    assert series[0].values == (50.0, 70.0) and series[0].starts_s == (99.0, 100.0)  # NaN dropped
    with pytest.raises(ValueError, match="bad_data"):
        parse_range_response("x", json.dumps({"status": "error", "errorType": "bad_data",
                                              "error": "bad_data: parse error"}), 1.0)
    assert entity_from_labels({}) == "all"


def test_builtin_queries_take_the_rate_window_and_can_be_replaced() -> None:
    queries = {q.metric: q for q in queries_for({"disk_util_pct": "my_util[$rate]", "up": "up"})}
    assert "[3000ms]" in queries["cpu_busy_pct"].text(3.0) and "$rate" not in queries["cpu_busy_pct"].text(3.0)
    assert queries["disk_util_pct"].text(4.25) == "my_util[4250ms]" and queries["disk_util_pct"].rates
    assert not queries["up"].rates and not queries["memory_used_bytes"].rates  # gauges, of their moment
    assert [q.metric for q in queries_for({"x": "up"}, use_defaults=False)] == ["x"]


def test_prometheus_values_lie_inside_the_measured_window() -> None:
    """A rate over the minute before a 5 s repetition had stood for its last second: it described the idle gap
    and the case before it (a node busy only inside the window read 5 % busy). Without a rate window there is one
    value over the window itself; with one, values from that long after the window's start, none if it is
    longer than the window."""
    from storbench.telemetry.prometheus import QueryWindow, query_window
    from storbench.telemetry.series import window_mean

    assert query_window(100.0, 105.0, None, 1.0) == QueryWindow(105.0, 105.0, 1.0, 5.0)
    assert query_window(100.0, 130.0, 10.0, 1.0) == QueryWindow(110.0, 130.0, 1.0, 10.0)
    refused = query_window(100.0, 105.0, 60.0, 1.0)
    assert isinstance(refused, str) and "shorter than telemetry.prometheus.rate_window (60 s)" in refused
    one = parse_range_response("cpu_busy_pct", json.dumps({"status": "success", "data": {"result": [
        {"metric": {"instance": "n:9100"}, "values": [[105, "100"]]}]}}), 5.0)
    (series,) = one
    assert series.starts_s == (100.0,) and series.times_s == (105.0,)
    assert window_mean(series, 100.0, 105.0) == 100.0



def test_a_long_runs_prometheus_queries_stay_within_its_point_limit_and_an_empty_answer_is_said(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A 4 h soak at a 1 s step asked for 14,341 points a series, which Prometheus refuses (over 11,000): the step
    is widened. A query answered with no series (a window holding fewer than two scrapes) had gone unsaid."""
    from storbench.telemetry import sources
    from storbench.telemetry.prometheus import MAX_POINTS, PrometheusQuery, query_window

    soak = query_window(0.0, 14_400.0, 60.0, 1.0)
    assert not isinstance(soak, str) and (soak.last_s - soak.first_s) / soak.step_s <= MAX_POINTS < 14_341
    assert query_window(100.0, 130.0, 10.0, 1.0).step_s == 1.0  # type: ignore[union-attr]
    monkeypatch.setattr(sources, "fetch_range", lambda *_, **__: json.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": []}}))
    series, problems = sources.fetch_prometheus_series("http://prometheus:9090", [PrometheusQuery("cpu_busy_pct",
                                                                                               "up")], soak)
    assert series == [] and problems == ["Prometheus: cpu_busy_pct gave no series over the measured window"]


@pytest.mark.parametrize("data", [
    None, {"result": None}, {"result": ["x"]}, {"result": [{"metric": None, "values": []}]},
    {"result": [{"metric": {}, "values": [[1, None]]}]}, {"result": [{"metric": {}, "values": [[1, "x"]]}]},
    {"result": [{"metric": {}, "values": [1, "2"]}]},
])
def test_a_prometheus_answer_of_another_shape_is_a_problem_not_a_crash(data: object) -> None:
    """A proxy's or another server's JSON had raised AttributeError or TypeError past the recorder, losing the
    repetition fio had measured: it is a ValueError, which the recorder keeps as a problem."""
    with pytest.raises(ValueError, match=r"Prometheus answered|could not convert"):
        parse_range_response("m", json.dumps({"status": "success", "data": data}), 1.0)


# ---------------------------------------------------------------------------------------------------------------
# Store round trip


def test_store_keeps_every_sample_and_the_window(tmp_path: Path) -> None:
    from storbench.model import Case, PathTarget, RepetitionOutcome, Status, WorkloadPoint

    case = Case("c1", PathTarget("t", path="/tmp", size_bytes=1 << 20),
                WorkloadPoint("randread", 4096, 1, 1, 1.0, 0.0, True, "libaio"))
    outcome = RepetitionOutcome(Status.OK, 10.0, 12.0, "job", ("fio",), "fio-3.33", "", "")
    telemetry = RepetitionTelemetry(11.0, 12.0, (rate([1.0, 2.0], start=10.0), rate([0.5], metric="cpu_cores",
                                                                                   source="process",
                                                                                   entity="fio")),
                                    problems=("osd.3: connection refused",))
    store = open_store(tmp_path / "r.db")
    run_id = store.create_run(plan_name="p", plan_text="", plan_sha256="", source="run", storbench_version="0",
                              fio_version="fio-3.33", host="h", kernel="k", run_order="sequential", seed=0, tags=[],
                              started_at_s=0.0)
    repetition_id = store.save_repetition(run_id, case, 0, outcome, (), telemetry)
    (stored,) = store.repetitions()
    assert stored.telemetry is not None
    assert (stored.telemetry.window_start_s, stored.telemetry.window_end_s) == (11.0, 12.0)
    assert sorted(stored.telemetry.series, key=lambda s: s.metric) == sorted(telemetry.series, key=lambda s: s.metric)
    assert store.telemetry_problems(repetition_id) == ["osd.3: connection refused"]
    store.close()


# ---------------------------------------------------------------------------------------------------------------
# The sampler against real load and against idleness


def _sample(action_s: float, command: list[str] | None, tmp_path: Path) -> RepetitionTelemetry:
    config = TelemetryConfig()
    sampler = Sampler(0.5, config.processes, [], [])
    sampler.start()
    started = time.time()
    if command is None:
        time.sleep(action_s)
    else:
        subprocess.run(command, cwd=tmp_path, check=True, stdout=subprocess.DEVNULL, timeout=60)
    ended = time.time()
    readings = sampler.stop()
    import os

    return repetition_telemetry((started + 0.5, ended), readings.proc, readings.ceph, [], None,
                                os.sysconf("SC_CLK_TCK"), LinkRates({}), readings.problems)


@pytest.mark.fio
@pytest.mark.skipif(not HAVE_FIO, reason="needs fio")
def test_sampler_sees_fio_load_and_not_idleness(tmp_path: Path) -> None:
    idle = digest(_sample(2.5, None, tmp_path))
    fio = ["fio", "--name=load", "--filename=load.dat", "--size=128m", "--rw=randwrite", "--bs=4k",
           "--direct=1", "--ioengine=libaio", "--iodepth=16", "--time_based=1", "--runtime=3", "--output=/dev/null"]
    # lay the file out first, so the measured run is pure random writes
    subprocess.run(["fio", "--name=layout", "--filename=load.dat", "--size=128m", "--rw=write", "--bs=1m",
                    "--output=/dev/null"], cwd=tmp_path, check=True)
    busy = digest(_sample(0.0, fio, tmp_path))
    # the fio process is seen working, and not at all while idle
    assert (busy.process_cores("fio") or 0.0) > 0.05
    assert idle.process_cores("fio") is None or idle.process_cores("fio") == 0.0
    # the device under the file moves: much busier than in the idle period
    device = busy.busiest_device
    assert device is not None and device.iops > 500 and device.write_bytes_per_s > 2 * 1024 * 1024
    idle_same = next((d for d in idle.devices if d.name == device.name), None)
    idle_util = idle_same.util_pct if idle_same else 0.0
    assert device.util_pct > idle_util + 15.0, (device, idle_same)
    assert busy.host_cpu_busy_pct is not None and idle.host_cpu_busy_pct is not None
    assert busy.host_cpu_busy_pct > idle.host_cpu_busy_pct


def test_admin_socket_protocol_against_a_fake_daemon(tmp_path: Path) -> None:
    """The framing (request + NUL; 4-byte big-endian length + body), against a socket server of our own."""
    import socket
    import struct
    import threading

    path = str(tmp_path / "ceph-osd.7.asok")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    received: list[bytes] = []
    body = _dump(5, 5, 0.005, 1, 1).encode()

    def serve() -> None:
        connection, _ = server.accept()
        data = b""
        while not data.endswith(b"\0"):
            data += connection.recv(100)
        received.append(data)
        connection.sendall(struct.pack(">I", len(body)) + body)
        connection.close()

    thread = threading.Thread(target=serve)
    thread.start()
    answer = admin_socket_command(path, "perf dump")
    thread.join()
    server.close()
    assert received == [b'{"prefix": "perf dump"}\0']
    assert parse_perf_dump("osd.7", answer).ops == 5


CEILING_PLAN = """
name: ceiling
targets:
  scratch: {kind: path, path: ./data, size: 16MiB}
workload:
  rw: randread
  bs: 4k
  iodepth: 4
  runtime: 1s
repeat: 2
telemetry: {client_ceiling: true, interval: 0.5s}
"""


@pytest.mark.fio
@pytest.mark.skipif(not HAVE_FIO, reason="needs fio")
def test_client_ceiling_is_measured_once_per_case_on_the_null_engine(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from helpers import inside, run_cli, write_plan

    plan = write_plan(tmp_path, CEILING_PLAN)
    db = tmp_path / "r.db"
    with inside(tmp_path):
        code, _, err = run_cli(capsys, "run", str(plan), "--db", str(db))
    assert code == 0, err
    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    records = json.loads(out)
    assert len(records) == 2
    ceilings = {r["client_ceiling_iops"] for r in records}
    assert len(ceilings) == 1  # one probe per case, shared by its repetitions
    (ceiling,) = ceilings
    # no storage at all: the null engine drives far more than a real file at the same depth
    assert all(ceiling > 3 * r["iops"] for r in records), (ceiling, [r["iops"] for r in records])


def test_osd_op_latency_is_weighted_by_ops_not_by_time() -> None:
    """A second with a thousand 10 ms ops and a second with one 1 s op (a background flush): an op's mean
    latency is about 11 ms, not the 505 ms a time-weighted mean of the two seconds would give."""
    from storbench.telemetry.digest import digest
    from storbench.telemetry.series import RepetitionTelemetry, TelemetrySeries

    ops = TelemetrySeries("ceph", "osd.0", "ops_per_s", (0.0, 1.0), (1.0, 2.0), (1000.0, 1.0))
    latency = TelemetrySeries("ceph", "osd.0", "op_latency_ns", (0.0, 1.0), (1.0, 2.0), (10e6, 1000e6))
    d = digest(RepetitionTelemetry(0.0, 2.0, (ops, latency)))
    assert d.ceph_op_latency_ns == pytest.approx((1000 * 10e6 + 1000e6) / 1001)


def test_kubelet_summaries_give_each_node_its_pods_cpu_and_name_the_busiest() -> None:
    """A real summary (Kubernetes 1.33's kubelet in the lab, one busy pod): a node's CPU is its pods' rates summed
    (not the node's or the `pods` container's, the whole machine's on the lab), each new reading covering the time
    since the one before (a summary read twice between housekeepings adds nothing); each node is its own entity,
    so the digest's busiest node is a node's name."""
    from storbench.telemetry.kubelet import capacity_cores, kubelet_series, parse_summary

    real = json.loads((FIXTURES / "kubelet-summary-only-cpu-and-memory.json").read_text())
    reading = parse_summary("storbench-node-2", 2.0, json.dumps(real))
    assert reading.pods_nanocores == real["pods"][0]["cpu"]["usageNanoCores"]  # not the machine's node.cpu
    assert real["node"]["systemContainers"][0]["cpu"]["usageNanoCores"] != reading.pods_nanocores

    def summary(seconds: int, *pods: tuple[int, int]) -> str:  # pods: (seconds of their time, nanocores)
        return json.dumps({**real, "pods": [
            {**real["pods"][0], "cpu": {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(base + t)),
                                        "usageNanoCores": n}} for t, n in pods]})

    base = 1_795_000_000
    node1 = [parse_summary("storbench-node-1", 2.0, summary(s, (s, 600_000_000), (max(s - 2, 0), 200_000_000)))
             for s in (0, 10, 10, 20)]
    node2 = [parse_summary("storbench-node-2", 2.0, summary(s, (s, 100_000_000))) for s in (0, 10, 20)]
    idle = [parse_summary("storbench-node-3", 2.0, summary(s)) for s in (0, 10, 20)]  # no pods: no figures
    series = kubelet_series([*node1, *node2, *idle])
    one = {s.metric: s for s in series if s.entity == "storbench-node-1"}
    assert one["pods_cpu_cores"].values == pytest.approx((0.8, 0.8))  # 0.6 + 0.2 cores, twice: the repeat adds none
    assert one["cpu_busy_pct"].values == pytest.approx((40.0, 40.0))  # of the node's 2 cores
    assert one["cpu_busy_pct"].starts_s == (base, base + 10) and one["cpu_busy_pct"].times_s == (base + 10, base + 20)
    assert {s.entity for s in series} == {"storbench-node-1", "storbench-node-2"}
    d = digest(RepetitionTelemetry(base, base + 20, tuple(series)))
    busiest = d.remote_max("cpu_busy_pct")
    assert busiest is not None and (busiest.entity, round(busiest.mean)) == ("storbench-node-1", 40)
    assert capacity_cores("2") == 2.0 and capacity_cores("1500m") == 1.5 and capacity_cores("lots") == 0.0
    for bad in ("<html>", "[]", '{"pods": []}'):
        with pytest.raises(ValueError, match="storbench-node-3"):
            parse_summary("storbench-node-3", 2.0, bad)


def test_the_kubelet_sampler_reads_every_node_and_says_a_silent_one_once() -> None:
    """Beside a repetition, every node's summary through the API server; a node that stops answering (powered off)
    is one short problem, not a failed repetition nor one line a reading."""
    from types import SimpleNamespace

    from storbench.execute.kubelet_stats import KubeletSampler

    real = (FIXTURES / "kubelet-summary-only-cpu-and-memory.json").read_bytes()
    asked: list[str] = []

    class Timeout(Exception):
        pass

    class Api:
        def param_serialize(self, **request: object) -> tuple[object, ...]:
            assert request["query_params"] == [("only_cpu_and_memory", "true")]
            return ("GET", request["path_params"]["name"])  # type: ignore[index]

        def call_api(self, method: str, name: str, **_: object) -> object:
            asked.append(name)
            if name == "down":
                raise _retry()
            if name == "refusing":
                return SimpleNamespace(status=500, read=lambda: None, data=b"")
            return SimpleNamespace(status=200, read=lambda: None, data=real)

    def _retry() -> Exception:
        error = Exception("HTTPSConnectionPool(...): Max retries exceeded ... long")
        error.reason = Timeout()  # type: ignore[attr-defined]
        return error

    nodes = [SimpleNamespace(metadata=SimpleNamespace(name=name), status=SimpleNamespace(capacity={"cpu": "2"}))
             for name in ("up", "down", "refusing")]
    core = SimpleNamespace(api_client=Api(), list_node=lambda **_: SimpleNamespace(items=nodes))
    sampler = KubeletSampler(core, 0.05)
    sampler.start()
    time.sleep(0.3)
    series, problems = sampler.stop()
    assert asked.count("up") >= 3 and set(asked) == {"up", "down", "refusing"}
    assert asked.count("down") == 1  # left alone for a while after it did not answer: the others stay on time
    assert sorted(problems) == ["kubelet of down: no answer (Timeout)", "kubelet of refusing: no summary (HTTP 500)"]
    assert series == []  # one pod whose time never moved: no interval to rate (the fixture's reading repeats)
    listless = KubeletSampler(SimpleNamespace(list_node=lambda **_: (_ for _ in ()).throw(_retry())), 1.0)
    listless.start()
    assert listless.stop() == ([], ("kubelets: cannot list the nodes (Timeout)",))


def test_only_interfaces_with_a_device_below_them_have_a_link_rate(tmp_path: Path) -> None:
    """A veth reports 10 Gbit whatever carries it and a bridge its fastest port's: judged against those, the hosts
    lab's bridge read "network-bound at 128 %" while its shaped links ran at 64 %. A NIC's rate stands."""
    from storbench.telemetry.sources import link_speeds_bits_per_s

    devices = tmp_path / "devices"
    for where, name, speed in (("pci0000:00/0000:00:03.0/net", "eth0", "1000"), ("virtual/net", "sbhosts0", "10000"),
                               ("virtual/net", "sbh1a", "10000"), ("pci0000:00/0000:00:04.0/net", "eth1", "-1")):
        (devices / where / name).mkdir(parents=True)
        (devices / where / name / "speed").write_text(speed + "\n")
        (tmp_path / "class").mkdir(exist_ok=True)
        (tmp_path / "class" / name).symlink_to(devices / where / name)
    assert link_speeds_bits_per_s(str(tmp_path / "class")) == {"eth0": 1_000_000_000}
