"""Known-answer tests: percentiles come from merged bins, exactly as from the union of the samples."""

from __future__ import annotations

import json
import math
import random
import statistics

import pytest

from storbench.fio.merge import merge_latency
from storbench.fio.parse import parse_fio_json
from storbench.model import LatencyHistogram, LatencySummary


def reference_percentile(samples: list[int], percent: float) -> int:
    """The smallest sample with at least percent% of all samples at or below it."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return ordered[rank - 1]


def histogram_of(samples: list[int]) -> LatencyHistogram:
    return LatencyHistogram.from_counts((s, 1) for s in samples)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("percent", [50.0, 90.0, 95.0, 99.0, 99.9])
def test_merged_percentile_equals_percentile_of_union(seed: int, percent: float) -> None:
    rng = random.Random(seed)
    # three "clients" with different speeds, values on a coarse grid like fio's bins
    clients = [[rng.choice(range(1000, 50000, 250)) * (c + 1) for _ in range(rng.randint(200, 2000))]
               for c in range(3)]
    merged = histogram_of(clients[0]).merged(histogram_of(clients[1]), histogram_of(clients[2]))
    union = [s for c in clients for s in c]
    assert merged.total == len(union)
    assert merged.percentile_ns(percent) == reference_percentile(union, percent)


def test_averaging_percentiles_is_wrong_and_merging_is_right() -> None:
    fast = [100] * 990 + [200] * 10  # p99 = 100
    slow = [10_000] * 1000  # p99 = 10_000
    fast_p99, slow_p99 = histogram_of(fast).percentile_ns(99), histogram_of(slow).percentile_ns(99)
    assert (fast_p99, slow_p99) == (100, 10_000)
    mean_of_p99 = (fast_p99 + slow_p99) / 2
    merged_p99 = histogram_of(fast).merged(histogram_of(slow)).percentile_ns(99)
    assert merged_p99 == reference_percentile(fast + slow, 99) == 10_000
    assert mean_of_p99 != merged_p99


def test_percentile_of_empty_histogram_is_none() -> None:
    assert LatencyHistogram.from_counts(()).percentile_ns(99) is None


def test_cdf_ends_at_one_and_is_monotonic() -> None:
    cdf = histogram_of([5, 5, 7, 9, 9, 9]).cdf()
    assert [v for v, _ in cdf] == [5, 7, 9]
    assert [round(f, 6) for _, f in cdf] == [round(2 / 6, 6), 0.5, 1.0]


def _summary(samples: list[int]) -> LatencySummary:
    return LatencySummary(samples=len(samples), min_ns=min(samples), max_ns=max(samples),
                          mean_ns=statistics.fmean(samples), stddev_ns=statistics.stdev(samples),
                          histogram=histogram_of(samples))


def test_merge_latency_pools_mean_and_stddev_exactly() -> None:
    rng = random.Random(7)
    parts = [[rng.randint(10, 10_000) for _ in range(n)] for n in (50, 300, 7)]
    merged = merge_latency([_summary(p) for p in parts])
    union = [s for p in parts for s in p]
    assert merged.samples == len(union)
    assert merged.min_ns == min(union) and merged.max_ns == max(union)
    assert merged.mean_ns == pytest.approx(statistics.fmean(union), rel=1e-12)
    assert merged.stddev_ns == pytest.approx(statistics.stdev(union), rel=1e-9)
    assert merged.percentile_ns(99) == reference_percentile(union, 99)


def test_our_percentiles_from_bins_match_fios_own_for_one_job(fixtures) -> None:  # type: ignore[no-untyped-def]
    """Real fio json+ output: for each single job, the percentile fio printed equals ours from its bins."""
    text = (fixtures / "randrw-numjobs2.jsonplus.json").read_text()
    output = parse_fio_json(text)
    raw = json.loads(text)
    checked = 0
    for job, raw_job in zip(output.jobs, raw["jobs"], strict=True):
        for m in job.directions:
            for block_name, summary in (("clat_ns", m.clat), ("lat_ns", m.lat)):
                reported = raw_job[m.direction.value][block_name].get("percentile", {})
                for pct_text, value in reported.items():
                    assert summary.histogram is not None
                    assert summary.histogram.percentile_ns(float(pct_text)) == value, (block_name, pct_text)
                    checked += 1
    assert checked > 50


@pytest.mark.parametrize(("counts", "percent", "fios_bin"), [
    ((32967, 33), 99.9, 200),  # 99.9 % of 33,000 is 32,967.000...002 in fio's long double: the next bin
    ((263736, 264), 99.9, 200),
    ((19, 1), 95.0, 100),  # exactly 19 of 20 both ways
    ((989, 11), 99.0, 200),
])
def test_the_rank_a_percentile_must_reach_is_fios_own_in_long_double(counts: tuple[int, int], percent: float,
                                                                    fios_bin: int) -> None:
    """fio compares each cumulative count with ``(long double) p / 100.0 * N``; in double arithmetic p99.9 had been a
    bin below fio's for 17 totals up to 2,000,000 (33,000 among them)."""
    assert LatencyHistogram((100, 200), counts).percentile_ns(percent) == fios_bin


def test_a_percentile_in_fios_last_bin_is_shown_as_the_floor_it_is() -> None:
    """fio's histogram ends at 17.11 s (bin 1855): a 40 s stall's I/O lands there, and p99.9 had read 17.1 s."""
    from storbench.model import LatencyHistogram
    from storbench.units import HISTOGRAM_LAST_BIN_NS, format_percentile_ns

    stalled = LatencyHistogram.from_arrays([1_000_000, HISTOGRAM_LAST_BIN_NS], [999, 1])  # one I/O of 40 s
    assert stalled.percentile_ns(99.95) == HISTOGRAM_LAST_BIN_NS
    assert format_percentile_ns(stalled.percentile_ns(99.95)) == "≥17s"
    assert format_percentile_ns(stalled.percentile_ns(50)) == "1ms" and format_percentile_ns(None) == "-"


def test_the_reports_and_shows_tables_give_a_percentile_in_the_last_bin_as_its_floor() -> None:
    """The terminal said "≥17s" of a 40 s stall's p99.9; the report's summary table and `show --format markdown`
    said 17.1s, as if measured."""
    from storbench.report.show_export import points_markdown
    from storbench.report.summary_table import summary_table
    from storbench.stats.summary import summarize_points
    from storbench.units import HISTOGRAM_LAST_BIN_NS
    from synthetic import observation

    found = [observation(repeat=r, lat_p999_ns=float(HISTOGRAM_LAST_BIN_NS), lat_p99_ns=2e6) for r in range(3)]
    points = summarize_points(found)
    for text in (summary_table(points), points_markdown(points, "t")):
        assert "≥17s" in text and "17.1s" not in text, text
        assert "2ms" in text  # a percentile below it as it is
