"""Small things a new user trips over (issue 16, item 13 and the export help of item 12)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli, write_plan

ONE = """
name: one
targets:
  t: {kind: path, path: ./data, size: 1MiB}
workload: {rw: randread, runtime: 1s}
repeat: 1
"""


def test_plan_counts_in_words_and_takes_db_like_every_command(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, ONE)), "--db", str(db))
    assert code == 0, err
    assert "1 case x 1 repetition = 1 fio run\n" in out and "1 cases" not in out
    assert not db.exists()  # plan reads and writes no database


def test_export_says_its_formats_and_default(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "export", "--help")  # main turns argparse's exit into a status
    assert code == 0 and "json (default), csv or markdown" in " ".join(out.split()), out
