"""Exports for dashboards (issue 36): `export --format parquet` and `history --format parquet`, typed columns read
back with pyarrow and equal to the json exports of the same runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import labelled_runs, run_cli, write_plan
from storbench.records import RECORD_FIELDS
from storbench.report.parquet import HISTORY_KINDS, record_kinds

pytestmark = pytest.mark.fio

PLAN = """
name: nightly
targets:
  disk: {{kind: path, path: {data}, size: 8MiB}}
workload: {{rw: randrw, bs: 4k, iodepth: 2, runtime: 1s, direct: false}}
repeat: 1
"""


@pytest.fixture(scope="module")
def three_nights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("nights")
    labelled_runs(write_plan(work, PLAN.format(data=work / "data")), work / "r.db", ("b1", "b2", "b3"))
    return work / "r.db"


def test_export_parquet_has_every_field_typed_and_the_json_exports_values(
        three_nights: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "points.parquet"
    code, _, err = run_cli(capsys, "export", "--db", str(three_nights), "--format", "parquet", "-o", str(out))
    assert code == 0, err
    table = pq.read_table(out)
    assert table.column_names == list(RECORD_FIELDS)
    kinds = record_kinds()
    assert kinds["iodepth"] == "int64" and kinds["iops"] == "float64" and kinds["direct"] == "bool"
    arrow = {"int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(), "string": pa.string(),
             "json object": pa.string()}
    for field in table.schema:
        assert field.type == arrow[kinds[field.name]], field
    code, exported, _ = run_cli(capsys, "export", "--db", str(three_nights), "--format", "json")
    records = json.loads(exported)
    rows = table.to_pylist()
    assert len(rows) == len(records) == 6  # three runs, read and write
    for row, record in zip(rows, records, strict=True):
        row["process_cpu_cores"] = json.loads(row["process_cpu_cores"])
        assert row == record
    # a field no row has a value of keeps its type (a dashboard's query does not change type between exports)
    assert all(row["files"] is None for row in rows) and table.schema.field("files").type == pa.int64()


def test_history_parquet_is_the_json_history_typed(three_nights: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "history.parquet"
    code, _, err = run_cli(capsys, "history", "--db", str(three_nights), "--metric", "iops,lat_p99_ns",
                           "--format", "parquet", "-o", str(out))
    assert code == 0, err
    table = pq.read_table(out)
    assert table.column_names == list(HISTORY_KINDS)
    assert table.schema.field("run").type == pa.int64() and table.schema.field("change_pct").type == pa.float64()
    code, history, _ = run_cli(capsys, "history", "--db", str(three_nights), "--metric", "iops,lat_p99_ns",
                               "--format", "json")
    records = json.loads(history)
    rows = table.to_pylist()
    assert len(rows) == len(records) == 12  # 2 directions x 2 metrics x 3 runs
    for row, record in zip(rows, records, strict=True):
        for key in ("labels", "recorded", "changed_with"):  # objects and lists: JSON text
            row[key] = json.loads(row[key])
        assert row.keys() == record.keys()
        for key, value in record.items():
            assert row[key] == (pytest.approx(value, rel=1e-5) if isinstance(value, float) else value), key
    assert [row["labels"]["build"] for row in rows[:3]] == ["b1", "b2", "b3"]


def test_without_pyarrow_parquet_is_refused_in_one_line(three_nights: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if not installed
    out = tmp_path / "points.parquet"
    code, _, err = run_cli(capsys, "export", "--db", str(three_nights), "--format", "parquet", "-o", str(out))
    assert code == 2 and "Parquet needs pyarrow" in err and "pipx inject storbench 'pyarrow" in err, err
    assert not out.exists()
