#!/usr/bin/env python3
"""The change-point rule of `storbench history` (`stats/history.py`) on simulated nightly series: runs of
--reps repetitions with a run-to-run CV (--between) and a CV inside a run (--within), looked at after every run from
the fourth. Prints the share of step-free series that ever raise an alarm over --runs looks, and for a 5 % and a 10 %
drop half-way the share found (within a run of the step) and the runs after the step at the first look that found
it; the gate's false alarms per look and its catch of a drop's first and second run; and, for a drop at the true run,
how often the step's 95 % interval holds the true step and how often another change point is found besides it;
and over tables of many points, how often a change point is shown where nothing changed (each history's 1 %, or
shared among the table's histories as `history` and the report share it).
The figures docs/methodology.md#history-and-change-points states.

    .venv/bin/python bench/history_simulation.py [--series 1000] [--runs 20] [--between 0.03] [--within 0.02]
        [--steps-only]
"""

from __future__ import annotations

import argparse
import random
import statistics

from storbench.stats.history import ALPHA, RunContext, RunLevel, change_points, last_run_check


def series(runs: int, step_at: int | None, step: float, between: float, within: float, reps: int,
           rng: random.Random) -> list[RunLevel]:
    out = []
    for i in range(runs):
        mean = (1 + (step if step_at is not None and i >= step_at else 0.0)) * (1 + rng.gauss(0, between))
        out.append(RunLevel(RunContext(i, float(i), (), ()), tuple(mean * (1 + rng.gauss(0, within))
                                                                    for _ in range(reps))))
    return out


def first_alarm(levels: list[RunLevel], step_at: int | None) -> int | None:
    for k in range(4, len(levels) + 1):
        found = change_points(levels[:k])
        if step_at is None and found:
            return k
        if step_at is not None and any(abs(c.at - step_at) <= 1 for c in found):
            return k - step_at
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--series", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--between", type=float, default=0.03)
    parser.add_argument("--within", type=float, default=0.02)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=36)
    parser.add_argument("--steps-only", action="store_true", help="only the step interval's rows")
    parser.add_argument("--table-only", action="store_true", help="only the gate over tables of many points")
    parser.add_argument("--display-only", action="store_true",
                        help="only the change points shown over tables of many points")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    if args.display_only:
        display_rates(args, rng)
        return
    if args.steps_only:
        step_interval_rates(args, rng)
        return
    if args.table_only:
        table_gate_rates(args, rng)
        return
    alarms = sum(first_alarm(series(args.runs, None, 0.0, args.between, args.within, args.reps, rng), None)
                 is not None for _ in range(args.series))
    print(f"| series without a step: an alarm at some look over {args.runs} runs | "
          f"{100 * alarms / args.series:.1f} % of {args.series} |")
    half = args.runs // 2
    for step in (-0.05, -0.10):
        found = [r for _ in range(args.series)
                 if (r := first_alarm(series(args.runs, half, step, args.between, args.within, args.reps, rng),
                                      half)) is not None]
        median = f"{statistics.median(found):g}" if found else "-"
        print(f"| a {-100 * step:.0f} % drop at run {half + 1}: found by run {args.runs} | "
              f"{100 * len(found) / args.series:.1f} %, median {median} runs after the step |")
    for threshold in (0.0, 5.0):
        gate_rates(args, rng, threshold)
    table_gate_rates(args, rng)
    step_interval_rates(args, rng)
    display_rates(args, rng)


def display_rates(args: argparse.Namespace, rng: random.Random) -> None:
    """What `history` and the report show after --runs nights over a table of N points and metrics: the share of
    tables without any step that show a change point, with each history's 1 % (the rule before) and with the 1 %
    shared among the table's histories (`stats.history.point_histories`); and, where one history has a 10 % drop
    half-way, how often its step is shown (within a run)."""
    tables = max(20, args.series // 10)
    half = args.runs // 2
    for points in (1, 10, 40):
        shown = {1.0: 0, 1.0 / points: 0}
        found = dict.fromkeys(shown, 0)
        for _ in range(tables):
            flat = [series(args.runs, None, 0.0, args.between, args.within, args.reps, rng) for _ in range(points)]
            dropped = series(args.runs, half, -0.10, args.between, args.within, args.reps, rng)
            for share in shown:
                shown[share] += any(change_points(levels, ALPHA * share) for levels in flat)
                found[share] += any(abs(c.at - half) <= 1 for c in change_points(dropped, ALPHA * share))
        print(f"| a table of {points} points and metrics without a step, after {args.runs} runs: tables showing a "
              f"change point, 1 % each / shared | {100 * shown[1.0] / tables:.1f} % / "
              f"{100 * shown[1.0 / points] / tables:.1f} % of {tables} |")
        print(f"| a 10 % drop at run {half + 1} in one of a table's {points} histories: shown by run {args.runs}, "
              f"1 % each / shared | {100 * found[1.0] / tables:.1f} % / {100 * found[1.0 / points] / tables:.1f} % |")


def step_interval_rates(args: argparse.Namespace, rng: random.Random) -> None:
    """Whole series with a drop half-way, judged once: of those whose change point is at the true run, the share
    whose 95 % interval of the step holds the true step (the run-to-run noise has mean 0: the true step is the drop
    itself), and the share of all with another change point more than a run away from the step."""
    half = args.runs // 2
    for step in (-0.05, -0.10, -0.20):
        found = covered = extra = 0
        for _ in range(args.series):
            changes = change_points(series(args.runs, half, step, args.between, args.within, args.reps, rng))
            at = [c for c in changes if c.at == half]
            if at:
                found += 1
                assert at[0].change_ci_pct is not None
                low, high = at[0].change_ci_pct
                covered += low <= 100 * step <= high
            extra += any(abs(c.at - half) > 1 for c in changes)
        print(f"| a {-100 * step:.0f} % drop at run {half + 1} of {args.runs}: its 95 % interval holds the true step "
              f"| {100 * covered / max(found, 1):.1f} % of the {found} found at the true run |")
        print(f"| a {-100 * step:.0f} % drop at run {half + 1} of {args.runs}: a change point more than a run from "
              f"it | {100 * extra / args.series:.1f} % of {args.series} |")


def gate(levels: list[RunLevel], threshold_pct: float, points: int = 1) -> bool:
    """`history --fail-on-regression PCT` on one point and metric (higher is better) at this look, as one of
    ``points`` judged together (the 5 % of the newest-run checks and the 1 % of the change points shared over them,
    as `cli/history.py` shares them)."""
    check = last_run_check(levels, 1 - 0.05 / points, ALPHA / points)
    if check is not None and check.below(higher_is_better=True) and (
            check.change_pct is None or -check.change_pct >= threshold_pct):
        return True
    step = next((c for c in change_points(levels, ALPHA / points) if c.found_with == len(levels)), None)  # new_step
    return (step is not None and step.change_pct is not None and step.change_ci_pct is not None
            and -step.change_pct >= threshold_pct and step.change_ci_pct[1] < 0)


def table_gate_rates(args: argparse.Namespace, rng: random.Random) -> None:
    """Nights on which the gate fails a table of N points and metrics none of which changed: the newest of
    --runs runs judged once a night, every point of the table together."""
    nights = max(20, args.series // 10)
    for points in (1, 10, 40, 100):
        failed = sum(any(gate(series(args.runs, None, 0.0, args.between, args.within, args.reps, rng), 0.0, points)
                         for _ in range(points)) for _ in range(nights))
        print(f"| --fail-on-regression 0 over a table of {points} points without a step: nights failed | "
              f"{100 * failed / nights:.1f} % of {nights} |")


def gate_rates(args: argparse.Namespace, rng: random.Random, threshold_pct: float) -> None:
    looks = false = 0
    for _ in range(args.series // 4):
        levels = series(args.runs, None, 0.0, args.between, args.within, args.reps, rng)
        for k in range(4, args.runs + 1):
            looks += 1
            false += gate(levels[:k], threshold_pct)
    print(f"| --fail-on-regression {threshold_pct:g} on a series without a step: per look | "
          f"{100 * false / looks:.1f} % of {looks} looks |")
    for step in (-0.05, -0.10):
        caught = sum(gate(series(11, 10, step, args.between, args.within, args.reps, rng), threshold_pct)
                     for _ in range(args.series))
        print(f"| --fail-on-regression {threshold_pct:g}: the first run of a {-100 * step:.0f} % drop after 10 "
              f"runs | caught {100 * caught / args.series:.1f} % |")
        second = sum(gate(series(12, 10, step, args.between, args.within, args.reps, rng), threshold_pct)
                     for _ in range(args.series))
        print(f"| --fail-on-regression {threshold_pct:g}: the second run of a {-100 * step:.0f} % drop after 10 "
              f"runs | caught {100 * second / args.series:.1f} % |")
        within = 0
        for _ in range(args.series):
            levels = series(20, 10, step, args.between, args.within, args.reps, rng)
            within += any(gate(levels[:k], threshold_pct) for k in range(11, 21))
        print(f"| --fail-on-regression {threshold_pct:g}: a {-100 * step:.0f} % drop after 10 runs, on one of its "
              f"first 10 nights | caught {100 * within / args.series:.1f} % |")


if __name__ == "__main__":
    main()
