"""Per point (case and direction): every metric's estimate over repetitions, and warnings with their fix."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from storbench.model import Case, Direction, Expectation, WorkloadPoint, is_metadata, is_object
from storbench.stats.bottleneck import (
    NOT_SATURATED_UNTOLD,
    UNDER_DRIVEN_UNTOLD,
    Bottleneck,
    BottleneckInputs,
    BottleneckVerdict,
    CurveStep,
    configured_slots,
    judge,
    judge_curve,
)
from storbench.stats.curve import BLOCK_SIZE, LOAD_AXES, Axis, CurveKey, axis_value, curve_key, outstanding_ios
from storbench.stats.estimate import CONFIDENCE, Estimate, estimate
from storbench.stats.layers import client_daemon
from storbench.stats.metrics import SUMMARY_METRICS
from storbench.stats.observations import (
    METRIC_VALUES,
    Observation,
    alternated_rounds,
    busiest_names,
    lat_percentiles_from,
    metric_value,
    observed_storage,
    unseparated_storage,
)
from storbench.stats.steady import SteadyStatus
from storbench.stats.trend import FLAT_MARGIN, Trend, judge_change, round_pairs, what_would_tell
from storbench.units import format_block_size, format_bytes, format_latency_ns

NOT_JUDGED = BottleneckVerdict(Bottleneck.UNKNOWN, "not judged")
SUMMARY_FIELDS = tuple(metric.field for metric in SUMMARY_METRICS)
CV_LIMIT_PCT = 5.0
CV_BOUND_CONFIDENCE = 0.90  # the CV warning fires when the CV's lower 90 % bound is above CV_LIMIT_PCT
WIDE_INTERVAL_PCT = 20.0  # the IOPS warning fires when the 95 % interval's half-width is above this share
MIN_REPETITIONS = 3


WARNING_TITLES = {
    "failed_repetitions": "failed repetitions",
    "few_repetitions": f"fewer than {MIN_REPETITIONS} repetitions",
    "high_cv": f"run-to-run spread (CV) shown above {CV_LIMIT_PCT:.0f} % (its lower bound at 90 % confidence)",
    "wide_interval": f"IOPS known only within more than +-{WIDE_INTERVAL_PCT:.0f} % (95 % interval)",
    "runtime_shorter_than_ramp": "runtime shorter than ramp",
    "page_cache": "working set fits in the page cache",
    "stragglers": "straggling clients",
    "not_steady": "never reached steady state",
    "steady_incomplete": "steady state not reached yet",
    "steady_window": "steady-state window: rounds of one instance chosen for small spread; no interval",
}
STRAGGLER_PCT_OF_MEDIAN = 50.0
# The volume lab's pacer at its IOPS cap (a repetition at this share of it or more) starts each I/O iodepth / cap
# after it arrives; a p99 above this many times that says the machine delayed its timers (docs/methodology.md).
PACED_AT_CAP = 0.95
PACING_P99_FACTOR = 3.0


def cv_lower_bound_pct(value: Estimate) -> float | None:
    """The CV's one-sided lower confidence bound (CV_BOUND_CONFIDENCE), from the chi-square bound on the standard
    deviation of normal repetitions: the spread is shown to be at least this. None below 2 repetitions."""
    from scipy.special import chdtri

    if value.n < 2 or value.cv_pct is None:
        return None
    return value.cv_pct * math.sqrt((value.n - 1) / float(chdtri(value.n - 1, 1 - CV_BOUND_CONFIDENCE)))


@dataclass(frozen=True)
class StatWarning:
    """Something that makes a number less trustworthy, and what to do about it."""

    code: str
    message: str
    fix: str

    def text(self) -> str:
        return f"{self.message}: {self.fix}"


# Workload fields no label shows by default: when they vary among what is displayed, labels add them
# (`report.labels.hidden_text` says them).
HIDDEN_FIELDS = ("ioengine", "direct", "size_bytes", "runtime_s", "ramp_s", "files", "file_size_bytes", "dirs",
                 "fio_options")


def hidden_values(w: WorkloadPoint) -> tuple[tuple[str, object], ...]:
    """(field, value) of every field in ``HIDDEN_FIELDS`` that has a value."""
    out: list[tuple[str, object]] = []
    for field in HIDDEN_FIELDS:
        if field == "ioengine" and (is_metadata(w.rw) or is_object(w.rw)):
            continue  # the operation names its engine (filecreate, http, ...)
        value = getattr(w, field)
        if value is not None and value != ():
            out.append((field, value))
    return tuple(out)


def distinct_fields(workloads: Sequence[WorkloadPoint]) -> list[tuple[str, ...]]:
    """For each workload, those of its ``hidden_values`` fields whose value is not the same for every workload:
    what tells them apart that a label would not show otherwise."""
    hidden = [dict(hidden_values(w)) for w in workloads]
    fields = {f for h in hidden for f in h}
    varying = {f for f in fields if len({h.get(f) for h in hidden}) > 1}
    return [tuple(f for f in h if f in varying) for h in hidden]


@dataclass(frozen=True)
class PointSummary:
    """One case and direction over its repetitions (possibly from several runs of the same case). ``direction``
    None: no repetition of the case succeeded."""

    case: Case
    direction: Direction | None
    run_ids: tuple[int, ...]
    fio_versions: tuple[str, ...]
    repetitions_ok: int
    repetitions_total: int
    estimates: tuple[tuple[str, Estimate], ...]
    warnings: tuple[StatWarning, ...]
    last_error: str
    process_cpu_cores: tuple[tuple[str, float], ...] = ()  # mean over ok repetitions, busiest first
    busiest_device: str = ""
    busiest_interface: str = ""
    bottleneck: BottleneckVerdict = NOT_JUDGED
    expected: Expectation | None = None  # what the target was declared as (`expect:`)
    storage_layer: str = ""  # the layer the storage latency was measured at (`stats.layers`: OSDs, MDS, radosgw)
    # "dirs", ...: workload fields labels do not show by default (HIDDEN_FIELDS), where they differ between the
    # points summarised together; every label adds them
    distinct: tuple[str, ...] = ()
    # what its latency percentiles are: "lat" (total latency), "clat" (completion latency stands in, an import
    # without total-latency bins: `observations.lat_percentiles_from`), "clat,lat" (both among its repetitions)
    # or "" (none)
    lat_percentiles_from: str = ""

    def share_of_expected(self) -> tuple[float, str] | None:
        """(measured / expected, "IOPS" or "throughput") when the target declared what it should do: IOPS
        where declared, else throughput."""
        if self.expected is None:
            return None
        iops, bw = self.metric("iops"), self.metric("bw_bytes")
        if self.expected.iops and iops is not None:
            return iops.mean / self.expected.iops, "IOPS"
        if self.expected.bw_bytes_per_s and bw is not None:
            return bw.mean / self.expected.bw_bytes_per_s, "throughput"
        return None

    def metric(self, field: str) -> Estimate | None:
        for name, value in self.estimates:
            if name == field:
                return value
        return None

    def curve_key(self, axis: Axis, *, pool_runs: bool) -> CurveKey:
        """The key of the curve along ``axis`` this point lies on (`stats.curve`); ``pool_runs``: points of other
        runs may share it (the knee), else only points of the same runs (the sweep verdicts)."""
        return curve_key(self.case, self.direction, axis, None if pool_runs else self.run_ids)

    @property
    def direction_name(self) -> str:
        """``read``, ``write``, ``trim``; '' when no repetition succeeded."""
        return "" if self.direction is None else self.direction.value

    # Typed shorthands for the case's identity and load, read everywhere a point is grouped or labelled; the case is
    # the one copy. Display text (block size, fio options, lab settings with units) is made in `report.labels`.
    @property
    def case_id(self) -> str:
        return self.case.case_id

    @property
    def target(self) -> str:
        return self.case.target.name

    @property
    def target_kind(self) -> str:
        return self.case.target.kind

    @property
    def rw(self) -> str:
        return self.case.workload.rw

    @property
    def bs_bytes(self) -> int:
        return self.case.workload.bs_bytes

    @property
    def iodepth(self) -> int:
        return self.case.workload.iodepth

    @property
    def numjobs(self) -> int:
        return self.case.workload.numjobs

    @property
    def clients(self) -> int:
        return self.case.clients

    @property
    def lab(self) -> tuple[tuple[str, str], ...]:
        """The lab point as its stored pairs (`LabPoint.pairs`: what case ids hash and selectors match), by name."""
        return tuple(sorted(self.case.lab.pairs()))


def point_warnings(observations: Sequence[Observation], ok: Sequence[Observation], iops: Estimate | None,
                   mem_total_bytes: int | None) -> list[StatWarning]:
    case = observations[0].case
    workload = case.workload
    warnings: list[StatWarning] = []
    total = len({o.repetition for o in observations})
    succeeded = len({o.repetition for o in ok})
    if succeeded < total:
        warnings.append(StatWarning("failed_repetitions", f"{total - succeeded} of {total} repetitions failed",
                                    "see `storbench export` for their errors; rerun with --resume"))
    if iops is not None and iops.n < MIN_REPETITIONS:
        warnings.append(StatWarning(
            "few_repetitions", f"n={iops.n}" + (": no confidence interval" if iops.n < 2 else ": a wide interval"),
            f"set repeat: {MIN_REPETITIONS} or more"))
    states = {o.steady for o in observations if o.steady is not None}
    if SteadyStatus.NOT_STEADY in states:
        warnings.append(StatWarning("not_steady", "not steady within steady_state.max_rounds: its figures are its "
                                    "last window's", "precondition it, or raise max_rounds"))
    elif SteadyStatus.MEASURING in states:
        warnings.append(StatWarning("steady_incomplete", "stopped before it was steady or out of rounds",
                                    "run the plan again with --resume"))
    if any(o.window_only for o in observations):
        warnings.append(StatWarning(
            "steady_window", "figures from its steady-state window, rounds chosen for their small spread: no "
            "interval", "measure rounds after the window (steady_state.confirm: 5; --resume runs them)"))
    cv_low = cv_lower_bound_pct(iops) if iops else None
    if iops is not None and iops.cv_pct is not None and cv_low is not None and cv_low > CV_LIMIT_PCT:
        warnings.append(StatWarning(
            "high_cv", f"CV {iops.cv_pct:.0f} %, at least {cv_low:.0f} %",
            "steady the points: a longer runtime or ramp, or precondition (more repetitions narrow the interval, "
            "not the spread)"))
    half = iops.half_width_pct if iops else None
    if iops is not None and half is not None and half > WIDE_INTERVAL_PCT:
        needed = math.ceil(iops.n * (half / WIDE_INTERVAL_PCT) ** 2)
        warnings.append(StatWarning(
            "wide_interval", f"IOPS +-{half:.0f} % at n={iops.n}",
            f"about {needed} repetitions would give +-{WIDE_INTERVAL_PCT:.0f} % (repeat: {needed})"))
    if case.lab.volume is not None and case.lab.volume.bursty:
        warnings.append(StatWarning(
            "throttle_latency", "measured on the volume lab's kernel block throttle (before its pacer): I/Os pass in "
            "bursts, then wait up to a 100 ms slice (p50 4 µs, p99.9 98 ms at iodepth 1 on a 3,000 IOPS cap)",
            "read its IOPS, throughput and mean latency (they follow the cap); its percentiles are not a "
            "provisioned volume's, which paces I/Os evenly"))
    if workload.runtime_s < workload.ramp_s:
        warnings.append(StatWarning("runtime_shorter_than_ramp",
                                    f"runtime {workload.runtime_s:g}s is shorter than ramp {workload.ramp_s:g}s",
                                    "measure for longer than you warm up"))
    stragglers = [o for o in ok if o.fio.slowest_pct_of_median is not None
                  and o.fio.slowest_pct_of_median < STRAGGLER_PCT_OF_MEDIAN]
    if stragglers:
        worst = min(stragglers, key=lambda o: o.fio.slowest_pct_of_median or 0.0)
        warnings.append(StatWarning(
            "stragglers", f"client {worst.fio.slowest} did {worst.fio.slowest_pct_of_median:.0f} % of the "
            f"median client's IOPS (repetition {worst.rep_index + 1})",
            "see `storbench export --per-client`; check that host's load, network and storage path"))
    volume = case.lab.volume
    if volume is not None and volume.iops and not volume.bursty:
        slots = configured_slots(workload.iodepth, workload.numjobs * case.clients, workload.ioengine)
        turn_ns = slots / volume.iops * 1e9
        at_cap = [o for o in ok if (METRIC_VALUES["iops"](o) or 0.0) >= PACED_AT_CAP * volume.iops]
        p99s = [p99 for o in at_cap if (p99 := METRIC_VALUES["lat_p99_ns"](o)) is not None]
        if p99s and max(p99s) > PACING_P99_FACTOR * turn_ns:
            warnings.append(StatWarning(
                "uneven_pacing", f"p99 {max(p99s) / turn_ns:.1f}x iodepth / cap ({format_latency_ns(turn_ns)}) at the "
                f"volume lab's {volume.iops:,} IOPS: its pacer did not start I/Os evenly on this machine (busy CPUs "
                "delay its timers), so the percentiles are not all the volume's", "read IOPS and mean latency; "
                "rerun with the machine otherwise idle, or a lower cap"))
    working_set = (workload.size_bytes or 0) * workload.numjobs * case.clients
    buffered_file_io = case.target.kind in ("path", "cephfs") and not workload.direct
    if buffered_file_io and mem_total_bytes and 0 < working_set <= mem_total_bytes:
        warnings.append(StatWarning(
            "page_cache", f"working set fits in page cache (buffered I/O, {format_bytes(working_set)} of "
            f"{format_bytes(mem_total_bytes)} RAM)", "set direct: true, or a size larger than RAM"))
    return warnings


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
    n = len(one_per_repetition)
    process_means = sorted(((name, sum(v) / n) for name, v in processes.items()), key=lambda item: -item[1])
    names = [busiest_names(o) for o in one_per_repetition]
    case = ok[0].case

    def mean(field: str) -> float | None:
        return _mean_of([metric_value(o, field) for o in one_per_repetition])

    return BottleneckInputs(
        host_cpu_busy_pct=mean("host_cpu_busy_pct"), host_cpu_pressure_pct=mean("host_cpu_pressure_pct"),
        process_cpu_cores=tuple(process_means),
        client_cpu_cores=mean("client_cpu_cores"),
        busiest_device=_most_common([device for device, _, _ in names]),
        device_util_pct=mean("disk_busiest_util_pct"), device_queue_depth=mean("disk_busiest_queue_depth"),
        busiest_interface=_most_common([interface for _, interface, _ in names]),
        interface_util_pct=mean("net_busiest_util_pct"), interface_bytes_per_s=mean("net_busiest_bytes_per_s"),
        storage_node=_most_common([node for _, _, node in names]),
        node_cpu_busy_pct=mean("node_cpu_busy_pct"), node_disk_util_pct=mean("node_disk_util_pct"),
        iops=_mean_of(iops_values), in_flight=_mean_of(in_flight_values), ceiling_iops=mean("client_ceiling_iops"),
        iodepth=case.workload.iodepth, jobs=case.workload.numjobs * case.clients, ioengine=case.workload.ioengine,
        osd_quota_cores=case.lab.ceph.osd_cpus if case.lab.ceph is not None else None,
        osds=case.lab.ceph.osds if case.lab.ceph is not None else None,
    )


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
        if is_object(w.rw) and verdict.kind in (Bottleneck.UNDER_DRIVEN, Bottleneck.NOT_SATURATED):
            # fio's http engine sends one request at a time per job
            verdict = BottleneckVerdict(Bottleneck.NOT_SATURATED, f"nothing saturated on this machine"
                                        f"{_resources(verdict)}: each job sends one S3 request at a time; "
                                        "more jobs (numjobs) add load")
        if any(name in RATE_OPTIONS for name, _ in w.fio_options) and (untold := _untold(verdict)) is not None:
            # fio holds the load back itself: neither one point nor a sweep of it tells the storage's limit
            verdict = replace(verdict, evidence=verdict.evidence.replace(
                untold, "fio was told to hold back (a rate limit or think time): its IOPS say nothing of the "
                "storage's limit"))
        level = max((run_levels.get(o.run_id, CONFIDENCE) for o in group), default=CONFIDENCE)
        window_only = any(o.window_only for o in group)  # a steady window's rounds: chosen for their spread
        for direction in directions:
            rows = [o for o in ok if o.direction == direction]
            rounds = by_round.get((case_id, direction.value)) if direction is not None else None
            estimates = []
            for field in metrics:
                read = METRIC_VALUES[field]
                value = estimate([v for o in rows if (v := read(o)) is not None], level, interval=not window_only)
                if value is not None and rounds:
                    value = replace(value, rounds=tuple((r, float(v)) for r, o in sorted(rounds.items())
                                                        if (v := read(o)) is not None))
                if value is not None:
                    estimates.append((field, value))
            iops = dict(estimates).get("iops")
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
            ))
    told_apart = distinct_fields([p.case.workload for p in out])
    out = [replace(p, distinct=d) for p, d in zip(out, told_apart, strict=True)]
    return with_sweep_verdicts(out)


def with_time_split(verdict: BottleneckVerdict, estimates: Mapping[str, Estimate], layer: str,
                    unseparated: str = "") -> BottleneckVerdict:
    """The verdict with where the point's time went, by layer (`stats.layers`), when the storage reported its own
    latency for the I/O: the verdict says what limited the point, this says in which layer its latency was; or,
    when the storage's counters were read but are not this I/O's (``unseparated``), why the time is not split."""
    storage, client = estimates.get("storage_lat_ns"), estimates.get("lat_mean_ns")
    if (storage is None or not layer) and unseparated:
        return replace(verdict, evidence=f"{verdict.evidence}; by layer: not split ({unseparated})")
    if storage is None or client is None or client.mean <= 0 or not layer:
        return verdict
    share = min(storage.mean / client.mean, 1.0)
    split = (f"; by layer: the {layer} answered in {storage.mean / 1e6:.2f} ms of the {client.mean / 1e6:.2f} ms "
             f"mean ({share:.0%}), {1 - share:.0%} outside the {layer} (client stack, network)")
    return replace(verdict, evidence=verdict.evidence + split)


def _step(point: PointSummary, load: float, label: str, field: str) -> CurveStep | None:
    throughput, latency = point.metric(field), point.metric("lat_mean_ns")
    if throughput is None:
        return None
    storage = point.metric("storage_lat_ns")
    return CurveStep(load=load, label=label, throughput=throughput, lat_mean_ns=latency.mean if latency else None,
                     verdict=point.bottleneck, storage_lat_ns=storage.mean if storage else None,
                     storage_layer=point.storage_layer, client_daemon=client_daemon(point.process_cpu_cores))


def _remote_evidence(points: Sequence[PointSummary], members: Sequence[int]) -> str:
    """What the storage nodes' own telemetry says along a curve (lowest to highest load), for a capped verdict:
    their CPU and disks (Prometheus). (The storage's own latency for the I/O is read from the curve's steps.)"""
    def ends(field: str) -> tuple[float, float] | None:
        first, last = points[members[0]].metric(field), points[members[-1]].metric(field)
        return (first.mean, last.mean) if first is not None and last is not None else None

    parts = []
    for field, what in (("node_cpu_busy_pct", "storage node CPU"), ("node_disk_util_pct", "storage node disks")):
        both = ends(field)
        if both is not None:
            parts.append(f"{what} {both[0]:.0f} % to {both[1]:.0f} % busy")
    return "; ".join(parts)


RATE_OPTIONS = ("rate", "rate_iops", "rate_min", "rate_iops_min", "thinktime")


def _self_limited(point: PointSummary) -> bool:
    """Whether fio was told to hold back (a rate limit or think time): then its throughput says nothing about
    the storage's limit."""
    return any(name in RATE_OPTIONS for name, _ in point.case.workload.fio_options)


def with_sweep_verdicts(points: Sequence[PointSummary]) -> list[PointSummary]:
    """The points with the verdicts their sweeps give (``bottleneck.judge_curve``): along each load curve
    (iodepth, numjobs, clients; load = outstanding I/Os) on IOPS, and along each block-size curve on bandwidth.
    A point the sweep shows capped beyond this host gets that verdict instead of under-driven / not saturated."""
    out = list(points)
    curves: list[tuple[list[int], Axis, str]] = []  # (indexes sorted by load, axis, what)
    for axis in (*LOAD_AXES, BLOCK_SIZE):
        groups: dict[CurveKey, list[int]] = {}
        for i, point in enumerate(points):
            groups.setdefault(point.curve_key(axis, pool_runs=False), []).append(i)
        for members in groups.values():
            if len({axis_value(points[i].case, axis) for i in members}) >= 2:
                curves.append((sorted(members, key=lambda i: axis_value(points[i].case, axis)), axis,
                               "MiB/s" if axis == BLOCK_SIZE else "IOPS"))
    for members, axis, what in curves:
        if any(_self_limited(points[i]) for i in members):
            continue  # fio itself holds the rate: a flat curve is the plan's own limit, not the storage's
        steps = []
        for i in members:
            p = points[i]
            if axis == BLOCK_SIZE:
                step = _step(p, p.bs_bytes, f"bs {format_block_size(p.bs_bytes)}", "bw_bytes")
            else:
                step = _step(p, outstanding_ios(p.case), f"{axis} {axis_value(p.case, axis)}", "iops")
            if step is None:
                break
            steps.append(step)
        else:
            expected = points[members[0]].expected
            declared = None
            if expected is not None:
                declared = expected.bw_bytes_per_s if axis == BLOCK_SIZE else expected.iops
            judged = sweep_verdicts(steps, [out[i].bottleneck for i in members], what, declared,
                                    _remote_evidence(points, members))
            for i, verdict in zip(members, judged, strict=True):
                out[i] = replace(out[i], bottleneck=verdict)
    return out


def _untold(verdict: BottleneckVerdict) -> str | None:
    """What a point's verdict leaves for a sweep to tell (under-driven, not saturated), None if nothing."""
    if verdict.kind == Bottleneck.UNDER_DRIVEN and UNDER_DRIVEN_UNTOLD in verdict.evidence:
        return UNDER_DRIVEN_UNTOLD
    if verdict.kind == Bottleneck.NOT_SATURATED and NOT_SATURATED_UNTOLD in verdict.evidence:
        return NOT_SATURATED_UNTOLD
    return None


def sweep_reading(steps: Sequence[CurveStep], k: int) -> str | None:
    """What a load sweep shows about more load at its point ``k`` (``steps`` in increasing load). The point is
    judged against every higher load by `stats.trend.judge_change` (paired where the points alternated), as the
    knee and the capped verdict judge a curve (`stats.trend.plateau`), so that no section says otherwise:

    - some higher load is shown to raise IOPS over it: "more load raises IOPS: <the lowest such load> gave ...";
    - every higher load is shown flat or falling against it: "... gave no more IOPS ...: the limit is elsewhere";
    - otherwise undecided: the first change that could not be told, and what would tell it.

    At the highest load, the change from the load below it, by the same words (when it still rose, a deeper sweep
    would tell where it stops). None: a single point (the sweep tells nothing more)."""
    here = steps[k]
    if k + 1 < len(steps):
        changes = [(there, judge_change(here.throughput, there.throughput,
                                        round_pairs(here.throughput, there.throughput))) for there in steps[k + 1:]]
        rising = next(((there, change) for there, change in changes if change.trend is Trend.RISING), None)
        if rising is not None:
            return f"more load raises IOPS: {rising[0].label} gave {rising[1].text()}"
        pending = next(((there, change) for there, change in changes if not change.stopped), None)
        if pending is not None:
            there, change = pending
            return (f"more load may raise IOPS: {there.label} gave {change.text()}, which cannot tell yet "
                    f"({what_would_tell(change, here.throughput, there.throughput)})")
        there, change = max(changes, key=lambda item: item[1].ratio)  # the most any higher load gave
        if len(changes) > 1:
            return (f"yet no higher load gave more IOPS (the most, {there.label}: {change.text()}; each shown within "
                    f"+-{FLAT_MARGIN:.0%} or lower): the limit is elsewhere")
        fewer = "fewer" if change.trend is Trend.FALLING else "no more"
        return f"yet {there.label} gave {fewer} IOPS ({change.text()}): the limit is elsewhere"
    if k == 0:
        return None
    below = steps[k - 1]
    change = judge_change(below.throughput, here.throughput, round_pairs(below.throughput, here.throughput))
    if change.trend is Trend.RISING:
        return (f"more load may raise IOPS: it still rose into {here.label} ({change.text()} from {below.label}); "
                "a deeper sweep, or search:, would tell where it stops")
    if change.stopped:
        fewer = "fewer" if change.trend is Trend.FALLING else "no more"
        return f"yet it gave {fewer} IOPS than {below.label} ({change.text()}): the limit is elsewhere"
    return (f"more load may raise IOPS: it gave {change.text()} over {below.label}, which cannot tell yet "
            f"({what_would_tell(change, below.throughput, here.throughput)})")


def under_driven_readings(steps: Sequence[CurveStep], verdicts: Sequence[BottleneckVerdict]) -> list[str | None]:
    """Each point on a load sweep whose verdict left open whether more load raises IOPS (under-driven, not
    saturated: "one point cannot show it") says what the sweep shows instead (``sweep_reading``): its evidence
    with that in place of what one point cannot show. None: keep."""
    out: list[str | None] = [None] * len(steps)
    for k, verdict in enumerate(verdicts):
        untold = _untold(verdict)
        reading = sweep_reading(steps, k) if untold is not None else None
        if untold is not None and reading is not None:
            out[k] = verdict.evidence.replace(untold, reading)
    return out


def sweep_verdicts(steps: Sequence[CurveStep], verdicts: Sequence[BottleneckVerdict], what: str,
                   declared: float | None = None, remote: str = "") -> list[BottleneckVerdict]:
    """The verdicts of one sweep's points (``steps`` in increasing load; ``verdicts`` what the points hold so far,
    ``what`` "IOPS" along a load curve, "MiB/s" along a block-size one): the curve's capped or client-stack verdict
    where `bottleneck.judge_curve` gives one (a point already capped by another of its curves keeps that), then,
    along a load curve, what the sweep shows at each point left open (``under_driven_readings``)."""
    out = list(verdicts)
    for i, verdict in enumerate(judge_curve(steps, what, declared, remote)):
        if verdict is not None and out[i].kind not in (Bottleneck.CAPPED, Bottleneck.CLIENT_STACK):
            out[i] = verdict
    if what == "IOPS":
        for i, evidence in enumerate(under_driven_readings(steps, out)):
            if evidence is not None:
                out[i] = replace(out[i], evidence=evidence)
    return out
