#!/usr/bin/env python3
"""Many light clients on this machine: N fio servers in network namespaces, one case run on all of them.

First the start skew, measured rather than estimated: the same job on every server, with fio's own
per-client latency log (every I/O, wall-clock stamped at completion, with its latency) telling when
each client's first I/O was issued and when it completed. Twice:
clients limited to 200 IOPS each and unthrottled ones. Three ways, alternating so drift on the machine hits
all, in an order that turns each round (no way always runs first, when the barrier's lead is still a guess):
one `fio --client` launch without a barrier (as storbench first made it); the barrier as a plain shell wait
(`date`, then `sleep` for what was left, fio dropping each file's cache as it opens it: storbench's barrier
until 2026-11); storbench's start barrier now (HostsExecutor.run_case on the hosts lab: bash reads the clock and
waits in one process at real-time priority, and storbench dropped the files' cache before the launch).
Beside the truth, what storbench stores as the repetition's skew.

Then a whole `storbench run`: how long bringing the hosts up took, the run's wall time, the start skew it
stored, how many clients reported, and how long merging their results took (histograms added, records built).
Asserts nothing about time. Needs root (network namespaces).

    .venv/bin/python bench/many_clients.py [--clients 140] [--runtime 3] [--repeat 2] [--skew-rounds 3]
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


def _first_ios_ms(log_dir: Path) -> list[tuple[float, float]]:
    """Each client's first I/O: when it was issued and when it completed (ms since the epoch). fio's latency log
    stamps an I/O at its completion (log_unix_epoch: wall clock, ms) with its latency (ns): issued = completed
    less the latency."""
    firsts = []
    for log in sorted(log_dir.glob("c*_lat.*.log*")):
        line = log.read_text().split("\n", 1)[0]
        if line:
            completed_ms, lat_ns = (int(field) for field in line.split(",")[:2])
            firsts.append((completed_ms - lat_ns / 1e6, float(completed_ms)))
    return firsts


ARMS = (("none", "one fio --client launch, no barrier"), ("shell", "barrier: the shell's date + sleep"),
        ("now", "storbench's start barrier"))


def _spread_s(moments_ms: list[float]) -> float:
    return (max(moments_ms) - min(moments_ms)) / 1000


def start_skew_truth(clients: int, runtime_s: int, rounds: int, rate_iops: int | None) -> None:
    import contextlib
    import functools
    from unittest import mock

    import storbench.fio.jobfile as jobfile
    from storbench.execute.base import PLAIN_FIO
    from storbench.execute.hosts import HostsExecutor
    from storbench.fio.jobfile import JobBinding, render_client_jobs
    from storbench.fio.outcome import start_skew_s
    from storbench.lab.hosts import HostsLab
    from storbench.model import Case, PathTarget, WorkloadPoint

    with tempfile.TemporaryDirectory(prefix="storbench-skew-") as work_dir:
        work = Path(work_dir)
        (work / "data").mkdir()
        lab = HostsLab(work / "lab")
        info = lab.up(clients, "fio")
        try:
            case = Case("skew", PathTarget("t", path=str(work / "data"), size_bytes=4 << 20),
                        WorkloadPoint("randread", 4096, 1, 1, float(runtime_s), 0.0, False, "psync",
                                      size_bytes=4 << 20), clients=clients)
            binding = JobBinding(options=(("directory", str(work / "data")),
                                          ("filename_format", "storbench.$jobnum.$filenum")))
            before = HostsExecutor("fio", info.servers)  # the barrier as it was: fio drops each file's cache
            executor = HostsExecutor("fio", info.servers, lab_servers=True)  # as `storbench run` makes it here
            issued: dict[str, list[float]] = {arm: [] for arm, _ in ARMS}
            completed: dict[str, list[float]] = {arm: [] for arm, _ in ARMS}
            stored: dict[str, list[float]] = {arm: [] for arm, _ in ARMS}
            shell_wait = functools.partial(jobfile.start_barrier_line, shell_only=True)
            for round_index in range(rounds):
                for arm, _ in ARMS[round_index % len(ARMS):] + ARMS[:round_index % len(ARMS)]:
                    logs = work / f"logs-{arm}-{round_index}"
                    logs.mkdir()
                    texts = [text.replace("[global]\n", f"[global]\nwrite_lat_log={logs}/c{index}\n"
                                          "log_avg_msec=0\nlog_unix_epoch=1\n"
                                          + (f"rate_iops={rate_iops}\n" if rate_iops else ""), 1)
                             for index, text in enumerate(render_client_jobs(case, binding, round_index), 1)]
                    if arm == "none":
                        result = before.run_clients(texts, list(info.servers), timeout_s=runtime_s + 120)
                        estimate = start_skew_s(result.stamped_lines)
                    else:  # the executor's own barrier, or (for this comparison only) the shell's wait
                        with (mock.patch.object(jobfile, "start_barrier_line", shell_wait) if arm == "shell"
                              else contextlib.nullcontext()):
                            outcome = (before if arm == "shell" else executor).run_case(
                                case, texts, round_index, runtime_s + 120.0, PLAIN_FIO)
                        estimate = outcome.start_skew_s
                    firsts = _first_ios_ms(logs)
                    if len(firsts) == clients:
                        issued[arm].append(_spread_s([at for at, _ in firsts]))
                        completed[arm].append(_spread_s([at for _, at in firsts]))
                    if estimate is not None:
                        stored[arm].append(estimate)
        finally:
            lab.down()
    load = f"{rate_iops} IOPS per client" if rate_iops else "unthrottled clients"
    print(f"start skew at {clients} namespace hosts, {load}, {rounds} rounds: true spread of the clients' first I/O,"
          " issued | completed (median, max)")
    for arm, label in ARMS:
        if issued[arm]:
            print(f"  {label:36s} {statistics.median(issued[arm]) * 1000:4.0f}, {max(issued[arm]) * 1000:4.0f} ms"
                  f" | {statistics.median(completed[arm]) * 1000:4.0f}, {max(completed[arm]) * 1000:4.0f} ms"
                  + (f"   (stored: median {statistics.median(stored[arm]) * 1000:.0f} ms)" if stored[arm] else ""))
        else:
            print(f"  {label}: no complete set of client logs")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=140)
    parser.add_argument("--runtime", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--skew-rounds", type=int, default=3, help="rounds of the before/after skew measurement")
    args = parser.parse_args()
    if args.skew_rounds:
        for rate_iops in (200, None):
            start_skew_truth(args.clients, args.runtime, args.skew_rounds, rate_iops)

    if not args.repeat:
        return 0
    from storbench.fio.merge import merge_clients
    from storbench.records import record
    from storbench.stats.observations import observations
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
        records = [record(o) for o in observations(repetitions)]
        records_s = time.perf_counter() - records_started
    skews = [r.start_skew_s for r in repetitions if r.start_skew_s is not None]
    print(f"clients: {args.clients} fio servers in network namespaces, {len(repetitions)} repetitions of "
          f"{args.runtime}s; status: {', '.join(sorted({r.status.value for r in repetitions}))}")
    for line in lab_lines:
        print(f"  {line}")
    print(f"run wall time: {wall:.1f}s (bring-up, {len(repetitions)} repetitions, teardown)")
    print(f"clients reporting per repetition: {sorted({len(r.clients) for r in repetitions})}")
    if skews:
        print(f"start skew stored: {', '.join(f'{v * 1000:.0f}' for v in skews)} ms;"
              f" median {statistics.median(skews) * 1000:.0f} ms, max {max(skews) * 1000:.0f} ms")
    print(f"aggregation: load {load_s * 1000:.0f} ms for all repetitions; merge {merge_s * 1000:.1f} ms per "
          f"repetition ({args.clients} clients' histograms); records {records_s * 1000:.0f} ms")
    iops = [r.iops for r in records if r.iops is not None]
    if iops:
        print(f"aggregate IOPS per repetition: {', '.join(f'{v:,.0f}' for v in iops)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
