#!/usr/bin/env python3
"""Many light clients on this machine: N fio servers in network namespaces, one case run on all of them.

Prints how long bringing the hosts up took, the run's wall time, the start skew between clients, how many
clients reported, and how long merging their results took (histograms added, records built). Asserts
nothing about time. Needs root (network namespaces).

    .venv/bin/python bench/many_clients.py [--clients 140] [--runtime 3] [--repeat 2]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLAN = """
name: many-clients-bench
targets:
  scratch: {{kind: path, path: {data}, size: 4MiB}}
workload:
  rw: randread
  bs: 4k
  iodepth: 1
  runtime: {runtime}s
  direct: false
repeat: {repeat}
clients: {clients}
lab:
  hosts: {{count: {clients}}}
telemetry: {{enabled: false}}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=140)
    parser.add_argument("--runtime", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    from storbench.fio.parse import merge_clients
    from storbench.records import repetition_records
    from storbench.store import open_store

    with tempfile.TemporaryDirectory(prefix="storbench-bench-") as work_dir:
        work = Path(work_dir)
        plan = work / "plan.yaml"
        plan.write_text(PLAN.format(data=work / "data", runtime=args.runtime, repeat=args.repeat,
                                    clients=args.clients))
        db = work / "r.db"
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "storbench", "run", str(plan), "--db", str(db)],
                              capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        lab_lines = [line for line in done.stdout.splitlines() if line.startswith("hosts lab:")]
        if done.returncode not in (0, 1):
            print(done.stdout[-2000:], done.stderr[-2000:])
            return done.returncode
        store = open_store(db)
        loaded = time.perf_counter()
        repetitions = store.repetitions()
        load_s = time.perf_counter() - loaded
        store.close()
        merge_started = time.perf_counter()
        for rep in repetitions:
            merge_clients(rep.clients)
        merge_s = (time.perf_counter() - merge_started) / max(1, len(repetitions))
        records_started = time.perf_counter()
        records = repetition_records(repetitions)
        records_s = time.perf_counter() - records_started
    skews = [r.start_skew_s for r in repetitions if r.start_skew_s is not None]
    print(f"clients: {args.clients} fio servers in network namespaces, {len(repetitions)} repetitions of "
          f"{args.runtime}s; status: {', '.join(sorted({r.status.value for r in repetitions}))}")
    for line in lab_lines:
        print(f"  {line}")
    print(f"run wall time: {wall:.1f}s (bring-up, {len(repetitions)} repetitions, teardown)")
    print(f"clients reporting per repetition: {sorted({len(r.clients) for r in repetitions})}")
    if skews:
        print(f"start skew: median {statistics.median(skews) * 1000:.0f} ms, max {max(skews) * 1000:.0f} ms")
    print(f"aggregation: load {load_s * 1000:.0f} ms for all repetitions; merge {merge_s * 1000:.1f} ms per "
          f"repetition ({args.clients} clients' histograms); records {records_s * 1000:.0f} ms")
    iops = [r.iops for r in records if r.iops is not None]
    if iops:
        print(f"aggregate IOPS per repetition: {', '.join(f'{v:,.0f}' for v in iops)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
