"""How often a steady-state point's 95 % interval covers the true level, with the project's own functions
(`stats.steady.judge`, `stats.estimate.estimate`): the interval over the SNIA window's own rounds (chosen because
their spread is small) against the interval over the `confirm` rounds measured after it (chosen by nothing).
Prints a table for docs/methodology.md ("Preconditioning and steady state").

Series of rounds: a level (constant, or approaching it exponentially as a fresh SSD or a warming cluster does)
plus noise of the given CV, independent from round to round or AR(1) (a slow wander). The truth an interval
should cover is the noise-free level averaged over the rounds its figures come from.

    .venv/bin/python bench/steady_interval.py [--trials 2000]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from dataclasses import dataclass

from storbench.stats.estimate import estimate
from storbench.stats.steady import SteadyRule, SteadyStatus, judge

RULE = SteadyRule()  # SNIA's: window 5, range 20 %, slope 10 %, at most 25 rounds; then 5 rounds more


@dataclass(frozen=True)
class Scenario:
    name: str
    cv: float
    start: float = 0.0  # the first round's level, as a share above (+) or below (-) the final level
    tau: float = 1.0  # rounds for the approach to fall by a factor e
    rho: float = 0.0  # AR(1) correlation of the noise from one round to the next
    warm_ar: bool = False  # the approach is the AR(1) itself (y - level = rho (y' - level) + e): noise and warm-up


def rounds(scenario: Scenario, rng: random.Random, n: int) -> tuple[list[float], list[float]]:
    """(measured values, noise-free levels) of ``n`` rounds around a final level of 1000."""
    level = 1000.0
    sd = scenario.cv * level
    noise = rng.gauss(0.0, sd)
    values, levels = [], []
    deviation = scenario.start * level
    for t in range(n):
        if t:
            noise = scenario.rho * noise + rng.gauss(0.0, sd * math.sqrt(1 - scenario.rho ** 2))
        if scenario.warm_ar:
            if t:
                deviation *= scenario.rho
            true = level + deviation
        else:
            true = level * (1 + scenario.start * math.exp(-t / scenario.tau))
        values.append(true + noise)
        levels.append(true)
    return values, levels


def coverage(scenario: Scenario, trials: int, seed: int, rule: SteadyRule = RULE) -> dict[str, float]:
    """Over the series that became steady: how often the window's interval and the confirmation rounds' interval
    cover the true level of their rounds, and the median rounds run."""
    rng = random.Random(seed)
    steady = window_hits = after_hits = 0
    ran: list[int] = []
    for _ in range(trials):
        values, levels = rounds(scenario, rng, rule.max_rounds + rule.confirm)
        state = judge(list(enumerate(values)), rule)
        if state.status is not SteadyStatus.STEADY or state.window is None:
            continue
        steady += 1
        ran.append(len(state.rounds))
        window = list(state.window.rounds)
        after = [index for index, _ in state.confirmation]
        for chosen, is_window in ((window, True), (after, False)):
            interval = estimate([values[i] for i in chosen])
            truth = statistics.fmean(levels[i] for i in chosen)
            assert interval is not None and interval.ci_low is not None and interval.ci_high is not None
            hit = interval.ci_low <= truth <= interval.ci_high
            if is_window:
                window_hits += hit
            else:
                after_hits += hit
    return {"steady": steady / trials, "window": window_hits / max(steady, 1), "after": after_hits / max(steady, 1),
            "rounds": statistics.median(ran) if ran else math.nan}


SCENARIOS = (
    *(Scenario("flat, independent rounds", cv) for cv in (0.02, 0.05, 0.10)),
    *(Scenario("from +50 % (tau 3 rounds), independent", cv, start=0.5, tau=3.0) for cv in (0.02, 0.05, 0.10)),
    *(Scenario("from -30 % (tau 4 rounds), independent", cv, start=-0.3, tau=4.0) for cv in (0.05, 0.10)),
    *(Scenario("flat, AR(1) noise rho 0.3", cv, rho=0.3) for cv in (0.05, 0.10)),
    *(Scenario("flat, AR(1) noise rho 0.6", cv, rho=0.6) for cv in (0.05, 0.10)),
    Scenario("AR(1) warm-up from +50 %, rho 0.7", 0.05, start=0.5, rho=0.7, warm_ar=True),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    args = parser.parse_args()
    print("| series | CV | steady | window's own interval | interval of the 5 rounds after it | rounds (median) |")
    print("|---|---:|---:|---:|---:|---:|")
    for seed, scenario in enumerate(SCENARIOS):
        r = coverage(scenario, args.trials, seed)
        print(f"| {scenario.name} | {scenario.cv:.0%} | {r['steady']:.0%} | {r['window']:.1%} | {r['after']:.1%} | "
              f"{r['rounds']:.0f} |")


if __name__ == "__main__":
    main()
