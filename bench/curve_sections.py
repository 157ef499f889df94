"""Do the sections that read one curve ever contradict each other? On simulated sweeps, with the project's own
functions: the knee (`stats.knee.locate_knee`, what `saturation` and the report say), the capped verdict and the
per-point reading of an under-driven point (`stats.point_verdicts.sweep_verdicts`, what `show`, `compare` and the report
say), and the search's stepping over the same points (`stats.search`). Prints a table for docs/methodology.md
("Saturation": one curve, one answer).

    .venv/bin/python bench/curve_sections.py [--trials 2000]

Every point of a curve is an iodepth (1, 2, 4, ...) with every I/O slot busy (mean latency = iodepth / IOPS, by
Little's law, for each repetition) and nothing of this host busy, so each point alone is under-driven and only the
sweep can say more. A contradiction is one of:

- a point's reading says "the limit is elsewhere" while a higher load is shown to raise IOPS over it (the knee's
  rule: `judge_change` rising), or the knee says the curve still rises past it;
- the knee, or a capped verdict, says IOPS are flat from a load X while a higher load is shown to raise them over X;
- the capped verdict starts elsewhere than the knee;
- a point's reading says "more load raises IOPS" where the knee or the capped verdict say the curve is flat;
- the search says "IOPS saturated" from a step while the knee over the points it measured says IOPS still rise
  past that step, or that step's reading over those points says more load raises IOPS.

``old_reading`` is the per-point rule this replaced (the next load only), for the "before" column.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from dataclasses import dataclass

from storbench.model.objective import LatencyObjective
from storbench.stats.bottleneck import Bottleneck, BottleneckInputs, BottleneckVerdict, CurveStep, judge
from storbench.stats.estimate import Estimate, estimate
from storbench.stats.knee import KneeKind, locate_knee
from storbench.stats.point_verdicts import sweep_reading, sweep_verdicts
from storbench.stats.search import STEP, SearchPoint, next_values, search_answer
from storbench.stats.trend import Trend, judge_change

ELSEWHERE = "the limit is elsewhere"
RAISES = "more load raises IOPS"
NEVER_MISSED = LatencyObjective("lat_mean_ns", "mean", 1e18)  # the search's objective: always met

# (name, true mean IOPS per iodepth 1, 2, 4, ..., CV, repetitions per point)
SHAPES: tuple[tuple[str, tuple[float, ...], float, int], ...] = (
    ("rising (x1.9 a step)", (1000.0, 1900.0, 3600.0, 6800.0, 12900.0), 0.05, 3),
    ("flat", (3000.0,) * 5, 0.02, 3),
    ("noisy rising (x1.9 a step)", (1000.0, 1900.0, 3600.0, 6800.0, 12900.0), 0.25, 3),
    ("noisy flat", (3000.0,) * 5, 0.15, 3),
    ("capped (rises to 3,000)", (1000.0, 1900.0, 3000.0, 3000.0, 3000.0), 0.05, 3),
    ("creeping (+4 % a step)", tuple(1000.0 * 1.04**i for i in range(5)), 0.01, 3),
    ("flat then a jump (1,000 / 1,030 / 1,900)", (1000.0, 1030.0, 1900.0), 0.005, 3),
)


def old_reading(steps: Sequence[CurveStep], k: int) -> str | None:
    """The rule this replaced: an under-driven point judged against the next load only."""
    if k + 1 >= len(steps):
        return None
    change = judge_change(steps[k].throughput, steps[k + 1].throughput)
    return {Trend.RISING: RAISES, Trend.FLAT: ELSEWHERE, Trend.FALLING: ELSEWHERE}.get(change.trend)


def point_verdict(iodepth: int, iops: Estimate, lat: Estimate) -> BottleneckVerdict:
    """A point of the simulated sweep alone: nothing of this host busy, its slots as busy as Little's law says."""
    return judge(BottleneckInputs(
        host_cpu_busy_pct=10.0, host_cpu_pressure_pct=None, process_cpu_cores=(), client_cpu_cores=0.1,
        busiest_device="vdb", device_util_pct=20.0, device_queue_depth=None, busiest_interface="",
        interface_util_pct=None, interface_bytes_per_s=None, storage_node="", node_cpu_busy_pct=None,
        node_disk_util_pct=None, iops=iops.mean, in_flight=iops.mean * lat.mean / 1e9, ceiling_iops=None,
        iodepth=iodepth, jobs=1, ioengine="libaio"))


@dataclass(frozen=True)
class Sections:
    """What each section says of one simulated curve, and the contradictions between them (empty: none)."""

    contradictions: tuple[str, ...]
    old_contradictions: tuple[str, ...]
    knee: KneeKind
    search_stopped_early: bool  # the search called IOPS saturated where the whole sweep shows them rising past it


def _rises_past(iops: Sequence[Estimate], k: int) -> bool:
    """Some higher load is shown to raise IOPS over point k (the knee's rule)."""
    return any(judge_change(iops[k], iops[j]).trend is Trend.RISING for j in range(k + 1, len(iops)))


def _search(steps: Sequence[CurveStep], lat: Sequence[Estimate]) -> tuple[str, list[int]]:
    """The search stepping over the curve's points (point i at grid index STEP x i): why it stopped, and the
    points it measured."""
    grid = tuple(range(1, STEP * (len(steps) - 1) + 2))
    measured: dict[int, SearchPoint] = {}
    while True:
        values = next_values(grid, measured, NEVER_MISSED)
        if not values or (values[0] - 1) % STEP:  # done stepping: bisection asks for loads the curve has not
            break
        i = (values[0] - 1) // STEP
        measured[values[0]] = SearchPoint(values[0], steps[i].throughput, lat[i], lat[i])
    taken = sorted((load - 1) // STEP for load in measured)
    return search_answer(grid, measured, NEVER_MISSED).reason, taken


def sections(samples: Sequence[Sequence[float]]) -> Sections:
    """Every section's reading of one curve: ``samples`` the repetitions' IOPS per point, iodepth 1, 2, 4, ..."""
    depths = [2**i for i in range(len(samples))]
    iops = [estimate(list(values)) for values in samples]
    lat = [estimate([depth / v * 1e9 for v in values]) for depth, values in zip(depths, samples, strict=True)]
    assert all(e is not None for e in (*iops, *lat))
    iops_e = [e for e in iops if e is not None]
    lat_e = [e for e in lat if e is not None]
    steps = [CurveStep(load=depth, label=f"iodepth {depth}", throughput=i, lat_mean_ns=m.mean,
                       verdict=point_verdict(depth, i, m))
             for depth, i, m in zip(depths, iops_e, lat_e, strict=True)]
    verdicts = sweep_verdicts(steps, [s.verdict for s in steps], "IOPS")
    knee = locate_knee(iops_e, lat_e)
    flat_from = knee.index  # where the knee says IOPS stop rising
    capped = [i for i, v in enumerate(verdicts) if v.kind is Bottleneck.CAPPED]
    found: list[str] = []
    old: list[str] = []
    for k in range(len(steps)):
        still = knee.kind is KneeKind.STILL_RISING or (knee.index is not None and knee.index > k) or (
            knee.pending_from is not None and knee.pending_from > k)
        flat_here = (flat_from is not None and flat_from <= k) or (bool(capped) and capped[0] <= k)
        for said, into in (((ELSEWHERE if ELSEWHERE in verdicts[k].evidence
                             else RAISES if RAISES in verdicts[k].evidence else None), found),
                           (old_reading(steps, k) if verdicts[k].kind is Bottleneck.UNDER_DRIVEN else None, old)):
            if said == ELSEWHERE and (_rises_past(iops_e, k) or still):
                into.append(f"{ELSEWHERE} at {steps[k].label} while IOPS rise past it")
            if said == RAISES and flat_here:
                into.append(f"{RAISES} at {steps[k].label} on the curve's plateau")
    for where, what in ((flat_from, "knee"), (capped[0] if capped else None, "capped")):
        if where is not None and _rises_past(iops_e, where):
            found.append(f"{what} at {steps[where].label} while a higher load rises over it")
    if capped and capped[0] != knee.index:
        found.append(f"capped from {steps[capped[0]].label}, knee {knee.kind.value} {knee.index}")
    reason, taken = _search(steps, lat_e)
    early = False
    if reason.startswith("IOPS saturated") and len(taken) >= 2:
        at = taken[-2]
        sub = [steps[i] for i in taken]
        sub_knee = locate_knee([iops_e[i] for i in taken], [lat_e[i] for i in taken])
        if sub_knee.kind is KneeKind.STILL_RISING or (sub_knee.index is not None and sub_knee.index > len(taken) - 2):
            found.append("search saturated where the knee over its points still rises")
        reading = sweep_reading(sub, len(taken) - 2)
        if reading is not None and RAISES in reading:
            found.append("search saturated where its step's reading says more load raises IOPS")
        early = _rises_past(iops_e, at)
    return Sections(tuple(found), tuple(old), knee.kind, early)


def simulate(means: Sequence[float], cv: float, repetitions: int, trials: int, seed: int) -> dict[str, float]:
    """Shares of ``trials`` curves: with a contradiction (now, and with the old per-point rule), and whose search
    stopped where the whole sweep still rises."""
    rng = random.Random(seed)
    counts = {"now": 0, "before": 0, "search early": 0}
    for _ in range(trials):
        result = sections([[max(rng.gauss(m, m * cv), 1.0) for _ in range(repetitions)] for m in means])
        counts["now"] += bool(result.contradictions)
        counts["before"] += bool(result.old_contradictions)
        counts["search early"] += result.search_stopped_early
    return {key: count / trials for key, count in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    args = parser.parse_args()
    print("| curve (true IOPS, iodepth 1, 2, 4, ...) | CV | n | contradiction, next-load rule (before) | "
          "contradiction now | search stopped where the sweep still rises |")
    print("|---|---:|---:|---:|---:|---:|")
    for seed, (name, means, cv, n) in enumerate(SHAPES):
        r = simulate(means, cv, n, args.trials, seed)
        print(f"| {name} | {cv:.1%} | {n} | {r['before']:.1%} | {r['now']:.1%} | {r['search early']:.1%} |")


if __name__ == "__main__":
    main()
