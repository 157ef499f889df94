"""Turn existing fio json/json+ outputs into storbench cases and repetitions (pure); `storbench import` stores them
as one run."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from storbench.case_ids import case_id_for
from storbench.fio.parse import client_measurement
from storbench.model import (
    MAX_COUNT,
    MIXED_RW,
    RW_DIRECTIONS,
    Case,
    FioOutput,
    ImportedTarget,
    RepetitionOutcome,
    Status,
    WorkloadPoint,
)
from storbench.redact import HIDDEN, is_secret_option
from storbench.units import parse_duration_s, parse_fio_size_bytes

if TYPE_CHECKING:
    pass

_MAPPED = {"rw", "readwrite", "bs", "blocksize", "iodepth", "numjobs", "runtime", "ramp_time", "direct", "ioengine",
           "rwmixread", "size", "filename", "directory", "name", "time_based", "group_reporting", "output-format",
           "percentile_list", "lat_percentiles", "clat_percentiles"}


@dataclass(frozen=True)
class ImportedRepetition:
    case: Case
    outcome: RepetitionOutcome


# A job option that is not a number, or one no database column can hold, is read as its default.
def _bounded(value: int, default: int) -> int:
    return value if abs(value) <= MAX_COUNT else default


def _size(text: str | None, default: int) -> int:
    if not text:
        return default
    try:
        return _bounded(parse_fio_size_bytes(text.split(",")[0].split(":")[0]), default)
    except ValueError:
        return default


def _int(text: str | None, default: int) -> int:
    try:
        return _bounded(int(text), default) if text else default
    except ValueError:
        return default


def _seconds(text: str | None) -> float:
    if not text:
        return 0.0
    try:
        return parse_duration_s(text)
    except ValueError:
        return 0.0


def _case(options: Mapping[str, str], target_name: str) -> Case:
    rw = options.get("rw", options.get("readwrite", "read")).split(":")[0]
    if rw not in RW_DIRECTIONS:
        rw = "read"
    location = options.get("filename") or options.get("directory") or ""
    target = ImportedTarget(name=target_name, location=location or None)
    workload = WorkloadPoint(
        rw=rw,
        rwmixread=_int(options.get("rwmixread"), 50) if rw in MIXED_RW else None,
        bs_bytes=_size(options.get("bs", options.get("blocksize")), 4096),
        iodepth=_int(options.get("iodepth"), 1),
        numjobs=_int(options.get("numjobs"), 1),
        runtime_s=_seconds(options.get("runtime")),
        ramp_s=_seconds(options.get("ramp_time")),
        direct=options.get("direct", "0") == "1",
        ioengine=options.get("ioengine", "psync"),
        size_bytes=_size(options.get("size"), 0) or None,
        fio_options=tuple(sorted((k, HIDDEN if is_secret_option(k) else v) for k, v in options.items()
                                 if k not in _MAPPED)),
    )
    return Case(case_id=case_id_for(target, workload), target=target, workload=workload)


def import_fio_output(output: FioOutput, raw_text: str, target_name: str) -> list[ImportedRepetition]:
    """One repetition per job name in the file (numjobs clones merged exactly)."""
    by_name: dict[str, list[int]] = {}
    for index, job in enumerate(output.jobs):
        by_name.setdefault(job.jobname, []).append(index)
    imported: list[ImportedRepetition] = []
    global_options = dict(output.global_options)
    for jobname, indexes in by_name.items():
        jobs = tuple(output.jobs[i] for i in indexes)
        options = {**global_options, **dict(jobs[0].options)}
        case = _case(options, target_name)
        measurement = client_measurement(FioOutput(output.fio_version, output.timestamp_s, jobs, output.disks),
                                         client="imported")
        error = f"fio job error {measurement.job_errors[0]}" if measurement.job_errors else ""
        if not measurement.directions and not error:
            error = f"job '{jobname}' did no I/O"
        started = float(output.timestamp_s)
        finished = started + max((d.runtime_ms for d in measurement.directions), default=0) / 1000
        imported.append(
            ImportedRepetition(
                case=case,
                outcome=RepetitionOutcome(
                    status=Status.FAILED if error else Status.OK, started_at_s=started, finished_at_s=finished,
                    job_text="", command=(), fio_version=output.fio_version, raw_output=raw_text, stderr_tail="",
                    error=error, clients=(measurement,),
                ),
            )
        )
    return imported


@dataclass(frozen=True)
class FioFile:
    """One file given to `storbench import`: its name, its text and fio's output parsed from it."""

    name: str
    text: str
    output: FioOutput


@dataclass(frozen=True)
class NumberedRepetition:
    """An imported repetition with its index among the repetitions of its case and the file it came from."""

    case: Case
    rep_index: int
    outcome: RepetitionOutcome
    source: str
    source_sha256: str = ""  # of the file's text: the same output imported again is recognised


@dataclass(frozen=True)
class PreparedImport:
    """Everything one import stores: the run's plan text and fio versions, and its repetitions in order."""

    plan_text: str
    fio_version: str
    repetitions: tuple[NumberedRepetition, ...]

    @property
    def cases(self) -> int:
        return len({r.case.case_id for r in self.repetitions})


def file_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def prepare_import(files: Sequence[FioFile], target_name: str) -> PreparedImport:
    """The files' jobs as repetitions, numbered per case in file order (a case seen twice is repeated)."""
    counts: dict[str, int] = {}
    repetitions: list[NumberedRepetition] = []
    for file in files:
        for item in import_fio_output(file.output, file.text, target_name):
            rep_index = counts.get(item.case.case_id, 0)
            counts[item.case.case_id] = rep_index + 1
            repetitions.append(NumberedRepetition(item.case, rep_index, item.outcome, file.name,
                                                  file_sha256(file.text)))
    return PreparedImport(
        plan_text="# imported from:\n" + "\n".join(f"# {f.name}" for f in files) + "\n",
        fio_version=",".join(sorted({f.output.fio_version for f in files})),
        repetitions=tuple(repetitions),
    )
