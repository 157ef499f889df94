"""The curve rule (`stats.knee.locate_knee` through `stats.trend.judge_change`) on curves whose points alternated
round by round (`order: interleaved`), judged with Welch's interval and with the paired one (per-round ratios,
`stats.trend.round_pairs`): how often a truly flat curve is shown flat, and how often a rising one is wrongly
called saturated. Prints a table for docs/methodology.md ("Saturation").

Each round visits every point once in storbench's interleaved order (`schedule.round_order`: rounds in mirrored
pairs, the points turned every pair: A B C D, D C B A, B C D A, A D C B, ...). A repetition's
IOPS is the point's true level x a drift over the run's time (the share lost per repetition slot) x a factor
shared by the round (the cache, the instance's state at that moment) x its own log-normal noise.

    .venv/bin/python bench/paired_curve.py [--trials 2000]
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from storbench.schedule import round_order
from storbench.stats.estimate import Estimate, estimate
from storbench.stats.knee import KneeKind, locate_knee


@dataclass(frozen=True)
class Curve:
    name: str
    means: tuple[float, ...]
    cv: float  # each repetition's own noise
    drift: float = 0.0  # share of IOPS lost per repetition slot (time), over the whole run
    shared: float = 0.0  # CV of the factor every point of a round shares


def measured(curve: Curve, rounds: int, rng: random.Random) -> list[list[float]]:
    """Per point, its repetitions' IOPS, round by round, in the interleaved order."""
    k = len(curve.means)
    values: list[list[float]] = [[] for _ in range(k)]
    slot = 0
    for r in range(rounds):
        shared = rng.gauss(0.0, curve.shared)
        for i in round_order(range(k), r):
            level = curve.means[i] * (1 - curve.drift) ** slot * math.exp(shared + rng.gauss(0.0, curve.cv))
            values[i].append(level)
            slot += 1
    return values


def estimates(values: Sequence[Sequence[float]], paired: bool) -> list[Estimate]:
    """Each point's estimate; ``paired``: carrying its values by round, as `summarize_points` gives them for a run
    that alternated its cases (round i of run 1)."""
    out = []
    for per_round in values:
        e = estimate(per_round)
        assert e is not None
        out.append(replace(e, rounds=tuple(((1, i), v) for i, v in enumerate(per_round))) if paired else e)
    return out


def rates(curve: Curve, rounds: int, trials: int, seed: int) -> dict[tuple[bool, str], float]:
    """(paired?, outcome) -> share of trials; outcomes: saturated at the lowest load, knee elsewhere, undecided,
    still rising (latency grows 4x a step, so a flat stretch is a knee)."""
    rng = random.Random(seed)
    counts: dict[tuple[bool, str], int] = {}
    lat = [estimate([0.3e6 * 4 ** i] * rounds) for i in range(len(curve.means))]
    for _ in range(trials):
        values = measured(curve, rounds, rng)
        for paired in (False, True):
            knee = locate_knee(estimates(values, paired), lat)
            key = ("saturated at lowest" if knee.index == 0 else "knee elsewhere" if knee.index is not None
                   else "undecided" if knee.kind is KneeKind.UNDECIDED else "still rising"
                   if knee.kind is KneeKind.STILL_RISING else "other")
            counts[(paired, key)] = counts.get((paired, key), 0) + 1
    return {key: count / trials for key, count in counts.items()}


CURVES = (
    Curve("flat, 4 points, drift -1 %/slot, shared 3 %", (3000.0,) * 4, 0.02, drift=0.01, shared=0.03),
    Curve("flat, 4 points, no drift", (3000.0,) * 4, 0.05),
    Curve("+12 % then flat, 2 points, drift -1 %/slot, shared 3 %", (1000.0, 1120.0), 0.02, drift=0.01, shared=0.03),
    Curve("+20 % then flat, 2 points, no drift", (1000.0, 1200.0), 0.10),
    Curve("+90 % then flat, 2 points, drift -1 %/slot, shared 10 %", (1000.0, 1900.0), 0.15, drift=0.01,
          shared=0.10),
    Curve("+15 % a step, 4 points, drift -1 %/slot, shared 3 %", (1000.0, 1150.0, 1322.5, 1520.9), 0.02,
          drift=0.01, shared=0.03),
)
OUTCOMES = ("saturated at lowest", "knee elsewhere", "undecided", "still rising")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    args = parser.parse_args()
    print("| curve (true IOPS) | CV | n | " + " | ".join(f"{o}, Welch / paired" for o in OUTCOMES) + " |")
    print("|---|---:|---:|" + "---:|" * len(OUTCOMES))
    seed = 0
    for curve in CURVES:
        for rounds in (3, 5):
            r = rates(curve, rounds, args.trials, seed)
            seed += 1
            cells = " | ".join(f"{r.get((False, o), 0.0):.1%} / {r.get((True, o), 0.0):.1%}" for o in OUTCOMES)
            print(f"| {curve.name} | {curve.cv:.0%} | {rounds} | {cells} |")


if __name__ == "__main__":
    main()
