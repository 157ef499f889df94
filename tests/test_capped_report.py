"""The capped picture in the report and "% of expected" everywhere a user reads results (issue 17).

Synthetic sweeps: a curve capped beyond this host draws throughput and mean latency on two y axes with the
declared limit as a line, in the Bottlenecks section; a sweep that is not capped draws none; the terminal table,
the HTML summary, `show --format` and the export carry the share of what the target declared, and only then.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from storbench.model import Expectation
from storbench.records import RECORD_FIELDS, export_records
from storbench.report.export import export
from storbench.report.figures import BOTTLENECK_SECTION, FigureSpec, Mark
from storbench.report.html import ReportDocument, render_html
from storbench.report.images import render_image
from storbench.report.plotly_render import plotly_figure
from storbench.report.point_figures import block_size_figures
from storbench.report.saturation_figures import capped_figures, curve_figures, iops_vs_load_figures
from storbench.report.show_export import points_csv, points_json, points_markdown
from storbench.report.summary_table import summary_table as _summary_table
from storbench.report.tables import results_table
from storbench.stats.bottleneck import Bottleneck
from storbench.stats.knee import curves
from storbench.stats.observations import Observation
from storbench.stats.point_summary import PointSummary
from storbench.stats.summary import summarize_points
from synthetic import observation

ROOT = Path(__file__).resolve().parent.parent
MIB = 1 << 20
# the numbers: a volume throttled to 3,000 read IOPS, swept over iodepth, nothing of this host busy
DEPTHS = [1, 16, 64]
THROTTLED = [[2999.0, 2998.0, 3000.0], [2999.0, 3001.0, 2997.0], [3013.0, 3010.0, 3016.0]]
THROTTLED_LAT_MS = [0.33, 5.5, 22.0]


def _observations(axis: str, values: list[int], iops: list[list[float]], lat_ms: list[float],
                  target: str = "vol", **extra: object) -> list[Observation]:
    rows = []
    for value, per_rep, lat in zip(values, iops, lat_ms, strict=True):
        for rep, rate in enumerate(per_rep):
            fields: dict[str, object] = {
                "case_id": f"{target}-{axis}{value}", "target": target, "target_kind": "block", axis: value,
                "repeat": rep, "iops": rate, "lat_mean_ns": lat * 1e6, "lat_p99_ns": int(lat * 3e6),
                "host_cpu_busy_pct": 10.0, "disk_busiest_util_pct": 20.0, "client_cpu_cores": 0.1}
            if axis == "bs_bytes":
                fields["bw_bytes_per_s"] = rate * value
            fields.update(extra)
            rows.append(observation(**fields))
    return rows


SOLD_AS = Expectation(iops=3000)


def _throttled(expect: Expectation | None = SOLD_AS) -> list[PointSummary]:
    declared = {(1, "vol"): expect} if expect is not None else {}
    return summarize_points(_observations("iodepth", DEPTHS, THROTTLED, THROTTLED_LAT_MS), expectations=declared)


def _rising() -> list[Observation]:
    return _observations("iodepth", DEPTHS, [[1000.0, 1010.0], [9000.0, 9100.0], [30000.0, 30500.0]],
                         [1.0, 1.8, 2.1], target="fast")


def test_a_capped_curve_draws_flat_iops_and_rising_latency_on_two_axes_with_the_declared_limit() -> None:
    points = _throttled()
    assert [p.bottleneck.kind for p in points] == [Bottleneck.CAPPED] * 3
    (figure,) = capped_figures(points)
    assert figure.section == BOTTLENECK_SECTION and figure.x_label == "iodepth" and figure.x_log
    throughput = [s for s in figure.series if not s.y2]
    latency = [s for s in figure.series if s.y2]
    assert len(throughput) == 1 and len(latency) == 1
    assert throughput[0].x == latency[0].x == (1.0, 16.0, 64.0)
    assert all(2990 < y < 3020 for y in throughput[0].y)  # flat
    assert throughput[0].error_y is not None and all(e > 0 for e in throughput[0].error_y)
    assert latency[0].y == (0.33, 5.5, 22.0) and figure.y2_label == "mean latency (ms)"  # rising, in ms
    assert figure.y_label == "IOPS" and throughput[0].text == ("capped",) * 3
    assert figure.y_marks == (Mark(3000.0, "expected: 3,000 IOPS"),)
    ((what, evidence),) = figure.notes
    assert what == "capped beyond this host" and evidence == points[0].bottleneck.evidence
    assert "at its declared 3,000 IOPS" in evidence
    # plotly: the latency on a second axis on the right, the declared limit a line on the IOPS axis
    drawn = plotly_figure(figure)
    assert drawn.layout.yaxis2.overlaying == "y" and drawn.layout.yaxis2.side == "right"
    assert drawn.data[0].yaxis in (None, "y") and drawn.data[1].yaxis == "y2"
    (line,) = drawn.layout.shapes
    assert line.y0 == line.y1 == 3000.0 and line.yref == "y"
    assert drawn.layout.annotations[0].text == "expected: 3,000 IOPS"
    for fmt, magic in (("png", b"\x89PNG"), ("svg", b"<?xml")):  # the --images path draws it too
        assert render_image(figure, fmt)[:len(magic)] == magic


def test_without_a_declared_limit_the_capped_figure_has_no_line() -> None:
    (figure,) = capped_figures(_throttled(expect=None))
    assert figure.y_marks == () and not plotly_figure(figure).layout.shapes


def test_a_bandwidth_cap_across_block_sizes_draws_mib_per_s_against_block_size() -> None:
    sizes = [64 * 1024, 256 * 1024, 1024 * 1024, 4096 * 1024]
    rate = 125 * MIB
    rows = _observations("bs_bytes", sizes, [[rate / s, rate / s * 1.001] for s in sizes], [0.5, 2.0, 8.0, 32.0])
    points = summarize_points(rows, expectations={(1, "vol"): Expectation(bw_bytes_per_s=125 * MIB)})
    assert [p.bottleneck.kind for p in points] == [Bottleneck.CAPPED] * 4
    (figure,) = capped_figures(points)
    assert figure.x_label == "block size" and figure.x_categories == ("64k", "256k", "1m", "4m")
    assert figure.y_label == "MiB/s" and all(124.9 < y < 125.2 for y in figure.series[0].y)
    assert figure.series[1].y2 and figure.series[1].y == (0.5, 2.0, 8.0, 32.0)
    assert figure.y_marks == (Mark(125.0, "expected: 125MiB/s"),)
    assert "MiB/s flat at 125MiB/s" in figure.notes[0][1]
    assert render_image(figure)[:4] == b"\x89PNG"


def test_a_sweep_that_is_not_capped_draws_no_capped_figure() -> None:
    rising = summarize_points(_rising())
    assert Bottleneck.CAPPED not in {p.bottleneck.kind for p in rising}
    assert capped_figures(rising) == []
    # a capped curve beside a rising one: only the capped one is drawn
    both = summarize_points([*_observations("iodepth", DEPTHS, THROTTLED, THROTTLED_LAT_MS), *_rising()])
    (figure,) = capped_figures(both)
    assert "vol" in figure.title and "fast" not in figure.title


def test_the_report_draws_the_capped_figure_in_the_bottlenecks_section_escaped() -> None:
    points = _throttled()
    figures = tuple(capped_figures(points))
    page = render_html(ReportDocument(title="t", runs=(), points=tuple(points), figures=figures), "")
    start = page.index("<h2>Bottlenecks</h2>")
    section = page[start:page.index("</section>", start)]
    assert f"id='{figures[0].figure_id}'" in section and "capped beyond this host" in section
    assert page.count(f"id='{figures[0].figure_id}'") == 1
    assert "<td class='bottleneck-capped'>" in section
    # what came from a plan is escaped in the notes and cannot end the figure's script
    hostile = FigureSpec(figure_id="capped-x", title="</script><b>x", x_label="iodepth", y_label="IOPS",
                         series=figures[0].series, section=BOTTLENECK_SECTION, notes=(("<i>", "a & </td>"),))
    page = render_html(ReportDocument(title="t", runs=(), points=tuple(points), figures=(hostile,)), "")
    assert "</script><b>" not in page and "&lt;i&gt;" in page and "a &amp; &lt;/td&gt;" in page


def test_saturation_and_iops_figures_draw_the_declared_limit() -> None:
    points = _throttled()
    (iops_figure,) = iops_vs_load_figures(points)
    assert iops_figure.y_marks == (Mark(3000.0, "expected: 3,000 IOPS"),)
    (saturation,) = curve_figures([c for axis in ("iodepth",) for c in curves(points, axis)])
    assert saturation.x_marks == (Mark(3000.0, "expected: 3,000 IOPS"),)  # IOPS is its x axis
    assert block_size_figures(points) == []  # one block size: no figure "vs block size"
    eight_k = [replace(o, case=replace(o.case, case_id=o.case.case_id + "-8k",
                                       workload=replace(o.case.workload, bs_bytes=8192)))
               for o in _observations("iodepth", DEPTHS, THROTTLED, THROTTLED_LAT_MS)]
    two_sizes = summarize_points([*_observations("iodepth", DEPTHS, THROTTLED, THROTTLED_LAT_MS), *eight_k],
                                 expectations={(1, "vol"): SOLD_AS})
    by_bs = {f.figure_id: f.y_marks for f in block_size_figures(two_sizes)}
    assert by_bs == {"iops-vs-bs-small": (Mark(3000.0, "expected: 3,000 IOPS"),), "bw_bytes_per_s-vs-bs-small": ()}
    undeclared = summarize_points(_rising())
    (plain,) = iops_vs_load_figures(undeclared)
    assert plain.y_marks == ()
    (plain_saturation,) = curve_figures(curves(undeclared, "iodepth"))
    assert plain_saturation.x_marks == ()
    # two targets declaring different limits: one line each, named
    two = summarize_points([*_observations("iodepth", DEPTHS, THROTTLED, THROTTLED_LAT_MS),
                            *_observations("iodepth", DEPTHS, THROTTLED, THROTTLED_LAT_MS, target="gp3")],
                           expectations={(1, "vol"): Expectation(iops=3000), (1, "gp3"): Expectation(iops=3100)})
    (figure,) = iops_vs_load_figures(two)
    assert {m.label for m in figure.y_marks} == {"expected (vol): 3,000 IOPS", "expected (gp3): 3,100 IOPS"}


def _table_text(points: list[PointSummary]) -> str:
    console = Console(record=True, width=400)
    console.print(results_table(points, "t"))
    return console.export_text()


def _column(text: str, name: str, target: str) -> list[str]:
    """The cells of column ``name`` in the rows of ``target`` of a printed table."""
    rows = [[cell.strip() for cell in line.split("│" if "│" in line else "┃")[1:-1]] for line in text.splitlines()
            if "│" in line or "┃" in line]
    index = rows[0].index(name)
    return [row[index] for row in rows[1:] if row[0] == target]


def test_show_has_a_percent_of_expected_column_only_when_a_target_declared_one() -> None:
    declared = _table_text(_throttled())
    assert "% exp" in declared
    assert _column(declared, "% exp", "vol") == ["100.0%", "100.0%", "100.4%"]
    assert "% exp" not in _table_text(_throttled(expect=None))
    # a target without `expect:` beside one with it: its cells are blank
    mixed = summarize_points([*_observations("iodepth", DEPTHS, THROTTLED, THROTTLED_LAT_MS), *_rising()],
                             expectations={(1, "vol"): Expectation(iops=3000)})
    text = _table_text(mixed)
    assert _column(text, "% exp", "fast") == ["", "", ""] and _column(text, "% exp", "vol")[0] == "100.0%"
    html_table = _summary_table(mixed)
    assert "<th>% exp</th>" in html_table and "<td>100.0%</td>" in html_table and "<td></td>" in html_table
    assert "<th>% exp</th>" not in _summary_table(_throttled(expect=None))
    assert "% exp |" in points_markdown(mixed, "t") and "% exp" not in points_markdown(_throttled(None), "t")


def test_show_formats_and_the_export_carry_pct_of_expected() -> None:
    rows = json.loads(points_json(_throttled()))
    assert [round(r["pct_of_expected"], 1) for r in rows] == [100.0, 100.0, 100.4]
    assert all(r["pct_of_expected"] is None for r in json.loads(points_json(_throttled(expect=None))))
    assert "pct_of_expected" in next(csv.reader(io.StringIO(points_csv(_throttled()))))
    observations = _observations("iodepth", DEPTHS, THROTTLED, THROTTLED_LAT_MS)
    assert "pct_of_expected" in RECORD_FIELDS
    records = export_records(observations, {(1, "vol"): Expectation(iops=3000)})
    assert records[0].pct_of_expected is not None and abs(records[0].pct_of_expected - 2999 / 30) < 1e-9
    assert all(r.pct_of_expected is None for r in export_records(observations))
    by_bw = export_records(observations, {(1, "vol"): Expectation(bw_bytes_per_s=3000 * 4096)})
    assert by_bw[0].pct_of_expected is not None and abs(by_bw[0].pct_of_expected - 2999 / 30) < 1e-9
    exported = json.loads(export(records, "json"))
    assert abs(exported[0]["pct_of_expected"] - 99.9667) < 1e-3
    header = next(csv.reader(io.StringIO(export(records, "csv"))))
    assert header == list(RECORD_FIELDS)
    assert "pct_of_expected" in (ROOT / "README.md").read_text()  # the documented export fields


def test_a_mixed_workload_is_measured_against_its_declared_limit_by_all_its_directions() -> None:
    """`expect.iops` is of all directions: a 70/30 mix at 2,100 reads and 900 writes a second on a 3,000 IOPS
    volume had shown 70 % and 30 % of expected, in the table, `show --format` and the export alike."""
    rows = [observation(case_id="mix", target="vol", rw="randrw", rwmixread=70, repeat=r, direction=d,
                        iops=rate + r, lat_mean_ns=1e6)
            for r in range(3) for d, rate in (("read", 2100.0), ("write", 900.0))]
    points = summarize_points(rows, expectations={(1, "vol"): SOLD_AS})
    assert [p.direction.value for p in points if p.direction] == ["read", "write"]
    shares = [p.share_of_expected() for p in points]
    assert all(s is not None and abs(s[0] - 3002 / 3000) < 1e-9 for s in shares), shares
    records = export_records(rows, {(1, "vol"): SOLD_AS})
    assert [round(r.pct_of_expected or 0, 2) for r in records] == [100.0] * 2 + [100.07] * 2 + [100.13] * 2
    one_way = summarize_points([observation(case_id="r", target="vol", repeat=r, iops=2100.0) for r in range(3)],
                               expectations={(1, "vol"): SOLD_AS})
    assert one_way[0].share_of_expected() == (0.7, "IOPS") and not one_way[0].case_totals
    # rw: metadata's phases (create, stat, delete) ran one after another: their rates have no sum (1,000 + 5,000 +
    # 1,000 a second had read 233 % of a 3,000 IOPS limit)
    cycle = [observation(case_id="cycle", target="vol", rw="metadata", repeat=r, direction=d, iops=rate)
             for r in range(3) for d, rate in (("write", 1000.0), ("read", 5000.0), ("trim", 1000.0))]
    points = summarize_points(cycle, expectations={(1, "vol"): SOLD_AS})
    assert all(not p.case_totals for p in points)
    assert sorted(round(p.share_of_expected()[0], 3) for p in points) == [0.333, 0.333, 1.667]  # type: ignore[index]
    assert {round(r.pct_of_expected or 0) for r in export_records(cycle, {(1, "vol"): SOLD_AS})} == {33, 167}


def test_the_html_summary_tells_rows_apart_by_what_varies() -> None:
    """An ioengine sweep: two HTML rows had read the same but for their numbers (the terminal table has a
    "varies" column; the HTML summary had none)."""
    rows = [observation(case_id=f"e-{engine}", target="vol", ioengine=engine, repeat=r, iops=iops + r)
            for engine, iops in (("libaio", 40_000.0), ("io_uring", 52_000.0)) for r in range(3)]
    table = _summary_table(summarize_points(rows))
    assert "<th>varies</th>" in table
    assert "ioengine=libaio" in table and "ioengine=io_uring" in table
    plain = _summary_table(summarize_points([o for o in rows if o.case.workload.ioengine == "libaio"]))
    assert "<th>varies</th>" not in plain
