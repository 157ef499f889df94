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


def test_plan_says_where_an_iodepth_never_reaches_the_storage(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A sweep of iodepth with psync, or with libaio and direct: false, measures iodepth 1 at every depth (fio caps a
    sync engine's queue depth at 1; Linux submits buffered libaio one I/O at a time): `plan` says so, once a
    case kind; libaio with direct I/O, and iodepth 1, are said nothing of."""
    body = ONE.replace("workload: {rw: randread, runtime: 1s}",
                       "workload: {rw: randread, runtime: 1s, iodepth: [1, 8, 32], "
                       "ioengine: [psync, libaio, sync, vsync]}")
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, body)))
    said = " ".join(out.split())
    assert code == 0, err
    assert "⚠ iodepth 8, 32 with ioengine psync: a sync engine keeps one I/O a job in flight (fio caps its queue " \
        "depth at 1), so those cases measure what iodepth 1 does; numjobs or clients add load, or use libaio or " \
        "io_uring" in said, said
    assert "⚠ iodepth 8, 32 with ioengine sync:" in said and "with ioengine libaio" not in said
    # vsync too: fio caps its queue depth at 1, so it has no adjacent I/Os queued to merge (fio 3.33, 4k direct:
    # randread 7,878 IOPS at iodepth 1, 8,154 at 8; sequential read 7,956 and 8,073, the disk's reads alike; the same
    # 121-125 µs), as the search's check and the bottleneck rules take it
    assert "⚠ iodepth 8, 32 with ioengine vsync:" in said, said
    assert "buffered" not in said
    buffered = body.replace("ioengine: [psync, libaio, sync, vsync]", "ioengine: libaio, direct: [true, false]")
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, buffered)))
    said = " ".join(out.split())
    assert code == 0 and said.count("⚠") == 1, said
    assert "⚠ iodepth 8, 32 with libaio and direct: false: Linux submits buffered libaio one I/O at a time" in said
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, ONE)))
    assert code == 0 and "⚠" not in out, out


def test_export_says_its_formats_and_default(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "export", "--help")  # main turns argparse's exit into a status
    assert code == 0 and "json (default), csv, markdown or parquet" in " ".join(out.split()), out


def test_a_misspelt_option_is_named_by_its_command_with_the_option_meant(capsys: pytest.CaptureFixture[str]) -> None:
    """argparse's top-level parser said "unrecognized arguments: --formt json (hint: storbench --help)"; the
    command's own parser says it, with its --help and the option that was meant."""
    code, _, err = run_cli(capsys, "show", "--formt", "json")
    assert code == 2 and err.strip() == ("storbench show: error: unrecognized arguments: --formt json; did you mean "
                                         "'--format'? (hint: storbench show --help)"), err
    code, _, err = run_cli(capsys, "export", "--formt=csv")
    assert code == 2 and "did you mean '--format'? (hint: storbench export --help)" in err, err
    code, _, err = run_cli(capsys, "show", "--bogus")  # nothing close: no guess (the dashes alone matched '--cost')
    assert code == 2 and err.strip() == "storbench show: error: unrecognized arguments: --bogus (hint: storbench " \
        "show --help)", err


TWO = """
name: two
targets:
  t: {{kind: path, path: ./data, size: {size}}}
workload: {{rw: randread, bs: {bs}, runtime: 1s, direct: false}}
repeat: 2
"""


def run_two(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *,
            rw: str = "randread", repeat: int = 2) -> str:
    """TWO at bs 4k and 8k run into r.db, in ``tmp_path`` made the current directory; the run's output."""
    monkeypatch.chdir(tmp_path)
    plan = write_plan(tmp_path, TWO.format(size="1MiB", bs="[4k, 8k]").replace("rw: randread", f"rw: {rw}")
                      .replace("repeat: 2", f"repeat: {repeat}"))
    code, out, err = run_cli(capsys, "run", str(plan), "--db", "r.db")
    assert code == 0, out + err
    return out


@pytest.fixture(scope="module")
def three_rw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TWO with reads, writes and a mix, at bs 4k and 8k, twice each, run once for the tests that only read it:
    the directory holding r.db."""
    from storbench.cli import main

    work = tmp_path_factory.mktemp("three-rw")
    plan = write_plan(work, TWO.format(size="1MiB", bs="[4k, 8k]").replace("rw: randread",
                                                                           "rw: [randread, randwrite, randrw]"))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)
        assert main(["run", str(plan), "--db", "r.db"]) == 0
    return work


@pytest.mark.fio
def test_resume_refuses_a_changed_plan_and_records_added_points_as_a_new_version(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    monkeypatch.chdir(tmp_path)
    plan = write_plan(tmp_path, TWO.format(size="1MiB", bs="4k"))
    code, out, err = run_cli(capsys, "run", str(plan), "--db", "r.db")
    assert code == 0, out + err
    # the same name, a hidden field changed: the stored cases are not this plan's
    changed = write_plan(tmp_path, TWO.format(size="2MiB", bs="4k"), "changed.yaml")
    code, out, err = run_cli(capsys, "run", str(changed), "--db", "r.db", "--resume")
    assert code == 2 and "plan 'two' changed since run 1: 1 of the 1 cases it stored are not in this plan" in err
    assert "without --resume" in err and len(err.strip().splitlines()) == 1, err
    with sqlite3.connect("r.db") as conn:
        assert conn.execute("SELECT COUNT(*) FROM repetitions").fetchone()[0] == 2
        assert "size: 1MiB" in conn.execute("SELECT plan_text FROM runs").fetchone()[0]  # not overwritten
    # new points beside unchanged ones: the run goes on, as a new version of its plan
    grown = write_plan(tmp_path, TWO.format(size="1MiB", bs="[4k, 8k]"), "grown.yaml")
    code, out, err = run_cli(capsys, "run", str(grown), "--db", "r.db", "--resume")
    assert code == 0 and "run 1: plan version 2 adds 1 new points" in out, out + err
    assert "2 repetitions run, 2 already stored" in out
    with sqlite3.connect("r.db") as conn:
        versions = conn.execute("SELECT version, plan_text FROM plan_versions WHERE run_id = 1").fetchall()
    assert [v for v, _ in versions] == [1, 2] and "[4k, 8k]" in versions[1][1] and "[4k, 8k]" not in versions[0][1]


@pytest.mark.fio
def test_an_interrupted_run_says_it_is_incomplete_and_how_to_finish_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from storbench.execute.local import LocalExecutor

    monkeypatch.chdir(tmp_path)
    plan = write_plan(tmp_path, TWO.format(size="1MiB", bs="[4k, 8k]"))
    original = LocalExecutor.run_case
    calls = []

    def interrupted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    monkeypatch.setattr(LocalExecutor, "run_case", interrupted)
    code, out, err = run_cli(capsys, "run", plan.name, "--db", "r.db")  # the plan as given: relative
    assert code == 130, out + err
    monkeypatch.setattr(LocalExecutor, "run_case", original)
    # the plan's whole path: the hint is read from wherever `show` runs
    finish = f"finish it with `storbench run {plan} --db r.db --resume 1`"
    code, out, err = run_cli(capsys, "show", "--db", "r.db")
    assert code == 0, err
    said = " ".join(out.split())
    assert f"run 1 is incomplete: 1 of 4 repetitions done (interrupted, or still running); {finish}" in said
    # the Markdown and the report say it too (they had left it out)
    code, out, err = run_cli(capsys, "show", "--db", "r.db", "--format", "markdown")
    assert code == 0 and "run 1 is incomplete: 1 of 4 repetitions done" in out, out + err
    assert f"storbench run {plan} --db r.db --resume 1" in out, out  # (its backquotes escaped for Markdown)
    code, out, err = run_cli(capsys, "report", "--db", "r.db", "-o", "r.html")
    assert code == 0 and "run 1 is incomplete: 1 of 4 repetitions done" in Path("r.html").read_text(), err
    # running the plan again without --resume says so before starting another run
    code, out, err = run_cli(capsys, "run", str(plan), "--db", "r.db")
    assert code == 0 and "run 1 is incomplete: 1 of 4 repetitions done" in out and "starting a new run" in out
    code, out, err = run_cli(capsys, "show", "--db", "r.db")
    assert "incomplete" not in out  # run 2, the latest, is complete
    code, out, err = run_cli(capsys, "run", str(plan), "--db", "r.db", "--resume")  # resumes run 2: nothing left
    assert code == 0 and "0 repetitions run, 4 already stored" in out, out


@pytest.mark.parametrize("targets", [
    "a: {kind: path, path: ./data, size: 1MiB}\n  b: {kind: path, path: data/, size: 2MiB}",
    "a: {kind: path, path: /srv/x, size: 1MiB}\n  b: {kind: cephfs, path: /srv/./x, size: 1MiB}",
])
def test_two_targets_on_one_directory_are_refused(targets: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, f"name: twice\ntargets:\n  {targets}\nworkload: {{rw: randread}}\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and "targets 'a' and 'b' are the same directory" in err, err
    assert len(err.strip().splitlines()) == 1


def test_report_images_into_an_existing_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "taken").write_text("mine")
    code, _, err = run_cli(capsys, "report", "--db", str(tmp_path / "none.db"), "--images", str(tmp_path / "taken"))
    assert code == 2 and "exists and is not a directory" in err and len(err.strip().splitlines()) == 1, err
    assert (tmp_path / "taken").read_text() == "mine"


@pytest.mark.fio
def test_runs_closing_table_says_what_show_says(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """One source for both: the table, verdicts, warnings and notes under it (drift, steady state, ...)."""
    # drift is rare in a 4-second run: stand in for the statistics, so the line under the table is certain
    monkeypatch.setattr("storbench.report.show_export.drift_lines",
                        lambda observations, run_ids: [f"⚠ run {run_ids[0]}: read IOPS drifted (stand-in)"])
    ran = run_two(tmp_path, capsys, monkeypatch)
    assert "⚠ run 1: read IOPS drifted (stand-in)" in ran
    code, shown, err = run_cli(capsys, "show", "--db", "r.db", "--run", "1")
    assert code == 0, err

    def body(text: str) -> list[str]:
        lines = text.splitlines()
        start = next(i for i, line in enumerate(lines) if "run 1" in line and "r.db" in line)  # the title
        return [line for line in lines[start + 1:] if "repetitions run," not in line]

    assert body(ran) == body(shown) and len(body(shown)) > 5


def test_exports_write_numbers_people_can_read() -> None:
    from storbench.report.export import csv_number, markdown_number

    assert markdown_number(1_795_410_123.0) == "1795410123"  # was 1.79541e+09: digits lost
    assert markdown_number(3.14159265) == "3.14159" and markdown_number(-12.5) == "-12.5"
    assert markdown_number(0.000123456) == "0.000123456"
    assert csv_number(0.37699999999999995) == "0.377" and csv_number(1e-9) == "1e-09"
    assert float(csv_number(123456.789012345)) == pytest.approx(123456.789012345, rel=1e-11)
    assert csv_number(1796028036.946) == "1796028036.946"  # an epoch time keeps its milliseconds (12 digits: .95)


@pytest.mark.fio
def test_compare_and_show_say_what_they_cannot_do_and_write_tables_to_files(
        three_rw: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(three_rw)
    code, _, err = run_cli(capsys, "compare", "--db", "r.db", "--baseline", "bs=4k", "--candidate", "bs=4096")
    assert code == 2 and "select the same results" in err, err  # not a comparison that says +0.0 %
    code, _, err = run_cli(capsys, "compare", "--db", "r.db", "--baseline", "bs=4k", "--candidate", "bs=8k",
                           "--where", "iodepth=64")
    assert code == 2 and "--where iodepth=64 matches no results" in err and "--baseline" not in err, err
    code, _, err = run_cli(capsys, "compare", "--db", "r.db", "--baseline", "rw=randread", "--candidate",
                           "rw=randwrite")
    assert code == 2 and "no point in common" in err and "reads and writes never compare" in err, err
    code, out, err = run_cli(capsys, "compare", "--db", "r.db", "--baseline", "bs=4k", "--candidate", "bs=8k",
                             "-o", "cmp.txt")
    assert code == 0, err
    written = (three_rw / "cmp.txt").read_text()
    assert "bs=4k" in written and "bs=8k" in written and "IOPS" in written and "\x1b[" not in written
    code, out, err = run_cli(capsys, "show", "--db", "r.db", "-o", "show.txt")
    assert code == 0 and "randwrite" in (three_rw / "show.txt").read_text() and "randwrite" not in out


def test_points_that_differ_only_in_a_field_not_shown_are_told_apart() -> None:
    from storbench.model import Case, PathTarget, WorkloadPoint
    from storbench.report.labels import distinct_texts, hidden_texts, varying_case_texts

    def case(case_id: str, **changes: object) -> Case:
        fields: dict[str, object] = dict(rw="randread", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=1.0,
                                         ramp_s=0.0, direct=True, ioengine="libaio")
        return Case(case_id, PathTarget("t", path="/d", size_bytes=1 << 20),
                    WorkloadPoint(**{**fields, **changes}))  # type: ignore[arg-type]

    cases = [case("a"), case("b", ioengine="psync"), case("c", fio_options=(("rate_iops", "100"),))]
    assert varying_case_texts(cases) == {"a": "ioengine=libaio", "b": "ioengine=psync",
                                         "c": "ioengine=libaio rate_iops=100"}
    assert varying_case_texts(cases[:1]) == {"a": ""}  # one point: nothing to tell apart
    told = distinct_texts([hidden_texts(c.workload) for c in (case("x", size_bytes=1 << 20),
                                                              case("y", size_bytes=2 << 20, direct=False))])
    assert told == [(("direct", "direct=1"), ("size_bytes", "size=1m")),
                    (("direct", "direct=0"), ("size_bytes", "size=2m"))]


@pytest.mark.fio
def test_an_ioengine_sweep_reads_apart_in_progress_show_and_verdicts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    plan = write_plan(tmp_path, ONE.replace("workload: {rw: randread, runtime: 1s}",
                                            "workload: {rw: randread, runtime: 1s, ioengine: [psync, libaio]}"))
    code, out, err = run_cli(capsys, "run", str(plan), "--db", "r.db")
    assert code == 0, out + err
    assert "ioengine=psync #1:" in out and "ioengine=libaio #1:" in out  # progress lines
    code, shown, err = run_cli(capsys, "show", "--db", "r.db")
    assert code == 0 and "varies" in shown and "ioengine=psync" in shown and "ioengine=libaio" in shown, shown
    verdicts = [line for line in shown.splitlines() if line.startswith("  t randread")]
    assert len(verdicts) == 2 and len({line.split(":")[0] for line in verdicts}) == 2, verdicts


@pytest.mark.fio
def test_where_takes_commas_column_names_durations_and_names_unknown_targets(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    run_two(tmp_path, capsys, monkeypatch, repeat=1)

    def exported(*where: str) -> list[dict[str, object]]:
        code, text, err = run_cli(capsys, "export", "--db", "r.db", "--format", "json", *where)
        assert code == 0, err
        return list(json.loads(text))

    assert [r["bs_bytes"] for r in exported("--where", "bs=8k,qd=1")] == [8192]  # commas, a column name
    assert len(exported("--where", "runtime_s=1s", "--where", "size_bytes=1MiB")) == 2  # durations, sizes
    assert len(exported("--where", "runtime=1000ms")) == 2
    code, _, err = run_cli(capsys, "export", "--db", "r.db", "--where", "runtime_s=2s")  # none: said, as show says
    assert code == 2 and "no results match runtime_s=2s; stored values: 1s" in err, err
    code, _, err = run_cli(capsys, "export", "--db", "r.db", "--where", "iodeptj=1")
    assert code == 2 and "did you mean 'iodepth'?" in err and err.count(",") < 5, err  # no list of 60 fields
    code, _, err = run_cli(capsys, "show", "--db", "r.db", "--target", "nvme")
    assert code == 2 and "no target 'nvme'" in err and "targets: t" in err, err
    code, _, err = run_cli(capsys, "compare", "--db", "r.db", "--baseline", "qd=1,bs=4k", "--candidate",
                           "qd=1,bs=8k")
    assert code == 0, err


@pytest.mark.fio
def test_imports_of_fios_default_json_plus_get_percentiles_from_completion_latency(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import json
    import shutil as sh
    import subprocess

    fio = sh.which("fio")
    assert fio is not None
    monkeypatch.chdir(tmp_path)
    done = subprocess.run([fio, "--name=j", f"--filename={tmp_path / 'f'}", "--size=1m", "--rw=randread",
                           "--runtime=1", "--time_based", "--output-format=json+", "--output=out.json"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    raw = json.loads((tmp_path / "out.json").read_text())["jobs"][0]["read"]
    assert "bins" in raw["clat_ns"] and "bins" not in raw["lat_ns"]  # fio's default: total latency has none
    code, out, err = run_cli(capsys, "import", "out.json", "--db", "r.db")
    assert code == 0, out + err
    code, text, err = run_cli(capsys, "export", "--db", "r.db", "--format", "json")
    record = json.loads(text)[0]
    assert record["lat_percentiles_from"] == "clat" and record["lat_p99_ns"] == record["clat_p99_ns"] is not None
    code, shown, err = run_cli(capsys, "show", "--db", "r.db")
    assert code == 0 and "p95 and p99 of 1 point are completion latency (clat)" in " ".join(shown.split())


@pytest.mark.parametrize(("workload", "target", "says"), [
    ("{rw: randread}", "{kind: path, dir: ./d, size: 1MiB}", "unknown key 'dir' (hint: known keys: kind, path"),
    ("{rw: randread, iodepth: 0}", "{kind: path, path: ./d, size: 1MiB}", "got 0 (hint: give at least 1)"),
])
def test_plan_errors_name_the_wrong_key_and_say_what_to_give(workload: str, target: str, says: str, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, f"name: x\ntargets:\n  t: {target}\nworkload: {workload}\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def test_a_program_that_is_not_fio_is_named_in_one_short_line(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, ONE)), "--fio", "/bin/true")
    assert code == 2 and "/bin/true does not look like fio" in err and "Copyright" not in err, err
    assert len(err.strip().splitlines()) == 1 and len(err) < 300


def test_local_runs_show_no_ceph_or_network_columns_from_other_processes() -> None:
    from dataclasses import dataclass

    from storbench.report.tables import telemetry_columns
    from storbench.stats.estimate import estimate

    @dataclass
    class Point:  # the parts of a PointSummary the columns look at
        target_kind: str
        clients: int = 1
        lab: tuple[tuple[str, str], ...] = ()

        def metric(self, field: str) -> object:  # a Ceph lab left running beside: busy OSDs, a busy bridge
            return estimate([1.5, 1.7]) if field in ("ceph_osd_cpu_cores", "net_busiest_util_pct") else None

    local = [h for h, _, _ in telemetry_columns([Point("path")])]  # type: ignore[list-item]
    assert "osd cores" not in local and "net %" not in local
    ceph = [h for h, _, _ in telemetry_columns([Point("rbd")])]  # type: ignore[list-item]
    assert "osd cores" in ceph and "net %" in ceph
    many = [h for h, _, _ in telemetry_columns([Point("path", clients=8)])]  # type: ignore[list-item]
    assert "net %" in many and "osd cores" not in many


def test_columns_go_least_essential_first_until_the_table_fits() -> None:
    from storbench.report.tables import fit_columns

    widths, priorities = [6, 8, 5, 9, 7], [0, 3, 0, 1, 3]
    assert fit_columns(widths, priorities, None) == [0, 1, 2, 3, 4]
    assert fit_columns(widths, priorities, 200) == [0, 1, 2, 3, 4]
    assert fit_columns(widths, priorities, 40) == [0, 2, 3]  # both priority-3 columns go, rightmost first
    assert fit_columns(widths, priorities, 47) == [0, 1, 2, 3]
    assert fit_columns(widths, priorities, 10) == [0, 2]  # the essential ones stay, whatever the width


def test_a_million_iops_with_warnings_still_fits_80_columns_with_its_interval_as_a_share() -> None:
    """The essential columns alone can be wider than 80 (a page-cache read at 1.3 M IOPS ± 758,917, and the
    warning column): the interval is then given as a share of the mean and the warning beside the verdict, never
    cut at the terminal's edge (a fresh-clone run once lost the table's right edge, and its warning marks)."""
    from rich.console import Console

    from storbench.report.tables import results_table
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    observations = [observation(case_id=f"c-{rw}", repeat=i, rw=rw, direction="write" if rw == "randwrite" else "read",
                                iops=iops, target="target", lat_p99_ns=1_234_567)
                    for rw in ("randwrite", "randread")
                    for i, iops in enumerate((1_234_567.0, 1_634_567.0, 1_034_567.0))]
    points = summarize_points(observations)
    assert all(p.warnings for p in points)
    narrow = Console(width=80, record=True)
    narrow.print(results_table(points, "t", width=80))
    lines = narrow.export_text().splitlines()
    assert max(len(line) for line in lines) <= 80
    assert all(line.endswith(("┓", "┃", "┩", "│", "┘")) for line in lines[1:])  # the right edge is there
    assert " verdict " in lines[2] and "1,301,234 ± 58%" in lines[4] and lines[4].endswith("? ⚠     │")
    wide = Console(width=200, record=True)
    wide.print(results_table(points, "t", width=200))
    text = wide.export_text()
    assert "1,301,234 ± 758,917" in text and "┃ ! ┃" in text


@pytest.mark.fio
def test_show_fits_an_80_column_terminal_without_cutting_a_number(
        three_rw: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(three_rw)
    monkeypatch.setenv("COLUMNS", "80")
    code, shown, err = run_cli(capsys, "show", "--db", "r.db")
    assert code == 0, err
    table = [line for line in shown.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and max(len(line) for line in table) <= 80, "\n".join(table)
    header = next(line for line in table if "IOPS" in line)
    for column in ("target", "rw", "bs", "dir", "n", "IOPS ± 95% CI", "p99", "verdict"):
        assert f" {column} " in header, header
    assert "…" not in shown  # nothing cut
    code, wide, err = run_cli(capsys, "show", "--db", "r.db", "--wide")
    assert "p99.9" in wide and "p99.9" not in header


def test_a_long_lab_label_wraps_at_80_columns_rather_than_push_numbers_off() -> None:
    """A sweep of a lab setting (osd_heartbeat_grace, out_of_service_after) makes the lab label essential (it tells
    the rows apart) and long: at 80 columns it wraps in its cell, and every number and the verdict stay on screen
    (the table had been cut at the terminal's edge, p99 and the verdict gone)."""
    from rich.console import Console

    from storbench.report.tables import results_table
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    seen = [observation(case_id=f"c{grace}", lab=f"lab=ceph osd_heartbeat_grace={grace}", repeat=r,
                        iops=800.0 + 10 * r + grace) for grace in (20, 6) for r in range(3)]
    console = Console(record=True, width=80)
    console.print(results_table(summarize_points(seen), "grace", width=80))
    lines = [line.rstrip() for line in console.export_text().splitlines() if line[:1] in "┏┃┡│└"]
    assert max(len(line) for line in lines) <= 80 and lines[0].endswith("┓"), "\n".join(lines)
    text = "\n".join(lines)
    assert "830 ± 3.0%" in text and "816 ± 3.0%" in text and " verdict " in text, text


def test_a_plan_path_that_is_a_directory_or_not_utf8_says_what_to_give(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "plan", str(tmp_path))
    assert code == 2 and "is a directory, not a plan file" in err and "example quickstart" in err, err
    latin = tmp_path / "latin1.yaml"
    latin.write_bytes("name: caf\xe9\n".encode("latin-1"))
    code, _, err = run_cli(capsys, "plan", str(latin))
    assert code == 2 and "not UTF-8 text (byte 9)" in err and "hint: save the plan as UTF-8" in err, err
    assert len(err.strip().splitlines()) == 1 and "codec" not in err


def test_a_plan_path_that_is_no_regular_file_is_refused_without_reading_it(tmp_path: Path,
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`storbench plan /dev/zero` had read on until memory ran out, a FIFO had hung it, a disk would be read
    whole: only a regular file is a plan, and no more of it than a plan may hold is read."""
    import os

    fifo = tmp_path / "plan.fifo"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo)):
        code, _, err = run_cli(capsys, "plan", path)
        assert code == 2 and f"{path} is not a plan file (not a regular file)" in err, err
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as handle:
        handle.truncate(1 << 40)  # sparse: 1 TiB that reads as zeros
    code, _, err = run_cli(capsys, "plan", str(huge))
    assert code == 2 and "plan refused: it is larger than 256 KiB" in err, err


@pytest.mark.parametrize(("target", "refused"), [
    ("{kind: path, path: ./data, size: 1MiB}", True),
    ("{kind: nfs, size: 1GiB, url: 'nfs://server/export'}", True),
    ("{kind: block, device: /dev/nvme0n1, destructive: true}", False),
])
def test_trims_go_to_block_devices_not_files(target: str, refused: bool, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`rw: randtrim` on a file had passed `plan`, then failed every repetition (fio's discard is a block
    device's ioctl: error 25)."""
    plan = write_plan(tmp_path, f"name: t\ntargets:\n  d: {target}\nworkload: {{rw: [read, randtrim]}}\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    said = "rw: randtrim on target 'd'"
    assert (code == 2 and said in err and "fio trims a block device or an RBD image" in err) if refused \
        else said not in err, err


@pytest.mark.parametrize(("written", "hint"), [
    ("workload: {rw: read, blocksize: 8k}", "did you mean 'bs'? (blocksize is workload.bs here)"),
    ("workload: {rw: read, block_size: 8k}", "did you mean 'bs'? (block_size is workload.bs here)"),
    ("workload: {rw: read, ramp_time: 2s}", "did you mean 'ramp'? (ramp_time is workload.ramp here)"),
    ("workload: {rw: read, qd: 4}", "did you mean 'iodepth'? (qd is workload.iodepth here)"),
    ("workload: {rw: read, iodepht: 4}", "did you mean 'iodepth'?"),
    ("iodepth: 4\nworkload: {rw: read}", "it belongs under workload: workload.iodepth"),
])
def test_a_workload_key_under_fios_name_is_pointed_to_storbenchs(written: str, hint: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`blocksize` had been pointed to `size` (taken, a 64 KiB file at the default block size), `ramp_time` to
    `runtime`, `qd` to nothing: fio's names and a table's lead to the key storbench has for them."""
    plan = write_plan(tmp_path, f"name: t\ntargets:\n  d: {{kind: path, path: ./data, size: 1MiB}}\n{written}\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and f"(hint: {hint})" in err and len(err.strip().splitlines()) == 1, err


def test_an_empty_storbench_db_is_as_unset(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """`STORBENCH_DB=` (set, empty) had read "error:  is a directory, not a results database"."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STORBENCH_DB", "")
    code, _, err = run_cli(capsys, "show")
    assert code == 2 and "no results database results.db" in err, err


@pytest.mark.parametrize("written", ["iodepth: true", "iodepth: [1, true]", "numjobs: false"])
def test_yaml_yes_or_no_is_no_number(written: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """pydantic's lax mode had read `iodepth: true` as 1 and run it; a flag (`direct: false`) still reads."""
    plan = write_plan(tmp_path, f"name: t\ntargets:\n  d: {{kind: path, path: ./data, size: 1MiB}}\n"
                                f"workload: {{rw: read, direct: false, {written}}}\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and "is not a whole number" in err and len(err.strip().splitlines()) == 1, err


def test_yaml_numbers_are_yaml_1_2s(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """YAML 1.1 read `016` as octal 14 and `1:30` as 90 (base 60): a sweep planned 14 and 26 for 016 and 032."""
    from storbench.config import load_plan_text
    from storbench.plan import expand

    text = ("name: t\ntargets:\n  d: {kind: path, path: ./data, size: 1MiB}\n"
            "workload: {rw: read, iodepth: [01, 08, 016, 032, 0o100, 0x80], runtime: 1s}\n")
    cases = expand(load_plan_text(text, "plan.yaml"))
    assert sorted(case.workload.iodepth for case in cases) == [1, 8, 16, 32, 64, 128]
    plan = write_plan(tmp_path, text.replace("[01, 08, 016, 032, 0o100, 0x80]", "1:30"))
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and "workload.iodepth" in err and "1:30" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(("written", "said"), [
    ("  d: {kind: path, path: '', size: 1MiB}\nworkload: {rw: read}", "targets.d.path: it is empty: give a value"),
    ("  1: {kind: path, path: ./data, size: 1MiB}\nworkload: {rw: read}",
     "targets[1]: the name 1 is a number, and a name is text (hint: quote it: '1')"),
    ("  d: {kind: path, path: ./data, size: 1MiB}\nworkload: {rw: read, runtime: 2024-01-01}",
     "expected a duration such as 5s or 500ms, got '2024-01-01'"),
    ("  d: {kind: path, path: ./data, size: 1MiB}\nworkload: {rw: read}\nexclude: {rw: read}",
     "(hint: make it a list: exclude: [{rw: read}])"),
    ("  d: {kind: path, path: ./data, size: 1MiB}\nworkload: {rw: read}\ntags: nightly",
     "(hint: make it a list: tags: [nightly])"),
    ("  d: {kind: path, path: ./data, size: 1MiB}\nworkload: {rw: read, bs: [4k, 4k]}",
     "4096 is listed twice (hint: list each value once)"),
    ("  d: {kind: path, path: ./data, size: 1MiB}\nworkload: {rw: read, iodepth: .inf}", "(hint: e.g. 4)"),
])
def test_a_bad_value_is_said_as_written_with_a_hint(written: str, said: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """An empty path had "characters storbench will not pass to fio", a numeric target name "expected text, got
    {'kind': ...}" with a wrong hint, a date "datetime.date(2024, 1, 1)"; a list, a duplicate and .inf no hint."""
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, f"name: t\ntargets:\n{written}\n")))
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err


def test_trims_a_plan_excludes_from_its_file_target_are_no_refusal(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The trim rule had ignored `exclude`: a plan whose randtrim on its file target is excluded was refused."""
    plan = write_plan(tmp_path, "name: t\ntargets:\n  d: {kind: path, path: ./data, size: 1MiB}\n"
                                "workload: {rw: [read, randtrim]}\nexclude: [{target: d, rw: randtrim}]\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert "fio trims a block device" not in err and code == 0, err
