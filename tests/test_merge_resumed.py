"""`storbench import OTHER.db` of a database whose run went on after it was merged (resumed, a failed repetition
run again, points added): merged again, the run here is brought up to date, not skipped as "already there" with
its later repetitions lost; merged again in the same state, or from an older copy, nothing changes."""

from __future__ import annotations

import platform
import shutil
import sqlite3
from pathlib import Path

import pytest

from helpers import run_cli
from storbench import checks, orchestrate
from storbench.checks import check_everything
from storbench.config import load_plan_text
from storbench.execute.fake import FakeCall, FakeExecutor, Raise, Replay, Step
from storbench.fio.options import FioCapabilities
from storbench.model import Status
from storbench.plan import expand
from storbench.store import open_store
from storbench.store.merge import merge_database

FIXTURES = Path(__file__).parent / "fixtures"
OUTPUT = (FIXTURES / "randrw-numjobs2.jsonplus.json").read_text()
CAPS = FioCapabilities(binary="/usr/bin/fio", version="fio-3.33", options=frozenset(), engines=frozenset())
PLAN = """
name: grows
targets:
  t: {{kind: path, path: {data}, size: 4MiB}}
workload: {{rw: randrw, rwmixread: 70, bs: {bs}, iodepth: 1, runtime: 1s, direct: false}}
repeat: 3
telemetry: {{enabled: false}}
"""


class Quiet:
    def run_started(self, *args: object) -> None: ...
    def repetition_started(self, *args: object) -> None: ...
    def repetition_finished(self, *args: object) -> None: ...
    def event(self, *args: object) -> None: ...


def _session(db: Path, data: Path, bs: str, script: FakeExecutor, *, resume: bool, repeat: int = 3) -> None:
    loaded = load_plan_text(PLAN.format(data=data, bs=bs).replace("repeat: 3", f"repeat: {repeat}"), "grows.yaml")
    cases = expand(loaded)
    store = open_store(db)
    try:
        orchestrate.run_plan(loaded, cases, check_everything(loaded, cases, CAPS.binary, create=True), store,
                             script, Quiet(), resume=resume)
    except KeyboardInterrupt:
        pass
    finally:
        store.close()


def _state(db: Path) -> list[tuple[str, int, str, float]]:
    with sqlite3.connect(db) as conn:
        return sorted(conn.execute("SELECT case_id, rep_index, status, started_at_s FROM repetitions"))


def _counts(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        return {table: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                for table in ("runs", "plan_versions", "repetitions", "clients", "measurements")}


def test_a_run_merged_while_it_went_on_is_brought_up_to_date_when_merged_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(checks, "fio_capabilities", lambda binary, engines=(): CAPS)
    source, central, data = tmp_path / "source.db", tmp_path / "central.db", tmp_path / "data"
    calls: list[FakeCall] = []

    def first(call: FakeCall) -> Step:  # the second repetition fails, the fifth is cut short (Ctrl-C)
        calls.append(call)
        if len(calls) == 5:
            return Raise(KeyboardInterrupt())
        return Replay("", returncode=1, stderr="fio: error\n") if len(calls) == 2 else Replay(OUTPUT)

    _session(source, data, "[4k, 8k]", FakeExecutor(first), resume=False)
    assert [status for *_, status, _ in _state(source)].count("failed") == 1 and len(_state(source)) == 4
    with sqlite3.connect(source) as conn:  # its session's S3 prefix, as a run with an s3 target records it
        conn.execute("INSERT INTO run_object_prefixes VALUES (1, 'http://s3:9000', 'b', 'storbench.aaaaaaaaaaaa.')")
    store = open_store(central)
    try:
        assert [m.already_here for m in merge_database(store, str(source), lambda: 0.0)] == [False]
    finally:
        store.close()
    older = tmp_path / "older.db"
    shutil.copy(source, older)
    # resumed with a point more (the plan's hash changes, a second plan version): the failed one is run again
    _session(source, data, "[4k, 8k, 16k]", FakeExecutor(lambda call: Replay(OUTPUT)), resume=True)
    with sqlite3.connect(source) as conn:  # the resumed session's prefix beside the first's
        conn.execute("INSERT INTO run_object_prefixes VALUES (1, 'http://s3:9000', 'b', 'storbench.bbbbbbbbbbbb.')")
    theirs = _state(source)
    assert len(theirs) == 9 and all(status == Status.OK.value for _, _, status, _ in theirs)

    code, out, err = run_cli(capsys, "import", str(source), "--db", str(central))
    assert code == 0, err
    assert "0 runs merged" in out and "run 1, there as 1, brought up to date (6 repetitions added)" in out, out
    assert _state(central) == theirs  # every repetition, the failed one's later attempt in its place
    with sqlite3.connect(central) as conn:  # both sessions' prefixes, the first once (it had broken the merge)
        assert sorted(p for (p,) in conn.execute("SELECT object_prefix FROM run_object_prefixes")) == [
            "storbench.aaaaaaaaaaaa.", "storbench.bbbbbbbbbbbb."]
    counts = _counts(central)
    assert counts == _counts(source)  # one run, both plan versions, each repetition's clients and measurements
    store = open_store(central, read_only=True)
    try:
        (run,) = store.runs()
        assert run.finished_at_s is not None and "16k" in run.plan_text
        assert len(store.repetitions()) == 9
    finally:
        store.close()

    for again in (source, older):  # the same state, then an older copy: nothing changes
        code, out, err = run_cli(capsys, "import", str(again), "--db", str(central))
        assert code == 0 and "1 already there (run 1 is 1), skipped" in out, out + err
        assert _state(central) == theirs and _counts(central) == counts
    finished = [run.finished_at_s for run in _runs(central)]
    assert finished[0] is not None  # the older copy's unfinished run did not take the end away


def _runs(db: Path):  # type: ignore[no-untyped-def]
    store = open_store(db, read_only=True)
    try:
        return store.runs()
    finally:
        store.close()


def test_a_newer_copy_whose_resume_dropped_rounds_drops_them_here_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A resume may drop rounds (a steady-state point on a lab starts over, and settles on fewer): merged again,
    the run here is the newer copy's, without them, whichever copy came first; the older copy merged after it brings
    none of them back, nor takes its end away."""
    monkeypatch.setattr(checks, "fio_capabilities", lambda binary, engines=(): CAPS)
    source, data = tmp_path / "source.db", tmp_path / "data"
    _session(source, data, "[4k, 8k]", FakeExecutor(lambda call: Replay(OUTPUT)), resume=False)
    older = tmp_path / "older.db"
    shutil.copy(source, older)
    with sqlite3.connect(source) as conn:  # as restart_unsettled_points drops a point's rounds
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("DELETE FROM repetitions WHERE rep_index = 2")
    # resumed with fewer rounds wanted: nothing runs again, a plan version is added
    _session(source, data, "[4k, 8k]", FakeExecutor([]), resume=True, repeat=2)
    assert len(_state(source)) == 4 and len(_state(older)) == 6
    for order in ((older, source), (source, older)):
        db = tmp_path / f"central-{order[0].stem}.db"
        for copy in order:
            store = open_store(db)
            try:
                merge_database(store, str(copy), lambda: 0.0)
            finally:
                store.close()
        assert _state(db) == _state(source), order
        assert _counts(db) == _counts(source)
        assert [run.finished_at_s is not None for run in _runs(db)] == [True]


def test_a_key_in_a_merged_database_is_hidden_on_the_way_in(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A database from before the store hid fio's echoed options (or written by hand) brings no S3 key into
    this one; a blob that is not zlib is refused in one line, nothing imported."""
    from storbench.store.codec import compress_text, decompress_text

    monkeypatch.setattr(checks, "fio_capabilities", lambda binary, engines=(): CAPS)
    source, central = tmp_path / "old.db", tmp_path / "central.db"
    _session(source, tmp_path / "data", "4k", FakeExecutor(lambda call: Replay(OUTPUT)), resume=False)
    key = "oldSecretKeyValue"
    with sqlite3.connect(source) as conn:
        (raw,) = conn.execute("SELECT fio_output_z FROM repetitions WHERE id = 1").fetchone()
        planted = decompress_text(raw).replace('"global options" : {', f'"global options" : {{"http_s3_key": "{key}",')
        assert key in planted
        conn.execute("UPDATE repetitions SET fio_output_z = ?, job_text = job_text || ? WHERE id = 1",
                     (compress_text(planted), f"http_s3_key={key}\n"))
    code, _, err = run_cli(capsys, "import", str(source), "--db", str(central))
    assert code == 0, err
    with sqlite3.connect(central) as conn:
        job, blob = conn.execute("SELECT job_text, fio_output_z FROM repetitions WHERE id = 1").fetchone()
    assert key not in job and "http_s3_key=<hidden>" in job
    assert key not in decompress_text(blob) and '"http_s3_key": "<hidden>"' in decompress_text(blob)

    with sqlite3.connect(source) as conn:
        conn.execute("UPDATE repetitions SET fio_output_z = ? WHERE id = 2", (b"not zlib",))
    code, _, err = run_cli(capsys, "import", str(source), "--db", str(tmp_path / "third.db"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "nothing imported" in err, err
    assert not (tmp_path / "third.db").exists()  # nothing imported: no empty database left either


def test_a_run_merged_from_another_database_is_never_resumed_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another machine's run of the plan, merged here, interrupted there: `--resume` here continues this database's
    own run, never the merged one (its host would describe repetitions run here, and its next merge would replace
    them); named, it is refused in one line that says where it goes on."""
    from storbench.errors import UserError
    from storbench.resume import resumed_run

    monkeypatch.setattr(checks, "fio_capabilities", lambda binary, engines=(): CAPS)
    theirs, ours, data = tmp_path / "theirs.db", tmp_path / "ours.db", tmp_path / "data"
    cut = FakeExecutor(lambda call: Raise(KeyboardInterrupt()) if call.rep_index == 1 else Replay(OUTPUT))
    _session(ours, data, "[4k]", cut, resume=False)  # run 1 here, interrupted
    _session(theirs, data, "[4k]", FakeExecutor(lambda call: Raise(KeyboardInterrupt()) if call.rep_index == 1
                                                else Replay(OUTPUT)), resume=False)
    store = open_store(ours)
    try:
        merge_database(store, str(theirs), lambda: 0.0)  # their run is run 2 here, the latest of the plan
        assert [r.run_id for r in store.runs()] == [1, 2]
        assert resumed_run(store, "grows", None, platform.node()).run_id == 1
        with pytest.raises(UserError, match=r"cannot resume run 2: it was merged from .*theirs\.db") as refused:
            resumed_run(store, "grows", 2, platform.node())
        assert "resume it in" in (refused.value.hint or "") and "made here: 1" in (refused.value.hint or "")
    finally:
        store.close()
    _session(ours, data, "[4k]", FakeExecutor(lambda call: Replay(OUTPUT)), resume=True)
    assert {(run_id, n) for run_id, n in _per_run(ours)} == {(1, 3), (2, 1)}  # ours finished, theirs untouched


def _per_run(db: Path) -> list[tuple[int, int]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT run_id, COUNT(*) FROM repetitions GROUP BY run_id"))


def test_in_a_store_machines_share_a_resume_continues_this_machines_run_never_anothers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two machines write one store (a PostgreSQL store a nightly job shares): runner-b's run of the plan is the
    latest. `--resume` on runner-a had continued it, storing runner-a's repetitions under runner-b's run and host;
    now it continues runner-a's own; runner-b's only when named."""
    from storbench.errors import UserError
    from storbench.resume import resumed_run

    monkeypatch.setattr(checks, "fio_capabilities", lambda binary, engines=(): CAPS)
    shared, data = tmp_path / "shared.db", tmp_path / "data"
    for _ in range(2):
        _session(shared, data, "[4k]", FakeExecutor(lambda call: Raise(KeyboardInterrupt()) if call.rep_index == 1
                                                    else Replay(OUTPUT)), resume=False)
    store = open_store(shared)
    try:
        with store.transaction() as conn:
            conn.execute("UPDATE runs SET host = 'runner-b' WHERE id = 2")
        assert resumed_run(store, "grows", None, platform.node()).run_id == 1
        # named, it is taken (a container renamed when it restarted resumes its own run); its lease says if it runs
        assert resumed_run(store, "grows", 2, platform.node()).run_id == 2
        with pytest.raises(UserError, match=r"no earlier run of plan 'grows' made on runner-c .*run 2 is runner-b's"):
            resumed_run(store, "grows", None, "runner-c")
    finally:
        store.close()


def _lease_freed(db: Path | str, run_id: int, within_s: float = 10.0) -> None:
    """Wait until no process holds run ``run_id``'s lease: a killed holder's PostgreSQL session ends when its server
    notices the connection gone, a moment after the process (a busy CI runner's resume had come first once)."""
    import time

    deadline = time.monotonic() + within_s
    while True:
        store = open_store(db)
        try:
            if not store.leases.held_elsewhere(run_id):
                return
        finally:
            store.close()
        assert time.monotonic() < deadline, f"run {run_id}'s lease still held {within_s:g} s after its holder ended"
        time.sleep(0.1)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_run_another_storbench_is_running_is_not_resumed_until_it_ends(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Run 1 interrupted here; another storbench (a process of its own) is running it again: a `--resume` now had
    run the same repetitions at once on one target, and its saves replaced the other's. It is refused in one line
    until that process ends (however it ends: the lease goes with it); then the resume goes on."""
    import subprocess
    import sys

    from storbench.errors import UserError

    monkeypatch.setattr(checks, "fio_capabilities", lambda binary, engines=(): CAPS)
    db = tmp_path / "r.db" if kind == "sqlite" else request.getfixturevalue("postgres_db")
    data = tmp_path / "data"
    _session(db, data, "[4k]", FakeExecutor(lambda call: Raise(KeyboardInterrupt()) if call.rep_index == 1
                                            else Replay(OUTPUT)), resume=False)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from storbench.store import open_store\n"
         f"store = open_store({str(db)!r}); print(store.leases.claim(1), flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
        store = open_store(db)
        try:
            assert store.leases.held_elsewhere(1) and not store.leases.held_elsewhere(2)
        finally:
            store.close()
        with pytest.raises(UserError, match="cannot resume run 1: another storbench is running it"):
            _session(db, data, "[4k]", FakeExecutor(lambda call: Replay(OUTPUT)), resume=True)
        plan = tmp_path / "grows.yaml"
        plan.write_text(PLAN.format(data=data, bs="[4k]"))
        before = sorted(p.name for p in data.iterdir())
        code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db), "--resume")  # before its target is touched
        assert code == 2 and "cannot resume run 1: another storbench is running it" in err, out + err
        assert sorted(p.name for p in data.iterdir()) == before
    finally:
        holder.kill()  # ended without a word: its lease goes with it
        holder.wait()
    _lease_freed(db, 1)
    _session(db, data, "[4k]", FakeExecutor(lambda call: Replay(OUTPUT)), resume=True)
    store = open_store(db)
    try:
        assert store.repetition_counts(1) == (3, 3) and not store.leases.held_elsewhere(1)
    finally:
        store.close()
