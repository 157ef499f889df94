"""The stopping rule on synthetic data with known truth: simulated sequential comparisons, 1,000 each.

Each simulated comparison runs balanced rounds (one repetition of A and one of B per round) of log-normal
measurements with the given run-to-run CV, under a slow drift shared by both arms (as on a real cluster),
looks after every round from ``min_rounds`` on, and stops at the first decision or at ``max_rounds``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from storbench.stats.sequential import Decision, SequentialPlan, decide, paired_change, rounds_to_decide

RUNS = 1000


def _simulate(true_change: float, cv: float, plan: SequentialPlan, seed: int,
              naive: bool = False) -> tuple[dict[Decision, int], list[int]]:
    """Decisions of RUNS simulated comparisons, and the rounds each took. ``naive``: stop at the first look
    whose ordinary 95 % interval excludes zero (what the rule must not do)."""
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv * cv))
    counts = dict.fromkeys(Decision, 0)
    rounds_taken = []
    for _ in range(RUNS):
        drift = 1 - 0.01 * np.arange(plan.max_rounds)  # -1 % per round, both arms
        a = 1000 * drift * rng.lognormal(0, sigma, plan.max_rounds)
        b = 1000 * (1 + true_change) * drift * rng.lognormal(0, sigma, plan.max_rounds)
        decision = Decision.UNDECIDED
        rounds = plan.max_rounds
        for n in range(plan.min_rounds, plan.max_rounds + 1):
            if naive:
                change = paired_change(list(a[:n]), list(b[:n]), 0.95)
                assert change is not None
                if change.low > 0 or change.high < 0:
                    decision, rounds = (Decision.HIGHER if change.low > 0 else Decision.LOWER), n
                    break
                continue
            verdict = decide(list(a[:n]), list(b[:n]), plan)
            if verdict.final:
                decision, rounds = verdict.decision, n
                break
        counts[decision] += 1
        rounds_taken.append(rounds)
    return counts, rounds_taken


def test_no_true_difference_is_called_different_in_at_most_5_percent_of_runs() -> None:
    plan = SequentialPlan(min_rounds=3, max_rounds=30)
    counts, _ = _simulate(0.0, 0.10, plan, seed=1)
    different = counts[Decision.HIGHER] + counts[Decision.LOWER]
    assert different <= 0.05 * RUNS, counts


def test_looking_after_every_round_with_a_plain_interval_would_not_pass_that_test() -> None:
    """The check above can fail: stopping at the first ordinary 95 % interval that excludes zero calls an A/A
    comparison different far more often than 5 %."""
    counts, _ = _simulate(0.0, 0.10, SequentialPlan(min_rounds=3, max_rounds=30), seed=1, naive=True)
    assert counts[Decision.HIGHER] + counts[Decision.LOWER] > 0.10 * RUNS, counts


def test_a_20_percent_change_at_10_percent_cv_is_decided_in_80_percent_of_runs() -> None:
    plan = SequentialPlan(min_rounds=3, max_rounds=30)
    counts, rounds = _simulate(0.20, 0.10, plan, seed=2)
    assert counts[Decision.HIGHER] >= 0.80 * RUNS, counts
    assert counts[Decision.LOWER] == 0
    assert float(np.median(rounds)) < plan.max_rounds  # it stops early, not at max


def test_equivalence_is_decided_when_there_is_no_difference_and_little_noise() -> None:
    plan = SequentialPlan(min_rounds=3, max_rounds=30, margin=0.05)
    counts, _ = _simulate(0.0, 0.02, plan, seed=3)
    assert counts[Decision.EQUIVALENT] >= 0.80 * RUNS, counts
    assert counts[Decision.HIGHER] + counts[Decision.LOWER] <= 0.05 * RUNS


def test_a_change_beyond_the_margin_is_rarely_called_equivalent() -> None:
    plan = SequentialPlan(min_rounds=3, max_rounds=30, margin=0.05)
    counts, _ = _simulate(0.06, 0.02, plan, seed=4)
    assert counts[Decision.EQUIVALENT] <= 0.05 * RUNS, counts


def test_the_alpha_spent_over_all_looks_adds_up_to_alpha() -> None:
    plan = SequentialPlan(min_rounds=3, max_rounds=30, alpha=0.05)
    spent = [plan.look_alpha(n) for n in range(plan.min_rounds, plan.max_rounds + 1)]
    assert sum(spent) == pytest.approx(0.05)
    assert all(x > 0 for x in spent) and spent == sorted(spent)  # more of it for the later looks
    assert plan.look_alpha(2) == 0 and plan.look_alpha(31) == 0


def test_paired_change_is_the_geometric_mean_ratio_with_a_t_interval() -> None:
    a = [100.0, 200.0, 400.0]
    b = [110.0, 220.0, 440.0]  # every pair +10 %, whatever the drift
    change = paired_change(a, b)
    assert change is not None and change.estimate == pytest.approx(0.10)
    assert change.low == pytest.approx(0.10) and change.high == pytest.approx(0.10)  # no spread, no width
    wide = paired_change([100.0, 100.0, 100.0, 100.0], [90.0, 120.0, 95.0, 125.0])
    assert wide is not None and wide.low < 0 < wide.high and wide.low > -1  # never below -100 %
    assert paired_change([1.0], [2.0]) is None


def test_an_undecided_answer_says_how_many_more_rounds_would_likely_decide() -> None:
    plan = SequentialPlan(min_rounds=3, max_rounds=30)
    a = [100.0, 102.0, 98.0, 101.0]
    b = [112.0, 118.0, 111.0, 121.0]
    verdict = decide(a, b, plan)
    assert verdict.decision == Decision.UNDECIDED and not verdict.final
    assert verdict.more_rounds is not None and 1 <= verdict.more_rounds <= plan.max_rounds - len(a)
    assert verdict.change is not None
    assert rounds_to_decide(verdict.change, plan, len(a)) == verdict.more_rounds
    # a tiny change in a lot of noise will not be decided within max_rounds
    noisy = decide([100.0, 150.0, 80.0, 120.0], [101.0, 140.0, 85.0, 121.0], plan)
    assert noisy.more_rounds is None


def test_the_last_look_stops_even_when_undecided() -> None:
    plan = SequentialPlan(min_rounds=3, max_rounds=4)
    verdict = decide([100.0, 150.0, 80.0, 120.0], [101.0, 140.0, 85.0, 121.0], plan)
    assert verdict.decision == Decision.UNDECIDED and verdict.final and verdict.more_rounds is None


def test_paired_values_are_the_rounds_both_sides_have_with_positive_values() -> None:
    from storbench.stats.sequential import paired_values

    a = {(1, 2): 30.0, (1, 0): 10.0, (1, 1): 20.0}
    b = {(1, 1): 21.0, (1, 0): 11.0, (2, 2): 99.0}
    assert paired_values(a, b) == ([10.0, 20.0], [11.0, 21.0])  # round order; (2, 2) is another run's round
    assert paired_values({0: 1.0, 1: None}, {0: 1.0, 1: 2.0}) is None  # a round both ran lacks a value
    assert paired_values({0: 1.0, 1: 0.0}, {0: 1.0, 1: 2.0}) is None  # no ratio of a zero
    assert paired_values({0: 1.0}, {0: 1.0}) is None  # one pair is no interval
