"""The results store on PostgreSQL (shell): `--db postgresql://USER@HOST/DB` for a store a team shares (issue 36).

The store's queries (`store.queries.Store`) run unchanged: this module gives them a connection that speaks as
sqlite3's does (``execute`` with ``?`` placeholders, rows read by name or position, ``lastrowid``, ``with conn:`` for
one transaction), turning each statement into PostgreSQL's (`store.dialect`). A new database gets the schema of this
storbench's SQLite store, translated, recorded as the same schema version; opening one is serialised by an advisory
lock, as SQLite's write lock serialises a new file's migration.

The URL never holds a password (it is printed in messages and hashed into run labels): libpq reads one from
``~/.pgpass`` or ``PGPASSWORD``. Reading (show, report, history) opens a read-only session whose statements stop
after READ_LIMIT_S.
"""

from __future__ import annotations

import functools
import os
import re
import socket
import sqlite3
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any

from storbench.errors import UserError
from storbench.store.dialect import postgres_migration, postgres_schema, postgres_statement
from storbench.store.migrations import MIGRATIONS, POSTGRES_FIRST_VERSION, SCHEMA_VERSION, migrate, statements
from storbench.store.queries import WRITE_LOCK_KEY
from storbench.store.rows import IntegrityRefused

__all__ = ["POSTGRES_SCHEMES", "PgConnection", "is_postgres_url", "open_postgres", "schema_statements"]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
READ_LIMIT_S = 30.0
NOT_OURS_HINT = "pass a database of its own for storbench (`createdb storbench`), or one a `storbench run` wrote"
PASSWORD_HINT = ("put the password in ~/.pgpass (HOST:PORT:DB:USER:PASSWORD, mode 0600) or PGPASSWORD, which "
                 "libpq reads; the URL is printed in messages")


def is_postgres_url(text: str) -> bool:
    return text.startswith(POSTGRES_SCHEMES)


KEEPALIVE_OPTIONS = ("-c tcp_keepalives_idle=30 -c tcp_keepalives_interval=10 -c tcp_keepalives_count=3"
                     " -c tcp_user_timeout=60000")  # and data sent but not acknowledged: given up after a minute too
SECRET_PARTS = ("password", "sslpassword")  # what libpq would read from the URL that storbench refuses there


def _conninfo(url: str) -> dict[str, Any]:
    from psycopg.conninfo import conninfo_to_dict  # lazy: psycopg is for a postgresql:// store only (0.1 s to import)

    try:
        parts = conninfo_to_dict(url)
    except Exception as exc:  # psycopg's ProgrammingError: libpq's own words (the URL itself never echoed)
        said = re.sub(r"//[^/?#]*@", "//", str(exc).strip().splitlines()[0] if str(exc).strip() else "")
        # a quoted token of the URL (`invalid percent-encoded token: "pa%ss"`) may be its password, quotes and all:
        # nothing from the first quote on is shown
        said = re.sub(r'".*', '"..."', said)
        raise UserError(f"--db is not a PostgreSQL URL libpq reads: {said}",
                        hint="postgresql://USER@HOST:PORT/DB, or postgresql:///DB?host=/run/postgresql") from None
    if any(parts.get(name) for name in SECRET_PARTS):
        raise UserError("--db: the PostgreSQL URL holds a password; storbench takes none on its command line",
                        hint=PASSWORD_HINT)
    return parts


class Row:
    """One result row, read by column name or position, as sqlite3.Row is."""

    __slots__ = ("_index", "_values")

    def __init__(self, index: dict[str, int], values: Sequence[Any]) -> None:
        self._index = index
        self._values = values

    def __getitem__(self, key: str | int) -> Any:
        return self._values[self._index[key]] if isinstance(key, str) else self._values[key]

    def keys(self) -> list[str]:
        return list(self._index)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


class PgCursor:
    """A statement's result as sqlite3's cursor offers it."""

    def __init__(self, cursor: Any, lastrowid: int | None) -> None:
        self._cursor = cursor
        self.lastrowid = lastrowid
        self.rowcount = cursor.rowcount
        names = [column.name for column in cursor.description or ()]
        self.description = [(name, None, None, None, None, None, None) for name in names]
        self._index = {name: position for position, name in enumerate(names)}

    def fetchone(self) -> Any:  # a Row, or None (typed as sqlite3's is)
        values = self._cursor.fetchone()
        return None if values is None else Row(self._index, values)

    def fetchall(self) -> list[Row]:
        return [Row(self._index, values) for values in self._cursor.fetchall()]

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())


def _values(parameters: Sequence[Any]) -> tuple[Any, ...]:
    """A statement's values as PostgreSQL takes them: its text cannot hold a NUL character (SQLite's can: fio's
    stderr may have one), stored as U+FFFD, as a text with an undecodable byte is."""
    return tuple(value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value
                 for value in parameters)


class PgConnection:
    """A psycopg connection in autocommit (a read holds no transaction open); ``with conn:`` is one transaction."""

    def __init__(self, raw: Any, label: str) -> None:
        self.raw = raw
        self.label = label
        self._transactions: list[Any] = []

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> PgCursor:
        text, returning = postgres_statement(sql)
        with self._errors():
            cursor = self.raw.execute(text, _values(parameters))
            if returning:
                row = cursor.fetchone()
                return PgCursor(cursor, int(row[0]))
            return PgCursor(cursor, None)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        text, _ = postgres_statement(sql, many=True)
        with self._errors():
            self.raw.cursor().executemany(text, [_values(row) for row in rows])

    def __enter__(self) -> PgConnection:
        with self._errors():  # BEGIN on a connection the server closed since the last write
            transaction = self.raw.transaction()
            transaction.__enter__()
        self._transactions.append(transaction)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        with self._errors():
            self._transactions.pop().__exit__(kind, exc, trace)

    def close(self) -> None:
        self.raw.close()

    def _errors(self) -> Any:
        return _PgErrors(self.label)


class _PgErrors:
    """PostgreSQL's errors in storbench's words: a lost server or a full disk is one line (what was kept); a
    statement stopped by the read limit, another."""

    def __init__(self, label: str) -> None:
        self.label = label

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        import psycopg  # lazy: psycopg is for a postgresql:// store only (0.1 s to import)

        if exc is None or not isinstance(exc, psycopg.Error):
            return
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, psycopg.IntegrityError):  # an import tells what it means (`store.merge`): rows not ours
            raise IntegrityRefused(f"results database {self.label}: {first}", hint=NOT_OURS_HINT) from None
        if isinstance(exc, psycopg.errors.QueryCanceled):
            raise UserError(f"{self.label}: a query ran past {READ_LIMIT_S:g} s and was stopped; no storbench results "
                            "database needs that long", hint=NOT_OURS_HINT) from None
        if isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
            raise UserError(f"results database {self.label}: {first}", hint="reading never writes") from None
        if isinstance(exc, (psycopg.OperationalError, psycopg.errors.DiskFull)):
            raise UserError(f"results database {self.label}: {first}; everything committed before is intact, this "
                            "write was not kept", hint="fix the server (or its disk), then run the same command with "
                            "--resume") from None
        raise UserError(f"results database {self.label}: {first}", hint="is it a storbench store this storbench's "
                        "version wrote? (`storbench --version`)") from None


@functools.cache
def _sqlite_schema(version: int) -> tuple[tuple[str, str, str | None], ...]:
    """``sqlite_master``'s (type, name, sql) of storbench's SQLite schema at ``version``, in the order made."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys=ON")
        migrate(conn, ":memory:", until=version)
        return tuple(conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY rowid").fetchall())
    finally:
        conn.close()


def schema_statements() -> list[str]:
    """PostgreSQL's statements for this storbench's schema: SQLite's, made by its migrations, translated."""
    return postgres_schema(_sqlite_schema(SCHEMA_VERSION))


def storbench_tables(version: int) -> frozenset[str]:
    """The tables storbench's schema has at ``version``."""
    return frozenset(name for kind, name, _ in _sqlite_schema(version) if kind == "table")


def _label(parts: dict[str, Any]) -> str:
    """The URL as messages name it: user, host, port and database (a password is never in it: refused)."""
    user = f"{parts['user']}@" if parts.get("user") else ""
    host, db = str(parts.get("host") or ""), parts.get("dbname") or ""
    if host.startswith("/"):  # a local socket's directory
        return f"postgresql://{user}/{db}?host={host}"
    return f"postgresql://{user}{host}" + (f":{parts['port']}" if parts.get("port") else "") + f"/{db}"


def _schema_version(conn: PgConnection) -> int | None:
    """The store's schema version (None: no storbench tables yet). A database that is not storbench's -- tables
    named as storbench's without its schema record, a schema record (another tool's `schema_migrations`) without
    every table of that version as a plain table, a view, trigger or rule on one of them -- is refused untouched."""
    # from the catalog, which lists every table whatever this role may do with it (information_schema only those it
    # holds a privilege on: a table another operator's storbench made at an upgrade had read as missing)
    found = {row[0]: row[1] for row in conn.execute(
        "SELECT c.relname, CASE c.relkind WHEN 'r' THEN 'BASE TABLE' WHEN 'v' THEN 'VIEW' ELSE 'OTHER' END FROM"
        " pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND"
        " c.relkind IN ('r', 'v', 'm', 'f', 'p')")}
    if "schema_migrations" not in found:
        if set(found) & storbench_tables(SCHEMA_VERSION):
            raise UserError(f"{conn.label} has tables named as storbench's but is not a storbench results database; "
                            "left untouched", hint=NOT_OURS_HINT)
        return None
    columns = [row[0] for row in conn.execute(
        "SELECT a.attname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON"
        " n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relname = 'schema_migrations' AND"
        " a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum")]
    version = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone() \
        if columns == ["version", "applied_at"] else None
    if version is None or not isinstance(version[0], int):
        raise UserError(f"{conn.label} is not a storbench results database (its schema_migrations is not "
                        "storbench's); left untouched", hint=NOT_OURS_HINT)
    if version[0] > SCHEMA_VERSION:
        raise UserError(f"{conn.label} has schema version {version[0]}, newer than this storbench ({SCHEMA_VERSION})",
                        hint="upgrade storbench")
    if version[0] < POSTGRES_FIRST_VERSION:
        raise UserError(f"{conn.label} has schema version {version[0]}, older than any PostgreSQL store storbench "
                        "makes; left untouched", hint=NOT_OURS_HINT)
    ours = storbench_tables(int(version[0]))
    missing = sorted(name for name in ours if found.get(name) != "BASE TABLE")
    hooked = sorted({row[0] for row in conn.execute(
        "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON"
        " n.oid = c.relnamespace WHERE NOT t.tgisinternal AND n.nspname = current_schema()")}
        | {row[0] for row in conn.execute("SELECT tablename FROM pg_rules WHERE schemaname = current_schema()")})
    if missing or set(hooked) & ours:
        what = (f"{missing[0]} is not a plain table" if missing else f"{hooked[0]} has a trigger or rule, which "
                "storbench never makes")
        raise UserError(f"{conn.label} is not a storbench results database: {what}; left untouched",
                        hint=NOT_OURS_HINT)
    return int(version[0])


def _migrate(conn: PgConnection, version: int | None) -> None:
    """A new store gets this storbench's schema (SQLite's, translated) at its version; an older one the migrations
    after its version, SQL both databases run (from POSTGRES_FIRST_VERSION on, every migration is)."""
    if version is None:
        for statement in schema_statements():
            conn.execute(statement)
        conn.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (?, now()::text)", (SCHEMA_VERSION,))
        return
    for later in range(version + 1, SCHEMA_VERSION + 1):
        step = MIGRATIONS[later - 1]
        assert isinstance(step, str), f"migration {later} must be SQL that PostgreSQL runs too"
        for statement in statements(step):
            conn.execute(postgres_migration(statement))
        conn.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (?, now()::text)", (later,))


def postgres_store_exists(url: str) -> bool:
    """Whether the database at ``url`` holds a storbench store already (nothing is made to find out)."""
    conn, _ = open_postgres(url, read_only=True, checked=False)
    try:
        return _schema_version(conn) is not None
    finally:
        conn.close()


def open_postgres(url: str, *, read_only: bool = False, checked: bool = True) -> tuple[PgConnection, str]:
    """A connection to the PostgreSQL store at ``url`` and the label messages name it by (no password: refused).
    For writing, a database without storbench's tables gets them."""
    parts = _conninfo(url)
    label = _label(parts)
    try:
        import psycopg  # lazy: psycopg is for a postgresql:// store only (0.1 s to import)
    except ImportError:
        raise UserError(f"--db {label}: PostgreSQL needs the psycopg package, which is not installed",
                        hint="install psycopg into storbench's environment (pipx inject storbench "
                        "'psycopg[binary]>=3.1')") from None
    # the URL's own server options (a search_path) kept; reading adds its limits after them (the last one holds)
    # and a session whose machine is gone (a lost power or network) ends within about a minute, its run's lease with it
    # (the server's own keepalive waited over two hours, refusing every --resume meanwhile); the client's likewise
    # (PGOPTIONS, libpq's own, where the URL has none: given options replace it)
    own = str(parts.get("options") or os.environ.get("PGOPTIONS") or "")
    options = " ".join(filter(None, (own, KEEPALIVE_OPTIONS, (
        f"-c statement_timeout={int(READ_LIMIT_S * 1000)} -c default_transaction_read_only=on" if read_only else ""))))
    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=10, options=options, keepalives=1,
                              keepalives_idle=30, keepalives_interval=10, keepalives_count=3,
                              fallback_application_name=f"storbench {socket.gethostname()[:40]} pid {os.getpid()}")
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"cannot open {label}: {first}", hint="check the URL, that the server runs, and ~/.pgpass"
                        ) from None
    conn = PgConnection(raw, label)
    if not checked:
        return conn, label
    try:
        if read_only:
            version = _schema_version(conn)
            if version is None:
                raise UserError(f"{label} is not a storbench results database (no storbench tables in it)",
                                hint="run a plan first with this --db")
            if version < SCHEMA_VERSION:
                raise UserError(f"{label} was written by an older storbench (schema version {version} of "
                                f"{SCHEMA_VERSION}); reading does not upgrade it", hint="the next `storbench run` "
                                "or `storbench import` with this --db upgrades it")
            # one snapshot for the whole command: a report read while a run writes sees each repetition whole
            raw.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
            raw.read_only = True
            raw.autocommit = False
            return conn, label
        with conn:
            conn.execute("SELECT pg_advisory_xact_lock(?)", (WRITE_LOCK_KEY,))  # two storbench making one store: once
            _migrate(conn, _schema_version(conn))
        return conn, label
    except BaseException:
        conn.close()
        raise
