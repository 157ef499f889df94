"""The results store on PostgreSQL (issue 36): the same schema as SQLite's (tables, columns, types, keys,
references, checks); runs written, merged, resumed and read there exactly as in an SQLite file; a database that is
not storbench's left untouched; reading never writes; two storbench making one new store make it once; a password
in the URL refused. Each test gets a new database on one server the session starts (tests/postgres_server.py)."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from pathlib import Path

import pytest

from helpers import run_cli, write_plan
from storbench.errors import UserError
from storbench.store import open_store
from storbench.store.dialect import postgres_statement
from storbench.store.migrations import MIGRATIONS, POSTGRES_FIRST_VERSION, SCHEMA_VERSION

PG_TYPES = {"INTEGER": "bigint", "REAL": "double precision", "TEXT": "text", "BLOB": "bytea"}

PLAN = """
name: shared
targets:
  disk: {{kind: path, path: {data}, size: 8MiB}}
workload: {{rw: randrw, bs: 4k, iodepth: [1, 2], runtime: 1s, direct: false}}
repeat: 2
"""


def _sqlite_schema(db: Path) -> dict[str, tuple[object, ...]]:
    """Each table: its columns (name, type, not null, in the primary key), its references and its number of checks."""
    conn = sqlite3.connect(db)
    found: dict[str, tuple[object, ...]] = {}
    for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall():
        columns = [(c[1], PG_TYPES[c[2]], bool(c[3]) or c[5] > 0, c[5] > 0)
                   for c in conn.execute(f"PRAGMA table_info({name})")]
        references = sorted(f"FOREIGN KEY ({f[3]}) REFERENCES {f[2]}({f[4]})"
                            + ("" if f[6] == "NO ACTION" else f" ON DELETE {f[6]}")
                            for f in conn.execute(f"PRAGMA foreign_key_list({name})"))
        found[name] = (columns, references, sql.count("CHECK ("))
    conn.close()
    return found


def _postgres_schema(url: str) -> dict[str, tuple[object, ...]]:
    import psycopg

    found: dict[str, tuple[object, ...]] = {}
    with psycopg.connect(url) as conn:
        tables = [row[0] for row in conn.execute("SELECT table_name FROM information_schema.tables WHERE table_schema"
                                                 " = 'public'")]
        for table in tables:
            keys = {row[0] for row in conn.execute(
                "SELECT k.column_name FROM information_schema.table_constraints c JOIN"
                " information_schema.key_column_usage k USING (constraint_name, table_name) WHERE c.table_name = %s"
                " AND c.constraint_type = 'PRIMARY KEY'", (table,))}
            columns = [(name, kind, nullable == "NO", name in keys) for name, kind, nullable in conn.execute(
                "SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = %s"
                " ORDER BY ordinal_position", (table,))]
            constraints = [(kind, definition) for kind, definition in conn.execute(
                "SELECT contype, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass",
                (table,))]
            found[table] = (columns, sorted(d for k, d in constraints if k == "f"),
                            sum(1 for k, _ in constraints if k == "c"))
    return found


@pytest.mark.postgres
def test_the_schema_is_sqlites_on_both(postgres_db: str, tmp_path: Path) -> None:
    open_store(tmp_path / "s.db").close()
    open_store(postgres_db).close()
    sqlite, postgres = _sqlite_schema(tmp_path / "s.db"), _postgres_schema(postgres_db)
    # SQLite's implicit rowid (the order samples were stored in) is a column of its own where it is read
    samples = postgres["telemetry_samples"][0]
    assert isinstance(samples, list) and samples[0] == ("rowid", "bigint", True, False)
    postgres["telemetry_samples"] = ([column for column in samples if column[0] != "rowid"],
                                     *postgres["telemetry_samples"][1:])
    assert set(sqlite) == set(postgres)
    for table in sqlite:
        assert sqlite[table] == postgres[table], table
    assert sum(checks for _, _, checks in sqlite.values()) == 3  # the checks are counted, not lost
    store = open_store(postgres_db, read_only=True)
    assert store.conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == SCHEMA_VERSION
    store.close()


def test_statements_in_postgresqls_words() -> None:
    assert postgres_statement("SELECT * FROM runs WHERE plan_name = ? AND note = 'what?' AND x LIKE '5%'") == (
        "SELECT * FROM runs WHERE plan_name = %s AND note = 'what?' AND x LIKE '5%%'", False)
    assert postgres_statement("INSERT INTO runs (a, b) VALUES (?,?)") == (
        "INSERT INTO runs (a, b) VALUES (%s,%s) RETURNING id", True)
    assert postgres_statement("INSERT INTO runs (a) VALUES (?)", many=True) == ("INSERT INTO runs (a) VALUES (%s)",
                                                                               False)
    assert postgres_statement("INSERT OR IGNORE INTO cases (id) VALUES (?)") == (
        "INSERT INTO cases (id) VALUES (%s) ON CONFLICT DO NOTHING", False)
    assert postgres_statement("INSERT INTO plan_versions (run_id) VALUES (?)") == (
        "INSERT INTO plan_versions (run_id) VALUES (%s)", False)  # no id of its own


def test_every_migration_a_postgresql_store_may_need_is_sql_it_runs() -> None:
    assert all(isinstance(step, str) for step in MIGRATIONS[POSTGRES_FIRST_VERSION:])


@pytest.mark.postgres
@pytest.mark.fio  # its run is real fio: alone, not beside the others
def test_an_older_postgresql_store_is_read_only_when_older_and_migrated_when_written(
        postgres_db: str, postgres_server_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A store left at schema 13 (before runs recorded their labs' software): reading refuses it untouched, the next
    write migrates it with the same SQL SQLite runs, and its runs keep everything."""
    import psycopg

    open_store(postgres_db).close()
    with psycopg.connect(postgres_db, autocommit=True) as conn:  # as storbench 13 would have left it
        conn.execute("ALTER TABLE runs DROP COLUMN software_json")
        conn.execute("ALTER TABLE measurements RENAME COLUMN bw_bytes_per_s TO bw_bytes")  # before migration 15
        conn.execute("ALTER TABLE repetition_write_checks DROP COLUMN read_back")  # before migration 16
        conn.execute("DROP TABLE run_object_prefixes")  # before migration 17
        conn.execute("DELETE FROM schema_migrations")
        conn.execute("INSERT INTO schema_migrations VALUES (13, 'then')")
    code, _, err = run_cli(capsys, "show", "--db", postgres_db)
    assert code == 2 and "written by an older storbench (schema version 13 of" in err, err
    plan = write_plan(tmp_path, PLAN.format(data=tmp_path / "data").replace("iodepth: [1, 2]", "iodepth: 1")
                      .replace("repeat: 2", "repeat: 1"))
    code, out, err = run_cli(capsys, "run", str(plan), "--db", postgres_db)
    assert code == 0, out + err
    store = open_store(postgres_db, read_only=True)
    versions = [row[0] for row in store.conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == list(range(13, SCHEMA_VERSION + 1)) and store.runs()[0].software == ()
    store.close()
    from postgres_server import new_database

    fresh = new_database(postgres_server_url, "upgraded_against")
    open_store(fresh).close()
    assert _postgres_schema(postgres_db) == _postgres_schema(fresh)  # upgraded: the schema a new store gets


def _export(capsys: pytest.CaptureFixture[str], db: str, run: str) -> list[dict[str, object]]:
    code, out, err = run_cli(capsys, "export", "--db", db, "--run", run, "--format", "json")
    assert code == 0, err
    return list(json.loads(out))


@pytest.mark.postgres
@pytest.mark.fio
def test_runs_written_merged_and_read_in_postgres_are_the_sqlite_files_runs(
        postgres_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A machine's SQLite file merged into the team's PostgreSQL store reads back the same, record for record;
    merging again adds nothing; a run made straight into PostgreSQL reads in show, history and the report."""
    plan = write_plan(tmp_path, PLAN.format(data=tmp_path / "data"))
    db = str(tmp_path / "a.db")
    code, out, err = run_cli(capsys, "run", str(plan), "--db", db, "--label", "build=b1")
    assert code == 0, out + err
    code, out, err = run_cli(capsys, "import", db, "--db", postgres_db)
    assert code == 0 and "1 run merged into postgresql://storbench@/" in out, out + err
    here, there = _export(capsys, db, "1"), _export(capsys, postgres_db, "1")
    assert len(here) == 8 and here == there  # 2 points x 2 directions, every field: histograms, telemetry, provenance
    code, out, err = run_cli(capsys, "import", db, "--db", postgres_db)
    assert code == 0 and "0 runs merged" in out and "1 already there" in out, out + err
    code, out, err = run_cli(capsys, "run", str(plan), "--db", postgres_db, "--label", "build=b2")
    assert code == 0 and "stored in postgresql://" in out, out + err
    assert len(_export(capsys, postgres_db, "2")) == 8
    code, out, err = run_cli(capsys, "run", str(plan), "--db", postgres_db, "--resume")
    assert code == 0 and "0 repetitions run, 4 already stored" in out, out + err
    code, out, err = run_cli(capsys, "show", "--db", postgres_db, "--run", "2")
    assert code == 0 and "qd2" in out and "qd1" in out, out + err
    code, out, err = run_cli(capsys, "history", "--db", postgres_db, "--format", "json", "--metric", "iops")
    records = json.loads(out)
    assert code == 0 and {r["run"] for r in records} == {1, 2}, out + err
    assert {r["labels"]["build"] for r in records} == {"b1", "b2"}
    report = tmp_path / "r.html"
    code, _, err = run_cli(capsys, "report", "--db", postgres_db, "--run", "all", "-o", str(report))
    assert code == 0 and "<th>merged from</th><td>run 1 of a.db, " in report.read_text(), err
    _readme_dashboard_query(postgres_db)


def _readme_dashboard_query(url: str) -> None:
    """The README's Grafana query, on this plan's workload, gives every repetition's read IOPS with its build."""
    import psycopg

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    query = re.search(r"```sql\n(-- read IOPS of every repetition.*?)```", readme, re.S)
    assert query is not None
    with psycopg.connect(url) as conn:
        rows = conn.execute(query.group(1).replace("'randread'", "'randrw'").encode()).fetchall()
    assert len(rows) == 8 and {row[2] for row in rows} == {"b1", "b2"} and all(row[3] > 0 for row in rows)


@pytest.mark.postgres
def test_a_database_with_tables_of_its_own_named_as_storbenchs_is_left_untouched(
        postgres_db: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import psycopg

    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute("CREATE TABLE runs (x integer)")
    plan = write_plan(tmp_path, PLAN.format(data=tmp_path / "data"))
    code, _, err = run_cli(capsys, "run", str(plan), "--db", postgres_db)
    assert code == 2 and "not a storbench results database; left untouched" in err, err
    with psycopg.connect(postgres_db) as conn:
        assert [row[0] for row in conn.execute("SELECT table_name FROM information_schema.tables WHERE"
                                               " table_schema = 'public'")] == ["runs"]


@pytest.mark.postgres
def test_reading_never_writes(postgres_db: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "show", "--db", postgres_db)
    assert code == 2 and "is not a storbench results database (no storbench tables in it)" in err, err
    plan = write_plan(tmp_path, PLAN.format(data=tmp_path / "data"))
    code, _, err = run_cli(capsys, "run", str(plan), "--db", postgres_db, "--resume")
    assert code == 2 and "nothing to resume" in err, err
    import psycopg

    with psycopg.connect(postgres_db) as conn:  # show made no tables
        assert conn.execute("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'"
                            ).fetchone() == (0,)
    open_store(postgres_db).close()
    store = open_store(postgres_db, read_only=True)
    with pytest.raises(UserError, match="read-only transaction"):
        store.conn.execute("DELETE FROM runs")
    store.close()


@pytest.mark.postgres
def test_two_storbench_making_one_new_store_make_it_once(postgres_db: str) -> None:
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            open_store(postgres_db).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    store = open_store(postgres_db, read_only=True)
    assert store.conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == 1
    store.close()


@pytest.mark.parametrize("url", ["postgresql://team:hunter2@db.example/results",
                                 "postgresql://team@db.example/results?password=hunter2",
                                 "postgresql://team@db.example/results?sslpassword=hunter2",
                                 "postgresql://team:hunter2@db.example/results?bogus=1",
                                 # libpq names the token it cannot decode: the password itself
                                 "postgresql://team:hunter2%zz@db.example/results",
                                 'postgresql://team:p"hunter2%zz@db.example/results',  # a quote in it too
                                 "postgresql://team@db.example/results?password=hunter2%zz"])
def test_a_password_in_the_url_is_refused_and_never_printed(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "show", "--db", url)
    assert code == 2 and ("holds a password" in err or "is not a PostgreSQL URL" in err), err
    assert "hunter2" not in out + err and len(err.strip().splitlines()) == 1


def test_text_postgresql_cannot_hold_is_stored_as_a_replacement_character() -> None:
    from storbench.store.postgres import _values

    assert _values(("fio: \x00 in stderr", 3, b"\x00", None)) == ("fio: \ufffd in stderr", 3, b"\x00", None)


@pytest.mark.postgres
def test_a_store_whose_server_went_away_is_one_line(postgres_db: str) -> None:
    import psycopg

    store = open_store(postgres_db)
    with psycopg.connect(postgres_db, autocommit=True) as admin:  # the server ends storbench's session
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                      " WHERE application_name LIKE 'storbench %'")
    with pytest.raises(UserError, match="everything committed before is intact") as caught:
        store.finish_run(1, 0.0)
    assert "--resume" in (caught.value.hint or "")
    store.close()


@pytest.mark.postgres
def test_another_tools_schema_migrations_is_not_taken_for_storbenchs(postgres_db: str) -> None:
    import psycopg

    with psycopg.connect(postgres_db, autocommit=True) as conn:  # golang-migrate's table
        conn.execute("CREATE TABLE schema_migrations (version bigint PRIMARY KEY, dirty boolean NOT NULL)")
        conn.execute("INSERT INTO schema_migrations VALUES (14, false)")
    with pytest.raises(UserError, match=r"\(its schema_migrations is not storbench's\); left untouched"):
        open_store(postgres_db)
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute("DROP TABLE schema_migrations")
    open_store(postgres_db).close()
    with psycopg.connect(postgres_db, autocommit=True) as conn:  # a trigger on one of storbench's tables
        conn.execute("CREATE FUNCTION nothing() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END'")
        conn.execute("CREATE TRIGGER hidden BEFORE INSERT ON repetitions FOR EACH ROW EXECUTE FUNCTION nothing()")
    with pytest.raises(UserError, match="repetitions has a trigger or rule, which storbench never makes"):
        open_store(postgres_db, read_only=True)


@pytest.mark.postgres
def test_the_urls_own_server_options_are_kept(postgres_db: str) -> None:
    """`options=-csearch_path=team` in the URL: storbench's tables are made in that schema, and read from it."""
    import psycopg

    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA team")
    url = postgres_db + "&options=-csearch_path%3Dteam"
    open_store(url).close()
    store = open_store(url, read_only=True)
    assert store.runs() == []
    store.close()
    with psycopg.connect(postgres_db) as conn:
        schemas = {row[0] for row in conn.execute("SELECT table_schema FROM information_schema.tables WHERE"
                                                  " table_name = 'runs'")}
    assert schemas == {"team"}


def test_a_server_that_is_not_there_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run_cli(capsys, "show", "--db", f"postgresql://storbench@/results?host={tmp_path}")
    assert code == 2 and re.match(r"storbench: error: cannot open postgresql://storbench@/results\?host=", err), err
    assert len(err.strip().splitlines()) == 1


def test_a_role_without_rights_on_a_table_still_knows_the_store_is_storbenchs(
        postgres_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """An upgrade run by the store's owner made a new table with no grants for the other operators' roles:
    information_schema lists only tables a role holds a privilege on, so theirs read "run_object_prefixes is not a
    plain table ... not a storbench results database". The catalog lists them all."""
    import psycopg

    open_store(postgres_db).close()
    with psycopg.connect(postgres_db, autocommit=True) as conn:
        conn.execute("CREATE ROLE reader LOGIN")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader")
        conn.execute("REVOKE ALL ON run_object_prefixes FROM reader")  # as a table made later, never granted
    as_reader = postgres_db.replace("postgresql://storbench@", "postgresql://reader@", 1)
    assert as_reader != postgres_db
    code, out, err = run_cli(capsys, "show", "--db", as_reader)
    assert "not a storbench results database" not in err and "not a plain table" not in err, err
    assert code == 2 and "holds no runs yet" in err, out + err  # read as the storbench store it is


def test_rows_that_point_nowhere_imported_into_postgresql_are_one_line(postgres_db: str, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Only SQLite's IntegrityError had been caught: into a PostgreSQL store, psycopg's ended the import in the
    generic "results database" line, without "nothing imported"."""
    source = tmp_path / "orphans.db"
    fixture = Path(__file__).parent / "fixtures" / "randread-plain.json"
    assert run_cli(capsys, "import", str(fixture), "--db", str(source))[0] == 0
    with sqlite3.connect(source) as conn:  # repetitions whose case is gone (foreign keys off, as a hand edit)
        conn.execute("DELETE FROM cases")
    code, _, err = run_cli(capsys, "import", str(source), "--db", postgres_db)
    assert code == 2 and "orphans.db: run 1's rows are not storbench's" in err and "nothing imported" in err, err


def test_a_stores_session_names_its_machine_and_process_and_asks_for_keepalives(postgres_db: str) -> None:
    """A session whose machine was gone held its run's lease until the server's own keepalive gave up (over two
    hours on Linux's defaults), and the refusal could not say whose session it was: the session asks for keepalives
    of about a minute (`tcp_keepalives_*`: over TCP; a local socket has none) and names its machine and pid."""
    import os
    import socket

    import psycopg

    from storbench.store.postgres import KEEPALIVE_OPTIONS

    store = open_store(postgres_db)
    try:
        with psycopg.connect(postgres_db, autocommit=True) as admin:
            names = [row[0] for row in admin.execute("SELECT application_name FROM pg_stat_activity")]
        assert f"storbench {socket.gethostname()[:40]} pid {os.getpid()}" in names, names
        # the session was given them (a local socket shows 0 as their value: their source says who set them)
        sources = dict(store.conn.execute("SELECT name, source FROM pg_settings WHERE name IN ('tcp_keepalives_idle',"
                                          " 'tcp_keepalives_count', 'tcp_user_timeout')").fetchall())
        assert sources == {name: "client" for name in ("tcp_keepalives_idle", "tcp_keepalives_count",
                                                       "tcp_user_timeout")}, sources
        assert "-c tcp_keepalives_idle=30" in KEEPALIVE_OPTIONS
    finally:
        store.close()
