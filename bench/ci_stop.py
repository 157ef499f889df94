"""Coverage of a point's IOPS interval after `repeat: {until: "ci <= N%"}` stopped the run: how often the interval
shown contains the true mean, when the run stops at the first look (round ``min`` on) whose interval is within
+-N % of its mean, or at ``max``. Prints the tables in docs/methodology.md ("Paired changes and stopping when the
answer is known", `until: "ci <= N%"`).

Each simulated point has log-normal repetitions (true mean 1000) with the given run-to-run CV. The stop is found
with the project's t quantile (`stats.estimate.t_quantile`, the interval `stats.estimate.estimate` computes) for
every look at once; the interval at the stop is then computed by `estimate` itself for the first paths of every
setting, and must agree.

The second table: two points with the same truth in one such run (their repetitions alternating, so compared on
the ratios of their pairs, `stats.sequential.paired_change`), the run stopping when both intervals are narrow: how
often the comparison's interval calls them different, at a plain 95 % and at the run's level (what `compare`
judges such a run's comparisons at, `stats.compare_cells.stopped_alpha`).

    .venv/bin/python bench/ci_stop.py [--paths 20000]
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import numpy.typing as npt

from storbench.config import CI_STOP_MIN_ROUNDS, ci_stop_confidence
from storbench.stats.estimate import CONFIDENCE, estimate, t_quantile
from storbench.stats.sequential import paired_change

MAX_ROUNDS = 30
TRUE_MEAN = 1000.0
CVS = (0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.40)
TARGETS = (5.0, 10.0, 20.0, 30.0)
CHECKED = 300  # paths per setting whose interval is recomputed with `estimate`

Values = npt.NDArray[np.float64]


def simulate(cv: float, paths: int, seed: int) -> Values:
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log1p(cv * cv))
    return TRUE_MEAN * rng.lognormal(-sigma * sigma / 2, sigma, (paths, MAX_ROUNDS))


def stopped(values: Values, ci_pct: float, least: int, confidence: float
            ) -> tuple[Values, Values, npt.NDArray[np.int64]]:
    """Each path's mean and interval half-width (at ``confidence``) at its stop, and the stop's index: the first
    look from round ``least`` on whose interval is within +-``ci_pct`` % of its mean (or MAX_ROUNDS)."""
    n = np.arange(1, MAX_ROUNDS + 1, dtype=float)
    mean = np.cumsum(values, axis=1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.maximum(np.cumsum(values * values, axis=1) - n * mean * mean, 0) / (n - 1))
        t = np.array([math.inf] + [t_quantile(confidence, k - 1) for k in range(2, MAX_ROUNDS + 1)])
        half = t * sd / np.sqrt(n)
        narrow = (100 * half / mean <= ci_pct) & (n >= least)
    narrow[:, -1] = True
    stop = np.asarray(narrow.argmax(axis=1), dtype=np.int64)
    rows = np.arange(len(values))
    return mean[rows, stop], half[rows, stop], stop


def coverage(values: Values, ci_pct: float, least: int, confidence: float) -> tuple[float, float]:
    """The share of paths whose interval at ``confidence`` contains the true mean at the stop, and the mean rounds
    run, for a run that stops at the first look from round ``least`` on whose interval at ``confidence`` is within
    +-``ci_pct`` % of its mean (or at MAX_ROUNDS)."""
    at, width, stop = stopped(values, ci_pct, least, confidence)
    covered = np.abs(at - TRUE_MEAN) <= width
    for i in range(min(CHECKED, len(values))):  # the project's own interval at the stop says the same
        found = estimate(list(values[i, : stop[i] + 1]), confidence)
        assert found is not None and found.ci_low is not None and found.ci_high is not None
        assert (found.ci_low <= TRUE_MEAN <= found.ci_high) == bool(covered[i]), (i, found)
    return float(covered.mean()), float(stop.mean() + 1)


def misses(values: Values, ci_pct: float, confidence: float) -> tuple[float, float, float]:
    """For the rule (from CI_STOP_MIN_ROUNDS, at ``confidence``): the share of paths whose interval at the stop lies
    wholly below the true mean, wholly above it, and the mean's relative bias at the stop."""
    at, width, _ = stopped(values, ci_pct, CI_STOP_MIN_ROUNDS, confidence)
    return (float((at + width < TRUE_MEAN).mean()), float((at - width > TRUE_MEAN).mean()),
            float(at.mean() / TRUE_MEAN - 1))


def stops(values: Values, ci_pct: float, confidence: float) -> npt.NDArray[np.int64]:
    """Each path's stop (rounds run) for the rule: the first look from CI_STOP_MIN_ROUNDS on whose interval at
    ``confidence`` is within +-``ci_pct`` % of its mean on every point (``values``: points x paths x rounds)."""
    n = np.arange(1, MAX_ROUNDS + 1, dtype=float)
    mean = np.cumsum(values, axis=2) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.maximum(np.cumsum(values * values, axis=2) - n * mean * mean, 0) / (n - 1))
        t = np.array([math.inf] + [t_quantile(confidence, k - 1) for k in range(2, MAX_ROUNDS + 1)])
        narrow = ((100 * t * sd / np.sqrt(n) / mean <= ci_pct).all(axis=0)) & (n >= CI_STOP_MIN_ROUNDS)
    narrow[:, -1] = True
    return np.asarray(narrow.argmax(axis=1) + 1, dtype=np.int64)


def called_different(a: Values, b: Values, stop: npt.NDArray[np.int64], confidence: float) -> float:
    """The share of paths whose paired interval (at ``confidence``, on the log ratios of the first ``stop`` pairs)
    excludes no change; `paired_change` itself says the same for the first paths."""
    different = 0
    for i in range(len(a)):
        k = int(stop[i])
        logs = np.log(b[i, :k] / a[i, :k])
        half = t_quantile(confidence, k - 1) * logs.std(ddof=1) / math.sqrt(k)
        found = abs(float(logs.mean())) > half
        if i < CHECKED:
            change = paired_change(list(a[i, :k]), list(b[i, :k]), confidence)
            assert change is not None and found == (change.low > 0 or change.high < 0), (i, change)
        different += found
    return different / len(a)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=20000)
    args = parser.parse_args()
    runs = {(ci, cv): simulate(cv, args.paths, seed) for seed, (ci, cv) in
            enumerate((ci, cv) for ci in TARGETS for cv in CVS)}
    mins = (2, 3, 4, 5, 6, 8, 10)
    rule = f"the rule (its level), from round {CI_STOP_MIN_ROUNDS}"
    print("| N | CV | plain 95 %, min 2 | " + " | ".join(f"min {m}" for m in mins[1:])
          + f" | {rule} | its mean rounds (plain, min 3) |")
    print("|---|---|" + "---:|" * (len(mins) + 2))
    for (ci, cv), values in runs.items():
        plain = {m: coverage(values, ci, m, CONFIDENCE) for m in mins}
        level = ci_stop_confidence(ci)
        covered, rounds = coverage(values, ci, CI_STOP_MIN_ROUNDS, level)
        cells = [f"{plain[m][0]:.1%}" for m in mins]
        print(f"| ±{ci:g} % | {cv:.0%} | " + " | ".join(cells)
              + f" | {covered:.1%} ({level:.1%}) | {rounds:.1f} ({plain[3][1]:.1f}) |")
    print()
    print("| N | CV | the rule's level | interval below the true mean | above it | mean at the stop |")
    print("|---|---|---:|---:|---:|---:|")
    for ci in TARGETS:
        for cv in (0.10, 0.20, 0.40):
            level = ci_stop_confidence(ci)
            below, above, bias = misses(runs[(ci, cv)], ci, level)
            print(f"| ±{ci:g} % | {cv:.0%} | {level:.1%} | {below:.1%} | {above:.1%} | {bias:+.2%} |")
    print()
    print("| N | CV | its mean rounds | called different at 95 % | at the run's level |")
    print("|---|---|---:|---:|---:|")
    for seed, (ci, cv) in enumerate((ci, cv) for ci in (5.0, 10.0, 20.0) for cv in (0.05, 0.10, 0.20)):
        a, b = simulate(cv, args.paths, 1000 + 2 * seed), simulate(cv, args.paths, 1001 + 2 * seed)
        level = ci_stop_confidence(ci)
        stop = stops(np.stack([a, b]), ci, level)
        print(f"| ±{ci:g} % | {cv:.0%} | {stop.mean():.1f} | {called_different(a, b, stop, CONFIDENCE):.1%} | "
              f"{called_different(a, b, stop, level):.1%} ({level:.1%}) |")

if __name__ == "__main__":
    main()
