"""What came back: fio's output parsed (jobs, directions, latency summaries and their histograms), one client's
measurement and one repetition's judged outcome. Counts are exact integers. Pure."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import accumulate

from storbench.model.fault_record import FaultRecord, WriteCheck
from storbench.model.operations import Direction, Status

__all__ = [
    "MAX_COUNT", "ClientMeasurement", "DirectionMeasurement", "DiskUtil", "FioOutput", "JobOutput", "LatencyHistogram",
    "LatencySummary", "RepetitionOutcome", "count_sum",
]

# The most a count (I/Os, bytes, samples, a latency bin) can be: SQLite's INTEGER (int64) holds no more.
MAX_COUNT = 2**63 - 1


def count_sum(counts: Iterable[int], what: str) -> int:
    """Counts added exactly; a negative count, or a sum the store could not hold, is refused (ValueError), never
    wrapped."""
    total = 0
    for count in counts:
        if count < 0:
            raise ValueError(f"{what}: a count of {count}")
        total += count
    if total > MAX_COUNT:
        raise ValueError(f"{what} add up to {total}, past {MAX_COUNT}, the most a count can be")
    return total


@dataclass(frozen=True)
class LatencyHistogram:
    """fio's json+ latency bins: bin values in ns (sorted, unique) and the number of I/Os in each.

    fio's bins are the same for every job and client, so merging is adding counts per bin (a dict of at most
    fio's 1,856 bins per direction: no array library, which would cost every `run` a tenth of a second to load).
    ``bins`` gives the (value, count) pairs. Counts are added as integers, never through floats; a negative count,
    a value or count past MAX_COUNT, or a histogram of more than MAX_COUNT I/Os is refused (ValueError).
    """

    values_ns: tuple[int, ...]
    counts: tuple[int, ...]

    @staticmethod
    def from_arrays(values_ns: Iterable[int], counts: Iterable[int]) -> LatencyHistogram:
        summed: dict[int, int] = {}
        for value, count in zip(values_ns, counts, strict=True):
            value, count = int(value), int(count)
            if count < 0:
                raise ValueError(f"bins hold a count of {count} I/Os")
            if not 0 <= value <= MAX_COUNT:
                raise ValueError(f"bins hold a value of {value} ns, outside 0..{MAX_COUNT}")
            if count > MAX_COUNT:
                raise ValueError(f"bins hold a count past {MAX_COUNT}")
            summed[value] = summed.get(value, 0) + count
        return LatencyHistogram._sorted(summed)

    @staticmethod
    def _sorted(summed: dict[int, int]) -> LatencyHistogram:
        count_sum(summed.values(), "bins")
        values = sorted(value for value, count in summed.items() if count)
        return LatencyHistogram(tuple(values), tuple(summed[value] for value in values))

    @staticmethod
    def from_counts(pairs: Iterable[tuple[int, int]]) -> LatencyHistogram:
        items = list(pairs)
        return LatencyHistogram.from_arrays([v for v, _ in items], [c for _, c in items])

    @staticmethod
    def merge_all(histograms: Sequence[LatencyHistogram]) -> LatencyHistogram:
        if len(histograms) == 1:
            return histograms[0]
        summed: dict[int, int] = {}  # their bins are checked already: only the sum can go past MAX_COUNT
        get = summed.get
        for histogram in histograms:
            for value, count in zip(histogram.values_ns, histogram.counts, strict=True):
                summed[value] = get(value, 0) + count
        return LatencyHistogram._sorted(summed)

    @property
    def bins(self) -> tuple[tuple[int, int], ...]:
        return tuple(zip(self.values_ns, self.counts, strict=True))

    @property
    def total(self) -> int:
        return sum(self.counts)

    def merged(self, *others: LatencyHistogram) -> LatencyHistogram:
        return LatencyHistogram.merge_all([self, *others])

    def percentile_ns(self, percent: float) -> int | None:
        """fio's own rule: the first bin whose cumulative count reaches percent/100 of all I/Os, that share worked
        out as fio does, in x86-64's long double (`fio_rank`)."""
        cumulative = list(accumulate(self.counts))
        if not cumulative or cumulative[-1] == 0:
            return None
        index = bisect_left(cumulative, fio_rank(percent, cumulative[-1]))
        return self.values_ns[min(index, len(self.values_ns) - 1)]

    def cdf(self) -> tuple[tuple[int, float], ...]:
        """(value ns, fraction of I/Os at or below it) per bin."""
        total = self.total
        if total == 0:
            return ()
        return tuple((value, below / total) for value, below in zip(self.values_ns, accumulate(self.counts),
                                                                      strict=True))


def fio_rank(percent: float, total: int) -> int:
    """The least cumulative count that reaches fio's ``(long double) percent / 100.0 * total`` (stat.c), each step
    rounded as x86-64's long double rounds (a 64-bit significand, to nearest). In double arithmetic p99.9 had been a
    bin below fio's for some totals (33,000 I/Os: 32,967.000...002 rounded to 32,967). Worked out exactly only where
    the double is within rounding of a whole count (elsewhere both round up to the same count)."""
    share = percent / 100.0 * total
    above = math.ceil(share)
    if min(above - share, share - (above - 1)) > 1e-9 * max(1.0, share):
        return above
    return math.ceil(_long_double(_long_double(Fraction(percent) / 100) * total))


def _long_double(value: Fraction) -> Fraction:
    """``value`` rounded to the nearest number with a 64-bit significand (ties to even), as the x87 unit rounds."""
    if value <= 0:
        return value
    exponent = value.numerator.bit_length() - value.denominator.bit_length()
    if Fraction(2) ** exponent > value:
        exponent -= 1
    scale = Fraction(2) ** (63 - exponent)
    return Fraction(round(value * scale)) / scale


@dataclass(frozen=True)
class LatencySummary:
    """fio's ``clat_ns`` or ``lat_ns`` block for one direction (one job, or several merged)."""

    samples: int
    min_ns: int
    max_ns: int
    mean_ns: float
    stddev_ns: float
    histogram: LatencyHistogram | None = None
    # fio's own percentiles; used only where no bins exist (imported plain-json output of one job).
    reported_percentiles_ns: tuple[tuple[float, int], ...] = ()

    def percentile_ns(self, percent: float) -> int | None:
        if self.histogram is not None and self.histogram.total:
            return self.histogram.percentile_ns(percent)
        for pct, value in self.reported_percentiles_ns:
            if abs(pct - percent) < 1e-9:
                return value
        return None


@dataclass(frozen=True)
class DirectionMeasurement:
    """What one direction (read, write or trim) did in one job, client or repetition."""

    direction: Direction
    total_ios: int
    io_bytes: int
    runtime_ms: int
    iops: float
    bw_bytes_per_s: float
    clat: LatencySummary
    lat: LatencySummary


@dataclass(frozen=True)
class DiskUtil:
    """fio's ``disk_util`` entry: the device's own view while fio ran."""

    name: str
    read_ios: int
    write_ios: int
    util_pct: float
    host: str = ""


@dataclass(frozen=True)
class JobOutput:
    """One fio job (a numjobs clone is its own job) as fio reported it."""

    jobname: str
    error: int
    usr_cpu_pct: float
    sys_cpu_pct: float
    directions: tuple[DirectionMeasurement, ...]
    options: tuple[tuple[str, str], ...] = ()
    host: str = ""  # "address:port" of the fio server that ran it (client/server mode); "" for a local run
    runtime_ms: int = 0  # fio's job_runtime: the time its CPU percentages are of (0: not reported)


@dataclass(frozen=True)
class FioOutput:
    """A whole fio json/json+ document, parsed."""

    fio_version: str
    timestamp_s: int
    jobs: tuple[JobOutput, ...]
    disks: tuple[DiskUtil, ...]
    global_options: tuple[tuple[str, str], ...] = ()
    timestamp_ms: int = 0  # when fio wrote its report (end of the run), on the clock of the machine it ran on


@dataclass(frozen=True)
class ClientMeasurement:
    """One fio process tree (a host, a pod; one for a local run), its jobs merged."""

    client: str
    jobs: int
    job_errors: tuple[int, ...]
    cpu_usr_pct: float
    cpu_sys_pct: float
    directions: tuple[DirectionMeasurement, ...]
    disks: tuple[DiskUtil, ...] = ()

    def direction(self, direction: Direction) -> DirectionMeasurement | None:
        for measurement in self.directions:
            if measurement.direction == direction:
                return measurement
        return None


@dataclass(frozen=True)
class RepetitionOutcome:
    """What the executor hands back for one repetition: status, the exact inputs, the raw output."""

    status: Status
    started_at_s: float
    finished_at_s: float
    job_text: str
    command: tuple[str, ...]
    fio_version: str
    raw_output: str
    stderr_tail: str
    error: str = ""
    clients: tuple[ClientMeasurement, ...] = field(default=())
    start_skew_s: float | None = None  # spread of the moments the clients' servers started their jobs
    logs: tuple[tuple[str, str], ...] = ()  # fio's timeline logs, (file name, text) (`fio.logs`)
    faults: tuple[FaultRecord, ...] = ()  # what a plan's faults did during it, in order (`model.fault_record`)
    write_check: WriteCheck | None = None  # what `check_writes` read back after it
    # when the measured section ended (epoch s), where the executor knows it and then still has work to do (pods:
    # their common start + ramp + runtime; deleting them comes after); None: `finished_at_s`
    measured_end_s: float | None = None
