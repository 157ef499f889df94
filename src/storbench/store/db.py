"""SQLite results store (shell). Each finished repetition is committed in one transaction, WAL mode.

Shape: run -> repetition (of a case) -> client -> measurement (per direction), and disk_util per client.
Aggregates (a repetition's merged numbers, a case's statistics) are derived when read, never stored twice.
"""

from __future__ import annotations

import json
import math
import random
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any, Self, cast
from urllib.parse import quote

from storbench.errors import UserError
from storbench.fio.parse import check_mergeable
from storbench.model import (
    BlockTarget,
    Case,
    CephfsTarget,
    ClientMeasurement,
    Direction,
    DirectionMeasurement,
    DiskUtil,
    ImportedTarget,
    LabPoint,
    LatencySummary,
    NfsTarget,
    PathTarget,
    Precondition,
    PreconditionRecord,
    PvcTarget,
    RbdTarget,
    RepetitionOutcome,
    RunInfo,
    S3Target,
    Status,
    StoredRepetition,
    TargetSpec,
    WorkloadPoint,
)
from storbench.private_files import create_private
from storbench.redact import redact_outcome
from storbench.store.codec import compress_text, decode_histogram, decompress_text, encode_histogram
from storbench.telemetry.series import RepetitionTelemetry, TelemetrySeries

# Ordered migrations: index + 1 is the schema version. Never edit one that has shipped; append.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        plan_name TEXT NOT NULL,
        plan_text TEXT NOT NULL,
        plan_sha256 TEXT NOT NULL,
        source TEXT NOT NULL CHECK (source IN ('run', 'import')),
        storbench_version TEXT NOT NULL,
        fio_version TEXT NOT NULL,
        host TEXT NOT NULL,
        kernel TEXT NOT NULL,
        run_order TEXT NOT NULL,
        seed INTEGER NOT NULL,
        tags_json TEXT NOT NULL DEFAULT '[]',
        started_at_s REAL NOT NULL,
        finished_at_s REAL
    );
    CREATE TABLE cases (
        id TEXT PRIMARY KEY,
        target_name TEXT NOT NULL,
        target_kind TEXT NOT NULL,
        target_json TEXT NOT NULL,
        workload_json TEXT NOT NULL,
        rw TEXT NOT NULL,
        bs_bytes INTEGER NOT NULL,
        iodepth INTEGER NOT NULL,
        numjobs INTEGER NOT NULL,
        clients INTEGER NOT NULL,
        lab_json TEXT NOT NULL DEFAULT '[]'
    );
    CREATE TABLE repetitions (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        case_id TEXT NOT NULL REFERENCES cases(id),
        rep_index INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'timeout')),
        started_at_s REAL NOT NULL,
        finished_at_s REAL NOT NULL,
        fio_version TEXT NOT NULL,
        job_text TEXT NOT NULL,
        command_json TEXT NOT NULL,
        target_json TEXT NOT NULL,
        fio_output_z BLOB,
        stderr_tail TEXT NOT NULL DEFAULT '',
        error TEXT NOT NULL DEFAULT '',
        UNIQUE (run_id, case_id, rep_index)
    );
    CREATE TABLE clients (
        id INTEGER PRIMARY KEY,
        repetition_id INTEGER NOT NULL REFERENCES repetitions(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        jobs INTEGER NOT NULL,
        job_errors_json TEXT NOT NULL,
        cpu_usr_pct REAL NOT NULL,
        cpu_sys_pct REAL NOT NULL
    );
    CREATE TABLE measurements (
        id INTEGER PRIMARY KEY,
        client_id INTEGER NOT NULL REFERENCES clients(id) ON DELETE CASCADE,
        direction TEXT NOT NULL CHECK (direction IN ('read', 'write', 'trim')),
        total_ios INTEGER NOT NULL,
        io_bytes INTEGER NOT NULL,
        runtime_ms INTEGER NOT NULL,
        iops REAL NOT NULL,
        bw_bytes REAL NOT NULL,
        clat_samples INTEGER NOT NULL, clat_min_ns INTEGER NOT NULL, clat_max_ns INTEGER NOT NULL,
        clat_mean_ns REAL NOT NULL, clat_stddev_ns REAL NOT NULL, clat_bins_z BLOB,
        clat_reported_json TEXT NOT NULL DEFAULT '[]',
        lat_samples INTEGER NOT NULL, lat_min_ns INTEGER NOT NULL, lat_max_ns INTEGER NOT NULL,
        lat_mean_ns REAL NOT NULL, lat_stddev_ns REAL NOT NULL, lat_bins_z BLOB,
        lat_reported_json TEXT NOT NULL DEFAULT '[]',
        UNIQUE (client_id, direction)
    );
    CREATE TABLE disk_utils (
        id INTEGER PRIMARY KEY,
        client_id INTEGER NOT NULL REFERENCES clients(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        read_ios INTEGER NOT NULL,
        write_ios INTEGER NOT NULL,
        util_pct REAL NOT NULL
    );
    CREATE INDEX repetitions_case ON repetitions(case_id);
    CREATE INDEX clients_repetition ON clients(repetition_id);
    CREATE INDEX measurements_client ON measurements(client_id);
    """,
    # 2: what the statistics need to know about the machine (page-cache warnings)
    """
    ALTER TABLE runs ADD COLUMN mem_total_bytes INTEGER;
    ALTER TABLE runs ADD COLUMN cpu_count INTEGER;
    """,
    # 3: telemetry beside every repetition: its measured window, and one row per sample
    """
    CREATE TABLE telemetry (
        repetition_id INTEGER PRIMARY KEY REFERENCES repetitions(id) ON DELETE CASCADE,
        window_start_s REAL NOT NULL,
        window_end_s REAL NOT NULL,
        problems_json TEXT NOT NULL DEFAULT '[]'
    );
    CREATE TABLE telemetry_samples (
        repetition_id INTEGER NOT NULL REFERENCES repetitions(id) ON DELETE CASCADE,
        source TEXT NOT NULL,
        entity TEXT NOT NULL,
        metric TEXT NOT NULL,
        start_s REAL NOT NULL,
        t_s REAL NOT NULL,
        value REAL NOT NULL
    );
    CREATE INDEX telemetry_samples_repetition ON telemetry_samples(repetition_id);
    """,
    # 4: many clients: the spread of the moments the clients started
    """
    ALTER TABLE repetitions ADD COLUMN start_skew_s REAL;
    """,
    # 5: targets stored as one shape per kind (schema 2: {"schema": 2, "kind": ..., that kind's fields}), not one
    # flat bag of every kind's fields with the NFS url in "path" (shape 1)
    """
    UPDATE cases SET target_json = CASE json_extract(target_json, '$.kind')
        WHEN 'path' THEN json_object('schema', 2, 'kind', 'path', 'name', json_extract(target_json, '$.name'),
            'path', json_extract(target_json, '$.path'),
            'size_bytes', json_extract(target_json, '$.size_bytes'))
        WHEN 'cephfs' THEN json_object('schema', 2, 'kind', 'cephfs', 'name', json_extract(target_json, '$.name'),
            'path', json_extract(target_json, '$.path'),
            'size_bytes', json_extract(target_json, '$.size_bytes'))
        WHEN 'nfs' THEN json_object('schema', 2, 'kind', 'nfs', 'name', json_extract(target_json, '$.name'),
            'url', json_extract(target_json, '$.path'),
            'size_bytes', json_extract(target_json, '$.size_bytes'))
        WHEN 'block' THEN json_object('schema', 2, 'kind', 'block', 'name', json_extract(target_json, '$.name'),
            'device', json_extract(target_json, '$.device'),
            'size_bytes', json_extract(target_json, '$.size_bytes'),
            'destructive', CASE WHEN json_extract(target_json, '$.destructive') THEN json('true')
                                ELSE json('false') END)
        WHEN 'rbd' THEN json_object('schema', 2, 'kind', 'rbd', 'name', json_extract(target_json, '$.name'),
            'size_bytes', json_extract(target_json, '$.size_bytes'),
            'pool', json_extract(target_json, '$.pool'),
            'image', json_extract(target_json, '$.image'),
            'client', json_extract(target_json, '$.client'),
            'conf', json_extract(target_json, '$.conf'),
            'destructive', CASE WHEN json_extract(target_json, '$.destructive') THEN json('true')
                                ELSE json('false') END)
        WHEN 'pvc' THEN json_object('schema', 2, 'kind', 'pvc', 'name', json_extract(target_json, '$.name'),
            'size_bytes', json_extract(target_json, '$.size_bytes'),
            'storage_class', json_extract(target_json, '$.storage_class'),
            'access_mode', json_extract(target_json, '$.access_mode'),
            'volume_mode', json_extract(target_json, '$.volume_mode'),
            'namespace', json_extract(target_json, '$.namespace'),
            'container_image', json_extract(target_json, '$.container_image'),
            'image_pull_policy', json_extract(target_json, '$.image_pull_policy'),
            'node_selector', json(COALESCE(json_extract(target_json, '$.node_selector'), '[]')),
            'destructive', CASE WHEN json_extract(target_json, '$.destructive') THEN json('true')
                                ELSE json('false') END,
            'start_budget_s', json_extract(target_json, '$.start_budget_s'))
        WHEN 'imported' THEN json_object('schema', 2, 'kind', 'imported', 'name', json_extract(target_json, '$.name'),
            'location', json_extract(target_json, '$.path'))
    END
    WHERE json_extract(target_json, '$.schema') IS NULL;
    """,
    # 6: what each target was written with before its first measurement (a plan's `precondition`)
    """
    CREATE TABLE preconditions (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        target TEXT NOT NULL,
        lab_json TEXT NOT NULL,
        precondition_json TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at_s REAL NOT NULL,
        finished_at_s REAL NOT NULL,
        written_bytes INTEGER NOT NULL,
        job_text TEXT NOT NULL,
        error TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX preconditions_run ON preconditions(run_id);
    """,
    # 7: every version of a run's plan (a resume may add points), and the file it was read from
    """
    CREATE TABLE plan_versions (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        version INTEGER NOT NULL,
        plan_text TEXT NOT NULL,
        plan_sha256 TEXT NOT NULL,
        added_at_s REAL NOT NULL,
        PRIMARY KEY (run_id, version)
    );
    INSERT INTO plan_versions (run_id, version, plan_text, plan_sha256, added_at_s)
        SELECT id, 1, plan_text, plan_sha256, started_at_s FROM runs;
    ALTER TABLE runs ADD COLUMN plan_path TEXT;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


OPEN_RETRY_S = 60.0


def _statements(script: str) -> list[str]:
    """A migration script as single statements (sqlite3.complete_statement knows where each ends)."""
    statements, pending = [], ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n\t;"):
                statements.append(pending.strip())
            pending = ""
    return statements


def _migrate(conn: sqlite3.Connection, path: str) -> None:
    """Bring the database to SCHEMA_VERSION under a write lock taken before the version is read: two storbench
    processes opening one new database at once migrate it once (the second waits, then finds it done)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT)")
        current = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0]
        if current > SCHEMA_VERSION:
            raise UserError(f"{path} has schema version {current}, newer than this storbench ({SCHEMA_VERSION})",
                            hint="upgrade storbench")
        for version in range(current + 1, SCHEMA_VERSION + 1):
            for statement in _statements(MIGRATIONS[version - 1]):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_migrations VALUES (?, datetime('now'))", (version,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


# storbench's tables. In a database storbench opens each of them is a plain table, and there is no view or trigger
# (storbench makes none): a crafted file cannot hide a query behind a name storbench reads.
TABLES = ("schema_migrations", "runs", "cases", "repetitions", "clients", "measurements", "disk_utils", "telemetry",
          "telemetry_samples", "preconditions", "plan_versions")
READ_LIMIT_S = 30.0  # the longest one statement may take on a database opened for reading
_NOT_OURS_HINT = "pass the --db a `storbench run` wrote"


def _schema_version(conn: sqlite3.Connection, path: str) -> int | None:
    """The schema version of storbench's database at ``path`` (None: an empty file, a new database). Anything that
    is not storbench's is refused before a byte of it is written or a query of its own is run. SQLite's own errors
    (not a database, locked) are the caller's."""
    entries = conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    if not entries:
        return None
    kinds = {str(name): (str(kind), str(sql)) for kind, name, sql in entries}
    for name, (kind, sql) in kinds.items():
        if kind in ("view", "trigger") or (name in TABLES and not (kind == "table" and sql.startswith("CREATE TABLE"))):
            raise UserError(f"{path} is not a storbench results database: {name!r} is a {kind} "
                            f"({sql[:60]}...), which storbench never makes; left untouched", hint=_NOT_OURS_HINT)
    if "schema_migrations" not in kinds or "runs" not in kinds:
        raise UserError(f"{path} is not a storbench results database (no storbench tables in it); left untouched",
                        hint=_NOT_OURS_HINT)
    version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
    if not isinstance(version, int):
        raise UserError(f"{path} is not a storbench results database (schema version {version!r})",
                        hint=_NOT_OURS_HINT)
    if version > SCHEMA_VERSION:
        raise UserError(f"{path} has schema version {version}, newer than this storbench ({SCHEMA_VERSION})",
                        hint="upgrade storbench")
    return version


class _LimitedConnection(sqlite3.Connection):
    """A connection for reading: each statement must finish within READ_LIMIT_S (checked every few thousand
    SQLite instructions), so a crafted file is refused in one line naming it instead of hanging the command."""

    path = ""
    deadline_s = math.inf

    def limit(self, path: str) -> None:
        self.path = path
        self.set_progress_handler(lambda: int(time.monotonic() > self.deadline_s), 10_000)

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        return self.cursor(_LimitedCursor).execute(sql, parameters)

    @contextmanager
    def limited(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.OperationalError as exc:
            if str(exc) != "interrupted" or time.monotonic() <= self.deadline_s:
                raise
            raise UserError(f"{self.path}: a query ran past {READ_LIMIT_S:g} s and was stopped; no storbench results "
                            "database needs that long", hint=_NOT_OURS_HINT) from None


class _LimitedCursor(sqlite3.Cursor):
    """Every step of a statement on a _LimitedConnection runs under its time limit."""

    def _conn(self) -> _LimitedConnection:
        return cast(_LimitedConnection, self.connection)

    def execute(self, sql: str, parameters: Any = (), /) -> Self:
        conn = self._conn()
        conn.deadline_s = time.monotonic() + READ_LIMIT_S
        with conn.limited():
            return super().execute(sql, parameters)

    def fetchone(self) -> Any:
        with self._conn().limited():
            return super().fetchone()

    def fetchall(self) -> list[Any]:
        with self._conn().limited():
            return super().fetchall()

    def __next__(self) -> Any:
        with self._conn().limited():
            return super().__next__()


def _open_read_only(path: str) -> Store:
    """A results database for reading (show, export, compare, report, saturation): opened read-only, never written,
    never migrated; a file that is not storbench's, or that an older storbench wrote, is refused untouched."""
    if not Path(path).is_file():
        raise UserError(f"no results database {path}", hint="run a plan first, or pass --db PATH")
    # with no -wal beside it no one is writing: open it immutable, so SQLite makes no -wal or -shm of its own;
    # while a run writes, read through the writer's WAL
    live = Path(f"{path}-wal").exists()
    try:
        conn = sqlite3.connect(f"file:{quote(str(Path(path).resolve()))}?mode=ro" + ("" if live else "&immutable=1"),
                               uri=True, timeout=30, isolation_level=None, factory=_LimitedConnection)
    except sqlite3.DatabaseError as exc:
        raise UserError(f"cannot open {path}: {exc}", hint="pass another --db") from None
    try:
        conn.limit(path)
        conn.execute("PRAGMA trusted_schema=OFF")
        version = _schema_version(conn, path)
        if version is None:
            raise UserError(f"{path} is not a storbench results database (no storbench tables in it); left "
                            "untouched", hint=_NOT_OURS_HINT)
        if version < SCHEMA_VERSION:
            raise UserError(f"{path} was written by an older storbench (schema version {version} of "
                            f"{SCHEMA_VERSION}); reading does not upgrade it", hint="the next `storbench run` or "
                            "`storbench import` with this --db upgrades it (copy it first if an older storbench "
                            "must still read it)")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise UserError(f"{path} is not a storbench results database: {exc}", hint=_NOT_OURS_HINT) from None
    except BaseException:
        conn.close()
        raise
    conn.row_factory = sqlite3.Row
    conn.isolation_level = "DEFERRED"
    return Store(conn, path)


class Store:
    def __init__(self, conn: sqlite3.Connection, path: str) -> None:
        self.conn = conn
        self.path = path
        self._writing = False

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic write; writes inside another one join it (an import's run and all its repetitions are one).
        A full disk or a failing device is the user's to fix: one line that says what was kept (every earlier
        transaction is committed; this one is rolled back whole)."""
        if self._writing:
            yield self.conn
            return
        self._writing = True
        try:
            with self.conn:
                yield self.conn
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "full" in text or "disk I/O error" in text or "readonly" in text or "read-only" in text:
                raise UserError(f"results database {self.path}: {text}; everything stored before is intact, this "
                                "write was rolled back", hint="free space (or fix the device), then run the same "
                                "command with --resume") from None
            raise
        finally:
            self._writing = False

    # ---- runs ------------------------------------------------------------------------------------
    def create_run(self, *, plan_name: str, plan_text: str, plan_sha256: str, source: str,
                   storbench_version: str, fio_version: str, host: str, kernel: str, run_order: str,
                   seed: int, tags: Sequence[str], started_at_s: float, mem_total_bytes: int | None = None,
                   cpu_count: int | None = None, plan_path: str | None = None) -> int:
        with self.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO runs (plan_name, plan_text, plan_sha256, source, storbench_version, fio_version, host,"
                " kernel, run_order, seed, tags_json, started_at_s, mem_total_bytes, cpu_count, plan_path)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (plan_name, plan_text, plan_sha256, source, storbench_version, fio_version, host, kernel,
                 run_order, seed, json.dumps(list(tags)), started_at_s, mem_total_bytes, cpu_count, plan_path),
            )
            assert cursor.lastrowid is not None
            conn.execute("INSERT INTO plan_versions (run_id, version, plan_text, plan_sha256, added_at_s)"
                         " VALUES (?, 1, ?, ?, ?)", (cursor.lastrowid, plan_text, plan_sha256, started_at_s))
            return cursor.lastrowid

    def update_run_plan(self, run_id: int, plan_text: str, plan_sha256: str, *, at_s: float = 0.0,
                        plan_path: str | None = None) -> int:
        """A resumed run's plan: the same text keeps its version; another text (new points only: the caller
        checked) becomes the run's next version and its current plan. Returns the version."""
        with self.transaction() as conn:
            row = conn.execute("SELECT version, plan_sha256 FROM plan_versions WHERE run_id = ?"
                               " ORDER BY version DESC LIMIT 1", (run_id,)).fetchone()
            version = row["version"] if row else 0
            if row is None or row["plan_sha256"] != plan_sha256:
                version += 1
                conn.execute("INSERT INTO plan_versions (run_id, version, plan_text, plan_sha256, added_at_s)"
                             " VALUES (?,?,?,?,?)", (run_id, version, plan_text, plan_sha256, at_s))
            conn.execute("UPDATE runs SET plan_text = ?, plan_sha256 = ?, finished_at_s = NULL,"
                         " plan_path = COALESCE(?, plan_path) WHERE id = ?",
                         (plan_text, plan_sha256, plan_path, run_id))
            return int(version)

    def plan_versions(self, run_id: int) -> list[tuple[int, str]]:
        """(version, plan text) of a run, oldest first."""
        return [(row["version"], row["plan_text"]) for row in self.conn.execute(
            "SELECT version, plan_text FROM plan_versions WHERE run_id = ? ORDER BY version", (run_id,))]

    def run_case_ids(self, run_id: int) -> set[str]:
        """The cases a run has stored repetitions of (any status)."""
        return {row["case_id"] for row in self.conn.execute(
            "SELECT DISTINCT case_id FROM repetitions WHERE run_id = ?", (run_id,))}

    def imported_files(self) -> dict[str, int]:
        """sha256 of each fio output file imported so far -> the run that holds it."""
        return {row["sha"]: row["run_id"] for row in self.conn.execute(
            "SELECT DISTINCT json_extract(r.target_json, '$.imported_sha256') AS sha, r.run_id FROM repetitions r"
            " JOIN runs ON runs.id = r.run_id WHERE runs.source = 'import'"
            " AND json_extract(r.target_json, '$.imported_sha256') IS NOT NULL")}

    def repetition_counts(self, run_id: int) -> tuple[int, int]:
        """(repetitions stored ok, repetitions stored in all) of a run."""
        row = self.conn.execute("SELECT COUNT(*) AS n, SUM(status = 'ok') AS ok FROM repetitions WHERE run_id = ?",
                                (run_id,)).fetchone()
        return int(row["ok"] or 0), int(row["n"] or 0)

    def finish_run(self, run_id: int, finished_at_s: float) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE runs SET finished_at_s = ? WHERE id = ?", (finished_at_s, run_id))

    def latest_run_of_plan(self, plan_name: str) -> RunInfo | None:
        row = self.conn.execute(
            "SELECT * FROM runs WHERE plan_name = ? AND source = 'run' ORDER BY id DESC LIMIT 1", (plan_name,)
        ).fetchone()
        return _run_info(row) if row else None

    def runs(self) -> list[RunInfo]:
        return [_run_info(row) for row in self.conn.execute("SELECT * FROM runs ORDER BY id")]

    # ---- preconditions ---------------------------------------------------------------------------
    def save_precondition(self, run_id: int, record: PreconditionRecord) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO preconditions (run_id, target, lab_json, precondition_json, status, started_at_s,"
                " finished_at_s, written_bytes, job_text, error) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run_id, record.target, json.dumps([list(p) for p in record.lab]),
                 json.dumps(asdict(record.precondition)), record.status.value, record.started_at_s,
                 record.finished_at_s, record.written_bytes, record.job_text, record.error))

    def preconditions(self, run_ids: Sequence[int]) -> dict[int, list[PreconditionRecord]]:
        """Run id -> its targets' preconditions, in the order they ran."""
        found: dict[int, list[PreconditionRecord]] = {run_id: [] for run_id in run_ids}
        marks = ",".join("?" * len(run_ids))
        for row in self.conn.execute(f"SELECT * FROM preconditions WHERE run_id IN ({marks}) ORDER BY id",
                                     tuple(run_ids)):
            found[row["run_id"]].append(PreconditionRecord(
                target=row["target"], lab=tuple((k, v) for k, v in json.loads(row["lab_json"])),
                precondition=Precondition(**json.loads(row["precondition_json"])), status=Status(row["status"]),
                started_at_s=row["started_at_s"], finished_at_s=row["finished_at_s"],
                written_bytes=row["written_bytes"], job_text=row["job_text"], error=row["error"]))
        return found

    # ---- repetitions -----------------------------------------------------------------------------
    def drop_case_repetitions(self, run_id: int, case_id: str) -> int:
        """Remove every stored repetition of one case in one run (a steady-state point started over);
        returns how many went."""
        with self.transaction() as conn:
            cursor = conn.execute("DELETE FROM repetitions WHERE run_id = ? AND case_id = ?", (run_id, case_id))
            return cursor.rowcount

    def completed(self, run_id: int) -> set[tuple[str, int]]:
        """(case id, repetition index) pairs of the run that finished with status ok."""
        return {
            (row["case_id"], row["rep_index"])
            for row in self.conn.execute(
                "SELECT case_id, rep_index FROM repetitions WHERE run_id = ? AND status = 'ok'", (run_id,)
            )
        }

    def save_repetition(self, run_id: int, case: Case, rep_index: int, outcome: RepetitionOutcome,
                        target_details: Sequence[tuple[str, str]],
                        telemetry: RepetitionTelemetry | None = None) -> int:
        """Store one repetition with everything it produced, atomically. A failed earlier attempt of the
        same repetition in the same run is replaced. No option value that names a secret is kept (fio echoes its
        options, keys expanded)."""
        outcome = redact_outcome(outcome)
        with self.transaction() as conn:
            _insert_case(conn, case)
            conn.execute("DELETE FROM repetitions WHERE run_id = ? AND case_id = ? AND rep_index = ?",
                         (run_id, case.case_id, rep_index))
            cursor = conn.execute(
                "INSERT INTO repetitions (run_id, case_id, rep_index, status, started_at_s, finished_at_s,"
                " fio_version, job_text, command_json, target_json, fio_output_z, stderr_tail, error, start_skew_s)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, case.case_id, rep_index, outcome.status.value, outcome.started_at_s,
                 outcome.finished_at_s, outcome.fio_version, outcome.job_text, json.dumps(list(outcome.command)),
                 json.dumps(dict(target_details)), compress_text(outcome.raw_output) if outcome.raw_output else None,
                 outcome.stderr_tail, outcome.error, outcome.start_skew_s),
            )
            repetition_id = cursor.lastrowid
            assert repetition_id is not None
            for client in outcome.clients:
                _insert_client(conn, repetition_id, client)
            if telemetry is not None:
                _insert_telemetry(conn, repetition_id, telemetry)
            return repetition_id

    def repetitions(self, run_ids: Sequence[int] | None = None) -> list[StoredRepetition]:
        query = ("SELECT r.*, c.target_json AS case_target_json, c.workload_json, c.clients, c.lab_json"
                 " FROM repetitions r JOIN cases c ON c.id = r.case_id")
        params: list[object] = []
        if run_ids is not None:
            query += f" WHERE r.run_id IN ({','.join('?' * len(run_ids))})"
            params.extend(run_ids)
        query += " ORDER BY r.run_id, r.started_at_s, r.id"
        rows = self.conn.execute(query, params).fetchall()
        try:
            clients = self._clients_by_repetition([row["id"] for row in rows])
            check_mergeable((m for found in clients.values() for c in found for m in c.directions), self.path)
        except (ValueError, TypeError) as exc:
            raise UserError(f"{exc}; no storbench wrote that", hint="pass the --db a `storbench run` wrote") from None
        telemetry = self._telemetry_by_repetition([row["id"] for row in rows])
        return [
            StoredRepetition(
                repetition_id=row["id"],
                run_id=row["run_id"],
                case=_case_from_row(row["case_id"], row["case_target_json"], row["workload_json"], row["clients"],
                                    row["lab_json"]),
                rep_index=row["rep_index"],
                status=Status(row["status"]),
                started_at_s=row["started_at_s"],
                finished_at_s=row["finished_at_s"],
                fio_version=row["fio_version"],
                error=row["error"],
                clients=tuple(clients.get(row["id"], ())),
                job_text=row["job_text"],
                telemetry=telemetry.get(row["id"]),
                start_skew_s=row["start_skew_s"],
            )
            for row in rows
        ]

    def _telemetry_by_repetition(self, repetition_ids: Sequence[int]) -> dict[int, RepetitionTelemetry]:
        windows: dict[int, tuple[float, float]] = {}
        samples: dict[tuple[int, str, str, str], list[tuple[float, float, float]]] = {}
        for chunk_start in range(0, len(repetition_ids), 500):
            chunk = list(repetition_ids[chunk_start:chunk_start + 500])
            marks = ",".join("?" * len(chunk))
            for row in self.conn.execute(f"SELECT * FROM telemetry WHERE repetition_id IN ({marks})", chunk):
                windows[row["repetition_id"]] = (row["window_start_s"], row["window_end_s"])
            for row in self.conn.execute(
                    "SELECT repetition_id, source, entity, metric, start_s, t_s, value FROM telemetry_samples"
                    f" WHERE repetition_id IN ({marks}) ORDER BY rowid", chunk):
                samples.setdefault((row[0], row[1], row[2], row[3]), []).append((row[4], row[5], row[6]))
        series: dict[int, list[TelemetrySeries]] = {}
        for (repetition_id, source, entity, metric), values in samples.items():
            series.setdefault(repetition_id, []).append(TelemetrySeries(
                source, entity, metric, tuple(v[0] for v in values), tuple(v[1] for v in values),
                tuple(v[2] for v in values)))
        return {rid: RepetitionTelemetry(start, end, tuple(series.get(rid, ())))
                for rid, (start, end) in windows.items()}

    def telemetry_problems(self, repetition_id: int) -> list[str]:
        row = self.conn.execute("SELECT problems_json FROM telemetry WHERE repetition_id = ?",
                                (repetition_id,)).fetchone()
        return [] if row is None else list(json.loads(row[0]))

    def repetition_provenance(self, repetition_id: int) -> tuple[str, list[str], str, str]:
        """(job text, command, raw fio output, stderr tail) of one repetition."""
        row = self.conn.execute(
            "SELECT job_text, command_json, fio_output_z, stderr_tail FROM repetitions WHERE id = ?",
            (repetition_id,),
        ).fetchone()
        if row is None:
            raise UserError(f"no repetition {repetition_id} in {self.path}")
        try:
            raw = decompress_text(row["fio_output_z"])
        except ValueError as exc:
            raise UserError(f"{self.path}: repetition {repetition_id}'s fio output: {exc}",
                            hint="this database was not written by storbench") from None
        return row["job_text"], json.loads(row["command_json"]), raw, row["stderr_tail"]

    def _clients_by_repetition(self, repetition_ids: Sequence[int]) -> dict[int, list[ClientMeasurement]]:
        if not repetition_ids:
            return {}
        marks = ",".join("?" * len(repetition_ids))
        client_rows = self.conn.execute(
            f"SELECT * FROM clients WHERE repetition_id IN ({marks}) ORDER BY id", list(repetition_ids)
        ).fetchall()
        client_ids = [row["id"] for row in client_rows]
        measurements: dict[int, list[DirectionMeasurement]] = {}
        disks: dict[int, list[DiskUtil]] = {}
        for chunk_start in range(0, len(client_ids), 500):
            chunk = client_ids[chunk_start:chunk_start + 500]
            cmarks = ",".join("?" * len(chunk))
            for row in self.conn.execute(f"SELECT * FROM measurements WHERE client_id IN ({cmarks}) ORDER BY id",
                                         chunk):
                measurements.setdefault(row["client_id"], []).append(_measurement_from_row(row))
            for row in self.conn.execute(f"SELECT * FROM disk_utils WHERE client_id IN ({cmarks}) ORDER BY id",
                                         chunk):
                disks.setdefault(row["client_id"], []).append(
                    DiskUtil(name=row["name"], read_ios=row["read_ios"], write_ios=row["write_ios"],
                             util_pct=row["util_pct"]))
        out: dict[int, list[ClientMeasurement]] = {}
        for row in client_rows:
            out.setdefault(row["repetition_id"], []).append(
                ClientMeasurement(
                    client=row["name"],
                    jobs=row["jobs"],
                    job_errors=tuple(json.loads(row["job_errors_json"])),
                    cpu_usr_pct=row["cpu_usr_pct"],
                    cpu_sys_pct=row["cpu_sys_pct"],
                    directions=tuple(measurements.get(row["id"], ())),
                    disks=tuple(disks.get(row["id"], ())),
                )
            )
        return out


def _run_info(row: sqlite3.Row) -> RunInfo:
    return RunInfo(
        run_id=row["id"], plan_name=row["plan_name"], plan_text=row["plan_text"], source=row["source"],
        storbench_version=row["storbench_version"], fio_version=row["fio_version"], host=row["host"],
        kernel=row["kernel"], run_order=row["run_order"], seed=row["seed"], tags=tuple(json.loads(row["tags_json"])),
        started_at_s=row["started_at_s"], finished_at_s=row["finished_at_s"],
        mem_total_bytes=row["mem_total_bytes"], cpu_count=row["cpu_count"],
        plan_path=row["plan_path"] if "plan_path" in row.keys() else None,  # noqa: SIM118 (Row's `in` is values)
    )


def _insert_case(conn: sqlite3.Connection, case: Case) -> None:
    w = case.workload
    conn.execute(
        "INSERT OR IGNORE INTO cases (id, target_name, target_kind, target_json, workload_json, rw, bs_bytes,"
        " iodepth, numjobs, clients, lab_json) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (case.case_id, case.target.name, case.target.kind, json.dumps(target_to_json(case.target), sort_keys=True),
         json.dumps(asdict(w), sort_keys=True), w.rw, w.bs_bytes, w.iodepth, w.numjobs, case.clients,
         json.dumps([list(p) for p in case.lab.pairs()])),
    )


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
    return _TARGET_TYPES[str(raw["kind"])](**fields)


def _case_from_row(case_id: str, target_json: str, workload_json: str, clients: int, lab_json: str) -> Case:
    target = target_from_json(json.loads(target_json))
    w = json.loads(workload_json)
    w["fio_options"] = tuple(tuple(pair) for pair in w.get("fio_options", ()))
    return Case(case_id=case_id, target=target, workload=WorkloadPoint(**w), clients=clients,
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


def _latency_from_row(prefix: str, row: sqlite3.Row) -> LatencySummary:
    return LatencySummary(
        samples=row[f"{prefix}_samples"],
        min_ns=row[f"{prefix}_min_ns"],
        max_ns=row[f"{prefix}_max_ns"],
        mean_ns=row[f"{prefix}_mean_ns"],
        stddev_ns=row[f"{prefix}_stddev_ns"],
        histogram=decode_histogram(row[f"{prefix}_bins_z"]),
        reported_percentiles_ns=tuple((float(p), int(v)) for p, v in json.loads(row[f"{prefix}_reported_json"])),
    )


def _insert_telemetry(conn: sqlite3.Connection, repetition_id: int, telemetry: RepetitionTelemetry) -> None:
    conn.execute("INSERT INTO telemetry (repetition_id, window_start_s, window_end_s, problems_json)"
                 " VALUES (?,?,?,?)", (repetition_id, telemetry.window_start_s, telemetry.window_end_s,
                                       json.dumps(list(telemetry.problems))))
    conn.executemany(
        "INSERT INTO telemetry_samples (repetition_id, source, entity, metric, start_s, t_s, value)"
        " VALUES (?,?,?,?,?,?,?)",
        [(repetition_id, s.source, s.entity, s.metric, begin, end, value)
         for s in telemetry.series for begin, end, value in zip(s.starts_s, s.times_s, s.values, strict=True)])


def _insert_client(conn: sqlite3.Connection, repetition_id: int, client: ClientMeasurement) -> None:
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
            "io_bytes": m.io_bytes, "runtime_ms": m.runtime_ms, "iops": m.iops, "bw_bytes": m.bw_bytes,
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


def _measurement_from_row(row: sqlite3.Row) -> DirectionMeasurement:
    return DirectionMeasurement(
        direction=Direction(row["direction"]), total_ios=row["total_ios"], io_bytes=row["io_bytes"],
        runtime_ms=row["runtime_ms"], iops=row["iops"], bw_bytes=row["bw_bytes"],
        clat=_latency_from_row("clat", row), lat=_latency_from_row("lat", row),
    )


def open_store(path: str | Path, *, read_only: bool = False) -> Store:
    """Open (and create or migrate) a results database. WAL mode, full sync: a finished repetition
    survives a crash of storbench, a kill -9 or a power cut after its commit."""
    path = str(path)
    if read_only:
        return _open_read_only(path)
    parent = Path(path).expanduser().resolve().parent
    if not parent.exists():
        raise UserError(f"cannot create {path}: {parent} does not exist", hint="create the directory first")
    try:
        create_private(path)  # 0600: results hold host names, paths and plan text
    except OSError as exc:
        raise UserError(f"cannot create {path}: {exc.strerror or exc}", hint="choose another --db") from None
    deadline = time.monotonic() + OPEN_RETRY_S
    while True:
        conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        try:
            conn.execute("PRAGMA trusted_schema=OFF")
            _schema_version(conn, path)  # another program's file or a crafted one: refused before it is changed
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.isolation_level = "DEFERRED"
            _migrate(conn, path)
            return Store(conn, path)
        except sqlite3.OperationalError as exc:
            conn.close()
            # another storbench setting the same new database up: SQLite answers "locked" at once (without its busy
            # wait) when switching to WAL meets the other's lock; try again shortly
            if "locked" in str(exc) and time.monotonic() < deadline:
                time.sleep(random.uniform(0.05, 0.25))
                continue
            raise UserError(f"{path} is not a storbench results database: {exc}",
                            hint="pass another --db, or move the file away") from None
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise UserError(f"{path} is not a storbench results database: {exc}",
                            hint="pass another --db, or move the file away") from None
        except BaseException:
            conn.close()
            raise
