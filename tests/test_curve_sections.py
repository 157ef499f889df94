"""Issue 29: one curve, one answer. The knee (`saturation`, the report), the capped verdict, each point's reading
of the sweep (`show`, `compare`, the report) and the search's stepping never contradict each other on the same
simulated data (bench/curve_sections.py, whose figures docs/methodology.md gives), and `compare` says of a point
what `show` says of it."""

from __future__ import annotations

import random
from types import ModuleType

import pytest

from helpers import bench_module
from storbench.model import Expectation
from storbench.stats.bottleneck import Bottleneck
from storbench.stats.compare import compare_observations
from storbench.stats.selectors import parse_selector
from storbench.stats.summary import summarize_points
from synthetic import observation


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return bench_module("curve_sections")


@pytest.mark.parametrize("shape", range(7))
def test_no_two_sections_contradict_each_other_on_simulated_curves(bench: ModuleType, shape: int) -> None:
    """The issue's five shapes (rising, flat, noisy rising, noisy flat, capped) and the audit's two (a creep of
    +4 % a step at CV 1 %, flat then a jump at CV 0.5 %), 150 curves each: no contradiction. The rule this replaced
    (the next load only) contradicts the knee on most creeping and jumping curves: the check can fail."""
    name, means, cv, n = bench.SHAPES[shape]
    rng = random.Random(shape)
    before = 0
    for _ in range(150):
        found = bench.sections([[max(rng.gauss(m, m * cv), 1.0) for _ in range(n)] for m in means])
        assert found.contradictions == (), (name, found)
        before += bool(found.old_contradictions)
    if name.startswith(("creeping", "flat then a jump")):
        assert before >= 140, (name, before)


def test_a_point_below_a_jump_says_the_jump_not_the_flat_step_before_it(bench: ModuleType) -> None:
    """The audit's curve, 1,000 / 1,030 / 1,900 IOPS at CV 0.5 %: iodepth 1 once said "yet iodepth 2 gave no more
    IOPS: the limit is elsewhere" while the knee said still rising; now it names iodepth 4's rise."""
    rng = random.Random(7)
    samples = [[rng.gauss(m, m * 0.005) for _ in range(3)] for m in (1000.0, 1030.0, 1900.0)]
    rows = [observation(case_id=f"qd{2**i}", iodepth=2**i, repeat=rep, iops=v, lat_mean_ns=2**i / v * 1e9,
                        host_cpu_busy_pct=10.0, disk_busiest_util_pct=20.0)
            for i, values in enumerate(samples) for rep, v in enumerate(values)]
    first, second, third = summarize_points(rows)
    assert "more load raises IOPS: iodepth 4 gave +9" in first.bottleneck.evidence, first.bottleneck.evidence
    assert "the limit is elsewhere" not in first.bottleneck.evidence
    assert "more load raises IOPS: iodepth 4 gave +8" in second.bottleneck.evidence, second.bottleneck.evidence
    assert "it still rose into iodepth 4" in third.bottleneck.evidence, third.bottleneck.evidence
    assert bench.sections(samples).contradictions == ()
    assert bench.sections(samples).old_contradictions != ()


def test_the_limit_is_elsewhere_only_when_every_higher_load_is_shown_flat() -> None:
    """A sweep flat at every load (CV about 0.5 %, iodepth 4 to 6: too little more load for the capped verdict,
    which asks for twice the load): the lower points say the limit is elsewhere, with the most any higher load
    gave; the highest that it gave no more than the one below; a noisy one says what would tell."""
    def sweep(depths: list[int], per_depth: list[list[float]], lat_ms: list[float]) -> list[str]:
        rows = [observation(case_id=f"qd{d}", iodepth=d, repeat=rep, iops=v, lat_mean_ns=lat * 1e6,
                            host_cpu_busy_pct=10.0, disk_busiest_util_pct=20.0)
                for d, values, lat in zip(depths, per_depth, lat_ms, strict=True) for rep, v in enumerate(values)]
        return [p.bottleneck.evidence for p in summarize_points(rows)]

    flat = sweep([4, 5, 6], [[1000, 1010, 990], [1005, 995, 1000], [1000, 1004, 996]], [4.0, 5.0, 6.0])
    assert "yet no higher load gave more IOPS (the most, iodepth " in flat[0] and "the limit is elsewhere" in flat[0]
    assert "yet iodepth 6 gave the same IOPS within +-10% (+0 % [" in flat[1], flat[1]
    assert "yet it gave the same IOPS within +-10% as iodepth 5 (+0 % [" in flat[2], flat[2]
    noisy = sweep([1, 2], [[1000, 1500, 700], [1300, 800, 1600]], [1.0, 1.2])
    assert "which cannot tell yet (about " in noisy[0] and "repetitions per point would tell)" in noisy[0], noisy[0]
    assert all("one point cannot show it" not in e for e in (*flat, *noisy))


def test_a_single_point_where_nothing_saturated_says_what_would_tell() -> None:
    """One point, its queue not full, nothing busy: "not saturated", and that a sweep or search: would tell whether
    more load raises IOPS; on a sweep the sweep's reading replaces it; a rate-limited point says fio held back."""
    def points(depths: list[int], **extra: object) -> list[str]:
        rows = [observation(case_id=f"qd{d}", iodepth=d, repeat=rep, iops=1000.0 * (1 + 0.01 * rep) * d,
                            lat_mean_ns=0.2e6, host_cpu_busy_pct=10.0, disk_busiest_util_pct=20.0, **extra)
                for d in depths for rep in range(3)]
        return [p.bottleneck.evidence for p in summarize_points(rows)]

    (single,) = points([4])
    assert single.startswith("nothing saturated (") and single.endswith(
        "fio did not keep its queue full; whether more load raises IOPS one point cannot show (a sweep of iodepth, "
        "or search:, would tell)"), single
    low, high = points([4, 16])
    assert "more load raises IOPS: iodepth 16 gave +300 %" in low and "one point cannot show" not in low, low
    assert "it still rose into iodepth 16" in high, high
    (held,) = points([4], fio_options="rate_iops=1000")
    assert "fio was told to hold back" in held and "a sweep" not in held, held


def test_compare_says_of_a_point_what_show_says() -> None:
    """Issue 29 (audit): `compare --baseline iodepth=1 --candidate iodepth=16` summarised each side alone, so its
    iodepth 1 said "one point cannot show it" where `show` over the run said iodepth 16 raised IOPS +458 %; both
    now read the whole run's sweep."""
    rows = [observation(case_id=f"qd{d}", iodepth=d, repeat=rep, iops=iops * (1 + 0.01 * (rep - 1)),
                        lat_mean_ns=d / iops * 1e9, host_cpu_busy_pct=10.0, disk_busiest_util_pct=20.0)
            for d, iops in ((1, 1000.0), (4, 3000.0), (16, 5580.0)) for rep in range(3)]
    shown = {p.case_id: p.bottleneck for p in summarize_points(rows, by_run=True)}
    (c,) = compare_observations(rows, parse_selector("iodepth=1"), parse_selector("iodepth=16"), {})
    assert c.baseline.bottleneck == shown["qd1"] and c.candidate.bottleneck == shown["qd16"]
    assert "more load raises IOPS: iodepth 4 gave +200 %" in c.baseline.bottleneck.evidence, c.baseline.bottleneck
    assert "one point cannot show it" not in c.baseline.bottleneck.evidence
    # the figures stay the side's: its own repetitions
    assert c.baseline.metric("iops") == summarize_points([o for o in rows if o.case.case_id == "qd1"])[0].metric("iops")


def test_compare_reads_the_declared_limit_as_show_does() -> None:
    """A volume sold as 3,000 IOPS, flat at it from iodepth 1 to 64: `show` says each point is capped at its declared
    limit; so does `compare` of two of its depths, given the same `expect:` (the CLI passes the runs' own)."""
    depths, lat_ms = (1, 16, 64), (0.33, 5.5, 22.0)
    rows = [observation(case_id=f"qd{d}", target="vol", target_kind="block", iodepth=d, repeat=rep, iops=rate,
                        lat_mean_ns=lat * 1e6, host_cpu_busy_pct=10.0, disk_busiest_util_pct=20.0)
            for d, lat in zip(depths, lat_ms, strict=True) for rep, rate in enumerate((2998.0, 3000.0, 3002.0))]
    declared = {(1, "vol"): Expectation(iops=3000)}
    shown = {p.case_id: p.bottleneck for p in summarize_points(rows, expectations=declared, by_run=True)}
    (c,) = compare_observations(rows, parse_selector("iodepth=1"), parse_selector("iodepth=64"), {},
                                expectations=declared)
    assert c.baseline.bottleneck == shown["qd1"] and c.candidate.bottleneck == shown["qd64"]
    assert c.baseline.bottleneck.kind == Bottleneck.CAPPED
    assert "at its declared 3,000 IOPS" in c.baseline.bottleneck.evidence, c.baseline.bottleneck.evidence


def test_a_busy_resource_that_more_load_outraises_was_not_the_limit() -> None:
    """The quickstart's 1m random writes: the disk busy 90 % at iodepth 1, yet iodepth 16 gave +23 %: the point is
    under-driven with its device's figures and the rise, not media-bound beside a curve that still rises; where
    more load is shown to add nothing, the busy disk stays the verdict (cpu-bound the same way)."""
    def verdicts(iops_at_16: list[float], **busy: float) -> list[tuple[str, str]]:
        rows = [observation(case_id=f"qd{d}", iodepth=d, repeat=rep, iops=v, lat_mean_ns=d * 1e9 / v,
                            **{"host_cpu_busy_pct": 10.0, "disk_busiest_util_pct": 10.0, **busy})
                for d, values in ((1, [1440.0, 1420.0, 1450.0]), (16, iops_at_16)) for rep, v in enumerate(values)]
        return [(p.bottleneck.kind.value, p.bottleneck.evidence) for p in summarize_points(rows)]

    (kind, evidence), (deepest, _) = verdicts([1760.0, 1790.0, 1750.0], disk_busiest_util_pct=92.0)
    assert kind == "under-driven" and deepest == "media-bound", (kind, evidence)
    assert "busy 92 % of the time" in evidence and "yet more load raises IOPS: iodepth 16 gave +" in evidence
    assert evidence.endswith("the busy device was not its limit"), evidence
    (kind, evidence), _ = verdicts([1440.0, 1430.0, 1445.0], disk_busiest_util_pct=92.0)
    assert kind == "media-bound", evidence
    (kind, evidence), _ = verdicts([2900.0, 2950.0, 2880.0], host_cpu_busy_pct=90.0)
    assert kind == "under-driven" and evidence.endswith("the busy CPU was not its limit"), evidence
