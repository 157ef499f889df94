"""What the benchmark scripts share: one timed `storbench run` of a plan into a fresh database, its output kept."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path


def timed_run(name: str, plan: Path, out: Path) -> tuple[Path, float, subprocess.CompletedProcess[str]]:
    """Run ``plan`` into ``out/NAME.db`` (removed first), its output in ``out/NAME.log``: (database, wall seconds,
    the finished process). A failure is said on standard error; the caller decides what it means."""
    db = out / f"{name}.db"
    db.unlink(missing_ok=True)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "storbench", "run", str(plan), "--db", str(db)],
                          capture_output=True, text=True, check=False)
    wall_s = time.perf_counter() - started
    (out / f"{name}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        print(f"{name}: storbench run failed ({done.returncode}); see {out / f'{name}.log'}", file=sys.stderr)
    return db, wall_s, done
