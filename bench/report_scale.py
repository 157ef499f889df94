#!/usr/bin/env python3
"""Scale of the statistics and the report: json+ histograms of many clients x many points, merged, and the
HTML report rendered. Prints seconds; asserts nothing about time.

    .venv/bin/python bench/report_scale.py [--clients 140] [--points 50] [--repeat 3] [-o /tmp/scale.html]

Each client's measurement is real fio json+ output (tests/fixtures) with its latency bins shifted and scaled
per client, so every client has different bins and the merge does real work.
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from plotly.offline import get_plotlyjs

from storbench.case_ids import case_id_for
from storbench.fio.merge import client_measurement
from storbench.fio.parse import parse_fio_json
from storbench.model import (
    Case,
    ClientMeasurement,
    LatencyHistogram,
    LatencySummary,
    PathTarget,
    RunInfo,
    Status,
    StoredRepetition,
    WorkloadPoint,
)
from storbench.report.build import build_report
from storbench.report.html import render_html
from storbench.stats.observations import observations

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "randrw-numjobs2.jsonplus.json"


def fio_bin_values() -> np.ndarray:
    """fio's latency bin values (stat.c plat_idx_to_val, FIO_IO_U_PLAT_BITS=6, 1856 bins)."""
    values = []
    for idx in range(29 * 64):
        if idx < 128:
            values.append(idx)
            continue
        error_bits = (idx >> 6) - 1
        values.append(int((1 << (error_bits + 6)) + (idx % 64 + 0.5) * (1 << error_bits)))
    return np.array(values, dtype=np.int64)


FIO_BINS = fio_bin_values()


def _shift(summary: LatencySummary, factor: float) -> LatencySummary:
    """Every latency scaled by ``factor``, snapped back onto fio's bin grid as fio would have binned it."""
    assert summary.histogram is not None
    scaled = np.asarray(summary.histogram.values_ns) * factor
    snapped = FIO_BINS[np.clip(np.searchsorted(FIO_BINS, scaled), 0, FIO_BINS.size - 1)]
    bins = LatencyHistogram.from_arrays(snapped, summary.histogram.counts)
    return replace(summary, histogram=bins, mean_ns=summary.mean_ns * factor, min_ns=int(summary.min_ns * factor),
                   max_ns=int(summary.max_ns * factor))


def synthetic_clients(template: ClientMeasurement, count: int, rng: random.Random) -> tuple[ClientMeasurement, ...]:
    clients = []
    for index in range(count):
        factor = rng.uniform(0.7, 1.6)
        directions = tuple(replace(m, iops=m.iops / factor, clat=_shift(m.clat, factor), lat=_shift(m.lat, factor))
                           for m in template.directions)
        clients.append(replace(template, client=f"client-{index:03d}", directions=directions))
    return tuple(clients)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=140)
    parser.add_argument("--points", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=1, help="repetitions per point")
    parser.add_argument("-o", "--output", default="/tmp/storbench-scale-report.html")
    args = parser.parse_args()
    template = client_measurement(parse_fio_json(FIXTURE.read_text()))
    rng = random.Random(42)
    target = PathTarget(name="cluster", path="/mnt/shared", size_bytes=1 << 30)
    repetitions = []
    sizes = [4096 << (i % 10) for i in range(args.points)]
    depths = [1 << (i // 10) for i in range(args.points)]
    started = time.perf_counter()
    for point in range(args.points):
        workload = WorkloadPoint(rw="randrw", rwmixread=70, bs_bytes=sizes[point], iodepth=depths[point], numjobs=2,
                                 runtime_s=60, ramp_s=10, direct=True, ioengine="libaio", size_bytes=1 << 30)
        case = Case(case_id_for(target, workload, args.clients), target, workload, clients=args.clients)
        for rep in range(args.repeat):
            repetitions.append(StoredRepetition(
                repetition_id=len(repetitions) + 1, run_id=1, case=case, rep_index=rep, status=Status.OK,
                started_at_s=1000.0 + 70 * len(repetitions), finished_at_s=1070.0 + 70 * len(repetitions),
                fio_version="fio-3.33", error="", clients=synthetic_clients(template, args.clients, rng),
                job_text="[global]\n"))
    built = time.perf_counter()
    measured = observations(repetitions)
    merged = time.perf_counter()
    run = RunInfo(run_id=1, plan_name="scale", plan_text="name: scale\n", source="run", storbench_version="bench",
                  fio_version="fio-3.33", host="bench", kernel="bench", run_order="interleaved", seed=0, tags=(),
                  started_at_s=1000.0, finished_at_s=None)
    document = build_report("scale benchmark", [run], repetitions, measured)
    html = render_html(document, get_plotlyjs())
    rendered = time.perf_counter()
    Path(args.output).write_text(html)
    bins = sum(len(m.lat.histogram.bins) for m in template.directions if m.lat.histogram)
    print(f"{args.points} points x {args.clients} clients x {args.repeat} repetitions "
          f"({args.points * args.clients * args.repeat} client measurements, ~{bins} latency bins each per direction)")
    print(f"generate synthetic data: {built - started:6.2f} s (not part of the goal)")
    print(f"merge clients (I/O sums, clat+lat bins, percentiles): {merged - built:6.2f} s")
    print(f"statistics + figures + HTML ({len(document.figures)} figures, {len(html) / 1e6:.1f} MB): "
          f"{rendered - merged:6.2f} s")
    print(f"merge + report: {rendered - built:6.2f} s (goal: under 5 s)   -> {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
