"""Error rates and speed of the stopping rule of `repeat: {until: decided}` (`stats.sequential.decide`), on
simulated comparisons with known truth, beside the same looks at their uncalibrated shares (the union bound over
the looks, which the rule used before) and a plain 95 % interval at every look. Prints the calibration factors of
some look schedules and the table in docs/methodology.md ("Paired changes and stopping when the answer is
known").

Each comparison runs rounds of log-normal repetitions with the given run-to-run CV in storbench's interleaved order
(`schedule.round_order`: two sides keep A B, B A, ...) under a drift of -0.5 % per repetition (-1 % per round),
so the side that runs second in a round is a little slower there (the drift had been applied to both sides alike,
where it cancels); looks after every round from ``min`` on, and stops at the first decision or at ``max``.

    .venv/bin/python bench/sequential_rule.py [--comparisons 4000]
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable

import numpy as np

from storbench.schedule import round_order
from storbench.stats.sequential import Decision, SequentialPlan, SequentialVerdict, calibrate, decide, paired_change


class UnionBoundPlan(SequentialPlan):
    """The same looks at their uncalibrated shares of alpha (which add up to alpha): the rule before calibration."""

    def look_alpha(self, rounds: int) -> float:
        return self.share(rounds)


def plain_verdict(a: list[float], b: list[float], plan: SequentialPlan) -> SequentialVerdict:
    """What the rule must not do: stop at the first look whose ordinary 95 % interval excludes zero."""
    change = paired_change(a, b, 0.95)
    decision = Decision.UNDECIDED
    if change is not None and change.low > 0:
        decision = Decision.HIGHER
    elif change is not None and change.high < 0:
        decision = Decision.LOWER
    final = decision != Decision.UNDECIDED or len(a) >= plan.max_rounds
    return SequentialVerdict(decision, len(a), change, None, final)


def drifts(rounds: int, per_repetition: float = 0.005) -> tuple[np.ndarray, np.ndarray]:
    """Each side's drift factor round by round: its repetition's slot in the run, in the order storbench runs two
    sides (`schedule.round_order`), losing ``per_repetition`` of the level per slot."""
    slot = {side: np.zeros(rounds) for side in "AB"}
    for r in range(rounds):
        for position, side in enumerate(round_order("AB", r)):
            slot[side][r] = 2 * r + position
    return 1 - per_repetition * slot["A"], 1 - per_repetition * slot["B"]


def pct(fraction: float) -> str:
    """One decimal, two where one would round a few comparisons away (99.95 %, not 100.0 %)."""
    return f"{fraction:.2%}" if 0 < fraction < 0.001 or 0.999 < fraction < 1 else f"{fraction:.1%}"


Rule = Callable[[list[float], list[float], SequentialPlan], SequentialVerdict]


def simulate(true_change: float, cv: float, plan: SequentialPlan, comparisons: int, seed: int,
             rule: Rule = decide) -> tuple[dict[Decision, int], list[int]]:
    """Decisions of ``comparisons`` simulated comparisons, and the rounds each took."""
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv * cv))
    counts = dict.fromkeys(Decision, 0)
    rounds_taken = []
    drift_a, drift_b = drifts(plan.max_rounds)
    for _ in range(comparisons):
        a = list(1000 * drift_a * rng.lognormal(0, sigma, plan.max_rounds))
        b = list(1000 * (1 + true_change) * drift_b * rng.lognormal(0, sigma, plan.max_rounds))
        for n in range(plan.min_rounds, plan.max_rounds + 1):
            verdict = rule(a[:n], b[:n], plan)
            if verdict.final:
                break
        counts[verdict.decision] += 1
        rounds_taken.append(verdict.rounds)
    return counts, rounds_taken


def simulate_failures(failure_rate: float, cv: float, plan: SequentialPlan, comparisons: int, seed: int
                      ) -> tuple[dict[Decision, int], list[int]]:
    """A/A comparisons whose repetitions each fail with ``failure_rate`` (either side, independently): each look
    after round r decides on the pairs of the rounds both sides have, indexed by round, as the run loop and
    `compare` do (`stats.adaptive.paired_rounds`)."""
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv * cv))
    counts = dict.fromkeys(Decision, 0)
    rounds_taken = []
    drift_a, drift_b = drifts(plan.max_rounds)
    for _ in range(comparisons):
        a = 1000 * drift_a * rng.lognormal(0, sigma, plan.max_rounds)
        b = 1000 * drift_b * rng.lognormal(0, sigma, plan.max_rounds)
        both = (rng.random(plan.max_rounds) >= failure_rate) & (rng.random(plan.max_rounds) >= failure_rate)
        for n in range(plan.min_rounds, plan.max_rounds + 1):
            kept = [i for i in range(n) if both[i]]
            verdict = decide([float(a[i]) for i in kept], [float(b[i]) for i in kept], plan, n)
            if verdict.final:
                break
        counts[verdict.decision] += 1
        rounds_taken.append(verdict.rounds)
    return counts, rounds_taken


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comparisons", type=int, default=4000)
    args = parser.parse_args()
    print("| looks (rounds) | calibration factor | largest look's error rate |")
    print("|---|---:|---:|")
    for low, high in ((2, 10), (3, 12), (3, 20), (5, 20), (3, 30), (3, 50)):
        found = calibrate(low, high, 2.0, 0.05)
        print(f"| {low}..{high} | {found.factor:.2f} | {max(found.look_alphas):.2%} |")
    print()
    print("| truth | run-to-run CV | margin | called different | called equivalent | undecided at 30 | median rounds "
          "| union bound: different, equivalent, median |")
    print("|---|---|---|---|---|---|---|---|")
    rows = [("no change", 0.0, 0.10, None), ("+20 %", 0.20, 0.10, None), ("+20 %", 0.20, 0.15, None),
            ("+10 %", 0.10, 0.05, None), ("no change", 0.0, 0.02, 0.05), ("+6 %", 0.06, 0.02, 0.05),
            ("+5 % (at the margin)", 0.05, 0.02, 0.05), ("-5 % (at the margin)", -0.05, 0.02, 0.05),
            ("+5 % (at the margin)", 0.05, 0.05, 0.05)]
    for seed, (name, change, cv, margin) in enumerate(rows):
        figures = []
        for plan in (SequentialPlan(3, 30, margin=margin), UnionBoundPlan(3, 30, margin=margin)):
            counts, rounds = simulate(change, cv, plan, args.comparisons, seed)
            share = {d: pct(counts[d] / args.comparisons) for d in Decision}
            different = pct((counts[Decision.HIGHER] + counts[Decision.LOWER]) / args.comparisons)
            figures.append((different, share[Decision.EQUIVALENT] if margin else "—", share[Decision.UNDECIDED],
                            f"{statistics.median(rounds):g}"))
        (diff, eq, und, med), (u_diff, u_eq, _, u_med) = figures
        print(f"| {name} | {cv:.0%} | {f'±{margin:.0%}' if margin else '—'} | {diff} | {eq} | {und} | {med} | "
              f"{u_diff}, {u_eq}, {u_med} |")
    plan = SequentialPlan(min_rounds=3, max_rounds=30)
    for failure_rate in (0.05, 0.10, 0.20):
        counts, rounds = simulate_failures(failure_rate, 0.10, plan, args.comparisons, 11)
        print(f"| no change, {failure_rate:.0%} of repetitions failed (either side) | 10% | — | "
              f"{(counts[Decision.HIGHER] + counts[Decision.LOWER]) / args.comparisons:.1%} | — | "
              f"{counts[Decision.UNDECIDED] / args.comparisons:.1%} | {statistics.median(rounds):g} | |")
    counts, rounds = simulate(0.0, 0.10, plan, args.comparisons, 0, rule=plain_verdict)
    print(f"| no change, plain 95 % interval at every look | 10% | — | "
          f"{(counts[Decision.HIGHER] + counts[Decision.LOWER]) / args.comparisons:.1%} | — | "
          f"{counts[Decision.UNDECIDED] / args.comparisons:.1%} | {statistics.median(rounds):g} | |")


if __name__ == "__main__":
    main()
