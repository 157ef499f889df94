#!/usr/bin/env python3
"""Error rates of the failover timeline's rules (`stats/timeline.py`) on simulated runs: 100 ms windows with
per-window noise (CV) correlated from window to window (AR(1), rho), 20 s before the fault, then a stall, a
degraded stretch and the level again (or not). Prints, per noise level: how late or early the recovery is found,
how often a recovered run is called "never recovered", how often a run that stays 10 % or 15 % down is called
recovered, how often a run that comes back 20 % higher is, and the blackout's error. Then the dip: of a fault
that does nothing, and of one that takes the I/O to 60 % for 8 s, each beside the lowest of as many windows before
the fault (the noise's own dip, shown with it). Last, stalls of slow clients (completions at random, a Poisson
stream): how often a fault that does nothing is said to have stopped the I/O, before (any stretch of a whole
window without a completion) and now (one beyond what the empty windows before the fault make likely), and how
often real stalls of a given length are said.
Usage: .venv/bin/python bench/failover_rule.py [runs]"""

from __future__ import annotations

import random
import statistics
import sys

from storbench.fio.logs import LogRow
from storbench.stats.timeline import ClientLog, Recovery, failover

WINDOW = 100
T0 = 1_800_000_000_000


def run(seed: int, cv: float, rho: float, stall_s: float, degraded: float, degraded_s: float, total_s: float,
        after: float = 1.0) -> ClientLog:
    rng = random.Random(seed)
    noise, rows = 0.0, []
    for k in range(1, int(total_s * 10) + 1):
        t = k / 10 - 0.05
        noise = rho * noise + (1 - rho ** 2) ** 0.5 * rng.gauss(0, cv)
        if 20 <= t < 20 + stall_s:
            continue
        level = degraded if 20 + stall_s <= t < 20 + stall_s + degraded_s else (1.0 if t < 20 else after)
        rows.append(LogRow(T0 + k * WINDOW, max(1, round(1000 * level * (1 + noise))), "write"))
    return ClientLog("c", tuple(rows))


def poisson_run(seed: int, iops: float, stall_s: float, total_s: float = 60.0) -> ClientLog:
    """Completions at random at ``iops`` a second, none for ``stall_s`` from the fault at 20 s."""
    rng = random.Random(seed)
    rows = []
    for k in range(1, int(total_s * 10) + 1):
        count, t = 0, rng.expovariate(iops)
        while t < 0.1:
            count, t = count + 1, t + rng.expovariate(iops)
        if count and not 20 <= k / 10 - 0.05 < 20 + stall_s:
            rows.append(LogRow(T0 + k * WINDOW, count * 10, "write"))
    return ClientLog("c", tuple(rows))


def stall_table(runs: int) -> None:
    print()
    print("I/Os a second (at random) | no fault's effect: said stopped before | now | a stall of 0.2 s said | "
          "0.5 s | 1 s")
    for iops in (10, 20, 50, 100, 1000):
        cells = []
        for stall_s in (0.0, 0.2, 0.5, 1.0):
            found = [failover([poisson_run(seed, iops, stall_s)], WINDOW, T0 + 20_000, T0, T0 + 60_000)
                     for seed in range(runs)]
            if stall_s == 0:
                cells.append(f"{100 * sum(f.blackout_s > 0 for f in found) / runs:5.1f} %")
            cells.append(f"{100 * sum(f.stalled for f in found) / runs:5.1f} %")
        print(f"{iops:>5} | " + " | ".join(cells))


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    print(f"{runs} simulated runs per line; fault at 20 s, stall 3 s, 60 % for 8 s (truly recovered at 11 s), "
          "then 40 s more")
    print("CV/window rho | recovery found - true (s): median, 5-95 % | not shown recovered (of which called not "
          "recovered) | blackout error max | called recovered at 90 % | at 85 % | at 120 %")
    for cv, rho in ((0.05, 0.0), (0.10, 0.0), (0.10, 0.5), (0.20, 0.5), (0.30, 0.7)):
        errors, missed, wrong, blackout = [], 0, 0, 0.0
        for seed in range(runs):
            r = failover([run(seed, cv, rho, 3.0, 0.6, 8.0, 71.0)], WINDOW, T0 + 20_000, T0, T0 + 71_000)
            blackout = max(blackout, abs(r.blackout_s - 3.0))
            if r.recovery is not Recovery.RECOVERED or r.recovery_s is None:
                missed += 1
                wrong += r.recovery is Recovery.NOT_RECOVERED
            else:
                errors.append(r.recovery_s - 11.0)
        false = []
        for loss in (0.90, 0.85, 1.20):
            count = sum(failover([run(seed, cv, rho, 3.0, loss, 48.0, 71.0, after=loss)], WINDOW, T0 + 20_000, T0,
                                 T0 + 71_000).recovery is Recovery.RECOVERED for seed in range(runs))
            false.append(100 * count / runs)
        spread = (statistics.quantiles(errors, n=20) if len(errors) > 1 else [float("nan")] * 19)
        print(f"{cv:>4.0%} {rho:.1f}      | {statistics.median(errors) if errors else float('nan'):+.2f}, "
              f"{spread[0]:+.2f} to {spread[-1]:+.2f} | {100 * missed / runs:5.1f} % ({100 * wrong / runs:.1f} %) | "
              f"{blackout:.2f} s | "
              f"{false[0]:5.1f} % | {false[1]:5.1f} % | {false[2]:5.1f} %")
    print()
    print("CV/window rho | a fault that does nothing: dip, median (5-95 %) | lowest of as many windows before it | "
          "a fall to 60 % for 8 s: dip | lowest before it")
    for cv, rho in ((0.05, 0.0), (0.10, 0.0), (0.10, 0.5), (0.20, 0.5), (0.30, 0.7)):
        cells = []
        for stall, level, seconds in ((0.0, 1.0, 0.0), (0.0, 0.6, 8.0)):
            found = [failover([run(seed, cv, rho, stall, level, seconds, 71.0)], WINDOW, T0 + 20_000, T0,
                              T0 + 71_000) for seed in range(runs)]
            for values in ([f.dip_pct for f in found], [f.dip_before_pct for f in found]):
                kept = [v for v in values if v is not None]
                q = statistics.quantiles(kept, n=20)
                cells.append(f"{statistics.median(kept):.0f} % ({q[0]:.0f}-{q[-1]:.0f})")
        print(f"{cv:>4.0%} {rho:.1f}      | " + " | ".join(cells))
    stall_table(runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
