#!/usr/bin/env python3
"""storbench vs plain fio, side by side: IOPS ratio and wall-time overhead.

The same job file is run by `storbench run` and by fio by hand, alternated (A B B A ...) so drift hits
both equally. Prints figures; asserts nothing about time.

    .venv/bin/python bench/overhead.py [--pairs 6] [--runtime 2] [--rw randread] [--bs 4k] [--iodepth 16]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLAN = """
name: overhead
targets:
  disk: {{kind: path, path: {data}, size: {size}}}
workload:
  rw: {rw}
  bs: {bs}
  iodepth: {iodepth}
  runtime: {runtime}s
  direct: true
repeat: 1
"""


def storbench_once(plan: Path, db: Path) -> tuple[float, float, str]:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "storbench", "run", str(plan), "--db", str(db)], check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    conn = sqlite3.connect(db)
    rep_id, job_text = conn.execute("SELECT id, job_text FROM repetitions ORDER BY id DESC LIMIT 1").fetchone()
    iops = conn.execute("SELECT SUM(m.iops) FROM measurements m JOIN clients c ON c.id = m.client_id "
                        "WHERE c.repetition_id = ?", (rep_id,)).fetchone()[0]
    conn.close()
    return float(iops), wall, job_text


def fio_once(job_text: str, work: Path) -> tuple[float, float]:
    job = work / "by-hand.fio"
    out = work / "by-hand.json"
    job.write_text(job_text)
    started = time.perf_counter()
    subprocess.run(["fio", "--output-format=json+", f"--output={out}", str(job)], check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    data = json.loads(out.read_text())
    iops = sum(job["read"]["iops"] + job["write"]["iops"] for job in data["jobs"])
    return iops, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--runtime", type=int, default=2)
    parser.add_argument("--rw", default="randread")
    parser.add_argument("--bs", default="4k")
    parser.add_argument("--iodepth", type=int, default=16)
    parser.add_argument("--size", default="128MiB")
    parser.add_argument("--dir", default=None, help="directory for test files (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="storbench-bench-") as tmp:
        work = Path(tmp)
        data = Path(args.dir) if args.dir else work / "data"
        plan = work / "plan.yaml"
        plan.write_text(PLAN.format(data=data, size=args.size, rw=args.rw, bs=args.bs, iodepth=args.iodepth,
                                    runtime=args.runtime))
        db = work / "results.db"
        # warm-up: lays out the file and gives us the exact job text storbench uses
        _, _, job_text = storbench_once(plan, db)
        rows = []
        for pair in range(args.pairs):
            order = ("storbench", "fio") if pair % 2 == 0 else ("fio", "storbench")
            result: dict[str, tuple[float, float]] = {}
            for who in order:
                if who == "storbench":
                    iops, wall, _ = storbench_once(plan, db)
                else:
                    iops, wall = fio_once(job_text, work)
                result[who] = (iops, wall)
            rows.append(result)
            sb, fio = result["storbench"], result["fio"]
            print(f"pair {pair + 1}: storbench {sb[0]:>10,.0f} IOPS {sb[1]:6.2f}s | fio {fio[0]:>10,.0f} IOPS "
                  f"{fio[1]:6.2f}s | ratio {sb[0] / fio[0]:.3f} | overhead {sb[1] - fio[1]:+.2f}s")
        ratios = [r["storbench"][0] / r["fio"][0] for r in rows]
        overhead = [r["storbench"][1] - r["fio"][1] for r in rows]
        fio_wall = statistics.median(r["fio"][1] for r in rows)
        print()
        print(f"workload: {args.rw} bs={args.bs} iodepth={args.iodepth} runtime={args.runtime}s, {args.pairs} pairs")
        print(f"IOPS ratio storbench/fio: median {statistics.median(ratios):.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
        print(f"wall-time overhead per run: median {statistics.median(overhead):+.2f}s on fio's {fio_wall:.2f}s "
              f"(budget: 5% of fio's time + 1 s = {0.05 * fio_wall + 1:.2f}s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
