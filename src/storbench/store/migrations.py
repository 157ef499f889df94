"""The results database's schema: ordered, recorded migrations (index + 1 is the schema version), applied under one
write lock when a database is opened for writing. Never edit one that has shipped; append."""

from __future__ import annotations

import sqlite3

from storbench.errors import UserError

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


def migrate(conn: sqlite3.Connection, path: str) -> None:
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
            for statement in statements(MIGRATIONS[version - 1]):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_migrations VALUES (?, datetime('now'))", (version,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
