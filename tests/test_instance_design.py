"""The designs' A/A rates (bench/instance_design.py, with the project's own interval functions): one instance per
side says "different" far more often than 5 %, a fresh instance per round about 5 %; the design caveat cites the
simulated figure and docs/methodology.md carries it."""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import ModuleType

import pytest

from helpers import bench_module
from storbench.stats.compare_design import AA_CV_PCT, AA_DIFFERENT_PCT, DESIGN_CAVEATS, INSTANCE_SPREAD_PCT

ROOT = Path(__file__).resolve().parents[1]
COMPARES = 2000  # per design: 4 standard errors of a rate of 5 % are 2 points, of 34 % 4 points


def _bench() -> ModuleType:
    return bench_module("instance_design")


def _tolerance(rate: float, compares: int = COMPARES) -> float:
    """Four standard errors of a rate estimated from ``compares`` comparisons (a miss by chance: 6 in 100,000),
    and half a point for the rounding of the cited figure."""
    return 4 * math.sqrt(rate * (1 - rate) / compares) + 0.005


@pytest.fixture(scope="module")
def rates() -> dict[str, float]:
    bench = _bench()
    found: dict[str, float] = bench.different_rates(INSTANCE_SPREAD_PCT / 100, AA_CV_PCT / 100, 10, COMPARES, 7)
    return found


def test_one_instance_per_side_says_different_far_more_often_than_its_error_rate(rates: dict[str, float]) -> None:
    for design in ("one instance per side, Welch", "one instance per side, paired"):
        assert rates[design] > 0.05 + _tolerance(0.05) + 0.15, (design, rates[design])  # not a 5 % error rate
    cited = AA_DIFFERENT_PCT[10] / 100  # the figure the caveat cites: Welch's interval, `bring_up: once`
    assert abs(rates["one instance per side, Welch"] - cited) <= _tolerance(cited), rates


def test_a_fresh_instance_per_round_holds_its_five_percent(rates: dict[str, float]) -> None:
    fresh = rates["fresh instance per round, paired"]
    assert abs(fresh - 0.05) <= _tolerance(0.05), fresh


def test_more_repetitions_make_one_instance_per_side_worse_not_better() -> None:
    bench = _bench()
    at_30 = bench.different_rates(INSTANCE_SPREAD_PCT / 100, AA_CV_PCT / 100, 30, COMPARES, 8)
    cited = AA_DIFFERENT_PCT[30] / 100
    assert abs(at_30["one instance per side, Welch"] - cited) <= _tolerance(cited), at_30
    assert abs(at_30["fresh instance per round, paired"] - 0.05) <= _tolerance(0.05), at_30


def test_the_caveat_cites_the_figure_and_the_methodology_carries_it() -> None:
    caveat = DESIGN_CAVEATS["one instance per side"]
    assert f"{INSTANCE_SPREAD_PCT} % spread between instances" in caveat
    assert f'"different" {AA_DIFFERENT_PCT[10]} % of the time (n=10, CV {AA_CV_PCT} %' in caveat
    assert f"{AA_DIFFERENT_PCT[30]} % at n=30" in caveat
    methodology = (ROOT / "docs" / "methodology.md").read_text()
    row = next(line for line in methodology.splitlines()
               if line.startswith(f"| {INSTANCE_SPREAD_PCT}% | {AA_CV_PCT}% |"))
    welch = [float(x) for x in re.findall(r"[\d.]+", row.split("|")[3])]
    assert round(welch[2]) == AA_DIFFERENT_PCT[10] and round(welch[3]) == AA_DIFFERENT_PCT[30], row
