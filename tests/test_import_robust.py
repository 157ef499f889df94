"""`storbench import` as people have their files (issue 14, item 4): every file is tried, text around the JSON is
skipped, values fio can never write are refused with the field named; and the fio output parser, which also
reads what clients and pods send back, gives a measurement or a ValueError for any input."""

from __future__ import annotations

import contextlib
import copy
import json
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import run_cli
from storbench.fio.parse import parse_fio_json

FIXTURES = Path(__file__).parent / "fixtures"
GOOD = FIXTURES / "randrw-numjobs2.jsonplus.json"


def _bad(tmp_path: Path, name: str, change) -> Path:  # type: ignore[no-untyped-def]
    document = json.loads(GOOD.read_text())
    change(document)
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def test_every_file_is_tried_and_each_bad_one_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def negative_bin(d: dict) -> None:  # type: ignore[type-arg]
        bins = d["jobs"][0]["read"]["clat_ns"]["bins"]
        bins[next(iter(bins))] = -5

    def nan_iops(d: dict) -> None:  # type: ignore[type-arg]
        d["jobs"][0]["read"]["iops"] = float("nan")

    def percentiles_out_of_order(d: dict) -> None:  # type: ignore[type-arg]
        percentiles = d["jobs"][0]["read"]["clat_ns"]["percentile"]
        keys = sorted(percentiles, key=float)
        percentiles[keys[-1]] = 0
        percentiles[keys[0]] = 10**9

    bad = [_bad(tmp_path, "negative.json", negative_bin), _bad(tmp_path, "nan.json", nan_iops),
           _bad(tmp_path, "order.json", percentiles_out_of_order)]
    (tmp_path / "notes.txt").write_text("my results, see the spreadsheet\n")
    files = [str(GOOD), *map(str, bad), str(tmp_path / "notes.txt"), str(tmp_path / "missing.json"),
             str(FIXTURES / "normal-and-jsonplus.txt"), str(FIXTURES / "with-leading-text.txt")]
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "import", *files, "--db", str(db))
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 5, err  # one line per bad file, nothing else
    assert "negative.json" in lines[0] and "read.clat_ns.bins count" in lines[0] and "-5" in lines[0]
    assert "nan.json" in lines[1] and "read.iops is nan" in lines[1]
    assert "order.json" in lines[2] and "read.clat_ns.percentile values out of order" in lines[2]
    assert "notes.txt" in lines[3] and "missing.json" in lines[4] and "cannot read it" in lines[4]
    assert "from 3 files" in out and "5 files skipped" in out  # the good one, normal+json+ and leading text
    code, exported, _ = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    records = json.loads(exported)
    assert code == 0 and {r["rw"] for r in records} >= {"randread", "randrw"}


def test_an_import_with_no_good_file_imports_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.txt").write_text("nothing here\n")
    code, _, err = run_cli(capsys, "import", str(tmp_path / "a.txt"), "--db", str(tmp_path / "r.db"))
    assert code == 2 and "nothing imported" in err and not (tmp_path / "r.db").exists()


def _parse_in_time(text: str) -> None:
    started = time.perf_counter()
    with contextlib.suppress(ValueError):
        parse_fio_json(text)
    assert time.perf_counter() - started < 1.0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_values)
def test_any_json_gives_a_measurement_or_a_value_error(value: object) -> None:
    _parse_in_time(json.dumps(value))


def _paths(node: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    if isinstance(node, dict):
        return [prefix] + [p for k, v in node.items() for p in _paths(v, (*prefix, k))]
    if isinstance(node, list):
        return [prefix] + [p for i, v in enumerate(node) for p in _paths(v, (*prefix, i))]
    return [prefix]


REAL = json.loads(GOOD.read_text())
REAL_PATHS = [p for p in _paths(REAL) if p]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(REAL_PATHS), json_values)
def test_a_real_fio_output_with_any_value_replaced_parses_or_is_refused(path: tuple[object, ...],
                                                                       value: object) -> None:
    document = copy.deepcopy(REAL)
    node = document
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    _parse_in_time(json.dumps(document))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_any_text_gives_a_measurement_or_a_value_error(text: str) -> None:
    _parse_in_time(text)
    _parse_in_time("[" * 50_000 + "]" * 50_000)


def test_the_same_output_imported_again_is_skipped_unless_asked(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    import shutil as sh

    db = str(tmp_path / "r.db")
    copy = tmp_path / "renamed.json"
    sh.copy(GOOD, copy)
    code, out, err = run_cli(capsys, "import", str(GOOD), str(copy), "--db", db)  # one content, two names
    assert code == 0 and "from 1 files as run 1" in out and "1 skipped as imported already" in out, out + err
    assert f"skipped {copy}: given twice in this import" in err and "--again" not in err, err
    code, out, err = run_cli(capsys, "import", str(GOOD), "--db", db)
    assert code == 0 and "nothing new to import" in out and "already imported (run 1)" in err, out + err
    code, out, err = run_cli(capsys, "import", str(GOOD), "--db", db, "--again")
    assert code == 0 and "as run 2" in out, out + err


def test_fio_output_from_a_pipe_is_read_whole_and_a_name_is_checked(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`storbench import <(fio ...)` or /dev/stdin: the output is read once (sniffing it for a database had eaten
    its first 16 bytes); --target and --name are names, as a plan's are."""
    import os
    import threading

    read_end, write_end = os.pipe()

    def feed() -> None:
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(GOOD.read_bytes())

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        code, out, err = run_cli(capsys, "import", f"/dev/fd/{read_end}", "--db", str(tmp_path / "r.db"))
    finally:
        feeder.join()
        os.close(read_end)
    assert code == 0 and "imported" in out, out + err
    for option, value in (("--target", ""), ("--name", "../x"), ("--target", "a b")):
        code, out, err = run_cli(capsys, "import", str(GOOD), "--db", str(tmp_path / "s.db"), option, value)
        assert code == 2 and f"{option} {value!r} is not a name" in err, out + err
    assert not (tmp_path / "s.db").exists()


def test_settings_fio_never_takes_are_read_as_their_defaults(tmp_path: Path) -> None:
    from storbench.importer import _case

    case = _case({"rw": "randrw", "iodepth": "-5", "numjobs": "0", "rwmixread": "1000"}, "t")
    assert (case.workload.iodepth, case.workload.numjobs, case.workload.rwmixread) == (1, 1, 50)
    case = _case({"rw": "randrw", "iodepth": "32", "numjobs": "4", "rwmixread": "0"}, "t")
    assert (case.workload.iodepth, case.workload.numjobs, case.workload.rwmixread) == (32, 4, 0)


def test_one_fio_report_is_known_however_its_file_differs(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A newline more, or fio's messages before the JSON: one report, one import (its bytes' hash had imported it
    again, and `show` gave one run as two repetitions with no spread). An import made before keeps being known by its
    file's bytes."""
    import sqlite3

    db = str(tmp_path / "r.db")
    text = GOOD.read_text()
    newline, messages = tmp_path / "newline.json", tmp_path / "messages.txt"
    newline.write_text(text + "\n")
    messages.write_text("fio: note: both iodepth >= 1 and synchronous I/O engine are selected\n" + text)
    code, out, err = run_cli(capsys, "import", str(GOOD), "--db", db)
    assert code == 0, out + err
    code, out, err = run_cli(capsys, "import", str(newline), str(messages), "--db", db)
    assert code == 0 and "nothing new to import: all 2 files" in out, out + err
    assert f"skipped {newline}: already imported (run 1)" in err and f"skipped {messages}: already" in err, err
    from storbench.importer import file_sha256

    conn = sqlite3.connect(db)  # as an older storbench stored it: the hash of the file's bytes
    conn.execute("UPDATE repetitions SET target_json = json_set(target_json, '$.imported_sha256', ?)",
                 (file_sha256(text),))
    conn.commit()
    conn.close()
    code, out, err = run_cli(capsys, "import", str(GOOD), "--db", db)
    assert code == 0 and "nothing new to import" in out, out + err


def test_json_that_is_not_fio_3s_output_is_refused_in_one_line(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`{"jobs": [{}]}` had become a failed repetition of 1970, and fio 2.x's output (latency in µs under other
    names) one of 0 ns and 0 MiB/s, both with exit 0."""
    other = tmp_path / "other.json"
    other.write_text('{"jobs": [{}]}')
    old = json.loads(GOOD.read_text())
    old["fio version"] = "fio-2.2.10"
    two = tmp_path / "fio2.json"
    two.write_text(json.dumps(old))
    db = tmp_path / "r.db"
    for path, says in ((other, "no 'fio version' in it: not fio's JSON output"),
                       (two, "fio-2.2.10's output (latency in µs, no histograms): storbench reads fio 3.0 or later")):
        code, out, err = run_cli(capsys, "import", str(path), "--db", str(db))
        assert code == 2 and len(err.strip().splitlines()) == 1 and says in err, out + err
    assert not db.exists()
    code, out, err = run_cli(capsys, "import", str(GOOD), "--db", str(db))
    assert code == 0, out + err
    code, out, err = run_cli(capsys, "import", str(other), str(GOOD), "--db", str(db))  # one bad, one before
    assert code == 2 and ("none of the 2 files could be imported (1 not fio output storbench can import, 1 imported "
                          "before); nothing imported") in err, out + err
