"""Error rates of the one rule that reads a curve (`stats.trend.judge_change`, through `stats.knee.locate_knee`):
how often a curve that truly rises is called saturated, and how often a truly flat one is shown flat, at the
run-to-run noise users meet. Prints a table for docs/methodology.md ("Saturation").

    .venv/bin/python bench/curve_rule.py [--trials 2000]
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence

from storbench.stats.estimate import estimate
from storbench.stats.knee import KneeKind, locate_knee


def rates(means: Sequence[float], cv: float, repetitions: int, trials: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    counts = {"saturated at the lowest load": 0, "knee elsewhere": 0, "undecided": 0, "still rising": 0,
              "other": 0}
    for _ in range(trials):
        iops = [estimate([rng.gauss(m, m * cv) for _ in range(repetitions)]) for m in means]
        lat = [estimate([0.3e6 * 4**i * rng.gauss(1.0, 0.05) for _ in range(repetitions)]) for i in range(len(means))]
        knee = locate_knee([e for e in iops if e is not None], lat)
        key = ("saturated at the lowest load" if knee.index == 0 else "knee elsewhere" if knee.index is not None
               else "undecided" if knee.kind is KneeKind.UNDECIDED else "still rising"
               if knee.kind is KneeKind.STILL_RISING else "other")
        counts[key] += 1
    return {key: count / trials for key, count in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    args = parser.parse_args()
    print("| curve (true IOPS) | CV | n | saturated at lowest | knee elsewhere | undecided | still rising |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    cases = [("rises +90 % then flat, 2 points", [1000.0, 1900.0], cv, 3) for cv in (0.15, 0.25, 0.40)]
    cases += [("rises +90 % then flat, 6 points", [1000.0] + [1900.0] * 5, cv, 3) for cv in (0.15, 0.25, 0.40)]
    cases += [("flat, 4 points", [3000.0] * 4, cv, n) for cv in (0.02, 0.05, 0.10) for n in (3, 5, 10)]
    for seed, (name, means, cv, n) in enumerate(cases):
        r = rates(means, cv, n, args.trials, seed)
        print(f"| {name} | {cv:.0%} | {n} | {r['saturated at the lowest load']:.1%} | {r['knee elsewhere']:.1%} | "
              f"{r['undecided']:.1%} | {r['still rising']:.1%} |")


if __name__ == "__main__":
    main()
