"""Rows of the results database and the model's values they hold: runs, cases (their targets and workloads as
versioned JSON), clients, measurements and telemetry. Pure conversions, but for the inserts into a connection (and
the one read `object_prefixes`)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any, Protocol, TypeAlias, TypeVar

from storbench.errors import UserError
from storbench.model import (
    BlockTarget,
    Case,
    CephfsTarget,
    ClientMeasurement,
    Direction,
    DirectionMeasurement,
    ImportedTarget,
    LabPoint,
    LatencySummary,
    MergedFrom,
    NfsTarget,
    PathTarget,
    Precondition,
    PreconditionRecord,
    PvcTarget,
    RbdTarget,
    RunInfo,
    S3Target,
    Status,
    TargetSpec,
    WorkloadPoint,
)
from storbench.run_design import RunDesign, design_from_json, design_to_json
from storbench.store.codec import decode_histogram, encode_histogram
from storbench.telemetry.series import RepetitionTelemetry


class Connection(Protocol):
    """What the store asks of a connection: sqlite3's, or PostgreSQL's that speaks as it does (`store.postgres`);
    the store's statements are written in the SQL both share. ``with conn:`` is one transaction."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...

    def executemany(self, sql: str, parameters: Any, /) -> Any: ...

    def close(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, kind: Any, value: Any, trace: Any, /) -> Any: ...


Row: TypeAlias = Any  # sqlite3.Row or store.postgres.Row: read by column name or position


class IntegrityRefused(UserError):
    """A write the store refused for its rows' integrity (a row that points nowhere, a key twice): SQLite raises
    its IntegrityError, the PostgreSQL store this (`store.postgres`); an import says what it means."""


def run_info(row: Row) -> RunInfo:
    return RunInfo(
        run_id=row["id"], plan_name=row["plan_name"], plan_text=row["plan_text"], source=row["source"],
        storbench_version=row["storbench_version"], fio_version=row["fio_version"], host=row["host"],
        kernel=row["kernel"], run_order=row["run_order"], seed=row["seed"], tags=tuple(json.loads(row["tags_json"])),
        started_at_s=row["started_at_s"], finished_at_s=row["finished_at_s"],
        mem_total_bytes=row["mem_total_bytes"], cpu_count=row["cpu_count"],
        plan_path=row["plan_path"] if "plan_path" in row.keys() else None,  # noqa: SIM118 (Row's `in` is values)
        design=design_from_text(row["design_json"]),
        labels=tuple(sorted(json.loads(row["labels_json"]).items())),
        merged_from=merged_from(json.loads(row["merged_from_json"])),
        software=tuple(sorted((str(k), str(v)) for k, v in json.loads(row["software_json"]).items())),
    )


def merged_from(raw: dict[str, Any]) -> MergedFrom | None:
    """runs.merged_from_json read back ('{}': a run made here)."""
    if not raw:
        return None
    return MergedFrom(str(raw["database"]), int(raw["run_id"]), float(raw["merged_at_s"]))


def design_text(design: RunDesign) -> str:
    """A run's design as stored in runs.design_json and plan_versions.design_json (run_design.DESIGN_SCHEMA)."""
    return json.dumps(design_to_json(design), sort_keys=True)


def design_from_text(text: object) -> RunDesign:
    """A stored design; ValueError when it is not one storbench wrote (migration 9 gave every run one)."""
    if not isinstance(text, str):
        raise ValueError(f"no design stored ({text!r})")
    try:
        return design_from_json(json.loads(text))
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"design stored in an unknown shape ({type(exc).__name__}: {exc})") from None


def insert_case(conn: Connection, case: Case) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO cases (id, target_json, workload_json, clients, lab_json) VALUES (?,?,?,?,?)",
        (case.case_id, json.dumps(target_to_json(case.target), sort_keys=True),
         json.dumps(workload_to_json(case.workload), sort_keys=True), case.clients,
         json.dumps([list(p) for p in case.lab.pairs()])),
    )


# The JSON shape of a workload in cases.workload_json: {"schema": 2, and the WorkloadPoint's fields}. Shape 1 (the
# same fields, unversioned) is converted by migration 8.
WORKLOAD_SCHEMA = 2


def workload_to_json(workload: WorkloadPoint) -> dict[str, object]:
    return {"schema": WORKLOAD_SCHEMA, **asdict(workload)}


T = TypeVar("T")


class NewerShape(ValueError):
    """A stored value this storbench cannot read, as a newer one writes them: a target kind or a field it does not
    know (stored shapes grow without a schema migration when what is added has a default)."""


NEWER_HINT = "a newer storbench wrote it: upgrade storbench to read it"


def made(kind: type[T], fields: dict[str, Any], what: str) -> T:
    unknown = sorted(set(fields) - {f.name for f in dataclasses.fields(kind)})  # type: ignore[arg-type]
    if unknown:
        raise NewerShape(f"a stored {what} has fields this storbench does not know ({', '.join(unknown)})")
    return kind(**fields)


def workload_from_json(raw: dict[str, Any]) -> WorkloadPoint:
    """A stored workload (schema 2; migration 8 converted older rows)."""
    if raw.get("schema") != WORKLOAD_SCHEMA:
        raise ValueError(f"workload stored in an unknown shape: {raw!r}")
    fields = {k: v for k, v in raw.items() if k != "schema"}
    fields["fio_options"] = tuple(tuple(pair) for pair in fields.get("fio_options", ()))
    return made(WorkloadPoint, fields, "workload")


# The JSON shape of a target in cases.target_json: {"schema": 2, "kind": ..., and the fields of that kind}. Shape 1
# (one flat bag of every kind's fields) is converted by migration 5.
TARGET_SCHEMA = 2
_TARGET_TYPES: dict[str, type[TargetSpec]] = {t.kind: t for t in (PathTarget, BlockTarget, RbdTarget, CephfsTarget,
                                                                   NfsTarget, PvcTarget, S3Target,
                                                                   ImportedTarget)}


def target_to_json(target: TargetSpec) -> dict[str, object]:
    return {"schema": TARGET_SCHEMA, "kind": target.kind, **asdict(target)}


# Fields targets no longer have: an s3 target's credentials file and profile (the operator's now, not the plan's)
_DROPPED_TARGET_FIELDS = ("credentials_file", "profile")


def target_from_json(raw: dict[str, Any]) -> TargetSpec:
    """A stored target (schema 2; migration 5 converted older rows)."""
    if raw.get("schema") != TARGET_SCHEMA:
        raise ValueError(f"target stored in an unknown shape: {raw!r}")
    fields = {k: v for k, v in raw.items() if k not in ("schema", "kind", *_DROPPED_TARGET_FIELDS)}
    if "node_selector" in fields:
        fields["node_selector"] = tuple((str(key), str(label)) for key, label in fields["node_selector"])
    kind = _TARGET_TYPES.get(str(raw.get("kind")))
    if kind is None:
        raise NewerShape(f"a stored target of kind {raw.get('kind')!r}, which this storbench does not know")
    return made(kind, fields, f"{raw['kind']} target")


def target_filesystem(details_json: str | None) -> str:
    """The filesystem a repetition's target was on, from the details the run stored with it ('' when none)."""
    try:
        details = json.loads(details_json or "{}")
    except ValueError:
        return ""
    return str(details.get("filesystem", "")) if isinstance(details, dict) else ""


def precondition_record(row: Row) -> PreconditionRecord:
    """A stored precondition as it ran (a field a newer storbench added: NewerShape)."""
    return PreconditionRecord(
        target=row["target"], lab=tuple((k, v) for k, v in json.loads(row["lab_json"])),
        precondition=made(Precondition, json.loads(row["precondition_json"]), "precondition"),
        status=Status(row["status"]), started_at_s=row["started_at_s"], finished_at_s=row["finished_at_s"],
        written_bytes=row["written_bytes"], job_text=row["job_text"], error=row["error"])


def case_from_row(case_id: str, target_json: str, workload_json: str, clients: int, lab_json: str) -> Case:
    return Case(case_id=case_id, target=target_from_json(json.loads(target_json)),
                workload=workload_from_json(json.loads(workload_json)), clients=clients,
                lab=LabPoint.from_pairs((str(k), str(v)) for k, v in json.loads(lab_json)))


def _latency_columns(prefix: str, summary: LatencySummary) -> dict[str, object]:
    return {
        f"{prefix}_samples": summary.samples,
        f"{prefix}_min_ns": summary.min_ns,
        f"{prefix}_max_ns": summary.max_ns,
        f"{prefix}_mean_ns": summary.mean_ns,
        f"{prefix}_stddev_ns": summary.stddev_ns,
        f"{prefix}_bins_z": encode_histogram(summary.histogram),
        f"{prefix}_reported_json": json.dumps([list(p) for p in summary.reported_percentiles_ns]),
    }


def _latency_from_row(prefix: str, row: Row) -> LatencySummary:
    return LatencySummary(
        samples=row[f"{prefix}_samples"],
        min_ns=row[f"{prefix}_min_ns"],
        max_ns=row[f"{prefix}_max_ns"],
        mean_ns=row[f"{prefix}_mean_ns"],
        stddev_ns=row[f"{prefix}_stddev_ns"],
        histogram=decode_histogram(row[f"{prefix}_bins_z"]),
        reported_percentiles_ns=tuple((float(p), int(v)) for p, v in json.loads(row[f"{prefix}_reported_json"])),
    )


def insert_telemetry(conn: Connection, repetition_id: int, telemetry: RepetitionTelemetry) -> None:
    conn.execute("INSERT INTO telemetry (repetition_id, window_start_s, window_end_s, problems_json)"
                 " VALUES (?,?,?,?)", (repetition_id, telemetry.window_start_s, telemetry.window_end_s,
                                       json.dumps(list(telemetry.problems))))
    conn.executemany(
        "INSERT INTO telemetry_samples (repetition_id, source, entity, metric, start_s, t_s, value)"
        " VALUES (?,?,?,?,?,?,?)",
        [(repetition_id, s.source, s.entity, s.metric, begin, end, value)
         for s in telemetry.series for begin, end, value in zip(s.starts_s, s.times_s, s.values, strict=True)
         if math.isfinite(value)])  # a NaN (a source's JSON may hold one) is no sample; SQLite would store NULL


def insert_client(conn: Connection, repetition_id: int, client: ClientMeasurement) -> None:
    cursor = conn.execute(
        "INSERT INTO clients (repetition_id, name, jobs, job_errors_json, cpu_usr_pct, cpu_sys_pct)"
        " VALUES (?,?,?,?,?,?)",
        (repetition_id, client.client, client.jobs, json.dumps(list(client.job_errors)), client.cpu_usr_pct,
         client.cpu_sys_pct),
    )
    client_id = cursor.lastrowid
    for m in client.directions:
        columns: dict[str, object] = {
            "client_id": client_id, "direction": m.direction.value, "total_ios": m.total_ios,
            "io_bytes": m.io_bytes, "runtime_ms": m.runtime_ms, "iops": m.iops, "bw_bytes_per_s": m.bw_bytes_per_s,
            **_latency_columns("clat", m.clat), **_latency_columns("lat", m.lat),
        }
        conn.execute(
            f"INSERT INTO measurements ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            list(columns.values()),
        )
    for disk in client.disks:
        conn.execute(
            "INSERT INTO disk_utils (client_id, name, read_ios, write_ios, util_pct) VALUES (?,?,?,?,?)",
            (client_id, disk.name, disk.read_ios, disk.write_ios, disk.util_pct),
        )


def numbers(row: Row, *names: str) -> None:
    """ValueError unless each column of ``names`` holds a number (SQLite keeps whatever a crafted file put there:
    text where a count was had failed deep in the statistics)."""
    for name in names:
        if not isinstance(row[name], int | float):
            raise ValueError(f"{name} is {row[name]!r}, not a number")


def measurement_from_row(row: Row) -> DirectionMeasurement:
    numbers(row, "total_ios", "io_bytes", "runtime_ms", "iops", "bw_bytes_per_s")
    return DirectionMeasurement(
        direction=Direction(row["direction"]), total_ios=row["total_ios"], io_bytes=row["io_bytes"],
        runtime_ms=row["runtime_ms"], iops=row["iops"], bw_bytes_per_s=row["bw_bytes_per_s"],
        clat=_latency_from_row("clat", row), lat=_latency_from_row("lat", row),
    )


def object_prefixes(conn: Connection, run_id: int) -> set[tuple[str, str, str]]:
    """(endpoint, bucket, object prefix) of a run's S3 objects: recorded as each session began
    (`record_object_prefixes`), and those of its repetitions' targets (their ``target_json``: runs stored before)."""
    found = conn.execute("SELECT DISTINCT target_json FROM repetitions WHERE run_id = ?", (run_id,))
    details = (json.loads(row["target_json"]) for row in found)
    recorded = conn.execute("SELECT endpoint, bucket, object_prefix FROM run_object_prefixes WHERE run_id = ?",
                            (run_id,))
    return {(d["endpoint"], d["bucket"], d["object_prefix"]) for d in details if d.get("kind") == "s3"
            and all(isinstance(d.get(k), str) for k in ("endpoint", "bucket", "object_prefix"))} | {
        (row["endpoint"], row["bucket"], row["object_prefix"]) for row in recorded
        if all(isinstance(row[k], str) for k in ("endpoint", "bucket", "object_prefix"))}


def record_object_prefixes(conn: Connection, run_id: int, prefixes: Iterable[tuple[str, str, str]]) -> None:
    conn.executemany("INSERT INTO run_object_prefixes (run_id, endpoint, bucket, object_prefix) VALUES (?,?,?,?)"
                     " ON CONFLICT DO NOTHING", [(run_id, *prefix) for prefix in sorted(set(prefixes))])
