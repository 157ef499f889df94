#!/usr/bin/env python3
"""How often `show`'s drift warning fires, with and without drift: the rule itself (`stats.drift.fit_drift`: the
within-case slope of each repetition's log rate on time, a 95 % t interval that excludes zero) on simulated runs.

A run: `cases` points, `repeat` rounds, interleaved as storbench runs them (A B C, C B A, B C A, A C B, ...), one
repetition a `minutes` apart; each repetition's rate is its case's level times a drift (a share a minute) times
noise (CV, on the log scale). Noise either independent from repetition to repetition, or AR(1) in run order
(a repetition shares part of its luck with the one before it: caches, background work). Prints, per setting,
how often one operation's warning fires, and how often a run with two operations (reads and writes) warns for any.
Asserts nothing.

    .venv/bin/python bench/drift_rule.py [--trials 4000]
"""

from __future__ import annotations

import argparse
import math
import random

from storbench.schedule import round_order
from storbench.stats.drift import DriftSample, fit_drift


def interleaved(cases: int, rounds: int) -> list[int]:
    """The cases in run order, as storbench runs them (`schedule.round_order`)."""
    return [case for r in range(rounds) for case in round_order(range(cases), r)]


def one_run(cases: int, rounds: int, cv: float, drift_per_min: float, rho: float, rng: random.Random) -> bool:
    """Whether the rule calls one operation's rate drifted in one simulated run."""
    sigma = math.sqrt(math.log1p(cv * cv))
    noise = 0.0
    values: dict[int, list[tuple[float, float]]] = {}
    for slot, case in enumerate(interleaved(cases, rounds)):
        noise = rho * noise + math.sqrt(1 - rho * rho) * rng.gauss(0.0, sigma)
        minutes = float(slot)
        values.setdefault(case, []).append((minutes, math.log(1000.0 * (case + 1)) + drift_per_min * minutes + noise))
    samples, logs = [], []
    for case, rows in values.items():
        mean = sum(v for _, v in rows) / len(rows)
        for rep, (minutes, value) in enumerate(rows):
            samples.append(DriftSample(minutes, 0.0, str(case), rep))
            logs.append(value - mean)
    fitted = fit_drift(samples, logs)
    return fitted is not None and (fitted[1] > 0 or fitted[2] < 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=4000)
    args = parser.parse_args()
    rng = random.Random(20261130)
    print(f"{'cases':>5} {'rounds':>6} {'CV':>4} {'drift %/10min':>13} {'rho':>4} {'warns':>7} {'any of 2':>9}")
    for cases, rounds in ((4, 3), (8, 3), (4, 5), (16, 5)):
        for cv in (0.05, 0.15):
            for drift_pct in (0.0, -2.0, -5.0):
                for rho in (0.0, 0.5):
                    per_min = math.log1p(drift_pct / 100) / 10
                    fired = [one_run(cases, rounds, cv, per_min, rho, rng) for _ in range(args.trials)]
                    one = sum(fired) / len(fired)
                    pairs = [fired[i] or fired[i + 1] for i in range(0, len(fired) - 1, 2)]
                    print(f"{cases:>5} {rounds:>6} {cv:>4.2f} {drift_pct:>13.1f} {rho:>4.1f} {100 * one:>6.1f}% "
                          f"{100 * sum(pairs) / len(pairs):>8.1f}%")


if __name__ == "__main__":
    main()
