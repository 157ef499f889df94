"""Error rates of the one rule that reads a curve (`stats.trend.judge_change`, through `stats.knee.locate_knee`):
how often a curve that truly rises is called saturated, and how often a truly flat one is shown flat, at the
run-to-run noise users meet; then, on curves whose IOPS are flat, what the knee's latency conditions say as the
mean latency at the highest load grows by a given factor over the lowest's (a knee needs 1.5x by the mean; "latency
did not grow" needs the 90 % interval of the growth at most +10 %); last, how often the lowest point of a flat curve
is told "more load raises IOPS" by its reading of the sweep (a rise over any of the higher loads). Prints three
tables for docs/methodology.md ("Saturation").

    .venv/bin/python bench/curve_rule.py [--trials 2000]
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence

from storbench.stats.bottleneck import Bottleneck, BottleneckVerdict, CurveStep
from storbench.stats.estimate import estimate
from storbench.stats.knee import KneeKind, locate_knee
from storbench.stats.point_verdicts import sweep_reading


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


def latency_rates(growth: float, cv: float, repetitions: int, trials: int, seed: int) -> dict[KneeKind, float]:
    """What `locate_knee` says of 4 points of flat IOPS (CV 2 %) whose mean latency grows evenly (on the log scale)
    to ``growth`` times the first's, each repetition's varying with ``cv``."""
    rng = random.Random(seed)
    counts = dict.fromkeys(KneeKind, 0)
    for _ in range(trials):
        iops = [estimate([rng.gauss(3000.0, 60.0) for _ in range(repetitions)]) for _ in range(4)]
        lat = [estimate([1e6 * growth ** (i / 3) * rng.gauss(1.0, cv) for _ in range(repetitions)]) for i in range(4)]
        counts[locate_knee([e for e in iops if e is not None], lat).kind] += 1
    return {kind: count / trials for kind, count in counts.items()}


def rise_rates(points: int, cv: float, repetitions: int, trials: int, seed: int) -> float:
    """How often the lowest of ``points`` points of a truly flat curve (IOPS CV ``cv``) is told "more load raises
    IOPS" by its reading of the sweep (`stats.point_verdicts.sweep_reading`: a rise over any higher load)."""
    rng = random.Random(seed)
    verdict = BottleneckVerdict(Bottleneck.UNDER_DRIVEN, "")
    said = 0
    for _ in range(trials):
        steps = []
        for i in range(points):
            found = estimate([rng.gauss(3000.0, 3000.0 * cv) for _ in range(repetitions)])
            assert found is not None
            steps.append(CurveStep(load=2 ** i, label=f"iodepth {2 ** i}", throughput=found, lat_mean_ns=None,
                                   verdict=verdict))
        said += (sweep_reading(steps, 0) or "").startswith("more load raises IOPS")
    return said / trials


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
    print()
    print("| flat IOPS (CV 2 %), mean latency at the highest load (true) | latency CV | n | knee (saturated at the "
          "lowest load) | latency did not grow | none claimed (grew less than 1.5x, not shown flat) | undecided |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for seed, (growth, cv, n) in enumerate([(g, cv, n) for g in (1.0, 1.1, 1.2, 1.3, 1.5, 2.0) for cv in (0.05, 0.15)
                                            for n in (3, 5)]):
        r = latency_rates(growth, cv, n, args.trials, 100 + seed)
        print(f"| x{growth:g} | {cv:.0%} | {n} | {r[KneeKind.AT_LOWEST_LOAD] + r[KneeKind.WITHIN_SWEEP]:.1%} | "
              f"{r[KneeKind.LATENCY_FLAT]:.1%} | {r[KneeKind.LATENCY_SHORT]:.1%} | {r[KneeKind.UNDECIDED]:.1%} |")
    print()
    print("| flat curve (true IOPS), points | CV | n | the lowest point told \"more load raises IOPS\" |")
    print("|---|---:|---:|---:|")
    for seed, (points, cv, n) in enumerate([(p, cv, n) for p in (2, 4, 6) for cv in (0.05, 0.10, 0.15)
                                            for n in (1, 3, 5)]):
        print(f"| flat, {points} points | {cv:.0%} | {n} | {rise_rates(points, cv, n, args.trials, 200 + seed):.1%} |")


if __name__ == "__main__":
    main()
