"""How often `compare`'s cost line marks a change (▲ or ▼) between two sides with the same truth: each
component's CPU per I/O, in all, and IOPS per core, each cell with its own interval. Prints the table in
docs/methodology.md ("CPU cost per I/O", comparing).

Each simulated repetition has IOPS with run-to-run CV ``iops_cv`` and, per component, CPU cores that follow the
I/O (fio, ceph-osd, the kernel: cores = work per I/O x IOPS, the work per I/O varying 5-15 % from repetition to
repetition) or that do not (ceph-mon, ceph-mgr: background, a constant with 20 % noise); CPU per I/O is cores /
IOPS, as `stats.cost` computes it. Sides of n repetitions are compared unpaired (Welch, the ratio of the means:
`stats.estimate.welch_difference`) or paired (the ratios of alternating repetitions, sharing their round's IOPS
drift: `stats.sequential.paired_change`), at a 95 % interval per cell and at the 5 % shared among the cells of the
line (Bonferroni), what `compare` does.

    .venv/bin/python bench/cost_compare.py [--points 4000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import numpy.typing as npt

from storbench.stats.compare_cells import cost_level
from storbench.stats.estimate import CONFIDENCE, estimate, welch_difference
from storbench.stats.sequential import paired_change

# (name, mean cores at 1,000 IOPS, noise of its work per I/O or of its cores, follows the I/O)
COMPONENTS = (("fio", 0.10, 0.05, True), ("ceph-osd", 1.0, 0.15, True), ("ceph-mon", 0.017, 0.20, False),
              ("ceph-mgr", 0.007, 0.20, False), ("kernel", 0.08, 0.10, True))
Values = npt.NDArray[np.float64]


def lognormal(rng: np.random.Generator, cv: float, shape: tuple[int, ...]) -> Values:
    sigma = math.sqrt(math.log1p(cv * cv))
    return rng.lognormal(-sigma * sigma / 2, sigma, shape)


def side_cells(rng: np.random.Generator, n: int, iops_cv: float, drift: Values) -> list[Values]:
    """One side's cells over its ``n`` repetitions: each component's µs per I/O, then in all, IOPS per core used
    and IOPS per ceph-osd core (the eight `compare` shows on a Ceph lab)."""
    iops = 1000.0 * lognormal(rng, iops_cv, (n,)) * drift
    cores = [base * (iops / 1000.0 if follows else 1.0) * lognormal(rng, noise, (n,))
             for _, base, noise, follows in COMPONENTS]
    per_io = [1e6 * c / iops for c in cores]
    total = sum(cores)
    return [*per_io, 1e6 * total / iops, iops / total, iops / cores[1]]


def any_marked(base: list[Values], cand: list[Values], confidence: float, paired: bool) -> bool:
    for b, c in zip(base, cand, strict=True):
        if paired:
            change = paired_change(list(b), list(c), confidence)
            if change is not None and (change.low > 0 or change.high < 0):
                return True
        else:
            eb, ec = estimate(list(b), confidence), estimate(list(c), confidence)
            assert eb is not None and ec is not None
            if welch_difference(eb, ec, confidence).significant:
                return True
    return False


def rate(points: int, n: int, iops_cv: float, paired: bool, seed: int) -> tuple[float, float]:
    """The share of A/A points whose cost line marks any cell: at 95 % a cell, and at the shared level."""
    rng = np.random.default_rng(seed)
    plain = shared = 0
    cells = len(COMPONENTS) + 3
    for _ in range(points):
        drift = lognormal(rng, 0.10, (n,))  # a round's drift, both sides alike when they alternate
        base = side_cells(rng, n, iops_cv, drift)
        cand = side_cells(rng, n, iops_cv, drift if paired else lognormal(rng, 0.10, (n,)))
        plain += any_marked(base, cand, CONFIDENCE, paired)
        shared += any_marked(base, cand, cost_level(CONFIDENCE, cells), paired)
    return plain / points, shared / points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=4000)
    args = parser.parse_args()
    print("| design | repetitions a side | IOPS CV | a cell marked: 95 % a cell | the 5 % shared (what compare does) |")
    print("|---|---:|---:|---:|---:|")
    settings = [(p, n, cv) for p in (False, True) for n in (3, 5, 10) for cv in (0.05, 0.12)]
    for seed, (paired, n, cv) in enumerate(settings):
        plain, shared = rate(args.points, n, cv, paired, seed)
        print(f"| {'paired' if paired else 'Welch'} | {n} | {cv:.0%} | {plain:.1%} | {shared:.1%} |")


if __name__ == "__main__":
    main()
