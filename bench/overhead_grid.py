#!/usr/bin/env python3
"""A 7-point iodepth grid three ways, side by side: `storbench run`, plain fio (the same job files by hand, one
after another) and fio-plot's bench-fio (when given). Arms alternate round by round (A B C, C B A, ...) so drift
hits all of them. Prints each arm's wall time, storbench's time outside fio (its start-up to the first fio, the gaps
between repetitions, the end after the last), bench-fio's start-up measured the same way (a shim fio on its PATH
stamps the first fio it measures with) and storbench's per-run overhead against plain fio; asserts nothing about
time.

    .venv/bin/python bench/overhead_grid.py [--rounds 3] [--runtime 1] [--bench-fio /path/to/bench-fio]

bench-fio is not a dependency: install it anywhere (python3 -m venv /tmp/fp && /tmp/fp/bin/pip install
fio-plot) and pass its path.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

DEPTHS = (1, 2, 4, 8, 16, 32, 64)
PLAN = """
name: overhead-grid
targets:
  disk: {{kind: path, path: {data}, size: 64MiB}}
workload:
  rw: randread
  bs: 4k
  iodepth: {depths}
  runtime: {runtime}s
  direct: false
repeat: 1
order: sequential
"""


def compile_storbench() -> None:
    """Byte-compile storbench as an install does (pip and pipx write every module's .pyc): a checkout run with
    PYTHONDONTWRITEBYTECODE set would otherwise compile each module again on every start."""
    import compileall

    import storbench

    compileall.compile_dir(Path(storbench.__file__).parent, quiet=1)


@dataclass(frozen=True)
class StorbenchTimes:
    """One `storbench run` of the grid: its wall time, the seconds inside fio's repetitions, and where the rest went
    (before the first fio starts, between repetitions, after the last one ends)."""

    wall_s: float
    in_fio_s: float
    before_first_s: float
    after_last_s: float

    @property
    def between_s(self) -> float:
        return self.wall_s - self.in_fio_s - self.before_first_s - self.after_last_s


def storbench_arm(plan: Path, db: Path) -> StorbenchTimes:
    """Times one `storbench run` of the grid; a repetition's start and end are fio's own process (storbench stamps
    them just before it starts fio and as soon as fio has ended)."""
    db.unlink(missing_ok=True)
    started_wall = time.time()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "storbench", "run", str(plan), "--db", str(db)], check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    ended_wall = started_wall + wall
    conn = sqlite3.connect(db)
    inside, first, last = conn.execute("SELECT SUM(finished_at_s - started_at_s), MIN(started_at_s), "
                                       "MAX(finished_at_s) FROM repetitions").fetchone()
    conn.close()
    return StorbenchTimes(wall_s=wall, in_fio_s=float(inside), before_first_s=float(first) - started_wall,
                          after_last_s=ended_wall - float(last))


def fio_arm(jobs: list[Path], work: Path) -> float:
    started = time.perf_counter()
    for job in jobs:
        subprocess.run(["fio", "--output-format=json+", f"--output={work / 'by-hand.json'}", str(job)], check=True,
                       stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


@dataclass(frozen=True)
class BenchFioTimes:
    """One bench-fio run of the grid: its wall time and its start-up, to the first fio it measures with."""

    wall_s: float
    before_first_s: float


FIO_SHIM = """#!/bin/sh
# bench-overhead's fio for bench-fio: stamps the first fio it measures with (not its `fio --version` check)
case "$*" in *--version*) ;; *) [ -e "$STORBENCH_BENCH_STAMP" ] || date +%s.%N > "$STORBENCH_BENCH_STAMP" ;; esac
exec {fio} "$@"
"""


def bench_fio_arm(bench_fio: str, data: Path, out: Path, runtime: int, shim_dir: Path) -> BenchFioTimes:
    """Times one bench-fio run; the fio on its PATH is a shim that stamps the first benchmark fio's start (bench-fio
    starts fio by name), so its start-up is measured as storbench's is: from the command to its first fio."""
    subprocess.run(["rm", "-rf", str(out)], check=True)
    out.mkdir()
    stamp = shim_dir / "first-fio"
    stamp.unlink(missing_ok=True)
    env = dict(os.environ, PATH=f"{shim_dir}:{os.environ.get('PATH', '')}", STORBENCH_BENCH_STAMP=str(stamp))
    started_wall = time.time()
    started = time.perf_counter()
    subprocess.run([bench_fio, "-d", str(data), "-t", "directory", "-s", "64M", "-o", str(out), "-b", "4k",
                    "--iodepth", *map(str, DEPTHS), "--numjobs", "1", "--runtime", str(runtime), "-m", "randread",
                    "--direct", "0", "--time-based", "--quiet"], check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - started
    return BenchFioTimes(wall_s=wall, before_first_s=float(stamp.read_text()) - started_wall)


def fio_shim(directory: Path) -> Path:
    """A directory whose `fio` stamps and then runs this machine's fio (for bench-fio's arm)."""
    real = shutil.which("fio")
    if real is None:
        raise SystemExit("fio is not on PATH")
    directory.mkdir()
    shim = directory / "fio"
    shim.write_text(FIO_SHIM.format(fio=shlex.quote(real)))
    shim.chmod(0o755)
    return directory


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runtime", type=int, default=1)
    parser.add_argument("--bench-fio", default=None, help="path of fio-plot's bench-fio (optional)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="storbench-bench-") as tmp:
        work = Path(tmp)
        plan = work / "plan.yaml"
        plan.write_text(PLAN.format(data=work / "data", depths=list(DEPTHS), runtime=args.runtime))
        db = work / "r.db"
        compile_storbench()
        storbench_arm(plan, db)  # warm-up: lays the file out, gives the exact job texts
        conn = sqlite3.connect(db)
        jobs = []
        for index, (text,) in enumerate(conn.execute("SELECT job_text FROM repetitions ORDER BY id")):
            jobs.append(work / f"job{index}.fio")
            jobs[-1].write_text(text)
        conn.close()
        (work / "bench-fio-data").mkdir()
        arms = ["storbench", "fio"] + (["bench-fio"] if args.bench_fio else [])
        walls: dict[str, list[float]] = {arm: [] for arm in arms}
        runs: list[StorbenchTimes] = []
        bench_fio_runs: list[BenchFioTimes] = []
        shim_dir = fio_shim(work / "fio-shim")
        for round_index in range(args.rounds):
            for arm in arms if round_index % 2 == 0 else reversed(arms):
                if arm == "storbench":
                    runs.append(storbench_arm(plan, db))
                    wall = runs[-1].wall_s
                elif arm == "fio":
                    wall = fio_arm(jobs, work)
                else:
                    bench_fio_runs.append(bench_fio_arm(args.bench_fio, work / "bench-fio-data",
                                                        work / "bench-fio-out", args.runtime, shim_dir))
                    wall = bench_fio_runs[-1].wall_s
                walls[arm].append(wall)
            print(f"round {round_index + 1}: " + " | ".join(f"{arm} {walls[arm][-1]:.2f}s" for arm in arms))
        median = {arm: statistics.median(values) for arm, values in walls.items()}
        fio_s, sb_s = median["fio"], median["storbench"]
        in_fio = statistics.median(run.in_fio_s for run in runs)
        outside = sb_s - in_fio
        before, between, after = (statistics.median(getattr(run, name) for run in runs)
                                  for name in ("before_first_s", "between_s", "after_last_s"))
        print()
        print(f"grid: randread 4k, iodepth {', '.join(map(str, DEPTHS))}, runtime {args.runtime}s each, "
              f"{args.rounds} rounds (medians)")
        print(f"plain fio, 7 runs by hand:   {fio_s:6.2f}s")
        if "bench-fio" in median:
            print(f"fio-plot's bench-fio:        {median['bench-fio']:6.2f}s  ({median['bench-fio'] / fio_s - 1:+.1%} "
                  "against plain fio)")
        print(f"storbench run:               {sb_s:6.2f}s  ({sb_s / fio_s - 1:+.1%} against plain fio)")
        print(f"  of which inside fio's runs {in_fio:6.2f}s  ({in_fio / fio_s - 1:+.1%} against plain fio: the "
              "per-run overhead; goal within 3 %)")
        print(f"  and outside fio             {outside:6.2f}s, of which (medians of each part):")
        print(f"    start-up, to the first fio {before:6.2f}s  (Python, imports, checks; goal at most 0.5 s)")
        if bench_fio_runs:
            peer = statistics.median(run.before_first_s for run in bench_fio_runs)
            print(f"    bench-fio's, the same way  {peer:6.2f}s  (its Python start-up and `fio --version` check, "
                  "this machine, these rounds)")
        print(f"    between repetitions        {between:6.2f}s  ({len(DEPTHS) - 1} gaps: store, progress, next job)")
        print(f"    after the last fio         {after:6.2f}s  (the closing table, the test file removed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
