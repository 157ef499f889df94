"""`compare` with sides that span several runs: how often an A/A compare says "different", and how often a real
5 % fall is found, with the run as the sample unit (what `stats.compare_runs` does) beside pooling every
repetition as independent (what compare did before). Pure simulation through `stats.compare.compare_observations`
itself; prints the table in docs/methodology.md ("Comparisons", sides over several runs).

Each run's level is 1000 x log-normal(0, spread between runs); its repetitions are log-normal around it with the
run-to-run CV. Two designs of k runs a side, n repetitions a run:

- runs apart: the baseline's k runs, then the candidate's own k runs (a before/after over several nights);
- shared runs: both sides in each of the same k runs (a plan run k times with both settings);
- shared runs, blocked inside each: as shared runs, but every run measures the baseline first and the candidate
  after it, while the run's level drifts down by `drift` between the two halves (a sequential order, a search's or
  a steady state's points): the pairs all carry the drift, which reads as a change ("paired by run, blocked").

    .venv/bin/python bench/runs_compare.py [--compares 1000]
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from storbench.stats.compare import compare_observations
from storbench.stats.compare_cells import Verdict
from storbench.stats.estimate import estimate, welch_difference
from storbench.stats.observations import Observation
from storbench.stats.selectors import parse_selector
from synthetic import observation


def _side(levels: dict[int, float], reps: int, cv: float, rng: random.Random, case_id: str, lab: str
          ) -> list[Observation]:
    return [observation(run_id=run, repeat=rep, case_id=case_id, lab=lab, iops=level * rng.lognormvariate(0, cv))
            for run, level in levels.items() for rep in range(reps)]


def trial(shared: bool, k: int, reps: int, spread: float, cv: float, change: float, rng: random.Random,
          drift: float = 0.0) -> tuple[bool, bool]:
    """(run as the unit called it different, pooled repetitions called it different) for one compare; ``drift``:
    the share a shared run's level falls from its first half (the baseline) to its second (the candidate)."""
    if shared:
        levels = {run: 1000 * rng.lognormvariate(0, spread) for run in range(1, k + 1)}
        observations = [*_side(levels, reps, cv, rng, "a", "lab=ceph pool_size=2"),
                        *_side({r: v * (1 + change) * (1 - drift) for r, v in levels.items()}, reps, cv, rng, "b",
                               "lab=ceph pool_size=3")]
        sides = parse_selector("pool_size=2"), parse_selector("pool_size=3")
        tags: dict[int, tuple[str, ...]] = {run: () for run in levels}
    else:
        before = {run: 1000 * rng.lognormvariate(0, spread) for run in range(1, k + 1)}
        after = {run: 1000 * (1 + change) * rng.lognormvariate(0, spread) for run in range(k + 1, 2 * k + 1)}
        observations = [*_side(before, reps, cv, rng, "a", ""), *_side(after, reps, cv, rng, "a", "")]
        sides = parse_selector("tag=before"), parse_selector("tag=after")
        tags = {run: ("before",) if run in before else ("after",) for run in (*before, *after)}
    (comparison,) = compare_observations(observations, *sides, tags)
    cell = comparison.cell("iops")
    assert cell is not None
    run_unit = cell.verdict is not Verdict.UNDECIDED
    half = k * reps  # the baseline's repetitions come first, the candidate's after them
    a = estimate([o.measurement.iops for o in observations[:half] if o.measurement is not None])
    b = estimate([o.measurement.iops for o in observations[half:] if o.measurement is not None])
    assert a is not None and b is not None
    return run_unit, welch_difference(a, b).significant


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compares", type=int, default=1000)
    args = parser.parse_args()
    rng = random.Random(1)
    print("| design | runs a side | spread between runs | CV in a run | A/A different: runs as the unit | "
          "A/A different: repetitions pooled | 5 % fall found: runs as the unit |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for shared in (False, True):
        for k in (3, 5):
            for spread, cv in ((0.03, 0.02), (0.03, 0.05), (0.01, 0.05)):
                aa = [trial(shared, k, 5, spread, cv, 0.0, rng) for _ in range(args.compares)]
                fall = [trial(shared, k, 5, spread, cv, -0.05, rng)[0] for _ in range(args.compares)]
                print(f"| {'shared runs, paired by run' if shared else 'runs apart, Welch over runs'} | {k} | "
                      f"{spread:.0%} | {cv:.0%} | {100 * sum(r for r, _ in aa) / len(aa):.1f} % | "
                      f"{100 * sum(p for _, p in aa) / len(aa):.1f} % | {100 * sum(fall) / len(fall):.1f} % |")
    print()
    print("| shared runs, blocked inside each (baseline first), drift between the halves | runs a side | CV in a run | "
          "A/A different: runs as the unit |")
    print("|---|---:|---:|---:|")
    for drift in (0.01, 0.02, 0.03):
        for k in (3, 5):
            for cv in (0.02, 0.05):
                aa = [trial(True, k, 5, 0.03, cv, 0.0, rng, drift)[0] for _ in range(args.compares)]
                print(f"| -{drift:.0%} | {k} | {cv:.0%} | {100 * sum(aa) / len(aa):.1f} % |")


if __name__ == "__main__":
    main()
