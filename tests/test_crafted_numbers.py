"""Crafted numbers and crafted databases (issue 28, findings 8 and 10): counts are added exactly and a sum past what
the store holds is refused in one line, a failed import leaves no run, a database with a view where a table should
be is refused without hanging, and reading never upgrades an older database."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import time
import zlib
from pathlib import Path

import pytest

from helpers import run_cli
from storbench.errors import UserError
from storbench.fio.merge import merge_directions
from storbench.fio.parse import parse_fio_json
from storbench.model import (
    MAX_COUNT,
    ClientMeasurement,
    Direction,
    DirectionMeasurement,
    LatencyHistogram,
    LatencySummary,
    RepetitionOutcome,
    Status,
)
from storbench.store import open_store
from storbench.store.codec import decode_histogram

FIXTURES = Path(__file__).parent / "fixtures"
GOOD = FIXTURES / "randrw-numjobs2.jsonplus.json"  # two numjobs clones of one job


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _crafted(tmp_path: Path, name: str, change) -> Path:  # type: ignore[no-untyped-def]
    document = json.loads(GOOD.read_text())
    for job in document["jobs"]:
        change(job)
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def _runs(db: Path) -> list[int]:
    conn = sqlite3.connect(db)
    try:
        return [row[0] for row in conn.execute("SELECT id FROM runs ORDER BY id")]
    finally:
        conn.close()


# ---- exact counts ---------------------------------------------------------------------------------------------


def test_bins_are_added_as_integers_and_a_sum_past_the_store_is_refused() -> None:
    exact = LatencyHistogram.from_counts([(1000, 2**53), (1000, 1), (5000, 2**62), (5000, 2**62 - 2**53 - 2)])
    assert exact.bins == ((1000, 2**53 + 1), (5000, 2**63 - 2**53 - 2))  # through floats: 2**53 and a wrapped bin
    assert exact.total == MAX_COUNT  # the most a count can be, accepted
    half = LatencyHistogram.from_counts([(1000, 2**62)])
    with pytest.raises(ValueError, match=f"add up to {2**63}, past {MAX_COUNT}"):
        half.merged(half)  # two clones at 2**62: 2**63, one past the most a count can be
    with pytest.raises(ValueError, match="add up to"):
        LatencyHistogram.from_counts([(1000, 2**62), (2000, 2**62)])  # no bin past it, but the total is
    with pytest.raises(ValueError, match="a count of -1"):
        LatencyHistogram.from_counts([(1000, 5), (2000, -1)])


def _direction(ios: int) -> DirectionMeasurement:
    latency = LatencySummary(samples=ios, min_ns=1, max_ns=1, mean_ns=1.0, stddev_ns=0.0)
    return DirectionMeasurement(direction=Direction.READ, total_ios=ios, io_bytes=ios, runtime_ms=1, iops=1.0,
                                bw_bytes_per_s=1.0, clat=latency, lat=latency)


def test_merging_io_counts_refuses_a_sum_the_store_cannot_hold() -> None:
    assert merge_directions([_direction(2**62), _direction(2**62 - 1)]).total_ios == MAX_COUNT
    with pytest.raises(ValueError, match="read I/Os add up to"):
        merge_directions([_direction(2**62), _direction(2**62)])
    with pytest.raises(ValueError, match="read I/Os: a count of -1"):  # from a crafted database: not a count
        merge_directions([_direction(5), _direction(-1)])


def test_fio_counts_past_two_to_the_53_stay_exact() -> None:
    document = json.loads(GOOD.read_text())
    job = document["jobs"][0]
    job["read"]["total_ios"] = 2**53 + 1
    job["read"]["clat_ns"]["bins"] = {str(2**53 + 1): 2**53 + 1}  # a bin key (ns) and its count
    (read,) = [d for d in parse_fio_json(json.dumps(document)).jobs[0].directions if d.direction == Direction.READ]
    assert read.total_ios == 2**53 + 1
    assert read.clat.histogram is not None and read.clat.histogram.bins == ((2**53 + 1, 2**53 + 1),)


def test_stored_bins_that_inflate_past_the_cap_are_refused() -> None:
    with pytest.raises(ValueError, match="inflate past"):
        decode_histogram(zlib.compress(b"[" + b" " * (17 << 20) + b"]"))
    assert decode_histogram(zlib.compress(b"[[1000,3]]")) == LatencyHistogram.from_counts([(1000, 3)])


def test_a_stored_fio_output_that_inflates_past_the_cap_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from storbench.store import codec

    monkeypatch.setattr(codec, "MAX_TEXT_BYTES", 1 << 20)
    with pytest.raises(ValueError, match="inflates past"):
        codec.decompress_text(zlib.compress(b" " * (2 << 20)))
    with pytest.raises(ValueError, match="unreadable"):
        codec.decompress_text(b"not zlib")
    assert codec.decompress_text(codec.compress_text("fio output")) == "fio output"


@pytest.mark.parametrize("name, change, refused", [
    ("bins.json", lambda job: job["read"]["lat_ns"]["bins"].update({"1000": 2**62}), "read.lat_ns.bins of all jobs"),
    ("ios.json", lambda job: job["read"].update(total_ios=2**62 + 2**61), "read.total_ios of all jobs"),
])
def test_a_crafted_fio_file_is_refused_in_one_line_and_leaves_no_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, change, refused: str) -> None:  # type: ignore[no-untyped-def]
    crafted = _crafted(tmp_path, name, change)
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "import", str(crafted), "--db", str(db))
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, out + err
    assert str(crafted) in err and refused in err and f"past {MAX_COUNT}" in err and "nothing imported" in err, err
    assert not db.exists()
    code, out, err = run_cli(capsys, "import", str(GOOD), "--db", str(db))  # an existing database keeps its runs
    assert code == 0 and _runs(db) == [1], out + err
    code, out, err = run_cli(capsys, "import", str(crafted), "--db", str(db))
    assert code == 2 and len(err.strip().splitlines()) == 1 and _runs(db) == [1], out + err


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs (root)")
def test_an_import_that_fails_while_saving_leaves_no_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The disk fills while an import is saved (each repetition keeps the file's text, made large here): the run and
    the repetitions saved before are rolled back with it; nothing of the import is left."""
    document = json.loads(GOOD.read_text())
    document["jobs"][1]["jobname"] = "second"  # two repetitions, each storing the whole file
    document["padding"] = os.urandom(120_000).hex()  # fio ignores it; zlib cannot shrink it much
    big = tmp_path / "big.json"
    big.write_text(json.dumps(document))
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=360k,mode=0700", "tmpfs", str(small)], check=True)
    try:
        db = small / "r.db"
        code, out, err = run_cli(capsys, "import", str(GOOD), "--db", str(db))
        assert code == 0 and _runs(db) == [1], out + err
        code, out, err = run_cli(capsys, "import", str(big), "--db", str(db))
        assert code == 2 and "full" in err and len(err.strip().splitlines()) == 1, out + err
        assert _runs(db) == [1]
        conn = sqlite3.connect(db)
        assert conn.execute("SELECT COUNT(*) FROM repetitions WHERE run_id != 1").fetchone()[0] == 0
        conn.close()
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


# ---- crafted databases ----------------------------------------------------------------------------------------


def _imported_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "import", str(GOOD), "--db", str(db))
    assert code == 0, out + err
    return db


ENDLESS = ("CREATE VIEW repetitions AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n)"
           " SELECT i AS id, 1 AS run_id, '' AS case_id, 0 AS rep_index, 'ok' AS status, 0.0 AS started_at_s,"
           " 0.0 AS finished_at_s, '' AS fio_version, '' AS job_text, '[]' AS command_json, '{}' AS target_json,"
           " NULL AS fio_output_z, '' AS stderr_tail, '' AS error, NULL AS start_skew_s FROM n")


@pytest.mark.parametrize("command", [["show"], ["report", "-o", "r.html"], ["export"]])
def test_a_view_over_an_endless_query_in_place_of_a_table_is_refused_at_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    db = _imported_db(tmp_path, capsys)
    conn = sqlite3.connect(db)
    conn.executescript(f"PRAGMA foreign_keys=OFF; DROP TABLE repetitions; {ENDLESS};")
    conn.close()
    before = _digest(db)
    started = time.monotonic()
    code, out, err = run_cli(capsys, *command, "--db", str(db), "-o", str(tmp_path / "out"))
    assert time.monotonic() - started < 5
    assert code == 2 and len(err.strip().splitlines()) == 1, out + err
    assert f"{db} is not a storbench results database: 'repetitions' is a view" in err, err
    assert _digest(db) == before
    code, out, err = run_cli(capsys, "import", str(GOOD), "--db", str(db), "--again")  # nor written to
    assert code == 2 and "'repetitions' is a view" in err and _digest(db) == before, out + err


def test_a_query_past_the_time_limit_is_stopped_with_one_line_naming_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from storbench.store import db as store_db

    db = _imported_db(tmp_path, capsys)
    monkeypatch.setattr(store_db, "READ_LIMIT_S", 0.5)
    store = open_store(db, read_only=True)
    endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"
    try:
        for read in (lambda: store.conn.execute(f"SELECT COUNT(*) FROM ({endless})"),  # stops in execute
                     lambda: store.conn.execute(endless).fetchall(),  # the first row comes at once: in the fetch
                     lambda: list(store.conn.execute(endless))):  # or while iterating
            started = time.monotonic()
            with pytest.raises(UserError, match=f"{db}: a query ran past 0.5 s and was stopped"):
                read()
            assert time.monotonic() - started < 3
        assert len(store.runs()) == 1  # a query within the limit runs as before
    finally:
        store.close()


def test_the_schema_of_a_database_is_not_trusted_to_call_functions(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    db = _imported_db(tmp_path, capsys)
    for store in (open_store(db), open_store(db, read_only=True)):
        assert store.conn.execute("PRAGMA trusted_schema").fetchone()[0] == 0
        store.close()


def test_stored_counts_that_cannot_be_merged_are_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two clients of one repetition, each holding a bin of 2**62 (each fits, their sum does not)."""
    db = _imported_db(tmp_path, capsys)
    store = open_store(db)
    (rep,) = store.repetitions([1])
    client = rep.clients[0]
    half = LatencyHistogram.from_counts([(1000, 2**62)])
    read = client.direction(Direction.READ)
    assert read is not None
    crafted = ClientMeasurement(client="c", jobs=1, job_errors=(), cpu_usr_pct=0.0, cpu_sys_pct=0.0, directions=(
        DirectionMeasurement(direction=Direction.READ, total_ios=1, io_bytes=4096, runtime_ms=1000, iops=1.0,
                             bw_bytes_per_s=4096.0, clat=read.clat, lat=LatencySummary(
                                 samples=1, min_ns=1000, max_ns=1000, mean_ns=1000.0, stddev_ns=0.0, histogram=half)),))
    outcome = RepetitionOutcome(status=Status.OK, started_at_s=1.0, finished_at_s=2.0, job_text="", command=(),
                                fio_version="fio-3.33", raw_output="", stderr_tail="", clients=(crafted, crafted))
    store.save_repetition(1, rep.case, 1, outcome, ())
    store.close()
    code, out, err = run_cli(capsys, "show", "--db", str(db))
    assert code == 2 and len(err.strip().splitlines()) == 1, out + err
    assert f"{db}: read.lat_ns.bins of all jobs add up to" in err and "no storbench wrote that" in err, err


def test_reading_an_older_database_refuses_and_changes_no_byte(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A database as schema 7 left it (tests/fixtures/schema7.db, written by that storbench): show does not migrate
    it; an import does."""
    from storbench.store.migrations import SCHEMA_VERSION

    db = tmp_path / "r.db"
    db.write_bytes((FIXTURES / "schema7.db").read_bytes())
    before, files = _digest(db), sorted(p.name for p in tmp_path.iterdir())
    for command in (["show"], ["export"], ["report", "-o", str(tmp_path / "r.html")]):
        code, out, err = run_cli(capsys, *command, "--db", str(db))
        assert code == 2 and len(err.strip().splitlines()) == 1, out + err
        assert f"written by an older storbench (schema version 7 of {SCHEMA_VERSION})" in err, err
        assert "upgrades it" in err and _digest(db) == before and sorted(p.name for p in tmp_path.iterdir()) == files
    code, out, err = run_cli(capsys, "import", str(GOOD), "--db", str(db))  # the write path upgrades
    assert code == 0 and "as run 7" in out, out + err
    code, out, err = run_cli(capsys, "show", "--db", str(db), "--run", "all")
    assert code == 0 and "run 1 is incomplete: 12 of 36 repetitions done" in out, out + err  # the old runs read
    code, out, err = run_cli(capsys, "show", "--db", str(db), "--run", "7")
    assert code == 0 and "imported" in out, out + err  # and the new one
