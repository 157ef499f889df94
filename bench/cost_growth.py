"""How often a CPU-bound point's verdict says "<component>'s CPU per I/O grew ... since <the curve's first point>"
(`stats.point_verdicts.cost_growth`) when it did not, and how often it says so when it did. Prints the table in
docs/methodology.md ("CPU cost per I/O", the CPU-bound verdict).

Each simulated point has n repetitions; per repetition each component's CPU per I/O is its true cost with noise
(fio 5 %, ceph-osd 15 %, ceph-mon and ceph-mgr 20 %, the kernel 10 %: the spreads `bench/cost_compare.py` takes).
The rule compares each component of the curve's first point with the later point (Welch, the ratio of the
means, its 5 % shared among the components) and names the one that grew by the most µs among those whose interval
lies above no change. Rows: no growth; the same with the later point run later on a machine whose every cost
drifted up by 5 % (a sweep in sequential order: the rule cannot tell drift from growth); the OSDs' cost grown by
10 % and by 30 %.

    .venv/bin/python bench/cost_growth.py [--points 4000]
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from typing import cast

import numpy as np

from storbench.stats.estimate import Estimate, estimate
from storbench.stats.point_summary import PointSummary
from storbench.stats.point_verdicts import cost_growth

# (the component's key as `stats.cost` names it, its µs per I/O, the noise of its work per I/O)
COMPONENTS = (("client", 200.0, 0.05), ("osd", 1500.0, 0.15), ("mon", 16.0, 0.20), ("mgr", 8.0, 0.20),
              ("kernel", 150.0, 0.10))


@dataclass(frozen=True)
class Point:
    """What `cost_growth` reads of a point: each component's CPU per I/O over its repetitions."""

    costs: dict[str, Estimate]

    def metric(self, field: str) -> Estimate | None:
        return self.costs.get(field.removesuffix("_cpu_us_per_io"))


def point(rng: np.random.Generator, n: int, scale: dict[str, float]) -> PointSummary:
    costs = {}
    for key, mean, noise in COMPONENTS:
        sigma = math.sqrt(math.log1p(noise * noise))
        values = mean * scale.get(key, 1.0) * rng.lognormal(-sigma * sigma / 2, sigma, n)
        found = estimate([float(v) for v in values])
        assert found is not None
        costs[key] = found
    return cast(PointSummary, Point(costs))


def said_grown(points: int, n: int, scale: dict[str, float], seed: int) -> tuple[float, float]:
    """The share of later points whose verdict names a component as grown, and the share naming the OSDs."""
    rng = np.random.default_rng(seed)
    said = osd = 0
    for _ in range(points):
        text = cost_growth(point(rng, n, {}), point(rng, n, scale), "iodepth 1")
        said += bool(text)
        osd += text.startswith("ceph-osd")
    return said / points, osd / points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=4000)
    args = parser.parse_args()
    drift = {key: 1.05 for key, _, _ in COMPONENTS}
    rows = (("no growth", {}), ("no growth, every cost drifted +5 % (sequential order)", drift),
            ("ceph-osd +10 %", {"osd": 1.10}), ("ceph-osd +30 %", {"osd": 1.30}))
    print("| truth | repetitions a point | a growth said | the OSDs' said |")
    print("|---|---:|---:|---:|")
    for seed, ((name, scale), n) in enumerate((row, n) for row in rows for n in (3, 5, 10)):
        said, osd = said_grown(args.points, n, scale, seed)
        print(f"| {name} | {n} | {said:.1%} | {osd:.1%} |")


if __name__ == "__main__":
    main()
