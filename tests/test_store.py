"""The store: migrations are recorded, a newer schema is refused, a non-database is a user error."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path

import pytest

from storbench.errors import UserError
from storbench.model import (
    Case,
    ClientMeasurement,
    Direction,
    DirectionMeasurement,
    LatencyHistogram,
    LatencySummary,
    PathTarget,
    PvcTarget,
    RepetitionOutcome,
    Status,
    WorkloadPoint,
)
from storbench.store import open_store
from storbench.store.migrations import SCHEMA_VERSION
from storbench.store.rows import target_to_json


def _case() -> Case:
    target = PathTarget(name="t", path="/x", size_bytes=4096)
    workload = WorkloadPoint(rw="randread", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=1, ramp_s=0, direct=True,
                             ioengine="libaio", size_bytes=4096, fio_options=(("norandommap", "1"),))
    return Case(case_id="abc123abc123", target=target, workload=workload)


def _outcome(status: Status = Status.OK) -> RepetitionOutcome:
    histogram = LatencyHistogram.from_counts(((1000, 3), (2000, 1)))
    latency = LatencySummary(samples=4, min_ns=900, max_ns=2100, mean_ns=1250.0, stddev_ns=400.0, histogram=histogram)
    measurement = DirectionMeasurement(direction=Direction.READ, total_ios=4, io_bytes=16384, runtime_ms=1000,
                                       iops=4.0, bw_bytes_per_s=16384.0, clat=latency, lat=latency)
    client = ClientMeasurement(client="local", jobs=1, job_errors=(), cpu_usr_pct=1.5, cpu_sys_pct=2.5,
                               directions=(measurement,))
    return RepetitionOutcome(status=status, started_at_s=10.0, finished_at_s=11.0, job_text="[global]\n",
                             command=("fio", "job.fio"), fio_version="fio-3.33", raw_output='{"jobs": []}',
                             stderr_tail="", clients=(client,) if status == Status.OK else ())


def _run(store) -> int:  # type: ignore[no-untyped-def]
    return int(store.create_run(plan_name="p", plan_text="name: p\n", plan_sha256="0", source="run",
                                storbench_version="0", fio_version="fio-3.33", host="h", kernel="k",
                                run_order="interleaved", seed=0, tags=["a"], started_at_s=1.0))


def test_migrations_are_recorded_and_idempotent(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    open_store(db).close()
    open_store(db).close()
    conn = sqlite3.connect(db)
    versions = [row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    conn.close()
    assert versions == list(range(1, SCHEMA_VERSION + 1))
    assert mode == "wal"


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    open_store(db).close()
    conn = sqlite3.connect(db)
    conn.execute("INSERT INTO schema_migrations VALUES (?, 'future')", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(UserError, match="newer than this storbench"):
        open_store(db)


def test_not_a_database_is_a_user_error(tmp_path: Path) -> None:
    db = tmp_path / "notes.db"
    db.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(UserError, match="not a storbench results database"):
        open_store(db)


def test_repetition_round_trip_keeps_bins_and_replaces_failed_attempts(tmp_path: Path) -> None:
    store = open_store(tmp_path / "r.db")
    run_id = _run(store)
    case = _case()
    store.save_repetition(run_id, case, 0, _outcome(Status.FAILED), (("kind", "path"),))
    assert store.completed(run_id) == set()
    store.save_repetition(run_id, case, 0, _outcome(), (("kind", "path"),))
    assert store.completed(run_id) == {(case.case_id, 0)}
    reps = store.repetitions([run_id])
    assert len(reps) == 1
    rep = reps[0]
    assert rep.case == case
    read = rep.clients[0].direction(Direction.READ)
    assert read is not None and read.lat.histogram == LatencyHistogram.from_counts(((1000, 3), (2000, 1)))
    assert read.lat.percentile_ns(75) == 1000 and read.lat.percentile_ns(99) == 2000
    job_text, command, raw, _ = store.repetition_provenance(rep.repetition_id)
    assert job_text == "[global]\n" and command == ["fio", "job.fio"] and raw == '{"jobs": []}'
    assert store.latest_run_of_plan("p") is not None and store.latest_run_of_plan("q") is None
    store.close()


def test_pvc_case_round_trips_with_its_node_selector(tmp_path: Path) -> None:
    store = open_store(tmp_path / "r.db")
    run_id = _run(store)
    target = PvcTarget(name="k", size_bytes=4096, storage_class="fast", access_mode="ReadWriteOnce",
                       volume_mode="Filesystem", namespace="bench", container_image="fio:local",
                       image_pull_policy="Never", node_selector=(("disktype", "nvme"), ("zone", "a")),
                       destructive=False, start_budget_s=30.0)
    case = Case(case_id="def456def456", target=target, workload=_case().workload, clients=3)
    store.save_repetition(run_id, case, 0, _outcome(), (("kind", "pvc"),))
    (rep,) = store.repetitions([run_id])
    assert rep.case == case
    assert rep.case.target.node_selector == (("disktype", "nvme"), ("zone", "a"))


def test_a_case_on_a_lab_round_trips_with_its_typed_lab_point(tmp_path: Path) -> None:
    from storbench.model import CephLabPoint, LabPoint

    store = open_store(tmp_path / "r.db")
    run_id = _run(store)
    lab = LabPoint(ceph=CephLabPoint(osds=3, osd_size_bytes=2 << 30, objectstore="bluestore", pool_size=2,
                                     cache_size_bytes=1 << 30, cephfs=True), nfs=True)
    case = Case(case_id="abc123abc999", target=_case().target, workload=_case().workload, lab=lab)
    store.save_repetition(run_id, case, 0, _outcome(), (("kind", "path"),))
    (rep,) = store.repetitions([run_id])
    assert rep.case.lab == lab and rep.case == case
    assert lab.describe() == "cache_size=1GiB objectstore=bluestore osd_size=2GiB osds=3 pool_size=2 cephfs=1"


def _every_kind() -> list[object]:
    from storbench.model import BlockTarget, CephfsTarget, ImportedTarget, NfsTarget, RbdTarget

    return [PathTarget("p", path="/srv/x", size_bytes=1 << 20), BlockTarget("b", device="/dev/vdb", destructive=True),
            RbdTarget("r", size_bytes=1 << 30, pool="bench", image="img", client="admin", conf="/etc/ceph/c.conf"),
            CephfsTarget("c", size_bytes=1 << 20), NfsTarget("n", size_bytes=1 << 20, url="nfs://h/export"),
            PvcTarget("k", size_bytes=1 << 30, storage_class=None, access_mode="ReadWriteMany", volume_mode="Block",
                      namespace="ns", container_image="fio:local", image_pull_policy="Never",
                      node_selector=(("zone", "a"),), destructive=True, start_budget_s=12.0),
            ImportedTarget("i", location="/data/file")]


def test_every_target_kind_round_trips_through_its_stored_shape() -> None:
    from storbench.store.rows import target_from_json, target_to_json

    for target in _every_kind():
        stored = json.loads(json.dumps(target_to_json(target)))  # through text, as in the database
        assert stored["schema"] == 2 and stored["kind"] == target.kind  # type: ignore[attr-defined]
        assert target_from_json(stored) == target


def test_migration_5_turns_flat_targets_into_their_kinds_and_keeps_case_ids(tmp_path: Path) -> None:
    """Databases written before targets were one type per kind: every target is converted, and the case ids
    computed from the converted targets are the stored ones."""
    from storbench.case_ids import case_id_for

    db = tmp_path / "r.db"
    store = open_store(db)
    run_id = _run(store)
    originals = [t for t in _every_kind() if t.kind != "imported"]  # type: ignore[attr-defined]
    cases = []
    for index, target in enumerate(originals):
        case = Case(case_id="", target=target, workload=_case().workload)  # type: ignore[arg-type]
        case = Case(case_id=case_id_for(case.target, case.workload), target=case.target, workload=case.workload)
        store.save_repetition(run_id, case, index, _outcome(), ())
        cases.append(case)
    # as version 1 wrote them: every field of every kind, the NFS url in "path"
    v1: dict[str, object] = {"path": None, "device": None, "size_bytes": None, "destructive": False, "pool": None,
                             "image": None, "client": None, "conf": None, "storage_class": None, "access_mode": None,
                             "volume_mode": None, "namespace": None, "container_image": None,
                             "image_pull_policy": None, "node_selector": [], "kubeconfig": None,
                             "start_budget_s": None}
    for case in cases:
        flat = {**v1, **{k: v for k, v in json.loads(json.dumps(target_to_json(case.target))).items()
                         if k != "schema"}}
        if flat["kind"] == "nfs":
            flat["path"] = flat.pop("url")
        store.conn.execute("UPDATE cases SET target_json = ? WHERE id = ?", (json.dumps(flat), case.case_id))
    store.conn.execute("DELETE FROM schema_migrations WHERE version = 5")
    store.close()
    store = open_store(db)  # migrates again
    by_id = {rep.case.case_id: rep.case for rep in store.repetitions([run_id])}
    store.close()
    assert {i: c.target for i, c in by_id.items()} == {c.case_id: c.target for c in cases}
    for case_id, case in by_id.items():
        assert case_id_for(case.target, case.workload) == case_id


def test_many_processes_opening_one_new_database_at_once_all_get_it(tmp_path: Path) -> None:
    """Setting up a new database (WAL, migrations) from several storbench processes at once: each one opens it,
    the schema is migrated once."""
    import subprocess
    import sys

    db = tmp_path / "new.db"
    code = ("import sys; from storbench.store import open_store; s = open_store(sys.argv[1]); "
            "print(len(s.runs())); s.close()")
    processes = [subprocess.Popen([sys.executable, "-c", code, str(db)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for _ in range(8)]
    results = [p.communicate(timeout=120) for p in processes]
    assert all(p.returncode == 0 for p in processes), [r[1].decode()[-300:] for r in results]
    conn = sqlite3.connect(db)
    versions = [row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    conn.close()
    assert versions == list(range(1, len(versions) + 1))  # each migration applied exactly once


def test_a_reader_sees_one_snapshot_while_a_run_writes(tmp_path: Path) -> None:
    """`show` or `report` reading while a run writes: every query of the command sees the database as it was at
    the first, so a repetition is never read without its measurements or a run without its repetitions."""
    db = tmp_path / "r.db"
    writer = open_store(db)
    first = _run(writer)
    writer.save_repetition(first, _case(), 0, _outcome(), (("kind", "path"),))
    reader = open_store(db, read_only=True)
    assert [run.run_id for run in reader.runs()] == [first]
    second = _run(writer)  # the run goes on: a new run and a repetition committed after the reader's first look
    writer.save_repetition(second, _case(), 0, _outcome(), (("kind", "path"),))
    assert [run.run_id for run in reader.runs()] == [first]
    assert len(reader.repetitions()) == 1
    reader.close()
    again = open_store(db, read_only=True)  # the next command sees it all
    assert [run.run_id for run in again.runs()] == [first, second] and len(again.repetitions()) == 2
    again.close()
    writer.close()


def test_a_reader_opened_while_no_one_writes_keeps_its_snapshot_when_a_run_starts(tmp_path: Path) -> None:
    """No -wal beside the database when the reader opens (nothing was writing); then a run writes many pages and
    ends (its checkpoint rewrites the database file): the reader still sees the database as at its first look,
    whole and readable."""
    db = tmp_path / "r.db"
    writer = open_store(db)
    first = _run(writer)
    writer.save_repetition(first, _case(), 0, _outcome(), (("kind", "path"),))
    writer.close()
    assert not Path(f"{db}-wal").exists()
    reader = open_store(db, read_only=True)
    assert [run.run_id for run in reader.runs()] == [first]
    writer = open_store(db)
    for _ in range(30):
        writer.save_repetition(_run(writer), _case(), 0, _outcome(), (("kind", "path"),))
    writer.close()  # its last checkpoint moves every page into the database file
    assert [run.run_id for run in reader.runs()] == [first]
    assert len(reader.repetitions()) == 1
    assert reader.conn.execute("SELECT COUNT(*) FROM plan_versions").fetchone()[0] == 1
    assert reader.conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
    reader.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to act as two other users")
def test_another_users_reader_leaves_no_file_that_locks_the_owner_out(tmp_path: Path) -> None:
    """A database in a shared directory (1777) read by another user: SQLite would make its -wal and -shm that
    user's, and the owner could no longer write; such a reader opens it immutable and leaves nothing behind."""
    import shutil
    import subprocess
    import sys
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="storbench-shared-", dir="/tmp"))  # pytest's own is root's alone
    shared.chmod(0o1777)
    db = shared / "r.db"
    write = ("import sys; from storbench.store import open_store; s = open_store(sys.argv[1]); "
             "s.conn.execute('PRAGMA user_version = 7'); s.conn.commit(); s.close(); print('wrote')")
    read = ("import sys; from storbench.store import open_store; s = open_store(sys.argv[1], read_only=True); "
            "print(len(s.runs())); s.close()")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}

    def as_user(user: str, code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", code, str(db)], user=user, capture_output=True, text=True,
                              env=env, cwd=shared, timeout=60)

    try:
        owner = as_user("nobody", write)
        assert owner.returncode == 0 and "wrote" in owner.stdout, owner.stderr[-500:]
        os.chmod(db, 0o644)
        reader = as_user("daemon", read)
        assert reader.returncode == 0 and reader.stdout.strip() == "0", reader.stderr[-500:]
        assert sorted(p.name for p in shared.iterdir()) == ["r.db"]
        again = as_user("nobody", write)
        assert again.returncode == 0 and "wrote" in again.stdout, again.stderr[-500:]
    finally:
        shutil.rmtree(shared)


def test_reading_many_repetitions_stays_within_the_bound_parameter_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A shared store grows past any database's limit on bound parameters (SQLite's default 32,766, PostgreSQL's
    65,535): every query by repetition reads in chunks, the clients' too. Here the limit is 10 and a chunk 4."""
    from storbench.store import queries

    store = open_store(tmp_path / "r.db")
    run_id = _run(store)
    for index in range(12):
        store.save_repetition(run_id, _case(), index, _outcome(), (("kind", "path"),))
    monkeypatch.setattr(queries, "CHUNK", 4)
    store.conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 10)
    reps = store.repetitions([run_id])
    assert len(reps) == 12 and all(len(r.clients) == 1 for r in reps)
    store.close()


def test_a_write_lock_held_past_the_wait_is_one_line_that_says_resume(tmp_path: Path) -> None:
    """A long `storbench import` into the database a run writes holds its write lock: the run's write that waited
    it out is one line with what was kept and how to go on, not a traceback."""
    store = open_store(tmp_path / "r.db")
    other = sqlite3.connect(tmp_path / "r.db", isolation_level=None)
    try:
        # a run's write waits 10 minutes for an import's lock (it had waited 30 s, then lost its repetition)
        assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 600_000
        store.conn.execute("PRAGMA busy_timeout = 50")
        other.execute("BEGIN IMMEDIATE")
        with pytest.raises(UserError, match="database is locked; everything stored before is intact") as caught:
            store.create_run(plan_name="p", plan_text="name: p\n", plan_sha256="1", source="run",
                             storbench_version="0", fio_version="fio-3.36", host="h", kernel="k",
                             run_order="interleaved", seed=0, tags=(), started_at_s=0.0)
        assert caught.value.hint is not None and "--resume" in caught.value.hint
    finally:
        other.close()
        store.close()


def test_a_precondition_a_newer_storbench_stored_is_one_line(tmp_path: Path) -> None:
    from storbench.model import Precondition, PreconditionRecord

    store = open_store(tmp_path / "r.db")
    run_id = _run(store)
    store.save_precondition(run_id, PreconditionRecord(
        target="t", lab=(), precondition=Precondition(rw="write", bs_bytes=1 << 20, iodepth=8, passes=1),
        status=Status.OK, started_at_s=1.0, finished_at_s=2.0, written_bytes=4096, job_text="[fill]\n"))
    assert store.preconditions([run_id])[run_id][0].precondition.passes == 1
    with store.transaction() as conn:  # a field a later storbench added to the precondition
        conn.execute("UPDATE preconditions SET precondition_json = json_set(precondition_json, '$.pattern', 'x')")
    with pytest.raises(UserError, match=r"precondition has fields this storbench does not know \(pattern\)") as got:
        store.preconditions([run_id])
    assert "upgrade storbench" in (got.value.hint or "")
    store.close()


def test_a_repetition_reads_back_the_filesystem_its_target_was_on(tmp_path: Path) -> None:
    """A target in memory (tmpfs) measured RAM, and nothing said so after `plan`: the filesystem the run found is
    read back with each repetition, and its points are warned of."""
    from storbench.stats.observations import observations
    from storbench.stats.summary import summarize_points

    store = open_store(tmp_path / "r.db")
    run_id = _run(store)
    for index, filesystem in enumerate(("tmpfs", "tmpfs", "tmpfs")):
        store.save_repetition(run_id, _case(), index, _outcome(), (("kind", "path"), ("filesystem", filesystem)))
    reps = store.repetitions([run_id])
    assert [r.filesystem for r in reps] == ["tmpfs"] * 3
    (point,) = summarize_points(observations(reps))
    assert [w.message for w in point.warnings if w.code == "in_memory"] == [
        "the target's directory is on tmpfs (memory): its figures are RAM's and this host's CPU's, not a storage "
        "device's"]
    store.save_repetition(run_id, _case(), 0, _outcome(), (("kind", "path"), ("filesystem", "ext4")))
    store.save_repetition(run_id, _case(), 1, _outcome(), (("kind", "path"),))  # a device, or no details
    (point,) = summarize_points(observations(store.repetitions([run_id])))
    assert "in_memory" in [w.code for w in point.warnings]  # one repetition on tmpfs is enough to say so
    store.close()


def test_a_database_that_cannot_be_written_says_so_not_free_space(tmp_path: Path) -> None:
    """A results database on a read-only mount: the hint had said to free space."""
    store = open_store(tmp_path / "r.db")
    try:
        store.conn.execute("PRAGMA query_only = 1")  # as a read-only mount answers a write
        with pytest.raises(UserError, match="readonly database; everything stored before is intact") as caught:
            _run(store)
        assert caught.value.hint is not None and caught.value.hint.startswith("pass a --db you may write")
    finally:
        store.close()


@pytest.mark.parametrize(("given", "said"), [
    ("mysql://db.example/results", "--db mysql://...: storbench keeps results in an SQLite file or a PostgreSQL"),
    ("sqlite:///tmp/r.db", "--db sqlite://...: storbench keeps results"),
    ("", "the results database's name is empty"),
])
def test_a_database_location_of_another_kind_is_one_line(given: str, said: str) -> None:
    """`--db mysql://x/y` had read "no results database ... run a plan first", or "mysql:/x does not exist"."""
    from storbench.store import store_exists

    for step in (lambda: open_store(given), lambda: store_exists(given)):
        with pytest.raises(UserError, match=re.escape(said)):
            step()


def test_a_telemetry_source_that_could_not_be_read_is_said_on_its_point(tmp_path: Path) -> None:
    """A source that failed (Prometheus unreachable or without data, a Ceph socket) was stored with the repetition
    and read by nothing: the verdict said "nothing saturated" as if that source had been seen. It is read back and
    the point is warned of it."""
    from storbench.stats.observations import observations
    from storbench.stats.summary import summarize_points
    from storbench.telemetry.series import RepetitionTelemetry, TelemetrySeries

    store = open_store(tmp_path / "r.db")
    run_id = _run(store)
    busy = TelemetrySeries("cpu", "host", "busy_pct", (0.0,), (3.0,), (20.0,))
    for index in range(3):
        problems = ("Prometheus: node_disk_util gave no series over the measured window",) if index else ()
        store.save_repetition(run_id, _case(), index, _outcome(), (("kind", "path"),),
                              RepetitionTelemetry(0.0, 3.0, (busy,), problems))
    reps = store.repetitions([run_id])
    assert [len(r.telemetry.problems) for r in reps if r.telemetry is not None] == [0, 1, 1]
    (point,) = summarize_points(observations(reps))
    (said,) = [w.message for w in point.warnings if w.code == "telemetry_unread"]
    assert said.startswith("telemetry incomplete in 2 of 3 repetitions (Prometheus: node_disk_util gave no series")
    store.close()
