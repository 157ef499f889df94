"""What came back: fio's output parsed (jobs, directions, latency summaries and their histograms), one client's
measurement and one repetition's judged outcome. Counts are exact integers. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from storbench.model.fault_record import FaultRecord, WriteCheck
from storbench.model.operations import Direction, Status

__all__ = [
    "MAX_COUNT", "ClientMeasurement", "DirectionMeasurement", "DiskUtil", "FioOutput", "JobOutput", "LatencyHistogram",
    "LatencySummary", "RepetitionOutcome", "count_sum",
]

# The most a count (I/Os, bytes, samples, a latency bin) can be: SQLite's INTEGER and numpy's int64 hold no more.
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


@dataclass(frozen=True, eq=False)
class LatencyHistogram:
    """fio's json+ latency bins: bin values in ns (sorted, unique) and the number of I/Os in each.

    fio's bins are the same for every job and client, so merging is adding counts per bin. Arrays keep
    merging thousands of clients fast; ``bins`` gives the (value, count) pairs. Counts are added as integers,
    never through floats; a negative count, or a histogram of more than MAX_COUNT I/Os, is refused (ValueError).
    """

    values_ns: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]

    @staticmethod
    def from_arrays(values_ns: npt.ArrayLike, counts: npt.ArrayLike) -> LatencyHistogram:
        try:
            values = np.asarray(values_ns, dtype=np.int64)
            weights = np.asarray(counts, dtype=np.int64)
        except OverflowError:
            raise ValueError(f"bins hold a value or count past {MAX_COUNT}") from None
        if values.size == 0:
            return LatencyHistogram(np.zeros(0, np.int64), np.zeros(0, np.int64))
        if weights.min() < 0:
            raise ValueError(f"bins hold a count of {int(weights.min())} I/Os")
        if int(weights.max()) * weights.size > MAX_COUNT:  # int64 sums could wrap: add them exactly first
            count_sum(weights.tolist(), "bins")
        order = np.argsort(values, kind="stable")
        ordered = values[order]
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        summed = np.add.reduceat(weights[order], starts)
        keep = summed != 0
        return LatencyHistogram(ordered[starts][keep], summed[keep])

    @staticmethod
    def from_counts(pairs: Iterable[tuple[int, int]]) -> LatencyHistogram:
        items = list(pairs)
        return LatencyHistogram.from_arrays([v for v, _ in items], [c for _, c in items])

    @staticmethod
    def merge_all(histograms: Sequence[LatencyHistogram]) -> LatencyHistogram:
        if not histograms:
            return LatencyHistogram.from_arrays([], [])
        if len(histograms) == 1:
            return histograms[0]
        return LatencyHistogram.from_arrays(np.concatenate([h.values_ns for h in histograms]),
                                            np.concatenate([h.counts for h in histograms]))

    @property
    def bins(self) -> tuple[tuple[int, int], ...]:
        return tuple(zip(self.values_ns.tolist(), self.counts.tolist(), strict=True))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LatencyHistogram):
            return NotImplemented
        return bool(np.array_equal(self.values_ns, other.values_ns) and np.array_equal(self.counts, other.counts))

    def __hash__(self) -> int:
        return hash((self.values_ns.tobytes(), self.counts.tobytes()))

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def merged(self, *others: LatencyHistogram) -> LatencyHistogram:
        return LatencyHistogram.merge_all([self, *others])

    def percentile_ns(self, percent: float) -> int | None:
        """fio's own rule: the first bin whose cumulative count reaches percent/100 of all I/Os."""
        total = self.total
        if total == 0:
            return None
        cumulative = np.cumsum(self.counts)
        index = int(np.searchsorted(cumulative, percent / 100.0 * total, side="left"))
        return int(self.values_ns[min(index, self.values_ns.size - 1)])

    def cdf(self) -> tuple[tuple[int, float], ...]:
        """(value ns, fraction of I/Os at or below it) per bin."""
        total = self.total
        if total == 0:
            return ()
        fractions = np.cumsum(self.counts) / total
        return tuple(zip(self.values_ns.tolist(), fractions.tolist(), strict=True))


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
    bw_bytes: float
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
