"""Turn existing fio json/json+ outputs into storbench cases and repetitions (pure); `storbench import` stores them
as one run."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from storbench.case_ids import case_id_for
from storbench.errors import UserError
from storbench.fio.merge import client_measurement, client_measurements_by_host
from storbench.model import (
    MAX_COUNT,
    MIXED_RW,
    RW_DIRECTIONS,
    Case,
    ClientMeasurement,
    Direction,
    FioOutput,
    ImportedTarget,
    JobOutput,
    RepetitionOutcome,
    Status,
    WorkloadPoint,
)
from storbench.redact import HIDDEN, is_secret_option
from storbench.units import fio_flag_set, parse_duration_s, parse_fio_size_bytes

if TYPE_CHECKING:
    pass

_MAPPED = {"rw", "readwrite", "bs", "blocksize", "iodepth", "numjobs", "runtime", "timeout", "ramp_time", "direct",
           "buffered", "ioengine", "rwmixread", "rwmixwrite", "size", "filename", "directory", "name", "time_based",
           "group_reporting", "output-format", "percentile_list", "lat_percentiles", "clat_percentiles"}
# fio's other names of the options storbench reads, and their meaning in the name read
_ALIASES = {"readwrite": "rw", "blocksize": "bs", "timeout": "runtime"}


def job_options(global_options: Mapping[str, str], options: Mapping[str, str]) -> dict[str, str]:
    """A job's options over the file's global ones, each under the name storbench reads (fio's aliases, and
    ``rwmixwrite``/``buffered`` as the ``rwmixread``/``direct`` they set): a job's ``readwrite=`` overrides a global
    ``rw=``, and ``rwmixwrite=30`` is 70 % reads (it had been read as fio's default 50, ``buffered=0`` as buffered,
    ``timeout=`` as no runtime)."""
    merged: dict[str, str] = {}
    for source in (global_options, options):
        for key, value in source.items():
            if key == "rwmixwrite" and value.strip().isdigit() and int(value) <= 100:
                merged["rwmixread"] = str(100 - int(value))
            elif key == "buffered":
                merged["direct"] = "0" if fio_flag_set(value) else "1"
            merged[_ALIASES.get(key, key)] = value
    return merged


@dataclass(frozen=True)
class ImportedRepetition:
    case: Case
    outcome: RepetitionOutcome


# A job option that is not a number, or one no database column can hold, is read as its default.
def _bounded(value: int, default: int) -> int:
    return value if abs(value) <= MAX_COUNT else default


def _size(text: str | None, default: int, kb_base: int = 1024) -> int:
    if not text:
        return default
    try:
        return _bounded(parse_fio_size_bytes(text.split(",")[0].split(":")[0], kb_base), default)
    except ValueError:
        return default


def _kb_base(options: Mapping[str, str]) -> int:
    """The job's kb_base, which decides what its units meant to fio (1024 unless it says 1000)."""
    return 1000 if options.get("kb_base", "").strip() == "1000" else 1024


def _int(text: str | None, default: int, low: int = 1, high: int = MAX_COUNT) -> int:
    """A count fio was given, or its default when it is not one fio takes (below ``low`` or above ``high``)."""
    try:
        value = int(text) if text else default
    except ValueError:
        return default
    return value if low <= value <= high else default


def _seconds(text: str | None) -> float:
    if not text:
        return 0.0
    try:
        return parse_duration_s(text)
    except ValueError:
        return 0.0


def _block_size(text: str | None, rw: str, kb_base: int = 1024) -> tuple[int, str | None]:
    """(the block size of the pattern's I/O, the option as written when reads, writes and trims differ: kept with
    the case, so `bs=4k,64k` is not the same point as `bs=4k`). fio's `bs=R,W,T`: a type left out after the last
    value takes that value (`8k,32k`: trims 32k), an empty one fio's default 4k (`,8k`, `8k,32k,`)."""
    fields = [part.split(":")[0].strip() for part in (text or "").split(",")][:3]
    sizes: list[int] = []
    for index in range(3):
        if index < len(fields):
            sizes.append(_size(fields[index], 4096, kb_base))
        else:
            sizes.append(sizes[-1])
    by_direction = dict(zip((Direction.READ, Direction.WRITE, Direction.TRIM), sizes, strict=True))
    return by_direction[RW_DIRECTIONS[rw][0]], (text if len(set(sizes)) > 1 else None)


def _case(options: Mapping[str, str], target_name: str) -> Case:
    rw = options.get("rw", "read").split(":")[0]
    if rw not in RW_DIRECTIONS:
        rw = "read"
    location = options.get("filename") or options.get("directory") or ""
    target = ImportedTarget(name=target_name, location=location or None)
    bs_bytes, bs_each = _block_size(options.get("bs"), rw, _kb_base(options))
    kept = [(k, HIDDEN if is_secret_option(k) else v) for k, v in options.items() if k not in _MAPPED]
    workload = WorkloadPoint(
        rw=rw,
        rwmixread=_int(options.get("rwmixread"), 50, low=0, high=100) if rw in MIXED_RW else None,
        bs_bytes=bs_bytes,
        iodepth=_int(options.get("iodepth"), 1),
        numjobs=_int(options.get("numjobs"), 1),
        runtime_s=_seconds(options.get("runtime")),
        ramp_s=_seconds(options.get("ramp_time")),
        direct=options.get("direct", "0") == "1",
        ioengine=options.get("ioengine", "psync"),
        size_bytes=_size(options.get("size"), 0, _kb_base(options)) or None,
        fio_options=tuple(sorted([*kept, *([("bs", bs_each)] if bs_each else [])])),
    )
    return Case(case_id=case_id_for(target, workload), target=target, workload=workload)


def _one_case(jobname: str, cases: Sequence[Case]) -> Case:
    """The case the jobs of one name ran: the same for all of them, or the import is refused (merged, jobs run one
    after another, or servers given other settings, would be summed as if one point ran at once)."""
    first = cases[0]
    for other in cases[1:]:
        if other.case_id != first.case_id:
            mine, theirs = first.parameters(), other.parameters()
            key = next((k for k in sorted(mine.keys() | theirs.keys()) if mine.get(k) != theirs.get(k)), "options")
            raise UserError(f"the jobs named '{jobname}' ran with different settings ({key}: {mine.get(key, '-')} "
                            f"and {theirs.get(key, '-')}); storbench would sum them as one point",
                            hint="give each job a name of its own (fio's name=), or import each setting's output as "
                                 "its own file")
    return first


def not_importable(output: FioOutput) -> UserError | None:
    """Why a parsed document is no fio output storbench can import, or None: no fio version (a JSON document of
    something else, `{"jobs": [{}]}` had become a failed repetition of 1970), or fio before 3.0 (latency in µs under
    other names, no histograms: its figures had read 0 ns and 0 MiB/s)."""
    version = re.fullmatch(r"fio-([0-9]+)\.[0-9]+.*", output.fio_version.strip())
    if version is None:
        return UserError("no 'fio version' in it: not fio's JSON output",
                         hint="pass fio --output-format=json+ (or json) output files")
    if int(version[1]) < 3:
        return UserError(f"{output.fio_version.strip()}'s output (latency in µs, no histograms): storbench reads "
                         "fio 3.0 or later", hint="run the job again with fio 3.x (--output-format=json+)")
    return None


def import_fio_output(output: FioOutput, raw_text: str, target_name: str) -> list[ImportedRepetition]:
    """One repetition per job name in the file: its jobs merged exactly (numjobs clones); in client/server output
    each fio server a client of its own (the case then has that many clients). Times are fio's: it writes its
    report when the run ends."""
    by_name: dict[str, list[JobOutput]] = {}
    for job in output.jobs:
        by_name.setdefault(job.jobname, []).append(job)
    imported: list[ImportedRepetition] = []
    global_options = dict(output.global_options)
    ended = output.timestamp_ms / 1000 if output.timestamp_ms else float(output.timestamp_s)
    for jobname, jobs in by_name.items():
        options = [job_options(global_options, dict(job.options)) for job in jobs]
        case = _one_case(jobname, [_case(one, target_name) for one in options])
        ran = replace(output, jobs=tuple(jobs))
        hosts = list(dict.fromkeys(job.host for job in jobs))
        # a size-based job's clones end apart: their I/O over the longest one's runtime, as fio's group report (their
        # rates added had counted a clone that had finished as still working)
        size_based = not fio_flag_set(options[0].get("time_based", "0"))
        clients: tuple[ClientMeasurement, ...]
        if hosts == [""]:
            clients = (client_measurement(ran, client="imported", size_based=size_based),)
        else:
            clients = tuple(client_measurements_by_host(ran, size_based=size_based))
            case = replace(case, clients=len(clients),
                           case_id=case_id_for(case.target, case.workload, len(clients)))
        errors = [e for c in clients for e in c.job_errors]
        error = f"fio job error {errors[0]}" if errors else ""
        if not any(c.directions for c in clients) and not error:
            error = f"job '{jobname}' did no I/O"
        runtime_s = max((d.runtime_ms for c in clients for d in c.directions), default=0) / 1000
        imported.append(
            ImportedRepetition(
                case=case,
                outcome=RepetitionOutcome(
                    status=Status.FAILED if error else Status.OK,
                    started_at_s=ended - runtime_s - case.workload.ramp_s, finished_at_s=ended,
                    job_text="", command=(), fio_version=output.fio_version, raw_output=raw_text, stderr_tail="",
                    error=error, clients=clients,
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
    source_sha256: str = ""  # of the fio report in the file (`report_sha256`): imported again, it is recognised


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
    """Of a file's whole text: how imports before this version knew a file (`report_sha256` now)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def report_sha256(output: FioOutput) -> str:
    """Of the fio report a file holds, not of its bytes: the same run saved with a newline more, with fio's
    messages before it, or as json and json+ (one run: fio's version, its report's time, each job's I/O) is
    known as imported (its bytes' hash had imported it again, and `show` gave one run twice as two repetitions)."""
    jobs = sorted((job.host, job.jobname, tuple((d.direction.value, d.total_ios, d.io_bytes, d.runtime_ms)
                                                 for d in job.directions)) for job in output.jobs)
    report = (output.fio_version, output.timestamp_s, output.timestamp_ms, jobs)
    return hashlib.sha256(repr(report).encode()).hexdigest()


def prepare_import(files: Sequence[FioFile], target_name: str) -> PreparedImport:
    """The files' jobs as repetitions, numbered per case in file order (a case seen twice is repeated)."""
    counts: dict[str, int] = {}
    repetitions: list[NumberedRepetition] = []
    for file in files:
        for item in import_fio_output(file.output, file.text, target_name):
            rep_index = counts.get(item.case.case_id, 0)
            counts[item.case.case_id] = rep_index + 1
            repetitions.append(NumberedRepetition(item.case, rep_index, item.outcome, file.name,
                                                  report_sha256(file.output)))
    return PreparedImport(
        plan_text="# imported from:\n" + "\n".join(f"# {f.name}" for f in files) + "\n",
        fio_version=",".join(sorted({f.output.fio_version for f in files})),
        repetitions=tuple(repetitions),
    )
