"""Stored databases of an older storbench open, migrate once and read as before.

tests/fixtures/schema7.db was written by storbench at schema version 7 (tests/fixtures/make_schema7_db.py), and
schema7-answers.json holds what that storbench's readers said about its runs: each run's expectations, steady-state
rule, stopping rule and question, bring-up mode, planned repetitions and changed design, and its cases. Migrated,
the same database must give the same answers, from the designs stored with the runs: also once the plan texts no
longer load.
"""

from __future__ import annotations

import json
import platform
import sqlite3
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from helpers import run_cli
from storbench.errors import UserError
from storbench.model import WorkloadPoint
from storbench.run_design import (
    NO_DESIGN,
    DesignQuestion,
    RunDesign,
    SteadyDesign,
    StoppingRule,
    TargetExpectation,
    design_from_json,
    design_to_json,
)
from storbench.selection import Selection, incomplete_line
from storbench.stats.run_questions import (
    adaptive_questions,
    bring_ups,
    design_steady_rule,
    expectations,
    interval_levels,
    planned_repetitions,
    run_design_changes,
)
from storbench.store import Store, open_store
from storbench.store.migrations import SCHEMA_VERSION, design_of_text, fill_designs

FIXTURES = Path(__file__).parent / "fixtures"
ANSWERS = json.loads((FIXTURES / "schema7-answers.json").read_text())


def _old_db(tmp_path: Path) -> Path:
    db = tmp_path / "r.db"
    db.write_bytes((FIXTURES / "schema7.db").read_bytes())
    return db


def _answers(store: Store) -> dict[str, Any]:
    """What today's readers say about the stored runs, in the shape make_schema7_db.py wrote the old answers."""
    runs = store.runs()
    answers = {
        "expectations": [[run_id, target, asdict(e)] for (run_id, target), e in sorted(expectations(runs).items())],
        "interval_levels": sorted(interval_levels(runs).items()),
        "bring_ups": sorted(bring_ups(runs).items()),
        "sequential_plans": sorted((k, asdict(v)) for k, v in Selection([], runs, "", []).sequential_plans.items()),
        "questions": [[q.run_id, q.baseline.text, q.candidate.text, list(q.metrics), asdict(q.plan), q.bring_up]
                      for q in adaptive_questions(runs)],
        "steady_rules": [[r.run_id, None if (rule := design_steady_rule(r.design)) is None else asdict(rule)]
                         for r in runs],
        "planned_repetitions": [[r.run_id, planned_repetitions(r)] for r in runs],
        "design_changes": [[r.run_id, run_design_changes(store.design_versions(r.run_id))] for r in runs],
        "incomplete": [[r.run_id, incomplete_line(r, store.repetition_counts(r.run_id)[0], planned_repetitions(r),
                                                  "r.db")] for r in runs],
        "cases": sorted({rep.case.case_id: [_workload_fields(rep.case.workload), rep.case.clients]
                         for rep in store.repetitions()}.items()),
    }
    return dict(json.loads(json.dumps(answers, sort_keys=True)))


# WorkloadPoint fields added after the fixture was written, with the value every case stored before then has
FIELDS_ADDED_SINCE = {"timeline_window_ms": None}


def _workload_fields(workload: WorkloadPoint) -> dict[str, object]:
    """A stored case's workload as the fixture's storbench had it: fields added since must hold their old value."""
    fields = asdict(workload)
    for name, value in FIELDS_ADDED_SINCE.items():
        assert fields.pop(name) == value, (name, workload)
    return fields


def _break_plan_texts(db: Path) -> None:
    """Every stored plan text as one a newer storbench no longer reads."""
    conn = sqlite3.connect(db)
    conn.execute("UPDATE runs SET plan_text = plan_text || 'a_key_of_the_future: 1' || char(10)")
    conn.execute("UPDATE plan_versions SET plan_text = plan_text || 'a_key_of_the_future: 1' || char(10)")
    conn.commit()
    conn.close()


def test_a_database_an_older_storbench_wrote_migrates_and_reads_as_before(tmp_path: Path) -> None:
    db = _old_db(tmp_path)
    open_store(db).close()  # opened for writing: migrated
    store = open_store(db, read_only=True)
    try:
        assert _answers(store) == ANSWERS
        # every answer above came from a stored design; the run whose plan already did not load has none
        designs = {r.plan_name: r.design for r in store.runs()}
        assert designs["broken"] == designs["imported"] == NO_DESIGN
        assert designs["fixed"].expectations == (TargetExpectation("a", iops=3000.0),
                                                 TargetExpectation("b", bw_bytes_per_s=125 * 2**20))
    finally:
        store.close()


def test_a_run_whose_plan_no_longer_loads_keeps_its_design(tmp_path: Path) -> None:
    """The stored design wins: the plan text is only the record of what the user wrote."""
    db = _old_db(tmp_path)
    open_store(db).close()
    _break_plan_texts(db)
    store = open_store(db)
    try:
        assert design_of_text(store.runs()[0].plan_text) == NO_DESIGN  # the texts no longer load
        assert _answers(store) == ANSWERS
    finally:
        store.close()


def test_the_migrations_run_once_and_one_way(tmp_path: Path) -> None:
    db = _old_db(tmp_path)
    open_store(db).close()

    def content() -> list[object]:
        conn = sqlite3.connect(db)
        try:
            return [conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
                    for table in ("schema_migrations", "runs", "plan_versions", "cases")]
        finally:
            conn.close()

    migrated = content()
    open_store(db).close()  # nothing left to do
    assert content() == migrated
    store = open_store(db)
    with store.transaction() as conn:
        fill_designs(conn)  # the designs' step finds none missing
    store.close()
    assert content() == migrated
    conn = sqlite3.connect(db)
    columns = [row[1] for row in conn.execute("PRAGMA table_info(cases)")]
    shapes = {row[0] for row in conn.execute("SELECT json_extract(workload_json, '$.schema') FROM cases")}
    versions = [row[0] for row in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    conn.close()
    assert columns == ["id", "target_json", "workload_json", "clients", "lab_json"]  # the copies nothing read: gone
    assert shapes == {2} and versions == list(range(1, SCHEMA_VERSION + 1))


def test_a_resume_checks_the_stored_stopping_rule_even_when_the_plan_no_longer_loads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`run --resume` of a run an older storbench stored migrates the database first, and compares the plan's
    stopping rule with the run's stored design (its plan version 2: max 16, margin 5%)."""
    db = _old_db(tmp_path)
    conn = sqlite3.connect(db)
    (text,) = conn.execute("SELECT plan_text FROM plan_versions WHERE run_id = 3 AND version = 2").fetchone()
    conn.execute("UPDATE runs SET host = ?", (platform.node(),))  # made on this machine: it resumes here
    conn.commit()
    conn.close()
    plan = tmp_path / "adaptive.yaml"
    plan.write_text(text.replace("max: 16", "max: 20"))
    code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db), "--resume", "3")
    assert code == 2 and "changed the stopping rule of run 3 since plan version 2 (max 16 -> 20)" in err, out + err
    _break_plan_texts(db)
    code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db), "--resume", "3")
    assert code == 2 and "changed the stopping rule of run 3 since plan version 2 (max 16 -> 20)" in err, out + err


def test_a_new_run_stores_its_design_and_a_resume_its_new_one(tmp_path: Path) -> None:
    first = design_of_text("name: p\ntargets: {a: {kind: path, path: /srv/a, size: 1MiB}}\n"
                           "workload: {rw: read, bs: [4k, 8k], runtime: 1s}\nrepeat: 4\n")
    assert first.planned_repetitions == 8 and first.repeat == 4
    store = open_store(tmp_path / "r.db")
    try:
        run_id = store.create_run(plan_name="p", plan_text="name: p\n", plan_sha256="1", source="run",
                                  storbench_version="0", fio_version="fio-3.33", host="h", kernel="k",
                                  run_order="interleaved", seed=0, tags=(), started_at_s=1.0, design=first)
        assert store.runs()[0].design == first
        later = RunDesign(repeat=5, planned_repetitions=10)
        assert store.update_run_plan(run_id, "name: p\n", "1", design=later) == 1  # the same text: one version
        assert store.update_run_plan(run_id, "name: p # 2\n", "2", design=later) == 2
        assert store.runs()[0].design == later
        assert store.design_versions(run_id) == [(1, first), (2, later)]
    finally:
        store.close()


def test_a_design_round_trips_through_its_stored_shape_and_no_other_is_read(tmp_path: Path) -> None:
    full = RunDesign(stopping=StoppingRule(3, 12, "ci <= 5%", ci_pct=5.0),
                     compare=DesignQuestion("pool_size=2", "pool_size=3", ("iops", "lat_p99_ns"), margin=0.05),
                     steady=SteadyDesign("iops", 5, 0.2, 0.1, 25, 5),
                     expectations=(TargetExpectation("a", iops=1e3), TargetExpectation("b", bw_bytes_per_s=10)),
                     bring_up="side_by_side", planned_repetitions=None)
    for design in (full, NO_DESIGN, RunDesign(repeat=3, planned_repetitions=12)):
        assert design_from_json(json.loads(json.dumps(design_to_json(design)))) == design
    for bad in ({**design_to_json(full), "schema": 2}, {**design_to_json(full), "repeat": "3"}, [], None):
        with pytest.raises(ValueError):
            design_from_json(bad)
    db = tmp_path / "r.db"
    crafted = open_store(db)
    crafted.create_run(plan_name="p", plan_text="", plan_sha256="", source="run", storbench_version="0",
                       fio_version="", host="h", kernel="k", run_order="interleaved", seed=0, tags=(),
                       started_at_s=0.0)
    crafted.conn.execute("UPDATE runs SET design_json = '{\"schema\": 99}'")
    crafted.conn.commit()
    crafted.close()
    store = open_store(db, read_only=True)
    try:
        with pytest.raises(UserError, match="run 1: design stored in an unknown shape"):
            store.runs()
    finally:
        store.close()


def test_an_sqlite_too_old_to_drop_a_column_is_one_line_with_the_fix(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from storbench.store import migrations

    monkeypatch.setattr(migrations.sqlite3, "sqlite_version_info", (3, 34, 1))
    with pytest.raises(UserError, match=r"needs 3\.35 or newer") as refused:
        open_store(tmp_path / "r.db")
    assert "Python built with SQLite 3.35" in refused.value.one_line()
    monkeypatch.undo()
    open_store(tmp_path / "r.db").close()  # nothing half-done was kept: a newer SQLite makes the whole schema
