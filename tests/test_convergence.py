"""The answer converging: the stopping rule replayed look by look, and its figure in the HTML report.

Known answers on synthetic rounds: a large difference is decided at some look and the last look is the verdict
the run loop's own function gives; no difference is never called different. The report built from a store
holding such a run shows the figure, the verdict and the design beside it.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import run_cli, store_observations
from storbench.model import RunInfo
from storbench.report.convergence import convergence_figures, design_text
from storbench.report.figures import FigureSpec, Series
from storbench.report.html import ReportDocument, render_html
from storbench.stats.adaptive import decided_verdicts
from storbench.stats.compare import compare_observations
from storbench.stats.convergence import convergence, replay
from storbench.stats.observations import Observation
from storbench.stats.run_questions import AdaptiveQuestion, adaptive_questions
from storbench.stats.selectors import Question, parse_selector
from storbench.stats.sequential import Decision, SequentialPlan, decide
from storbench.store.migrations import design_of_text
from synthetic import observation

PLAN = """
name: replica-adaptive
targets:
  rbd: {{kind: rbd, pool: bench, image: storbench, size: 1GiB}}
workload: {{rw: randwrite, bs: 4k, iodepth: 16, runtime: 10s, ramp: 2s}}
repeat: {{min: 3, max: {max_rounds}, until: decided}}
compare: {{baseline: pool_size=2, candidate: pool_size=3, metrics: [iops]{margin}}}
lab:
  ceph: {{osds: 3, osd_size: 4GiB, pool_size: [2, 3]}}
"""
BASELINE, CANDIDATE = parse_selector("pool_size=2"), parse_selector("pool_size=3")
ROUND_S = 30.0  # each repetition takes 12 s, both sides' repetitions of a round 30 s with the gaps


def _rounds(ratio: float, rounds: int, spread: float = 0.04, seed: int = 7) -> list[Observation]:
    """``rounds`` balanced rounds of replica 2 vs 3, candidate IOPS = ``ratio`` x baseline, each repetition with
    independent noise of about ``spread``; the order within a round alternates (A B, B A, ...)."""
    rng = random.Random(seed)
    found = []
    for i in range(rounds):
        base = 1000.0 * (1 + rng.gauss(0, spread))
        cand = 1000.0 * ratio * (1 + rng.gauss(0, spread))
        order = ((2, base), (3, cand)) if i % 2 == 0 else ((3, cand), (2, base))
        for slot, (size, iops) in enumerate(order):
            start = i * ROUND_S + slot * 15.0
            found.append(observation(case_id=f"case-size{size}", target="rbd", target_kind="rbd", rw="randwrite",
                                     direction="write", iodepth=16, lab=f"lab=ceph pool_size={size}", repeat=i,
                                     iops=iops, started_at_s=start, finished_at_s=start + 12.0))
    return found


def test_a_large_difference_is_decided_and_the_last_look_is_the_run_loops_verdict() -> None:
    plan = SequentialPlan(min_rounds=3, max_rounds=12, margin=0.1)
    seen = _rounds(0.7, 12)
    [item] = convergence(seen, BASELINE, CANDIDATE, ["iops"], plan)
    assert [look.rounds for look in item.looks] == list(range(3, 13))
    assert item.first_decided is not None and item.first_decided <= 6
    assert all(look.decision == Decision.LOWER for look in item.looks if look.rounds >= item.first_decided)
    [final] = decided_verdicts(seen, BASELINE, CANDIDATE, ["iops"], plan)
    assert item.verdict == final.verdict and final.verdict.decision == Decision.LOWER
    last = item.looks[-1]
    assert final.verdict.change is not None
    assert (last.rounds, last.decision, last.estimate, last.low, last.high) == (
        12, Decision.LOWER, final.verdict.change.estimate, final.verdict.change.low, final.verdict.change.high)
    assert last.estimate is not None and -0.35 < last.estimate < -0.25
    # every look is what the run loop saw when only that many rounds were stored
    for look in item.looks:
        [then] = decided_verdicts([o for o in seen if o.rep_index < look.rounds], BASELINE, CANDIDATE, ["iops"], plan)
        assert then.verdict.change is not None
        assert (look.decision, look.estimate, look.low, look.high, look.confidence) == (
            then.verdict.decision, then.verdict.change.estimate, then.verdict.change.low, then.verdict.change.high,
            then.verdict.change.confidence)
    # the intervals narrow as the rounds come in: each look spends a little more of the error rate on more pairs
    widths = [look.high - look.low for look in item.looks if look.high is not None and look.low is not None]
    assert len(widths) == len(item.looks) and widths[-1] < widths[0] / 3


def test_no_difference_is_never_called_different() -> None:
    seen = _rounds(1.0, 12, spread=0.02)
    with_margin = SequentialPlan(min_rounds=3, max_rounds=12, margin=0.1)
    [item] = convergence(seen, BASELINE, CANDIDATE, ["iops"], with_margin)
    assert {look.decision for look in item.looks} <= {Decision.UNDECIDED, Decision.EQUIVALENT}
    assert item.verdict.decision == Decision.EQUIVALENT and item.looks[-1].decision == Decision.EQUIVALENT
    [without] = convergence(seen, BASELINE, CANDIDATE, ["iops"], SequentialPlan(min_rounds=3, max_rounds=12))
    assert {look.decision for look in without.looks} == {Decision.UNDECIDED} and without.first_decided is None


def test_replay_is_the_rule_on_the_first_pairs() -> None:
    plan = SequentialPlan(min_rounds=4, max_rounds=8)
    a, b = [100.0, 102.0, 98.0, 101.0, 99.0], [80.0, 83.0, 79.0, 81.0, 78.0]
    looks = replay(a, b, plan)
    assert [look.rounds for look in looks] == [4, 5]
    assert looks[0].decision == decide(a[:4], b[:4], plan).decision == Decision.LOWER
    assert [look.rounds for look in replay(a[:2], b[:2], plan)] == [2]  # fewer than min: only what there is
    assert replay(a[:1], b[:1], plan) == ()
    with pytest.raises(ValueError):
        replay(a, b[:3], plan)
    # a percentile whose rounds sit in one histogram bin a side: the run's rule decided nothing, as the replay must
    p99_a, p99_b = [1_130_496.0] * 8, [1_146_880.0] * 8
    assert decide(p99_a, p99_b, plan).decision == Decision.HIGHER  # the bare rule sees a zero-width interval
    assert {look.decision for look in replay(p99_a, p99_b, plan, metric="lat_p99_ns")} == {Decision.UNDECIDED}


def test_the_figure_draws_every_look_the_margin_and_the_verdict() -> None:
    question = AdaptiveQuestion(1, BASELINE, CANDIDATE, ("iops",), SequentialPlan(3, 12, margin=0.1))
    seen = _rounds(0.7, 9)
    run = RunInfo(run_id=1, plan_name="p", plan_text="", source="run", storbench_version="0", fio_version="",
                  host="h", kernel="k", run_order="interleaved", seed=0, tags=(), started_at_s=0.0,
                  finished_at_s=None)
    [figure] = convergence_figures([question], [run], [], seen)
    looks, _, verdict = figure.series
    assert looks.x == tuple(float(k) for k in range(3, 10)) and looks.error_y_minus is not None
    assert all(y < 0 for y in looks.y) and verdict.name == "verdict: worse" and verdict.marker_size > 10
    assert figure.y_lines == (0.0,) and [(b.low, b.high) for b in figure.y_bands] == [(-10.0, 10.0)]
    notes = dict(figure.notes)
    assert notes["verdict"].startswith("lower (worse): IOPS of pool_size=3 vs pool_size=2 changes by -")
    assert notes["design"].startswith("pool_size: interleaved on one cluster")
    assert notes["time"] == "unknown (no stored repetitions)"
    assert figure.y_range is not None and figure.y_range[0] >= -100
    # no margin: no band; another run's observations are not this run's question
    no_margin = replace(question, plan=SequentialPlan(3, 12))
    assert convergence_figures([no_margin], [run], [], seen)[0].y_bands == ()
    assert convergence_figures([replace(question, run_id=2)], [run], [], seen) == []


def test_design_text_names_a_blocked_setting() -> None:
    cases = [o.case for o in _rounds(0.7, 1)]
    question = AdaptiveQuestion(1, parse_selector("osds=3"), parse_selector("osds=6"), ("iops",), SequentialPlan())
    assert design_text(question, cases, "interleaved").startswith("design: blocked on osds")
    bs = AdaptiveQuestion(1, parse_selector("bs=4k"), parse_selector("bs=8k"), ("iops",), SequentialPlan())
    assert design_text(bs, cases, "interleaved").startswith("interleaved in one run (repetitions A B B A)")


def test_plan_texts_give_the_questions() -> None:
    def run_of(run_id: int, text: str) -> RunInfo:
        return RunInfo(run_id=run_id, plan_name="p", plan_text=text, source="run", storbench_version="0",
                       fio_version="", host="h", kernel="k", run_order="interleaved", seed=0, tags=(),
                       started_at_s=0.0, finished_at_s=None, design=design_of_text(text))

    run = run_of(4, PLAN.format(max_rounds=12, margin=", margin: 10%"))
    fixed = run_of(5, "name: f\ntargets: {d: {kind: path, path: ./d, size: 1MiB}}\n"
                   "workload: {rw: randread, bs: 4k}\nrepeat: 3\n")
    broken = run_of(6, "name: [")
    [question] = adaptive_questions([run, fixed, broken])
    assert (question.run_id, question.baseline.text, question.candidate.text, question.metrics) == (
        4, "pool_size=2", "pool_size=3", ("iops",))
    assert question.plan == SequentialPlan(min_rounds=3, max_rounds=12, margin=0.1)


def test_notes_from_a_plan_are_escaped() -> None:
    figure = FigureSpec(figure_id="f", title="t", x_label="x", y_label="y",
                        series=(Series(name="s", x=(1.0,), y=(1.0,)),),
                        notes=(("verdict", "<script>alert(1)</script>"), ("<b>design</b>", "A & B")))
    text = render_html(ReportDocument(title="r", runs=(), points=(), figures=(figure,)), "")
    assert "<script>alert(1)" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<th>&lt;b&gt;design&lt;/b&gt;</th><td>A &amp; B</td>" in text


def test_the_report_of_a_stored_adaptive_run_shows_the_answer_converging(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.db"
    store_observations(db, _rounds(0.7, 8), PLAN.format(max_rounds=12, margin=", margin: 10%"))
    report = tmp_path / "r.html"
    code, _, err = run_cli(capsys, "report", "--db", str(db), "-o", str(report), "--images", str(tmp_path / "img"))
    assert code == 0, err
    text = report.read_text()
    assert "<h2>The answer converging</h2>" in text
    assert "id='convergence-run1-1-iops' class='figure-plot'" in text
    notes = dict(re.findall(r"<tr><th>([a-z ]+)</th><td>([^<]*)</td></tr>", text))
    assert notes["verdict"].startswith("lower (worse): IOPS of pool_size=3 vs pool_size=2 changes by -")
    assert "the rule first decided it after" in notes["verdict"]
    assert notes["design"].startswith("pool_size: interleaved on one cluster (a pool per value, repetitions A B B A)")
    assert notes["rounds"].startswith("8 of at most 12")
    # the first repetition starts at 0 s, the last one at 7 x 30 + 15 s and takes 12 s: 237 s
    assert notes["time"].startswith("4.0 min for the whole run (16 repetitions in 8 rounds")
    assert notes["stopping rule"].startswith("group-sequential, looks after rounds 3-12")
    spec = re.search(r"data-target='convergence-run1-1-iops'>(.*?)</script>", text, flags=re.S)
    assert spec is not None
    figure = json.loads(spec.group(1).replace("<\\/", "</"))
    assert [t["name"] for t in figure["data"]] == ["change after each look", "looks that decide", "verdict: worse"]
    assert figure["data"][0]["x"] == [3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    assert (tmp_path / "img" / "convergence-run1-1-iops.png").read_bytes()[:4] == b"\x89PNG"
    _renders_in_chromium(report, tmp_path)


FIXED = """
name: replica-fixed
targets:
  rbd: {kind: rbd, pool: bench, image: storbench, size: 1GiB}
workload: {rw: randwrite, bs: 4k, iodepth: 16, runtime: 10s, ramp: 2s}
repeat: 8
lab:
  ceph: {osds: 3, osd_size: 4GiB, pool_size: [2, 3]}
"""


def _with_latency(seen: list[Observation]) -> list[Observation]:
    """The rounds with latencies that follow IOPS (Little's law at iodepth 16: mean, p95 2x, p99 3x), as fio
    reports them (its latency summaries count their samples)."""
    found = []
    for o in seen:
        assert o.measurement is not None
        mean = 16e9 / o.measurement.iops
        lat = replace(o.measurement.lat, samples=round(o.measurement.iops * 10), mean_ns=mean,
                      reported_percentiles_ns=((95.0, round(2 * mean)), (99.0, round(3 * mean))))
        found.append(replace(o, measurement=replace(o.measurement, lat=lat, clat=lat)))
    return found


@pytest.mark.parametrize("adaptive", [True, False])
def test_compare_marks_what_the_run_did_not_stop_on(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    adaptive: bool) -> None:
    """The plan asked about IOPS: in a run that stopped when that was decided, compare's table, Markdown, JSON, CSV
    and the report mark the other metrics as outside the stopping rule (†) with a line saying what their interval
    is; the same repetitions stored by a plan with a fixed count carry no such mark."""
    db = tmp_path / "r.db"
    store_observations(db, _with_latency(_rounds(0.7, 8)),
           PLAN.format(max_rounds=12, margin=", margin: 10%") if adaptive else FIXED)
    sides = ("--db", str(db), "--baseline", "pool_size=2", "--candidate", "pool_size=3")
    code, table, err = run_cli(capsys, "compare", *sides)
    assert code == 0, err
    row = next(line for line in table.splitlines() if "rbd randwrite 4k" in line)
    cells = [cell.strip() for cell in row.split("│")[1:-1]]
    iops, others = cells[3], cells[4:-1]
    assert iops.endswith("▼") and len(others) >= 2
    line = "† not the question its stopping rule asked (run 1: IOPS of pool_size=3 vs pool_size=2)"
    if adaptive:
        assert all(cell.endswith("▼†") or cell.endswith("~†") for cell in others), cells
        assert line in " ".join(table.split())
    else:
        assert "†" not in table and "‡" not in table
    code, out, err = run_cli(capsys, "compare", *sides, "--format", "json")
    assert code == 0, err
    rules = {row["metric"]: row["stopping_rule"] for row in json.loads(out)}
    assert rules == ({"iops": "in", "bw_bytes_per_s": "outside", "lat_mean_ns": "outside", "lat_p95_ns": "outside",
                      "lat_p99_ns": "outside"} if adaptive else dict.fromkeys(rules, None))
    assert len(rules) == 5
    code, out, err = run_cli(capsys, "compare", *sides, "--format", "csv")
    assert code == 0, err
    csv_rules = {row["metric"]: row["stopping_rule"] for row in csv.DictReader(io.StringIO(out))}
    assert csv_rules == {k: v or "" for k, v in rules.items()}
    code, out, err = run_cli(capsys, "compare", *sides, "--format", "markdown")
    assert code == 0, err
    assert (f"- {line}" in out and "▼ |" in out and "▼† |" in out) is adaptive
    report = tmp_path / "r.html"
    code, _, err = run_cli(capsys, "report", *sides, "-o", str(report))
    assert code == 0, err
    comparison = report.read_text().split("<h2>Comparison</h2>")[1].split("</section>")[0]
    assert ("▼†</td>" in comparison and f"<p>{line}" in comparison) is adaptive
    assert "†" in comparison or not adaptive


def test_the_gate_leaves_out_plain_intervals_on_a_stopped_runs_repetitions(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Run 1 stopped when decided, run 2 is a fixed-count run 40 % slower: across the runs every interval is
    Welch's on repetitions whose number run 1's rule chose (‡), so --fail-on-regression does not judge them and
    says so; the same two runs without the rule fail the gate."""
    for plan, db in ((PLAN.format(max_rounds=12, margin=""), tmp_path / "a.db"), (FIXED, tmp_path / "f.db")):
        store_observations(db, _with_latency(_rounds(0.7, 8)), plan)
        store_observations(db, _with_latency(_rounds(0.42, 8, seed=8)), FIXED)
        code, out, err = run_cli(capsys, "compare", "--db", str(db), "--baseline", "run=1,pool_size=3",
                                 "--candidate", "run=2,pool_size=3", "--fail-on-regression", "10")
        if plan is FIXED:
            assert code == 1 and "regression: " in err, err
            assert "‡" not in out
            continue
        assert code == 0, err
        assert "▼‡" in out and "‡ a plain interval on repetitions whose number a stopping rule chose" in " ".join(
            out.split())
        assert "--fail-on-regression leaves out 5 cells (‡)" in err


def _renders_in_chromium(report: Path, tmp_path: Path) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (scripts/setup.sh --dev installs it)")
    done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--virtual-time-budget=15000", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                           report.as_uri()], capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r'data-report-status="([^"]*)"', done.stdout)
    assert found is not None, done.stderr[-500:]
    status = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert status["errors"] == [] and status["empty"] == [] and status["rendered"] == status["figures"]


def test_compare_says_which_fields_keep_two_runs_apart_and_refuses_another_engine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Run 1 on target a with libaio, run 2 on target b with io_uring: `--baseline 1 --candidate 2` names both
    differences and how to compare across them; naming only the target compares targets, not engines (x)."""
    db = tmp_path / "r.db"
    for run, target, engine in ((1, "a", "libaio"), (2, "b", "io_uring")):
        rows = [observation(case_id=f"case-{target}", run_id=run, target=target, ioengine=engine, repeat=i,
                            iops=1000.0 + 10 * i, started_at_s=40.0 * i, finished_at_s=40.0 * i + 35)
                for i in range(3)]
        store_observations(db, rows, FIXED)
    code, _, err = run_cli(capsys, "compare", "--db", str(db), "--baseline", "1", "--candidate", "run=2")
    assert code == 2
    assert "no point in common: the sides differ in target (a vs b) and ioengine (libaio vs io_uring); name them " \
        "in the selectors to compare across them (--baseline run=1,target=a,ioengine=libaio --candidate " \
        "run=2,target=b,ioengine=io_uring)" in " ".join(err.split()), err
    code, out, err = run_cli(capsys, "compare", "--db", str(db), "--baseline", "target=a", "--candidate", "target=b",
                             "--format", "json")
    assert code == 0, err
    rows = json.loads(out)
    assert rows and all(r["verdict"] == "x" and not r["comparable"] for r in rows)
    assert {r["reason"] for r in rows} == {"different ioengine (libaio vs io_uring)"}


def test_each_compared_metric_of_the_question_carries_the_rules_final_verdict() -> None:
    """The cell of the plan's question gets what the run loop decided on all the pairs (decision, rounds, change
    at the last look), turned when compare's sides are the other way round; cells outside the question get none."""
    plan = SequentialPlan(min_rounds=3, max_rounds=12, margin=0.1)
    seen = _with_latency(_rounds(0.7, 9))
    question = Question(BASELINE, CANDIDATE, ("iops",))
    [final] = decided_verdicts(seen, BASELINE, CANDIDATE, ["iops"], plan)
    [c] = compare_observations(seen, BASELINE, CANDIDATE, {}, interleaved_runs=frozenset({1}),
                               sequential_plans={1: plan}, questions={1: question})
    answer = c.cell("iops").answer  # type: ignore[union-attr]
    assert answer is not None and final.verdict.change is not None
    assert (answer.decision, answer.rounds, answer.max_rounds, answer.change) == (
        Decision.LOWER, 9, 12, final.verdict.change)
    # 9 rounds of 30 s, the last repetition ending 27 s into its round
    assert answer.minutes == pytest.approx((8 * 30 + 27) / 60)
    assert answer.text().startswith("lower (-") and answer.text().endswith(" after 9 of at most 12 rounds, 4.5 min")
    assert all(cell.answer is None for cell in c.cells if cell.metric.field != "iops")
    [back] = compare_observations(seen, CANDIDATE, BASELINE, {}, interleaved_runs=frozenset({1}),
                                  sequential_plans={1: plan}, questions={1: question})
    turned = back.cell("iops").answer  # type: ignore[union-attr]
    assert turned is not None and turned.decision == Decision.HIGHER and turned.change is not None
    assert turned.change.estimate == pytest.approx(1 / (1 + final.verdict.change.estimate) - 1)
    assert turned.change.low == pytest.approx(1 / (1 + final.verdict.change.high) - 1)


@pytest.mark.parametrize(("ratio", "spread", "margin", "answer"), [
    (1.0, 0.02, ", margin: 10%", "equivalent within ±10 % ("),
    (1.0, 0.3, "", "reached max 12 rounds undecided ("),
])
def test_compare_and_the_report_give_the_rules_answer_true_to_what_happened(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], ratio: float, spread: float, margin: str,
        answer: str) -> None:
    """A run that decided 'equivalent' shows that answer, not only ~; one that reached max undecided says so, and
    nothing says it stopped when decided."""
    db = tmp_path / "r.db"
    store_observations(db, _with_latency(_rounds(ratio, 12, spread=spread)), PLAN.format(max_rounds=12, margin=margin))
    sides = ("--db", str(db), "--baseline", "pool_size=2", "--candidate", "pool_size=3")
    code, table, err = run_cli(capsys, "compare", *sides)
    assert code == 0, err
    flat = " ".join(table.split())
    assert f"run 1's stopping rule, IOPS at rbd randwrite 4k qd16 write: {answer}" in flat, flat
    assert "stopped when decided" not in flat
    code, out, err = run_cli(capsys, "compare", *sides, "--format", "json")
    assert code == 0, err
    row = next(r for r in json.loads(out) if r["metric"] == "iops")
    assert row["rule_verdict"] == ("equivalent" if margin else "undecided")
    assert row["rule_rounds"] == 12 and row["rule_max_rounds"] == 12 and row["rule_minutes"] > 0
    assert row["rule_answer"].startswith(answer)
    assert all(r["rule_verdict"] is None for r in json.loads(out) if r["metric"] != "iops")
    code, out, err = run_cli(capsys, "compare", *sides, "--format", "csv")
    assert code == 0, err
    assert next(r for r in csv.DictReader(io.StringIO(out)) if r["metric"] == "iops")["rule_answer"].startswith(answer)
    code, out, err = run_cli(capsys, "compare", *sides, "--format", "markdown")
    assert code == 0, err
    assert f"- run 1's stopping rule, IOPS at rbd randwrite 4k qd16 write: {answer}" in out
    report = tmp_path / "r.html"
    code, _, err = run_cli(capsys, "report", *sides, "-o", str(report))
    assert code == 0, err
    comparison = report.read_text().split("<h2>Comparison</h2>")[1].split("</section>")[0]
    assert f"<p>run 1&#x27;s stopping rule, IOPS at rbd randwrite 4k qd16 write: {answer}" in comparison


def test_the_rules_answer_in_words_says_what_happened() -> None:
    from storbench.stats.compare_cells import RuleAnswer
    from storbench.stats.sequential import PairedChange

    change = PairedChange(n=7, estimate=-0.018, low=-0.093, high=0.063, confidence=0.99, log_sd=0.05)
    equivalent = RuleAnswer(Decision.EQUIVALENT, rounds=7, max_rounds=10, margin=0.1, change=change, minutes=12.5)
    assert equivalent.text() == "equivalent within ±10 % (-1.8 % [-9.3, +6.3]) after 7 of at most 10 rounds, 12.5 min"
    # the question turned round: +0.0 % [-4.7, +5.2] is the inverse of a ratio inside +-5 %, and says so
    turned = replace(equivalent, margin=0.05, turned=True,
                     change=PairedChange(n=7, estimate=0.0, low=-0.047, high=0.052, confidence=0.99, log_sd=0.05))
    assert turned.text().startswith("equivalent within ±5 % of the plan's question, asked the other way round "
                                    "(+0.0 % [-4.7, +5.2])")
    at_max = replace(equivalent, decision=Decision.UNDECIDED, rounds=10)
    assert at_max.text() == "reached max 10 rounds undecided (-1.8 % [-9.3, +6.3]), 12.5 min"
    early = replace(at_max, rounds=6, minutes=None, change=None)
    assert early.text() == ("undecided after 6 of at most 10 rounds (no pairs): the run ended before max (a --budget, "
                            "or interrupted; --resume goes on)")
    assert "stopped when decided" not in at_max.text() + early.text()


def test_a_run_stopped_before_its_first_look_shows_one_interval_not_two() -> None:
    """Stopped (Ctrl-C, --budget) after 2 rounds of `min: 5`: no look was made. The rule's answer had a plain 95 %
    interval while the table's cell, on the same pairs, had the first look's wider one; both are the first look's."""
    from storbench.stats.sequential import paired_change

    plan = SequentialPlan(min_rounds=5, max_rounds=12, margin=0.1)
    seen = _with_latency(_rounds(0.9, 3))
    question = Question(BASELINE, CANDIDATE, ("iops",))
    [c] = compare_observations(seen, BASELINE, CANDIDATE, {}, interleaved_runs=frozenset({1}),
                               sequential_plans={1: plan}, questions={1: question})
    cell = c.cell("iops")
    assert cell is not None and cell.answer is not None and cell.answer.change is not None
    assert cell.answer.decision == Decision.UNDECIDED
    def side(size: int) -> list[float]:
        return [o.measurement.iops for o in sorted(seen, key=lambda o: o.rep_index)
                if o.measurement is not None and o.case.lab.ceph is not None and o.case.lab.ceph.pool_size == size]

    a, b = side(2), side(3)
    plain = paired_change(a, b)
    assert plain is not None and cell.answer.change.high - cell.answer.change.low > plain.high - plain.low
    assert cell.difference is not None and cell.difference.change_ci_low_pct == pytest.approx(
        100 * cell.answer.change.low, rel=1e-6)


def test_compare_and_the_report_take_the_comparison_the_plan_names_when_given_no_sides(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A plan's `compare:` with a fixed repeat was accepted and then read by nothing: `compare` refused without
    --baseline and --candidate, and the report had no Comparison section. Now both take the latest run's question
    (saying so), and refuse in one line where it names none."""
    db = tmp_path / "r.db"
    store_observations(db, _with_latency(_rounds(0.7, 8)),
                       FIXED + "compare: {baseline: pool_size=2, candidate: pool_size=3}\n", plan_name="replica-fixed")
    code, out, err = run_cli(capsys, "compare", "--db", str(db))
    assert code == 0, err
    words = " ".join(out.split())
    assert words.startswith("the comparison the plan of run 1 asks (compare: baseline pool_size=2, candidate "
                            "pool_size=3); --baseline and --candidate choose another"), words
    row = next(line for line in out.splitlines() if "rbd randwrite 4k" in line)
    assert row.split("│")[4].strip().endswith("▼"), row  # IOPS 30 % down
    code, out, err = run_cli(capsys, "compare", "--db", str(db), "--format", "json")
    assert code == 0 and "the comparison the plan of run 1 asks" in " ".join(err.split())
    assert {row["metric"] for row in json.loads(out)} >= {"iops", "lat_p99_ns"}
    for form in ("markdown", "table"):  # a file written holds where its sides came from, without the CLI's advice
        written = tmp_path / f"c.{form}"
        code, out, err = run_cli(capsys, "compare", "--db", str(db), "--format", form, "-o", str(written))
        text = " ".join(written.read_text().split())
        assert code == 0 and (out, err) == ("", ""), out + err
        assert text.startswith("the comparison the plan of run 1 asks (compare: baseline pool_size=2, candidate "
                               "pool_size=3)") and "choose another" not in text, text[:300]
    # sides that share no point: the plan's comparison is said first, then why it cannot be made
    apart = tmp_path / "apart.db"
    store_observations(apart, [replace(o, case=replace(o.case, workload=replace(o.case.workload, iodepth=8)))
                               if o.case.lab.ceph is not None and o.case.lab.ceph.pool_size == 3 else o
                               for o in _with_latency(_rounds(0.7, 4))],
                       FIXED + "compare: {baseline: pool_size=2, candidate: pool_size=3}\n", plan_name="replica-fixed")
    code, out, err = run_cli(capsys, "compare", "--db", str(apart))
    said = " ".join(err.split())
    assert (code, out) == (2, ""), out
    assert said.startswith("the comparison the plan of run 1 asks (compare: baseline pool_size=2, candidate "
                           "pool_size=3); --baseline and --candidate choose another storbench: error: no point in "
                           "common: the sides differ in iodepth (16 vs 8)"), said
    code, out, err = run_cli(capsys, "compare", "--db", str(db), "--candidate", "pool_size=3")
    assert (code, out) == (2, "") and err.strip() == ("storbench: error: --baseline and --candidate go together "
                                                      "(hint: give both, or neither for the compare: of the latest "
                                                      "run's plan)")
    report = tmp_path / "r.html"
    code, out, err = run_cli(capsys, "report", "--db", str(db), "-o", str(report))
    assert code == 0 and "the comparison the plan of run 1 asks (compare: baseline pool_size=2" in out, out + err
    comparison = report.read_text().split("<h2>Comparison</h2>")[1].split("</section>")[0]
    assert "pool_size=2" in comparison and "pool_size=3" in comparison and "▼</td>" in comparison
    assert ("<code>pool_size=3</code>, the comparison the plan of run 1 asks (its <code>compare:</code>): change"
            in comparison), comparison[:400]
    code, out, err = run_cli(capsys, "report", "--db", str(db), "-o", str(report), "--baseline", "pool_size=2",
                             "--candidate", "pool_size=3")  # sides the command line names: not the plan's
    comparison = report.read_text().split("<h2>Comparison</h2>")[1].split("</section>")[0]
    assert code == 0 and "<code>pool_size=3</code>: change" in comparison and "asks (its" not in comparison, err
    store_observations(db, _with_latency(_rounds(0.7, 8)),  # run 2 of the same plan: both runs ask it
                       FIXED + "compare: {baseline: pool_size=2, candidate: pool_size=3}\n", plan_name="replica-fixed")
    code, out, err = run_cli(capsys, "report", "--db", str(db), "-o", str(report), "--run", "all")
    comparison = report.read_text().split("<h2>Comparison</h2>")[1].split("</section>")[0]
    assert code == 0 and ", the comparison the plans of runs 1, 2 ask (their <code>compare:</code>): change" in \
        comparison, comparison[:400]
    code, out, err = run_cli(capsys, "report", "--db", str(db), "-o", str(report), "--where", "pool_size=3",
                             "--run", "1")
    assert code == 0 and "<h2>Comparison</h2>" not in report.read_text(), err
    assert ("no Comparison section: compare.baseline 'pool_size=2' matches no results in "
            f"{db} among those --where pool_size=3 kept") in " ".join(out.split()), out
    unasked = tmp_path / "u.db"  # the same results, by a plan that names no comparison
    store_observations(unasked, _with_latency(_rounds(0.7, 8)), FIXED, plan_name="replica-fixed")
    code, out, err = run_cli(capsys, "compare", "--db", str(unasked))
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "the plan of run 1 names no comparison (compare:), and no --baseline and --candidate are given" in err
    code, out, err = run_cli(capsys, "report", "--db", str(unasked), "-o", str(report))
    assert code == 0 and "<h2>Comparison</h2>" not in report.read_text() and "Comparison" not in out, out + err
    store_observations(unasked, _with_latency(_rounds(0.7, 8)),  # run 2 asks; pooled with run 1, which does not
                       FIXED + "compare: {baseline: pool_size=2, candidate: pool_size=3}\n", plan_name="replica-fixed")
    code, out, err = run_cli(capsys, "report", "--db", str(unasked), "-o", str(report), "--run", "all")
    assert code == 0 and "<h2>Comparison</h2>" not in report.read_text(), err
    assert ("no Comparison section: the plans of runs 1, 2 do not all name one comparison (compare:)"
            in " ".join(out.split())), out
    code, out, err = run_cli(capsys, "compare", "--db", str(unasked))  # the latest run's question, in that run
    assert code == 0 and "the comparison the plan of run 2 asks" in " ".join(out.split()), out + err
