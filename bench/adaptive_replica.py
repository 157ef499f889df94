#!/usr/bin/env python3
"""Replica 2 vs 3 on the Ceph lab, adaptive (`until: decided`) vs a fixed 6 repetitions, side by side.

Runs examples/ceph-replica.yaml as it is (rounds stop when every compared metric is decided) and the same plan
with `repeat: 6`, one after the other, then prints for each: wall time to the answer, rounds, and per
workload the IOPS change with its interval, the interval's width and the verdict. Goals (printed, not
asserted): the adaptive run decides writes (interval excluding zero) in under 10 minutes on a 2-core machine,
and neither run calls reads different. Needs root and the labs (scripts/setup.sh --labs). About 20 minutes.

    .venv/bin/python bench/adaptive_replica.py [--out out/bench-adaptive-replica]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from runs import timed_run  # bench/runs.py, beside this script

ROOT = Path(__file__).resolve().parent.parent
PLAN = ROOT / "examples" / "ceph-replica.yaml"


def fixed_plan(text: str, repeat: int) -> str:
    """The example with a fixed repeat instead of stopping when decided (and without the compare block)."""
    text = re.sub(r"^repeat: .*$", f"repeat: {repeat}", text, flags=re.M)
    text = re.sub(r"^compare: .*\n", "", text, flags=re.M)
    return text.replace("name: ceph-replica", "name: ceph-replica-fixed")


def run_arm(name: str, plan: Path, out: Path) -> dict[str, object]:
    db, wall_s, done = timed_run(name, plan, out)
    if done.returncode != 0:
        return {"name": name, "wall_s": wall_s, "rows": []}
    compared = subprocess.run([sys.executable, "-m", "storbench", "compare", "--db", str(db), "--baseline",
                               "pool_size=2", "--candidate", "pool_size=3", "--format", "json"],
                              capture_output=True, text=True, check=True)
    rows = [r for r in json.loads(compared.stdout) if r["metric"] == "iops"]
    looks = [line for line in done.stdout.splitlines() if re.search(r"after \d+ rounds: ", line)]
    return {"name": name, "wall_s": wall_s, "rows": rows, "looks": looks, "decided": decided_at(db)}


def decided_at(db: Path) -> dict[str, tuple[int, float]]:
    """Per compared point of an adaptive run: (rounds, minutes from the run's first start to the end of that
    round) when the stopping rule first decided it, replayed from the store with storbench's own rule."""
    from storbench.stats.convergence import convergence
    from storbench.stats.observations import observations
    from storbench.stats.run_questions import adaptive_questions
    from storbench.store import open_store

    store = open_store(db)
    runs = store.runs()
    repetitions = store.repetitions([r.run_id for r in runs])
    seen = observations(repetitions)
    start = min(r.started_at_s for r in repetitions)
    out = {}
    for question in adaptive_questions(runs):
        for item in convergence(seen, question.baseline, question.candidate, question.metrics, question.plan):
            first = item.first_decided
            if first is not None:
                end = max(r.finished_at_s for r in repetitions if r.rep_index < first)
                out[f"{item.comparison.candidate.rw}"] = (first, (end - start) / 60)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "out" / "bench-adaptive-replica"))
    parser.add_argument("--fixed", type=int, default=6, help="repetitions of the fixed arm")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fixed = out / "ceph-replica-fixed.yaml"
    fixed.write_text(fixed_plan(PLAN.read_text(), args.fixed))

    arms = [run_arm("adaptive", PLAN, out), run_arm(f"fixed-{args.fixed}", fixed, out)]
    print(f"replica 2 vs 3, 4k random write and read, IOPS change of size 3 against size 2 ({PLAN.name})")
    print(f"{'arm':<10} {'wall':>7} {'point':<32} {'n':>3} {'change':>8} {'interval':>20} {'width':>7} "
          f"{'method':<10} verdict")
    for arm in arms:
        rows = arm["rows"]
        assert isinstance(rows, list)
        if not rows:
            print(f"{arm['name']:<10} {arm['wall_s'] / 60:>6.1f}m  (no result)")
        for row in rows:
            low, high = row.get("change_ci_low_pct"), row.get("change_ci_high_pct")
            interval = f"[{low:+.1f}, {high:+.1f}] %" if low is not None and high is not None else "-"
            width = f"{high - low:.1f}" if low is not None and high is not None else "-"
            print(f"{arm['name']:<10} {arm['wall_s'] / 60:>6.1f}m {row['point']:<32} {row['candidate_n']:>3} "
                  f"{row['change_pct']:>+7.1f}% {interval:>20} {width:>7} {row.get('interval', ''):<10} "
                  f"{row['verdict']}")
    adaptive = arms[0]
    reads = [r for arm in arms for r in arm["rows"] if "randread" in r["point"]]  # type: ignore[union-attr]
    decided = adaptive.get("decided") or {}
    assert isinstance(decided, dict)
    for rw, (rounds, minutes) in sorted(decided.items()):
        print(f"adaptive: {rw} first decided after {rounds} rounds, {minutes:.1f} min into the run")
    writes = decided.get("randwrite")
    print("goal: adaptive decides writes in under 10 min: "
          + (f"{'yes' if writes[1] < 10 else 'no'}, {writes[1]:.1f} min" if writes else "no, never decided"))
    print("goal: no run calls reads different: "
          + ("yes" if all(r["verdict"] not in ("better", "worse") for r in reads) else "no"))
    looks = adaptive.get("looks") or []
    if looks:
        print("adaptive run's last looks:")
        for line in looks[-2:]:  # type: ignore[index]
            print(f"  {line.strip()}")
    print(f"logs and databases: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
