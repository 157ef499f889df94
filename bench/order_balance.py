#!/usr/bin/env python3
"""How evenly the interleaved order (`schedule.interleaved_round`) spreads what the order itself does to a
repetition, per case, over 2 x cases rounds: how often it runs right after itself (its cache warm: the round's
last case begins the next round), how often it is the first case after an OSD restart for a live option (its cache
cold), and its mean position in its rounds (linear drift). Beside the former order (every round the mirror of the
last, no turning). Prints the table in docs/methodology.md ("Order of repetitions"). Pure: no fio, no lab.

    .venv/bin/python bench/order_balance.py
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

from storbench.config import load_plan_text
from storbench.lab.ceph_conf import osd_options
from storbench.model import Case
from storbench.plan import expand
from storbench.schedule import interleaved_round, live_settings_together
from storbench.units import format_bytes

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
Order = Callable[[Sequence[Case], int], list[Case]]


def former_round(cases: Sequence[Case], rep: int) -> list[Case]:
    ordered = live_settings_together(cases)
    return ordered if rep % 2 == 0 else ordered[::-1]


def label(case: Case) -> str:
    settings = " ".join(f"{k}={format_bytes(int(v)) if k == 'cache_size' else v}" for k, v in case.lab.pairs()
                        if k in ("pool_size", "cache_size"))
    return f"{case.workload.rw} qd{case.workload.iodepth} {settings}".strip()


def tally(cases: Sequence[Case], order: Order, rounds: int) -> dict[str, tuple[int, int, float]]:
    """Per case: (times right after itself, times first after a restart or the bring-up, mean position)."""
    sequence = [(rep, case) for rep in range(rounds) for case in order(cases, rep)]
    warm = {c.case_id: 0 for c in cases}
    cold = {c.case_id: 0 for c in cases}
    positions: dict[str, list[int]] = {c.case_id: [] for c in cases}
    for rep in range(rounds):
        for position, case in enumerate(order(cases, rep)):
            positions[case.case_id].append(position)
    cold[sequence[0][1].case_id] += 1
    for (_, before), (_, after) in itertools.pairwise(sequence):
        if before.case_id == after.case_id:
            warm[after.case_id] += 1
        live = [osd_options(c.lab.ceph) if c.lab.ceph is not None else () for c in (before, after)]
        if live[0] != live[1]:
            cold[after.case_id] += 1
    return {label(c): (warm[c.case_id], cold[c.case_id], statistics.fmean(positions[c.case_id])) for c in cases}


def plans() -> list[tuple[str, list[Case]]]:
    found = []
    for name in ("ceph-replica.yaml", "ceph-cache-size.yaml"):
        loaded = load_plan_text((EXAMPLES / name).read_text(), name)
        found.append((name, expand(loaded)))
    sweep = ("name: qd\ntargets:\n  t: {kind: path, path: /tmp/x, size: 1MiB}\n"
             "workload: {rw: randread, bs: 4k, iodepth: [1, 4, 16, 64], runtime: 1s}\n")
    found.append(("an iodepth sweep of 4", expand(load_plan_text(sweep, "qd.yaml"))))
    return found


def main() -> None:
    print("| plan | case | after itself (former) | first after a restart (former) | mean position (former) |")
    print("|---|---|---:|---:|---:|")
    for name, cases in plans():
        rounds = 2 * len(cases)
        now, before = tally(cases, interleaved_round, rounds), tally(cases, former_round, rounds)
        for case in sorted(now):
            (w, c, p), (w0, c0, p0) = now[case], before[case]
            print(f"| {name} ({rounds} rounds) | {case} | {w} ({w0}) | {c} ({c0}) | {p:.2f} ({p0:.2f}) |")


if __name__ == "__main__":
    main()
