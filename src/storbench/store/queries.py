"""The results store's typed queries and writes (shell): each finished repetition is committed in one transaction.

Shape: run -> repetition (of a case) -> client -> measurement (per direction), and disk_util per client.
Aggregates (a repetition's merged numbers, a case's statistics) are derived when read, never stored twice.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict

from storbench.errors import UserError
from storbench.fio.parse import check_mergeable
from storbench.model import (
    Case,
    ClientMeasurement,
    DirectionMeasurement,
    DiskUtil,
    PreconditionRecord,
    RepetitionOutcome,
    RunInfo,
    Status,
    StoredRepetition,
)
from storbench.model.fault_record import FaultRecord, WriteCheck
from storbench.redact import redact_outcome
from storbench.run_design import NO_DESIGN, RunDesign
from storbench.store import rows
from storbench.store.codec import compress_text, decompress_text
from storbench.store.rows import Connection, Row
from storbench.store.run_lease import RunLeases
from storbench.telemetry.series import RepetitionTelemetry, TelemetrySeries

CHUNK = 500  # ids bound in one query: within any database's limit on bound parameters
NOT_OURS_HINT = "pass the --db a `storbench run` wrote"
WRITE_LOCK_KEY = 0x5354_4F52_4245_4E43 & 0x7FFF_FFFF_FFFF_FFFF  # "STORBENC": storbench's advisory lock on PostgreSQL


class Store:
    def __init__(self, conn: Connection, path: str) -> None:
        self.conn = conn
        self.path = path  # what messages name it by: a file's path, or a PostgreSQL URL (never with a password)
        self._writing = False
        self.leases = RunLeases(conn, path)  # the runs this process is running (`store.run_lease`)

    def close(self) -> None:
        self.conn.close()
        self.leases.release()  # after the connection: see `store.run_lease`

    def columns(self, table: str) -> list[str]:
        """The columns of one of storbench's tables, in their order (not PostgreSQL's stored-order column)."""
        cursor = self.conn.execute(f"SELECT * FROM {table} LIMIT 0")
        return [column[0] for column in cursor.description if column[0] != "rowid"]

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One atomic write; writes inside another one join it (an import's run and all its repetitions are one).
        A full disk, a failing device or a lock held too long: one line that says what was kept."""
        if self._writing:
            yield self.conn
            return
        self._writing = True
        try:
            with self.conn:
                yield self.conn
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if any(word in text for word in ("full", "disk I/O error", "readonly", "read-only", "locked")):
                busy = "locked" in text  # another storbench held the write lock past the busy timeout (an import)
                fix = ("wait for the other storbench command" if busy else "pass a --db you may write (or copy the "
                       "file somewhere writable)" if "readonly" in text or "read-only" in text else
                       "free space (or fix the device)")
                raise UserError(f"results database {self.path}: {text}; everything stored before is intact, this "
                                "write was rolled back", hint=f"{fix}, then run the same command with --resume") \
                    from None
            raise
        finally:
            self._writing = False

    @contextmanager
    def exclusive(self) -> Iterator[Connection]:
        """One transaction holding the store's write lock from its first statement (SQLite's BEGIN IMMEDIATE, or
        an advisory lock): what it reads stays true until it commits (a merge's "already here")."""
        with self.transaction() as conn:
            if isinstance(conn, sqlite3.Connection):
                conn.execute("BEGIN IMMEDIATE")
            else:
                conn.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK_KEY,))
            yield conn

    # ---- runs ------------------------------------------------------------------------------------
    def create_run(self, *, plan_name: str, plan_text: str, plan_sha256: str, source: str,
                   storbench_version: str, fio_version: str, host: str, kernel: str, run_order: str,
                   seed: int, tags: Sequence[str], started_at_s: float, mem_total_bytes: int | None = None,
                   cpu_count: int | None = None, plan_path: str | None = None, design: RunDesign = NO_DESIGN,
                   labels: Sequence[tuple[str, str]] = (), software: Sequence[tuple[str, str]] = ()) -> int:
        """A new run, its plan as version 1 and ``design`` (`config.plan_design`; none for an import): readers
        take the run's design from here, never from its plan text."""
        stored_design = rows.design_text(design)
        with self.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO runs (plan_name, plan_text, plan_sha256, source, storbench_version, fio_version, host,"
                " kernel, run_order, seed, tags_json, started_at_s, mem_total_bytes, cpu_count, plan_path,"
                " design_json, labels_json, software_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (plan_name, plan_text, plan_sha256, source, storbench_version, fio_version, host, kernel,
                 run_order, seed, json.dumps(list(tags)), started_at_s, mem_total_bytes, cpu_count, plan_path,
                 stored_design, json.dumps(dict(sorted(labels))), json.dumps(dict(sorted(software)))))
            assert cursor.lastrowid is not None
            conn.execute("INSERT INTO plan_versions (run_id, version, plan_text, plan_sha256, added_at_s, design_json)"
                         " VALUES (?, 1, ?, ?, ?, ?)",
                         (cursor.lastrowid, plan_text, plan_sha256, started_at_s, stored_design))
            return int(cursor.lastrowid)

    def update_run_plan(self, run_id: int, plan_text: str, plan_sha256: str, *, design: RunDesign,
                        at_s: float = 0.0, plan_path: str | None = None) -> int:
        """A resumed run's plan and its design: the same text keeps its version; another text (new points only: the
        caller checked) becomes the run's next version and its current plan. Returns the version."""
        stored_design = rows.design_text(design)
        with self.transaction() as conn:
            row = conn.execute("SELECT version, plan_sha256 FROM plan_versions WHERE run_id = ?"
                               " ORDER BY version DESC LIMIT 1", (run_id,)).fetchone()
            version = row["version"] if row else 0
            if row is None or row["plan_sha256"] != plan_sha256:
                version += 1
                conn.execute("INSERT INTO plan_versions (run_id, version, plan_text, plan_sha256, added_at_s,"
                             " design_json) VALUES (?,?,?,?,?,?)",
                             (run_id, version, plan_text, plan_sha256, at_s, stored_design))
            conn.execute("UPDATE runs SET plan_text = ?, plan_sha256 = ?, finished_at_s = NULL,"
                         " plan_path = COALESCE(?, plan_path), design_json = ? WHERE id = ?",
                         (plan_text, plan_sha256, plan_path, stored_design, run_id))
            return int(version)

    def design_versions(self, run_id: int) -> list[tuple[int, RunDesign]]:
        """(version, its design) of a run's plan, oldest first."""
        found = []
        for row in self.conn.execute("SELECT version, design_json FROM plan_versions WHERE run_id = ? ORDER BY version",
                                     (run_id,)):
            try:
                found.append((int(row["version"]), rows.design_from_text(row["design_json"])))
            except ValueError as exc:
                raise UserError(f"{self.path}: run {run_id}'s plan version {row['version']}: {exc}; no storbench wrote "
                                "that", hint=NOT_OURS_HINT) from None
        return found

    def run_case_ids(self, run_id: int) -> set[str]:
        """The cases a run has stored repetitions of (any status)."""
        return {row["case_id"] for row in self.conn.execute(
            "SELECT DISTINCT case_id FROM repetitions WHERE run_id = ?", (run_id,))}

    def object_prefixes(self, run_id: int, adding: Iterable[tuple[str, str, str]] = ()) -> set[tuple[str, str, str]]:
        """(endpoint, bucket, object prefix) of the S3 objects the run's earlier sessions wrote (a prefix a session);
        ``adding``, this session's, recorded before it writes any (a session killed in its first fill had none)."""
        earlier = rows.object_prefixes(self.conn, run_id)
        with self.transaction() as conn:
            rows.record_object_prefixes(conn, run_id, adding)
        return earlier

    def imported_files(self) -> dict[str, int]:
        """sha256 of each fio output file imported so far -> the run that holds it."""
        found: dict[str, int] = {}
        for row in self.conn.execute("SELECT r.target_json, r.run_id FROM repetitions r JOIN runs ON runs.id ="
                                     " r.run_id WHERE runs.source = 'import' ORDER BY r.id"):
            sha = json.loads(row["target_json"]).get("imported_sha256")
            if sha is not None:
                found[str(sha)] = row["run_id"]
        return found

    def repetition_counts(self, run_id: int) -> tuple[int, int]:
        """(repetitions stored ok, repetitions stored in all) of a run."""
        row = self.conn.execute("SELECT COUNT(*) AS n, SUM(CASE WHEN status = 'ok' THEN 1 ELSE 0 END) AS ok"
                                " FROM repetitions WHERE run_id = ?", (run_id,)).fetchone()
        return int(row["ok"] or 0), int(row["n"] or 0)

    def finish_run(self, run_id: int, finished_at_s: float) -> None:
        with self.transaction() as conn:
            conn.execute("UPDATE runs SET finished_at_s = ? WHERE id = ?", (finished_at_s, run_id))

    def latest_run_of_plan(self, plan_name: str, host: str | None = None) -> RunInfo | None:
        """The latest run of the plan made here (by `run`, not merged from another database), on ``host`` if given."""
        on_host = " AND host = ?" if host is not None else ""  # a NULL parameter has no type for PostgreSQL
        row = self.conn.execute(
            "SELECT * FROM runs WHERE plan_name = ? AND source = 'run' AND merged_from_json = '{}'" + on_host
            + " ORDER BY id DESC LIMIT 1", (plan_name, *(() if host is None else (host,)))
        ).fetchone()
        return self._run_info(row) if row else None

    def runs(self) -> list[RunInfo]:
        return [self._run_info(row) for row in self.conn.execute("SELECT * FROM runs ORDER BY id")]

    def _run_info(self, row: Row) -> RunInfo:
        try:
            return rows.run_info(row)
        except (ValueError, TypeError, AttributeError, KeyError) as exc:  # a crafted row's shapes
            raise UserError(f"{self.path}: run {row['id']}: {exc}; no storbench wrote that",
                            hint=NOT_OURS_HINT) from None

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
            try:
                found[row["run_id"]].append(rows.precondition_record(row))
            except rows.NewerShape as exc:
                raise UserError(f"{self.path}: {exc}", hint=rows.NEWER_HINT) from None
        return found

    # ---- repetitions -----------------------------------------------------------------------------
    def drop_case_repetitions(self, run_id: int, case_id: str) -> int:
        """Remove every stored repetition of one case in one run (a steady-state point started over): how many."""
        with self.transaction() as conn:
            cursor = conn.execute("DELETE FROM repetitions WHERE run_id = ? AND case_id = ?", (run_id, case_id))
            return int(cursor.rowcount)

    def completed(self, run_id: int, *, failed_too: bool = False) -> set[tuple[str, int]]:
        """(case id, repetition index) pairs of the run that finished with status ok (``failed_too``: that ran,
        ok or not)."""
        where = "" if failed_too else " AND status = 'ok'"
        return {(row["case_id"], row["rep_index"]) for row in self.conn.execute(
            f"SELECT case_id, rep_index FROM repetitions WHERE run_id = ?{where}", (run_id,))}

    def save_repetition(self, run_id: int, case: Case, rep_index: int, outcome: RepetitionOutcome,
                        target_details: Sequence[tuple[str, str]],
                        telemetry: RepetitionTelemetry | None = None) -> int:
        """Store one repetition with everything it produced, atomically. A failed earlier attempt of the
        same repetition in the same run is replaced. No option value that names a secret is kept (fio echoes its
        options, keys expanded)."""
        outcome = redact_outcome(outcome)
        with self.transaction() as conn:
            rows.insert_case(conn, case)
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
                rows.insert_client(conn, repetition_id, client)
            conn.executemany("INSERT INTO repetition_logs (repetition_id, name, text_z) VALUES (?,?,?)",
                             [(repetition_id, name, compress_text(text)) for name, text in outcome.logs])
            conn.executemany(
                "INSERT INTO repetition_faults (repetition_id, seq, action, target, restore, at_s, planned_at_s,"
                " measure_start_s, said, error) VALUES (?,?,?,?,?,?,?,?,?,?)",
                [(repetition_id, seq, f.action, f.target, int(f.restore), f.at_s, f.planned_at_s, f.measure_start_s,
                  f.said, f.error) for seq, f in enumerate(outcome.faults)])
            if (check := outcome.write_check) is not None:
                conn.execute("INSERT INTO repetition_write_checks (repetition_id, blocks, block_bytes, acknowledged,"
                             " failed, lost, stale, torn, corrupt, first_bad_json, error, read_back)"
                             " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                             (repetition_id, check.blocks, check.block_bytes, check.acknowledged, check.failed,
                              check.lost, check.stale, check.torn, check.corrupt,
                              json.dumps([[finding, list(offsets)] for finding, offsets in check.first_bad]),
                              check.error, check.read_back))
            if telemetry is not None:
                rows.insert_telemetry(conn, repetition_id, telemetry)
            return int(repetition_id)

    def repetitions(self, run_ids: Sequence[int] | None = None) -> list[StoredRepetition]:
        query = ("SELECT r.*, c.target_json AS case_target_json, c.workload_json, c.clients, c.lab_json"
                 " FROM repetitions r JOIN cases c ON c.id = r.case_id")
        params: list[object] = []
        if run_ids is not None:
            query += f" WHERE r.run_id IN ({','.join('?' * len(run_ids))})"
            params.extend(run_ids)
        query += " ORDER BY r.run_id, r.started_at_s, r.id"
        found = self.conn.execute(query, params).fetchall()
        try:
            cases = {row["id"]: rows.case_from_row(row["case_id"], row["case_target_json"], row["workload_json"],
                                                   row["clients"], row["lab_json"]) for row in found}
            clients = self._clients_by_repetition([row["id"] for row in found])
            check_mergeable((m for found in clients.values() for c in found for m in c.directions), self.path)
        except rows.NewerShape as exc:
            raise UserError(f"{self.path}: {exc}", hint=rows.NEWER_HINT) from None
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            raise UserError(f"{self.path}: {exc}; no storbench wrote that", hint=NOT_OURS_HINT) from None
        telemetry = self._telemetry_by_repetition([row["id"] for row in found])
        logs, faults = self._faults_by_repetition([row["id"] for row in found])
        checks = self._write_checks({row["id"] for row in found})
        return [
            StoredRepetition(
                repetition_id=row["id"],
                run_id=row["run_id"],
                case=cases[row["id"]],
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
                logs=tuple(logs.get(row["id"], ())),
                faults=tuple(faults.get(row["id"], ())),
                write_check=checks.get(row["id"]),
                filesystem=rows.target_filesystem(row["target_json"]),
            )
            for row in found
        ]

    def _where_in(self, select: str, column: str, ids: Sequence[int], order: str) -> list[Row]:
        """``select`` of the rows whose ``column`` is one of ``ids``, a chunk of ids at a time (within any database's
        limit on bound parameters), each chunk in ``order``."""
        found: list[Row] = []
        for start in range(0, len(ids), CHUNK):
            chunk = list(ids[start:start + CHUNK])
            found += self.conn.execute(f"{select} WHERE {column} IN ({','.join('?' * len(chunk))}) ORDER BY {order}",
                                       chunk).fetchall()
        return found

    def _faults_by_repetition(self, repetition_ids: Sequence[int]
                              ) -> tuple[dict[int, list[tuple[str, str]]], dict[int, list[FaultRecord]]]:
        """The timeline logs and fault records of repetitions that had faults (most have none)."""
        logs: dict[int, list[tuple[str, str]]] = {}
        faults: dict[int, list[FaultRecord]] = {}
        if not repetition_ids:
            return logs, faults
        for row in self._where_in("SELECT * FROM repetition_faults", "repetition_id", repetition_ids,
                                  "repetition_id, seq"):
            faults.setdefault(row["repetition_id"], []).append(FaultRecord(
                action=row["action"], target=row["target"], restore=bool(row["restore"]), at_s=row["at_s"],
                said=row["said"], error=row["error"], planned_at_s=row["planned_at_s"],
                measure_start_s=row["measure_start_s"]))
        for row in self._where_in("SELECT repetition_id, name, text_z FROM repetition_logs", "repetition_id",
                                  sorted(faults), "repetition_id, name"):
            logs.setdefault(row["repetition_id"], []).append((row["name"], decompress_text(row["text_z"])))
        return logs, faults

    def _write_checks(self, repetition_ids: set[int]) -> dict[int, WriteCheck]:
        """What the checking writer found, by repetition (only plans with `check_writes` have any)."""
        return {row["repetition_id"]: WriteCheck(
            blocks=row["blocks"], block_bytes=row["block_bytes"], acknowledged=row["acknowledged"],
            failed=row["failed"], lost=row["lost"], stale=row["stale"], torn=row["torn"], corrupt=row["corrupt"],
            first_bad=tuple((str(finding), tuple(int(o) for o in offsets))
                            for finding, offsets in json.loads(row["first_bad_json"])),
            error=row["error"], read_back=row["read_back"])
            for row in self._where_in("SELECT * FROM repetition_write_checks", "repetition_id",
                                      sorted(repetition_ids), "repetition_id")}

    def _telemetry_by_repetition(self, repetition_ids: Sequence[int]) -> dict[int, RepetitionTelemetry]:
        windows: dict[int, tuple[float, float, tuple[str, ...]]] = {}
        samples: dict[tuple[int, str, str, str], list[tuple[float, float, float]]] = {}
        for row in self._where_in("SELECT * FROM telemetry", "repetition_id", repetition_ids, "repetition_id"):
            windows[row[0]] = (row["window_start_s"], row["window_end_s"], tuple(json.loads(row["problems_json"])))
        for row in self._where_in("SELECT repetition_id, source, entity, metric, start_s, t_s, value FROM "
                                  "telemetry_samples", "repetition_id", repetition_ids, "rowid"):
            samples.setdefault((row[0], row[1], row[2], row[3]), []).append((row[4], row[5], row[6]))
        series: dict[int, list[TelemetrySeries]] = {}
        for (repetition_id, source, entity, metric), values in samples.items():
            series.setdefault(repetition_id, []).append(TelemetrySeries(
                source, entity, metric, tuple(v[0] for v in values), tuple(v[1] for v in values),
                tuple(v[2] for v in values)))
        return {rid: RepetitionTelemetry(start, end, tuple(series.get(rid, ())), problems)
                for rid, (start, end, problems) in windows.items()}

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
        client_rows = self._where_in("SELECT * FROM clients", "repetition_id", repetition_ids, "id")
        client_ids = [row["id"] for row in client_rows]
        measurements: dict[int, list[DirectionMeasurement]] = {}
        disks: dict[int, list[DiskUtil]] = {}
        for row in self._where_in("SELECT * FROM measurements", "client_id", client_ids, "id"):
            measurements.setdefault(row["client_id"], []).append(rows.measurement_from_row(row))
        for row in self._where_in("SELECT * FROM disk_utils", "client_id", client_ids, "id"):
            disks.setdefault(row["client_id"], []).append(DiskUtil(
                name=row["name"], read_ios=row["read_ios"], write_ios=row["write_ios"], util_pct=row["util_pct"]))
        out: dict[int, list[ClientMeasurement]] = {}
        for row in client_rows:
            rows.numbers(row, "jobs", "cpu_usr_pct", "cpu_sys_pct")
            out.setdefault(row["repetition_id"], []).append(
                ClientMeasurement(client=row["name"], jobs=row["jobs"],
                                  job_errors=tuple(json.loads(row["job_errors_json"])),
                                  cpu_usr_pct=row["cpu_usr_pct"], cpu_sys_pct=row["cpu_sys_pct"],
                                  directions=tuple(measurements.get(row["id"], ())),
                                  disks=tuple(disks.get(row["id"], ()))))
        return out
