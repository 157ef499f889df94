"""compare, saturation and the HTML report on real stored runs; the report opened in headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import inside, run_cli, write_plan
from storbench.report.figures import FigureSpec, Series
from storbench.report.html import ReportDocument, render_html

pytestmark = pytest.mark.fio

PLAN = """
name: ratelimit
targets:
  disk: {kind: path, path: ./data, size: 8MiB}
workload:
  rw: randread
  bs: 4k
  iodepth: [1, 16]
  runtime: 1s
  direct: false
  fio: {rate_iops: [0, 300]}
repeat: 3
tags: [report-test]
"""
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--virtual-time-budget=15000"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from storbench.cli import main

    work = tmp_path_factory.mktemp("report")
    plan = write_plan(work, PLAN)
    with inside(work):
        assert main(["run", str(plan), "--db", str(work / "r.db")]) == 0
    return work / "r.db"


def test_compare_finds_the_rate_limit_as_a_regression(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "compare", "--db", str(db), "--baseline", "fio_options=rate_iops=0",
                             "--candidate", "fio_options=rate_iops=300", "--format", "json")
    assert code == 0, err
    rows = json.loads(out)
    iops = [r for r in rows if r["metric"] == "iops"]
    assert len(iops) == 2  # one per iodepth
    for row in iops:
        assert row["verdict"] == "worse"
        assert row["candidate_mean"] == pytest.approx(300, rel=0.1)
        assert row["change_ci_high_pct"] < 0
    code, _, err = run_cli(capsys, "compare", "--db", str(db), "--baseline", "fio_options=rate_iops=0",
                           "--candidate", "fio_options=rate_iops=300", "--fail-on-regression", "10")
    assert code == 1 and "regression" in err
    code, out, _ = run_cli(capsys, "compare", "--db", str(db), "--baseline", "fio_options=rate_iops=0",
                           "--candidate", "fio_options=rate_iops=300", "--format", "markdown")
    assert code == 0 and out.count("▼") >= 3 and "| point |" in out
    code, out, _ = run_cli(capsys, "compare", "--db", str(db), "--baseline", "fio_options=rate_iops=0",
                           "--candidate", "fio_options=rate_iops=300", "--format", "csv")
    assert code == 0 and out.splitlines()[0].startswith("point,direction,metric")


def test_comparison_pairs_like_workloads_on_real_runs(db: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # like pairs with like (unlimited with unlimited) ...
    code, out, _ = run_cli(capsys, "compare", "--db", str(db), "--baseline", "iodepth=1", "--candidate",
                           "iodepth=16", "--format", "json")
    rows = json.loads(out)
    assert code == 0 and len([r for r in rows if r["metric"] == "iops"]) == 2  # unlimited and limited
    assert not any(r["verdict"] == "x" for r in rows)
    limited = [r for r in rows if r["metric"] == "iops" and abs(r["baseline_mean"] - 300) < 30]
    assert len(limited) == 1 and abs(limited[0]["candidate_mean"] - 300) < 30
    # (a pair without a like partner is marked "x": tests/test_stats.py covers it on synthetic records)


def test_bad_selector_is_one_line(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "compare", "--db", str(db), "--baseline", "iodepht=1", "--candidate", "iodepth=4")
    assert code == 2 and "did you mean 'iodepth'?" in err and len(err.strip().splitlines()) == 1


def test_saturation_with_an_objective(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "saturation", "--db", str(db), "--slo", "p99<=10s")
    assert code == 0, err
    assert out.count("randread") >= 2 and "max IOPS with p99 <= 10s" in out


def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("chromium is not installed (scripts/setup.sh --dev installs it)")
    return path


def _report_status(html_file: Path, profile: Path) -> dict[str, object]:
    done = subprocess.run([_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1400,2400",
                           "--dump-dom",
                           html_file.as_uri()], capture_output=True, text=True, timeout=120, check=False)
    marker = 'data-report-status="'
    start = done.stdout.find(marker)
    assert start >= 0, f"the report never finished rendering: {done.stderr[-500:]}"
    raw = done.stdout[start + len(marker): done.stdout.find('"', start + len(marker))]
    status: dict[str, object] = json.loads(raw.replace("&quot;", '"').replace("&amp;", "&"))
    return status


def test_report_renders_every_figure_in_chromium(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report.html"
    images = tmp_path / "images"
    code, _, err = run_cli(capsys, "report", "--db", str(db), "-o", str(report), "--images", str(images),
                           "--baseline", "fio_options=rate_iops=0", "--candidate", "fio_options=rate_iops=300",
                           "--slo", "p99<=5ms")
    assert code == 0, err
    text = report.read_text()
    markup = re.sub(r"<script[^>]*>.*?</script>", "", text, flags=re.S)
    assert "<script src" not in text[:2000] and "http" not in markup  # nothing to fetch: opens offline
    assert "[global]" in text and "rate_iops=300" in text  # provenance: the exact job files
    # utilisation beside performance: the bottleneck table and the utilisation figures
    assert "<h2>Bottlenecks</h2>" in text and "host CPU" in text
    # the summary's warnings (its last column) wrap rather than run past the card at 1400 px
    assert "<table class='data summary'>" in text and "table.summary td:last-child" in text
    # one heading per section: the comparison's bars sit under its table, the curves under theirs
    assert text.count("<h2>Comparison</h2>") == 1 and text.count("<h2>Saturation</h2>") == 1
    assert text.index("id='compare-iops'") > text.index("<h2>Comparison</h2>")
    for figure_id in ("utilisation-vs-iodepth", "iops-vs-iodepth", "process-cpu"):
        assert f"id='{figure_id}'" in text, figure_id
    # the rate-limited points ask for 300 IOPS of the page cache: nothing saturated, the queue far from full
    verdicts = dict(re.findall(r"<tr><td>(disk randread 4k qd\d+ rate_iops=\d+)</td><td[^>]*>([a-z -]+)</td>", text))
    assert len(verdicts) == 4, verdicts
    assert {v for k, v in verdicts.items() if k.endswith("rate_iops=300")} == {"not saturated"}
    # lean: plotly.js once, gzip-compressed (unpacked by the browser), the figures' shared template once
    assert len(text) < 3_000_000 and text.count("id='plotly-gz'") == 1 and "* plotly.js v" not in text
    assert text.count('"colorway"') == 1 and '"template"' not in text
    status = _report_status(report, tmp_path / "profile")
    assert status["errors"] == [] and status["empty"] == []
    assert status["width"] == 1400 and status["overflow"] == []  # the summary fits: no sideways scroll at 1,400 px
    assert isinstance(status["figures"], int) and status["figures"] >= 6
    assert status["rendered"] == status["figures"]
    pngs = sorted(images.glob("*.png"))
    assert len(pngs) == status["figures"] and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert len(list(images.glob("*.svg"))) == len(pngs)
    screenshot_dir = Path(os.environ.get("STORBENCH_SCREENSHOTS", tmp_path))
    screenshot_dir.mkdir(parents=True, exist_ok=True)
    shot = screenshot_dir / "report.png"
    subprocess.run([_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile2'}", "--hide-scrollbars",
                    "--window-size=1400,2400", f"--screenshot={shot}", report.as_uri()], capture_output=True,
                   timeout=120, check=False)
    assert shot.exists() and shot.stat().st_size > 50_000


def test_the_status_probe_catches_errors_and_empty_charts(tmp_path: Path) -> None:
    """The check above must be able to fail: a broken figure and an empty one are both reported."""
    from plotly.offline import get_plotlyjs

    good = FigureSpec(figure_id="good", title="ok", x_label="x", y_label="y",
                      series=(Series(name="s", x=(1.0, 2.0), y=(3.0, 4.0)),))
    empty = replace(good, figure_id="empty", series=())
    document = ReportDocument(title="probe", runs=(), points=(), figures=(good, empty))
    html_text = render_html(document, get_plotlyjs())
    broken = html_text.replace("<script type='application/json' class='figure-spec' data-target='good'>",
                               "<script type='application/json' class='figure-spec' data-target='good'>{oops")
    path = tmp_path / "probe.html"
    path.write_text(broken)
    status = _report_status(path, tmp_path / "profile")
    assert status["empty"] == ["good", "empty"] or set(status["empty"]) == {"good", "empty"}  # type: ignore[arg-type]
    assert status["errors"] and "good" in str(status["errors"])


def test_latency_axes_switch_to_ms_from_one_millisecond() -> None:
    """An axis of latencies reads "3 ms", not "3,000 µs"; short ones stay in µs."""
    from storbench.report.figures import latency_unit

    assert latency_unit([62_000.0, 950_000.0, None]) == (1e3, "µs")
    assert latency_unit([62_000.0, 3_000_000.0]) == (1e6, "ms")
    assert latency_unit([]) == (1e3, "µs")


def test_error_bars_never_reach_below_zero() -> None:
    """A wide interval of IOPS (n=2) draws its lower arm to zero, not below: along y (bars and lines, from the
    interval cut at zero) and along x (the saturation curve's IOPS)."""
    from storbench.report.plotly_render import plotly_figure

    bars = Series(name="b", x=("p",), y=(100.0,), error_y=(300.0,), error_y_minus=(100.0,), mode="bar")
    curve = Series(name="c", x=(100.0, 5000.0), y=(1.0, 2.0), error_x=(300.0, 50.0))
    figure = plotly_figure(FigureSpec(figure_id="f", title="t", x_label="x", y_label="y", series=(curve,)))
    assert list(figure.data[0].error_x.arrayminus) == [100.0, 50.0] and list(figure.data[0].error_x.array) == [300.0,
                                                                                                                 50.0]
    bar = plotly_figure(FigureSpec(figure_id="g", title="t", x_label="x", y_label="y", series=(bars,),
                                   x_categories=("p",)))
    assert list(bar.data[0].error_y.arrayminus) == [100.0] and list(bar.data[0].error_y.array) == [300.0]


def test_labels_of_marks_close_together_go_to_other_corners() -> None:
    """'undone' and 'every PG active+clean' a few seconds apart had run into each other ("un-every PG ..."): a
    mark whose label would reach the one before it takes another corner; marks far apart keep the top left."""
    from storbench.report.figures import Mark
    from storbench.report.plotly_render import _mark_positions

    series = (Series(name="IOPS", x=tuple(float(t) for t in range(61)), y=(1.0,) * 61),)
    marks = (Mark(10.0, "freeze osd.1"), Mark(39.7, "undone"), Mark(52.0, "every PG active+clean"))
    spec = FigureSpec(figure_id="t", title="t", x_label="s", y_label="IOPS", series=series, x_marks=marks)
    assert _mark_positions(spec) == ["top left", "top left", "bottom right"]
    far = replace(spec, x_marks=(marks[0], replace(marks[2], value=58.0), marks[1]))
    assert _mark_positions(far) == ["top left", "top left", "top left"]


def test_no_two_series_of_a_figure_look_alike() -> None:
    """Ten colours for 56 lines had drawn "rbd qd1" and "nvme qd8" in one blue: past the colours, each round of
    series has its own marker, so colour and marker together tell every series apart."""
    from storbench.report.plotly_render import plotly_figure

    series = tuple(Series(name=f"s{i}", x=(1.0, 2.0), y=(float(i), float(i) + 1)) for i in range(56))
    figure = plotly_figure(FigureSpec(figure_id="many", title="many", x_label="x", y_label="y", series=series))
    looks = [(trace.line.color, trace.marker.symbol) for trace in figure.data]
    assert len(set(looks)) == 56, looks


def test_two_targets_of_one_name_are_two_series_and_labels_tell_them_apart() -> None:
    """Two imports both named "imported", one of /dev/a and one of /dev/b, each at 4k and 64k: the block-size bars
    had been keyed by a label naming the target alone, so one device's bars overwrote the other's, and every
    table row and line read alike."""
    from dataclasses import replace

    from storbench.model import ImportedTarget
    from storbench.report.labels import point_label
    from storbench.report.point_figures import block_size_figures
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    found = []
    for device, iops in (("/dev/a", 1000.0), ("/dev/b", 3000.0)):
        for bs in (4096, 65536):
            for r in range(3):
                o = observation(case_id=f"{device}-{bs}", target="imported", target_kind="imported", bs_bytes=bs,
                                repeat=r, iops=iops * (1 + 0.001 * r))
                found.append(replace(o, case=replace(o.case, target=ImportedTarget("imported", device))))
    points = summarize_points(found)
    labels = {point_label(p) for p in points}
    assert len(labels) == 4 and any("location=/dev/a" in label for label in labels), labels
    iops_figure = next(f for f in block_size_figures(points) if f.figure_id.startswith("iops-vs-bs"))
    assert sorted(len(s.x) for s in iops_figure.series) == [2, 2], iops_figure.series
    one_device = summarize_points([o for o in found if o.case.target == ImportedTarget("imported", "/dev/a")])
    assert not any("location=" in point_label(p) for p in one_device)  # one definition: nothing added


def test_a_comparison_figure_leaves_out_a_pair_with_a_side_that_has_no_value() -> None:
    """A baseline imported without percentiles has no p99: its bar had been drawn at 0 ms beside the candidate's;
    the pair is left out of the p99 figure (and kept in the rate figure, which both sides have). Operations are
    ops/s, not IOPS."""
    from storbench.report.point_figures import comparison_figures
    from storbench.stats.compare_cells import PointComparison
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    def side(p99: float | None, run_id: int, rw: str = "randread") -> object:
        (point,) = summarize_points([observation(run_id=run_id, repeat=r, rw=rw, iops=1000.0 + r, lat_p99_ns=p99)
                                     for r in range(3)])
        return point

    pair = PointComparison(key=(), baseline=side(None, 1), candidate=side(2e6, 2),  # type: ignore[arg-type]
                           comparable=True, reason="", cells=())
    figures = {f.figure_id: f for f in comparison_figures([pair], "run 1", "run 2")}
    assert "compare-lat_p99_ns" not in figures and "compare-iops" in figures, list(figures)
    assert all(0.0 not in s.y for s in figures["compare-iops"].series)
    creates = PointComparison(key=(), baseline=side(2e6, 1, "create"), candidate=side(3e6, 2, "create"),  # type: ignore[arg-type]
                              comparable=True, reason="", cells=())
    (rate, _) = comparison_figures([creates], "run 1", "run 2")
    assert rate.y_label == "ops/s" and rate.title.startswith("ops/s"), rate.title


BEFORE_AFTER_PLAN = """
name: before-after
targets:
  disk: {kind: path, path: ./data, size: 8MiB}
workload: {rw: randread, bs: 4k, iodepth: [1, 4], runtime: 1s, direct: false}
repeat: 1
"""


def test_a_before_after_report_by_run_draws_each_run_apart_and_pools_only_on_asking(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The same plan run twice (before and after a change outside storbench): `report --baseline run=1 --candidate
    run=2` had pooled both runs into one point in every figure outside the Comparison section (their cases share
    ids), so each curve, bar and latency CDF drew before and after as one. Each run is its own point now, labelled
    with its run, as `show` keeps them; `--pool` pools them and says so."""
    import storbench.report.build

    db = tmp_path / "r.db"
    plan = write_plan(tmp_path, BEFORE_AFTER_PLAN)
    with inside(tmp_path):
        for _ in range(2):
            assert run_cli(capsys, "run", str(plan), "--db", str(db))[0] == 0
    built: list[ReportDocument] = []
    real = storbench.report.build.build_report
    monkeypatch.setattr(storbench.report.build, "build_report",
                        lambda *args, **kwargs: built.append(real(*args, **kwargs)) or built[-1])
    report = tmp_path / "r.html"
    code, _, err = run_cli(capsys, "report", "--db", str(db), "--baseline", "run=1", "--candidate", "run=2",
                           "-o", str(report))
    assert code == 0, err
    (doc,) = built
    iops = {}  # (run, iodepth) -> that run's own IOPS, as `show` gives it
    for run in (1, 2):
        code, out, _ = run_cli(capsys, "show", "--db", str(db), "--run", str(run), "--format", "json")
        iops.update({(run, p["iodepth"]): p["iops"] for p in json.loads(out)})
    assert sorted((p.run_ids, p.iodepth) for p in doc.points) == [((1,), 1), ((1,), 4), ((2,), 1), ((2,), 4)]
    figures = {f.figure_id: f for f in doc.figures}
    load = figures["iops-vs-iodepth"]
    assert sorted(s.name.split(":")[0] for s in load.series) == ["run 1", "run 2"]
    for series in load.series:
        run = int(series.name.split(":")[0].removeprefix("run "))
        assert series.y == pytest.approx([iops[run, int(x)] for x in series.x], abs=0.06), series  # shown to 0.1
    cdf = figures["cdf-disk-randread-read"]  # each run's own merged histogram: four lines, none pooled
    assert sorted(s.name.split(":")[0] for s in cdf.series) == ["run 1"] * 2 + ["run 2"] * 2
    assert len({s.x for s in cdf.series}) == 4
    assert sorted(c.points[0].point.run_ids for c in doc.curves) == [(1,), (2,)]  # a saturation curve per run
    utilisation = figures["utilisation-vs-iodepth"]  # each run's own telemetry, not the first run's for both
    assert {s.name.split(":")[0] for s in utilisation.series} == {"run 1", "run 2"}
    assert len(figures["process-cpu"].x_categories) == 4
    text = report.read_text()
    assert "<th>run</th><th>target</th>" in text and "pool the repetitions" not in text

    built.clear()
    code, _, err = run_cli(capsys, "report", "--db", str(db), "--baseline", "run=1", "--candidate", "run=2",
                           "--pool", "-o", str(report))
    assert code == 0, err
    (doc,) = built
    assert sorted((p.run_ids, p.iodepth) for p in doc.points) == [((1, 2), 1), ((1, 2), 4)]
    assert not any("run 1" in s.name for f in doc.figures if not f.figure_id.startswith("compare")
                   for s in f.series)
    assert "rows of run 1,2 pool the repetitions of those runs" in report.read_text()
