"""fio json / json+ output -> typed measurements (merging jobs and clients: `fio.merge`). Pure."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace

from storbench.errors import UserError
from storbench.model import (
    FILL_JOB,
    MAX_COUNT,
    PHASE_AS_TRIM,
    DirectionMeasurement,
    DiskUtil,
    FioOutput,
    JobOutput,
    LatencyHistogram,
    LatencySummary,
    count_sum,
)
from storbench.model import Direction as Dir

JsonObject = Mapping[str, object]

# the delete phase of rw: metadata: its section is named after the 12 hex digits of its case id
PHASE_JOB_RE = r"[0-9a-f]{12}" + re.escape(PHASE_AS_TRIM)


def _obj(value: object, what: str) -> JsonObject:
    if not isinstance(value, Mapping):
        raise ValueError(f"fio output: expected an object for {what}")
    return value


# fio never writes a count, size, time or rate below zero or past MAX_COUNT, a NaN or an infinity, a histogram bin
# with a negative count or a percentile below a lower one: such a value is refused with its field named. Whole
# numbers stay integers (exact past 2**53).


def _value(mapping: JsonObject, key: str, default: float, where: str) -> int | float:
    value = mapping.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"fio output: {where}{key!r} is not a number")
    if (isinstance(value, float) and not math.isfinite(value)) or value < 0:
        raise ValueError(f"fio output: {where}{key} is {value}, which fio never writes")
    if value > MAX_COUNT:
        raise ValueError(f"fio output: {where}{key} is past {MAX_COUNT}, too large for a count")
    return value


def _num(mapping: JsonObject, key: str, default: float = 0.0, where: str = "") -> float:
    return float(_value(mapping, key, default, where))


def _int(mapping: JsonObject, key: str, default: int = 0, where: str = "") -> int:
    return int(_value(mapping, key, default, where))


def _whole(text: object, what: str) -> int:
    """A non-negative whole number from a JSON key or value (bins: latency -> count; percentiles: value)."""
    if isinstance(text, bool) or not isinstance(text, int | float | str):
        raise ValueError(f"fio output: {what} is not a number")
    number: int | float
    if not isinstance(text, str):
        number = text
    else:
        try:
            number = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                raise ValueError(f"fio output: {what} {text!r} is not a number") from None
    if (isinstance(number, float) and (not math.isfinite(number) or number != int(number))) or number < 0 \
            or number > MAX_COUNT:
        raise ValueError(f"fio output: {what} is {text!r}, which fio never writes")
    return int(number)


def _latency(block: JsonObject, where: str = "") -> LatencySummary:
    samples = _int(block, "N", where=where)
    bins_obj = block.get("bins")
    histogram = None
    if isinstance(bins_obj, Mapping):
        values = [_whole(k, f"{where}bins key") for k in bins_obj]
        counts = [_whole(v, f"{where}bins count at {k}") for k, v in bins_obj.items()]
        try:
            histogram = LatencyHistogram.from_arrays(values, counts)
        except ValueError as exc:
            raise ValueError(f"fio output: {where}{exc}") from None
    reported: list[tuple[float, int]] = []
    percentile_obj = block.get("percentile")
    if isinstance(percentile_obj, Mapping):
        for pct, value in percentile_obj.items():
            try:
                level = float(pct)
            except ValueError:
                raise ValueError(f"fio output: {where}percentile {pct!r} is not a percentage") from None
            if not 0 <= level <= 100:
                raise ValueError(f"fio output: {where}percentile {pct!r} is not a percentage")
            reported.append((level, _whole(value, f"{where}percentile {pct}")))
        reported.sort()
        if any(b[1] < a[1] for a, b in itertools.pairwise(reported)):
            raise ValueError(f"fio output: {where}percentile values out of order (a higher percentile below a "
                             "lower one)")
    return LatencySummary(
        samples=samples,
        min_ns=_int(block, "min", where=where),
        max_ns=_int(block, "max", where=where),
        mean_ns=_num(block, "mean", where=where),
        stddev_ns=_num(block, "stddev", where=where),
        histogram=histogram,
        reported_percentiles_ns=tuple(reported),
    )


def _direction(direction: Dir, block: JsonObject) -> DirectionMeasurement:
    clat = _latency(_obj(block.get("clat_ns", {}), "clat_ns"), f"{direction.value}.clat_ns.")
    lat = _latency(_obj(block.get("lat_ns", {}), "lat_ns"), f"{direction.value}.lat_ns.")
    where = f"{direction.value}."
    if lat.samples == 0 and clat.samples > 0:  # fio's file engines time each operation as completion latency only
        lat = clat
    return DirectionMeasurement(
        direction=direction,
        total_ios=_int(block, "total_ios", where=where),
        io_bytes=_int(block, "io_bytes", where=where),
        runtime_ms=_int(block, "runtime", where=where),
        iops=_num(block, "iops", where=where),
        bw_bytes_per_s=_num(block, "bw_bytes", where=where),
        clat=clat,
        lat=lat,
    )


def _options(value: object) -> tuple[tuple[str, str], ...]:
    """fio's "global options": one object, or (fio >= 3.39 with several servers) a list of them, one per server."""
    sections = value if isinstance(value, list) else [value]
    pairs = {(str(k), str(v)) for section in sections if isinstance(section, Mapping) for k, v in section.items()}
    return tuple(sorted(pairs))


def _host(entry: JsonObject) -> str:
    """'address:port' of the fio server an entry of client/server output came from ('' otherwise)."""
    hostname = entry.get("hostname")
    if not isinstance(hostname, str) or not hostname:
        return ""
    port = entry.get("port")
    return f"{hostname}:{port}" if isinstance(port, int) else hostname


def json_after_messages(text: str) -> str:
    """fio's client writes the servers' messages ('<host> Starting 1 process') to the output file before the
    JSON document: the document starts at the first line that is exactly '{'."""
    if text.startswith("{"):
        return text
    return embedded_fio_json(text) or text


def parse_fio_json(text: str) -> FioOutput:
    """Parse one fio ``--output-format=json`` or ``json+`` document.

    Raises ValueError when the text is not fio JSON.
    """
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} at line {exc.lineno}") from None
    except RecursionError:
        raise ValueError("not fio JSON: nested too deeply") from None
    root = _obj(document, "the document")
    jobs_value = root.get("jobs", root.get("client_stats"))
    if not isinstance(jobs_value, list):
        raise ValueError("no 'jobs' list: is this fio JSON output?")
    jobs: list[JobOutput] = []
    for raw_job in jobs_value:
        job = _obj(raw_job, "a job")
        if job.get("jobname") == "All clients":
            continue  # fio's client/server sum carries no bins; we merge clients ourselves
        if job.get("jobname") == FILL_JOB:
            continue  # the unmeasured PUT of the objects a get or delete_object job works on
        directions = tuple(
            _direction(direction, _obj(job[direction.value], direction.value))
            for direction in Dir
            if isinstance(job.get(direction.value), Mapping)
        )
        if re.fullmatch(PHASE_JOB_RE, str(job.get("jobname", ""))):  # the delete phase of storbench's rw: metadata
            # (its section `<case id>.delete`; an imported job of the user's named `nightly.delete` writes)
            directions = tuple(replace(d, direction=Dir.TRIM) if d.direction == Dir.WRITE else d
                               for d in directions)
        jobs.append(
            JobOutput(
                host=_host(job),
                jobname=str(job.get("jobname", "")),
                error=_int(job, "error"),
                usr_cpu_pct=_num(job, "usr_cpu"),
                sys_cpu_pct=_num(job, "sys_cpu"),
                directions=directions,
                options=_options(job.get("job options")),
                runtime_ms=_int(job, "job_runtime") if isinstance(job.get("job_runtime"), int) else 0,
            )
        )
    check_mergeable((m for job in jobs for m in job.directions), "fio output")
    disks: list[DiskUtil] = []
    disk_value = root.get("disk_util", [])
    if isinstance(disk_value, list):
        for raw_disk in disk_value:
            disk = _obj(raw_disk, "disk_util")
            disks.append(
                DiskUtil(
                    name=str(disk.get("name", "")),
                    read_ios=_int(disk, "read_ios"),
                    write_ios=_int(disk, "write_ios"),
                    util_pct=_num(disk, "util"),
                    host=_host(disk),
                )
            )
    return FioOutput(
        fio_version=str(root.get("fio version", "")),
        timestamp_s=_int(root, "timestamp"),
        timestamp_ms=_int(root, "timestamp_ms"),
        jobs=tuple(jobs),
        disks=tuple(disks),
        global_options=_options(root.get("global options")),
    )


def check_mergeable(measurements: Iterable[DirectionMeasurement], what: str) -> None:
    """Each merge of some of these measurements (numjobs clones, one server's jobs, a repetition's clients, a
    point's repetitions) adds up some of their counts: when the sums over all of them fit in a count, every merge
    does. Raises ValueError ("``what``: ...") when they do not."""
    by_direction: dict[Dir, list[DirectionMeasurement]] = {}
    for m in measurements:
        by_direction.setdefault(m.direction, []).append(m)
    for direction, parts in by_direction.items():
        where = f"{what}: {direction.value}."
        count_sum((m.total_ios for m in parts), f"{where}total_ios of all jobs")
        count_sum((m.io_bytes for m in parts), f"{where}io_bytes of all jobs")
        for name, summaries in (("clat_ns", [m.clat for m in parts]), ("lat_ns", [m.lat for m in parts])):
            count_sum((s.samples for s in summaries), f"{where}{name}.N of all jobs")
            count_sum((s.histogram.total for s in summaries if s.histogram is not None),
                      f"{where}{name}.bins of all jobs")


def embedded_fio_json(text: str, *, last: bool = False) -> str | None:
    """The JSON document inside fio output with text around it: `--output-format=normal,json` (the human
    summary beside it), warnings before it, messages after it. None when there is none. ``last``: of several
    (`--status-interval` writes one each interval, the final report last), the last."""
    decoder = json.JSONDecoder()
    found_text = None
    position = 0
    for found in re.finditer(r"(?m)^\{[ \t]*$", text):  # fio starts its document on a line of its own
        if found.start() < position:
            continue  # a line inside the document just read
        try:
            _, end = decoder.raw_decode(text, found.start())
        except (ValueError, RecursionError):
            continue
        found_text, position = text[found.start():end], end
        if not last:
            break
    return found_text


def load_fio_json_lenient(text: str, where: str) -> FioOutput:
    """For importing files people saved themselves: tolerate text fio printed before or after the JSON."""
    try:
        return parse_fio_json(text)
    except ValueError as first_error:
        document = embedded_fio_json(text, last=True)
        if document is None or document == text:
            raise UserError(str(first_error), where=where, hint="pass fio --output-format=json+ output") from None
        try:
            return parse_fio_json(document)
        except ValueError as exc:
            raise UserError(str(exc), where=where, hint="pass fio --output-format=json+ output") from None


# ---------------------------------------------------------------------------------------------
# Exact merging
