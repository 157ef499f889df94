"""How often an A/A `compare` says "different" when each side ran on one instance (a cluster, a volume, a host)
and instances differ from one another, beside a fresh instance per round. Pure simulation with the project's own
interval functions (`stats.estimate.welch_difference`, `stats.sequential.paired_change`); prints the table in
docs/methodology.md ("Comparisons", the designs).

Each side's true level is the same. An instance's level is 1 + N(0, spread) (the instance-to-instance spread:
PG placement, which OSD is primary, a volume's place on its backend); repetitions on one instance are log-normal
around its level with the given run-to-run CV. Three designs of the same A/A comparison, n repetitions a side:

- one instance per side, Welch: each side's n repetitions on its own instance, blocked (`bring_up: once`);
  compare uses Welch's interval;
- one instance per side, paired: the same two instances side by side, rounds alternated (`bring_up:
  side_by_side`); compare pairs the rounds, which cancels drift but not the instances' difference;
- fresh instance per round, paired: every round a fresh instance per side (`bring_up: each_repetition`);
  compare pairs the rounds, and the instance's variation is inside each pair's ratio.

    .venv/bin/python bench/instance_design.py [--compares 10000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from storbench.stats.estimate import estimate, welch_difference
from storbench.stats.sequential import paired_change

DESIGNS = ("one instance per side, Welch", "one instance per side, paired", "fresh instance per round, paired")
SPREADS = (0.01, 0.03, 0.05)
CVS = (0.05, 0.10, 0.15)
REPETITIONS = (3, 5, 10, 30)  # 30: the most an adaptive run takes by default


def welch_different(a: list[float], b: list[float]) -> bool:
    """What `compare` says of two sides with no pairing: Welch's 95 % interval of the ratio excludes no change."""
    base, cand = estimate(a), estimate(b)
    return base is not None and cand is not None and welch_difference(base, cand).significant


def paired_different(a: list[float], b: list[float]) -> bool:
    """What `compare` says of two sides whose rounds alternated: the paired 95 % interval excludes no change."""
    change = paired_change(a, b, 0.95)
    return change is not None and (change.low > 0 or change.high < 0)


def different_rates(spread: float, cv: float, repetitions: int, compares: int, seed: int) -> dict[str, float]:
    """The share of ``compares`` simulated A/A comparisons that each design calls different (better or worse)."""
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv * cv))
    counts = dict.fromkeys(DESIGNS, 0)
    for _ in range(compares):
        level_a, level_b = 1 + spread * rng.standard_normal(2)  # one instance per side
        noise_a, noise_b = rng.lognormal(0, sigma, (2, repetitions))
        a = [float(v) for v in 1000 * level_a * noise_a]
        b = [float(v) for v in 1000 * level_b * noise_b]
        counts[DESIGNS[0]] += welch_different(a, b)
        counts[DESIGNS[1]] += paired_different(a, b)
        fresh_a, fresh_b = 1 + spread * rng.standard_normal((2, repetitions))  # a fresh instance per round
        counts[DESIGNS[2]] += paired_different([float(v) for v in 1000 * fresh_a * noise_a],
                                               [float(v) for v in 1000 * fresh_b * noise_b])
    return {design: count / compares for design, count in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compares", type=int, default=10000)
    args = parser.parse_args()
    print("A/A compares called different, at n = " + " / ".join(map(str, REPETITIONS)) + " repetitions a side:")
    print()
    print("| spread between instances | run-to-run CV | " + " | ".join(DESIGNS) + " |")
    print("|---:|---:|" + "---:|" * len(DESIGNS))
    by_design: dict[tuple[float, str], list[float]] = {}
    seed = 0
    for spread in SPREADS:
        for cv in CVS:
            cells: dict[str, list[str]] = {d: [] for d in DESIGNS}
            for n in REPETITIONS:
                rates = different_rates(spread, cv, n, args.compares, seed)
                seed += 1
                for design, rate in rates.items():
                    by_design.setdefault((spread, design), []).append(rate)
                    cells[design].append(f"{100 * rate:.1f}")
            print(f"| {spread:.0%} | {cv:.0%} | " + " | ".join(" / ".join(cells[d]) + " %" for d in DESIGNS) + " |")
    print()
    for (spread, design), found in by_design.items():
        print(f"spread {spread:.0%}, {design}: {min(found):.1%} - {max(found):.1%}")

if __name__ == "__main__":
    main()
