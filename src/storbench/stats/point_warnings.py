"""What makes a point's figures less trustworthy, and what to do about it: the warnings a point carries (failed or
few repetitions, a wide spread or interval, not steady, stragglers, the volume lab's throttle and pacing, the page
cache), each with its fix."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from storbench.model import is_size_based, is_volume_operation
from storbench.stats.bottleneck import MEMORY_FILESYSTEMS, configured_slots
from storbench.stats.estimate import Estimate, samples_for_half_width
from storbench.stats.metric_values import METRIC_VALUES
from storbench.stats.observations import Observation
from storbench.stats.special import chi2_isf
from storbench.stats.steady import SteadyStatus, what_would_show
from storbench.stats.trend import FLAT_MARGIN, within_margin
from storbench.units import format_bytes, format_latency_ns

CV_LIMIT_PCT = 5.0
CV_BOUND_CONFIDENCE = 0.90  # the CV warning fires when the CV's lower 90 % bound is above CV_LIMIT_PCT
WIDE_INTERVAL_PCT = 20.0  # the IOPS warning fires when the 95 % interval's half-width is above this share
MOST_ADVISED = 1000  # "about N repetitions would give ..." is not said beyond this
MIN_REPETITIONS = 3
START_SKEW_SHARE = 0.05  # clients that started further apart than this share of the runtime are warned of


WARNING_TITLES = {
    "failed_repetitions": "failed repetitions",
    "few_repetitions": f"fewer than {MIN_REPETITIONS} repetitions",
    "few_runs": f"pooled over fewer than {MIN_REPETITIONS} runs",
    "few_ios_for_tail": "tail percentiles from too few I/Os a repetition (about its largest few)",
    "short_phase": "a rate from a phase of under 0.1 s (fio times it to the millisecond)",
    "high_cv": f"run-to-run spread (CV) shown above {CV_LIMIT_PCT:.0f} % (its lower bound at 90 % confidence)",
    "wide_interval": f"IOPS known only within more than +-{WIDE_INTERVAL_PCT:.0f} % (its confidence interval)",
    "runtime_shorter_than_ramp": "runtime shorter than ramp",
    "page_cache": "working set fits in the page cache",
    "in_memory": "the target is in memory (tmpfs): its figures are RAM's, not a storage device's",
    "stragglers": "straggling clients",
    "missing_clients": "clients that returned no fio output",
    "start_skew": "clients that started apart",
    "phases_apart": "the metadata cycle's stat and delete phases of many clients, not started together",
    "not_steady": "SNIA's steady-state rule never met",
    "steady_incomplete": "steady state not reached yet",
    "steady_window": "steady-state window: rounds of one instance chosen for small spread; no interval",
    "faulted": "figures span a fault",
    "steady_unshown": f"steady by SNIA's rule only: its level's change not shown within +-{100 * FLAT_MARGIN:g} %",
}
# a volume operation's main figure is its time, not IOPS
VOLUME_OPERATION_TITLES = {
    "wide_interval": f"time known only within more than +-{WIDE_INTERVAL_PCT:.0f} % (its confidence interval)",
}


def warning_title(code: str, rws: Sequence[str]) -> str:
    """A warning's title for points of workloads ``rws``: a volume operation's own words where all are."""
    if rws and all(is_volume_operation(rw) for rw in rws):
        return VOLUME_OPERATION_TITLES.get(code, WARNING_TITLES.get(code, code))
    if any(is_volume_operation(rw) for rw in rws) and code in VOLUME_OPERATION_TITLES:
        return f"IOPS or a volume operation's {VOLUME_OPERATION_TITLES[code]}"
    return WARNING_TITLES.get(code, code)


# a size-based phase (files or objects done once each) shorter than this: fio's runtime is whole milliseconds, so its
# rate may be off by up to 1 ms / runtime (1 % at 100 ms, 12 % at 8 ms)
SHORT_PHASE_MS = 100

# I/Os a repetition needs for each tail percentile to rest on about 10 I/Os beyond it: 10 / (1 - x)
TAIL_IOS = (("p95", 200), ("p99", 1_000), ("p99.9", 10_000))

STRAGGLER_PCT_OF_MEDIAN = 50.0
# The volume lab's pacer at its IOPS cap (a repetition at this share of it or more) starts each I/O iodepth / cap
# after it arrives; a p99 above this many times that says the machine delayed its timers (docs/methodology.md).
PACED_AT_CAP = 0.95
PACING_P99_FACTOR = 3.0


def cv_lower_bound_pct(value: Estimate) -> float | None:
    """The CV's one-sided lower confidence bound (CV_BOUND_CONFIDENCE), from the chi-square bound on the standard
    deviation of normal repetitions: the spread is shown to be at least this. None below 2 repetitions."""
    if value.n < 2 or value.cv_pct is None:
        return None
    return value.cv_pct * math.sqrt((value.n - 1) / chi2_isf(1 - CV_BOUND_CONFIDENCE, value.n - 1))


@dataclass(frozen=True)
class StatWarning:
    """Something that makes a number less trustworthy, and what to do about it."""

    code: str
    message: str
    fix: str

    def text(self) -> str:
        return f"{self.message}: {self.fix}"


def point_warnings(observations: Sequence[Observation], ok: Sequence[Observation], iops: Estimate | None,
                   mem_total_bytes: int | None) -> list[StatWarning]:
    """The point's warnings; ``iops`` is its main figure's estimate: IOPS, or a volume operation's mean time."""
    case = observations[0].case
    workload = case.workload
    warnings: list[StatWarning] = []
    total = len({o.repetition for o in observations})
    succeeded = len({o.repetition for o in ok})
    if succeeded < total:
        warnings.append(StatWarning("failed_repetitions", f"{total - succeeded} of {total} repetitions failed",
                                    "see `storbench export` for their errors; rerun with --resume"))
    per_run = iops is not None and iops.per_run  # pooled over runs: each run's mean one sample, n counts runs
    if iops is not None and iops.n < MIN_REPETITIONS and per_run:
        warnings.append(StatWarning(
            "few_runs", f"{iops.n} runs pooled, each run's mean one sample of the interval: a wide interval",
            f"run the plan {MIN_REPETITIONS} times or more, or read a row per run"))
    elif iops is not None and iops.n < MIN_REPETITIONS:
        warnings.append(StatWarning(
            "few_repetitions", f"n={iops.n}" + (": no confidence interval" if iops.n < 2 else ": a wide interval"),
            f"set repeat: {MIN_REPETITIONS} or more"))
    counted = [o.measurement.total_ios for o in ok if o.measurement is not None and o.measurement.total_ios > 0]
    fewest = min(counted, default=None)
    if fewest is not None and fewest < TAIL_IOS[-1][1] and not is_volume_operation(workload.rw):
        # p_x of fewer than 10 / (1 - x) I/Os is one of the largest few: p99 of 50 I/Os is their maximum
        short = [name for name, needed in TAIL_IOS if fewest < needed]
        warnings.append(StatWarning(
            "few_ios_for_tail", f"{', '.join(short)} from {fewest:,} I/Os in a repetition: each is about its largest "
            f"few ({short[0]} needs {dict(TAIL_IOS)[short[0]]:,})",
            "a longer runtime (or more files or objects) gives the tail enough I/Os; read the mean and p50 meanwhile"))
    timed = [o.measurement.runtime_ms for o in ok if o.measurement is not None and o.measurement.total_ios > 0]
    if is_size_based(workload.rw) and timed and min(timed) < SHORT_PHASE_MS:
        briefest = min(timed)
        warnings.append(StatWarning(
            "short_phase", f"its shortest repetition took {briefest} ms: fio times it to the whole millisecond, so its "
            f"rate may be off by up to {100 / max(briefest, 1):.0f} %",
            "more files or objects give the phase the time to be timed"))
    states = {o.steady for o in observations if o.steady is not None}
    if SteadyStatus.NOT_STEADY in states:
        warnings.append(StatWarning("not_steady", "SNIA's range and slope rule not met within "
                                    "steady_state.max_rounds (a level still moving, or rounds noisier than its range "
                                    "allows): its figures are its last window's",
                                    "precondition it, or raise max_rounds; rounds that vary more than the range "
                                    "allows: a longer runtime a round"))
    elif SteadyStatus.MEASURING in states:
        warnings.append(StatWarning("steady_incomplete", "stopped before it was steady or out of rounds",
                                    "run the plan again with --resume"))
    unshown = [s for o in observations if (s := o.steady_state) is not None and (c := s.change) is not None
               and not within_margin(c)]
    if unshown and (change := unshown[0].change) is not None:
        warnings.append(StatWarning(
            "steady_unshown", f"steady by SNIA's rule, but its level changed {change.text()} across its window and "
            f"the rounds after it: not shown within +-{100 * FLAT_MARGIN:g} %", what_would_show(unshown[0])))
    if any(o.window_only for o in observations):
        warnings.append(StatWarning(
            "steady_window", "figures from its steady-state window, rounds chosen for their small spread: no "
            "interval", "measure rounds after the window (steady_state.confirm: 5; --resume runs them)"))
    figure = "time" if is_volume_operation(workload.rw) else "IOPS"  # what ``iops`` estimates
    cv_low = cv_lower_bound_pct(iops) if iops else None
    if iops is not None and iops.cv_pct is not None and cv_low is not None and cv_low > CV_LIMIT_PCT:
        steady = ("the time is the cluster's: its controllers' queues and resyncs vary between repetitions; read "
                  "the interval and the tail" if figure == "time" else
                  "steady the points: a longer runtime or ramp, or precondition")
        if per_run:  # the spread between the runs' means: what differs from run to run
            warnings.append(StatWarning("high_cv", f"CV between runs {iops.cv_pct:.0f} %, at least {cv_low:.0f} %",
                                        "the runs differ (their instance, their time, the host's state): read a row "
                                        "per run (more runs narrow the interval, not the spread)"))
        else:
            warnings.append(StatWarning("high_cv", f"CV {iops.cv_pct:.0f} %, at least {cv_low:.0f} %",
                                        f"{steady} (more repetitions narrow the interval, not the spread)"))
    half = iops.half_width_pct if iops else None
    if iops is not None and half is not None and half > WIDE_INTERVAL_PCT:
        needed = samples_for_half_width(half, iops.n, WIDE_INTERVAL_PCT, iops.confidence, MOST_ADVISED)
        more = (f"more than {MOST_ADVISED}" if needed is None else f"about {needed}")
        warnings.append(StatWarning(
            "wide_interval", f"{figure} +-{half:.0f} % at n={iops.n}" + (" runs" if per_run else ""),
            f"{more} runs would give +-{WIDE_INTERVAL_PCT:.0f} % (more repetitions in each do not)"
            if per_run else f"{more} repetitions would give +-{WIDE_INTERVAL_PCT:.0f} %"
            + ("" if needed is None else f" (repeat: {needed})")))
    if case.lab.volume is not None and case.lab.volume.bursty:
        warnings.append(StatWarning(
            "throttle_latency", "measured on the volume lab's kernel block throttle (before its pacer): I/Os pass in "
            "bursts, then wait up to a 100 ms slice (p50 4 µs, p99.9 98 ms at iodepth 1 on a 3,000 IOPS cap)",
            "read its IOPS, throughput and mean latency (they follow the cap); its percentiles are not a "
            "provisioned volume's, which paces I/Os evenly"))
    if any(o.failover is not None for o in observations):
        warnings.append(StatWarning(
            "faulted", "a fault during every repetition: its IOPS and latencies span the stall and the recovery",
            "read its failover figures (show's failover lines, the report's Failover section); measure without "
            "faults: for its steady level"))
    if workload.runtime_s < workload.ramp_s:
        warnings.append(StatWarning("runtime_shorter_than_ramp",
                                    f"runtime {workload.runtime_s:g}s is shorter than ramp {workload.ramp_s:g}s",
                                    "measure for longer than you warm up"))
    stragglers = [o for o in ok if o.fio.slowest_pct_of_median is not None
                  and o.fio.slowest_pct_of_median < STRAGGLER_PCT_OF_MEDIAN
                  and not is_volume_operation(o.case.workload.rw)  # one operation a client: its time, no rate
                  and o.failover is None]  # a client a fault stopped is the fault's, told in its failover lines
    if stragglers:
        worst = min(stragglers, key=lambda o: o.fio.slowest_pct_of_median or 0.0)
        warnings.append(StatWarning(
            "stragglers", f"client {worst.fio.slowest} did {worst.fio.slowest_pct_of_median:.0f} % of the "
            f"median client's IOPS (repetition {worst.rep_index + 1})",
            "see `storbench export --per-client`; check that host's load, network and storage path"))
    skewed = [o for o in ok if o.fio.start_skew_s is not None and not is_size_based(workload.rw)
              and o.fio.start_skew_s > START_SKEW_SHARE * workload.runtime_s > 0]
    if skewed:  # each client's rate is over its own window: summed, they count time not all of them ran
        worst = max(skewed, key=lambda o: o.fio.start_skew_s or 0.0)
        skew = worst.fio.start_skew_s or 0.0
        warnings.append(StatWarning(
            "start_skew", f"clients started up to {skew:.1f} s apart (repetition {worst.rep_index + 1}), "
            f"{skew / workload.runtime_s:.0%} of the {workload.runtime_s:g} s runtime: their summed IOPS count "
            "stretches in which not all of them ran", "a longer runtime; see why a client started late (its "
            "host's load, an image pull)"))
    if workload.rw == "metadata" and case.clients > 1 and ok and ok[0].direction in ("read", "trim"):
        # only the create phase waits at the barrier: each client's stat and delete start when its create ends
        warnings.append(StatWarning(
            "phases_apart", f"{case.clients} clients' {'stat' if ok[0].direction == 'read' else 'delete'} phases each "
            "began when that client's create ended, not together: the rate over the longest client's phase may count "
            "stretches in which not all of them ran", "measure it alone (rw: stat or rw: delete: every client starts "
            "behind the barrier), or with clients: 1"))
    missing = [o for o in ok if not o.client and 0 < o.fio.reporting < case.clients]
    if missing:  # a pod whose log was lost with its node: the figures are the other clients' alone
        worst = min(missing, key=lambda o: o.fio.reporting)
        warnings.append(StatWarning(
            "missing_clients", f"{case.clients - worst.fio.reporting} of {case.clients} clients returned no fio "
            f"output (repetition {worst.rep_index + 1}; {len({o.repetition for o in missing})} repetitions short): "
            "its figures are the others' alone",
            "see the repetition's raw output (`storbench export`): a client's pod on a failed node may have lost its "
            "log"))
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
    # a source that could not be read (Prometheus unreachable or without data, a Ceph socket, a kubelet): the
    # verdict read the others only, so "nothing saturated" may be a source unseen
    unread = sorted({p for o in ok if o.telemetry is not None for p in o.telemetry.problems})
    if unread:
        times = len({o.repetition for o in ok if o.telemetry is not None and o.telemetry.problems})
        warnings.append(StatWarning("telemetry_unread", f"telemetry incomplete in {times} of {succeeded} repetitions "
                                    f"({unread[0][:160]}" + (f"; {len(unread) - 1} more" if len(unread) > 1 else "")
                                    + "): the verdict did not see that source",
                                    "read the bottleneck with care; make the source readable (telemetry settings)"))
    if memory := sorted({o.filesystem for o in observations} & MEMORY_FILESYSTEMS):
        warnings.append(StatWarning("in_memory", f"the target's directory is on {memory[0]} (memory): its figures "
                                    "are RAM's and this host's CPU's, not a storage device's",
                                    "give the target a directory on the storage to measure"))
    working_set = (workload.size_bytes or 0) * workload.numjobs * case.clients
    buffered_file_io = case.target.kind in ("path", "cephfs") and not workload.direct
    if buffered_file_io and mem_total_bytes and 0 < working_set <= mem_total_bytes:
        warnings.append(StatWarning(
            "page_cache", f"working set fits in page cache (buffered I/O, {format_bytes(working_set)} of "
            f"{format_bytes(mem_total_bytes)} RAM)", "set direct: true, or a size larger than RAM"))
    return warnings
