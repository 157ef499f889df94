"""Merging another storbench database into this one (shell): `storbench import OTHER.db` (issue 36), so results
from many machines meet in one store.

The other database is copied to a temporary file and upgraded there (it is never written), then read row by row
through the read-only connection's limits; each of its runs not already here is copied whole -- its plan versions,
preconditions, repetitions with their clients, measurements, telemetry, logs, faults and write checks -- under new
ids, in one transaction per database, with where it came from (`runs.merged_from_json`). A run already here (the
same plan name, host, source and start time: merged before, from this database or another) is brought up to date
instead when the other copy got further (its last repetition, plan version or precondition later, or it finished):
the run here becomes that copy's state (the repetitions it added or ran again, those a resume dropped gone, its
plan versions, preconditions, plan and end), so a database merged while its run went on (or before a `--resume`)
loses nothing when merged again, and merging the same or an older copy changes nothing. The
copied runs are then read back through the store's own reader, which refuses what no storbench wrote, before the
transaction commits.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from storbench.errors import UserError
from storbench.model import Case
from storbench.redact import redact_text
from storbench.store.codec import compress_text, decompress_text
from storbench.store.db import Store, open_store
from storbench.store.rows import Connection, IntegrityRefused, Row, case_from_row

# what an import's argument must be (the store's own hint names --db, which is the other database here)
NOT_OURS_HINT = "import takes results databases a `storbench run` wrote, or fio output files"

# The tables a run's rows live in, in the order they are copied, each with the column that points at its parent
# and the table whose ids that column holds. A table with an integer `id` gets new ids (recorded for its children).
CHILD_TABLES: tuple[tuple[str, str, str], ...] = (
    ("plan_versions", "run_id", "runs"),
    ("preconditions", "run_id", "runs"),
    ("run_object_prefixes", "run_id", "runs"),
    ("repetitions", "run_id", "runs"),
    ("clients", "repetition_id", "repetitions"),
    ("measurements", "client_id", "clients"),
    ("disk_utils", "client_id", "clients"),
    ("telemetry", "repetition_id", "repetitions"),
    ("telemetry_samples", "repetition_id", "repetitions"),
    ("repetition_logs", "repetition_id", "repetitions"),
    ("repetition_faults", "repetition_id", "repetitions"),
    ("repetition_write_checks", "repetition_id", "repetitions"),
)
# copied apart: runs (the unit merged), cases (shared by id), the schema's own record
OWN_TABLES = ("runs", "cases", "schema_migrations")
SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass(frozen=True)
class MergedRun:
    """One run of the other database: its id there, and here (the new id, or the run already here)."""

    source_run_id: int
    run_id: int
    repetitions: int
    already_here: bool
    added: int = 0  # for a run already here that the other copy got further in: the repetitions copied now
    updated: bool = False  # that run here became the other copy's state (also when no repetition was added)


def is_sqlite_file(path: str) -> bool:
    """Whether ``path`` is a regular file that starts as an SQLite database does (what `storbench import` merges
    rather than parses). A pipe is never read here: what it gives is read once, as fio output."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def snapshot(source_path: str, copy: str) -> None:
    """A consistent copy of the SQLite database at ``source_path`` (also while a run writes it: SQLite's backup
    reads one snapshot, its committed pages wherever they are; copying the file, then its WAL, could pair a WAL
    with a main file checkpointed in between). The source is opened read-only and never written."""
    try:
        with open(source_path, "rb"):  # the plain reason (missing, a directory, no permission) before SQLite's
            pass
        source = sqlite3.connect(f"{Path(source_path).absolute().as_uri()}?mode=ro", uri=True)
        try:
            target = sqlite3.connect(copy)
            try:
                source.backup(target)
            finally:
                target.close()
        finally:
            source.close()
    except OSError as exc:
        raise UserError(f"cannot read {source_path}: {exc.strerror or exc}") from None
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{source_path} is not a storbench results database ({exc})", hint=NOT_OURS_HINT) from None


# one run, wherever it is stored (not its plan's hash: a resume that adds points changes it)
RUN_KEY = ("plan_name", "host", "source", "started_at_s")


def _run_key(row: Row) -> tuple[object, ...]:
    return tuple(row[column] for column in RUN_KEY)


def merge_database(store: Store, source_path: str, clock: Callable[[], float]) -> list[MergedRun]:
    """Copy every run of the storbench database at ``source_path`` that is not in ``store`` yet (see the module's
    text). Returns each of its runs, merged or already here."""
    if Path(source_path).resolve() == Path(store.path).resolve():
        raise UserError(f"{source_path} is the database being imported into", hint="pass another database")
    with tempfile.TemporaryDirectory(prefix="storbench-merge-") as scratch:
        copy = str(Path(scratch) / "source.db")
        snapshot(source_path, copy)
        try:
            open_store(copy).close()  # upgraded to this storbench's schema, in the copy
        except UserError as exc:  # a newer storbench's database keeps its hint (upgrade), anything else is not ours
            newer = "newer than this storbench" in exc.message
            raise UserError(exc.message.replace(copy, source_path), hint=exc.hint if newer else NOT_OURS_HINT) from None
        source = open_store(copy, read_only=True)
        try:
            return _merge(store, source, Path(source_path).name, clock)
        finally:
            source.close()


def _merge(store: Store, source: Store, source_name: str, clock: Callable[[], float]) -> list[MergedRun]:
    src = source.conn
    merged: list[MergedRun] = []
    with store.exclusive() as dst:  # another import into this store waits: "already here" holds until commit
        here = {_run_key(row): row["id"] for row in dst.execute(f"SELECT id, {', '.join(RUN_KEY)} FROM runs")}
        for run in src.execute("SELECT * FROM runs ORDER BY id").fetchall():
            count = src.execute("SELECT COUNT(*) FROM repetitions WHERE run_id = ?", (run["id"],)).fetchone()[0]
            try:
                if _run_key(run) in here:
                    added = _update_run(src, store, run, here[_run_key(run)])
                    merged.append(MergedRun(run["id"], here[_run_key(run)], count, already_here=True,
                                            added=added or 0, updated=added is not None))
                    continue
                run_id = _copy_run(src, store, run, source_name, clock())
            except (sqlite3.IntegrityError, IntegrityRefused) as exc:  # rows that point nowhere (either store)
                raise UserError(f"{source_name}: run {run['id']}'s rows are not storbench's ({exc}); nothing "
                                "imported", hint=NOT_OURS_HINT) from None
            here[_run_key(run)] = run_id
            merged.append(MergedRun(run["id"], run_id, count, already_here=False))
        new = [m.run_id for m in merged if not m.already_here or m.updated]
        if new:
            try:
                store.repetitions(new)  # the store's own reader: refuses what no storbench wrote, before commit
                store.runs()
            except UserError as exc:
                raise UserError(f"{source_name}: {exc.message}; nothing imported", hint=NOT_OURS_HINT) from None
            except (ValueError, KeyError, TypeError) as exc:  # a row the readers cannot even take apart
                raise UserError(f"{source_name}: a run's rows are not storbench's ({exc}); nothing imported",
                                hint=NOT_OURS_HINT) from None
    return merged


def _copy_run(src: Connection, store: Store, run: Row, source_name: str, now_s: float) -> int:
    dst = store.conn
    columns = [c for c in store.columns("runs") if c not in ("id", "merged_from_json")]
    values = [run[c] for c in columns]
    origin = dict(json.loads(run["merged_from_json"] or "{}")) or {
        "database": source_name, "run_id": run["id"], "merged_at_s": now_s}
    cursor = dst.execute(f"INSERT INTO runs ({', '.join(columns)}, merged_from_json) VALUES "
                         f"({', '.join('?' * len(columns))}, ?)", (*values, json.dumps(origin, sort_keys=True)))
    assert cursor.lastrowid is not None
    _copy_tree(src, store, run["id"], int(cursor.lastrowid))
    return int(cursor.lastrowid)


def _copy_tree(src: Connection, store: Store, their_run: int, run_id: int, repetitions: str = "") -> None:
    """The run's cases and the rows below it (`CHILD_TABLES`) copied from ``their_run`` there to ``run_id`` here;
    ``repetitions``: an SQL condition on which repetitions (all when empty)."""
    ids: dict[str, dict[int, int]] = {"runs": {their_run: run_id}}
    _copy_cases(src, store, their_run)
    for table, parent, parent_table in CHILD_TABLES:
        where = repetitions if table == "repetitions" else ""
        ids[table] = _copy_children(src, store, table, parent, ids[parent_table], where)


# The last thing a copy of a run saw happen: its newest repetition, plan version or precondition.
_ACTIVITY = ("SELECT MAX(t) FROM (SELECT MAX(started_at_s) AS t FROM repetitions WHERE run_id = ?"
             " UNION ALL SELECT MAX(added_at_s) AS t FROM plan_versions WHERE run_id = ?"
             " UNION ALL SELECT MAX(started_at_s) AS t FROM preconditions WHERE run_id = ?) AS activity")


def _progress(conn: Connection, run: Row) -> tuple[float, bool]:
    """How far a copy of a run had got: its last activity, then whether it had finished."""
    last = conn.execute(_ACTIVITY, (run["id"],) * 3).fetchone()[0]  # positional: PostgreSQL's dialect too
    return float(last if last is not None else run["started_at_s"]), run["finished_at_s"] is not None


def _attempts(conn: Connection, run_id: int) -> dict[tuple[str, int], tuple[int, float]]:
    """A copy's repetitions of one run: (case, repetition index) -> (its row id, when it started)."""
    return {(row["case_id"], row["rep_index"]): (row["id"], row["started_at_s"]) for row in conn.execute(
        "SELECT id, case_id, rep_index, started_at_s FROM repetitions WHERE run_id = ?", (run_id,))}


def _update_run(src: Connection, store: Store, run: Row, run_id: int) -> int | None:
    """Bring run ``run_id`` here up to date with ``run`` of the other database when that copy got further (see the
    module's text): the run here becomes the other copy's state, its repetitions, plan versions, preconditions, plan
    and end (a resume may also have dropped rounds: a steady-state point started over). An older or the same copy
    changes nothing (None). Returns how many repetitions were copied."""
    dst = store.conn
    here = dst.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone()
    if _progress(src, run) <= _progress(dst, here):
        return None
    mine, theirs = _attempts(dst, run_id), _attempts(src, run["id"])
    for key, (rep_id, started) in mine.items():
        if key not in theirs or theirs[key][1] != started:
            dst.execute("DELETE FROM repetitions WHERE id = ?", (rep_id,))  # its rows below it go with it
    newer = [rep_id for key, (rep_id, started) in theirs.items() if key not in mine or mine[key][1] != started]
    dst.execute("DELETE FROM plan_versions WHERE run_id = ?", (run_id,))
    dst.execute("DELETE FROM preconditions WHERE run_id = ?", (run_id,))
    dst.execute("DELETE FROM run_object_prefixes WHERE run_id = ?", (run_id,))  # the other copy's, all of them
    _copy_tree(src, store, run["id"], run_id,  # '1 = 0': PostgreSQL takes no integer for a condition
               f" AND id IN ({', '.join(map(str, newer))})" if newer else " AND 1 = 0")
    dst.execute("UPDATE runs SET plan_text = ?, plan_sha256 = ?, plan_path = ?, design_json = ?, finished_at_s = ?"
                " WHERE id = ?", (run["plan_text"], run["plan_sha256"], run["plan_path"], run["design_json"],
                                  run["finished_at_s"], run_id))
    return len(newer)


def _copy_cases(src: Connection, store: Store, run_id: int) -> None:
    """The run's cases: a case id names its content, so one already here must be the same case."""
    dst, columns = store.conn, store.columns("cases")
    for row in src.execute("SELECT * FROM cases WHERE id IN (SELECT case_id FROM repetitions WHERE run_id = ?)",
                           (run_id,)).fetchall():
        # a run of a shared store may make the same case meanwhile: then it is there, and must be the same case
        dst.execute(f"INSERT INTO cases ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
                    " ON CONFLICT (id) DO NOTHING", [row[c] for c in columns])
        mine = dst.execute("SELECT * FROM cases WHERE id = ?", (row["id"],)).fetchone()
        if not _same_case(mine, row, columns):
            raise UserError(f"case {row['id']} differs between the two databases (a case id names one case)",
                            hint=NOT_OURS_HINT)


def _same_case(mine: Row, theirs: Row, columns: Sequence[str]) -> bool:
    """Whether two stored cases are one: read back (the same case stored by two storbench versions has other
    JSON text: keys in another order, optional fields added later as null), else their text."""
    try:
        return bool(_case(mine) == _case(theirs))
    except (ValueError, KeyError, TypeError):  # not a case storbench reads: only the same text is the same
        return [mine[c] for c in columns] == [theirs[c] for c in columns]


def _case(row: Row) -> Case:
    return case_from_row(row["id"], row["target_json"], row["workload_json"], row["clients"], row["lab_json"])


def _redacted(table: str, column: str, value: object) -> object:
    """A column's value as copied: a repetition's fio output, job, command, stderr and error with every secret
    option's value hidden (`redact.redact_text`), as the store hides them when it saves: a database written before
    storbench did so, or by hand, brings no key in."""
    if table != "repetitions" or value is None:
        return value
    if column == "fio_output_z":
        try:
            return compress_text(redact_text(decompress_text(value if isinstance(value, bytes) else None)))
        except ValueError as exc:
            raise UserError(f"a repetition's fio output is not storbench's ({exc}); nothing imported",
                            hint=NOT_OURS_HINT) from None
    if column in ("job_text", "command_json", "stderr_tail", "error"):
        return redact_text(str(value))
    return value


def _copy_children(src: Connection, store: Store, table: str, parent: str,
                   parents: dict[int, int], where: str = "") -> dict[int, int]:
    """The rows of ``table`` under the copied ``parents`` (old id -> new id) (``where``: only those that meet it
    too), their own ids renewed when they have one; returns old id -> new id of the rows copied."""
    dst, columns = store.conn, store.columns(table)
    renewed = "id" in columns
    kept = [c for c in columns if c != "id"]
    insert = f"INSERT INTO {table} ({', '.join(kept)}) VALUES ({', '.join('?' * len(kept))})"
    made: dict[int, int] = {}

    def values(row: Row) -> list[object]:
        return [parents[row[c]] if c == parent else _redacted(table, c, row[c]) for c in kept]

    old_ids = list(parents)
    for start in range(0, len(old_ids), 500):  # SQLite's bound parameters per statement
        chunk = old_ids[start:start + 500]
        rows = src.execute(f"SELECT * FROM {table} WHERE {parent} IN ({', '.join('?' * len(chunk))}){where}"
                           " ORDER BY rowid", list(chunk)).fetchall()  # as stored there (an id is its rowid)
        if not renewed:  # no ids to renew (telemetry samples, logs): the rows in one statement, far faster
            dst.executemany(insert, [values(row) for row in rows])
            continue
        for row in rows:
            cursor = dst.execute(insert, values(row))
            assert cursor.lastrowid is not None
            made[row["id"]] = cursor.lastrowid
    return made
