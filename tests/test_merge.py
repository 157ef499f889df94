"""`storbench import OTHER.db` (issue 36): runs from other machines' databases merged into one store, whole, with
where they came from; nothing duplicated when merged again or by another path; an older database upgraded in a copy
(never written); what no storbench wrote refused with nothing imported."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from helpers import labelled_runs, run_cli, write_plan
from storbench.store import open_store
from storbench.store.merge import CHILD_TABLES, OWN_TABLES

FIXTURES = Path(__file__).parent / "fixtures"
pytestmark = pytest.mark.fio  # the databases come from real fio runs

PLAN = """
name: nightly
targets:
  disk: {{kind: path, path: {data}, size: 8MiB}}
workload: {{rw: randrw, bs: 4k, iodepth: 2, runtime: 1s, direct: false}}
repeat: {repeat}
"""


def _tables(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0] for name in names}


def _records(capsys: pytest.CaptureFixture[str], db: Path, runs: str) -> list[dict[str, object]]:
    code, out, err = run_cli(capsys, "export", "--db", str(db), "--run", runs, "--format", "json")
    assert code == 0, err
    return [{k: v for k, v in record.items() if k != "run_id"} for record in json.loads(out)]


@pytest.fixture(scope="module")
def two_machines(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """a.db with one run of the plan, b.db with two (labelled builds), each made by real fio runs; the plan's target
    is the same directory on both "machines" (a target whose path differs is another point's history)."""
    work = tmp_path_factory.mktemp("machines")
    for db, repeat, builds in (("a.db", 2, ("a1",)), ("b.db", 1, ("b1", "b2"))):
        plan = write_plan(work, PLAN.format(data=work / "data", repeat=repeat), f"{db}.yaml")
        labelled_runs(plan, work / db, builds)
    return work / "a.db", work / "b.db"


def test_every_table_is_copied_or_handled_apart(tmp_path: Path) -> None:
    open_store(tmp_path / "new.db").close()
    assert set(_tables(tmp_path / "new.db")) == {table for table, _, _ in CHILD_TABLES} | set(OWN_TABLES)


def test_merged_runs_arrive_whole_and_merging_again_adds_nothing(
        two_machines: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = (shutil.copy(path, tmp_path / path.name) for path in two_machines)
    a, b = Path(a), Path(b)
    b_sha = hashlib.sha256(b.read_bytes()).hexdigest()
    before_a, before_b = _tables(a), _tables(b)
    theirs = _records(capsys, b, "all")
    code, out, err = run_cli(capsys, "import", str(b), "--db", str(a))
    assert code == 0, err
    assert "b.db: 2 runs merged into" in out and "(run 1 as 2, 2 as 3;" in out, out
    after = _tables(a)
    for table, count in before_b.items():  # every row of b, once more in a (the schema's record and the cases aside)
        if table not in ("schema_migrations", "cases"):
            assert after[table] == before_a[table] + count, table
    assert after["telemetry_samples"] > before_a["telemetry_samples"] > 0  # telemetry came along
    assert _records(capsys, a, "2,3") == theirs  # every exported field, as b had it
    assert hashlib.sha256(b.read_bytes()).hexdigest() == b_sha  # b was only read
    store = open_store(a, read_only=True)
    runs = {run.run_id: run for run in store.runs()}
    store.close()
    assert runs[1].merged_from is None
    assert runs[2].merged_from is not None and (runs[2].merged_from.database, runs[2].merged_from.run_id) == ("b.db", 1)
    assert dict(runs[3].labels) == {"build": "b2"} and runs[3].host == runs[1].host
    # history sees the three runs of the one point, with their builds
    code, out, err = run_cli(capsys, "history", "--db", str(a), "--format", "json")
    assert code == 0, err
    records = json.loads(out)
    for point in {r["point"] for r in records}:  # read and write: each a history of the three runs
        assert [r["labels"]["build"] for r in records if r["point"] == point] == ["a1", "b1", "b2"], out
    assert len(records) == 6, out
    report = tmp_path / "r.html"
    code, _, err = run_cli(capsys, "report", "--db", str(a), "--run", "all", "-o", str(report))
    html = report.read_text()
    assert code == 0 and "<th>merged from</th><td>run 2 of b.db, " in html and "build=b2" in html, err

    code, out, err = run_cli(capsys, "import", str(b), "--db", str(a))  # again: nothing new
    assert code == 0 and "b.db: 0 runs merged" in out and "2 already there (run 1 is 2, 2 is 3)" in out, out
    assert _tables(a) == after
    # by another path: a (now holding b's runs) into c, then b into c: b's runs are there already, as they came
    c = tmp_path / "c.db"
    assert run_cli(capsys, "import", str(a), "--db", str(c))[0] == 0
    code, out, _ = run_cli(capsys, "import", str(b), "--db", str(c))
    assert "0 runs merged" in out and "2 already there" in out, out
    assert _tables(c)["repetitions"] == after["repetitions"]
    store = open_store(c, read_only=True)
    origins = [run.merged_from for run in store.runs()]
    store.close()
    assert [(o.database, o.run_id) for o in origins if o is not None] == [("a.db", 1), ("b.db", 1), ("b.db", 2)]


def _as_other_nights(db: Path, copy: Path, host: str | None, shift_s: float) -> Path:
    """A copy of ``db`` whose runs are other nights' (started ``shift_s`` later), on ``host`` when given."""
    shutil.copy(db, copy)
    with sqlite3.connect(copy) as conn:
        conn.execute("UPDATE runs SET started_at_s = started_at_s + ?", (shift_s,))
        if host is not None:
            conn.execute("UPDATE runs SET host = ?", (host,))
    return copy


def test_each_machines_runs_are_a_history_of_their_own_unless_pooled(
        two_machines: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Runs from two machines merged into one store: while a machine has fewer than 3 runs of a point (CI runners
    named anew each night), one history, which says so; once each has 3, each machine's runs are a history of
    their own (a machine is another instance), named by its host; `--pool-hosts` makes one history again."""
    a = Path(shutil.copy(two_machines[0], tmp_path / "a.db"))
    here = open_store(a, read_only=True).runs()[0].host
    b = _as_other_nights(two_machines[1], tmp_path / "b.db", "lab-b", 0.0)
    assert run_cli(capsys, "import", str(b), "--db", str(a))[0] == 0
    code, out, err = run_cli(capsys, "history", "--db", str(a))
    assert code == 0 and " on lab-b" not in out and "runs of 2 machines in one history" in out, out + err
    for n, (host, source) in enumerate(((here, two_machines[0]), (here, two_machines[0]), ("lab-b", b)), start=1):
        night = _as_other_nights(source, tmp_path / f"night{n}.db", host, 1000.0 * n)
        assert run_cli(capsys, "import", str(night), "--db", str(a))[0] == 0
    code, out, err = run_cli(capsys, "history", "--db", str(a), "--format", "json")
    assert code == 0, err
    records = json.loads(out)
    assert {r["point"] for r in records} == {"disk randrw 50% 4k qd=2 jobs=1 read",
                                               "disk randrw 50% 4k qd=2 jobs=1 write"}
    for point in {r["point"] for r in records}:
        for host, builds in ((here, ["a1", "a1", "a1"]), ("lab-b", ["b1", "b2", "b1", "b2"])):
            mine = [r for r in records if r["point"] == point and r["series_host"] == host]
            assert [r["labels"]["build"] for r in mine] == builds and {r["host"] for r in mine} == {host}, mine
    code, out, err = run_cli(capsys, "history", "--db", str(a))
    assert code == 0 and f" read on {here} — IOPS" in out and " read on lab-b — IOPS" in out, out
    assert "machines in one history" not in out
    code, out, err = run_cli(capsys, "history", "--db", str(a), "--format", "json", "--pool-hosts")
    records = json.loads(out)
    assert code == 0 and {r["series_host"] for r in records} == {None} and len(records) == 14, out


def test_an_older_database_is_upgraded_in_a_copy_and_merged(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "schema7.db"
    old.write_bytes((FIXTURES / "schema7.db").read_bytes())
    sha = hashlib.sha256(old.read_bytes()).hexdigest()
    code, out, err = run_cli(capsys, "import", str(old), "--db", str(tmp_path / "new.db"))
    assert code == 0 and "schema7.db: " in out and " runs merged" in out, err
    assert hashlib.sha256(old.read_bytes()).hexdigest() == sha  # never written, not even upgraded
    with sqlite3.connect(FIXTURES / "schema7.db") as conn:
        runs, repetitions = (conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("runs", "repetitions"))
    counts = _tables(tmp_path / "new.db")
    assert (counts["runs"], counts["repetitions"]) == (runs, repetitions)
    code, out, err = run_cli(capsys, "show", "--db", str(tmp_path / "new.db"), "--run", "all")
    assert code == 0, err


def test_what_no_storbench_wrote_is_refused_and_nothing_imported(
        two_machines: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = Path(shutil.copy(two_machines[0], tmp_path / "a.db"))
    before = _tables(a)
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    code, _, err = run_cli(capsys, "import", str(other), "--db", str(a))
    assert code == 2 and "other.db is not a storbench results database" in err and "hint:" in err, err
    assert "--db" not in err.split("hint:")[1] and "import takes results databases" in err, err  # the argument's
    crafted = Path(shutil.copy(two_machines[1], tmp_path / "crafted.db"))
    with sqlite3.connect(crafted) as conn:  # a histogram no storbench wrote
        conn.execute("UPDATE measurements SET lat_bins_z = x'00010203'")
    code, _, err = run_cli(capsys, "import", str(crafted), "--db", str(a))
    assert code == 2 and "crafted.db" in err and "nothing imported" in err, err
    assert _tables(a) == before
    # into a new --db: no empty database is left behind
    code, _, err = run_cli(capsys, "import", str(other), "--db", str(tmp_path / "new.db"))
    assert code == 2 and not (tmp_path / "new.db").exists() and not list(tmp_path.glob("new.db*")), err
    newer = Path(shutil.copy(two_machines[1], tmp_path / "newer.db"))
    with sqlite3.connect(newer) as conn:  # a newer storbench's: upgrade, not "import takes ..."
        conn.execute("INSERT INTO schema_migrations (version) SELECT MAX(version) + 1 FROM schema_migrations")
    code, _, err = run_cli(capsys, "import", str(newer), "--db", str(a))
    assert code == 2 and "newer than this storbench" in err and "hint: upgrade storbench" in err, err
    code, _, err = run_cli(capsys, "import", str(a), "--db", str(a))
    assert code == 2 and "is the database being imported into" in err, err
    plain = tmp_path / "fio.json"
    plain.write_text("{}")
    code, _, err = run_cli(capsys, "import", str(crafted), str(plain), "--db", str(a))
    assert code == 2 and "not both" in err, err
    assert _tables(a) == before


def test_one_case_stored_by_two_storbench_versions_merges_and_another_is_refused(
        two_machines: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A case id names one case, but two storbench versions store it as other JSON text (keys in another order, an
    optional field added later as null): read back, it is the same case, and the run merges. A case whose content
    differs under the same id is still refused, with nothing imported."""
    a = Path(shutil.copy(two_machines[0], tmp_path / "a.db"))
    later = Path(shutil.copy(two_machines[0], tmp_path / "later.db"))
    with sqlite3.connect(later) as conn:  # the same machine's run again, its cases written by another version
        conn.execute("UPDATE runs SET started_at_s = started_at_s + 3600")
        for case_id, target, workload in conn.execute("SELECT id, target_json, workload_json FROM cases").fetchall():
            conn.execute("UPDATE cases SET target_json = ?, workload_json = ? WHERE id = ?",
                         (json.dumps(dict(reversed(json.loads(target).items()))),
                          json.dumps(dict(reversed(json.loads(workload).items()))), case_id))
    code, out, err = run_cli(capsys, "import", str(later), "--db", str(a))
    assert code == 0 and "1 run merged" in out, out + err
    changed = Path(shutil.copy(two_machines[0], tmp_path / "changed.db"))
    with sqlite3.connect(changed) as conn:  # same id, another block size: not the same case
        conn.execute("UPDATE runs SET started_at_s = started_at_s + 7200")
        conn.execute("UPDATE cases SET workload_json = json_set(workload_json, '$.bs_bytes', 8192)")
    before = _tables(a)
    code, _, err = run_cli(capsys, "import", str(changed), "--db", str(a))
    assert code == 2 and "differs between the two databases" in err, err
    assert _tables(a) == before


def test_rows_that_point_nowhere_or_that_a_newer_storbench_wrote_are_one_line(
        two_machines: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = Path(shutil.copy(two_machines[0], tmp_path / "a.db"))
    before = _tables(a)
    orphans = Path(shutil.copy(two_machines[1], tmp_path / "orphans.db"))
    with sqlite3.connect(orphans) as conn:  # repetitions whose case is gone (foreign keys off, as a hand edit)
        conn.execute("DELETE FROM cases")
        conn.execute("UPDATE repetitions SET case_id = 'ffffffffffff'")  # a case a.db does not have either
    code, _, err = run_cli(capsys, "import", str(orphans), "--db", str(a))
    assert code == 2 and "orphans.db: run 1's rows are not storbench's" in err and "nothing imported" in err, err
    assert "Traceback" not in err and _tables(a) == before
    for column, change, said in (
            ("target_json", lambda raw: {**raw, "kind": "zzz"}, "a stored target of kind 'zzz', which this "
             "storbench does not know"),
            ("workload_json", lambda raw: {**raw, "queue_pairs": 8}, "a stored workload has fields this storbench "
             "does not know (queue_pairs)")):
        newer = Path(shutil.copy(two_machines[0], tmp_path / f"newer-{column}.db"))
        with sqlite3.connect(newer) as conn:
            for case_id, text in conn.execute(f"SELECT id, {column} FROM cases").fetchall():
                conn.execute(f"UPDATE cases SET {column} = ? WHERE id = ?", (json.dumps(change(json.loads(text))),
                                                                             case_id))
        code, _, err = run_cli(capsys, "show", "--db", str(newer))
        assert code == 2 and said in err and "upgrade storbench" in err, err


def test_telemetry_samples_that_are_not_numbers_are_left_out_not_the_repetition(tmp_path: Path) -> None:
    from storbench.store.rows import insert_telemetry
    from storbench.telemetry.series import RepetitionTelemetry, TelemetrySeries

    store = open_store(tmp_path / "r.db")
    try:
        conn = store.conn
        conn.execute("PRAGMA foreign_keys=OFF")
        series = TelemetrySeries(source="kubelet", entity="node-1", metric="cpu_cores", starts_s=(0.0, 1.0, 2.0),
                                 times_s=(1.0, 2.0, 3.0), values=(0.5, float("nan"), 0.7))
        insert_telemetry(conn, 1, RepetitionTelemetry(window_start_s=0.0, window_end_s=3.0, series=(series,),
                                                      problems=()))
        assert [row[0] for row in conn.execute("SELECT value FROM telemetry_samples ORDER BY t_s")] == [0.5, 0.7]
    finally:
        store.close()


def test_the_latest_run_is_the_one_started_last_not_the_one_merged_last(
        two_machines: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """a.db's run started before b.db's two: merged into b.db it gets the highest id, yet `show` without --run
    still shows b.db's own newest run (a colleague's older run is not "latest" because it arrived last)."""
    a, b = (Path(shutil.copy(path, tmp_path / path.name)) for path in two_machines)
    code, _, err = run_cli(capsys, "import", str(a), "--db", str(b))
    assert code == 0, err
    with sqlite3.connect(b) as conn:
        newest = conn.execute("SELECT id FROM runs ORDER BY started_at_s DESC LIMIT 1").fetchone()[0]
        merged = conn.execute("SELECT MAX(id) FROM runs").fetchone()[0]
    assert newest != merged
    code, out, err = run_cli(capsys, "show", "--db", str(b))
    assert code == 0 and f"run {newest} (latest" in " ".join(out.split()), out + err
