"""Per point (case and direction): every metric's estimate over repetitions, and warnings with their fix."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from storbench.model import Direction, Status
from storbench.records import Record, lab_parameters
from storbench.stats.estimate import Estimate, estimate
from storbench.stats.metrics import SUMMARY_METRICS
from storbench.units import format_bytes

SUMMARY_FIELDS = tuple(metric.field for metric in SUMMARY_METRICS)
CV_LIMIT_PCT = 5.0
MIN_REPETITIONS = 3


WARNING_TITLES = {
    "failed_repetitions": "failed repetitions",
    "few_repetitions": f"fewer than {MIN_REPETITIONS} repetitions",
    "high_cv": f"run-to-run spread (CV) above {CV_LIMIT_PCT:.0f} %",
    "runtime_shorter_than_ramp": "runtime shorter than ramp",
    "page_cache": "working set fits in the page cache",
}


@dataclass(frozen=True)
class StatWarning:
    """Something that makes a number less trustworthy, and what to do about it."""

    code: str
    message: str
    fix: str

    def text(self) -> str:
        return f"{self.message}: {self.fix}"


@dataclass(frozen=True)
class PointSummary:
    """One case and direction over its repetitions (possibly from several runs of the same case)."""

    case_id: str
    run_ids: tuple[int, ...]
    target: str
    target_kind: str
    rw: str
    rwmixread: int | None
    bs: str
    bs_bytes: int
    iodepth: int
    numjobs: int
    clients: int
    direction: str
    ioengine: str
    direct: bool
    runtime_s: float
    ramp_s: float
    fio_options: str
    lab: tuple[tuple[str, str], ...]
    fio_versions: tuple[str, ...]
    repetitions_ok: int
    repetitions_total: int
    estimates: tuple[tuple[str, Estimate], ...]
    warnings: tuple[StatWarning, ...]
    last_error: str

    def metric(self, field: str) -> Estimate | None:
        for name, value in self.estimates:
            if name == field:
                return value
        return None


def point_warnings(records: Sequence[Record], ok: Sequence[Record], iops: Estimate | None,
                   mem_total_bytes: int | None) -> list[StatWarning]:
    first = records[0]
    warnings: list[StatWarning] = []
    total = len({(r.run_id, r.repeat) for r in records})
    succeeded = len({(r.run_id, r.repeat) for r in ok})
    if succeeded < total:
        warnings.append(StatWarning("failed_repetitions", f"{total - succeeded} of {total} repetitions failed",
                                    "see `storbench export` for their errors; rerun with --resume"))
    if iops is not None and iops.n < MIN_REPETITIONS:
        warnings.append(StatWarning(
            "few_repetitions", f"n={iops.n}" + (": no confidence interval" if iops.n < 2 else ": a wide interval"),
            f"set repeat: {MIN_REPETITIONS} or more"))
    cv = iops.cv_pct if iops else None
    if cv is not None and cv > CV_LIMIT_PCT:
        warnings.append(StatWarning("high_cv", f"CV {cv:.0f} % > {CV_LIMIT_PCT:.0f} %",
                                    "add repetitions or lengthen runtime"))
    if first.runtime_s < first.ramp_s:
        warnings.append(StatWarning("runtime_shorter_than_ramp",
                                    f"runtime {first.runtime_s:g}s is shorter than ramp {first.ramp_s:g}s",
                                    "measure for longer than you warm up"))
    working_set = (first.size_bytes or 0) * first.numjobs * first.clients
    buffered_file_io = first.target_kind in ("path", "cephfs") and not first.direct
    if buffered_file_io and mem_total_bytes and 0 < working_set <= mem_total_bytes:
        warnings.append(StatWarning(
            "page_cache", f"working set fits in page cache (buffered I/O, {format_bytes(working_set)} of "
            f"{format_bytes(mem_total_bytes)} RAM)", "set direct: true, or a size larger than RAM"))
    return warnings


def summarize_points(records: Sequence[Record], mem_total_bytes: Mapping[int, int | None] | None = None,
                     metrics: Sequence[str] = SUMMARY_FIELDS) -> list[PointSummary]:
    """Group by (case, direction) in first-seen order; estimate each metric over ok repetitions."""
    memory = mem_total_bytes or {}
    groups: dict[str, list[Record]] = {}
    for record in records:
        groups.setdefault(record.case_id, []).append(record)
    out: list[PointSummary] = []
    for case_id, group in groups.items():
        ok = [r for r in group if r.status == Status.OK.value]
        directions = [d.value for d in Direction if any(r.direction == d.value for r in ok)] or [""]
        failed = [r for r in group if r.status != Status.OK.value]
        first = group[0]
        run_mem = [memory.get(r.run_id) for r in group]
        mem = min((m for m in run_mem if m), default=None)
        for direction in directions:
            rows = [r for r in ok if r.direction == direction]
            estimates = []
            for field in metrics:
                values = [getattr(r, field) for r in rows if getattr(r, field) is not None]
                value = estimate(values)
                if value is not None:
                    estimates.append((field, value))
            iops = dict(estimates).get("iops")
            out.append(PointSummary(
                case_id=case_id, run_ids=tuple(sorted({r.run_id for r in group})), target=first.target,
                target_kind=first.target_kind, rw=first.rw, rwmixread=first.rwmixread, bs=first.bs,
                bs_bytes=first.bs_bytes, iodepth=first.iodepth, numjobs=first.numjobs, clients=first.clients,
                direction=direction, ioengine=first.ioengine, direct=first.direct, runtime_s=first.runtime_s,
                ramp_s=first.ramp_s, fio_options=first.fio_options,
                lab=tuple(sorted(lab_parameters(first).items())),
                fio_versions=tuple(sorted({r.fio_version for r in group})),
                repetitions_ok=len({(r.run_id, r.repeat) for r in rows}),
                repetitions_total=len({(r.run_id, r.repeat) for r in group}),
                estimates=tuple(estimates),
                warnings=tuple(point_warnings(group, rows, iops, mem)),
                last_error=failed[-1].error if failed else "",
            ))
    return out
