"""Sizes in `workload.fio` mean to fio what they mean to storbench: a unit letter, however written (``8k``, ``8KB``,
``8KiB``), is a power of 1024. fio's default ``kb_base=1024`` reads IEC units (``KiB``, ``MiB``) as powers of 1000,
so storbench writes them with their bare letter."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli, stored_repetitions, write_plan
from storbench.config import load_plan_text
from storbench.fio.jobfile import JobBinding, render_job
from storbench.plan import expand

PLAN = """
name: units
targets:
  d: {{kind: path, path: {path}, size: 4MiB}}
workload:
  rw: write
  bs: 4k
  runtime: 1s
  direct: false
  fio: {{bssplit: "{bssplit}", rate: "{rate}", offset_increment: 64MiB}}
repeat: 1
"""


def test_iec_units_of_pass_through_options_are_written_as_fio_reads_them_in_powers_of_1024() -> None:
    text = PLAN.format(path="/tmp/never", bssplit="8KiB/60:64KiB/40,4k/100", rate="100MiB,1GiB")
    [case] = expand(load_plan_text(text, "p.yaml"))
    job = render_job(case, JobBinding(options=(("directory", "/tmp/never"),)), 0)
    assert "bssplit=8k/60:64k/40,4k/100\n" in job and "rate=100m,1g\n" in job and "offset_increment=64m\n" in job
    assert "KiB" not in job and "MiB" not in job and "GiB" not in job, job


@pytest.mark.fio
def test_a_block_size_in_kib_is_the_block_fio_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`bssplit: 8KiB/100` had made fio write 8,000-byte blocks (and run buffered where direct I/O was asked)."""
    plan = write_plan(tmp_path, PLAN.format(path=tmp_path / "data", bssplit="8KiB/100", rate="1GiB"))
    code, out, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"))
    assert code == 0, out + err
    (rep,) = stored_repetitions(tmp_path / "r.db")
    (write,) = [d for client in rep.clients for d in client.directions]
    assert write.total_ios > 0 and write.io_bytes == 8192 * write.total_ios, (write.io_bytes, write.total_ios)
