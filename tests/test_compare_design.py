"""Every compare output names the design of each comparison (grouped, with the points it concerns; the confounding
ones marked, with their caveat), and repeated advice is said once with the points it concerns: the terminal
table, Markdown, JSON and the HTML report, on runs stored without fio."""

from __future__ import annotations

import html
import json
import random
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import run_cli, store_observations
from storbench.report.compare_tables import design_lines
from storbench.report.html import ReportDocument, render_html
from storbench.report.warning_text import points_text, warning_lines
from storbench.stats.compare import compare_observations
from storbench.stats.compare_cells import Verdict
from storbench.stats.compare_design import AA_DIFFERENT_PCT, CONFOUNDED
from storbench.stats.observations import Observation
from storbench.stats.point_summary import PointSummary
from storbench.stats.selectors import parse_selector
from storbench.stats.summary import summarize_points
from synthetic import observation

PLAN = """
name: replica
targets:
  rbd: {kind: rbd, pool: bench, image: storbench, size: 1GiB}
workload: {rw: randwrite, bs: 4k, iodepth: [1, 16], runtime: 10s, ramp: 2s}
repeat: 6
lab:
  ceph: {osds: 3, osd_size: 4GiB, pool_size: [2, 3]}
"""


def _rounds(run_id: int, seed: int, rounds: int = 6, factor: float = 1.0) -> list[Observation]:
    """Balanced rounds of replica 2 vs 3 at iodepth 1 and 16, no difference, alternating A B, B A (the IOPS times
    ``factor``)."""
    rng = random.Random(seed)
    found = []
    for i in range(rounds):
        for depth in (1, 16):
            sizes = (2, 3) if i % 2 == 0 else (3, 2)
            for slot, size in enumerate(sizes):
                start = i * 60.0 + (depth > 1) * 30.0 + slot * 15.0
                found.append(observation(case_id=f"size{size}-qd{depth}", run_id=run_id, target="rbd",
                                         target_kind="rbd", rw="randwrite", direction="write", iodepth=depth,
                                         lab=f"lab=ceph pool_size={size}", repeat=i,
                                         iops=factor * 1000.0 * depth ** 0.5 * (1 + rng.gauss(0, 0.04)),
                                         started_at_s=start, finished_at_s=start + 12.0))
    return found


def _store(path: Path, seen: list[Observation]) -> None:
    store_observations(path, seen, PLAN, plan_name="replica")


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    path = tmp_path / "r.db"
    _store(path, _rounds(1, 1))
    _store(path, _rounds(2, 2))
    return path


PAIRED = "design: paired (all 2 points): both sides in one run, repetitions alternating (A B B A)"
TWO_RUNS = "⚠ design: two runs (all 2 points): separate runs (before/after)"


def _flat(text: str) -> str:
    """The terminal's lines joined again where rich wrapped them."""
    return " ".join(text.split())


def test_a_paired_compare_names_its_design_in_every_format(db: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    sides = ("--db", str(db), "--baseline", "run=1,pool_size=2", "--candidate", "run=1,pool_size=3")
    code, out, err = run_cli(capsys, "compare", *sides)
    assert code == 0, err
    assert PAIRED in _flat(out) and "⚠ design" not in out
    code, out, err = run_cli(capsys, "compare", *sides, "--format", "markdown")
    assert code == 0, err
    assert f"- {PAIRED}" in out
    code, out, err = run_cli(capsys, "compare", *sides, "--format", "json")
    assert code == 0, err
    assert {(row["design"], row["design_confounds"]) for row in json.loads(out)} == {("paired", False)}
    report = tmp_path / "r.html"
    code, _, err = run_cli(capsys, "report", *sides, "-o", str(report))
    assert code == 0, err
    comparison = report.read_text().split("<h2>Comparison</h2>")[1].split("</section>")[0]
    assert f"<p>{html.escape(PAIRED)}" in comparison


def test_a_before_after_compare_is_marked_with_its_caveat_and_figure(db: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    sides = ("--db", str(db), "--baseline", "run=1,pool_size=3", "--candidate", "run=2,pool_size=3")
    figure = f'"different" {AA_DIFFERENT_PCT[10]} % of the time (n=10, CV 5 %)'
    code, out, err = run_cli(capsys, "compare", *sides)
    assert code == 0, err
    assert TWO_RUNS in _flat(out) and figure in _flat(out) and "design: paired" not in out
    code, out, err = run_cli(capsys, "compare", *sides, "--format", "markdown")
    assert code == 0, err
    line = next(line for line in out.splitlines() if line.startswith(f"- {TWO_RUNS}"))
    assert figure in line
    report = tmp_path / "r.html"
    code, _, err = run_cli(capsys, "report", *sides, "-o", str(report))
    assert code == 0, err
    comparison = report.read_text().split("<h2>Comparison</h2>")[1].split("</section>")[0]
    assert f"<p class='warn'>{html.escape(TWO_RUNS)}" in comparison and html.escape(figure) in comparison
    # the gate's 5 % is of the two runs' repetitions: a run 30 % lower fails it, and its verdict says the design
    # confounds the change; a paired compare's says nothing of it
    gated = tmp_path / "gate.db"
    _store(gated, _rounds(1, 1))
    _store(gated, _rounds(2, 2, factor=0.7))
    code, _, err = run_cli(capsys, "compare", "--db", str(gated), "--baseline", "run=1", "--candidate", "run=2",
                           "--where", "pool_size=3", "--fail-on-regression", "0")
    said = " ".join(err.split())
    assert code == 1 and "⚠ two runs: of these runs' repetitions, not of the setting alone" in said, said
    code, _, err = run_cli(capsys, "compare", "--db", str(gated), "--baseline", "run=2,pool_size=2",
                           "--candidate", "run=1,pool_size=2", "--fail-on-regression", "0")
    assert code == 0
    code, _, err = run_cli(capsys, "compare", "--db", str(db), "--baseline", "run=1,pool_size=2", "--candidate",
                           "run=1,pool_size=3", "--fail-on-regression", "0")
    assert "not of the setting alone" not in err, err


def test_design_lines_group_the_designs_and_name_the_points_they_concern() -> None:
    first, second = _rounds(1, 1), _rounds(2, 2)
    paired = compare_observations(first, parse_selector("pool_size=2"), parse_selector("pool_size=3"), {},
                                  interleaved_runs=frozenset({1}))
    two = compare_observations([*first, *second], parse_selector("run=1,pool_size=3"),
                               parse_selector("run=2,pool_size=3"), {})
    mixed = [paired[0], two[1]]
    lines = design_lines(mixed)
    assert len(lines) == 2
    assert lines[0].startswith("design: paired (rbd randwrite 4k qd1 write): ")
    assert lines[1].startswith("⚠ design: two runs (rbd randwrite 4k qd16 write): ")
    assert design_lines([*paired, *paired]) == [PAIRED.replace("all 2", "all 4") + lines[0].split("A B B A)")[1]]
    assert design_lines([]) == []


def test_points_text_names_eight_then_counts() -> None:
    assert points_text([]) == "" and points_text(["a"]) == "a" and points_text(["a", "b"]) == "a and b"
    labels = [f"p{i}" for i in range(11)]
    assert points_text(labels) == "p0, p1, p2, p3, p4, p5, p6, p7 and 3 more"
    assert points_text(labels[:8]) == "p0, p1, p2, p3, p4, p5, p6 and p7"


def _noisy_points(count: int = 10) -> list[PointSummary]:
    return summarize_points([observation(case_id=f"c{depth}", iodepth=depth, repeat=r,
                                         iops=1000.0 * (1 + 0.25 * (-1, 0, 1)[r] * (1 + depth / 100)))
                             for depth in range(1, count + 1) for r in range(3)])


def test_a_warning_is_said_once_with_the_points_it_concerns() -> None:
    points = _noisy_points()
    (cv, *_) = [line for line in warning_lines(points) if "run-to-run spread" in line]
    # the worst point first with its figures, then seven more, then how many more
    assert " at 10 points (worst a randread 4k qd10 read: CV " in cv, cv
    assert "and 2 more): " in cv and cv.count("a randread 4k qd") == 8, cv
    assert cv.endswith(next(w.fix for w in points[0].warnings if w.code == "high_cv"))
    single = warning_lines(points[:1])
    assert any(line.startswith("⚠ run-to-run spread") and " at a randread 4k qd1 read (CV " in line
               for line in single), single


def test_the_reports_rows_carry_a_tag_and_the_advice_is_said_once_below(tmp_path: Path) -> None:
    points = _noisy_points()
    page = render_html(ReportDocument(title="t", runs=(), points=tuple(points), figures=(),
                                      warnings=(*warning_lines(points), "pooled over runs 1 and 2")), "")
    summary = page.split("<h2>Summary</h2>")[1].split("</section>")[0]
    rows = re.findall(r"<tr>.*?</tr>", summary.split("<tbody>")[1])
    assert len(rows) == len(points)
    for point, row in zip(points, rows, strict=True):
        message = next(w.message for w in point.warnings if w.code == "high_cv")
        assert f"href='#warning-high_cv' title='{html.escape(message)}'>high CV</a>" in row, row
    fix = next(w.fix for w in points[0].warnings if w.code == "high_cv")
    assert summary.count(html.escape(fix)) == 1  # the advice once, under the table
    assert "<li id='warning-high_cv'><span class='tag'>high CV</span> ⚠ run-to-run spread" in summary
    assert summary.count("pooled over runs 1 and 2") == 1  # a note that is not a kind of warning stays
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (scripts/setup.sh --dev installs it)")
    report = tmp_path / "r.html"
    report.write_text(page)
    done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--virtual-time-budget=15000", f"--user-data-dir={tmp_path / 'profile'}",
                           "--window-size=1400,2400", "--dump-dom", report.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r'data-report-status="([^"]*)"', done.stdout)
    assert found is not None, done.stderr[-500:]
    status = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert status["overflow"] == [] and status["width"] == 1400, status


def _runs(levels: dict[int, float], reps: int, rng: random.Random, case_id: str = "c1", lab: str = "",
          within: float = 0.02) -> list[Observation]:
    """``reps`` repetitions in each run at that run's level, with a spread of ``within`` among them."""
    return [observation(run_id=run, repeat=rep, case_id=case_id, lab=lab,
                        iops=level * rng.lognormvariate(0, within))
            for run, level in levels.items() for rep in range(reps)]


def test_sides_over_several_runs_take_the_run_as_the_sample() -> None:
    """Three runs before, three after, no real change; runs differ 3 % from each other, repetitions 2 % inside one.
    Pooled as 15 independent repetitions a side, an A/A compare said "different" about 43 % of the time; with each
    run's mean one sample it holds its 5 %. A side of one run against several has no interval."""
    rng = random.Random(7)
    tags = {r: ("before",) if r <= 3 else ("after",) for r in range(1, 7)}
    before, after = parse_selector("tag=before"), parse_selector("tag=after")
    different = 0
    trials = 200
    for _ in range(trials):
        observations = _runs({run: 1000 * rng.lognormvariate(0, 0.03) for run in range(1, 7)}, 5, rng)
        (comparison,) = compare_observations(observations, before, after, tags)
        cell = comparison.cell("iops")
        assert cell is not None and cell.difference is not None and cell.baseline is not None
        assert (cell.baseline.n, cell.difference.method, comparison.design) == (3, "welch over runs", "runs apart")
        different += cell.verdict is not Verdict.UNDECIDED
    assert different / trials <= 0.10, different  # 5 % expected: at most 10 % in 200 (the old pooling: 43 %)
    observations = _runs({1: 1000, 2: 1020, 3: 990, 4: 1500}, 5, rng)
    one = {1: ("before",), 2: ("before",), 3: ("before",), 4: ("after",)}
    (comparison,) = compare_observations(observations, before, after, one)
    cell = comparison.cell("iops")
    assert cell is not None and cell.candidate is not None and cell.candidate.n == 1
    assert cell.difference is not None and cell.difference.change_ci_low_pct is None
    assert cell.verdict is Verdict.UNDECIDED  # +50 %, but one run: its run-to-run spread is unknown, so no verdict


def test_both_sides_in_the_same_runs_are_paired_run_by_run() -> None:
    """Replica 2 and 3 in each of four runs, the runs' levels 10 % apart: a 5 % fall shows in every run's pair,
    though Welch over the run means could not see it through the runs' spread."""
    rng = random.Random(3)
    levels = {1: 1000.0, 2: 1100.0, 3: 900.0, 4: 1050.0}
    observations = [*_runs(levels, 4, rng, "two", "lab=ceph pool_size=2", within=0.01),
                    *_runs({r: v * 0.95 for r, v in levels.items()}, 4, rng, "three", "lab=ceph pool_size=3",
                           within=0.01)]
    tags = {r: () for r in levels}
    (comparison,) = compare_observations(observations, parse_selector("pool_size=2"),
                                         parse_selector("pool_size=3"), tags, interleaved_runs=frozenset(levels))
    cell = comparison.cell("iops")
    assert cell is not None and cell.difference is not None
    assert (cell.difference.method, cell.difference.pairs, comparison.design) == ("paired by run", 4, "paired by run")
    # the same runs, each measuring one side before the other (order: sequential): drift inside a run is in every
    # pair alike, and the design says so
    (blocked,) = compare_observations(observations, parse_selector("pool_size=2"), parse_selector("pool_size=3"),
                                      tags, interleaved_runs=frozenset({1, 2, 3}))
    assert blocked.design == "paired by run, blocked" and blocked.design in CONFOUNDED
    assert design_lines([blocked])[0].startswith("⚠ design: paired by run, blocked (")
    assert cell.verdict is Verdict.WORSE and cell.difference.change_pct == pytest.approx(-5, abs=1.5)
    assert cell.difference.change_ci_low_pct is not None and cell.difference.change_ci_high_pct is not None
    assert -8 < cell.difference.change_ci_low_pct < cell.difference.change_ci_high_pct < -2


def test_a_run_whose_repetitions_all_failed_is_no_sample() -> None:
    """Baseline runs 1 and 2 (run 2's repetitions all failed), candidate run 3, 30 % lower: one run a side that
    measured anything, so repetitions as before ("two runs", worse), not "runs apart" with no interval."""
    rng = random.Random(5)
    observations = [*_runs({1: 1000.0}, 3, rng), *_runs({3: 700.0}, 3, rng),
                    *(observation(run_id=2, repeat=rep, case_id="c1", status="failed", direction="", iops=None)
                      for rep in range(3))]
    tags = {1: ("before",), 2: ("before",), 3: ("after",)}
    (comparison,) = compare_observations(observations, parse_selector("tag=before"), parse_selector("tag=after"),
                                         tags)
    cell = comparison.cell("iops")
    assert cell is not None and cell.difference is not None
    assert (comparison.design, comparison.per_run, cell.difference.method) == ("two runs", False, "welch")
    assert cell.verdict is Verdict.WORSE
    (point,) = summarize_points([o for o in observations if tags[o.run_id] == ("before",)])
    iops = point.metric("iops")
    assert iops is not None and iops.n == 3 and not iops.per_run  # one run measured: its repetitions


def test_sides_on_labs_up_one_after_the_other_are_not_paired_whatever_the_order() -> None:
    """A volume capped at 1,000 IOPS against one at 2,000, in one run with order: interleaved: each cap is a lab of
    its own, brought up and torn down in turn, so the repetitions never alternated. Not "paired … drift cancels":
    each side is one lab instance at its own time (Welch, the confounding said)."""
    rng = random.Random(3)
    seen = []
    for cap, first in ((1000, 0.0), (2000, 600.0)):  # all of one lab, then all of the other
        for i in range(4):
            start = first + i * 60.0
            seen.append(observation(case_id=f"cap{cap}", run_id=1, target="volume", target_kind="block",
                                    rw="randread", direction="read", lab=f"lab=volume volume_size=67108864 "
                                    f"volume_iops={cap}", repeat=i, iops=cap * (1 + rng.gauss(0, 0.03)),
                                    started_at_s=start, finished_at_s=start + 12.0))
    (c,) = compare_observations(seen, parse_selector("volume_iops=1000"), parse_selector("volume_iops=2000"), {},
                                interleaved_runs=frozenset({1}))
    assert c.design == "one instance per side", c.design
    cell = c.cell("iops")
    assert cell is not None and cell.difference is not None and cell.difference.method == "welch"
    assert design_lines([c])[0].startswith("⚠ design: one instance per side")


def test_points_a_resume_added_are_not_paired_with_the_rounds_run_before() -> None:
    """An interleaved run of iodepth 1 and 4, resumed with iodepth 16 added: 16's repetitions ran after every
    round (an hour later), and had been paired round by round with 4's ("paired: drift cancels"). Only repetitions
    that ran in one stretch of the run pair; 1 and 4, which alternated, still do."""
    rng = random.Random(5)
    seen = []
    for depth, starts in ((1, (0.0, 25.0, 30.0)), (4, (5.0, 20.0, 35.0)), (16, (3600.0, 3605.0, 3610.0))):
        for i, start in enumerate(starts):
            seen.append(observation(case_id=f"qd{depth}", run_id=1, iodepth=depth, repeat=i, direction="read",
                                    iops=1000.0 * (1 + depth / 100) * (1 + rng.gauss(0, 0.02)),
                                    started_at_s=start, finished_at_s=start + 5.0))
    interleaved = frozenset({1})
    (alternated,) = compare_observations(seen, parse_selector("iodepth=1"), parse_selector("iodepth=4"), {},
                                         interleaved_runs=interleaved)
    (added,) = compare_observations(seen, parse_selector("iodepth=4"), parse_selector("iodepth=16"), {},
                                    interleaved_runs=interleaved)
    assert alternated.design == "paired", alternated.design
    assert added.design != "paired", added.design
    cell = added.cell("iops")
    assert cell is not None and cell.difference is not None and cell.difference.method == "welch"


def test_compare_exports_tell_points_apart_by_the_lab_setting_that_varies() -> None:
    """Two runs that each swept pool_size 2 and 3, compared: the CSV/JSON rows were both "a randread 4k qd1 read"
    (the terminal said pool_size=2 and pool_size=3)."""
    from storbench.report.compare_export import comparison_rows

    seen = [observation(case_id=f"p{size}", run_id=run, repeat=r, direction="read", iops=1000.0 * run + size + r,
                        lab=f"lab=ceph pool_size={size}")
            for run in (1, 2) for size in (2, 3) for r in range(3)]
    comparisons = compare_observations(seen, parse_selector("run=1"), parse_selector("run=2"), {})
    points = sorted({row["point"] for row in comparison_rows(comparisons)})
    assert len(points) == 2 and any("pool_size=2" in p for p in points) and any("pool_size=3" in p for p in points)


def test_runs_whose_labs_came_up_in_turn_are_not_called_paired_without_a_caveat() -> None:
    """Three runs of a plan with a cluster per value brought up once: inside each run all of osds=3, then all of
    osds=5, whatever the order. A 10 % drift inside each run and no true effect had read "paired by run ... worse"
    with no caveat; it is `paired by run, labs apart`, confounded. Brought up fresh each round, it is paired."""
    from synthetic import observation

    rng = random.Random(1)
    seen = []
    for run in (1, 2, 3):
        for k, osds in enumerate((3, 5)):
            for i in range(4):
                t = run * 100_000 + k * 1000 + i * 100
                level = 1000 * (1 - 0.10 * (k * 1000 + i * 100) / 2000)
                seen.append(observation(case_id=f"o{osds}", run_id=run, repeat=i, iops=level * rng.gauss(1, 0.01),
                                        lab=f"lab=ceph osds={osds}", started_at_s=t, finished_at_s=t + 60))
    sides = parse_selector("osds=3"), parse_selector("osds=5")
    for bring_up, design in (("once", "paired by run, labs apart"), ("each_repetition", "paired by run")):
        (c,) = compare_observations(seen, *sides, {}, interleaved_runs=frozenset({1, 2, 3}),
                                    bring_ups=dict.fromkeys((1, 2, 3), bring_up))
        assert c.design == design, (bring_up, c.design)
        assert (c.design in CONFOUNDED) == (bring_up == "once")
        assert design_lines([c])[0].startswith("⚠ " if bring_up == "once" else "design:"), design_lines([c])


def test_a_point_a_resume_added_is_blocked_against_the_points_it_ran_after() -> None:
    """iodepth 1 and 4 alternated over four rounds; a day later `run --resume` added iodepth 16, its repetitions
    back to back on a cluster reading 12 % lower. It had read "interleaved" (unpaired, no caveat); its repetitions
    all ran after the others': blocked, confounded with time. Two sides that ran together stay interleaved."""
    from synthetic import observation

    rng = random.Random(6)
    seen = [observation(case_id=f"qd{depth}", run_id=1, iodepth=depth, repeat=i, iops=1000 * rng.gauss(1, 0.01),
                        started_at_s=i * 100 + k * 50, finished_at_s=i * 100 + k * 50 + 40)
            for i in range(4) for k, depth in enumerate((1, 4) if i % 2 == 0 else (4, 1))]
    seen += [observation(case_id="qd16", run_id=1, iodepth=16, repeat=i, iops=880 * rng.gauss(1, 0.01),
                         started_at_s=86_400 + i * 50, finished_at_s=86_400 + i * 50 + 40) for i in range(4)]
    (added,) = compare_observations(seen, parse_selector("iodepth=4"), parse_selector("iodepth=16"), {},
                                    interleaved_runs=frozenset({1}))
    assert added.design == "blocked" and added.design in CONFOUNDED, added.design
    # another run of the plan in the same store, its cases spanning both (the same case ids): still run 1's design
    other = [replace(o, run_id=2, started_at_s=o.started_at_s - 1e6, finished_at_s=o.finished_at_s + 1e6)
             for o in seen]
    (again,) = compare_observations([*seen, *other], parse_selector("run=1,iodepth=4"),
                                    parse_selector("run=1,iodepth=16"), {}, interleaved_runs=frozenset({1, 2}))
    assert again.design == "blocked", again.design
    (together,) = compare_observations(seen, parse_selector("iodepth=1"), parse_selector("iodepth=4"), {},
                                       interleaved_runs=frozenset({1}))
    assert together.design == "paired", together.design


def test_sides_over_runs_pair_on_the_runs_both_have() -> None:
    """Five runs of pool_size 2 against 3, each run on a cluster of its own level (+-10 %), a true +6 %; every
    pool_size=3 repetition of run 5 failed. Both sides in four runs had read "runs apart, +3.1 % [-7.4, +14.8]"
    (run 5's level in one side's mean, the answer lost); they pair on the four runs both have."""
    from synthetic import observation

    rng = random.Random(4)
    seen = []
    for run in range(1, 6):
        level = 1000 * rng.gauss(1, 0.10)
        for i in range(4):
            for size, effect in ((2, 1.0), (3, 1.06)):
                ok = not (run == 5 and size == 3)
                seen.append(observation(case_id=f"p{size}", run_id=run, repeat=i, direction="read" if ok else "",
                                        status="ok" if ok else "failed",
                                        iops=level * effect * rng.gauss(1, 0.01) if ok else None,
                                        lab=f"lab=ceph pool_size={size}", started_at_s=run * 1e5 + i * 100 + size,
                                        finished_at_s=run * 1e5 + i * 100 + size + 50))
    (c,) = compare_observations(seen, parse_selector("pool_size=2"), parse_selector("pool_size=3"), {},
                                interleaved_runs=frozenset(range(1, 6)))
    cell = c.cell("iops")
    assert c.design == "paired by run" and cell is not None and cell.difference is not None, c.design
    assert cell.difference.method == "paired by run" and cell.verdict is Verdict.BETTER, cell
    assert 5.0 < cell.difference.change_pct < 7.0, cell.difference


def test_a_cluster_setting_both_sides_name_alike_leaves_the_comparison_paired() -> None:
    """`osds=3` on both sides names the one cluster both ran on: the comparison of pool_size on it had lost its
    pairing, been called blocked ("one instance per side") and `until: decided` had been refused for it."""
    from storbench.config import load_plan_text
    from storbench.errors import UserError
    from storbench.stats.selectors import blocked_settings

    seen = [replace(o, case=replace(o.case, lab=replace(o.case.lab, ceph=replace(o.case.lab.ceph, osds=3))))
            for o in _rounds(1, 1)]
    plain = compare_observations(seen, parse_selector("pool_size=2"), parse_selector("pool_size=3"), {},
                                 interleaved_runs=frozenset({1}))
    named = compare_observations(seen, parse_selector("osds=3,pool_size=2"), parse_selector("osds=3,pool_size=3"), {},
                                 interleaved_runs=frozenset({1}))
    assert [c.design for c in named] == [c.design for c in plain] == ["paired", "paired"], [c.design for c in named]
    assert blocked_settings(parse_selector("osds=3,pool_size=2"), parse_selector("osds=4,pool_size=2")) == ["osds"]
    assert blocked_settings(parse_selector("osds=3"), parse_selector("pool_size=2")) == ["osds"]  # one side's only
    text = ("name: p\ntargets:\n  img: {kind: rbd, pool: b, image: i, size: 64MiB}\nworkload: {rw: randwrite}\n"
            "lab:\n  ceph: {osds: 3, pool_size: [2, 3]}\nrepeat: {until: decided, max: 6}\n"
            "compare: {baseline: 'osds=3,pool_size=2', candidate: 'osds=3,pool_size=3'}\n")
    load_plan_text(text, "p.yaml")  # refused before
    with pytest.raises(UserError, match="names osds, which needs a cluster per value"):
        load_plan_text(text.replace("candidate: 'osds=3", "candidate: 'osds=4").replace("osds: 3", "osds: [3, 4]"),
                       "p.yaml")


def test_a_selectors_repetition_keys_choose_the_pairs_and_run_means_too() -> None:
    """`--baseline repeat=1 --candidate repeat=5` (or fault=, status=) chose repetitions for the sides' summaries,
    but the paired and per-run paths read every repetition of the case again: a zero-width "no change" over three
    runs whose first repetitions were 30 % up, and a pairing over all rounds of what one round of each side said."""
    rng = random.Random(4)
    seen = []
    for run in (1, 2, 3):
        for i in range(5):
            start = run * 1e4 + i * 100.0
            seen.append(observation(case_id="a", run_id=run, repeat=i, iops=(1300.0 if i == 0 else 1000.0)
                                    * rng.gauss(1, 0.005), started_at_s=start, finished_at_s=start + 50))
    (first_vs_last,) = compare_observations(seen, parse_selector("repeat=1"), parse_selector("repeat=5"), {})
    cell = first_vs_last.cell("iops")
    assert cell is not None and cell.baseline is not None and cell.candidate is not None
    assert cell.baseline.mean == pytest.approx(1300, rel=0.02) and cell.candidate.mean == pytest.approx(1000, rel=0.02)
    assert cell.difference is not None and -26 < cell.difference.change_pct < -20, cell.difference
    # one interleaved run, each side one round at +50 %: what those rounds said, not every round's change
    paired = [o for o in _rounds(1, 3, factor=1.0)]
    paired = [replace(o, measurement=replace(o.measurement, iops=o.measurement.iops * 1.5))
              if o.rep_index == 0 and "size3" in o.case.case_id and o.measurement is not None else o for o in paired]
    (_, qd16) = compare_observations(paired, parse_selector("pool_size=2,repeat=1"),
                                     parse_selector("pool_size=3,repeat=1"), {}, interleaved_runs=frozenset({1}))
    iops = qd16.cell("iops")
    assert iops is not None and iops.difference is not None and iops.difference.change_pct > 35, iops.difference


def test_the_gate_gives_its_worst_cells_interval_and_claims_no_regression_only_as_not_shown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run 4 % lower: four cells are worse beyond 4 % at 5 % each, none at the 5 % shared over the table's eight.
    The gate passes and says a regression is neither shown nor ruled out (it had said "no regression ... as some of
    many cells do by chance", reading a test that did not decide as one that showed no change), with the worst
    cell's change and interval; a run 10 % lower fails it, its worst change given with the interval it was judged
    at."""
    def gate(factor: float) -> tuple[int, str]:
        db = tmp_path / f"gate-{factor}.db"
        _store(db, _rounds(1, 1))
        _store(db, _rounds(2, 2, factor=factor))
        code, _, err = run_cli(capsys, "compare", "--db", str(db), "--baseline", "run=1", "--candidate", "run=2",
                               "--fail-on-regression", "4")
        return code, " ".join(err.split())

    code, said = gate(0.96)
    assert code == 0 and "no regression shown with the 5 % error rate shared over 8 cells" in said, said
    assert re.search(r"4 cells look worse beyond 4 % at 5 % each \(worst IOPS -\d+\.\d % \[-\d+\.\d, -\d+\.\d\] "
                     r"at rbd randwrite 4k qd\d+ write, its 95 % interval\)", said), said
    assert "neither shown nor ruled out" in said and "by chance" not in said
    code, said = gate(0.90)
    assert code == 1 and re.search(r"regression: 8 significantly worse cells beyond 4 % .*; worst IOPS -\d+\.\d % "
                                   r"\[-\d+\.\d, -\d+\.\d\] at rbd randwrite 4k qd\d+ write, "
                                   r"its interval at that shared level$",
                                   said), said
