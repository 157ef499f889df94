"""`storbench show --format table|json|csv|markdown`: the point summaries in machine-readable form.

Pure tests on a fixed summary, then every format against a real small fio run, checked against `export`.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from pathlib import Path

import pytest

from helpers import inside, run_cli, write_plan
from storbench.model import Case, CephLabPoint, Direction, LabPoint, PathTarget, WorkloadPoint
from storbench.report.show_export import SHOW_FIELDS, points_csv, points_json, points_markdown, show_text
from storbench.stats.bottleneck import Bottleneck, BottleneckVerdict
from storbench.stats.estimate import Estimate
from storbench.stats.point_summary import PointSummary
from storbench.stats.point_warnings import StatWarning
from storbench.stats.summary import SUMMARY_FIELDS


def _point(direction: str = "read", warnings: tuple[StatWarning, ...] = ()) -> PointSummary:
    lab = LabPoint(ceph=CephLabPoint(osds=3, osd_size_bytes=1 << 30, objectstore="bluestore", pool_size=2))
    case = Case("c0ffee", PathTarget("nvme", "/mnt/nvme", 1 << 30),
                WorkloadPoint(rw="randread", bs_bytes=4096, iodepth=16, numjobs=1, runtime_s=10.0, ramp_s=2.0,
                              direct=True, ioengine="libaio"), lab=lab)
    return PointSummary(
        case=case, direction=Direction(direction), run_ids=(1, 2),
        fio_versions=("fio-3.33",), repetitions_ok=3, repetitions_total=3,
        estimates=(
            ("iops", Estimate(n=3, mean=1000.0, stddev=50.0, ci_low=875.8, ci_high=1124.2)),
            ("bw_bytes_per_s", Estimate(n=3, mean=4096000.0, stddev=204800.0, ci_low=3587000.0, ci_high=4605000.0)),
            ("lat_mean_ns", Estimate(n=3, mean=16000.0, stddev=800.0, ci_low=14000.0, ci_high=18000.0)),
            ("lat_p99_ns", Estimate(n=3, mean=50000.0, stddev=2500.0, ci_low=43800.0, ci_high=56200.0)),
            ("disk_util_pct", Estimate(n=1, mean=97.0, stddev=0.0, ci_low=None, ci_high=None)),
        ),
        warnings=warnings, last_error="", process_cpu_cores=(("fio", 0.52),), busiest_device="nvme0n1",
        bottleneck=BottleneckVerdict(Bottleneck.MEDIA, "nvme0n1 busy 97 % of the window", in_flight=15.9, slots=16),
    )


HIGH_CV = StatWarning("high_cv", "CV 12 % > 5 %", "add repetitions or lengthen runtime; or both")
POINTS = [_point(warnings=(HIGH_CV,)), _point("write")]


def test_json_carries_every_summary_number_with_units_in_the_names() -> None:
    rows = json.loads(points_json(POINTS))
    assert len(rows) == 2
    first = rows[0]
    assert first["iops"] == 1000.0 and first["iops_n"] == 3 and first["iops_stddev"] == 50.0
    assert (first["iops_ci_low"], first["iops_ci_high"]) == (875.8, 1124.2)
    assert first["iops_cv_pct"] == pytest.approx(5.0)
    assert first["lat_p99_ns"] == 50000.0 and first["lat_mean_ns_ci_high"] == 18000.0
    assert first["disk_util_pct"] == 97.0 and first["disk_util_pct_ci_low"] is None  # n=1: no interval
    assert first["disk_util_pct_cv_pct"] is None
    assert first["lat_p50_ns"] is None and first["lat_p50_ns_n"] is None  # not measured: null, key still there
    assert first["ci_confidence"] == 0.95
    assert first["bottleneck"] == "media-bound" and first["bottleneck_evidence"] == "nvme0n1 busy 97 % of the window"
    assert first["bottleneck_in_flight"] == 15.9 and first["bottleneck_slots"] == 16
    assert first["warnings"] == [{"code": "high_cv", "message": "CV 12 % > 5 %",
                                  "fix": "add repetitions or lengthen runtime; or both"}]
    assert rows[1]["warnings"] == []
    assert first["lab"] == {"lab": "ceph", "objectstore": "bluestore", "osd_size": "1073741824", "osds": "3",
                            "pool_size": "2"} and first["run_ids"] == [1, 2]
    assert first["process_cpu_cores"] == {"fio": 0.52}
    assert set(first) == set(SHOW_FIELDS) - {"warning_text"}
    for metric in SUMMARY_FIELDS:
        assert {metric, f"{metric}_n", f"{metric}_ci_low", f"{metric}_ci_high", f"{metric}_cv_pct"} <= set(first)


def test_csv_has_a_header_and_one_row_per_point() -> None:
    text = points_csv(POINTS)
    reader = csv.DictReader(io.StringIO(text))
    assert tuple(reader.fieldnames or ()) == SHOW_FIELDS
    rows = list(reader)
    assert len(rows) == 2 and [r["direction"] for r in rows] == ["read", "write"]
    assert float(rows[0]["iops"]) == 1000.0 and float(rows[0]["iops_ci_high"]) == 1124.2
    assert rows[0]["disk_util_pct_ci_low"] == ""  # None is an empty cell
    assert rows[0]["warnings"] == "high_cv"
    assert rows[0]["warning_text"] == "CV 12 % > 5 %: add repetitions or lengthen runtime; or both"
    assert rows[0]["lab"] == "lab=ceph objectstore=bluestore osd_size=1073741824 osds=3 pool_size=2"
    assert rows[0]["run_ids"] == "1 2"
    assert rows[0]["bottleneck"] == "media-bound" and rows[1]["warnings"] == ""


def test_markdown_is_a_table_with_verdicts_warnings_and_notes() -> None:
    text = points_markdown(POINTS, "run 1 — r.db", notes=["⚠ run 1: read IOPS drifted -9.0 %"])
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| point |"))
    rows = lines[header + 2: header + 4]
    assert len(rows) == 2 and all(r.startswith("| nvme randread 4k qd16") for r in rows)
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[1:5] == ["read", "3/3", "1,000 ± 124", "5.0%"]
    assert "media" in rows[0] and "high_cv" in rows[0]
    assert "- nvme randread 4k qd16: media-bound — nvme0n1 busy 97 % of the window" in lines
    assert any(line.startswith("- run-to-run spread (CV) shown above 5 %") and line.endswith("or both")
               for line in lines)
    assert "- run 1: read IOPS drifted -9.0 %" in lines
    assert all(line.count("|") == lines[header].count("|") for line in rows)


def test_markdown_escapes_pipes_in_cells() -> None:
    point = _point(warnings=(StatWarning("a|b", "m", "f"),))
    row = next(line for line in points_markdown([point], "t").splitlines() if line.startswith("| nvme"))
    assert "a\\|b" in row


def test_show_text_dispatches_and_refuses_the_table() -> None:
    assert show_text(POINTS, "json", "t") == points_json(POINTS)
    assert show_text(POINTS, "csv", "t") == points_csv(POINTS)
    assert show_text(POINTS, "markdown", "t") == points_markdown(POINTS, "t")
    with pytest.raises(ValueError):
        show_text(POINTS, "table", "t")  # the table is rich's, printed by the CLI


# ---- against a real run ----------------------------------------------------------------------------------

PLAN = """
name: showfmt
targets:
  scratch: {kind: path, path: ./data, size: 4MiB}
workload:
  rw: [randread, randrw]
  bs: 4k
  iodepth: 2
  runtime: 1s
repeat: 2
"""


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from storbench.cli import main

    work = tmp_path_factory.mktemp("show")
    plan = write_plan(work, PLAN)
    with inside(work):
        assert main(["run", str(plan), "--db", str(work / "r.db")]) == 0
    return work / "r.db"


def _export_means(capsys: pytest.CaptureFixture[str], db: Path) -> dict[tuple[str, str], dict[str, object]]:
    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    assert code == 0
    by_point: dict[tuple[str, str], list[dict[str, object]]] = {}
    for record in json.loads(out):
        if record["status"] == "ok":
            by_point.setdefault((record["case_id"], record["direction"]), []).append(record)
    means: dict[tuple[str, str], dict[str, object]] = {}
    for key, records in by_point.items():
        means[key] = {"n": len(records)}
        for field in ("iops", "bw_bytes_per_s", "lat_mean_ns", "lat_p50_ns", "lat_p99_ns", "cpu_usr_pct"):
            values = [float(r[field]) for r in records]  # type: ignore[arg-type]
            means[key][field] = sum(values) / len(values)
    return means


@pytest.mark.fio
def test_show_json_agrees_with_export(stored_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "show", "--db", str(stored_run), "--format", "json")
    assert code == 0 and err == ""
    rows = json.loads(out)
    expected = _export_means(capsys, stored_run)
    assert len(rows) == len(expected) == 3  # randread: read; randrw: read and write
    for row in rows:
        want = expected[(row["case_id"], row["direction"])]
        assert row["iops_n"] == want["n"] == 2
        for field in ("iops", "bw_bytes_per_s", "lat_mean_ns", "lat_p50_ns", "lat_p99_ns", "cpu_usr_pct"):
            # both rounded to what they mean (export_number): IOPS to 0.1, ns to integers
            assert math.isclose(row[field], want[field], rel_tol=1e-5, abs_tol=1.0), field
        assert row["iops_ci_low"] <= row["iops"] <= row["iops_ci_high"]
        assert row["bottleneck"] and row["bottleneck_evidence"]
        assert {w["code"] for w in row["warnings"]} >= {"few_repetitions"}  # repeat: 2


@pytest.mark.fio
def test_show_csv_has_a_header_and_a_row_per_point(stored_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "show", "--db", str(stored_run), "--format", "csv")
    assert code == 0
    reader = csv.DictReader(io.StringIO(out))
    assert tuple(reader.fieldnames or ()) == SHOW_FIELDS
    rows = list(reader)
    expected = _export_means(capsys, stored_run)
    assert len(rows) == len(expected) == 3
    for row in rows:
        want = expected[(row["case_id"], row["direction"])]
        assert math.isclose(float(row["lat_p99_ns"]), float(want["lat_p99_ns"]), rel_tol=1e-5, abs_tol=1.0)  # type: ignore[arg-type]
        assert math.isclose(float(row["iops"]), float(want["iops"]), rel_tol=1e-5, abs_tol=1.0)  # type: ignore[arg-type]
        assert "few_repetitions" in row["warnings"].split()


@pytest.mark.fio
def test_show_markdown_and_the_default_table(stored_run: Path, capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    code, table, _ = run_cli(capsys, "show", "--db", str(stored_run))
    assert code == 0
    assert run_cli(capsys, "show", "--db", str(stored_run), "--format", "table")[1] == table  # the default
    assert "IOPS ± 95% CI" in table and "| point |" not in table
    code, out, _ = run_cli(capsys, "show", "--db", str(stored_run), "--format", "markdown", "--where", "rw=randrw")
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("| scratch")]
    assert len(rows) == 2 and all("randrw" in r for r in rows)
    assert "Warnings:" in out and "fewer than 3 repetitions" in out
    target = tmp_path / "show.md"
    code, out, _ = run_cli(capsys, "show", "--db", str(stored_run), "--format", "markdown", "-o", str(target))
    assert code == 0 and out == "" and target.read_text().count("| scratch") == 3


@pytest.mark.fio
def test_show_format_errors_are_one_line(stored_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "show", "--db", str(stored_run), "--format", "json", "--where", "rw=write")
    assert code == 2 and out == "" and err.startswith("storbench: error: no results match rw=write; stored values: ")
    assert "randrw" in err  # the values the field has, to choose from
    code, _, err = run_cli(capsys, "show", "--db", str(stored_run), "--format", "yaml")
    assert code == 2 and "invalid choice: 'yaml'" in err


def test_the_compare_table_fits_a_narrow_terminal_without_cutting_a_number() -> None:
    """At 80 columns the compare table drops what is least essential and wraps a change between its words: every
    word of every cell of the full table's kept columns is still there whole."""
    from rich.console import Console

    from storbench.report.compare_tables import compare_table
    from storbench.stats.compare_match import compare_points
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    def side(run_id: int, iops: tuple[float, ...], lat: tuple[float, ...]) -> list[PointSummary]:
        return summarize_points([observation(run_id=run_id, target="a-rather-long-target-name", case_id=f"c{run_id}",
                                             repeat=i, iops=v, lat_mean_ns=m, lat_p99_ns=int(3 * m),
                                             lat_p95_ns=int(2 * m), bw_bytes_per_s=v * 4096)
                                 for i, (v, m) in enumerate(zip(iops, lat, strict=True))])

    comparisons = compare_points(side(1, (1000.0, 1300.0, 700.0), (1.1e6, 0.9e6, 1.4e6)),
                                 side(2, (90_000.0, 120_000.0, 75_000.0), (12e6, 17e6, 9.5e6)), frozenset())

    def render(width: int | None) -> str:
        console = Console(width=width or 400, record=True, file=io.StringIO(), color_system=None)
        console.print(compare_table(comparisons, "run=1", "run=2", width))
        return console.export_text()

    narrow, full = render(80), render(None)
    assert max(len(line) for line in narrow.splitlines()) <= 80, narrow
    assert "…" not in narrow, narrow
    header = next(line for line in narrow.splitlines() if "point" in line)
    kept = [name for name in ("IOPS base", "IOPS cand", "bandwidth", "mean lat", "p95", "p99") if name in header]
    assert "p99" in kept and "bandwidth" not in kept  # the essential stay, the least essential went first
    p99_change = next(line for line in full.splitlines() if "a-rather-long" in line).split("│")[-3].split()
    assert p99_change and all(word in narrow for word in p99_change), (p99_change, narrow)


def _noisy_point() -> PointSummary:
    noisy = (
        ("iops", Estimate(n=3, mean=12962.185574000001, stddev=50.123456789, ci_low=12837.000000000002,
                          ci_high=13087.371148)),
        ("bw_bytes_per_s", Estimate(n=3, mean=53093112.1234567, stddev=204800.4, ci_low=52000000.6,
                                    ci_high=54186224.9)),
        ("lat_p99_ns", Estimate(n=3, mean=50000.33333333333, stddev=2500.1, ci_low=43800.7, ci_high=56200.2)),
        ("disk_util_pct", Estimate(n=3, mean=97.12345678, stddev=0.3, ci_low=96.4, ci_high=97.8)),
    )
    return dataclasses.replace(_point(), estimates=noisy)


def test_exports_round_numbers_to_what_they_mean() -> None:
    """No float noise in show's JSON and CSV: IOPS to 0.1, ns and bytes to integers, percentages to 0.01,
    integers exact (12962.185574000001 was in the CSV)."""
    row = json.loads(points_json([_noisy_point()]))[0]
    assert row["iops"] == 12962.2 and row["iops_ci_low"] == 12837.0 and row["iops_stddev"] == 50.1
    assert row["bw_bytes_per_s"] == 53093112 and isinstance(row["bw_bytes_per_s"], int)
    assert row["lat_p99_ns"] == 50000 and row["lat_p99_ns_ci_high"] == 56200
    assert row["disk_util_pct"] == 97.12 and row["iops_n"] == 3 and row["bottleneck_slots"] == 16
    text = points_csv([_noisy_point()])
    assert "12962.2," in text and "0000000" not in text.replace("53093112", "") and "999999" not in text
    cells = next(csv.DictReader(io.StringIO(text)))
    assert cells["iops_cv_pct"] == str(round(100 * 50.123456789 / 12962.185574000001, 2))


def test_export_number_keeps_integers_and_rounds_by_field() -> None:
    from storbench.report.export import export_number, export_row

    assert export_number("iops", 12962.185574000001) == 12962.2
    assert export_number("iops", 0.123456789) == 0.123457  # few IOPS (creates/s): six significant digits
    assert export_number("ios_per_s", 0.00042) == 0.00042  # a rate per second below 1, not seconds (was 0.0)
    assert export_number("lat_mean_ns", 333123.6) == 333124 and export_number("total_ios", 2**62 + 1) == 2**62 + 1
    assert export_number("change_ci_low_pct", -9.345678) == -9.35
    assert export_number("started_at_s", 1764081234.123456) == 1764081234.123
    assert export_number("start_skew_s", 0.0004) == 0.0004  # the clients' skew: 400 µs had become 0.0
    assert export_number("start_skew_s_stddev", 0.000123456789) == 0.000123457
    assert export_number("disk_busiest_queue_depth", 12.3456789012) == 12.3457  # no unit: six significant digits
    assert export_number("cpu_usr_pct", 12.3456789012) == 12.35  # fio's CPU percentages as every other percentage
    assert math.isnan(export_number("iops", math.nan))  # type: ignore[arg-type]
    row = export_row({"metric": "lat_p99_ns", "baseline_mean": 1234.5678, "baseline_ci_low": 1000.4,
                      "baseline_n": 3, "change_pct": 1.23456}, metric="lat_p99_ns")
    assert row == {"metric": "lat_p99_ns", "baseline_mean": 1235, "baseline_ci_low": 1000, "baseline_n": 3,
                   "change_pct": 1.23}


def test_export_records_carry_no_float_noise_in_json_csv_or_markdown() -> None:
    """`export`'s records go through the same rounding: IOPS to 0.1, latencies in ns to integers."""
    from storbench.records import export_records
    from storbench.report.export import export
    from synthetic import observation

    rows = [observation(case_id="c", repeat=rep, iops=12962.185574000001 + rep, lat_mean_ns=77123.45678901,
                        host_cpu_busy_pct=37.123456789) for rep in range(2)]
    records = export_records(rows)
    first = json.loads(export(records, "json"))[0]
    assert first["iops"] == 12962.2 and first["lat_mean_ns"] == 77123 and first["host_cpu_busy_pct"] == 37.12
    assert first["ios_per_s"] == 12962.2  # a rate per second, not seconds
    assert first["total_ios"] == records[0].total_ios  # integers exact
    for fmt in ("csv", "markdown"):
        text = export(records, fmt)
        assert "12962.2" in text and "12962.18" not in text and "77123.4" not in text, fmt


def test_the_compare_table_counts_file_creates_as_operations() -> None:
    """Creates compared between two runs are ops/s, not IOPS, in the table's headers."""
    from rich.console import Console

    from storbench.report.compare_tables import compare_table
    from storbench.stats.compare_match import compare_points
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    def side(run_id: int, iops: tuple[float, ...]) -> list[PointSummary]:
        return summarize_points([observation(run_id=run_id, case_id=f"c{run_id}", rw="create", direction="write",
                                             repeat=i, iops=v) for i, v in enumerate(iops)])

    comparisons = compare_points(side(1, (1000.0, 1100.0, 900.0)), side(2, (1500.0, 1400.0, 1600.0)), frozenset())
    console = Console(width=400, record=True, file=io.StringIO(), color_system=None)
    console.print(compare_table(comparisons, "run=1", "run=2"))
    header = next(line for line in console.export_text().splitlines() if "cand" in line and "candidate" not in line)
    assert "ops/s base" in header and "ops/s cand" in header and "IOPS" not in header


@pytest.mark.parametrize(("patterns", "unit"), [(("create", "stat"), "ops/s"), (("randread",), "IOPS"),
                                                 (("create", "randread"), "IOPS/ops/s")])
def test_the_terminal_table_and_the_reports_summary_name_one_rate_unit(patterns: tuple[str, ...], unit: str) -> None:
    """Points of file operations only are ops/s in `show`'s table as in the report's summary and its compare and
    saturation tables (`show` had said IOPS/ops/s for creates alone); a mix with block I/O names both."""
    from rich.console import Console

    from storbench.report.labels import rate_unit
    from storbench.report.summary_table import summary_table
    from storbench.report.tables import results_table
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    points = summarize_points([observation(case_id=rw, rw=rw, direction="read", repeat=i, iops=100.0 + i)
                               for rw in patterns for i in range(3)])
    console = Console(width=400, record=True, file=io.StringIO(), color_system=None)
    console.print(results_table(points, "t"))
    shown, summary = console.export_text(), summary_table(points)
    assert rate_unit(p.rw for p in points) == unit
    for text in (shown, summary):
        assert f"{unit} ± 95% CI" in text and (unit == "IOPS/ops/s" or "IOPS/ops/s" not in text), text


def test_a_column_of_unknown_verdicts_says_why_once() -> None:
    """Points without telemetry of the machines all read "?": one line under the table says why, once (the verdict
    lines only spoke when some point had a verdict); a point "?" for a fault in every repetition says that."""
    from rich.console import Console

    from storbench.cli.results import _print_points
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    def shown(**telemetry: object) -> str:
        points = summarize_points([observation(repeat=i, iops=1000.0 + i, lat_mean_ns=1e6, **telemetry)
                                   for i in range(3)])
        console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
        _print_points(points, "t", console)
        return console.export_text()

    blind = shown()
    assert "│ ?" in blind and blind.count("verdict ?: no telemetry for this point (imported, or telemetry off)") == 1, \
        blind
    seen = shown(host_cpu_busy_pct=20.0, host_cpu_iowait_pct=0.0, host_cpu_pressure_pct=0.0)
    assert "verdict ?:" not in seen and "bottlenecks (rules" in seen, seen


def test_rows_of_several_runs_say_their_run_under_the_table() -> None:
    """`show --run all` has a row per run: the lines under the table had named two runs' rows of one case alike
    ("rbd randwrite 4k qd16 ...: cpu-bound" twice, with other figures) and counted "4 points" of 8 rows."""
    from storbench.report.tables import verdict_lines
    from storbench.report.warning_text import warning_lines
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    seen = [observation(run_id=run, repeat=r, iops=1000.0 * run + 400 * r, host_cpu_busy_pct=95.0 if run == 1
                        else 10.0) for run in (1, 2) for r in range(3)]
    rows = summarize_points(seen, by_run=True)
    assert [p.run_ids for p in rows] == [(1,), (2,)]
    verdicts = verdict_lines(rows)
    assert [line.split(":")[0] for line in verdicts] == ["run 1", "run 2"], verdicts
    assert "cpu-bound" in verdicts[0] and "cpu-bound" not in verdicts[1], verdicts
    assert any("at 2 points (worst run " in line for line in warning_lines(rows)), warning_lines(rows)
    assert not verdict_lines(summarize_points(seen, by_run=True)[:1])[0].startswith("run ")  # one run: no prefix
    # the Markdown table's rows and `show --cost`'s say their run too (two rows had read alike)
    from rich.console import Console

    from storbench.report.cost import cost_table, cost_table_html
    from storbench.report.show_export import points_markdown

    rows_md = [line for line in points_markdown(rows, "t").splitlines() if line.startswith("| run ")]
    assert [line.split(":")[0] for line in rows_md] == ["| run 1", "| run 2"], points_markdown(rows, "t")
    costly = summarize_points([observation(run_id=run, repeat=r, iops=1000.0 * run, host_cpus=8, host_cpu_busy_pct=60.0,
                                           process_cpu_cores=(("fio", 0.5 * run),))
                               for run in (1, 2) for r in range(3)], by_run=True)
    console = Console(record=True, width=300)
    console.print(cost_table(costly, "t"))
    text, html = console.export_text(), cost_table_html(costly)
    assert "run 1: " in text and "run 2: " in text and "run 1: " in html and "run 2: " in html, text


def test_the_report_says_when_its_rows_pool_runs_of_several_machines() -> None:
    """The report pools a point's runs; runs of two machines (a merged store) had been pooled with nothing said."""
    from storbench.model import RunInfo
    from storbench.report.build import _hosts_line
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    def run(run_id: int, host: str) -> RunInfo:
        return RunInfo(run_id=run_id, plan_name="p", plan_text="", source="run", storbench_version="0",
                       fio_version="", host=host, kernel="k", run_order="interleaved", seed=0, tags=(),
                       started_at_s=0.0, finished_at_s=1.0)

    pooled = summarize_points([observation(run_id=r, repeat=i, iops=1000.0 + i) for r in (1, 2) for i in range(3)])
    assert _hosts_line(pooled, [run(1, "vm"), run(2, "vm2")]) == (
        "note: rows pool runs of 2 machines (vm, vm2): each machine's level is in the row's interval; `storbench "
        "show --run all` gives a row per run")
    assert _hosts_line(pooled, [run(1, "vm"), run(2, "vm")]) is None


def test_a_case_run_with_faults_is_told_from_the_same_workload_without() -> None:
    """A plan with faults gives its cases a timeline (their own case id); pooled with a plain run of the same workload
    (report, `--baseline/--candidate` over all runs) the two rows read alike, a bar of one hid the other's and a
    line joined both into one zigzag."""
    from dataclasses import replace

    from storbench.report.labels import point_label
    from storbench.report.point_figures import block_size_figures
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    plain = [observation(case_id=f"p{bs}", run_id=1, repeat=r, iops=1000.0 + r, bs_bytes=bs)
             for r in range(3) for bs in (4096, 8192)]
    faulted = [replace(o, case=replace(o.case, case_id=f"f{o.case.workload.bs_bytes}",
                                       workload=replace(o.case.workload, timeline_window_ms=100)))
               for o in (observation(run_id=2, repeat=r, iops=400.0 + r, bs_bytes=bs)
                         for r in range(3) for bs in (4096, 8192))]
    points = summarize_points([*plain, *faulted])
    labels = {point_label(p) for p in points}
    assert labels == {"a randread 4k qd1 read", "a randread 8k qd1 read", "a randread 4k qd1 with faults read",
                      "a randread 8k qd1 with faults read"}, labels
    (figure, _) = block_size_figures(points)
    assert sorted(s.y[0] // 100 for s in figure.series) == [4, 10], figure.series  # both, one bar each


def test_an_intervals_half_width_keeps_its_digits_and_never_turns_to_an_exponent() -> None:
    """150,000 IOPS with a half-width of 0.38 printed "150,000 ± 0" (no interval seen); 50 ops/s with one of 99,
    and a wide one of 508, printed "± 5.1e+02"."""
    from storbench.report.tables import iops_with_ci
    from storbench.stats.estimate import estimate

    assert iops_with_ci(estimate([150_000.0, 150_000.1, 150_000.3])) == "150,000 ± 0.38"
    assert iops_with_ci(estimate([50.0, 10.0, 90.0])) == "50 ± 99"
    from storbench.stats.estimate import Estimate

    edge = Estimate(n=3, mean=1100.0, stddev=40.0, ci_low=1000.3, ci_high=1199.7, confidence=0.95)
    assert iops_with_ci(edge) == "1,100 ± 99.7", iops_with_ci(edge)  # a half-width of 99.7 had read "± 1e+02"
    wide = iops_with_ci(estimate([50.0, 10.0, 400.0]))
    assert "e+" not in wide and wide.startswith("153 ± "), wide

