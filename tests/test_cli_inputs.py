"""Bad command lines and unwritable places: one line, with a hint, never a traceback, and never a value that
quietly switches something off (`--fail-on-regression nan` compared false with every change: a gate that never
failed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_cli, write_plan
from storbench.store import open_store

FIXTURES = Path(__file__).parent / "fixtures"
PLAN = """
name: inputs
targets:
  t: {{kind: path, path: {data}, size: 1MiB}}
workload: {{rw: randread, bs: 4k, runtime: 1s}}
repeat: 2
"""


def _one_line(code: int, out: str, err: str) -> str:
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err, out + err
    return err.strip()


@pytest.fixture
def imported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    db = tmp_path / "r.db"
    assert run_cli(capsys, "import", str(FIXTURES / "randread-plain.json"), "--db", str(db))[0] == 0
    return db


@pytest.mark.parametrize("value", ["nan", "-1", "inf", "lots"])
def test_a_regression_gate_takes_only_a_finite_percent(value: str, imported: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["compare", "--baseline", "bs=4k", "--candidate", "bs=4k"], ["history"]):
        line = _one_line(*run_cli(capsys, *command, "--db", str(imported), f"--fail-on-regression={value}"))
        assert f"storbench {command[0]}: error: argument --fail-on-regression: '{value}'" in line, line
        assert f"(hint: storbench {command[0]} --help)" in line


@pytest.mark.parametrize(("option", "says"), [("--max-runs=0", "a whole number of 1 or more"),
                                              ("--max-hours=nan", "a finite number"),
                                              ("--max-hours=0", "above 0"),
                                              ("--budget=5m", "this plan repeats a fixed number of times")])
def test_run_limits_that_would_mean_nothing_are_refused(option: str, says: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, PLAN.format(data=tmp_path / "data"))
    line = _one_line(*run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"), option))
    assert says in line and "hint:" in line, line
    assert not (tmp_path / "r.db").exists() and not (tmp_path / "data").exists()


def test_a_bad_command_line_is_one_line_with_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line(*run_cli(capsys, "run"))
    assert line == "storbench run: error: the following arguments are required: plan (hint: storbench run --help)"
    line = _one_line(*run_cli(capsys, "lab", "hosts", "status", "--count", "999"))
    assert "'999': give a whole number from 1 to 250" in line and len(line) < 200, line


def test_unwritable_places_and_a_directory_as_database_are_one_line(
        imported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _one_line(*run_cli(capsys, "report", "--db", str(imported), "-o", str(tmp_path / "r.html"),
                              "--images", "/proc/storbench-images"))
    assert "cannot write the images in /proc/storbench-images" in line and "hint:" in line, line
    for command in (["show"], ["import", str(FIXTURES / "randread-plain.json")]):
        line = _one_line(*run_cli(capsys, *command, "--db", str(tmp_path)))
        assert f"{tmp_path} is a directory, not a results database" in line, line
        assert f"--db {tmp_path / 'results.db'}" in line


def test_report_sides_are_checked_as_compare_checks_them(imported: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    out_file = str(tmp_path / "r.html")
    for sides, says in ((("bs=8k", "bs=4k"), "--baseline 'bs=8k' matches no results"),
                        (("bs=4k", "rw=randread"), "select the same results")):
        line = _one_line(*run_cli(capsys, "report", "--db", str(imported), "-o", out_file, "--baseline", sides[0],
                                  "--candidate", sides[1]))
        assert says in line and "hint:" in line, line
    assert not Path(out_file).exists()


def test_the_reports_figures_from_repetitions_take_only_those_where_kept(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The latency CDFs, timelines and convergence figures are drawn from the repetitions themselves: with
    `--where repeat=1` only that repetition's bins, as the summary beside them."""
    import storbench.report.build

    db = tmp_path / "r.db"
    for _ in range(3):
        assert run_cli(capsys, "import", str(FIXTURES / "randread-plain.json"), "--db", str(db), "--again")[0] == 0
    given: list[list[tuple[int, int]]] = []
    real = storbench.report.build.build_report

    def spy(title, runs, repetitions, *args, **kwargs):  # type: ignore[no-untyped-def]
        given.append([(r.run_id, r.rep_index) for r in repetitions])
        return real(title, runs, repetitions, *args, **kwargs)

    monkeypatch.setattr(storbench.report.build, "build_report", spy)
    code, _, err = run_cli(capsys, "report", "--db", str(db), "--run", "all", "--where", "run=2", "-o",
                           str(tmp_path / "r.html"))
    assert code == 0, err
    assert given == [[(2, 0)]]


def test_completion_latency_standing_in_is_said_in_the_report_and_shows_files(
        imported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An imported plain-json output has no total-latency bins: its percentiles are clat's. `show`'s table said so
    in a note; its CSV and the HTML report now say it too."""
    code, out, err = run_cli(capsys, "show", "--db", str(imported), "--format", "csv")
    assert code == 0, err
    import csv
    import io

    (row,) = [r for r in csv.DictReader(io.StringIO(out)) if r["direction"] == "read"]
    assert row["lat_percentiles_from"] == "clat" and row["lat_p99_ns"]
    report = tmp_path / "r.html"
    assert run_cli(capsys, "report", "--db", str(imported), "-o", str(report))[0] == 0
    html = report.read_text()
    assert "Percentiles marked (clat) are completion latency" in html and html.count(" (clat)</td>") >= 4


def test_nothing_to_show_says_why(imported: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A --where that matches nothing names it (saturation said there was no curve); a run with no repetition
    stored yet says so (show said to loosen a --where nobody gave)."""
    line = _one_line(*run_cli(capsys, "saturation", "--db", str(imported), "--where", "rw=nope"))
    assert "no results match rw=nope" in line and "no curve" not in line, line
    store = open_store(imported)
    try:
        empty = store.create_run(plan_name="later", plan_text="", plan_sha256="x", source="run",
                                 storbench_version="0", fio_version="fio-3.33", host="h", kernel="k",
                                 run_order="interleaved", seed=0, tags=(), started_at_s=2e9)
    finally:
        store.close()
    for command in ("show", "report", "saturation"):
        line = _one_line(*run_cli(capsys, command, "--db", str(imported), "-o", str(tmp_path / "x.html"))
                         if command == "report" else run_cli(capsys, command, "--db", str(imported)))
        assert f"run {empty} in {imported}: no repetition stored yet" in line and "--where" not in line, line


def test_a_steady_state_plan_takes_a_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """steady_state decides its rounds too: --budget is not refused for it (the run is stopped before any fio)."""
    import storbench.cli.run

    plan = write_plan(tmp_path, PLAN.format(data=tmp_path / "data").replace("repeat: 2\n", "steady_state: {}\n"))

    def stop(*args: object, **kwargs: object) -> None:
        raise SystemExit(7)

    import storbench.execute.fio_binary

    monkeypatch.setattr(storbench.execute.fio_binary, "find_fio", stop)  # the step after the budget's check
    with pytest.raises(SystemExit) as stopped:
        run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"), "--budget=5m")
    assert stopped.value.code == 7


def test_options_that_would_be_ignored_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "show", "--db", str(tmp_path / "none.db"), "--cost", "--format", "csv")
    assert code == 2 and "--cost is a table of its own" in err, out + err
    plan = tmp_path / "k.yaml"
    plan.write_text("name: k\nlab: {k8s: {}}\ntargets:\n  v: {kind: pvc, size: 1GiB, pod_security: baseline}\n"
                    "workload: {rw: randread, runtime: 1s}\n")
    code, out, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"), "--kubeconfig", "/k")
    assert code == 2 and "lab.k8s runs its pvc targets on the lab's own cluster" in err, out + err
    assert not (tmp_path / "r.db").exists()


def test_an_output_file_that_is_a_database_is_not_written_over(imported: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`export --db r.db -o r.db` had turned the results database into a CSV file, exit 0."""
    before = imported.read_bytes()
    for command in (["export", "--format", "csv"], ["show"], ["report"], ["history"]):
        line = _one_line(*run_cli(capsys, *command, "--db", str(imported), "-o", str(imported)))
        assert f"{imported} is an SQLite database (a results database?): not writing over it" in line, line
        assert "hint: pass -o a new file name" in line
    assert imported.read_bytes() == before
    assert run_cli(capsys, "show", "--db", str(imported))[0] == 0
    written = tmp_path / "out.csv"
    written.write_text("an earlier export\n")  # any other file is written over, as before
    assert run_cli(capsys, "export", "--db", str(imported), "--format", "csv", "-o", str(written))[0] == 0
    assert written.read_text().startswith("case_id,run_id,")


def test_a_damaged_or_crafted_database_is_one_line(imported: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A page of the file overwritten gave "sqlite3.DatabaseError: database disk image is malformed" and a
    traceback; text where storbench keeps a number or a list (a crafted file) gave a TypeError deep in the
    statistics."""
    import shutil
    import sqlite3

    with sqlite3.connect(imported) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page = conn.execute("PRAGMA page_size").fetchone()[0]
    pristine = imported.read_bytes()
    damaged_said = 0
    for index in range(1, len(pristine) // page):
        copy = tmp_path / f"page{index}.db"
        data = bytearray(pristine)
        data[index * page + 8:index * page + 208] = b"\xa5" * 200
        copy.write_bytes(bytes(data))
        for command in (["show", "--run", "all"], ["export", "--format", "json"]):
            code, out, err = run_cli(capsys, *command, "--db", str(copy))  # never a traceback
            if code:
                line = _one_line(code, out, err)
                damaged_said += "is damaged: database disk image is malformed" in line and "hint: restore" in line
    assert damaged_said, "no page's damage was said"
    for table, column, value in (("runs", "tags_json", "5"), ("runs", "software_json", '"x"'),
                                 ("runs", "merged_from_json", "[1]"), ("cases", "target_json", "null"),
                                 ("measurements", "iops", "x")):
        crafted = tmp_path / f"{column}.db"
        shutil.copy(imported, crafted)
        with sqlite3.connect(crafted) as conn:
            conn.execute(f"UPDATE {table} SET {column} = ?", (value,))
        conn.close()
        line = _one_line(*run_cli(capsys, "show", "--run", "all", "--db", str(crafted)))
        assert "no storbench wrote that" in line, (column, line)


def test_a_side_that_the_filters_left_empty_says_so(imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--where run=1` kept run 1 only, and `--candidate run=2` had read as matching nothing in the database."""
    assert run_cli(capsys, "import", str(FIXTURES / "randread-plain.json"), "--db", str(imported))[0] == 0
    line = _one_line(*run_cli(capsys, "compare", "--db", str(imported), "--baseline", "run=1", "--candidate",
                              "run=2", "--where", "run=1"))
    assert "--candidate 'run=2' matches no results in" in line and "among those --where run=1 kept" in line, line
    assert "hint: loosen the filters" in line
    line = _one_line(*run_cli(capsys, "compare", "--db", str(imported), "--baseline", "run=1", "--candidate",
                              "run=3"))
    assert "matches no results in" in line and "among those" not in line, line


def test_history_of_runs_with_nothing_stored_yet_says_so(imported: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No filter given, and `history` had said "no results match (hint: loosen --where/--target)"."""
    import sqlite3

    with sqlite3.connect(imported) as conn:
        conn.execute("PRAGMA foreign_keys=OFF")
        for table in ("measurements", "clients", "repetitions"):
            conn.execute(f"DELETE FROM {table}")
    conn.close()
    line = _one_line(*run_cli(capsys, "history", "--db", str(imported)))
    assert "no repetition stored yet" in line and "--where" not in line, line


@pytest.mark.parametrize(("option", "says"), [("--osds=-1", "--osds -1: should be greater than or equal to 1"),
                                              ("--osds=500", "--osds 500: should be less than or equal to 16"),
                                              ("--pool=rbd:0", "--pool size 0: should be greater than or equal to 1")])
def test_lab_ceph_up_takes_what_a_plan_takes(option: str, says: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`--osds 500` and a pool of size 0 passed every check before the bring-up (a plan takes 1 to 16)."""
    line = _one_line(*run_cli(capsys, "lab", "ceph", "up", option))
    assert says in line and "hint: a plan's lab.ceph takes 1 to 16" in line, line


@pytest.mark.parametrize(("db", "says"), [("mysql://x", "storbench keeps results in an SQLite file or a PostgreSQL"),
                                          ("", "the results database's name is empty"),
                                          (".", "is a directory, not a results database")])
def test_plan_checks_the_db_as_run_would(db: str, says: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`plan --db mysql://x` passed, and the run of the same command line then refused it."""
    plan = write_plan(tmp_path, PLAN.format(data=tmp_path / "data"))
    line = _one_line(*run_cli(capsys, "plan", str(plan), "--db", db))
    assert says in line, line
