"""Preconditioning: a target written before its first measurement, for real, and stored with the run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from helpers import inside, run_cli, write_plan
from storbench.fio.jobfile import fill_job

FILL_PLAN = """
name: pre-fill
targets:
  scratch: {kind: path, path: ./data, size: 4MiB, precondition: {fill: 2x, bs: 1m}}
workload: {rw: randread, bs: 4k, iodepth: 2, numjobs: [1, 2], runtime: 1s, direct: true}
repeat: 2
telemetry: {enabled: false}
"""

TIMED_PLAN = """
name: pre-timed
targets:
  scratch: {kind: path, path: ./data, size: 4MiB, precondition: {workload: randwrite 4k, for: 2s, iodepth: 4}}
workload: {rw: randread, bs: 4k, iodepth: 2, runtime: 1s, direct: true}
repeat: 2
telemetry: {enabled: false}
"""


def _rows(db: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(db)
    try:
        return list(conn.execute(sql))
    finally:
        conn.close()


@pytest.mark.fio
def test_a_fill_writes_every_file_of_the_target_n_times_before_the_first_measurement(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with inside(tmp_path):
        plan = write_plan(tmp_path, FILL_PLAN)
        code, out, err = run_cli(capsys, "plan", str(plan))
        assert code == 0, err
        assert "precondition scratch: fill 2x (write 1m qd16) before its first measurement" in out, out
        code, out, err = run_cli(capsys, "run", str(plan), "--db", "r.db")
        assert code == 0, out + err
        rows = _rows(tmp_path / "r.db", "SELECT target, status, written_bytes, job_text, started_at_s, "
                     "finished_at_s FROM preconditions")
        assert len(rows) == 1, rows
        target, status, written, job, _started, finished = rows[0]
        assert (target, status) == ("scratch", "ok")
        # the largest numjobs of the target's cases (2): two 4 MiB files, each written twice, sequentially
        assert written == 2 * 2 * 4 * 1024 * 1024, written
        text = str(job)
        assert "loops=2" in text and "time_based=0" in text and "numjobs=2" in text and "rw=write" in text
        first = _rows(tmp_path / "r.db", "SELECT MIN(started_at_s) FROM repetitions")[0][0]
        assert isinstance(finished, float) and isinstance(first, float) and finished <= first
        code, out, err = run_cli(capsys, "show", "--db", "r.db")
        assert code == 0, err
        assert "target scratch preconditioned with fill 2x (write 1m qd16): 16MiB written" in out, out
        code, out, err = run_cli(capsys, "report", "--db", "r.db", "-o", "r.html")
        assert code == 0, err
        html = (tmp_path / "r.html").read_text()
        assert "target scratch preconditioned with fill 2x (write 1m qd16): 16MiB written" in html
        assert "loops=2" in html  # its exact job file, beside the plan text


@pytest.mark.fio
def test_a_timed_precondition_runs_its_workload_for_its_time(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with inside(tmp_path):
        code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, TIMED_PLAN)), "--db", "r.db")
        assert code == 0, out + err
        rows = _rows(tmp_path / "r.db", "SELECT written_bytes, job_text, started_at_s, finished_at_s "
                     "FROM preconditions")
        assert len(rows) == 1, rows
        written, job, started, finished = rows[0]
        text = str(job)
        assert "time_based=1" in text and "runtime=2" in text and "rw=randwrite" in text and "bs=4k" in text
        assert isinstance(started, float) and isinstance(finished, float) and 1.8 <= finished - started <= 30
        assert isinstance(written, int) and written > 0


def test_fill_job_refuses_text_that_is_not_a_time_based_storbench_job() -> None:
    job = "; storbench case x (t)\n[global]\ntime_based=1\nruntime=5\n"
    assert "time_based=0\nloops=3\n" in fill_job(job, 3)
    with pytest.raises(ValueError):
        fill_job("[global]\nruntime=5\n", 2)
    with pytest.raises(ValueError):
        fill_job(job, 0)


def test_a_precondition_job_covers_every_file_once_and_an_image_with_one_job() -> None:
    from storbench.config import load_plan_text
    from storbench.plan import expand
    from storbench.schedule import precondition_case, preconditions

    text = """
name: p
targets:
  files: {kind: path, path: /srv/x, size: 8MiB, precondition: {fill: 2x}}
  image: {kind: rbd, pool: bench, size: 64MiB, precondition: {fill: 1x}}
workload: {rw: randread, numjobs: [1, 4], fio: {nrfiles: [2, 3]}}
"""
    loaded = load_plan_text(text, "p.yaml")
    cases = expand(loaded)
    wanted = preconditions(loaded.config)
    on_files = precondition_case(wanted["files"], [c for c in cases if c.target.name == "files"])
    assert on_files.workload.numjobs == 4 and dict(on_files.workload.fio_options) == {"nrfiles": "3"}
    on_image = precondition_case(wanted["image"], [c for c in cases if c.target.name == "image"])
    assert on_image.workload.numjobs == 1  # four jobs would each write the whole image
