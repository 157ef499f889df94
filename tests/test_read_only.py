"""Read-only commands do not write (issue 16, item 3): another program's SQLite file is refused untouched, a
storbench database is read without a byte changing, and a failed `run --resume` leaves no file behind."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from helpers import run_cli, write_plan

PLAN = """
name: ro
targets:
  t: {kind: path, path: ./data, size: 1MiB}
workload: {rw: randread, runtime: 1s, direct: false}
repeat: 1
telemetry: {enabled: false}
"""


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("command", [["show"], ["export", "--format", "json"], ["saturation"],
                                     ["compare", "--baseline", "1", "--candidate", "1"], ["report", "-o", "r.html"]])
def test_another_programs_database_is_refused_and_left_untouched(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                command: list[str]) -> None:
    other = tmp_path / "app.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO customers (name) VALUES ('ada')")
    before = _digest(other)
    code, _, err = run_cli(capsys, *command, "--db", str(other))
    assert code == 2 and "is not a storbench results database" in err, err
    assert _digest(other) == before and sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite"]


@pytest.mark.fio
def test_reading_a_storbench_database_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, PLAN)), "--db", str(db))
    assert code == 0, out + err
    before = _digest(db)
    files = sorted(p.name for p in tmp_path.iterdir())
    for command in (["show"], ["export", "--format", "csv"], ["saturation"]):
        code, out, err = run_cli(capsys, *command, "--db", str(db))
        assert code in (0, 2), out + err
    assert _digest(db) == before and sorted(p.name for p in tmp_path.iterdir()) == files


def test_a_failed_resume_leaves_no_database_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "new.db"
    code, _, err = run_cli(capsys, "run", str(write_plan(tmp_path, PLAN)), "--db", str(db), "--resume")
    assert code == 2 and "nothing to resume: no results database" in err and "without --resume" in err, err
    assert not db.exists()
