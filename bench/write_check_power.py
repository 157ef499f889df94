#!/usr/bin/env python3
"""How often `check_writes` sees acknowledged writes a storage lost, by the order its writer visits its blocks.

A storage that loses the writes it acknowledged during a window (the volume lab's `lose-writes`: its data as it was
at the fault, served from the restore on) is caught only through blocks whose last write before the read-back fell
in that window: a block written again after the restore holds that later write, and the lost one cannot be seen.
Simulated: a writer at `iops` writes a second over `blocks` blocks, a loss window of `window` seconds, the read-back
`after` seconds past its end. Two orders: each write to a block drawn at random (storbench before this script),
and each block once per pass in a shuffled order (now). Prints, per setting, the share of lost writes seen and how
often a loss goes wholly unseen (nothing reported lost or stale). Asserts nothing.

    .venv/bin/python bench/write_check_power.py [--trials 2000]
"""

from __future__ import annotations

import argparse

import numpy as np


def blocks_visited(order: str, writes: int, blocks: int, rng: np.random.Generator) -> np.ndarray:
    """The block each of ``writes`` writes goes to: drawn at random, or each block once per shuffled pass."""
    if order == "random":
        return rng.integers(blocks, size=writes)
    passes = -(-writes // blocks)
    return np.concatenate([rng.permutation(blocks) for _ in range(passes)])[:writes]


def trial(order: str, iops: float, blocks: int, before_s: float, window_s: float, after_s: float,
          rng: np.random.Generator) -> tuple[int, int]:
    """(writes lost, those seen at the read-back) in one repetition: writing from 0, the window from ``before_s``."""
    writes = int(iops * (before_s + window_s + after_s))
    visited = blocks_visited(order, writes, blocks, rng)
    times = np.arange(writes) / iops
    lost = (times >= before_s) & (times < before_s + window_s)
    last = np.full(blocks, -1)
    last[visited] = np.arange(writes)  # numpy assigns in order: each block's last write wins
    written = last[last >= 0]
    seen = int(np.count_nonzero(lost[written]))  # a block whose last write was lost reads an older one or none
    return int(np.count_nonzero(lost)), seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(20261130)
    print(f"{'order':>8} {'iops':>5} {'blocks':>6} {'window':>7} {'after':>6} {'lost':>6} {'seen %':>7} "
          f"{'unseen %':>9}")
    for iops, blocks in ((200, 2048), (200, 16384)):
        for window_s in (0.05, 0.2, 1.0):
            for after_s in (2.0, 10.0, 30.0, 60.0):
                for order in ("random", "passes"):
                    results = [trial(order, iops, blocks, 5.0, window_s, after_s, rng) for _ in range(args.trials)]
                    lost = sum(r[0] for r in results)
                    seen = sum(r[1] for r in results)
                    unseen = sum(1 for r in results if r[0] and not r[1]) / len(results)
                    print(f"{order:>8} {iops:>5} {blocks:>6} {window_s:>6.2f}s {after_s:>5.0f}s "
                          f"{lost / len(results):>6.1f} {100 * seen / max(lost, 1):>6.1f}% {100 * unseen:>8.1f}%")


if __name__ == "__main__":
    main()
