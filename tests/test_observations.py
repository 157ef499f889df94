"""Statistics over the typed model: observations, the one KEY=VALUE matcher, the one point label, and the export
record built from the same observations. Pure, except the last tests (an imported fio output in a database)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli
from storbench.errors import UserError
from storbench.fio.merge import client_measurements_by_host, merge_clients
from storbench.fio.parse import json_after_messages, parse_fio_json
from storbench.model import Status
from storbench.records import PLAN_FIELDS, RECORD_FIELDS, export_records
from storbench.report.labels import comparison_label, curve_label, point_label
from storbench.selection import filter_where
from storbench.stats import match
from storbench.stats.compare import compare_observations
from storbench.stats.knee import curves
from storbench.stats.metric_values import METRIC_VALUES, metric_value
from storbench.stats.selectors import parse_selector, select
from storbench.stats.summary import summarize_points
from synthetic import observation

FIXTURES = Path(__file__).parent / "fixtures"
GIB = 1 << 30


def _three(**fields: object) -> list:  # type: ignore[type-arg]
    return [observation(repeat=i, iops=1000.0 + i, **fields) for i in range(3)]


# ---------------------------------------------------------------------------------------------------------------
# One matcher for --where and selectors


@pytest.mark.parametrize("text", ["yes", "Yes", "true", "1"])
def test_where_direct_yes_matches_like_the_baseline_selector(text: str) -> None:
    # --where direct=yes used to match nothing while --baseline direct=yes matched: two matchers disagreed
    direct, buffered = _three(direct=True), _three(case_id="b", direct=False)
    everything = [*direct, *buffered]
    assert filter_where(everything, [f"direct={text}"]) == direct
    assert select(everything, parse_selector(f"direct={text}"), {}) == direct
    assert filter_where(everything, ["direct=no"]) == buffered == filter_where(everything, ["direct=0"])


def test_sizes_match_as_sizes_and_numbers_as_numbers() -> None:
    small, large = _three(bs_bytes=4096), _three(case_id="b", bs_bytes=GIB // 1024)
    both = [*small, *large]
    for text in ("4k", "4K", "4KiB", "4096"):
        assert filter_where(both, [f"bs={text}"]) == small
        assert filter_where(both, [f"bs_bytes={text}"]) == small
    assert filter_where(both, ["bs=1m"]) == large
    assert filter_where(both, ["bs=nonsense"]) == []
    assert filter_where(both, ["size_bytes=1GiB"]) == both
    assert filter_where(both, ["runtime_s=30", "iodepth=1", "repeat=3"]) == [small[2], large[2]]  # numbered from 1


def test_lab_settings_match_through_the_typed_lab_point() -> None:
    two = _three(case_id="two", lab="lab=ceph osd_size=2147483648 pool_size=2")
    four = _three(case_id="four", lab=f"lab=ceph osd_size={4 * GIB} pool_size=3 cephfs=1")
    local = _three(case_id="local")
    everything = [*two, *four, *local]
    for text in ("2GiB", "2g", "2147483648"):
        assert filter_where(everything, [f"osd_size={text}"]) == two
        assert select(everything, parse_selector(f"osd_size={text}"), {}) == two
    assert filter_where(everything, ["pool_size=3"]) == four
    assert filter_where(everything, ["cephfs=yes"]) == four
    assert filter_where(everything, ["cephfs=no"]) == two  # a Ceph lab without CephFS; the local case has none
    assert match.unknown_keys(["osd_size", "pool_size", "cephfs", "run", "tag", "bs"], everything) == []
    assert match.unknown_keys(["pool_size"], local) == ["pool_size"]
    # a float option (lab.ceph.config) is stored as Ceph reads it ("0.0"): 0 and 0.00 name it, as written
    asleep = _three(case_id="asleep", lab="lab=ceph osd_recovery_sleep=0.1")
    awake = _three(case_id="awake", lab="lab=ceph osd_recovery_sleep=0.0")
    for text in ("0", "0.0", "0.00"):
        assert filter_where([*asleep, *awake], [f"osd_recovery_sleep={text}"]) == awake
    assert select([*asleep, *awake], parse_selector("osd_recovery_sleep=0.1"), {}) == asleep


def test_where_unknown_field_is_a_user_error_with_a_suggestion() -> None:
    with pytest.raises(UserError, match="unknown field 'iodepht'") as caught:
        filter_where(_three(), ["iodepht=1"])
    assert "iodepth" in (caught.value.hint or "")


def test_run_and_tag_in_where_and_selectors() -> None:
    first, second = _three(run_id=1), _three(run_id=2)
    tags = {1: ("before",), 2: ("after",)}
    assert filter_where([*first, *second], ["run=2"], tags) == second
    assert filter_where([*first, *second], ["tag=before"], tags) == first
    assert select([*first, *second], parse_selector("tag=after"), tags) == second


# ---------------------------------------------------------------------------------------------------------------
# One point label


def test_point_label_parts_and_order() -> None:
    mixed = observation(target="nvme", rw="randrw", rwmixread=70, iodepth=16, numjobs=4, clients=2,
                        fio_options="rate_iops=100", lab="lab=ceph pool_size=3")
    (point,) = summarize_points([mixed])
    assert point_label(point) == "nvme randrw 70% 4k qd16 4 jobs 2 clients read"
    assert point_label(point, direction=False, options=True, lab_keys=["pool_size"]) == (
        "nvme randrw 70% 4k qd16 4 jobs 2 clients rate_iops=100 pool_size=3")
    assert point_label(point, omit=("target", "iodepth", "clients")) == "randrw 70% 4k 4 jobs read"
    (plain,) = summarize_points([observation(target="a")])
    assert point_label(plain) == "a randread 4k qd1 read"  # jobs and clients only when not 1, no mix


def test_comparison_label_leaves_out_what_the_selectors_name() -> None:
    base = _three(case_id="x", target="a", iodepth=1)
    cand = [observation(case_id="y", target="a", iodepth=16, repeat=i, iops=2000.0 + i) for i in range(3)]
    (c,) = compare_observations([*base, *cand], parse_selector("iodepth=1"), parse_selector("iodepth=16"), {})
    assert comparison_label(c) == "a randread 4k read"
    other = [observation(case_id="z", target="b", repeat=i, iops=900.0 + i) for i in range(3)]
    (t,) = compare_observations([*base, *other], parse_selector("target=a"), parse_selector("target=b"), {})
    assert comparison_label(t) == "randread 4k qd1 read"


def test_curve_label_is_the_point_without_its_load_axis() -> None:
    sweep = [observation(case_id=f"q{qd}", iodepth=qd, numjobs=2, repeat=r, iops=100.0 * qd + r)
             for qd in (1, 2, 4) for r in range(2)]
    (curve,) = curves(summarize_points(sweep), "iodepth")
    assert curve_label(curve) == "a randread 4k 2 jobs read"


# ---------------------------------------------------------------------------------------------------------------
# The export record is built from the same observations statistics use


def test_metric_accessors_agree_with_the_export_record() -> None:
    o = observation(iops=1234.0, bw_bytes_per_s=5e6, lat_mean_ns=2e6, lat_p50_ns=1_000_000, lat_p99_ns=9_000_000,
                    cpu_usr_pct=3.0, cpu_sys_pct=4.0, disk_util_pct=55.0, host_cpu_busy_pct=40.0, disk_busiest="vdb",
                    disk_busiest_util_pct=80.0, disk_busiest_queue_depth=3.0, net_busiest_util_pct=12.0,
                    net_busiest_bytes_per_s=1e6, ceph_osd_cpu_cores=0.7, ceph_op_latency_ns=5e5,
                    node_cpu_busy_pct=33.0, node_busiest="node1", client_ceiling_iops=9e5, start_skew_s=0.01,
                    slowest_client="h2", slowest_client_pct_of_median=88.0, client_cpu_cores=0.4)
    (record,) = export_records([o])
    assert set(METRIC_VALUES) <= set(RECORD_FIELDS)
    for field in METRIC_VALUES:
        assert getattr(record, field) == metric_value(o, field), field
    assert (record.disk_busiest, record.node_busiest, record.slowest_client) == ("vdb", "node1", "h2")
    assert (record.bs, record.direct, record.lab, record.direction) == ("4k", True, "", "read")


def test_failed_repetition_is_one_observation_without_direction_or_numbers() -> None:
    failed = observation(status="failed", direction="", iops=None, error="fio exited with status 1")
    (record,) = export_records([failed])
    assert failed.direction is None and failed.measurement is None and not failed.ok
    assert (record.direction, record.status, record.iops, record.error) == ("", "failed", None,
                                                                              "fio exited with status 1")
    assert all(metric_value(failed, f) is None for f in ("iops", "lat_p99_ns", "host_cpu_busy_pct"))


def test_observations_of_a_stored_repetition_merge_its_clients() -> None:
    from storbench.model import StoredRepetition
    from storbench.stats.observations import observations

    output = parse_fio_json(json_after_messages((FIXTURES / "clients3-randread.jsonplus.txt").read_text()))
    clients = tuple(client_measurements_by_host(output))
    rep = StoredRepetition(repetition_id=1, run_id=1, case=observation().case, rep_index=0, status=Status.OK,
                           started_at_s=0.0, finished_at_s=1.0, fio_version=output.fio_version, error="",
                           clients=clients)
    merged = observations([rep])
    assert [o.client for o in merged] == [""]
    (expected,) = merge_clients(clients)
    assert merged[0].measurement == expected and merged[0].fio.reporting == 3
    per_client = observations([rep], per_client=True)
    assert [o.client for o in per_client] == ["", *(c.client for c in clients)]
    assert [p.repetitions_total for p in summarize_points(per_client)] == [1]  # a client's own is not a point


# ---------------------------------------------------------------------------------------------------------------
# Commands


def test_report_reads_the_store_once_and_where_direct_yes_works(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import storbench.selection
    import storbench.store

    db = tmp_path / "r.db"
    code, _, err = run_cli(capsys, "import", str(FIXTURES / "randrw-numjobs2.jsonplus.json"), "--db", str(db))
    assert code == 0, err
    opened: list[object] = []
    real_open = storbench.store.open_store

    def counting_open(*args: object, **kwargs: object) -> object:
        opened.append(args)
        return real_open(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(storbench.store, "open_store", counting_open)
    monkeypatch.setattr(storbench.selection, "open_store", counting_open)  # selection's own name for it
    code, _, err = run_cli(capsys, "report", "--db", str(db), "-o", str(tmp_path / "r.html"), "--run", "all")
    assert code == 0, err
    assert len(opened) == 1
    assert (tmp_path / "r.html").stat().st_size > 0
    code, out, err = run_cli(capsys, "export", "--db", str(db), "--where", "direct=yes", "--format", "csv")
    code_no, out_no, err_no = run_cli(capsys, "export", "--db", str(db), "--where", "direct=no", "--format", "csv")
    # exactly one of them matches; the other says so in one line, as show does (it wrote an empty file, exit 0)
    assert sorted((code, code_no)) == [0, 2], (err, err_no)
    assert "no results match direct=" in (err if code else err_no)
    assert len((out if code == 0 else out_no).splitlines()) > 1


def test_every_export_field_is_a_where_key() -> None:
    assert set(RECORD_FIELDS) - set(PLAN_FIELDS) <= set(match.FIELDS)  # but those read against the plan
    o = observation(iops=1234.0, lat_p99_ns=9_000_000, disk_busiest="vdb", disk_busiest_util_pct=80.0)
    (record,) = export_records([o])
    for field in (f for f in RECORD_FIELDS if f not in PLAN_FIELDS):  # each value, as export writes it, selects it
        value = getattr(record, field)
        pairs = isinstance(value, tuple)
        text = "" if value is None else " ".join(f"{k}={v}" for k, v in value) if pairs else str(value)
        assert match.matches(o, field, text, {}), (field, text)


def test_the_slowest_client_is_measured_against_the_others() -> None:
    """Two clients at 40 and 100 IOPS: the slow one did 40 % of the other's (counted in its own median, 57 %, it was
    never a straggler of two unless the other was three times as fast); of three, against the others' median."""
    from storbench.model import ClientMeasurement, Direction, DirectionMeasurement, LatencySummary
    from storbench.stats.observations import slowest_client

    def client(name: str, iops: float) -> ClientMeasurement:
        lat = LatencySummary(samples=1, min_ns=1, max_ns=1, mean_ns=1.0, stddev_ns=0.0)
        read = DirectionMeasurement(direction=Direction.READ, total_ios=int(iops), io_bytes=0, runtime_ms=1000,
                                    iops=iops, bw_bytes_per_s=0.0, clat=lat, lat=lat)
        return ClientMeasurement(client=name, jobs=1, job_errors=(), cpu_usr_pct=0.0, cpu_sys_pct=0.0,
                                 directions=(read,))

    name, pct = slowest_client([client("a", 40.0), client("b", 100.0)])
    assert name == "a" and pct == pytest.approx(40.0)
    name, pct = slowest_client([client("a", 100.0), client("b", 50.0), client("c", 120.0)])
    assert name == "b" and pct == pytest.approx(50.0 / 110.0 * 100)
