"""Figures carry their unit in their names (`bw_bytes_per_s`, `cpu_usr_pct`), and the names they had before still
mean the same figure wherever a user or a stored run gives one: a plan, a selector, `history --metric`, a stored
design."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import run_cli
from storbench.config.loading import load_plan_text
from storbench.records import Record
from storbench.run_design import design_from_json, design_to_json
from storbench.stats.match import matches
from storbench.store.migrations import design_of_text
from synthetic import observation

COMPARED = """
name: renamed
targets:
  d: {{kind: path, path: ./d, size: 1MiB}}
workload: {{rw: read, bs: [4k, 64k]}}
repeat: {{min: 3, max: 6, until: decided}}
compare: {{baseline: bs=4k, candidate: bs=64k, metrics: [{metrics}]}}
"""
STEADY = """
name: renamed-steady
targets:
  d: {{kind: path, path: ./d, size: 1MiB}}
workload: {{rw: read, bs: 4k}}
steady_state: {{metric: {steady}}}
"""


def test_the_export_record_names_its_units() -> None:
    fields = set(Record.__dataclass_fields__)
    assert {"bw_bytes_per_s", "cpu_usr_pct", "cpu_sys_pct"} <= fields
    assert not fields & {"bw_bytes", "cpu_usr", "cpu_sys"}


def test_a_plan_with_the_old_names_asks_for_the_same_figures() -> None:
    old = load_plan_text(COMPARED.format(metrics="bw_bytes, iops"), "plan.yaml").config
    new = load_plan_text(COMPARED.format(metrics="bw_bytes_per_s, iops"), "plan.yaml").config
    assert old.compare is not None and old.compare.metrics == ["bw_bytes_per_s", "iops"] and old.compare == new.compare
    old_steady = load_plan_text(STEADY.format(steady="bw_bytes"), "plan.yaml").config.steady_state
    assert old_steady is not None and old_steady.metric == "bw_bytes_per_s"


def test_a_stored_design_with_the_old_names_reads_as_the_new_ones() -> None:
    for text, where in ((COMPARED.format(metrics="bw_bytes_per_s"), ("compare", "metrics")),
                        (STEADY.format(steady="bw_bytes_per_s"), ("steady", "metric"))):
        design = design_of_text(text)
        stored = design_to_json(design)
        part, key = where
        assert stored[part][key] in ("bw_bytes_per_s", ["bw_bytes_per_s"])
        stored[part][key] = "bw_bytes" if key == "metric" else ["bw_bytes"]  # as a storbench before the rename
        assert design_from_json(json.loads(json.dumps(stored))) == design


def test_a_selector_with_an_old_name_matches_the_figure() -> None:
    o = observation(bw_bytes_per_s=5e6, cpu_usr_pct=3.0)
    assert matches(o, "bw_bytes", "5000000", {}) and matches(o, "bw_bytes_per_s", "5000000", {})
    assert matches(o, "cpu_usr", "3", {}) and not matches(o, "cpu_usr", "4", {})


@pytest.mark.fio
def test_history_takes_the_old_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d"
    data.mkdir()
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"name: h\ntargets: {{d: {{kind: path, path: {data}, size: 1MiB}}}}\n"
                    "workload: {rw: read, bs: 4k, runtime: 1s}\nrepeat: 1\n")
    db = tmp_path / "r.db"
    for _ in range(2):
        assert run_cli(capsys, "run", str(plan), "--db", str(db))[0] == 0
    code, old, err = run_cli(capsys, "history", "--db", str(db), "--metric", "bw_bytes", "--format", "json")
    assert code == 0, err
    new = run_cli(capsys, "history", "--db", str(db), "--metric", "bw_bytes_per_s", "--format", "json")[1]
    assert json.loads(old) == json.loads(new) and "bw_bytes_per_s" in old


def test_a_mistyped_field_is_pointed_at_the_name_with_its_unit() -> None:
    from storbench.errors import UserError
    from storbench.selection import filter_where

    o = observation(bw_bytes_per_s=5e6, cpu_usr_pct=3.0)
    for typo, now in (("cpu_usrr", "cpu_usr_pct"), ("bw_bytes_per_sec", "bw_bytes_per_s")):
        try:
            filter_where([o], [f"{typo}=1"])
        except UserError as error:
            assert error.hint == f"did you mean {now!r}?", error.hint  # not the old name, still taken
        else:
            raise AssertionError("a mistyped field was taken")
