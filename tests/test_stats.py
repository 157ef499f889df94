"""Known-answer tests for storbench.stats on synthetic records: estimates, Welch differences, verdicts, knees,
latency objectives, drift and summary warnings."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import replace

import pytest
from scipy import stats as scipy_stats

from storbench.model.objective import parse_slo
from storbench.report.labels import curve_label
from storbench.report.show_export import drift_lines
from storbench.schedule import round_order
from storbench.stats.compare import compare_observations
from storbench.stats.compare_cells import Verdict, regressions
from storbench.stats.compare_match import compare_points, no_common_point, side_differences
from storbench.stats.drift import drift, run_drifts
from storbench.stats.estimate import Estimate, estimate, welch_difference
from storbench.stats.knee import KneeKind, best_under_objective, curves, locate_knee
from storbench.stats.observations import Observation
from storbench.stats.point_summary import PointSummary
from storbench.stats.selectors import parse_selector, select
from storbench.stats.summary import summarize_points
from storbench.units import format_block_size
from synthetic import observation

# ---------------------------------------------------------------------------------------------------------------
# Synthetic records

_BASE = dict(
    case_id="case-a", run_id=1, target="a", target_kind="path", rw="randread", rwmixread=None, bs="4k",
    bs_bytes=4096, iodepth=1, numjobs=1, clients=1, ioengine="libaio", direct=True, runtime_s=30.0, ramp_s=5.0,
    size_bytes=1 << 30, fio_options="", lab="", repeat=0, direction="read", status="ok", started_at_s=0.0,
    finished_at_s=35.0, fio_version="fio-3.36", iops=1000.0, bw_bytes_per_s=1000.0 * 4096, total_ios=30000,
    io_bytes=30000 * 4096, lat_mean_ns=1e6, lat_p50_ns=900_000, lat_p95_ns=1_500_000, lat_p99_ns=2_000_000,
    lat_p999_ns=3_000_000, cpu_usr_pct=1.0, cpu_sys_pct=2.0, disk_util_pct=50.0, error="", process_cpu_cores=(),
    disk_busiest="", net_busiest="", node_busiest="",
)


def rec(**changes: object) -> Observation:
    """An observation: the base record's fields with some replaced."""
    return observation(**{**_BASE, **changes})


def reps(values: Sequence[float], field: str = "iops", **changes: object) -> list[Observation]:
    """One record per repetition, the given field taking each value in turn."""
    return [rec(repeat=i, **{field: v}, **changes) for i, v in enumerate(values)]


def only(points: Sequence[PointSummary]) -> PointSummary:
    assert len(points) == 1, points
    return points[0]


def codes(point: PointSummary) -> set[str]:
    return {w.code for w in point.warnings}


# ---------------------------------------------------------------------------------------------------------------
# 1. estimate


def test_estimate_known_interval() -> None:
    e = estimate([10, 12, 14, 16, 18])
    assert e is not None
    assert e.n == 5
    assert e.mean == pytest.approx(14.0)
    assert e.stddev == pytest.approx(math.sqrt(10))
    t = 2.7764451051977987  # t_{0.975, 4}
    assert e.half_width == pytest.approx(t * math.sqrt(10) / math.sqrt(5), abs=1e-9)
    assert e.half_width == pytest.approx(3.9265, abs=1e-3)
    assert e.ci_low == pytest.approx(14 - 3.9265, abs=1e-3)
    assert e.ci_high == pytest.approx(14 + 3.9265, abs=1e-3)
    assert e.confidence == 0.95
    assert e.half_width_pct == pytest.approx(100 * 3.9265 / 14, abs=1e-2)


def test_estimate_cv() -> None:
    e = estimate([10, 12, 14, 16, 18])
    assert e is not None and e.cv_pct is not None
    assert e.cv_pct == pytest.approx(100 * math.sqrt(10) / 14)  # ≈ 22.59 %
    assert estimate([5, 5, 5]).cv_pct == 0.0  # type: ignore[union-attr]


def test_estimate_single_value_has_no_interval() -> None:
    e = estimate([42.0])
    assert e is not None
    assert (e.n, e.mean, e.ci_low, e.ci_high, e.half_width, e.cv_pct) == (1, 42.0, None, None, None, None)


def test_estimate_empty_and_nan() -> None:
    assert estimate([]) is None
    assert estimate([math.nan]) is None
    e = estimate([1.0, math.nan, 3.0])
    assert e is not None and e.n == 2 and e.mean == 2.0


def test_estimate_other_confidence() -> None:
    e = estimate([10, 12, 14, 16, 18], confidence=0.90)
    assert e is not None
    assert e.half_width == pytest.approx(scipy_stats.t.ppf(0.95, 4) * math.sqrt(2), abs=1e-9)


def test_estimate_coverage_simulation() -> None:
    rng = random.Random(1)
    trials = 2000
    covered = 0
    for _ in range(trials):
        e = estimate([rng.gauss(100, 10) for _ in range(5)])
        assert e is not None and e.ci_low is not None and e.ci_high is not None
        covered += e.ci_low <= 100 <= e.ci_high
    assert 0.93 <= covered / trials <= 0.97


# ---------------------------------------------------------------------------------------------------------------
# 2. welch_difference

WELCH_CASES = [
    ([100.0, 102.0, 98.0, 101.0, 99.0], [90.0, 95.0, 85.0, 92.0, 88.0]),
    ([1000.0, 1010.0, 990.0], [1100.0, 1050.0, 1150.0, 1120.0, 1080.0, 1090.0]),
    ([5.0, 7.0], [6.0, 6.5, 5.5, 6.2]),
    ([1.0, 2.0, 3.0, 4.0], [1.5, 2.5, 3.5, 4.5]),
]


@pytest.mark.parametrize(("baseline", "candidate"), WELCH_CASES)
def test_welch_matches_scipy(baseline: list[float], candidate: list[float]) -> None:
    b, c = estimate(baseline), estimate(candidate)
    assert b is not None and c is not None
    d = welch_difference(b, c)
    ref = scipy_stats.ttest_ind(candidate, baseline, equal_var=False).confidence_interval(0.95)
    assert d.diff == pytest.approx(statistics.fmean(candidate) - statistics.fmean(baseline), abs=1e-9)
    assert d.ci_low == pytest.approx(ref.low, abs=1e-9)
    assert d.ci_high == pytest.approx(ref.high, abs=1e-9)
    assert d.significant == (ref.low > 0 or ref.high < 0)


def test_welch_percent_interval_is_the_ratios_on_the_log_scale() -> None:
    b, c = estimate([100.0, 102.0, 98.0, 101.0, 99.0]), estimate([90.0, 95.0, 85.0, 92.0, 88.0])
    assert b is not None and c is not None
    d = welch_difference(b, c)
    assert d.ci_low is not None and d.ci_high is not None
    assert d.change_pct == pytest.approx(100 * (90.0 - 100.0) / 100.0)
    # by hand: se of log(ratio) from s^2/(n mean^2) on each side, Welch-Satterthwaite df, t quantile from scipy
    ab, ac = b.stddev**2 / (b.n * b.mean**2), c.stddev**2 / (c.n * c.mean**2)
    df = (ab + ac) ** 2 / (ab**2 / (b.n - 1) + ac**2 / (c.n - 1))
    half = scipy_stats.t.ppf(0.975, df) * math.sqrt(ab + ac)
    assert d.change_ci_low_pct == pytest.approx(100 * (0.9 * math.exp(-half) - 1))
    assert d.change_ci_high_pct == pytest.approx(100 * (0.9 * math.exp(half) - 1))
    assert d.significant  # -10 % with ~2 % noise


def test_a_percent_change_interval_never_runs_below_minus_100() -> None:
    b, c = estimate([100.0, 101.0, 99.0]), estimate([2.0, 60.0, 30.0])  # a collapse measured noisily
    assert b is not None and c is not None
    d = welch_difference(b, c)
    assert d.ci_low is not None and 100 * d.ci_low / b.mean < -100  # what the old interval said
    assert d.change_ci_low_pct is not None and -100 < d.change_ci_low_pct < d.change_pct < d.change_ci_high_pct


@pytest.mark.parametrize(("baseline", "candidate"), [([100.0], [90.0, 91.0, 92.0]), ([100.0, 101.0], [90.0])])
def test_welch_single_repetition_has_no_interval(baseline: list[float], candidate: list[float]) -> None:
    b, c = estimate(baseline), estimate(candidate)
    assert b is not None and c is not None
    d = welch_difference(b, c)
    assert d.diff == pytest.approx(c.mean - b.mean)
    assert d.change_pct == pytest.approx(100 * (c.mean - b.mean) / b.mean)
    assert (d.ci_low, d.ci_high, d.change_ci_low_pct, d.change_ci_high_pct) == (None, None, None, None)
    assert not d.significant


# ---------------------------------------------------------------------------------------------------------------
# 3. verdicts: no difference, a difference, which way is better


def _summaries(values: Sequence[float], field: str = "iops", **changes: object) -> list[PointSummary]:
    return summarize_points(reps(values, field, **changes))


def test_same_distribution_is_mostly_no_difference() -> None:
    rng = random.Random(7)
    trials = 300
    same = 0
    for _ in range(trials):
        base = _summaries([rng.gauss(1000, 50) for _ in range(5)], run_id=1)
        cand = _summaries([rng.gauss(1000, 50) for _ in range(5)], run_id=2)
        cell = only(compare_points(base, cand, frozenset())).cell("iops")
        assert cell is not None and cell.verdict in (Verdict.UNDECIDED, Verdict.BETTER, Verdict.WORSE)
        same += cell.verdict == Verdict.UNDECIDED
    assert same / trials >= 0.90  # ≈ 0.95 expected


def test_twenty_percent_lower_iops_is_worse() -> None:
    rng = random.Random(11)
    trials = 100
    worse = 0
    for _ in range(trials):
        base = _summaries([rng.gauss(1000, 20) for _ in range(5)], run_id=1)
        cand = _summaries([rng.gauss(800, 16) for _ in range(5)], run_id=2)
        cell = only(compare_points(base, cand, frozenset())).cell("iops")
        assert cell is not None
        worse += cell.verdict == Verdict.WORSE
    assert worse / trials >= 0.99


def test_latency_lower_is_better_higher_is_worse() -> None:
    base = _summaries([2.0e6, 2.04e6, 1.96e6, 2.02e6, 1.98e6], "lat_p99_ns", run_id=1)
    lower = _summaries([1.6e6, 1.63e6, 1.57e6, 1.61e6, 1.59e6], "lat_p99_ns", run_id=2)
    higher = _summaries([2.4e6, 2.45e6, 2.35e6, 2.42e6, 2.38e6], "lat_p99_ns", run_id=2)
    better = only(compare_points(base, lower, frozenset())).cell("lat_p99_ns")
    assert better is not None and better.verdict == Verdict.BETTER
    assert better.difference is not None and better.difference.change_pct == pytest.approx(-20.0, abs=0.5)
    worse = only(compare_points(base, higher, frozenset())).cell("lat_p99_ns")
    assert worse is not None and worse.verdict == Verdict.WORSE


def test_higher_iops_is_better() -> None:
    base = _summaries([1000, 1010, 990, 1005, 995], run_id=1)
    cand = _summaries([1200, 1210, 1190, 1205, 1195], run_id=2)
    cell = only(compare_points(base, cand, frozenset())).cell("iops")
    assert cell is not None and cell.verdict == Verdict.BETTER


def test_single_repetition_verdict_is_same() -> None:
    base = _summaries([1000], run_id=1)
    cand = _summaries([500], run_id=2)
    cell = only(compare_points(base, cand, frozenset())).cell("iops")
    assert cell is not None and cell.verdict == Verdict.UNDECIDED
    assert cell.difference is not None and cell.difference.change_pct == pytest.approx(-50.0)


# ---------------------------------------------------------------------------------------------------------------
# 4. matching, comparability, selectors, regressions

IOPS_A = [1000.0, 1010.0, 990.0]
IOPS_B = [800.0, 808.0, 792.0]


@pytest.mark.parametrize(
    "field_value",
    [("target", "b"), ("rw", "randwrite"), ("bs", "8k"), ("iodepth", 4), ("numjobs", 2), ("direction", "write")],
)
def test_points_match_on_match_fields_unless_ignored(field_value: tuple[str, object]) -> None:
    field, value = field_value
    changes: dict[str, object] = {field: value}
    if field == "bs":
        changes["bs_bytes"] = 8192
    base = _summaries(IOPS_A, run_id=1)
    cand = _summaries(IOPS_B, run_id=2, **changes)
    assert compare_points(base, cand, frozenset()) == []
    pair = only(compare_points(base, cand, frozenset({field})))
    assert pair.comparable and pair.reason == ""
    assert dict(pair.key).get(field) is None
    cell = pair.cell("iops")
    assert cell is not None and cell.verdict == Verdict.WORSE


def test_points_pair_by_key() -> None:
    base = summarize_points([*reps(IOPS_A, run_id=1, case_id="q1", iodepth=1),
                             *reps(IOPS_A, run_id=1, case_id="q8", iodepth=8)])
    cand = summarize_points([*reps(IOPS_B, run_id=2, case_id="q8", iodepth=8),
                             *reps([1000.0, 1000.0, 1000.0], run_id=2, case_id="q1", iodepth=1),
                             *reps(IOPS_A, run_id=2, case_id="q32", iodepth=32)])
    pairs = compare_points(base, cand, frozenset())
    assert [(p.baseline.iodepth, p.candidate.iodepth) for p in pairs] == [(8, 8), (1, 1)]
    verdicts = [p.cell("iops").verdict for p in pairs]  # type: ignore[union-attr]
    assert verdicts == [Verdict.WORSE, Verdict.UNDECIDED]


@pytest.mark.parametrize(
    ("changes", "reason"),
    [({"fio_version": "fio-3.28"}, "different fio versions"),
     ({"ioengine": "io_uring"}, "different ioengine (libaio vs io_uring)")],
)
def test_incomparable_points_and_force(changes: dict[str, object], reason: str) -> None:
    base = _summaries(IOPS_A, run_id=1)
    cand = _summaries(IOPS_B, run_id=2, **changes)
    pair = only(compare_points(base, cand, frozenset()))
    assert not pair.comparable
    assert pair.reason == reason
    assert pair.cells and all(c.verdict == Verdict.NOT_COMPARABLE for c in pair.cells)
    forced = only(compare_points(base, cand, frozenset(), force=True))
    assert forced.comparable
    cell = forced.cell("iops")
    assert cell is not None and cell.verdict == Verdict.WORSE
    # Naming the field in a selector (ignore) makes the comparison deliberate: comparable.
    field = "fio_versions" if "fio_version" in changes else "ioengine"
    assert only(compare_points(base, cand, frozenset({field}))).comparable


def test_an_import_is_not_set_against_a_run_of_another_engine_or_latency_kind() -> None:
    """Hand-run imports (libaio, an `imported` target, p99 from completion latency) against storbench's io_uring
    points on another target: naming the target compares targets, not engines nor latency kinds, so the pair is
    x with its reasons; naming those fields too makes it deliberate."""
    imported = reps(IOPS_A, run_id=2, case_id="imp", target="hand", target_kind="imported", lat_p99_ns=2_000_000)
    # fio's default json+ has completion-latency percentiles only: the synthetic lat carries them, so move them
    imported = [replace(o, measurement=replace(o.measurement, lat=replace(o.measurement.lat,
                                                                        reported_percentiles_ns=())))
                for o in imported if o.measurement is not None]
    ran = reps(IOPS_B, run_id=1, case_id="run", target="nvme", ioengine="io_uring", lat_p99_ns=2_100_000)
    summaries = summarize_points([*imported, *ran])
    assert [p.lat_percentiles_from for p in summaries] == ["clat", "lat"]
    pair = only(compare_points(summaries[:1], summaries[1:], frozenset({"target", "run_id"})))
    assert not pair.comparable
    assert pair.reason == "different ioengine (libaio vs io_uring), latency kind (p95, p99: clat vs lat)"
    assert {c.verdict for c in pair.cells} == {Verdict.NOT_COMPARABLE}
    assert only(compare_points(summaries[:1], summaries[1:], frozenset(
        {"target", "ioengine", "lat_percentiles_from"}))).comparable
    # the same through the selectors, as `compare` builds them
    found = only(compare_observations([*imported, *ran], parse_selector("run=2,target=hand"),
                                      parse_selector("run=1,target=nvme"), {}))
    assert not found.comparable and found.reason.startswith("different ioengine (libaio vs io_uring)")
    # one local disk against another of another kind: the kind does not dictate the engine either
    block = summarize_points(reps(IOPS_B, run_id=1, case_id="blk", target="sdb", target_kind="block",
                                  ioengine="io_uring"))
    local = summarize_points(reps(IOPS_A, run_id=2, case_id="dir", target="a"))
    assert only(compare_points(local, block, frozenset({"target"}))).reason == "different ioengine (libaio vs io_uring)"
    # an rbd image's engine follows from its kind: comparing targets compares it too
    rbd = summarize_points(reps(IOPS_B, run_id=1, case_id="img", target="img", target_kind="rbd", ioengine="rbd"))
    assert only(compare_points(local, rbd, frozenset({"target"}))).comparable


def test_sides_with_no_point_in_common_say_which_fields_differ() -> None:
    records = [*reps(IOPS_A, run_id=2, case_id="a", target="a"),
               *reps(IOPS_B, run_id=1, case_id="b", target="b", ioengine="io_uring")]
    two, one = parse_selector("run=2"), parse_selector("1")
    assert compare_observations(records, two, one, {}) == []
    assert no_common_point(records, two, one, {}) == (
        "no point in common: the sides differ in target (a vs b) and ioengine (libaio vs io_uring); name them in "
        "the selectors to compare across them (--baseline run=2,target=a,ioengine=libaio --candidate "
        "run=1,target=b,ioengine=io_uring)")
    # the suggestion compares: naming the fields makes the pair deliberate
    named = only(compare_observations(records, parse_selector("run=2,target=a,ioengine=libaio"),
                                      parse_selector("run=1,target=b,ioengine=io_uring"), {}))
    assert named.comparable
    # several values a side: listed, no suggestion; a field whose values overlap is not named
    more = [*records, *reps(IOPS_A, run_id=2, case_id="a8", target="a", iodepth=8),
            *reps(IOPS_A, run_id=1, case_id="b8", target="b", iodepth=8, ioengine="io_uring")]
    text = no_common_point(more, two, one, {})
    assert text.startswith("no point in common: the sides differ in target (a vs b) and ioengine") and "iodepth" \
        not in text
    # rw selected on: the direction is not a field to name
    rw = [*reps(IOPS_A, case_id="r"), *reps(IOPS_A, case_id="w", rw="randwrite", direction="write")]
    assert no_common_point(rw, parse_selector("rw=randread"), parse_selector("rw=randwrite"), {}) == (
        "baseline and candidate have no point in common")
    assert side_differences(summarize_points(rw[:3]), summarize_points(rw[3:]), frozenset()) == [
        ("rw", ("randread",), ("randwrite",)), ("direction", ("read",), ("write",))]


def test_a_direct_difference_is_not_comparable() -> None:
    base = _summaries(IOPS_A, run_id=1)
    buffered = only(compare_points(base, _summaries(IOPS_B, run_id=2, direct=False), frozenset()))
    assert not buffered.comparable and buffered.reason == "different direct (1 vs 0)"
    assert only(compare_points(base, _summaries(IOPS_B, run_id=2, direct=False), frozenset({"direct"}))).comparable


def test_sweep_over_ioengine_pairs_like_with_like() -> None:
    def run(run_id: int, scale: float) -> list[PointSummary]:
        return summarize_points([*reps([scale * v for v in IOPS_A], run_id=run_id, case_id="aio", ioengine="libaio"),
                                 *reps([2 * scale * v for v in IOPS_A], run_id=run_id, case_id="uring",
                                       ioengine="io_uring")])

    pairs = compare_points(run(1, 1.0), run(2, 1.0), frozenset())
    engines = [(p.baseline.case.workload.ioengine, p.candidate.case.workload.ioengine) for p in pairs]
    assert engines == [("libaio", "libaio"), ("io_uring", "io_uring")]
    assert all(p.comparable for p in pairs)


def test_parse_selector() -> None:
    assert parse_selector("3").pairs == (("run", "3"),)
    assert parse_selector(" 3 ").keys == frozenset({"run_id"})
    assert parse_selector("run=3").pairs == (("run", "3"),)
    s = parse_selector("target=a,bs=4k")
    assert s.pairs == (("target", "a"), ("bs", "4k"))
    assert s.keys == frozenset({"target", "bs"})
    assert parse_selector("tag=after").keys == frozenset({"tag"})


@pytest.mark.parametrize("text", ["", "   ", "nonsense", "target", "target=", "=a", "target=a,",
                                  "target=a,,bs=4k", "-3"])
def test_parse_selector_rejects_bad_text(text: str) -> None:
    with pytest.raises(ValueError):
        parse_selector(text)


def _two_runs() -> list[Observation]:
    return [*reps(IOPS_A, run_id=1), *reps(IOPS_A, run_id=1, case_id="case-b", bs="8k", bs_bytes=8192),
            *reps(IOPS_B, run_id=2), *reps(IOPS_B, run_id=2, case_id="case-b", bs="8k", bs_bytes=8192)]


def test_select_by_tag_and_block_size() -> None:
    records = _two_runs()
    tags = {1: ("before",), 2: ("after", "kernel-6.8")}
    picked = select(records, parse_selector("tag=after,bs=4k"), tags)
    assert len(picked) == 3
    assert {(r.run_id, r.case.workload.bs_bytes) for r in picked} == {(2, 4096)}
    assert select(records, parse_selector("bs=4096"), tags) == [r for r in records if r.case.workload.bs_bytes == 4096]
    assert select(records, parse_selector("bs=4KiB,run=1"), tags) == records[:3]
    assert select(records, parse_selector("tag=kernel-6.8"), tags) == records[6:]
    assert select(records, parse_selector("tag=nope"), tags) == []
    assert select(records, parse_selector("direct=true"), tags) == records
    assert select(records, parse_selector("direct=false"), tags) == []
    assert select(records, parse_selector("runtime_s=30"), tags) == records
    assert select(records, parse_selector("iodepth=1"), tags) == records


def test_points_are_matched_and_judged_comparable_on_their_typed_case() -> None:
    """Every field a comparison matches on or must agree in is read from the point's case and direction, typed
    (`compare.POINT_VALUES`): the key holds the block size in bytes and the direction, not their text."""
    from storbench.model import Direction
    from storbench.stats.compare_match import COMPARABLE_FIELDS, MATCH_FIELDS, POINT_VALUES

    assert set(POINT_VALUES) == {*MATCH_FIELDS, *COMPARABLE_FIELDS}
    first, second = compare_observations(_two_runs(), parse_selector("1"), parse_selector("run=2"), {})
    assert dict(first.key)["bs"] == 4096 and dict(second.key)["bs"] == 8192
    assert dict(first.key)["direction"] is first.candidate.direction is Direction.READ


def test_compare_records_by_run() -> None:
    pairs = compare_observations(_two_runs(), parse_selector("1"), parse_selector("run=2"), {})
    assert [p.candidate.bs_bytes for p in pairs] == [4096, 8192]
    for pair in pairs:
        assert pair.comparable
        assert pair.baseline.run_ids == (1,) and pair.candidate.run_ids == (2,)
        cell = pair.cell("iops")
        assert cell is not None and cell.verdict == Verdict.WORSE
        assert cell.difference is not None and cell.difference.change_pct == pytest.approx(-20.0)


def test_compare_records_across_targets() -> None:
    records = [*reps(IOPS_A, target="a"), *reps(IOPS_B, case_id="case-b", target="b")]
    assert compare_observations(records, parse_selector("target=a"), parse_selector("target=b"), {}) != []
    pair = only(compare_observations(records, parse_selector("target=a"), parse_selector("target=b"), {}))
    assert (pair.baseline.target, pair.candidate.target) == ("a", "b")
    assert pair.cell("iops").verdict == Verdict.WORSE  # type: ignore[union-attr]


def test_regressions_threshold() -> None:
    base = summarize_points([rec(repeat=i, iops=v, lat_p99_ns=p) for i, (v, p) in
                             enumerate([(1000, 2.00e6), (1010, 2.02e6), (990, 1.98e6)])])
    # IOPS -20 % (worse), p99 +12 % (worse), mean latency -20 % (better), bandwidth unchanged.
    cand = summarize_points([rec(run_id=2, repeat=i, iops=v, lat_p99_ns=p, lat_mean_ns=m) for i, (v, p, m) in
                             enumerate([(800, 2.24e6, 0.8e6), (808, 2.26e6, 0.81e6), (792, 2.22e6, 0.79e6)])])
    comparisons = compare_points(base, cand, frozenset())
    assert comparisons[0].cell("lat_mean_ns").verdict == Verdict.BETTER  # type: ignore[union-attr]
    assert comparisons[0].cell("bw_bytes_per_s").verdict == Verdict.UNDECIDED  # type: ignore[union-attr]

    def fields(threshold: float) -> list[str]:
        return sorted(r.cell.metric.field for r in regressions(comparisons, threshold))

    assert fields(0.0) == ["iops", "lat_p99_ns"]
    assert fields(5.0) == ["iops", "lat_p99_ns"]
    assert fields(11.9) == ["iops", "lat_p99_ns"]
    assert fields(12.1) == ["iops"]
    assert fields(19.9) == ["iops"]
    assert fields(20.1) == []
    found = regressions(comparisons, 15.0)
    assert found[0].comparison is comparisons[0]
    assert found[0].cell.difference is not None and found[0].cell.difference.change_pct == pytest.approx(-20.0)


def test_regressions_ignore_incomparable() -> None:
    base = _summaries(IOPS_A, run_id=1)
    cand = _summaries(IOPS_B, run_id=2, ioengine="io_uring")
    assert regressions(compare_points(base, cand, frozenset()), 1.0) == []
    assert regressions(compare_points(base, cand, frozenset(), force=True), 1.0) != []


# ---------------------------------------------------------------------------------------------------------------
# 5. knee, curves, latency objectives

LOADS = [1, 2, 4, 8, 16, 32, 64, 128]


def _tight(values: list[float]) -> list[Estimate]:
    """Three repetitions around each value, 0.1 % apart: the changes are known to within far less than 10 %."""
    found = [estimate([v * 0.999, v, v * 1.001]) for v in values]
    return [e for e in found if e is not None]


@pytest.mark.parametrize("saturation", [4, 16, 32])
def test_knee_of_saturating_curve(saturation: int) -> None:
    index = locate_knee(_tight([min(x, saturation) * 1000.0 for x in LOADS])).index
    assert index is not None and LOADS[index] == saturation


def test_knee_none_cases() -> None:
    assert locate_knee(_tight([x * 1000.0 for x in LOADS])).kind is KneeKind.STILL_RISING
    assert locate_knee(_tight([5000.0] * len(LOADS))).index == 0  # flat from the start: saturated at the lowest
    assert locate_knee(_tight([1000.0, 2000.0])).kind is KneeKind.STILL_RISING
    assert locate_knee(_tight([1000.0])).kind is KneeKind.TOO_FEW_POINTS
    assert locate_knee([]).kind is KneeKind.TOO_FEW_POINTS
    assert locate_knee(_tight([1000.0, 2000.0]), [None]).kind is KneeKind.TOO_FEW_POINTS  # mismatched lengths
    # Log-linear growth: the last doubling's +14 % is a rise its interval shows
    assert locate_knee(_tight([1000.0 * (1 + math.log2(x)) for x in LOADS])).kind is KneeKind.STILL_RISING


def _sweep_records(axis: str = "iodepth", saturation: int = 16, **changes: object) -> list[Observation]:
    out = []
    for load in LOADS:
        for r in range(3):
            iops = min(load, saturation) * 1000.0 * (1 + 0.001 * (r - 1))
            out.append(rec(case_id=f"{changes.get('bs', '4k')}-{axis}{load}", repeat=r, iops=iops,
                           lat_mean_ns=load * 0.5e6, lat_p99_ns=load * 1e6 * (1 + 0.01 * (r - 1)),
                           **{axis: load}, **changes))
    return out


def test_curves_group_and_find_knee() -> None:
    records = [*_sweep_records(saturation=16), *_sweep_records(saturation=4, bs="64k", bs_bytes=65536)]
    found = curves(summarize_points(records), "iodepth")
    assert len(found) == 2
    by_bs = {format_block_size(c.points[0].point.bs_bytes): c for c in found}
    small, large = by_bs["4k"], by_bs["64k"]
    assert small.axis == "iodepth"
    assert [p.load for p in small.points] == LOADS
    assert small.knee is not None and small.knee.load == 16
    assert large.knee is not None and large.knee.load == 4
    assert curve_label(small) == "a randread 4k read"
    point = small.points[4]
    assert point.iops == pytest.approx(16000.0)
    assert point.lat_p99_ns == pytest.approx(16e6)
    assert point.lat_mean_ns == pytest.approx(8e6)
    assert point.outstanding_ios == 16
    assert point.iops_ci_half is not None and point.iops_ci_half > 0


def test_curves_other_axis_and_single_level() -> None:
    records = _sweep_records(axis="numjobs", saturation=8, iodepth=4)
    points = summarize_points(records)
    curve = only(curves(points, "numjobs"))  # type: ignore[arg-type]
    assert curve.knee is not None and curve.knee.load == 8
    assert curve.points[3].outstanding_ios == 32
    # Along iodepth every point is its own group with one load level: no curves.
    assert curves(points, "iodepth") == []
    with pytest.raises(ValueError):
        curves(points, "bs")


def test_best_under_objective() -> None:
    curve = only(curves(summarize_points(_sweep_records(saturation=16)), "iodepth"))  # type: ignore[arg-type]
    best = best_under_objective(curve, parse_slo("p99<=10ms"))  # p99 = load ms: loads 1..8 meet it
    assert best is not None and best.load == 8
    best = best_under_objective(curve, parse_slo("p99<=40ms"))  # 16 and 32 both give 16000 IOPS
    assert best is not None and best.load in (16, 32) and best.iops == pytest.approx(16000.0, rel=1e-6)
    best = best_under_objective(curve, parse_slo("mean<=2ms"))  # mean = load/2 ms
    assert best is not None and best.load == 4
    assert best_under_objective(curve, parse_slo("p99<=500us")) is None
    assert best_under_objective(curve, parse_slo("p95<=1ms")) is None  # p95 is 1.5 ms everywhere
    assert best_under_objective(curve, parse_slo("p50<=1s")) is not None


def test_best_under_objective_prefers_iops_over_load() -> None:
    # IOPS peaks at iodepth 8 and falls after; every point meets the objective.
    iops_at = {1: 1000.0, 2: 2000.0, 4: 4000.0, 8: 9000.0, 16: 7000.0, 32: 6000.0}
    records = [rec(case_id=f"q{q}", iodepth=q, repeat=r, iops=v + r, lat_p99_ns=1e6) for q, v in iops_at.items()
               for r in range(2)]
    curve = only(curves(summarize_points(records), "iodepth"))  # type: ignore[arg-type]
    best = best_under_objective(curve, parse_slo("p99<=10ms"))
    assert best is not None and best.load == 8


def test_parse_slo() -> None:
    p99 = parse_slo("p99<=10ms")
    assert p99.field == "lat_p99_ns" and p99.label == "p99"
    assert p99.limit_ns == pytest.approx(1e7)
    p95 = parse_slo("p95<=500us")
    assert p95.field == "lat_p95_ns" and p95.limit_ns == pytest.approx(5e5)
    assert parse_slo(" p99.9 <= 20ms ").field == "lat_p999_ns"
    assert parse_slo("mean<=1ms").field == "lat_mean_ns"
    assert parse_slo("p50<=2s").limit_ns == pytest.approx(2e9)


@pytest.mark.parametrize("text", ["", "p99", "p99<10ms", "p99>=10ms", "p99<=", "p99<=fast", "p98<=1ms", "p999<=1ms",
                                  "max<=1ms", "99<=1ms", "p99<=10 ms extra", "p99<=-1ms",
                                  "p99<=10", "p99<=0ms", "p99<=0"])  # a bare number was read as seconds
def test_parse_slo_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_slo(text)


# ---------------------------------------------------------------------------------------------------------------
# 6. drift

CASE_IOPS = {"A": 1000.0, "B": 5000.0, "C": 20000.0, "D": 300.0}


def _drift_records(order: str, decline_per_minute: float, noise: float = 0.0, seed: int = 0,
                   repeats: int = 3) -> list[Observation]:
    """Cases repeated in the given order, one repetition a minute; IOPS x (1 - decline·minutes) x noise."""
    cases = list(CASE_IOPS)
    if order == "sequential":
        schedule = [(c, r) for c in cases for r in range(repeats)]
    else:  # interleaved, as storbench runs by default: A B C D, D C B A, B C D A
        schedule = [(c, r) for r in range(repeats) for c in round_order(cases, r)]
    rng = random.Random(seed)
    out = []
    for minute, (case, r) in enumerate(schedule):
        factor = (1 - decline_per_minute * minute) * (1 + rng.gauss(0, noise))
        out.append(rec(case_id=case, repeat=r, started_at_s=1000.0 + 60.0 * minute,
                       finished_at_s=1035.0 + 60.0 * minute, iops=CASE_IOPS[case] * factor))
    # Records of another run and direction, and a failed repetition, are ignored.
    out.append(rec(run_id=9, case_id="A", iops=1.0, started_at_s=0.0))
    out.append(rec(case_id="A", direction="write", iops=1.0, started_at_s=0.0))
    out.append(rec(case_id="A", repeat=99, status="failed", direction="", iops=None, started_at_s=0.0, error="x"))
    return out


def test_drift_detects_linear_decline_interleaved() -> None:
    d = drift(_drift_records("interleaved", 0.01), run_id=1, direction="read")
    assert len(d.samples) == 12
    assert d.significant
    assert d.slope_pct_per_10min is not None and d.ci_low is not None and d.ci_high is not None
    assert d.slope_pct_per_10min == pytest.approx(-10.0, abs=1.0)
    assert d.ci_low < d.slope_pct_per_10min < d.ci_high < 0
    assert d.span_minutes == pytest.approx(11.0)
    change = d.over_run()
    assert change is not None
    # a ratio per 10 minutes, compounded over the run's 11 minutes
    assert change[0] == pytest.approx(100 * ((1 + d.slope_pct_per_10min / 100) ** 1.1 - 1))
    assert change[0] == pytest.approx(-11.0, abs=1.2)
    assert change[1] < change[0] < change[2] < 0


def test_drift_detects_linear_decline_sequential() -> None:
    d = drift(_drift_records("sequential", 0.01), run_id=1, direction="read")
    assert d.significant
    assert d.slope_pct_per_10min == pytest.approx(-10.0, abs=1.0)


def test_drift_with_noise_still_detected() -> None:
    d = drift(_drift_records("interleaved", 0.01, noise=0.005, seed=3, repeats=4), run_id=1, direction="read")
    assert d.significant
    assert d.slope_pct_per_10min == pytest.approx(-10.0, abs=2.0)


def test_no_drift_with_constant_iops() -> None:
    d = drift(_drift_records("interleaved", 0.0, noise=0.01, seed=5), run_id=1, direction="read")
    assert d.slope_pct_per_10min is not None
    assert not d.significant
    assert d.ci_low is not None and d.ci_high is not None and d.ci_low < 0 < d.ci_high
    assert abs(d.slope_pct_per_10min) < 2.0


def test_no_drift_false_positive_rate() -> None:
    # Over many seeds, a 95 % interval should flag a constant run about 5 % of the time.
    trials = 1000
    flagged = sum(drift(_drift_records("interleaved", 0.0, noise=0.01, seed=s), 1, "read").significant
                  for s in range(trials))
    assert flagged / trials <= 0.075


def test_drift_of_a_collapsing_rate_stays_above_minus_100_percent() -> None:
    """Creates that fall to a tenth over the run drifted "-93.2 % [95 % CI -169.2, -17.1]": a straight line through
    percent deviations crosses -100 %. On the log scale the change and both ends of its interval are ratios."""
    rng = random.Random(7)
    observations = []
    for minute in range(12):
        for case, rate in (("A", 4000.0), ("B", 900.0)):
            factor = 0.1 ** (minute / 11) * math.exp(rng.gauss(0, 0.6))  # noisy: a wide interval
            observations.append(rec(case_id=case, rw="create", direction="write", repeat=minute,
                                    started_at_s=60.0 * minute, iops=rate * factor))
    d = drift(observations, run_id=1, direction="write", operation="create")
    change = d.over_run()
    assert d.significant and change is not None
    assert -100 < change[1] < change[0] < change[2] < 0
    assert change[0] == pytest.approx(-90, abs=8)
    assert d.rate == "creates/s" and d.operation == "create"


def test_run_drifts_name_each_operation_apart() -> None:
    """A metadata run's creates and deletes are both counted as fio writes: each is its own drift, named as what
    it is; block I/O keeps its direction's IOPS."""
    observations = [rec(case_id=f"{rw}-{i % 2}", rw=rw, direction=direction, repeat=i // 2, started_at_s=60.0 * i,
                        iops=1000.0 - i)
                    for rw, direction in (("create", "write"), ("delete", "write"), ("stat", "read"),
                                          ("randwrite", "write"))
                    for i in range(8)]
    rates = {d.rate: d.operation for d in run_drifts(observations, 1)}
    assert rates == {"creates/s": "create", "deletes/s": "delete", "stats/s": "stat", "write IOPS": ""}


def test_drift_lines_name_creates_not_write_iops() -> None:
    observations = [rec(case_id=f"c{i % 2}", rw="create", direction="write", repeat=i // 2, started_at_s=60.0 * i,
                        iops=1000.0 * 0.8 ** i) for i in range(12)]
    (line,) = drift_lines(observations, [1])
    assert line.startswith("⚠ run 1: creates/s drifted -9")
    assert "IOPS" not in line and "write" not in line


def test_drift_too_few_samples() -> None:
    records = [rec(case_id="A", repeat=r, started_at_s=60.0 * r, iops=1000.0 - r) for r in range(5)]
    d = drift(records, run_id=1, direction="read")
    assert d.slope_pct_per_10min is None and not d.significant and d.over_run() is None
    # One repetition per case gives no deviation at all.
    single = [rec(case_id=f"c{i}", started_at_s=60.0 * i, iops=1000.0 - i) for i in range(10)]
    assert drift(single, 1, "read").samples == ()


# ---------------------------------------------------------------------------------------------------------------
# 7. summary warnings

GIB = 1 << 30


def test_summary_estimates() -> None:
    point = only(summarize_points(reps([10.0, 12.0, 14.0, 16.0, 18.0])))
    iops = point.metric("iops")
    assert iops is not None and iops.n == 5 and iops.half_width == pytest.approx(3.9265, abs=1e-3)
    assert point.metric("lat_p99_ns") is not None
    assert point.metric("lat_p9999_ns") is None
    assert (point.repetitions_ok, point.repetitions_total) == (5, 5)
    assert point.fio_versions == ("fio-3.36",)
    assert "high_cv" in codes(point)  # CV 22.6 %


def test_summary_clean_point_has_no_warnings() -> None:
    point = only(summarize_points(reps([1000.0, 1010.0, 990.0])))
    assert point.warnings == ()


def test_high_cv_warning_needs_the_spread_shown_above_5_percent() -> None:
    # at n=3 an observed CV of 6 % says little: its lower 90 % bound is about 4 %, so no warning
    assert "high_cv" not in codes(only(summarize_points(reps([1000.0, 1060.0, 940.0]))))
    high = only(summarize_points(reps([1000.0, 1120.0, 880.0])))  # CV 12 %: at least 7.9 %
    assert "high_cv" in codes(high)
    warning = next(w for w in high.warnings if w.code == "high_cv")
    assert warning.message == "CV 12 %, at least 8 %" and "repetitions" in warning.fix
    # ten repetitions at CV 6 % show it above 5 %
    assert "high_cv" in codes(only(summarize_points(reps([1000.0 + 60 * (-1) ** i * (1 + i % 2) for i in range(10)]))))


def test_cv_warning_rates_at_three_repetitions() -> None:
    """The rate the methodology gives: a true CV of 4 % warned about ~3 % of the time, a true 10 % ~56 %."""
    import random

    from storbench.stats.point_warnings import CV_LIMIT_PCT, cv_lower_bound_pct

    rng = random.Random(3)

    def rate(cv: float) -> float:
        hits = 0
        for _ in range(4000):
            found = estimate([rng.gauss(1000.0, 1000.0 * cv) for _ in range(3)])
            low = cv_lower_bound_pct(found) if found else None
            hits += low is not None and low > CV_LIMIT_PCT
        return hits / 4000

    assert rate(0.04) < 0.05 and 0.45 < rate(0.10) < 0.65


def test_a_wide_interval_says_how_many_repetitions_would_narrow_it() -> None:
    point = only(summarize_points(reps([1000.0, 1120.0, 880.0])))  # +-30 % at n=3
    warning = next(w for w in point.warnings if w.code == "wide_interval")
    # at this spread (sd 120) four give t(3) 3.18 x 120 / 2 = +-19 %: the t quantile falls too (not 3 x 1.5^2 = 7)
    assert warning.message == "IOPS +-30 % at n=3" and "about 4 repetitions would give +-20 %" in warning.fix
    assert "wide_interval" not in codes(only(summarize_points(reps([1000.0, 1040.0, 960.0]))))  # +-10 %
    from storbench.report.warning_text import warning_lines

    line = next(line for line in warning_lines([point]) if "known only within" in line)
    assert line.startswith("⚠ IOPS known only within more than +-20 % (its confidence interval) at "), line
    assert "volume operation" not in line  # an I/O point's warning in I/O words only


def test_few_repetitions_warning() -> None:
    one = only(summarize_points(reps([1000.0])))
    assert "few_repetitions" in codes(one)
    assert "no confidence interval" in next(w.message for w in one.warnings if w.code == "few_repetitions")
    assert "few_repetitions" in codes(only(summarize_points(reps([1000.0, 1001.0]))))
    assert "few_repetitions" not in codes(only(summarize_points(reps([1000.0, 1001.0, 1002.0]))))


def test_failed_repetitions_warning() -> None:
    records = [*reps([1000.0, 1010.0, 990.0]),
               rec(repeat=3, status="failed", direction="", iops=None, bw_bytes_per_s=None, lat_p99_ns=None,
                   lat_mean_ns=None, error="fio exited with status 1")]
    point = only(summarize_points(records))
    assert "failed_repetitions" in codes(point)
    assert (point.repetitions_ok, point.repetitions_total) == (3, 4)
    assert point.last_error == "fio exited with status 1"
    assert point.metric("iops").n == 3  # type: ignore[union-attr]
    everything_failed = only(summarize_points([rec(status="timeout", direction="", iops=None, error="timeout")]))
    assert everything_failed.direction is None and everything_failed.direction_name == ""
    assert (everything_failed.repetitions_ok, everything_failed.repetitions_total) == (0, 1)
    assert "failed_repetitions" in codes(everything_failed)


def test_page_cache_warning() -> None:
    memory = {1: 8 * GIB}
    buffered = reps([1000.0, 1010.0, 990.0], direct=False, size_bytes=GIB, numjobs=4)  # 4 GiB of 8
    assert "page_cache" in codes(only(summarize_points(buffered, memory)))
    direct = reps([1000.0, 1010.0, 990.0], direct=True, size_bytes=GIB, numjobs=4)
    assert "page_cache" not in codes(only(summarize_points(direct, memory)))
    too_big = reps([1000.0, 1010.0, 990.0], direct=False, size_bytes=4 * GIB, numjobs=4)  # 16 GiB of 8
    assert "page_cache" not in codes(only(summarize_points(too_big, memory)))
    assert "page_cache" not in codes(only(summarize_points(buffered)))  # memory unknown
    clients = reps([1000.0, 1010.0, 990.0], direct=False, size_bytes=GIB, numjobs=4, clients=3)  # 12 GiB
    assert "page_cache" not in codes(only(summarize_points(clients, memory)))


def test_runtime_shorter_than_ramp_warning() -> None:
    assert "runtime_shorter_than_ramp" in codes(only(summarize_points(reps([1000.0] * 3, runtime_s=5.0,
                                                                           ramp_s=10.0))))
    assert "runtime_shorter_than_ramp" not in codes(only(summarize_points(reps([1000.0] * 3, runtime_s=10.0,
                                                                               ramp_s=10.0))))


def test_summary_groups_by_case_and_direction() -> None:
    records = [*reps([100.0, 110.0, 90.0], rw="randrw", rwmixread=70),
               *reps([40.0, 44.0, 36.0], rw="randrw", rwmixread=70, direction="write"),
               *reps([5.0, 5.0, 5.0], case_id="case-b", run_id=2)]
    points = summarize_points(records)
    assert [(p.case_id, p.direction) for p in points] == [("case-a", "read"), ("case-a", "write"), ("case-b", "read")]
    assert points[1].metric("iops").mean == pytest.approx(40.0)  # type: ignore[union-attr]
    assert points[0].repetitions_total == 3
    assert points[2].run_ids == (2,)


def test_unknown_selector_keys_are_found_against_the_data() -> None:
    from storbench.stats.selectors import unknown_keys

    records = [rec(lab="lab=ceph osds=3 pool_size=2")]
    assert unknown_keys(parse_selector("nosuchfield=1"), records) == ["nosuchfield"]
    assert unknown_keys(parse_selector("pool_size=2,bs=4k,tag=x,run=1"), records) == []
    assert unknown_keys(parse_selector("pool_size=2"), [rec()]) == ["pool_size"]


def test_lab_parameters_select_and_match() -> None:
    two = [rec(case_id="c2", lab="lab=ceph osds=3 pool_size=2", repeat=i, iops=1000.0 + i) for i in range(3)]
    three = [rec(case_id="c3", lab="lab=ceph osds=3 pool_size=3", repeat=i, iops=700.0 + i) for i in range(3)]
    comparisons = compare_observations([*two, *three], parse_selector("pool_size=2"), parse_selector("pool_size=3"), {})
    assert len(comparisons) == 1
    assert comparisons[0].cell("iops").verdict == Verdict.WORSE  # type: ignore[union-attr]
    # other lab parameters must agree: osds=6 does not pair with osds=3
    six = [rec(case_id="c6", lab="lab=ceph osds=6 pool_size=3", repeat=i, iops=700.0) for i in range(3)]
    assert compare_observations([*two, *six], parse_selector("pool_size=2"), parse_selector("pool_size=3"), {}) == []


def test_a_comparison_across_a_blocked_lab_setting_says_so() -> None:
    from storbench.stats.compare_design import design_note
    from storbench.stats.selectors import parse_selector

    blocked = design_note(parse_selector("osds=3"), parse_selector("osds=6"))
    assert blocked is not None and "blocked on osds" in blocked and "confounded" in blocked
    assert design_note(parse_selector("pool_size=2"), parse_selector("pool_size=3")) is None  # one cluster
    assert design_note(parse_selector("iodepth=1"), parse_selector("iodepth=16")) is None


def _drifting_pair(ratio: float, reps: int = 6) -> list[object]:
    """Two targets measured in one interleaved run while the storage slows down 8 % per round (as a filling
    cluster does): target b is ``ratio`` times target a within every round."""
    from synthetic import observation

    out = []
    for rep in range(reps):
        level = 1000.0 * (1 - 0.08 * rep)
        out.append(observation(case_id="case-a", target="a", repeat=rep, iops=level, lat_mean_ns=1e6 / level * 1000))
        out.append(observation(case_id="case-b", target="b", repeat=rep, iops=level * ratio,
                               lat_mean_ns=1e6 / (level * ratio) * 1000))
    return out


def test_alternating_repetitions_of_one_run_are_compared_pair_by_pair() -> None:
    """Drift shared by both sides hides a 5 % change from Welch's interval; the paired ratios see it."""
    from storbench.stats.compare import compare_observations
    from storbench.stats.compare_cells import Verdict
    from storbench.stats.selectors import parse_selector

    observations = _drifting_pair(1.05)
    base, cand = parse_selector("target=a"), parse_selector("target=b")
    welch = compare_observations(observations, base, cand, {})  # not known to alternate: Welch
    paired = compare_observations(observations, base, cand, {}, interleaved_runs=frozenset({1}))
    welch_iops, paired_iops = welch[0].cell("iops"), paired[0].cell("iops")
    assert welch_iops is not None and paired_iops is not None
    assert welch_iops.difference is not None and welch_iops.difference.method == "welch"
    assert welch_iops.verdict == Verdict.UNDECIDED  # drift swamps the effect
    assert paired_iops.difference is not None and paired_iops.difference.method == "paired"
    assert paired_iops.difference.pairs == 6
    assert paired_iops.difference.change_pct == pytest.approx(5.0)
    assert paired_iops.verdict == Verdict.BETTER


def test_a_comparison_across_a_blocked_setting_is_never_paired() -> None:
    from storbench.stats.compare import compare_observations
    from storbench.stats.selectors import parse_selector
    from synthetic import observation

    observations = [observation(case_id=f"c{osds}", lab=f"lab=ceph osds={osds} osd_size=1 objectstore=bluestore "
                                f"pool_size=2", repeat=rep, iops=1000.0 + rep + osds)
                    for osds in (3, 6) for rep in range(3)]
    found = compare_observations(observations, parse_selector("osds=3"), parse_selector("osds=6"), {},
                                 interleaved_runs=frozenset({1}))
    cell = found[0].cell("iops")
    assert cell is not None and cell.difference is not None and cell.difference.method == "welch"


def test_a_run_that_stopped_when_decided_gets_the_sequential_interval_not_a_plain_one() -> None:
    """Its data were looked at round by round: the interval is the one the stopping rule spent on its last look,
    wider than a fixed-size 95 % interval on the same pairs."""
    from storbench.stats.compare import compare_observations
    from storbench.stats.selectors import parse_selector
    from storbench.stats.sequential import SequentialPlan
    from synthetic import observation

    noisy = []
    for rep in range(8):
        level = 1000.0 * (1 - 0.05 * rep)
        wobble = 1.05 * (1 + 0.03 * (-1) ** rep + 0.01 * rep % 3)
        noisy.append(observation(case_id="case-a", target="a", repeat=rep, iops=level, lat_mean_ns=1e9 / level))
        noisy.append(observation(case_id="case-b", target="b", repeat=rep, iops=level * wobble,
                                 lat_mean_ns=1e9 / (level * wobble)))
    base, cand = parse_selector("target=a"), parse_selector("target=b")
    plain = compare_observations(noisy, base, cand, {}, interleaved_runs=frozenset({1}))
    looked = compare_observations(noisy, base, cand, {}, interleaved_runs=frozenset({1}),
                                  sequential_plans={1: SequentialPlan(min_rounds=3, max_rounds=12)})
    p_cell, s_cell = plain[0].cell("lat_mean_ns"), looked[0].cell("lat_mean_ns")
    assert p_cell is not None and s_cell is not None and p_cell.difference and s_cell.difference
    assert s_cell.difference.method == "sequential" and p_cell.difference.method == "paired"
    assert s_cell.difference.change_pct == pytest.approx(p_cell.difference.change_pct)
    p_width = p_cell.difference.change_ci_high_pct - p_cell.difference.change_ci_low_pct  # type: ignore[operator]
    s_width = s_cell.difference.change_ci_high_pct - s_cell.difference.change_ci_low_pct  # type: ignore[operator]
    assert s_width > 1.3 * p_width > 0  # 98.7 % at the look after 8 rounds of 3..12 (t 3.3 against 2.4)


def test_a_failed_repetition_leaves_its_pair_out_and_keeps_the_sequential_interval_at_the_rounds_look() -> None:
    """Issue 29: one side's repetition of round 4 failed. compare pairs the rounds both sides have (as the run loop
    does) and keeps the sequential interval, at the look after the last round run (not after the count of pairs,
    which would spend an earlier look's alpha again)."""
    from storbench.stats.adaptive import decided_verdicts
    from storbench.stats.compare import compare_observations
    from storbench.stats.selectors import parse_selector
    from storbench.stats.sequential import SequentialPlan, paired_change
    from synthetic import observation

    found = []
    ratios = [1.06, 1.04, 1.08, 1.05, 1.07, 1.03, 1.06, 1.05]
    for rep, ratio in enumerate(ratios):
        found.append(observation(case_id="case-a", target="a", repeat=rep, iops=1000.0 + 10 * rep))
        if rep != 4:
            found.append(observation(case_id="case-b", target="b", repeat=rep, iops=(1000.0 + 10 * rep) * ratio))
    plan = SequentialPlan(min_rounds=3, max_rounds=12)
    base, cand = parse_selector("target=a"), parse_selector("target=b")
    looked = compare_observations(found, base, cand, {}, interleaved_runs=frozenset({1}), sequential_plans={1: plan})
    cell = looked[0].cell("iops")
    assert cell is not None and cell.difference is not None
    assert cell.difference.method == "sequential" and cell.difference.pairs == 7
    kept = [r for i, r in enumerate(ratios) if i != 4]
    expected = paired_change([1000.0 + 10 * i for i in range(8) if i != 4],
                             [(1000.0 + 10 * i) * r for i, r in enumerate(ratios) if i != 4],
                             1 - plan.look_alpha(8))
    assert expected is not None and len(kept) == 7
    assert cell.difference.change_ci_low_pct == pytest.approx(100 * expected.low)
    assert cell.difference.change_ci_high_pct == pytest.approx(100 * expected.high)
    # the run loop's verdict is on the same pairs at the same look
    (verdict,) = decided_verdicts(found, base, cand, ["iops"], plan)
    assert verdict.verdict.rounds == 8 and verdict.verdict.change is not None
    assert verdict.verdict.change.low == pytest.approx(expected.low)


@pytest.mark.parametrize(("until", "sequential"), [('"ci <= 5%"', False), ("decided", True)])
def test_only_a_run_that_stopped_when_decided_gets_sequential_intervals(until: str, sequential: bool) -> None:
    """A run that stopped on `until: "ci <= N%"` ran no sequential rule: its intervals are not labelled as one."""
    from storbench.model import RunInfo
    from storbench.selection import Selection
    from storbench.store.migrations import design_of_text

    text = ("name: p\ntargets:\n  a: {kind: path, path: ./a, size: 1MiB}\n  b: {kind: path, path: ./b, size: 1MiB}\n"
            f"workload: {{rw: randread, runtime: 1s}}\nrepeat: {{until: {until}, min: 3, max: 6}}\n"
            "compare: {baseline: target=a, candidate: target=b}\n")
    run = RunInfo(run_id=1, plan_name="p", plan_text=text, source="run", storbench_version="0", fio_version="",
                  host="h", kernel="k", run_order="interleaved", seed=0, tags=(), started_at_s=0.0, finished_at_s=1.0,
                  design=design_of_text(text))
    assert run.design.from_plan  # the plan itself is valid either way
    plans = Selection(observations=[], runs=[run], label="", repetitions=[]).sequential_plans
    assert (1 in plans) is sequential


def _adaptive_pool_sizes(run_id: int = 1, rounds: int = 6, slower: float = 0.8) -> list[Observation]:
    """A pool-size sweep at iodepth 1 and 16 in one interleaved run: pool_size=3 is ``slower`` x pool_size=2 in
    IOPS (and its latency 1 / ``slower``) in every round, with a little noise."""
    rng = random.Random(run_id)
    found = []
    for rep in range(rounds):
        for depth in (1, 16):
            for size, ratio in ((2, 1.0), (3, slower)):
                iops = 1000.0 * depth ** 0.5 * ratio * (1 + rng.gauss(0, 0.03))
                lat = depth * 1e9 / iops
                found.append(observation(case_id=f"r{run_id}-d{depth}-s{size}", run_id=run_id, repeat=rep,
                                         lab=f"lab=ceph pool_size={size}", iodepth=depth, iops=iops,
                                         lat_mean_ns=lat, lat_p95_ns=2 * lat, lat_p99_ns=3 * lat))
    return found


def test_a_metric_or_point_the_plan_did_not_ask_about_is_outside_the_stopping_rule() -> None:
    """A run that stopped when IOPS of pool_size=3 vs 2 was decided: IOPS at the points those selectors matched is
    its question ("in"); bandwidth and the latencies there, and any cell of other points of the run, are outside
    it, with the rule's interval still (valid at whichever look the run stopped)."""
    from storbench.stats.compare_cells import PointComparison, StoppingRule, stopping_rule_lines
    from storbench.stats.selectors import Question, Selector
    from storbench.stats.sequential import SequentialPlan

    seen = _adaptive_pool_sizes()
    two, three = parse_selector("pool_size=2"), parse_selector("pool_size=3")
    asked = {1: Question(two, three, ("iops",))}

    def compared(base: Selector, cand: Selector, questions: dict[int, Question] = asked) -> list[PointComparison]:
        return compare_observations(seen, base, cand, {}, interleaved_runs=frozenset({1}),
                                    sequential_plans={1: SequentialPlan(3, 12)}, questions=questions)

    found = compared(two, three)
    assert len(found) == 2
    for c in found:
        rules = {cell.metric.field: cell.stopping_rule for cell in c.cells}
        assert rules == {"iops": StoppingRule.IN, "bw_bytes_per_s": StoppingRule.OUTSIDE,
                         "lat_mean_ns": StoppingRule.OUTSIDE, "lat_p95_ns": StoppingRule.OUTSIDE,
                         "lat_p99_ns": StoppingRule.OUTSIDE}
        assert {cell.difference.method for cell in c.cells if cell.difference} == {"sequential"}
        assert c.question == asked[1] and all(cell.gated for cell in c.cells)
    [line] = stopping_rule_lines(found)
    assert line.startswith("† not the question its stopping rule asked (run 1: IOPS of pool_size=3 vs pool_size=2)")
    # the other way round is the same question: the inverse interval on the same pairs at the same look
    swapped = compared(three, two)
    assert {cell.stopping_rule for c in swapped for cell in c.cells if cell.metric.field == "iops"} == {
        StoppingRule.IN}
    # points the plan's selectors did not pair: outside, whatever the metric
    depths = compared(parse_selector("iodepth=1"), parse_selector("iodepth=16"))
    assert depths and {cell.stopping_rule for c in depths for cell in c.cells} == {StoppingRule.OUTSIDE}
    # a question about iodepth 16 only: IOPS at iodepth 1 is outside it
    deep = {1: Question(parse_selector("pool_size=2,iodepth=16"), parse_selector("pool_size=3,iodepth=16"),
                        ("iops", "lat_p99_ns"))}
    narrow = compared(two, three, deep)
    by_depth = {c.baseline.iodepth: {cell.metric.field: cell.stopping_rule for cell in c.cells} for c in narrow}
    assert by_depth[16]["iops"] == by_depth[16]["lat_p99_ns"] == StoppingRule.IN
    assert by_depth[16]["lat_mean_ns"] == StoppingRule.OUTSIDE
    assert set(by_depth[1].values()) == {StoppingRule.OUTSIDE}


def test_a_run_with_a_fixed_number_of_repetitions_has_no_stopping_rule_marks() -> None:
    from storbench.stats.compare_cells import stopping_rule_lines

    seen = _adaptive_pool_sizes()
    found = compare_observations(seen, parse_selector("pool_size=2"), parse_selector("pool_size=3"), {},
                                 interleaved_runs=frozenset({1}))
    assert {cell.stopping_rule for c in found for cell in c.cells} == {None}
    assert {c.question for c in found} == {None} and stopping_rule_lines(found) == []
    assert {cell.difference.method for c in found for cell in c.cells if cell.difference} == {"paired"}


def test_pairs_come_from_the_run_compared_when_another_run_has_the_same_cases() -> None:
    """A plan run twice stores the same case ids twice (they identify the case, not the run): comparing two points
    of run 1 pairs run 1's repetitions, not those of the run stored last (run 2 here, 40 % slower on one side)."""
    first = _adaptive_pool_sizes(1)
    again = [replace(o, run_id=2, case=replace(o.case, case_id=o.case.case_id.replace("r2-", "r1-")))
             for o in _adaptive_pool_sizes(2, slower=0.6)]
    assert {o.case.case_id for o in first} == {o.case.case_id for o in again}
    alone = compare_observations(first, parse_selector("pool_size=2"), parse_selector("pool_size=3"), {},
                                 interleaved_runs=frozenset({1}))
    both = compare_observations([*first, *again], parse_selector("run=1,pool_size=2"),
                                parse_selector("run=1,pool_size=3"), {}, interleaved_runs=frozenset({1, 2}))
    for one, two in zip(alone, both, strict=True):
        a, b = one.cell("iops"), two.cell("iops")
        assert a is not None and b is not None and a.difference is not None and b.difference is not None
        assert b.difference.method == "paired" and b.difference.change_pct == pytest.approx(a.difference.change_pct)
        assert b.difference.change_pct == pytest.approx(-20, abs=5)


def test_a_plain_interval_on_a_stopped_runs_repetitions_is_not_covered_and_not_gated() -> None:
    """Run 1 stopped when decided, run 2 ran 6 repetitions; across the two runs the interval is Welch's on
    repetitions whose number run 1's rule chose: descriptive, marked, and left out of a regression gate even when
    it looks 40 % worse."""
    from storbench.stats.compare_cells import StoppingRule, stopping_rule_lines, tested_cells, ungated_cells
    from storbench.stats.selectors import Question
    from storbench.stats.sequential import SequentialPlan

    two, three = parse_selector("pool_size=2"), parse_selector("pool_size=3")
    seen = [*_adaptive_pool_sizes(1), *_adaptive_pool_sizes(2, slower=0.6)]
    found = compare_observations(seen, parse_selector("run=1,pool_size=3"), parse_selector("run=2,pool_size=3"), {},
                                 interleaved_runs=frozenset({1, 2}), sequential_plans={1: SequentialPlan(3, 12)},
                                 questions={1: Question(two, three, ("iops",))})
    assert found and {c.design for c in found} == {"two runs"}
    cells = [cell for c in found for cell in c.cells]
    assert {cell.stopping_rule for cell in cells} == {StoppingRule.NOT_COVERED}
    assert {cell.difference.method for cell in cells if cell.difference} == {"welch"}
    iops = found[0].cell("iops")
    assert iops is not None and iops.verdict == Verdict.WORSE and not iops.gated
    assert regressions(found, 10.0) == [] and tested_cells(found) == 0 and ungated_cells(found) == len(cells)
    [line] = stopping_rule_lines(found)
    assert line.startswith("‡ a plain interval on repetitions whose number a stopping rule chose")
    # the same runs, neither stopped when decided: an ordinary two-run comparison that the gate judges
    ordinary = compare_observations(seen, parse_selector("run=1,pool_size=3"), parse_selector("run=2,pool_size=3"),
                                    {}, interleaved_runs=frozenset({1, 2}))
    assert regressions(ordinary, 10.0) and tested_cells(ordinary) == len(cells)


def test_points_that_differ_only_in_a_lab_setting_stay_apart_in_curves_and_figures() -> None:
    """A pool-size sweep: one curve and one bar series per pool size, never one overwriting the other."""
    from storbench.report.labels import curve_lab_keys, curve_label
    from storbench.report.point_figures import block_size_figures
    from storbench.stats.knee import curves
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    lab = "lab=ceph objectstore=bluestore osd_size=1 osds=3 pool_size={size}"
    observations = [observation(case_id=f"c{size}-{depth}-{bs}", iodepth=depth, lab=lab.format(size=size),
                                iops=1000.0 * depth / size, repeat=rep, bs_bytes=bs)
                    for size in (2, 3) for depth in (1, 16) for rep in range(2)
                    for bs in (4096, 8192)]  # two block sizes: a figure "vs block size" needs two
    points = summarize_points(observations)
    found = curves(points, "iodepth")
    assert len(found) == 4  # per pool size and block size
    keys = curve_lab_keys(found)
    assert sorted(curve_label(c, keys) for c in found) == sorted({curve_label(c, keys) for c in found})
    assert any("pool_size=2" in curve_label(c, keys) for c in found)
    (iops_figure, _bandwidth) = block_size_figures(points)
    assert len(iops_figure.series) == 4  # 2 pool sizes x 2 depths, none merged


def test_an_interval_of_non_negative_values_stops_at_zero() -> None:
    """Two IOPS figures far apart (n=2: t = 12.7) would give a lower bound near -3,000 IOPS: it is cut at zero,
    the half-width stays the t interval's; values that can be negative keep their bounds."""
    from storbench.stats.estimate import estimate, t_quantile

    wide = estimate([100.0, 400.0])
    assert wide is not None and wide.ci_low == 0.0
    half = t_quantile(0.95, 1) * wide.stddev / 2 ** 0.5
    assert wide.ci_high == pytest.approx(250.0 + half) and wide.half_width == pytest.approx(half)
    signed = estimate([-100.0, 400.0])
    assert signed is not None and signed.ci_low is not None and signed.ci_low < 0
    narrow = estimate([100.0, 101.0, 102.0])
    assert narrow is not None and narrow.ci_low == pytest.approx(101.0 - narrow.half_width)  # type: ignore[operator]


def test_metadata_operations_compare_no_bandwidth() -> None:
    """A create moves no data: its compare row has IOPS and latency, and no bandwidth cell."""
    base = _summaries([1000.0, 1010.0, 990.0], run_id=1, rw="create", bw_bytes_per_s=4096e3, direction="write")
    cand = _summaries([1500.0, 1490.0, 1510.0], run_id=2, rw="create", bw_bytes_per_s=6144e3, direction="write")
    row = only(compare_points(base, cand, frozenset()))
    assert row.cell("bw_bytes_per_s") is None and row.cell("iops") is not None
    block = only(compare_points(_summaries([1000.0, 1010.0], run_id=1, bw_bytes_per_s=4096e3),
                                _summaries([1500.0, 1490.0], run_id=2, bw_bytes_per_s=6144e3), frozenset()))
    assert block.cell("bw_bytes_per_s") is not None


def _aa_false_fail_rates(points: int, trials: int = 120, seed: int = 29) -> tuple[float, float]:
    """An A/A compare of ``points`` points (3 repetitions a side, CV 10 %, independent sides): how often a gate at
    5 % per cell, and one at 5 % for the whole table (Bonferroni over its cells), fails on no change at all."""
    import random

    from storbench.stats.compare import compare_observations
    from storbench.stats.compare_cells import regressions, tested_cells
    from storbench.stats.selectors import parse_selector
    from synthetic import observation

    rng = random.Random(seed)
    base, cand = parse_selector("target=a"), parse_selector("target=b")
    per_cell = family = 0
    for _ in range(trials):
        found = [observation(case_id=f"{side}{p}", target=side, bs_bytes=4096 << p, repeat=r,
                             iops=rng.gauss(1000, 100), lat_mean_ns=rng.gauss(1e6, 1e5), lat_p99_ns=rng.gauss(2e6, 2e5))
                 for side in "ab" for p in range(points) for r in range(3)]
        comparisons = compare_observations(found, base, cand, {})
        per_cell += bool(regressions(comparisons, 0.0))
        wide = compare_observations(found, base, cand, {}, alpha=0.05 / tested_cells(comparisons))
        family += bool(regressions(wide, 0.0))
    return per_cell / trials, family / trials


@pytest.mark.parametrize("points", [4, 8])
def test_the_regression_gate_fails_an_aa_compare_at_most_about_5_percent_of_the_time(points: int) -> None:
    per_cell, family = _aa_false_fail_rates(points)  # the methodology's figures: 17 % and 35 %; 0.5 % and 1.5 %
    assert per_cell >= 0.12, per_cell  # 5 % a cell over many cells: the old gate
    assert family <= 0.05, family


def test_every_comparison_carries_its_design_and_the_confounded_ones_say_so() -> None:
    import json as json_module

    from storbench.report.compare_export import comparison_csv, comparison_json, comparison_markdown
    from storbench.stats.compare import compare_observations
    from storbench.stats.selectors import parse_selector
    from synthetic import observation

    def sides(**a: object) -> list[Observation]:
        return [observation(case_id=f"{t}", target=t, repeat=r, iops=1000.0 + 10 * r + (50 if t == "b" else 0),
                            **a) for t in "ab" for r in range(3)]

    base, cand = parse_selector("target=a"), parse_selector("target=b")
    assert compare_observations(sides(), base, cand, {}, interleaved_runs=frozenset({1}))[0].design == "paired"
    assert compare_observations(sides(), base, cand, {})[0].design == "blocked"  # one run, sequential order
    # a random order is not blocked: drift widens the interval but favours neither side (no ⚠)
    (shuffled,) = compare_observations(sides(), base, cand, {}, shuffled_runs=frozenset({1}))
    assert shuffled.design == "shuffled"
    assert {(r["design"], r["design_confounds"]) for r in json_module.loads(comparison_json([shuffled]))} == {
        ("shuffled", False)}
    before_after = [*[o for o in sides() if o.case.target.name == "a"],
                    *[replace(o, run_id=2) for o in sides() if o.case.target.name == "b"]]
    (two,) = compare_observations(before_after, base, cand, {})
    assert two.design == "two runs"
    rows = json_module.loads(comparison_json([two]))
    assert {(r["design"], r["design_confounds"]) for r in rows} == {("two runs", True)}
    assert "two runs,True" in comparison_csv([two])
    assert "- ⚠ design: two runs (randread 4k qd1 read): separate runs (before/after)" \
        in comparison_markdown([two], "target=a", "target=b")
    osds = [observation(case_id=f"c{n}", lab=f"lab=ceph osds={n} osd_size=1 objectstore=bluestore pool_size=2",
                        repeat=r, iops=1000.0 + r + n) for n in (3, 6) for r in range(3)]
    (blocked,) = compare_observations(osds, parse_selector("osds=3"), parse_selector("osds=6"), {},
                                      interleaved_runs=frozenset({1}))
    assert blocked.design == "one instance per side"
    (fresh,) = compare_observations(osds, parse_selector("osds=3"), parse_selector("osds=6"), {},
                                    interleaved_runs=frozenset({1}), bring_ups={1: "each_repetition"})
    assert fresh.design == "fresh instance per round"


def test_the_reports_summary_shows_each_warning_and_says_its_advice_once_below() -> None:
    from html import escape as html_escape

    from storbench.report.html import ReportDocument, render_html
    from storbench.report.warning_text import warning_lines

    points = summarize_points([*reps([1000.0, 1250.0, 750.0], case_id="case-a"),
                               *reps([1000.0, 1260.0, 740.0], case_id="case-b", target="b")])
    page = render_html(ReportDocument(title="t", runs=(), points=tuple(points), figures=(),
                                      warnings=tuple(warning_lines(points))), "")
    fix = next(w.fix for w in points[0].warnings if w.code == "high_cv")
    assert page.count(html_escape(fix)) == 1, page.count(html_escape(fix))  # once, under the table
    assert all(html_escape(w.message) in page for p in points for w in p.warnings)  # each point's own figures


def test_compare_adds_where_the_time_goes_where_both_sides_storage_reported_it() -> None:
    """The storage's latency and the rest outside it are compared (Welch) where both sides have them, and never
    gated: a regression gate is about what the client sees."""
    from storbench.stats.compare_cells import tested_cells
    from storbench.stats.compare_match import compare_points

    def points(iops: float, lat_ms: float, osd_ms: float | None, case: str) -> list[PointSummary]:
        return summarize_points([observation(case_id=case, target=case, repeat=r, iops=iops * (1 + 0.01 * r),
                                             lat_mean_ns=lat_ms * 1e6, osd_lat_ns=None if osd_ms is None
                                             else osd_ms * 1e6 * (1 + 0.02 * r)) for r in range(3)])

    with_layers = compare_points(points(1000, 2.0, 0.5, "a"), points(800, 2.5, 0.5, "b"), frozenset({"target"}))
    (comparison,) = with_layers
    fields = [cell.metric.field for cell in comparison.cells]
    assert fields[-2:] == ["storage_lat_ns", "outside_storage_lat_ns"]
    outside = comparison.cell("outside_storage_lat_ns")
    assert outside is not None and outside.difference is not None and outside.difference.change_pct > 30
    assert not outside.gated and comparison.cell("iops").gated
    assert tested_cells(with_layers) == 3  # IOPS, bandwidth, mean latency (no percentiles given here)
    without = compare_points(points(1000, 2.0, 0.5, "a"), points(800, 2.5, None, "b"), frozenset({"target"}))
    assert "storage_lat_ns" not in [cell.metric.field for cell in without[0].cells]
    from storbench.report.compare_export import comparison_markdown

    table = comparison_markdown(with_layers, "target=a", "target=b")
    assert "| latency outside the storage | bottleneck |" in table and "| +" in table
    assert "latency outside the storage" not in comparison_markdown(without, "target=a", "target=b")


def test_drift_figures_name_the_operation_and_stay_above_minus_100_percent() -> None:
    from storbench.report.drift_figures import drift_figures

    observations = [rec(case_id=f"c{i % 2}", rw=rw, direction="write", repeat=i // 2, started_at_s=60.0 * i,
                        iops=1000.0 * 0.7 ** i) for rw in ("create", "delete") for i in range(12)]
    figures = drift_figures(run_drifts(observations, 1))
    assert [f.figure_id for f in figures] == ["drift-run1-write-create", "drift-run1-write-delete"]
    assert [f.title for f in figures] == ["Drift — run 1 creates/s", "Drift — run 1 deletes/s"]
    trend = figures[0].series[1]
    assert all(y > -100 for y in trend.y) and trend.y[0] > trend.y[-1]


def test_drift_of_a_run_of_seconds_does_not_overflow() -> None:
    """Repetitions replayed within a second (a fake executor, an import of quick runs): the slope per 10 minutes
    is beyond any float, the change over the run itself is not, and every output reads it without an overflow."""
    rows = [rec(case_id=c, repeat=r, started_at_s=1000.0 + 0.01 * (2 * r + i), iops=1000.0 * (1.2 if r == 2 else 1))
            for r in range(4) for i, c in enumerate(("A", "B"))]
    d = drift(rows, run_id=1, direction="read")
    change = d.over_run()
    assert change is not None and all(math.isfinite(v) or v == math.inf for v in change)
    assert -100 < change[1] <= change[0] and math.isfinite(change[0])
    assert d.trend_pct(0.0) is not None


def test_a_percentile_in_one_histogram_bin_a_side_has_no_interval() -> None:
    """Every repetition's p99 in the same fio bin on each side (2,015,232 against 2,031,616 ns): no spread below
    the bins' resolution, so no zero-width interval that calls the next bin a change (`--fail-on-regression 0`
    failed on it); unpaired and paired alike. IOPS with a spread keep theirs."""
    from storbench.stats.compare import compare_observations
    from storbench.stats.compare_cells import Verdict
    from storbench.stats.selectors import parse_selector
    from storbench.stats.sequential import Decision, SequentialPlan, decide_metric
    from synthetic import observation

    # at any count: the spread of equal log ratios summed by hand had come to 1.8e-18 at ten pairs, not 0, and
    # the paired comparison had said "+0.81 % [+0.81, +0.81] worse"
    for reps in (4, 7, 10, 13):
        observations = [observation(case_id=f"c{side}", target=side, repeat=rep,
                                    iops=1000.0 + rep * 7 + (side == "b"),
                                    lat_p99_ns=2_015_232 if side == "a" else 2_031_616,
                                    started_at_s=10.0 * (2 * rep + (side == "b")),
                                    finished_at_s=10.0 * (2 * rep + (side == "b")) + 9)
                        for rep in range(reps) for side in ("a", "b")]
        for interleaved in (frozenset(), frozenset({1})):
            (found,) = compare_observations(observations, parse_selector("target=a"), parse_selector("target=b"),
                                            {}, interleaved_runs=interleaved)
            p99, iops = found.cell("lat_p99_ns"), found.cell("iops")
            assert p99 is not None and p99.difference is not None and p99.difference.change_ci_low_pct is None, reps
            assert p99.verdict is Verdict.UNDECIDED and p99.difference.change_pct == pytest.approx(0.81, abs=0.01)
            assert iops is not None and iops.difference is not None and iops.difference.change_ci_low_pct is not None
        # nor may the stopping rule stop on it
        plan = SequentialPlan(max_rounds=30)
        verdict = decide_metric("lat_p99_ns", [1_130_496.0] * reps, [1_146_880.0] * reps, plan, reps)
        assert verdict.decision is Decision.UNDECIDED, (reps, verdict)


def test_a_percentile_in_one_bin_on_one_side_has_no_interval_either() -> None:
    """p99 in one fio bin on every baseline repetition, the candidate's one bin up (one repetition two): the
    baseline's zero spread is the bins' resolution, not a measured none; Welch had said "+1.74 % [+0.94, +2.55]
    worse" on a change a bin (1.45 %) could hold. IOPS without spread on one side keep their interval."""
    from storbench.stats.compare import compare_observations
    from storbench.stats.compare_cells import Verdict
    from storbench.stats.selectors import parse_selector
    from synthetic import observation

    p99 = {"a": [1_130_496] * 5, "b": [1_146_880] * 4 + [1_163_264]}
    seen = [observation(case_id=f"c{side}", target=side, repeat=rep, iops=1000.0 + 5 * rep * (side == "b"),
                        lat_p99_ns=p99[side][rep]) for side in ("a", "b") for rep in range(5)]
    (found,) = compare_observations(seen, parse_selector("target=a"), parse_selector("target=b"), {})
    cell, iops = found.cell("lat_p99_ns"), found.cell("iops")
    assert cell is not None and cell.difference is not None and cell.difference.change_ci_low_pct is None, cell
    assert cell.verdict is Verdict.UNDECIDED
    assert iops is not None and iops.difference is not None and iops.difference.change_ci_low_pct is not None


def test_a_point_pooled_over_runs_takes_each_runs_mean_as_one_sample() -> None:
    """`show --pool` and the report pool a point's runs: its interval is over the runs' means (the run is the thing
    that varies: its repetitions share its time and instance), not over every repetition as if independent."""
    import statistics

    from storbench.stats.summary import summarize_points
    from synthetic import observation

    levels = {1: 1000.0, 2: 1060.0, 3: 970.0}
    found = [observation(run_id=run, repeat=rep, iops=level + rep) for run, level in levels.items() for rep in range(5)]
    (pooled,) = summarize_points(found)
    iops = pooled.metric("iops")
    assert iops is not None and pooled.repetitions_ok == 15 and iops.n == 3
    means = [level + 2 for level in levels.values()]
    assert iops.mean == pytest.approx(statistics.mean(means)) and iops.stddev == pytest.approx(statistics.stdev(means))
    assert [w.code for w in pooled.warnings] == []
    (two,) = summarize_points([o for o in found if o.run_id != 3])
    few = next(w for w in two.warnings if w.code == "few_runs")  # (and a wide interval: t = 12.7 at n = 2)
    assert "2 runs pooled" in few.message and "few_repetitions" not in [w.code for w in two.warnings]
    apart = summarize_points(found, by_run=True)  # a row per run: its repetitions
    assert [p.metric("iops").n for p in apart] == [5, 5, 5]  # type: ignore[union-attr]


def test_a_plans_compare_may_select_by_direction() -> None:
    """A randrw plan's sides `bs=4k,direction=read` and `bs=8k,direction=read` select its points, as its results
    will be selected (each direction its own); a direction the pattern has not is refused."""
    from storbench.config import load_plan_text
    from storbench.plan import expand
    from storbench.stats.selectors import parse_selector, plan_side_refusal

    loaded = load_plan_text("name: d\ntargets:\n  t: {kind: path, path: /tmp/x, size: 1MiB}\n"
                            "workload: {rw: randrw, bs: [4k, 8k], runtime: 1s}\n", "d.yaml")
    cases = expand(loaded)
    assert plan_side_refusal(cases, parse_selector("bs=4k,direction=read"), parse_selector("bs=8k,direction=read")) \
        is None
    refusal = plan_side_refusal(cases, parse_selector("bs=4k,direction=trim"), parse_selector("bs=8k"))
    assert refusal is not None and refusal.side == "baseline" and "direction=trim" in refusal.message


def test_the_samples_advised_are_the_fewest_whose_t_interval_is_narrow_enough() -> None:
    """"About N repetitions would give +-20 %" counts the t quantile falling with more samples, not only sqrt(n):
    N is the fewest at which the same spread gives the target, and one fewer does not."""
    from storbench.stats.estimate import samples_for_half_width, t_quantile

    for n, sd, target in ((2, 30.0, 5.0), (3, 120.0, 200.0), (5, 10.0, 3.0), (2, 92.0, 20.0)):
        half = t_quantile(0.95, n - 1) * sd / n**0.5
        m = samples_for_half_width(half, n, target, 0.95, 1000)
        assert m is not None and m > n
        assert t_quantile(0.95, m - 1) * sd / m**0.5 <= target + 1e-9
        assert m - 1 == n or t_quantile(0.95, m - 2) * sd / (m - 1) ** 0.5 > target
    assert samples_for_half_width(1000.0, 2, 0.001, 0.95, 50) is None  # beyond the most advised


def test_tail_percentiles_from_too_few_ios_say_so() -> None:
    """p99 of 50 I/Os is their largest (a metadata run of 50 files, a rate-limited second): a warning names the
    percentiles that rest on fewer than about 10 I/Os beyond them; enough I/Os, or a count not known, none."""
    few = only(summarize_points(reps([1000.0, 1010.0, 990.0], total_ios=50)))
    warning = next(w for w in few.warnings if w.code == "few_ios_for_tail")
    assert warning.message.startswith("p95, p99, p99.9 from 50 I/Os in a repetition") and "p95 needs 200" in \
        warning.message, warning.message
    some = only(summarize_points(reps([1000.0, 1010.0, 990.0], total_ios=5000)))
    assert next(w for w in some.warnings if w.code == "few_ios_for_tail").message.startswith("p99.9 from 5,000")
    for enough in (20_000, None):
        assert "few_ios_for_tail" not in codes(only(summarize_points(reps([1000.0, 1010.0, 990.0],
                                                                          total_ios=enough))))


def test_a_change_to_zero_is_judged_in_its_unit_and_no_spread_says_it_cannot_judge() -> None:
    """A blackout of 5, 3 and 7 s against none: the change interval over the baseline's mean as if exact had read
    -100 % [-199.4, -0.6]. Repetitions all alike (1000, 1000, 1000 against 500, 500, 500) give no interval: said,
    not a bare "~"."""
    from storbench.stats.estimate import estimate, welch_difference

    gone = welch_difference(estimate([5.0, 3.0, 7.0]), estimate([0.0, 0.0, 0.0]))
    assert gone.change_pct == -100.0 and gone.change_ci_low_pct is None and gone.change_ci_high_pct is None
    assert gone.ci_low is not None and gone.ci_high is not None and gone.ci_high < 0 and gone.significant
    from storbench.report.compare_tables import change_text
    from storbench.stats.compare import compare_observations
    from storbench.stats.selectors import parse_selector
    from synthetic import observation

    flat = [observation(case_id=t, target=t, repeat=r, iops=1000.0 if t == "a" else 500.0)
            for t in "ab" for r in range(3)]
    (c,) = compare_observations(flat, parse_selector("target=a"), parse_selector("target=b"), {})
    text, _ = change_text(c, "iops")
    assert text == "-50.0% ~ (no spread: cannot judge)", text


def test_the_drift_rule_does_not_take_repetitions_sharing_their_luck_for_a_trend() -> None:
    """Repetitions next to each other in time share part of their luck (AR(1) noise of 0.5 in run order, no drift):
    the plain t interval called 23 % of such runs drifted; with the slope's variance raised for the residuals'
    autocorrelation, about 11 % (bench/drift_rule.py gives the whole table). With independent noise it stays near
    5 %, and a real drift of -5 % per 10 minutes over 8 cases x 3 rounds is still found in most runs."""
    import math
    import random
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from drift_rule import one_run

    rng = random.Random(7)
    trials = 400
    shared = sum(one_run(8, 3, 0.05, 0.0, 0.5, rng) for _ in range(trials)) / trials
    independent = sum(one_run(8, 3, 0.05, 0.0, 0.0, rng) for _ in range(trials)) / trials
    drifted = sum(one_run(8, 3, 0.05, math.log1p(-0.05) / 10, 0.0, rng) for _ in range(trials)) / trials
    assert shared < 0.17 and independent < 0.08 and drifted > 0.7, (shared, independent, drifted)


def test_an_interval_that_includes_no_change_is_called_undecided_not_no_difference() -> None:
    """`~` is an interval around 0 %: the data did not show a change, which is no evidence that nothing changed
    (that needs an interval inside a margin). Every view says "undecided", and the report styles the cell."""
    import re

    from rich.console import Console

    from storbench.report.compare_export import comparison_markdown
    from storbench.report.compare_tables import compare_table
    from storbench.report.html import ReportDocument, render_html

    wide = [observation(case_id=t, target=t, repeat=r, iops=iops) for t, values in
            (("a", (900.0, 1300.0, 1000.0)), ("b", (1250.0, 850.0, 1100.0))) for r, iops in enumerate(values)]
    (c,) = compare_observations(wide, parse_selector("target=a"), parse_selector("target=b"), {},
                                interleaved_runs=frozenset({1}))
    cell = c.cell("iops")
    assert cell is not None and cell.verdict is Verdict.UNDECIDED and cell.difference is not None
    low, high = cell.difference.change_ci_low_pct, cell.difference.change_ci_high_pct
    # wide: "no difference" would claim what these data cannot show
    assert low is not None and high is not None and low < -10 and high > 10
    markdown = comparison_markdown([c], "target=a", "target=b")
    console = Console(width=200, record=True)
    console.print(compare_table([c], "target=a", "target=b"))
    html = render_html(ReportDocument(title="t", runs=(), points=(), figures=(), comparisons=(c,),
                                      baseline="target=a", candidate="target=b"), "")
    for text in (markdown, console.export_text(), html):
        assert "~ undecided" in text and "no detectable difference" not in text
    assert "includes 0 %" in markdown and "includes 0 %" in html
    cls = re.search(r"<td class='verdict-([a-z_]+)'>[^<]*~<", html)
    assert cls is not None and f"td.verdict-{cls.group(1)}{{" in html  # the cell's class has a style


def test_points_of_a_sweep_over_files_dirs_or_objects_pair_value_with_value() -> None:
    """A metadata cycle swept over `dirs` (or an S3 workload over `objects`): `compare` pairs dirs=8 with dirs=8,
    not every candidate point with the first baseline point (which read "+300 % better" of two identical runs);
    named in the selectors, the counts compare across."""
    def sweep(pool: int, count: str) -> list[Observation]:
        out = []
        for value, iops in ((1, 1000.0), (8, 4000.0)):
            for r in range(3):
                o = observation(case_id=f"p{pool}-{value}", lab=f"lab=ceph pool_size={pool}", repeat=r,
                                iops=iops + 10 * r)
                out.append(replace(o, case=replace(o.case, workload=replace(o.case.workload, **{count: value}))))
        return out

    for count in ("dirs", "files"):
        seen = [*sweep(2, count), *sweep(3, count)]
        found = compare_observations(seen, parse_selector("pool_size=2"), parse_selector("pool_size=3"), {})
        assert len(found) == 2 and all(c.comparable for c in found)
        for c in found:
            assert getattr(c.baseline.case.workload, count) == getattr(c.candidate.case.workload, count)
            cell = c.cell("iops")
            assert cell is not None and cell.difference is not None and abs(cell.difference.change_pct) < 1
        across = compare_observations(seen, parse_selector(f"pool_size=2,{count}=1"),
                                      parse_selector(f"pool_size=2,{count}=8"), {})
        assert len(across) == 1 and across[0].comparable  # named: compared across the counts
    # S3 objects are the workload's files: a selector naming `objects` compares across them too
    objects = [replace(o, case=replace(o.case, workload=replace(o.case.workload, rw="get")))
               for o in sweep(2, "files")]
    named = compare_observations(objects, parse_selector("objects=1"), parse_selector("objects=8"), {})
    assert len(named) == 1 and named[0].comparable


def test_operations_that_move_no_data_have_no_bandwidth_anywhere() -> None:
    """A file created, stat'ed or deleted, an object deleted: fio's bytes are operations x a size, which means
    nothing. Their points have no bandwidth (so no MiB/s cell, figure or compare cell), their records none and no
    bytes; the Markdown table names their rate ops/s. A PUT keeps its bandwidth."""
    from storbench.records import record
    from storbench.report.show_export import points_markdown

    for rw, direction, moving in (("create", "write", False), ("delete_object", "trim", False),
                                  ("put", "write", True)):
        seen = [observation(rw=rw, direction=direction, repeat=r, iops=500.0 + r) for r in range(3)]
        (point,) = summarize_points(seen)
        assert (point.metric("bw_bytes_per_s") is not None) == moving, rw
        row = record(seen[0])
        assert (row.bw_bytes_per_s is not None and row.io_bytes is not None) == moving, rw
        (c,) = compare_observations([*seen, *[replace(o, run_id=2) for o in seen]], parse_selector("run=1"),
                                    parse_selector("run=2"), {})
        assert (c.cell("bw_bytes_per_s") is not None) == moving, rw
        assert "| ops/s ± 95% CI |" in points_markdown([point], "t"), rw  # each one timed operation
    assert "| IOPS ± 95% CI |" in points_markdown(summarize_points([observation(iops=500.0)]), "t")


def test_a_rate_from_a_phase_of_a_few_milliseconds_is_warned_about() -> None:
    """4,000 stats in 8 ms: fio's runtime is whole milliseconds, so the rate may be 12 % off. A size-based phase
    under 0.1 s says so; one of a second, or a time-based job however short its runtime field, does not."""
    def point(rw: str, runtime_ms: int) -> PointSummary:
        seen = []
        for r in range(3):
            o = observation(rw=rw, direction="read", repeat=r, iops=500_000.0, total_ios=4000)
            assert o.measurement is not None
            seen.append(replace(o, measurement=replace(o.measurement, runtime_ms=runtime_ms + r)))
        (found,) = summarize_points(seen)
        return found

    (short,) = [w for w in point("stat", 8).warnings if w.code == "short_phase"]
    assert "took 8 ms" in short.message and "up to 12 %" in short.message and "more files" in short.fix
    assert not [w for w in point("stat", 1000).warnings if w.code == "short_phase"]
    assert not [w for w in point("randread", 8).warnings if w.code == "short_phase"]


def test_a_run_repeated_until_ci_says_its_intervals_level_in_every_header_and_caption() -> None:
    """A run repeated `until: ci` shows its intervals at 99 % (the level that covers 95 % after such a stop); the
    report's and the Markdown's headers and captions had called them 95 %, and only the terminal said otherwise."""
    from storbench.report.point_figures import block_size_figures
    from storbench.report.saturation_figures import iops_vs_load_figures
    from storbench.report.show_export import points_markdown
    from storbench.report.summary_table import summary_table
    from storbench.report.tables import results_table
    from storbench.report.utilisation_figures import utilisation_figures

    seen = [observation(repeat=r, iops=500.0 + 9 * r, bs_bytes=bs) for r in range(4) for bs in (4096, 8192)]
    plain, at_99 = summarize_points(seen), summarize_points(seen, levels={1: 0.99})
    assert "| IOPS ± 95% CI |" in points_markdown(plain, "t")
    assert "| IOPS ± 99% CI |" in points_markdown(at_99, "t") and "its 99% confidence interval" in \
        points_markdown(at_99, "t")
    assert "IOPS ± 99% CI" in summary_table(at_99) and "IOPS ± 95% CI" in summary_table(plain)
    assert all("error bars: 99% confidence interval" in f.caption for f in block_size_figures(at_99))
    # the terminal's header, and the report's IOPS-vs-load and utilisation captions, had kept saying 95 %
    header = [str(c.header) for c in results_table(at_99, "t").columns]
    assert "IOPS ± 99% CI" in header and "IOPS ± 95% CI" in [str(c.header) for c in results_table(plain, "t").columns]
    busy = [observation(case_id=f"c{d}-{bs}", repeat=r, iops=500.0 + 9 * r, iodepth=d, host_cpu_busy_pct=40.0 + r,
                        bs_bytes=bs)
            for r in range(4) for d in (1, 4) for bs in (4096, 8192)]
    load, used = (f(summarize_points(busy, levels={1: 0.99})) for f in (iops_vs_load_figures, utilisation_figures))
    assert load and used
    for figure in (*load, *used):
        assert "99% CI" in figure.caption and "95 % CI" not in figure.caption, figure.caption
    assert at_99[0].metric("iops").ci_high - at_99[0].metric("iops").mean > \
        plain[0].metric("iops").ci_high - plain[0].metric("iops").mean  # wider: the level is the interval's own


def test_an_interval_beyond_a_hundred_times_the_baseline_says_only_that() -> None:
    """Two repetitions far apart (t = 12.7, on the log scale) had printed "[-100.0, +32014955800813912064.0]"."""
    import re

    from storbench.report.compare_tables import change_text
    from storbench.stats.compare import compare_observations
    from storbench.stats.selectors import parse_selector

    wild = [observation(case_id=t, target=t, repeat=r, iops=iops)
            for t, values in (("a", (1000.0, 1010.0)), ("b", (20.0, 9000.0))) for r, iops in enumerate(values)]
    (c,) = compare_observations(wild, parse_selector("target=a"), parse_selector("target=b"), {})
    text, _ = change_text(c, "iops")
    assert re.fullmatch(r"[+-]\d+\.\d% \[[+-]\d+\.\d, >\+10,000\] ~", text), text


def test_comparisons_and_saturation_tables_name_an_operations_rate_ops_per_s() -> None:
    """The terminal said ops/s for files created and object requests; the Markdown comparison and the report's
    comparison and saturation tables still said "IOPS" over the same figures."""
    from types import SimpleNamespace

    from storbench.report.compare_export import comparison_markdown
    from storbench.report.html import _comparison_table
    from storbench.stats.compare import compare_observations
    from storbench.stats.selectors import parse_selector

    seen = [observation(case_id=f"c{t}", target=f"t{t}", rw="create", direction="write", repeat=r,
                        iops=500.0 + r + 9 * t) for t in (1, 2) for r in range(3)]
    found = compare_observations(seen, parse_selector("target=t1"), parse_selector("target=t2"), {})
    table = comparison_markdown(found, "target=t1", "target=t2")
    assert "| point | ops/s baseline | ops/s candidate | ops/s |" in table and "IOPS" not in table, table
    doc = SimpleNamespace(comparisons=found, baseline="target=t1", candidate="target=t2", asked_by=())
    html = _comparison_table(doc)  # type: ignore[arg-type]
    assert "<th>ops/s baseline</th>" in html and "IOPS" not in html.split("</thead>")[0], html[:400]


def test_a_point_pooled_over_runs_takes_95_percent_whatever_one_runs_stopping_rule() -> None:
    """Three runs pooled, one of them repeated `until: ci` (its own intervals at 97.5 %): the pooled interval is over
    the runs' means, whose number no rule chose; `show` had taken 97.5 % where `compare` keeps 95 % on the same runs."""
    from synthetic import observation

    seen = [observation(run_id=run, repeat=rep, iops=level + rep) for run, level in ((1, 100.0), (2, 110.0),
                                                                                     (3, 95.0)) for rep in range(3)]
    (plain,) = summarize_points(seen)
    (stopped,) = summarize_points(seen, levels={1: 0.975})
    assert plain.metric("iops").confidence == stopped.metric("iops").confidence == 0.95  # type: ignore[union-attr]
    assert plain.metric("iops").ci_low == stopped.metric("iops").ci_low  # type: ignore[union-attr]
    (alone,) = summarize_points([o for o in seen if o.run_id == 1], levels={1: 0.975})
    assert alone.metric("iops").confidence == 0.975  # type: ignore[union-attr]  # one run: its rule's level


def test_a_suggested_selector_leaves_out_a_field_its_side_has_no_value_of() -> None:
    """The suggestion had named `rwmixread=` for a side without a mix, which `--baseline` then refused ('is not
    KEY=VALUE')."""
    records = [*reps(IOPS_A, case_id="a", target="a"),
               *reps(IOPS_B, case_id="b", target="b", rw="randrw", rwmixread=70)]
    text = no_common_point(records, parse_selector("target=a"), parse_selector("target=b"), {})
    suggested = text.split("(--baseline ")[1].rstrip(")").split(" --candidate ")
    assert suggested == ["target=a,rw=randread", "target=b,rw=randrw,rwmixread=70"], text
    for selector in suggested:
        parse_selector(selector)  # each one a selector `compare` takes


def test_a_comparison_of_volume_operations_gives_their_time_and_slowest_client_not_p95_and_bandwidth() -> None:
    """Two StorageClasses' attach times, one per client: a repetition's p99 of two values is its slowest client's
    time and its p95 no percentile, and an operation moves no data; the table says "time" and "slowest", as `show`
    does, where it had "mean lat", "p95", "p99" and "bandwidth"."""
    from rich.console import Console

    from storbench.report.compare_tables import compare_table

    found = [observation(case_id=t, target=t, target_kind="pvc", rw="attach", repeat=r, iops=1 / s, clients=2,
                         lat_mean_ns=s * 1e9, lat_p95_ns=s * 1.1e9, lat_p99_ns=s * 1.1e9, direction="write")
             for t, times in (("a", (5.0, 5.2, 4.9)), ("b", (7.0, 7.3, 6.8))) for r, s in enumerate(times)]
    (c,) = compare_observations(found, parse_selector("target=a"), parse_selector("target=b"), {},
                                interleaved_runs=frozenset({1}))
    console = Console(width=300, record=True)
    console.print(compare_table([c], "target=a", "target=b"))
    from storbench.report.compare_export import comparison_markdown
    from storbench.report.html import ReportDocument, render_html

    markdown = comparison_markdown([c], "target=a", "target=b").splitlines()
    html = render_html(ReportDocument(title="t", runs=(), points=(), figures=(), comparisons=(c,),
                                      baseline="target=a", candidate="target=b"), "")
    html_head = html[html.index("<table class='data compare'>"):].split("</thead>")[0]
    for header in (next(line for line in console.export_text().splitlines() if "point" in line),
                   next(line for line in markdown if line.startswith("| point")), html_head):
        assert "time" in header and "slowest" in header, header
        for gone in ("p95", "p99", "bandwidth", "mean lat"):
            assert gone not in header, (gone, header)
    many = [replace(o, case=replace(o.case, clients=150)) for o in found]  # p99 of 150 values: not the slowest
    (wide,) = compare_observations(many, parse_selector("target=a"), parse_selector("target=b"), {},
                                   interleaved_runs=frozenset({1}))
    wide_header = next(line for line in comparison_markdown([wide], "a", "b").splitlines()
                       if line.startswith("| point"))
    assert "slowest" not in wide_header and "p99" in wide_header, wide_header
    head = next(i for i, line in enumerate(markdown) if line.startswith("| point"))
    assert markdown[head + 2].count("|") == markdown[head].count("|") == markdown[head + 1].count("|"), markdown
