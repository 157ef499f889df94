"""Per point (case and direction): every metric's estimate over repetitions, and warnings with their fix."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from storbench.fio.allowlist import RATE_OPTIONS
from storbench.model import Direction, Expectation, is_metadata, is_object, is_volume_operation
from storbench.stats.bottleneck import MEMORY_FILESYSTEMS, Bottleneck, BottleneckInputs, BottleneckVerdict, judge
from storbench.stats.cost import COMPONENTS, KERNEL
from storbench.stats.estimate import CONFIDENCE, Estimate, estimate
from storbench.stats.metric_values import (
    METRIC_VALUES,
    busiest_names,
    lat_percentiles_from,
    metric_value,
    observed_storage,
    unseparated_storage,
)
from storbench.stats.metrics import SUMMARY_METRICS
from storbench.stats.observations import Observation, alternated_rounds
from storbench.stats.point_summary import PointSummary, distinct_fields, distinct_targets
from storbench.stats.point_verdicts import left_untold, with_sweep_verdicts, with_time_split
from storbench.stats.point_warnings import point_warnings
from storbench.units import parse_cpu_list

SUMMARY_FIELDS = tuple(metric.field for metric in SUMMARY_METRICS)


def _resources(verdict: BottleneckVerdict) -> str:
    """The resources an under-driven or not-saturated verdict names, " (host CPU ..., fio ...)"."""
    return "" if verdict.busiest is None else f" ({verdict.busiest})"


def _mean_of(values: Sequence[float | int | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _most_common(values: Sequence[str]) -> str:
    present = [v for v in values if v]
    return max(sorted(set(present)), key=present.count) if present else ""


def bottleneck_inputs(ok: Sequence[Observation]) -> BottleneckInputs | None:
    """One case's figures for the bottleneck rules: per repetition (directions together), then the mean."""
    if not ok:
        return None
    by_repetition: dict[tuple[int, int], list[Observation]] = {}
    for o in ok:
        by_repetition.setdefault(o.repetition, []).append(o)
    iops_values: list[float | None] = []
    in_flight_values: list[float | None] = []
    for rows in by_repetition.values():
        measured = [o.measurement for o in rows if o.measurement is not None]
        iops_values.append(sum(m.iops for m in measured) if measured else None)
        timed = [m.iops * m.lat.mean_ns / 1e9 for m in measured]
        in_flight_values.append(sum(timed) if timed else None)
    one_per_repetition = [rows[0] for rows in by_repetition.values()]
    processes: dict[str, list[float]] = {}
    for o in one_per_repetition:
        for name, cores in (o.telemetry.process_cpu_cores if o.telemetry else ()):
            processes.setdefault(name, []).append(cores)
    # over the repetitions that sampled processes (one without telemetry, pooled from another run, knows nothing
    # of them: counted, it had halved the cores); one that sampled and did not see a name counts it as 0
    n = sum(1 for o in one_per_repetition if o.telemetry is not None) or 1
    process_means = sorted(((name, sum(v) / n) for name, v in processes.items()), key=lambda item: -item[1])
    names = [busiest_names(o) for o in one_per_repetition]
    case = ok[0].case

    def mean(field: str) -> float | None:
        return _mean_of([metric_value(o, field) for o in one_per_repetition])

    # fio on other machines: this machine's CPU, devices, links and its null-engine ceiling are not theirs (a busy
    # orchestrator had made their point cpu-bound, an idle one "nothing saturated")
    here = all(o.fio.ran_here for o in ok)

    def local(field: str) -> float | None:
        return mean(field) if here else None

    return BottleneckInputs(
        host_cpu_busy_pct=local("host_cpu_busy_pct"), host_cpu_pressure_pct=local("host_cpu_pressure_pct"),
        process_cpu_cores=tuple(process_means) if here else (),
        client_cpu_cores=mean("client_cpu_cores"),
        busiest_device=_most_common([device for device, _, _ in names]) if here else "",
        device_util_pct=local("disk_busiest_util_pct"), device_queue_depth=local("disk_busiest_queue_depth"),
        busiest_interface=_most_common([interface for _, interface, _ in names]) if here else "",
        interface_util_pct=local("net_busiest_util_pct"), interface_bytes_per_s=local("net_busiest_bytes_per_s"),
        storage_node=_most_common([node for _, _, node in names]),
        storage_disk=_most_common([_busiest_node_disk(o) for o in one_per_repetition]),
        node_cpu_busy_pct=mean("node_cpu_busy_pct"), node_disk_util_pct=mean("node_disk_util_pct"),
        fio_disks=tuple(sorted({name for o in one_per_repetition for name in o.fio.disks})),
        fio_disk_util_pct=mean("disk_util_pct"),
        in_memory=any(o.filesystem in MEMORY_FILESYSTEMS for o in one_per_repetition),
        iops=_mean_of(iops_values), in_flight=_mean_of(in_flight_values), ceiling_iops=local("client_ceiling_iops"),
        iodepth=case.workload.iodepth, jobs=case.workload.numjobs * case.clients, ioengine=case.workload.ioengine,
        osd_quota_cores=case.lab.ceph.osd_cpus if case.lab.ceph is not None else None,
        osds=case.lab.ceph.osds if case.lab.ceph is not None else None, clients=case.clients,
        osd_cpuset_cores=(float(len(parse_cpu_list(case.lab.ceph.osd_cpuset)))
                          if case.lab.ceph is not None and case.lab.ceph.osd_cpuset is not None else None),
        cost_us_per_io=tuple(sorted(((c.label, us) for c in (*COMPONENTS, KERNEL)
                                     if (us := mean(f"{c.key}_cpu_us_per_io")) is not None),
                                    key=lambda item: -item[1])),
        clients_elsewhere=not here,
    )


def _busiest_node_disk(observation: Observation) -> str:
    """The storage nodes' busiest disk in words, "sdb of node osd2:9100" ('' unknown): the node whose CPU is
    busiest (``busiest_names``) need not be the one whose disk is."""
    d = observation.telemetry
    found = d.remote_max("disk_util_pct") if d is not None else None
    if found is None:
        return ""
    node, _, device = found.entity.partition(" device=")
    return f"{device} of node {node}" if device else f"a disk of node {node}"


def run_samples(rows: Sequence[Observation], read: Callable[[Observation], float | None]) -> dict[int, float]:
    """A point pooled over several runs: each run's mean of its repetitions' values, one sample a run. A run is one
    stretch of time on one instance: its repetitions share both, so over several runs they are not independent
    samples (pooled as if they were, the interval leaves the runs' own spread out)."""
    by_run: dict[int, list[float]] = {}
    for o in rows:
        if (value := read(o)) is not None:
            by_run.setdefault(o.run_id, []).append(float(value))
    return {run: sum(values) / len(values) for run, values in sorted(by_run.items())}


def _case_totals(ok: Sequence[Observation], directions: Sequence[Direction | None], level: float,
                 window_only: bool) -> tuple[tuple[str, Estimate], ...]:
    """IOPS and throughput of a case of several directions, summed over them in each repetition that measured
    all of them, estimated over those repetitions (each run's mean one sample where several runs pool)."""
    out = []
    for field in ("iops", "bw_bytes_per_s"):
        read = METRIC_VALUES[field]
        by_repetition: dict[tuple[int, int], dict[Direction | None, float]] = {}
        for o in ok:
            if (v := read(o)) is not None:
                by_repetition.setdefault(o.repetition, {})[o.direction] = float(v)
        sums = {rep: sum(found.values()) for rep, found in by_repetition.items() if len(found) == len(directions)}
        runs = {run for run, _ in sums}
        values = ([statistics.fmean([v for (r, _), v in sums.items() if r == run]) for run in sorted(runs)]
                  if len(runs) > 1 else list(sums.values()))
        if (value := estimate(values, level, interval=not window_only)) is not None:
            out.append((field, value))
    return tuple(out)


def summarize_points(observations: Sequence[Observation], mem_total_bytes: Mapping[int, int | None] | None = None,
                     metrics: Sequence[str] = SUMMARY_FIELDS,
                     expectations: Mapping[tuple[int, str], Expectation] | None = None,
                     levels: Mapping[int, float] | None = None, *, by_run: bool = False) -> list[PointSummary]:
    """Group by (case, direction) in first-seen order (``by_run``: by run first, so runs of one plan, whose cases
    have the same ids, are not pooled); estimate each metric over ok repetitions. With
    ``expectations`` ((run, target) -> `expect:`), each point knows what its target was declared as. ``levels``
    (run -> the t level of its intervals, 95 % when absent; a run that stopped on `until: ci` has its own, see
    ``stats.run_questions.interval_levels``): a point over several runs takes the highest of theirs."""
    if by_run:
        return [p for run in dict.fromkeys(o.run_id for o in observations)
                for p in summarize_points([o for o in observations if o.run_id == run], mem_total_bytes, metrics,
                                          expectations, levels)]
    memory = mem_total_bytes or {}
    declared = expectations or {}
    run_levels = levels or {}
    # points whose run alternated its cases round by round carry their values by round: what pairs two points of
    # one curve (`stats.trend.round_pairs`), by the rule `compare` pairs by
    by_round = alternated_rounds(observations, {o.run_id for o in observations if o.alternated})
    groups: dict[str, list[Observation]] = {}
    for o in observations:
        if o.client:  # a single client's own observation (export --per-client): points are all clients merged
            continue
        groups.setdefault(o.case.case_id, []).append(o)
    out: list[PointSummary] = []
    for case_id, group in groups.items():
        ok = [o for o in group if o.ok]
        directions: list[Direction | None] = [d for d in Direction if any(o.direction == d for o in ok)] or [None]
        failed = [o for o in group if not o.ok]
        case, w = group[0].case, group[0].case.workload
        run_mem = [memory.get(o.run_id) for o in group]
        mem = min((m for m in run_mem if m), default=None)
        inputs = bottleneck_inputs(ok)
        verdict = judge(inputs) if inputs else BottleneckVerdict(Bottleneck.UNKNOWN, "no successful repetition")
        if is_metadata(w.rw) and verdict.kind in (Bottleneck.UNDER_DRIVEN, Bottleneck.NOT_SATURATED):
            # one file operation at a time per job: the I/O-slot rule of block I/O says nothing here
            verdict = BottleneckVerdict(Bottleneck.NOT_SATURATED, f"nothing saturated{_resources(verdict)}: "
                                        "each job runs one file operation at a time; more jobs (numjobs) or "
                                        "clients add load")
        if is_volume_operation(w.rw):
            verdict = BottleneckVerdict(Bottleneck.UNKNOWN, "a Kubernetes volume operation: timed whole, one per "
                                        "client; its time is the figure, no saturation is told")
        if is_object(w.rw) and verdict.kind in (Bottleneck.UNDER_DRIVEN, Bottleneck.NOT_SATURATED):
            # fio's http engine sends one request at a time per job
            verdict = BottleneckVerdict(Bottleneck.NOT_SATURATED, f"nothing saturated on this machine"
                                        f"{_resources(verdict)}: each job sends one S3 request at a time; "
                                        "more jobs (numjobs) add load")
        if any(name in RATE_OPTIONS for name, _ in w.fio_options) and (untold := left_untold(verdict)) is not None:
            # fio holds the load back itself: neither one point nor a sweep of it tells the storage's limit
            verdict = replace(verdict, evidence=verdict.evidence.replace(
                untold, "fio was told to hold back (a rate limit or think time): its IOPS say nothing of the "
                "storage's limit"))
        if any(o.failover is not None for o in ok):
            # its measured window spans a fault: the stall and the recovery, not a steady load, set its figures
            verdict = BottleneckVerdict(Bottleneck.UNKNOWN, "a fault during every repetition: its figures span the "
                                        "stall and the recovery, no bottleneck of a steady load; read its failover "
                                        "figures (blackout, level after, recovery)")
        level = max((run_levels.get(o.run_id, CONFIDENCE) for o in group), default=CONFIDENCE)
        window_only = any(o.window_only for o in group)  # a steady window's rounds: chosen for their spread
        # the metadata cycle's directions are phases run one after another, each a rate over its own time: their
        # sum is the rate of no stretch of time (it had been weighed against an `expect:` as one)
        totals = (_case_totals(ok, directions, CONFIDENCE if len({o.run_id for o in ok}) > 1 else level, window_only)
                  if len(directions) > 1 and w.rw != "metadata" else ())  # pooled: 95 %, as its directions
        for direction in directions:
            rows = [o for o in ok if o.direction == direction]
            # over several runs (with a successful repetition each), each run's mean is one sample (`run_samples`)
            pooled = len({o.run_id for o in rows}) > 1
            alternated = all(o.alternated for o in rows)
            rounds = by_round.get((case_id, direction.value)) if direction is not None and not pooled else None
            estimates = []
            for field in metrics:
                read = METRIC_VALUES[field]
                run_means = run_samples(rows, read) if pooled else {}
                values = list(run_means.values()) if pooled else [v for o in rows if (v := read(o)) is not None]
                # pooled: the sample is the runs, whose number no stopping rule chose (a run's `until: ci` level
                # is its repetitions'): 95 %, as `compare` takes sides over several runs
                value = estimate(values, CONFIDENCE if pooled else level, interval=not window_only)
                if value is not None and pooled:  # n counts runs; keyed by run where every run alternated its
                    # cases (two points of the same such runs pair run by run); a run that measured its points one
                    # after another (sequential, a search) has the order in every pair alike: Welch over run means
                    value = replace(value, per_run=True, rounds=tuple(
                        ((run, -1), mean) for run, mean in run_means.items()) if alternated else ())
                elif value is not None and rounds:
                    value = replace(value, rounds=tuple((r, float(v)) for r, o in sorted(rounds.items())
                                                        if (v := read(o)) is not None))
                if value is not None:
                    estimates.append((field, value))
            # a Kubernetes volume operation's figure is its time: its spread and interval are what to warn of
            iops = dict(estimates).get("lat_mean_ns" if is_volume_operation(w.rw) else "iops")
            out.append(PointSummary(
                case=case, direction=direction, run_ids=tuple(sorted({o.run_id for o in group})),
                fio_versions=tuple(sorted({o.fio_version for o in group})),
                repetitions_ok=len({o.repetition for o in rows}),
                repetitions_total=len({o.repetition for o in group}),
                estimates=tuple(estimates),
                warnings=tuple(point_warnings(group, rows, iops, mem)),
                last_error=failed[-1].error if failed else "",
                process_cpu_cores=inputs.process_cpu_cores if inputs else (),
                busiest_device=inputs.busiest_device if inputs else "",
                busiest_interface=inputs.busiest_interface if inputs else "",
                bottleneck=with_time_split(verdict, dict(estimates), layer := _most_common(
                    [found.layer for o in rows if (found := observed_storage(o)) is not None]),
                    _most_common([unseparated_storage(o) for o in rows])),
                expected=next((declared[(run, case.target.name)] for run in sorted({o.run_id for o in group})
                               if (run, case.target.name) in declared), None),
                storage_layer=layer,
                lat_percentiles_from=",".join(sorted({kind for o in rows
                                                      if (kind := lat_percentiles_from(o.measurement))})),
                case_totals=totals,
            ))
    told_apart = distinct_fields([p.case.workload for p in out])
    targets_apart = distinct_targets([p.case.target for p in out])
    out = [replace(p, distinct=d + t) for p, d, t in zip(out, told_apart, targets_apart, strict=True)]
    return with_sweep_verdicts(out)
