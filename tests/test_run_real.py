"""End to end with the real fio on small files: run, store, show, export, import."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import zlib
from pathlib import Path

import pytest

from helpers import inside, repetition_rows, run_cli, write_plan
from storbench.records import RECORD_FIELDS

pytestmark = pytest.mark.fio

PLAN = """
name: tiny
targets:
  scratch: {kind: path, path: ./data, size: 8MiB}
workload:
  rw: [randread, randrw]
  rwmixread: 70
  bs: [4k, 64k]
  iodepth: 4
  numjobs: 2
  runtime: 1s
  direct: true
repeat: 2
exclude:
  - {rw: randrw, bs: 64k}
"""
REQUIRED = ["case_id", "run_id", "target", "rw", "bs", "iodepth", "numjobs", "repeat", "direction", "status",
            "iops", "bw_bytes_per_s", "lat_mean_ns", "lat_p50_ns", "lat_p95_ns", "lat_p99_ns", "lat_p999_ns",
            "cpu_usr_pct", "cpu_sys_pct"]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:

    from storbench.cli import main

    work = tmp_path_factory.mktemp("run")
    plan = write_plan(work, PLAN)
    with inside(work):
        assert main(["run", str(plan), "--db", str(work / "r.db")]) == 0
    return work, work / "r.db"


def test_show_raw_gives_each_repetitions_exact_job_file_which_fio_reads_as_it_is(
        finished_run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """The job text, command, fio output and stderr were stored with every repetition and no command showed them:
    `show --raw` gives them, repetition by repetition, after '#' lines fio reads as comments."""
    import shutil
    import subprocess

    from storbench.store import open_store

    work, db = finished_run
    code, out, err = run_cli(capsys, "show", "--db", str(db), "--raw", "job")
    assert code == 0, err
    assert out.count("# run 1, case ") == 6 and out.count("[global]") == 6
    store = open_store(db, read_only=True)
    stored = {(r.case.case_id, r.rep_index): r for r in store.repetitions([1])}
    store.close()
    (case_id, rep_index), rep = sorted(stored.items())[-1]
    code, out, err = run_cli(capsys, "show", "--db", str(db), "--raw", "job", "--where", f"case_id={case_id}",
                             "--where", f"repeat={rep_index + 1}")
    assert code == 0, err
    head, _, job = out.partition("\n")
    assert head == f"# run 1, case {case_id}, repetition {rep_index + 1} (ok): scratch {rep.case.workload.rw} " \
        f"{rep.case.workload.bs_bytes // 1024}k qd={rep.case.workload.iodepth} jobs={rep.case.workload.numjobs}"
    assert job.rstrip("\n") == rep.job_text.rstrip("\n")  # the exact job file
    single = work / "one.fio"
    single.write_text(out)
    parsed = subprocess.run([shutil.which("fio") or "fio", "--parse-only", str(single)], capture_output=True,
                            text=True, timeout=30, cwd=work)
    assert parsed.returncode == 0, parsed.stderr
    code, out, _ = run_cli(capsys, "show", "--db", str(db), "--raw", "command", "--where", f"case_id={case_id}")
    assert code == 0 and out.count("--output-format=json+") == 2, out
    code, out, _ = run_cli(capsys, "show", "--db", str(db), "--raw", "output", "--where", f"case_id={case_id}")
    assert code == 0 and out.count('"fio version"') == 2
    code, _, err = run_cli(capsys, "show", "--db", str(db), "--raw", "job", "--format", "json")
    assert code == 2 and "--format json is for the results table" in err and len(err.strip().splitlines()) == 1


def test_fio_texts_escape_what_a_crafted_database_holds_and_say_what_is_not_stored() -> None:
    from storbench.model import Status
    from storbench.report.provenance import RepetitionTexts, fio_texts
    from synthetic import observation

    case = observation(case_id="c1", target="disk").case
    item = RepetitionTexts(run_id=3, case=case, rep_index=0, status=Status.FAILED, error="fio exited 1\x1b]0;x\x07",
                           job_text="", command=("fio", "a b.fio"), output="\x1b[2Jcleared\n", stderr="")
    assert fio_texts([item], "job").splitlines() == [
        "# run 3, case c1, repetition 1 (failed): disk randread 4k qd=1 jobs=1",
        "# error: fio exited 1\\x1b]0;x\\x07",
        "# no job file (an imported repetition keeps none) stored for this repetition"]
    assert fio_texts([item], "command").splitlines()[-1] == "fio 'a b.fio'"
    assert fio_texts([item], "output").splitlines()[-1] == "\\x1b[2Jcleared"
    assert "\x1b" not in fio_texts([item], "output") + fio_texts([item], "stderr")


def test_every_repetition_is_stored_once_and_ok(finished_run: tuple[Path, Path]) -> None:
    _work, db = finished_run
    rows = repetition_rows(db)
    assert len(rows) == 3 * 2
    assert len({(c, r) for c, r, _ in rows}) == 6
    assert {s for _, _, s in rows} == {"ok"}
    # interleaved order: the second round runs the cases in reverse
    order = [c for c, _, _ in rows]
    assert order[:3] == list(reversed(order[3:]))


def test_provenance_is_kept(finished_run: tuple[Path, Path]) -> None:
    work, db = finished_run
    conn = sqlite3.connect(db)
    job_text, command_json, blob, fio_version = conn.execute(
        "SELECT job_text, command_json, fio_output_z, fio_version FROM repetitions LIMIT 1").fetchone()
    run = conn.execute("SELECT plan_text, host, kernel, fio_version FROM runs").fetchone()
    conn.close()
    assert "[global]" in job_text and f"directory={work / 'data'}" in job_text and "numjobs=2" in job_text
    command = json.loads(command_json)
    assert command[1] == "--output-format=json+" and command[2].startswith("--output=")
    raw = json.loads(zlib.decompress(blob))
    assert len(raw["jobs"]) == 2 and "bins" in raw["jobs"][0]["read"]["clat_ns"]
    assert fio_version.startswith("fio-3") and run[0] == PLAN and run[1] and run[2]
    # every repetition of a case ran with its own random seed (fio accepted it: the runs are ok)
    conn = sqlite3.connect(db)
    seeds = conn.execute("SELECT case_id, job_text FROM repetitions").fetchall()
    conn.close()
    by_case: dict[str, set[str]] = {}
    for case_id, text in seeds:
        by_case.setdefault(case_id, set()).add(next(ln for ln in text.splitlines() if ln.startswith("randseed=")))
    assert len(by_case) == 3 and all(len(s) == 2 for s in by_case.values())


def test_export_json_has_the_stable_fields(finished_run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _work, db = finished_run
    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    assert code == 0
    records = json.loads(out)
    # randread: 2 cases x 2 reps x 1 direction; randrw 4k: 1 case x 2 reps x 2 directions
    assert len(records) == 8
    for record in records:
        for name in REQUIRED:
            assert name in record
        assert record["status"] == "ok" and record["iops"] > 0 and record["bw_bytes_per_s"] > 0
        assert record["lat_p50_ns"] <= record["lat_p95_ns"] <= record["lat_p99_ns"] <= record["lat_p999_ns"]
        assert record["lat_min_ns"] <= record["lat_mean_ns"] <= record["lat_max_ns"]
    mixed = [r for r in records if r["rw"] == "randrw"]
    assert {r["direction"] for r in mixed} == {"read", "write"}
    bw_check = [r for r in records if r["rw"] == "randread"]
    for r in bw_check:
        assert r["bw_bytes_per_s"] == pytest.approx(r["iops"] * r["bs_bytes"], rel=0.02)


def test_export_csv_and_markdown_and_filters(finished_run: tuple[Path, Path],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    _work, db = finished_run
    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--format", "csv", "--where", "bs=64k")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 2 and {r["bs"] for r in rows} == {"64k"}
    assert list(rows[0]) == list(RECORD_FIELDS)
    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--format", "markdown", "--where", "direction=write")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("| case_id |") and len(lines) == 2 + 2


def test_show_prints_a_row_per_case_and_direction(finished_run: tuple[Path, Path],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _work, db = finished_run
    code, out, _ = run_cli(capsys, "show", "--db", str(db))
    assert code == 0
    body = [ln for ln in out.splitlines() if ln.startswith("│")]
    assert len(body) == 4  # randread 4k, randread 64k, randrw 4k read, randrw 4k write
    assert all("2/2" in ln for ln in body)
    code, out, _ = run_cli(capsys, "show", "--db", str(db), "--where", "rw=randread")
    assert code == 0 and len([ln for ln in out.splitlines() if ln.startswith("│")]) == 2
    code, _, err = run_cli(capsys, "show", "--db", str(db), "--where", "iodepht=4")
    assert code == 2 and "did you mean 'iodepth'?" in err and len(err.strip().splitlines()) == 1


def test_telemetry_beside_every_number(finished_run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Every repetition carries host CPU, the fio processes' CPU, the busiest device and a verdict."""
    _work, db = finished_run
    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    assert code == 0
    for record in json.loads(out):
        assert 0 < record["host_cpu_busy_pct"] <= 100
        # fio's own accounting of its two jobs, exact however short the run; /proc sampling saw the processes.
        # Exported, the cores are rounded to six significant digits and each percentage to two decimals (0.005
        # each way): their sum / 100 is within 1e-4 of the cores, and 1e-5 of them beside
        assert record["client_cpu_cores"] == pytest.approx((record["cpu_usr_pct"] + record["cpu_sys_pct"]) / 100,
                                                           abs=1e-4 + 1e-5 * record["client_cpu_cores"])
        assert record["client_cpu_cores"] > 0
        assert "fio" in record["process_cpu_cores"]
        assert record["disk_busiest"] and record["disk_busiest_util_pct"] > 0
    conn = sqlite3.connect(db)
    try:
        windows = conn.execute("SELECT t.window_end_s - t.window_start_s, r.finished_at_s - t.window_end_s"
                               " FROM telemetry t JOIN repetitions r ON r.id = t.repetition_id").fetchall()
        samples = conn.execute("SELECT COUNT(*) FROM telemetry_samples WHERE source = 'cpu'").fetchone()[0]
    finally:
        conn.close()
    assert len(windows) == 6 and samples > 0
    assert all(0.9 <= length <= 1.2 and gap == 0 for length, gap in windows), windows  # fio 1 s: ramp, layout out
    code, out, _ = run_cli(capsys, "show", "--db", str(db))
    header = next(ln for ln in out.splitlines() if "IOPS" in ln)
    assert "cpu %" in header and "disk %" in header and "verdict" in header
    verdicts = [ln for ln in out.splitlines() if ln.startswith("  scratch ")]
    assert len(verdicts) == 3  # one per case, directions together
    assert all(any(kind in ln for kind in ("-bound", "under-driven", "not saturated")) for ln in verdicts), out


def test_import_round_trip(finished_run: tuple[Path, Path], fixtures: Path, tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "imported.db"
    files = [str(fixtures / n) for n in ("randrw-numjobs2.jsonplus.json", "randread-plain.json",
                                         "randread-grouped-plain.json", "with-leading-text.txt")]
    code, out, _ = run_cli(capsys, "import", *files, "--db", str(db), "--target", "old-san")
    # with-leading-text.txt is randread-plain.json's fio report with fio's messages before it: one run, imported once
    assert code == 0 and "imported 3 repetitions of 3 cases" in out and "1 skipped as imported already" in out, out
    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    records = json.loads(out)
    assert {r["target"] for r in records} == {"old-san"}
    plain = [r for r in records if r["rw"] == "randread" and r["bs"] == "4k"]
    assert len(plain) == 1 and {r["repeat"] for r in plain} == {1}
    raw = json.loads((fixtures / "randread-plain.json").read_text())
    assert plain[0]["clat_p99_ns"] == raw["jobs"][0]["read"]["clat_ns"]["percentile"]["99.000000"]
    mixed = [r for r in records if r["rw"] == "randrw"]
    assert len(mixed) == 2 and all(r["lat_p99_ns"] for r in mixed)


def test_fio_notes_before_its_document_leave_the_repetition_ok(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """fio writes its notes to --output too ("note: both iodepth >= 1 and synchronous I/O engine ..." with
    thread=1; every job on fio 3.42 and later): the repetition is read, not judged unreadable."""
    plan = write_plan(tmp_path, "name: notes\ntargets:\n  d: {kind: path, path: ./d, size: 4MiB}\nworkload: {rw: "
                                "randread, ioengine: psync, iodepth: 4, runtime: 1s, direct: false,\n"
                                "  fio: {thread: 1}}\n")
    with inside(tmp_path):
        code, out, err = run_cli(capsys, "run", str(plan), "--db", "r.db")
    assert code == 0 and "3 repetitions run, 0 already stored, 0 failed" in out, out + err
    raw = zlib.decompress(sqlite3.connect(tmp_path / "r.db").execute(
        "SELECT fio_output_z FROM repetitions").fetchone()[0]).decode()
    assert raw.startswith("note: both iodepth >= 1 and synchronous I/O engine"), raw[:200]  # what fio wrote, kept


def test_a_failed_fio_says_what_it_wrote_before_its_document() -> None:
    from storbench.fio.outcome import judge_repetition

    said = judge_repetition(rw="randread", returncode=1, timed_out=False, timeout_s=10, stderr_tail="",
                            output_text="fio: pid=12, err=5/file:io_u.c:1889, func=io_u error, error=Input/output "
                            "error\n", started_at_s=0, finished_at_s=1, job_text="", command=("fio",),
                            fio_version="fio-3.33")
    assert said.error == "fio exited with status 1: fio: pid=12, err=5/file:io_u.c:1889, func=io_u error, " \
        "error=Input/output error", said.error


# What a plain `run` on a path must never load: each costs every run a tenth of a second or more (numpy 0.07-0.13 s,
# scipy 0.3 s, plotly and matplotlib more); histograms, statistics and the closing table do without them.
HEAVY_MODULES = ("numpy", "scipy", "plotly", "matplotlib")
MODULES_LOADED_BY_RUN = """
import runpy, sys
sys.argv = ["storbench", *sys.argv[1:]]
try:
    runpy.run_module("storbench", run_name="__main__")
except SystemExit as exc:
    code = exc.code
print("exit", code)
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""


def test_a_run_loads_no_heavy_module(tmp_path: Path) -> None:
    import subprocess
    import sys

    plan = write_plan(tmp_path, PLAN.split("exclude:")[0].replace("repeat: 2", "repeat: 1")
                      .replace("bs: [4k, 64k]", "bs: 4k").replace("rw: [randread, randrw]", "rw: randread"))
    done = subprocess.run([sys.executable, "-c", MODULES_LOADED_BY_RUN, "run", str(plan), "--db",
                           str(tmp_path / "r.db")], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    exit_line, modules = done.stdout.strip().splitlines()[-2:]
    assert exit_line == "exit 0", done.stdout + done.stderr
    assert "storbench" in modules.split() and "rich" in modules.split()  # the run did import and print
    assert sorted(set(modules.split()) & set(HEAVY_MODULES)) == []


@pytest.mark.parametrize("rw", ["stat", "delete"])
def test_stat_and_delete_cases_have_their_files_laid_out_without_an_operation(rw: str, tmp_path: Path) -> None:
    """stat and delete work on files fio lays out before it measures: a case with faults has them laid out first,
    as block I/O does (create and the metadata cycle make their files as they measure: not)."""
    from storbench.config import load_plan_text
    from storbench.execute.base import FioSetup
    from storbench.execute.local import LocalExecutor
    from storbench.fio.jobfile import METADATA_DIR, JobBinding, render_job
    from storbench.fio.layout import layout_job, lays_out_at_start
    from storbench.plan import expand

    data = tmp_path / "data"
    data.mkdir()
    (case,) = expand(load_plan_text(f"""
name: stat
targets:
  d: {{kind: path, path: {data}, size: 1MiB}}
workload: {{rw: {rw}, files: 30, file_size: 8k, numjobs: 2, runtime: 5s}}
""", "p.yaml"))
    (data / METADATA_DIR / rw).mkdir(parents=True)  # made by the run's claim on its directory
    binding = JobBinding(options=(("directory", str(data)), ("filename_format", "storbench.$jobnum.$filenum")))
    assert lays_out_at_start(case, binding)
    assert LocalExecutor("fio").lay_out(case, [layout_job(render_job(case, binding, 0))], 60, FioSetup()) == ""
    made = [p for p in data.rglob("*") if p.is_file()]
    # stat's at file_size; delete's empty (its job writes, and fio lays a written file out empty, as it would
    # at the repetition's start)
    assert len(made) == 60 and {p.stat().st_size for p in made} == {8 << 10 if rw == "stat" else 0}, made


def test_the_local_executor_lays_files_out_without_any_io(tmp_path: Path) -> None:
    """`lay_out` before a repetition with faults: fio's set-up alone (create_only) makes the files the job would
    make at its start, full size, and runs no I/O."""
    from dataclasses import replace

    from storbench.config import load_plan_text
    from storbench.execute.base import FioSetup
    from storbench.execute.local import LocalExecutor
    from storbench.execute.supervisor import FioProcessResult
    from storbench.fio.jobfile import JobBinding, render_job
    from storbench.fio.layout import layout_job
    from storbench.plan import expand

    data = tmp_path / "data"
    data.mkdir()
    text = PLAN.split("exclude:")[0].replace("bs: [4k, 64k]", "bs: 4k").replace("rw: [randread, randrw]",
                                                                                "rw: randread")
    (case,) = expand(load_plan_text(text, "p.yaml"))
    binding = JobBinding(options=(("directory", str(data)), ("filename_format", "storbench.$jobnum.$filenum")))
    ran: list[FioProcessResult] = []

    class Recording(LocalExecutor):
        def run(self, *args: object, **kwargs: object) -> FioProcessResult:
            ran.append(super().run(*args, **kwargs))  # type: ignore[arg-type]
            return ran[-1]

    # the plan's startdelay does not hold the layout up (it would outlast the layout's 20 s watchdog)
    delayed = replace(case, workload=replace(case.workload, fio_options=(("startdelay", "40s"),)))
    assert Recording("fio").lay_out(delayed, [layout_job(render_job(delayed, binding, 0))], 20, FioSetup()) == ""
    assert sorted(p.name for p in data.iterdir()) == ["storbench.0.0", "storbench.1.0"]  # numjobs: 2
    assert all(p.stat().st_size == 8 << 20 for p in data.iterdir())
    (result,) = ran
    jobs = json.loads(result.output_text[result.output_text.index("{"):])["jobs"]
    assert result.returncode == 0 and len(jobs) == 2
    assert [(job["read"]["io_bytes"], job["write"]["io_bytes"]) for job in jobs] == [(0, 0), (0, 0)]


def test_a_run_whose_plan_names_a_comparison_ends_with_it(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The question a plan is run to answer (`compare:`, with a fixed repeat) is the run's last table, as `storbench
    compare` prints it: each change with its interval, paired within the run."""
    plan = write_plan(tmp_path, PLAN.split("exclude:")[0].replace("rw: [randread, randrw]", "rw: randread")
                      .replace("numjobs: 2", "numjobs: 1")
                      + "compare: {baseline: bs=4k, candidate: bs=64k}\n")
    with inside(tmp_path):
        code, out, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"))
    assert code == 0, out + err
    words = " ".join(out.split())
    results, _, asked = words.partition("the comparison the plan of run 1 asks (compare: baseline bs=4k, "
                                        "candidate bs=64k); `storbench compare --baseline SEL --candidate SEL` "
                                        "compares others")
    assert "results of run 1" in results and asked, words
    assert "compare: baseline bs=4k vs candidate bs=64k, the run's last table" in results  # said before it runs
    assert "baseline bs=4k vs candidate bs=64k" in asked and "IOPS base" in asked
    assert "design: paired" in asked and asked.rstrip().endswith("stored in " + str(tmp_path / "r.db")), asked
    row = next(line for line in out.splitlines() if line.startswith("│ scratch randread qd4 read"))
    iops, bandwidth = (row.split("│")[i].strip() for i in (4, 5))
    assert iops.endswith(("▼", "~")) and bandwidth.endswith(("▲", "~")), row  # 16x the bytes per I/O
