"""Opening the SQLite results store (shell): created 0600 and migrated when opened for writing (WAL mode, full
sync); opened read-only, never written or migrated, for reading. A file that is not storbench's is refused before a
byte of it is written or a query of its own is run.
"""

from __future__ import annotations

import math
import os
import random
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self, cast
from urllib.parse import quote

from storbench.errors import UserError
from storbench.private_files import create_private
from storbench.store.migrations import SCHEMA_VERSION, migrate
from storbench.store.postgres import is_postgres_url, open_postgres, postgres_store_exists
from storbench.store.queries import NOT_OURS_HINT, Store

__all__ = ["READ_LIMIT_S", "SCHEMA_VERSION", "Store", "open_store", "store_exists"]

OPEN_RETRY_S = 60.0


# storbench's tables. In a database storbench opens each of them is a plain table, and there is no view or trigger
# (storbench makes none): a crafted file cannot hide a query behind a name storbench reads.
TABLES = ("schema_migrations", "runs", "cases", "repetitions", "clients", "measurements", "disk_utils", "telemetry",
          "telemetry_samples", "preconditions", "plan_versions")
READ_LIMIT_S = 30.0  # the longest one statement may take on a database opened for reading



# How long a write waits for another storbench's write lock (an import holds it for its whole copy: 6 s for 40 MB):
# a run's measured repetition waits it out rather than be lost at the 30 s it had waited
WRITE_WAIT_S = 600.0

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
                            f"({sql[:60]}...), which storbench never makes; left untouched", hint=NOT_OURS_HINT)
    if "schema_migrations" not in kinds or "runs" not in kinds:
        raise UserError(f"{path} is not a storbench results database (no storbench tables in it); left untouched",
                        hint=NOT_OURS_HINT)
    version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0]
    if not isinstance(version, int):
        raise UserError(f"{path} is not a storbench results database (schema version {version!r})",
                        hint=NOT_OURS_HINT)
    if version > SCHEMA_VERSION:
        raise UserError(f"{path} has schema version {version}, newer than this storbench ({SCHEMA_VERSION})",
                        hint="upgrade storbench")
    return version


DAMAGED_HINT = "restore a copy, or save what SQLite can still read: sqlite3 DB .recover | sqlite3 RECOVERED.db"


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
        except sqlite3.DatabaseError as exc:
            if type(exc) is sqlite3.DatabaseError:  # SQLite's own word for a damaged file (a page that reads wrong)
                raise UserError(f"{self.path} is damaged: {exc}", hint=DAMAGED_HINT) from None
            if str(exc) != "interrupted" or time.monotonic() <= self.deadline_s:
                raise
            raise UserError(f"{self.path}: a query ran past {READ_LIMIT_S:g} s and was stopped; no storbench results "
                            "database needs that long", hint=NOT_OURS_HINT) from None


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
    if Path(path).is_dir():
        raise UserError(f"{path} is a directory, not a results database", hint=f"pass --db {Path(path) / 'results.db'}")
    if not Path(path).is_file():
        raise UserError(f"no results database {path}", hint="run a plan first, or pass --db PATH")
    # read through the WAL, which holds the reader's snapshot even when a run starts writing after it opened (a
    # -wal and -shm may be left beside the file; the next writer takes them). Immutable (no locks, no snapshot held)
    # where SQLite would have to make them and could not, or would make them another user's than the database's
    # owner, who could then no longer write it (root's are given to the owner by SQLite)
    resolved = Path(path).resolve()
    shared = Path(f"{path}-wal").exists() or (
        os.access(resolved.parent, os.W_OK) and os.geteuid() in (0, resolved.stat().st_uid))
    try:
        conn = sqlite3.connect(f"file:{quote(str(Path(path).resolve()))}?mode=ro" + ("" if shared else "&immutable=1"),
                               uri=True, timeout=30, isolation_level=None, factory=_LimitedConnection)
    except sqlite3.DatabaseError as exc:
        raise UserError(f"cannot open {path}: {exc}", hint="pass another --db") from None
    try:
        conn.limit(path)
        conn.execute("PRAGMA trusted_schema=OFF")
        version = _schema_version(conn, path)
        if version is None:
            raise UserError(f"{path} is not a storbench results database (no storbench tables in it); left "
                            "untouched", hint=NOT_OURS_HINT)
        if version < SCHEMA_VERSION:
            raise UserError(f"{path} was written by an older storbench (schema version {version} of "
                            f"{SCHEMA_VERSION}); reading does not upgrade it", hint="the next `storbench run` or "
                            "`storbench import` with this --db upgrades it (copy it first if an older storbench "
                            "must still read it)")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise UserError(f"{path} is not a storbench results database: {exc}", hint=NOT_OURS_HINT) from None
    except BaseException:
        conn.close()
        raise
    conn.row_factory = sqlite3.Row
    conn.isolation_level = "DEFERRED"
    # one snapshot for the whole command, as PostgreSQL's reader has: a report read while a run writes sees each
    # run and repetition whole (WAL: the snapshot is taken at the first read and held until the store closes)
    conn.execute("BEGIN")
    return Store(conn, path)


def store_exists(path: str | Path) -> bool:
    """Whether there is a results store at ``path`` to resume or add to: a file, or storbench's tables in a
    PostgreSQL database (asked; nothing made)."""
    check_location(str(path))
    return postgres_store_exists(str(path)) if is_postgres_url(str(path)) else Path(path).exists()


def check_location(path: str) -> None:
    """A store is an SQLite file or a PostgreSQL URL: an empty name, or a URL of another kind (mysql://, sqlite://),
    is refused in one line (it had read as a file path: "mysql:/x does not exist"), and so is a directory. Touches
    no database (`plan` checks its --db with it)."""
    if not path.strip():
        raise UserError("the results database's name is empty (--db '')", hint="pass --db PATH (an SQLite file) "
                        "or --db postgresql://HOST/DB")
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", path) and not is_postgres_url(path):
        raise UserError(f"--db {path.split('://')[0]}://...: storbench keeps results in an SQLite file or a "
                        "PostgreSQL database", hint="pass a file path, or postgresql://HOST/DB")
    if not is_postgres_url(path) and Path(path).is_dir():
        raise UserError(f"{path} is a directory, not a results database", hint=f"pass --db {Path(path) / 'results.db'}")


def open_store(path: str | Path, *, read_only: bool = False) -> Store:
    """Open (and create or migrate) a results database: an SQLite file, or a PostgreSQL database for a ``postgresql://``
    URL (`store.postgres`). SQLite: WAL mode, full sync: a finished repetition survives a crash of storbench, a
    kill -9 or a power cut after its commit."""
    path = str(path)
    check_location(path)
    if is_postgres_url(path):
        return Store(*open_postgres(path, read_only=read_only))
    if read_only:
        return _open_read_only(path)
    parent = Path(path).expanduser().resolve().parent
    if not parent.exists():
        raise UserError(f"cannot create {path}: {parent} does not exist", hint="create the directory first")
    if Path(path).is_dir():
        raise UserError(f"{path} is a directory, not a results database", hint=f"pass --db {Path(path) / 'results.db'}")
    try:
        create_private(path)  # 0600: results hold host names, paths and plan text
    except OSError as exc:
        raise UserError(f"cannot create {path}: {exc.strerror or exc}", hint="choose another --db") from None
    deadline = time.monotonic() + OPEN_RETRY_S
    while True:
        try:
            conn = sqlite3.connect(path, timeout=WRITE_WAIT_S, isolation_level=None)
        except sqlite3.Error as exc:
            raise UserError(f"cannot open {path}: {exc}", hint="pass a --db you can read and write") from None
        try:
            conn.execute("PRAGMA trusted_schema=OFF")
            _schema_version(conn, path)  # another program's file or a crafted one: refused before it is changed
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.isolation_level = "DEFERRED"
            migrate(conn, path)
            return Store(conn, path)
        except sqlite3.OperationalError as exc:
            conn.close()
            # another storbench setting the same new database up: SQLite answers "locked" at once (without its busy
            # wait) when switching to WAL meets the other's lock; try again shortly
            if "locked" in str(exc) and time.monotonic() < deadline:
                time.sleep(random.uniform(0.05, 0.25))
                continue
            if "readonly" in str(exc):
                raise UserError(f"cannot write {path}: {exc}", hint="check who owns it and its -wal and -shm "
                                "files beside it; pass a --db you can write") from None
            raise UserError(f"{path} is not a storbench results database: {exc}",
                            hint="pass another --db, or move the file away") from None
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise UserError(f"{path} is not a storbench results database: {exc}",
                            hint="pass another --db, or move the file away") from None
        except BaseException:
            conn.close()
            raise
