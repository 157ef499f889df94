"""One point (case and direction) over its repetitions: `PointSummary`, its estimates, warnings and verdict; the
workload fields labels do not show by default and which of them tell points apart."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields

from storbench.model import Case, Direction, Expectation, WorkloadPoint, is_metadata, is_object, is_volume_operation
from storbench.stats.bottleneck import Bottleneck, BottleneckVerdict
from storbench.stats.curve import Axis, CurveKey, curve_key
from storbench.stats.estimate import Estimate
from storbench.stats.point_warnings import StatWarning

NOT_JUDGED = BottleneckVerdict(Bottleneck.UNKNOWN, "not judged")


# Workload fields no label shows by default: when they vary among what is displayed, labels add them
# (`report.labels.hidden_text` says them).
HIDDEN_FIELDS = ("ioengine", "direct", "size_bytes", "runtime_s", "ramp_s", "files", "file_size_bytes", "dirs",
                 "fio_options", "timeline_window_ms")  # the last: a case run with faults (its own case id)


def hidden_values(w: WorkloadPoint) -> tuple[tuple[str, object], ...]:
    """(field, value) of every field in ``HIDDEN_FIELDS`` that has a value."""
    out: list[tuple[str, object]] = []
    for field in HIDDEN_FIELDS:
        if field in ("ioengine", "direct") and is_volume_operation(w.rw):
            continue  # no fio
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


def distinct_targets(targets: Sequence[object]) -> list[tuple[str, ...]]:
    """For each point's target (``Case.target``), ``target.<field>`` for each field in which the targets of its name
    differ (two imports both named "imported", one on /dev/a, one on /dev/b; a plan whose path changed between
    runs): their points had read alike in every label and been drawn as one series."""
    by_name: dict[str, set[object]] = {}
    for target in targets:
        by_name.setdefault(str(getattr(target, "name", "")), set()).add(target)
    apart: dict[str, tuple[str, ...]] = {}
    for name, kinds in by_name.items():
        if len(kinds) > 1:
            names = dict.fromkeys(f.name for t in kinds for f in dataclass_fields(t))  # type: ignore[arg-type]
            apart[name] = tuple(f"target.{f}" for f in dict.fromkeys(("kind", *names))
                                if len({getattr(t, f, None) for t in kinds}) > 1)
    return [apart.get(str(getattr(target, "name", "")), ()) for target in targets]


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
    # without total-latency bins: `metric_values.lat_percentiles_from`), "clat,lat" (both among its repetitions)
    # or "" (none)
    lat_percentiles_from: str = ""
    # a case of several directions (randrw): its IOPS and throughput summed over them, repetition by repetition
    # ("iops", "bw_bytes_per_s"): what a declared limit (`expect:`, all directions) is measured against
    case_totals: tuple[tuple[str, Estimate], ...] = ()

    def share_of_expected(self) -> tuple[float, str] | None:
        """(measured / expected, "IOPS" or "throughput") when the target declared what it should do: IOPS
        where declared, else throughput. A direction of a mixed case is measured by its case's total (the
        declared limit is of all directions: 2,100 reads and 900 writes at a 3,000 IOPS limit had been 70 %)."""
        if self.expected is None:
            return None
        totals = dict(self.case_totals)
        iops, bw = totals.get("iops", self.metric("iops")), totals.get("bw_bytes_per_s", self.metric("bw_bytes_per_s"))
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
