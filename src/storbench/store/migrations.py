"""The results database's schema: ordered, recorded migrations (index + 1 is the schema version), applied under one
write lock when a database is opened for writing. Never edit one that has shipped; append."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import replace

from storbench.config import load_plan_text, plan_design
from storbench.errors import UserError
from storbench.plan import expand
from storbench.run_design import NO_DESIGN, RunDesign
from storbench.store.rows import design_text

# Migration 5's parts: a key of the stored target, and the SQL of its value (a shape-1 key of the same name, another
# key, or an expression).
_DESTRUCTIVE = ("destructive", "CASE WHEN json_extract(target_json, '$.destructive') THEN json('true') ELSE "
                "json('false') END")


def _targets_by_kind(*kinds: tuple[str | tuple[str, str], ...]) -> str:
    """Migration 5: each kind's shape-1 target rewritten as ``{"schema": 2, "kind": ..., "name": ..., its fields}``;
    a field is a key kept as it was, or (key, the shape-1 key it comes from or an SQL expression)."""

    def value(field: str | tuple[str, str]) -> str:
        key, source = (field, field) if isinstance(field, str) else field
        expression = source if "(" in source else f"json_extract(target_json, '$.{source}')"
        return f"'{key}', {expression}"

    arms = [f"WHEN '{kind}' THEN json_object('schema', 2, 'kind', '{kind}', 'name', json_extract(target_json, "
            f"'$.name'), " + ", ".join(value(field) for field in fields) + ")"
            for kind, *fields in kinds]
    return ("UPDATE cases SET target_json = CASE json_extract(target_json, '$.kind') " + " ".join(arms)
            + " END WHERE json_extract(target_json, '$.schema') IS NULL;")


def design_of_text(plan_text: str) -> RunDesign:
    """The design this storbench reads in a stored plan text (``NO_DESIGN`` when it reads no plan there: an
    import's, or one an older storbench accepted); how migration 9 gave the runs stored before it theirs."""

    try:
        loaded = load_plan_text(plan_text, "stored plan")
    except UserError:
        return NO_DESIGN
    try:
        cases: int | None = len(expand(loaded))
    except UserError:
        cases = None
    design = plan_design(loaded.config, cases)
    if design.stopping is not None and design.stopping.ci_confidence is not None:
        # a run stored before this storbench was judged by the rule of its day: its level is not known here
        design = replace(design, stopping=replace(design.stopping, ci_confidence=None))
    return design


def fill_designs(conn: sqlite3.Connection) -> None:
    """Each run, and each version of its plan, without a stored design gets the one its plan text gives."""
    designs: dict[str, str] = {}

    def design(plan_text: str, source: str) -> str:
        if source != "run":
            return design_text(NO_DESIGN)
        if plan_text not in designs:
            designs[plan_text] = design_text(design_of_text(plan_text))
        return designs[plan_text]

    for run_id, plan_text, source in conn.execute(
            "SELECT id, plan_text, source FROM runs WHERE design_json IS NULL").fetchall():
        conn.execute("UPDATE runs SET design_json = ? WHERE id = ?", (design(plan_text, source), run_id))
    for run_id, version, plan_text, source in conn.execute(
            "SELECT v.run_id, v.version, v.plan_text, r.source FROM plan_versions v JOIN runs r ON r.id = v.run_id"
            " WHERE v.design_json IS NULL").fetchall():
        conn.execute("UPDATE plan_versions SET design_json = ? WHERE run_id = ? AND version = ?",
                     (design(plan_text, source), run_id, version))


def _versioned_workloads(conn: sqlite3.Connection) -> None:
    """8: workloads stored in a versioned shape (schema 2: {"schema": 2, the WorkloadPoint's fields}), as targets
    are; the copies of case fields that nothing read (target name and kind, rw, block size, iodepth, numjobs)
    dropped (ALTER TABLE DROP COLUMN: SQLite 3.35 or newer)."""
    if sqlite3.sqlite_version_info < (3, 35, 0):
        raise UserError(f"this Python's SQLite is {sqlite3.sqlite_version}; storbench's results database needs 3.35 "
                        "or newer", hint="run storbench with a Python built with SQLite 3.35 or newer (Debian 12 has "
                        "3.40)")
    for statement in statements("""
        UPDATE cases SET workload_json = json_set(workload_json, '$.schema', 2)
            WHERE json_extract(workload_json, '$.schema') IS NULL;
        ALTER TABLE cases DROP COLUMN target_name;
        ALTER TABLE cases DROP COLUMN target_kind;
        ALTER TABLE cases DROP COLUMN rw;
        ALTER TABLE cases DROP COLUMN bs_bytes;
        ALTER TABLE cases DROP COLUMN iodepth;
        ALTER TABLE cases DROP COLUMN numjobs;
        """):
        conn.execute(statement)


def _run_designs(conn: sqlite3.Connection) -> None:
    """9: a run's design stored as data when it is created or resumed (expectations, steady-state rule, stopping
    rule and its comparison, bring-up mode, planned repetitions: run_design.py), so readers never parse its YAML
    again, for the run and for every version of its plan. The runs stored before get the design this storbench
    reads in their plan texts; a text it reads no plan in gets none, which is all the readers made of it before."""
    conn.execute("ALTER TABLE runs ADD COLUMN design_json TEXT")
    conn.execute("ALTER TABLE plan_versions ADD COLUMN design_json TEXT")
    fill_designs(conn)


# Ordered migrations: index + 1 is the schema version; a script, or a function for what SQL cannot do. Never edit one
# that has shipped; append. Each runs once (the version is recorded in the same transaction), and one-way.
MIGRATIONS: tuple[str | Callable[[sqlite3.Connection], None], ...] = (
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
    _targets_by_kind(
        ("path", "path", "size_bytes"),
        ("cephfs", "path", "size_bytes"),
        ("nfs", ("url", "path"), "size_bytes"),
        ("block", "device", "size_bytes", _DESTRUCTIVE),
        ("rbd", "size_bytes", "pool", "image", "client", "conf", _DESTRUCTIVE),
        ("pvc", "size_bytes", "storage_class", "access_mode", "volume_mode", "namespace", "container_image",
         "image_pull_policy", ("node_selector", "json(COALESCE(json_extract(target_json, '$.node_selector'), '[]'))"),
         _DESTRUCTIVE, "start_budget_s"),
        ("imported", ("location", "path")),
    ),
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
    _versioned_workloads,
    _run_designs,
    # 10: a repetition with faults: fio's timeline logs and what each fault did when (issue 32)
    """
    CREATE TABLE repetition_logs (
        repetition_id INTEGER NOT NULL REFERENCES repetitions(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        text_z BLOB NOT NULL,
        PRIMARY KEY (repetition_id, name)
    );
    CREATE TABLE repetition_faults (
        repetition_id INTEGER NOT NULL REFERENCES repetitions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        restore INTEGER NOT NULL,
        at_s REAL NOT NULL,
        planned_at_s REAL NOT NULL,
        measure_start_s REAL NOT NULL,
        said TEXT NOT NULL DEFAULT '',
        error TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (repetition_id, seq)
    );
    """,
    # 11: what the checking writer (`check_writes`) read back after a repetition (issue 32)
    """
    CREATE TABLE repetition_write_checks (
        repetition_id INTEGER PRIMARY KEY REFERENCES repetitions(id) ON DELETE CASCADE,
        blocks INTEGER NOT NULL,
        block_bytes INTEGER NOT NULL,
        acknowledged INTEGER NOT NULL,
        failed INTEGER NOT NULL,
        lost INTEGER NOT NULL,
        stale INTEGER NOT NULL,
        torn INTEGER NOT NULL,
        corrupt INTEGER NOT NULL,
        first_bad_json TEXT NOT NULL,
        error TEXT NOT NULL DEFAULT ''
    );
    """,
    # 12: a run's labels given at run time (`run --label KEY=VALUE`: a build, a git sha), for its history (issue 36)
    """
    ALTER TABLE runs ADD COLUMN labels_json TEXT NOT NULL DEFAULT '{}';
    """,
    # 13: where a run merged from another database came from (`storbench import OTHER.db`, issue 36): that
    # database's file name, the run's id there, when it was merged; '{}' for a run made here
    """
    ALTER TABLE runs ADD COLUMN merged_from_json TEXT NOT NULL DEFAULT '{}';
    """,
    # 14: the versions of the software the run's labs ran (Ceph, nfs-ganesha), what history names at a step
    # (issue 36); '{}' for runs stored before, imports and runs without a lab. From here on every migration is SQL
    # that PostgreSQL runs too (`store.postgres`): its stores start at 13
    """
    ALTER TABLE runs ADD COLUMN software_json TEXT NOT NULL DEFAULT '{}';
    """,
    # 15: a direction's bandwidth named with its unit, as the export names it
    """
    ALTER TABLE measurements RENAME COLUMN bw_bytes TO bw_bytes_per_s;
    """,
    # 16: how many acknowledged writes the checking writer read back (each block's last; NULL: not counted then)
    """
    ALTER TABLE repetition_write_checks ADD COLUMN read_back INTEGER;
    """,
    # 17: the S3 object prefix of each session of a run, recorded before it writes an object: a session killed in
    # its first fill left objects no repetition named, which its resume could not find to remove
    """
    CREATE TABLE run_object_prefixes (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        endpoint TEXT NOT NULL,
        bucket TEXT NOT NULL,
        object_prefix TEXT NOT NULL,
        PRIMARY KEY (run_id, endpoint, bucket, object_prefix)
    );
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
POSTGRES_FIRST_VERSION = 13  # a PostgreSQL store is made at this version or later, then migrated as SQLite's is


def statements(script: str) -> list[str]:
    """A migration script as single statements (sqlite3.complete_statement knows where each ends)."""
    statements, pending = [], ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n\t;"):
                statements.append(pending.strip())
            pending = ""
    return statements


def migrate(conn: sqlite3.Connection, path: str, until: int = SCHEMA_VERSION) -> None:
    """Bring the database to SCHEMA_VERSION (or ``until``) under a write lock taken before the version is read: two
    storbench processes opening one new database at once migrate it once (the second waits, then finds it done)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT)")
        current = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0]
        if current > SCHEMA_VERSION:
            raise UserError(f"{path} has schema version {current}, newer than this storbench ({SCHEMA_VERSION})",
                            hint="upgrade storbench")
        for version in range(current + 1, until + 1):
            step = MIGRATIONS[version - 1]
            if callable(step):
                step(conn)
            else:
                for statement in statements(step):
                    conn.execute(statement)
            conn.execute("INSERT INTO schema_migrations VALUES (?, datetime('now'))", (version,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
