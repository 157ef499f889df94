"""Shared helpers for tests that run storbench for real."""

from __future__ import annotations

import importlib.util
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from storbench.cli import main
from storbench.model import ClientMeasurement, RepetitionOutcome, Status, StoredRepetition
from storbench.stats.observations import Observation
from storbench.store import open_store
from storbench.store.migrations import design_of_text


def bench_module(name: str) -> ModuleType:
    """A script of bench/ as a module (the simulations whose figures docs/methodology.md gives, run by the tests
    that check those figures), registered under its name (dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@contextmanager
def inside(directory: Path) -> Iterator[None]:
    """Run a block with ``directory`` as the working directory (plans use relative paths)."""
    previous = os.getcwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(previous)


def write_plan(directory: Path, body: str, name: str = "plan.yaml") -> Path:
    path = directory / name
    path.write_text(body)
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def labelled_runs(plan: Path, db: Path, builds: Sequence[str]) -> None:
    """``plan`` run into ``db`` once per build, each labelled build=BUILD: a nightly series."""
    for build in builds:
        assert main(["run", str(plan), "--db", str(db), "--label", f"build={build}"]) == 0


def storbench_process(*argv: str, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "storbench", *argv], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def stored_repetitions(db: Path) -> list[StoredRepetition]:
    """Every repetition a results database holds, read through the store (opened read-only, closed after)."""
    store = open_store(db, read_only=True)
    try:
        return store.repetitions()
    finally:
        store.close()


def repetition_rows(db: Path) -> list[tuple[str, int, str]]:
    conn = sqlite3.connect(db)
    try:
        return [(r[0], r[1], r[2]) for r in conn.execute(
            "SELECT case_id, rep_index, status FROM repetitions ORDER BY id")]
    finally:
        conn.close()


def fio_processes_using(marker: str) -> list[int]:
    """PIDs of fio processes whose command line mentions ``marker``."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            cmdline = b" ".join(argv).decode(errors="replace")
            state = next((ln for ln in (proc / "status").read_text().splitlines() if ln.startswith("State:")), "")
        except OSError:
            continue
        is_fio = Path(argv[0].decode(errors="replace")).name == "fio"  # not a wrapper naming fio in its arguments
        if is_fio and marker in cmdline and "Z" not in state.split()[1:2]:
            pids.append(int(proc.name))
    return pids


def every_stored_text(db: Path) -> str:
    """Every cell of every table of a results database as text, compressed blobs decompressed (fio's raw output
    is stored compressed: a plain byte search of the file would not see a key inside it)."""
    import contextlib
    import zlib

    parts = []
    with sqlite3.connect(db) as conn:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for cell in row:
                    if isinstance(cell, bytes):
                        with contextlib.suppress(zlib.error):
                            cell = zlib.decompress(cell)
                        parts.append(cell.decode(errors="replace"))
                    else:
                        parts.append(str(cell))
    return "\n".join(parts)


def store_observations(path: Path, seen: Sequence[Observation], plan_text: str,
                       plan_name: str = "replica-adaptive") -> None:
    """Store synthetic observations as one interleaved run of ``plan_text`` (its design read from the text), each
    measured direction as 10 s of its IOPS."""
    store = open_store(path)
    run_id = store.create_run(plan_name=plan_name, plan_text=plan_text, plan_sha256="0", source="run",
                              storbench_version="0", fio_version="fio-3.36", host="h", kernel="k",
                              run_order="interleaved", seed=0, tags=(), started_at_s=0.0,
                              design=design_of_text(plan_text))
    for o in seen:
        assert o.measurement is not None
        ios = round(o.measurement.iops * 10)  # 10 s of it (a direction that moved no I/O is not one)
        measured = replace(o.measurement, total_ios=ios, io_bytes=ios * 4096, runtime_ms=10_000)
        client = ClientMeasurement(client="local", jobs=1, job_errors=(), cpu_usr_pct=1.0, cpu_sys_pct=1.0,
                                   directions=(measured,))
        outcome = RepetitionOutcome(status=Status.OK, started_at_s=o.started_at_s, finished_at_s=o.finished_at_s,
                                    job_text="[global]\n", command=("fio",), fio_version="fio-3.36", raw_output="",
                                    stderr_tail="", clients=(client,))
        store.save_repetition(run_id, o.case, o.rep_index, outcome, ())
    store.finish_run(run_id, seen[-1].finished_at_s)
    store.close()
