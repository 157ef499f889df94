"""Exact merging of fio's jobs and clients: latency bins added and percentiles read from the sum, never averaged;
a client's CPU over its jobs; the processes of one client that ran in turn. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from storbench.model import (
    ClientMeasurement,
    DirectionMeasurement,
    FioOutput,
    JobOutput,
    LatencyHistogram,
    LatencySummary,
    count_sum,
)
from storbench.model import Direction as Dir


def merge_latency(parts: Sequence[LatencySummary]) -> LatencySummary:
    """Merge latency summaries of independent jobs or clients.

    Counts, min and max are exact; the mean is weighted by samples; the standard deviation is the
    pooled sample standard deviation (fio reports the n-1 form); bins are added. fio's own
    percentiles survive only for a single part (they cannot be merged).
    """
    with_samples = [p for p in parts if p.samples > 0]
    if not with_samples:
        return LatencySummary(samples=0, min_ns=0, max_ns=0, mean_ns=0.0, stddev_ns=0.0)
    if len(with_samples) == 1:
        return with_samples[0]
    total = count_sum((p.samples for p in with_samples), "latency samples")
    mean = sum(p.mean_ns * p.samples for p in with_samples) / total
    sum_sq = sum(
        (p.samples - 1) * p.stddev_ns**2 + p.samples * (p.mean_ns - mean) ** 2 for p in with_samples
    )
    stddev = math.sqrt(sum_sq / (total - 1)) if total > 1 else 0.0
    histograms = [p.histogram for p in with_samples]
    histogram = None
    if all(h is not None for h in histograms):
        histogram = LatencyHistogram.merge_all([h for h in histograms if h is not None])
    return LatencySummary(
        samples=total,
        min_ns=min(p.min_ns for p in with_samples),
        max_ns=max(p.max_ns for p in with_samples),
        mean_ns=mean,
        stddev_ns=stddev,
        histogram=histogram,
    )


def merge_directions(parts: Sequence[DirectionMeasurement], *, over_span: bool = False) -> DirectionMeasurement:
    """Jobs or clients that ran concurrently: I/Os, bytes, IOPS and bandwidth add up. ``over_span``: clones of one
    size-based job (each file or object done once), which started together but finish each when its share is done:
    the rate is every I/O over the longest one's runtime, as fio's own group report gives it (their rates summed
    would count a clone that finished early as still working: two clones at R and 0.6 R read 1.6 R for 1.2 R)."""
    if not parts:
        raise ValueError("nothing to merge")
    direction = parts[0].direction
    if any(p.direction != direction for p in parts):
        raise ValueError("cannot merge different directions")
    total_ios = count_sum((p.total_ios for p in parts), f"{direction.value} I/Os")
    io_bytes = count_sum((p.io_bytes for p in parts), f"{direction.value} bytes")
    runtime_ms = max(p.runtime_ms for p in parts)
    spanned = over_span and len(parts) > 1 and runtime_ms > 0
    return DirectionMeasurement(
        direction=direction,
        total_ios=total_ios,
        io_bytes=io_bytes,
        runtime_ms=runtime_ms,
        iops=total_ios * 1000 / runtime_ms if spanned else sum(p.iops for p in parts),
        bw_bytes_per_s=io_bytes * 1000 / runtime_ms if spanned else sum(p.bw_bytes_per_s for p in parts),
        clat=merge_latency([p.clat for p in parts]),
        lat=merge_latency([p.lat for p in parts]),
    )


def _merge_by_direction(groups: Sequence[Sequence[DirectionMeasurement]], *, over_span: bool = False
                        ) -> tuple[DirectionMeasurement, ...]:
    merged: list[DirectionMeasurement] = []
    for direction in Dir:
        parts = [m for group in groups for m in group if m.direction == direction and m.total_ios > 0]
        if parts:
            merged.append(merge_directions(parts, over_span=over_span))
    return tuple(merged)


def _job_runtime_ms(job: JobOutput) -> int:
    return job.runtime_ms or max((d.runtime_ms for d in job.directions), default=0)


def client_cpu_pct(jobs: Sequence[JobOutput]) -> tuple[float, float]:
    """A client's (usr, sys) CPU in percent of one CPU. fio's figures are per job, each over its own runtime: jobs
    that ran together (numjobs clones of a section) add up; sections stonewalled one after another (rw: metadata's
    create, stat and delete) weigh by their time, since their sum had counted three phases' cores as if at once
    (1.05 cores a job, "client-bound", from three phases at 0.35)."""
    sections: dict[str, list[JobOutput]] = {}
    for job in jobs:
        sections.setdefault(job.jobname, []).append(job)
    sums = [(max((_job_runtime_ms(j) for j in members), default=0), sum(j.usr_cpu_pct for j in members),
             sum(j.sys_cpu_pct for j in members)) for members in sections.values()]
    total_ms = sum(ms for ms, _, _ in sums)
    if len(sums) <= 1 or total_ms <= 0:
        return sum(u for _, u, _ in sums), sum(s for _, _, s in sums)
    return sum(ms * u for ms, u, _ in sums) / total_ms, sum(ms * s for ms, _, s in sums) / total_ms


def client_measurement(output: FioOutput, client: str = "local", *, size_based: bool = False) -> ClientMeasurement:
    """All jobs of one fio invocation merged into one client measurement (its CPU: ``client_cpu_pct``).
    Directions that moved no I/O are dropped. ``size_based`` (`model.is_size_based`): the clones' rate over the
    longest one's runtime (``merge_directions``).
    """
    usr, system = client_cpu_pct(output.jobs)
    return ClientMeasurement(
        client=client,
        jobs=len(output.jobs),
        job_errors=tuple(job.error for job in output.jobs if job.error),
        cpu_usr_pct=usr,
        cpu_sys_pct=system,
        directions=_merge_by_direction([job.directions for job in output.jobs], over_span=size_based),
        disks=output.disks,
    )


def client_measurements_by_host(output: FioOutput, *, size_based: bool = False) -> list[ClientMeasurement]:
    """Client/server output: one measurement per fio server, its jobs merged (``size_based``: as in
    ``client_measurement``), in order of first appearance."""
    hosts = list(dict.fromkeys(job.host for job in output.jobs))
    out = []
    for host in hosts:
        jobs = [job for job in output.jobs if job.host == host]
        usr, system = client_cpu_pct(jobs)
        out.append(ClientMeasurement(
            client=host, jobs=len(jobs), job_errors=tuple(job.error for job in jobs if job.error),
            cpu_usr_pct=usr, cpu_sys_pct=system,
            directions=_merge_by_direction([job.directions for job in jobs], over_span=size_based),
            disks=tuple(d for d in output.disks if d.host == host)))
    return out


def merge_clients(clients: Sequence[ClientMeasurement], *, size_based: bool = False
                  ) -> tuple[DirectionMeasurement, ...]:
    """A repetition's numbers: every client's I/O summed, every client's bins merged. ``size_based``: clients of a
    size-based job (each its files or objects once), started together, finish each when its share is done: every
    operation over the longest client's runtime, as for clones (two clients of 1,000 creates in 1 s and 2 s had read
    1,500/s for 1,000/s)."""
    return _merge_by_direction([c.directions for c in clients], over_span=size_based)


def merge_in_sequence(parts: Sequence[tuple[ClientMeasurement, int]], client: str, *,
                      until_ms: int = 0) -> ClientMeasurement:
    """One client's fio processes that ran one after another (a pod deleted mid-run and made again), each with the
    epoch ms its report was written (fio's ``timestamp_ms``; 0 unknown): I/Os and bytes add up; each direction's
    runtime is the wall-clock span from the first's measured start to the last's end, the gap between them
    included, so IOPS and bandwidth span the stall as a fault's do; CPU weighted by each one's runtime.
    ``until_ms`` (epoch ms; 0: none): the measured section's end when the client's last process was ended by a
    fault and nothing went on after it (its pod lost with its node): the span runs to it, the client's silence
    up to the end counted as a stall is."""
    if not parts:
        raise ValueError("nothing to merge")
    if len(parts) == 1 and not until_ms:
        return replace(parts[0][0], client=client)
    merged: list[DirectionMeasurement] = []
    for direction in Dir:
        pieces = [(m.direction(direction), end) for m, end in parts]
        present = [(d, end) for d, end in pieces if d is not None and d.total_ios > 0]
        if not present:
            continue
        (first, first_end), (_, last_end) = present[0], present[-1]
        last_end = max(last_end, until_ms) if last_end else 0
        span_ms = (last_end - (first_end - first.runtime_ms) if first_end and last_end
                   else sum(d.runtime_ms for d, _ in present))
        span_ms = max(span_ms, 1)
        total = merge_directions([d for d, _ in present])
        merged.append(replace(total, runtime_ms=span_ms, iops=total.total_ios * 1000 / span_ms,
                              bw_bytes_per_s=total.io_bytes * 1000 / span_ms))
    weights = [max((d.runtime_ms for d in m.directions), default=0) for m, _ in parts]
    whole = sum(weights) or 1
    return ClientMeasurement(
        client=client, jobs=max(m.jobs for m, _ in parts),
        job_errors=tuple(e for m, _ in parts for e in m.job_errors),
        cpu_usr_pct=sum(m.cpu_usr_pct * w for (m, _), w in zip(parts, weights, strict=True)) / whole,
        cpu_sys_pct=sum(m.cpu_sys_pct * w for (m, _), w in zip(parts, weights, strict=True)) / whole,
        directions=tuple(merged), disks=parts[-1][0].disks)
