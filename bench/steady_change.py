"""How often a steady-state point is *shown* steady — its level's change across the SNIA window and the rounds
after it inside +-10 % (`SteadyState.shown_steady`, `stats.steady.level_change`) — on series that are flat (power)
and on series whose level truly changes by 10 % or more across those rounds (false "steady"), with the project's
own functions (`stats.steady.judge`). Prints a table for docs/methodology.md ("Preconditioning and steady state").

Series of rounds: a level plus noise of the given CV (independent, or AR(1): rounds that wander together), constant,
drifting linearly (the drift given as the true change across the window and its confirmation rounds: 10 rounds by
default), or approaching its level exponentially as a fresh SSD does. A claim is false when the true change across
the judged rounds is at or beyond the margin; at +-10 % exactly a test at 5 % says "shown" at most about 5 % of the
time.

    .venv/bin/python bench/steady_change.py [--trials 4000]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
from dataclasses import dataclass, field

from storbench.stats.steady import SteadyRule, SteadyStatus, judge

RULE = SteadyRule()  # SNIA's: window 5, range 20 %, slope 10 %, at most 25 rounds; then 5 rounds more


@dataclass(frozen=True)
class Scenario:
    name: str
    cv: float
    change: float = 0.0  # the true change across the judged rounds (linear in log), e.g. 0.10 for +10 %
    start: float = 0.0  # an exponential approach: the first round's level above (+) or below (-) the final one
    tau: float = 1.0
    rule: SteadyRule = field(default=RULE)
    rho: float = 0.0  # rounds that wander together: AR(1) noise, this correlation between one round and the next


def level(scenario: Scenario, t: int) -> float:
    """The noise-free level of round ``t``."""
    per_round = math.log1p(scenario.change) / (scenario.rule.window + scenario.rule.confirm - 1)
    return 1000.0 * math.exp(per_round * t) * (1 + scenario.start * math.exp(-t / scenario.tau))


def series(scenario: Scenario, rng: random.Random, n: int) -> list[float]:
    noise = rng.gauss(0.0, scenario.cv)
    values = []
    for t in range(n):
        if t:  # each round's noise keeps rho of the last one's, the rest new (the same CV)
            noise = scenario.rho * noise + rng.gauss(0.0, scenario.cv * math.sqrt(1 - scenario.rho ** 2))
        values.append(level(scenario, t) * (1 + noise))
    return values


def rates(scenario: Scenario, trials: int, seed: int) -> dict[str, float]:
    """Over all series: the share steady by SNIA's rule, the share shown steady (the change across the window and
    its confirmation rounds flat), and the median true change across those rounds."""
    rng = random.Random(seed)
    rule = scenario.rule
    snia = shown = 0
    truths: list[float] = []
    for _ in range(trials):
        values = series(scenario, rng, rule.max_rounds + rule.confirm)
        state = judge(list(enumerate(values)), rule)
        if state.status is not SteadyStatus.STEADY or state.window is None:
            continue
        snia += 1
        first, last = state.window.rounds[0], state.rounds[-1][0]
        truths.append(level(scenario, last) / level(scenario, first) - 1)
        shown += state.shown_steady
    return {"snia": snia / trials, "shown": shown / trials,
            "truth": statistics.median(truths) if truths else math.nan}


SCENARIOS = (
    *(Scenario("flat", cv) for cv in (0.01, 0.02, 0.05, 0.10)),
    *(Scenario("+10 % across the judged rounds (the margin)", cv, change=0.10) for cv in (0.01, 0.02, 0.05, 0.10)),
    *(Scenario("-10 % across the judged rounds (the margin)", cv, change=-1 / 11) for cv in (0.02, 0.05)),
    *(Scenario("+20 % across the judged rounds", cv, change=0.20) for cv in (0.02, 0.05)),
    *(Scenario("from +50 % (tau 3 rounds), then flat", cv, start=0.5, tau=3.0) for cv in (0.02, 0.05)),
    *(Scenario("flat, confirm: 10", cv, rule=SteadyRule(confirm=10)) for cv in (0.05, 0.10)),
    Scenario("+10 % across the judged rounds, confirm: 10", 0.05, change=0.10,
             rule=SteadyRule(confirm=10)),
    *(Scenario(f"+10 % across the judged rounds, rounds correlated {rho:g}", cv, change=0.10, rho=rho)
      for rho in (0.3, 0.6) for cv in (0.02, 0.05)),
    # a flat level whose rounds vary more than SNIA's 20 % range allows: "not steady" though nothing moves
    *(Scenario("flat, noisier than the range allows", cv) for cv in (0.15, 0.20)),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--only", default="", help="only the series whose name holds this text")
    args = parser.parse_args()
    print("| series | CV | true change across the judged rounds (median) | steady by SNIA's rule | shown steady "
          "(its change within +-10 %) |")
    print("|---|---:|---:|---:|---:|")
    for seed, scenario in enumerate(SCENARIOS):
        if args.only not in scenario.name:
            continue
        r = rates(scenario, args.trials, seed)
        print(f"| {scenario.name} | {scenario.cv:.0%} | {100 * r['truth']:+.1f} % | {r['snia']:.1%} | "
              f"{r['shown']:.1%} |")


if __name__ == "__main__":
    main()
