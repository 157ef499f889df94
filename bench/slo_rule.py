"""Error rates of "the most IOPS with p99 <= X", with the project's own functions: the saturation table's
`stats.knee.best_under_objective` over a whole grid and the search's `stats.search` (`next_values` until done,
then `search_answer`), both deciding with `stats.slo.verdict` on `stats.estimate.estimate` over repetitions.
Prints a table for docs/methodology.md ("Saturation", "Saturation search").

The curve: IOPS = 20,000 x d / (d + 8) at load d (a device that saturates), mean latency d / IOPS (Little's law)
and p99 three times that, so p99 grows by a grid step's share beyond the knee. The limit is placed so that the
lowest load whose true p99 is above it ("the first failing point") is `over` above the limit; the point below it
is the true answer. Each repetition's IOPS vary with CV 5 %, its p99 with the given CV (log-normal).

A *false meet* is an answer whose true p99 is above the limit: the claim "p99 <= X at N IOPS" is wrong there.

    .venv/bin/python bench/slo_rule.py [--trials 2000]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from types import SimpleNamespace
from typing import Any

from storbench.model.objective import parse_slo
from storbench.stats.estimate import Estimate, estimate
from storbench.stats.knee import best_under_objective
from storbench.stats.search import SearchPoint, next_values, search_answer, search_grid

IOPS_MAX, HALF_LOAD, P99_OVER_MEAN, IOPS_CV = 20_000.0, 8.0, 3.0, 0.05
GRID = search_grid(1, 256)
FIRST_FAILING = GRID.index(32)  # the lowest load whose true p99 is above the limit (24 below it is the answer)
OBJECTIVE = parse_slo("p99<=10ms")


def true_iops(load: int) -> float:
    return IOPS_MAX * load / (load + HALF_LOAD)


def true_p99_ns(load: int, scale: float) -> float:
    return scale * P99_OVER_MEAN * load / true_iops(load) * 1e9


def scale_for(over: float) -> float:
    """The p99 scale that puts the first failing point `over` above the limit."""
    return OBJECTIVE.limit_ns * (1 + over) / true_p99_ns(GRID[FIRST_FAILING], 1.0)


def lognormal(rng: random.Random, mean: float, cv: float) -> float:
    sigma = math.sqrt(math.log(1 + cv * cv))
    return mean * math.exp(rng.gauss(-sigma * sigma / 2, sigma))


def measure(rng: random.Random, load: int, scale: float, cv: float, n: int,
            interval: bool = True) -> tuple[Estimate, Estimate]:
    """One point's IOPS and p99 over ``n`` repetitions (``interval=False``: the p99's mean alone, as a rule that
    averaged would read it)."""
    iops = estimate([lognormal(rng, true_iops(load), IOPS_CV) for _ in range(n)])
    p99 = estimate([lognormal(rng, true_p99_ns(load, scale), cv) for _ in range(n)], interval=interval)
    assert iops is not None and p99 is not None
    return iops, p99


def grid_answer(rng: random.Random, scale: float, cv: float, n: int, interval: bool = True
                ) -> tuple[int | None, int]:
    """(the load the saturation table names, points measured) over the whole grid."""
    points = []
    for load in GRID:
        iops, p99 = measure(rng, load, scale, cv, n, interval)
        summary = SimpleNamespace(metric=lambda field, p99=p99: p99 if field == OBJECTIVE.field else None,
                                  repetitions_ok=n, repetitions_total=n)  # every repetition measured
        points.append(SimpleNamespace(load=load, iops=iops.mean, point=summary))
    best: Any = best_under_objective(SimpleNamespace(points=points), OBJECTIVE)  # type: ignore[arg-type]
    return (None if best is None else best.load), len(GRID)


def search_run(rng: random.Random, scale: float, cv: float, n: int) -> tuple[int | None, int]:
    measured: dict[int, SearchPoint] = {}
    while values := next_values(GRID, measured, OBJECTIVE):
        for load in values:
            iops, p99 = measure(rng, load, scale, cv, n)
            lat_mean = estimate([p99.mean / P99_OVER_MEAN])
            measured[load] = SearchPoint(load=load, iops=iops, latency=p99, lat_mean=lat_mean)
    answer = search_answer(GRID, measured, OBJECTIVE)
    return (None if answer.best is None else answer.best.load), answer.measured


def rates(over: float, cv: float, n: int, trials: int, seed: int, how: str) -> dict[str, float]:
    """How often the answer of ``how`` ("grid": the saturation table's; "search"; "means": the grid's by the p99's
    mean alone) is wrong (``false``), the true one (``best``), or none; its IOPS short of the truth (median) and
    the points measured (mean)."""
    rng = random.Random(seed)
    scale = scale_for(over)
    truth = GRID[FIRST_FAILING - 1]
    found, short, measured = [], [], []
    for _ in range(trials):
        load, count = (grid_answer(rng, scale, cv, n) if how == "grid" else search_run(rng, scale, cv, n)
                       if how == "search" else grid_answer(rng, scale, cv, n, interval=False))
        found.append(load)
        measured.append(count)
        if load is not None:
            short.append(true_iops(load) / true_iops(truth) - 1)
    named = [load for load in found if load is not None]
    return {
        "false": sum(true_p99_ns(load, scale) > OBJECTIVE.limit_ns for load in named) / trials,
        "best": sum(load == truth for load in named) / trials,
        "none": (trials - len(named)) / trials,
        "short": statistics.median(short) if short else float("nan"),
        "measured": statistics.fmean(measured),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    args = parser.parse_args()
    print(f"grid {GRID[0]}..{GRID[-1]} ({len(GRID)} values); the true answer {GRID[FIRST_FAILING - 1]}, the first "
          f"failing point {GRID[FIRST_FAILING]}")
    print("| first failing point's p99 | p99 CV | n | grid: false meet | grid: the true answer | grid: none | "
          "search: false meet | search: the true answer | search: none | search: IOPS short (median) | "
          "search: points | by the mean alone: false meet |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    seed = 0
    for over in (0.02, 0.10, 0.25):
        for cv in (0.05, 0.15, 0.30):
            for n in (1, 3, 5):
                seed += 1
                g = rates(over, cv, n, args.trials, seed, "grid")
                s = rates(over, cv, n, args.trials, seed + 1000, "search")
                m = rates(over, cv, n, args.trials, seed + 2000, "means")
                print(f"| +{over:.0%} | {cv:.0%} | {n} | {g['false']:.1%} | {g['best']:.1%} | {g['none']:.1%} | "
                      f"{s['false']:.1%} | {s['best']:.1%} | {s['none']:.1%} | {s['short']:+.1%} | "
                      f"{s['measured']:.1f} | {m['false']:.1%} |")


if __name__ == "__main__":
    main()
