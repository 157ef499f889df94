"""A plan is untrusted input run as root: pass-through options, engines, test files, names and output files.
Each test here failed before the guard it pins existed."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import textwrap
from pathlib import Path

import pytest

from helpers import run_cli, write_plan
from storbench.config import load_plan_text
from storbench.errors import UserError
from storbench.fio.allowlist import ALLOWED_FIO_OPTIONS, engine_refusal
from storbench.fio.jobfile import JobBinding, render_job
from storbench.fio.options import parse_option_names
from storbench.plan import expand
from storbench.targets.local import FILENAME_FORMAT, claim_test_files, remove_test_files

HAVE_FIO = shutil.which("fio") is not None

PLAN = textwrap.dedent(
    """\
    name: sec
    targets:
      scratch: {{kind: path, path: /tmp/storbench-sec-unused, size: 1MiB}}
    workload:
      rw: randread
      ioengine: {engine}
      fio:
        {name}: {value}
    """
)
# Values a hostile plan would try on any option: a file mapping, a device, a path, a keyword expansion.
HOSTILE_VALUES = ("mmapshared:/etc/passwd", "/dev/sda", "/etc/shadow", "1:/tmp/x", "$mb_memory", "4k/..")
BINDING = JobBinding(options=(("directory", "/tmp/x"), ("filename_format", FILENAME_FORMAT)))


# an option that a plan may give only with another beside it (`config.fio_checks.check_fio_meanings`)
COMPANIONS = {"latency_target": "\n    latency_run: 1"}


def _job_texts(name: str, value: str, engine: str = "libaio") -> list[str] | None:
    """The job files a plan with ``name: value`` would run, or None when the plan is refused."""
    text = PLAN.format(engine=engine, name=name, value=f"'{value}'" + COMPANIONS.get(name, ""))
    try:
        loaded = load_plan_text(text, "sec.yaml")
        return [render_job(case, BINDING, 0) for case in expand(loaded)]
    except UserError:
        return None


def _installed_option_names() -> set[str]:
    names = set(parse_option_names(subprocess.run(["fio", "--cmdhelp"], capture_output=True, text=True,
                                                  check=False).stdout))
    for engine in ("libaio", "io_uring", "rbd", "nfs", "net", "sg", "exec"):
        names |= parse_option_names(subprocess.run(["fio", f"--enghelp={engine}"], capture_output=True, text=True,
                                                   check=False).stdout)
    return names


@pytest.mark.skipif(not HAVE_FIO, reason="needs fio on PATH")
def test_only_allow_listed_options_of_the_installed_fio_reach_a_job_file() -> None:
    names = _installed_option_names()
    assert len(names) > 150  # fio 3.33 has about 220 options: the probe itself works
    reached = set()
    for name in sorted(names):
        option = ALLOWED_FIO_OPTIONS.get(name)
        engine = "io_uring" if option and option.engines == frozenset({"io_uring"}) else \
            next(iter(sorted(option.engines))) if option and option.engines else "libaio"
        if engine == "rbd":
            continue  # an rbd-only option needs an rbd target: covered below
        values = ((option.grammar.example,) if option else ()) + HOSTILE_VALUES + ("1", "0", "4k")
        for value in values:
            texts = _job_texts(name, value, engine)
            if texts is None:
                continue
            assert name in ALLOWED_FIO_OPTIONS, f"{name}={value} reached a job file"
            assert f"\n{name}={value}\n" in texts[0]
            reached.add(name)
    # every allowed option that this fio knows reaches a job file with its example value
    assert reached == {n for n in names if n in ALLOWED_FIO_OPTIONS and ALLOWED_FIO_OPTIONS[n].engines != {"rbd"}}


@pytest.mark.parametrize("name", sorted(ALLOWED_FIO_OPTIONS))
def test_no_allowed_option_takes_a_file_a_device_or_a_keyword(name: str) -> None:
    option = ALLOWED_FIO_OPTIONS[name]
    assert option.grammar.accepts(option.grammar.example)
    example = option.grammar.example
    for value in (*HOSTILE_VALUES, f"{example}:/etc/passwd", f"{example}\n", f"{example}$ncpus"):
        assert not option.grammar.accepts(value), f"{name} accepts {value!r}"


def test_mem_without_a_file_is_fine_with_one_is_refused() -> None:
    assert _job_texts("mem", "mmap") is not None
    assert _job_texts("mem", "mmap:/dev/sda") is None
    assert _job_texts("mem", "mmapshared:/var/lib/important") is None


def test_engines_belong_to_their_target_kind() -> None:
    assert engine_refusal("libaio", "path") is None
    assert engine_refusal("rbd", "rbd") is None
    for engine in ("rbd", "net", "netsplice", "exec", "sg", "http", "nfs", "external"):
        assert engine_refusal(engine, "path") is not None
        assert engine_refusal(engine, "block") is not None
    assert engine_refusal("libaio", "rbd") is not None


def test_an_rbd_target_never_takes_pool_or_image_options_from_the_plan() -> None:
    text = textwrap.dedent("""\
        name: sec
        targets:
          ceph: {kind: rbd, pool: bench, image: mine, size: 1GiB}
        workload:
          rw: randwrite
          fio: {rbdname: someone-elses-image}
        """)
    with pytest.raises(UserError, match="names a cluster, pool, image"):
        load_plan_text(text, "sec.yaml")


def test_a_job_file_refuses_dollar_in_any_value_but_storbench_file_names() -> None:
    text = PLAN.format(engine="libaio", name="thinktime", value="1")
    case = expand(load_plan_text(text, "sec.yaml"))[0]
    # a directory whose name holds fio's keyword syntax (e.g. the current directory of a relative path)
    with pytest.raises(ValueError, match="refusing fio value"):
        render_job(case, JobBinding(options=(("directory", "/srv/$mb_memory"),)))
    assert "filename_format=storbench.$jobnum.$filenum" in render_job(case, BINDING)


def test_a_case_from_elsewhere_with_a_refused_option_is_not_rendered() -> None:
    """Defence in depth: a case not made by the plan loader (a stored run) still cannot carry mem=FILE."""
    from dataclasses import replace

    text = PLAN.format(engine="libaio", name="thinktime", value="1")
    case = expand(load_plan_text(text, "sec.yaml"))[0]
    bad = replace(case, workload=replace(case.workload, fio_options=(("mem", "mmapshared:/etc/passwd"),)))
    with pytest.raises(ValueError, match="not on the allow-list"):
        render_job(bad, BINDING)


# ---- test files ------------------------------------------------------------------------------------


def test_a_planted_symlink_test_file_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    data = tmp_path / "data"
    data.mkdir()
    (data / "storbench.0.0").symlink_to(victim)
    refusal = claim_test_files(data, ["storbench.0.0"])
    assert refusal is not None and "symbolic link" in refusal
    assert victim.read_text() == "precious"


def test_test_files_are_created_exclusively_private_and_hard_links_refused(tmp_path: Path) -> None:
    assert claim_test_files(tmp_path, ["storbench.0.0", "storbench.1.0"]) is None
    for name in ("storbench.0.0", "storbench.1.0"):
        assert stat.S_IMODE(os.lstat(tmp_path / name).st_mode) == 0o600
    os.link(tmp_path / "storbench.0.0", tmp_path / "elsewhere")
    assert "hard links" in (claim_test_files(tmp_path, ["storbench.0.0"]) or "")
    fifo = tmp_path / "storbench.2.0"
    os.mkfifo(fifo)
    assert "not a regular file" in (claim_test_files(tmp_path, ["storbench.2.0"]) or "")


def test_removing_test_files_never_follows_links_or_touches_other_files(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    data = tmp_path / "data"
    data.mkdir()
    for name in ("storbench.0.0", "storbench.c2.1.0", "10.214.0.10.storbench.c1.0.0"):
        (data / name).write_text("x")
    (data / "storbench.3.0").symlink_to(victim)
    (data / "notes.txt").write_text("mine")
    (data / "storbench.yaml").write_text("mine")
    assert remove_test_files(data) == 3
    assert sorted(p.name for p in data.iterdir()) == ["notes.txt", "storbench.3.0", "storbench.yaml"]
    assert victim.read_text() == "precious"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a directory of another user")
def test_a_directory_another_user_controls_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "theirs"
    other.mkdir()
    os.chown(other, 4242, 4242)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # writable by all, no sticky bit: files can be swapped under storbench
    # the test directory is root's own, but the directory above it another user's: they could rename it away and put
    # a link to any directory in its place, for fio to reopen its files through (it had been accepted)
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, 4242, 4242)
    (home / "bench").mkdir()
    for directory, says in ((other, "belongs to uid 4242"), (shared, "writable by other users"),
                            (home / "bench", f"{home}, above {home / 'bench'}, is owned by uid 4242")):
        plan = write_plan(tmp_path, PLAN.format(engine="psync", name="thinktime", value="0").replace(
            "/tmp/storbench-sec-unused", str(directory)), f"{directory.name}.yaml")
        code, out, err = run_cli(capsys, "plan", str(plan))
        assert code == 2 and says in err, out + err


@pytest.mark.fio
@pytest.mark.skipif(not HAVE_FIO, reason="needs fio on PATH")
def test_a_run_refuses_a_planted_link_and_removes_its_test_files(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    data.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (data / "storbench.0.0").symlink_to(victim)
    text = textwrap.dedent(f"""\
        name: sec
        targets:
          scratch: {{kind: path, path: {data}, size: 1MiB}}
        workload: {{rw: randwrite, runtime: 1s, ioengine: psync, numjobs: 2}}
        repeat: 1
        telemetry: {{enabled: false}}
        """)
    plan = write_plan(tmp_path, text)
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db))
    assert code == 2 and "symbolic link" in err, out + err
    assert victim.read_text() == "precious"
    (data / "storbench.0.0").unlink()
    code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db))
    assert code == 0, out + err
    assert list(data.iterdir()) == []  # both jobs' files removed after the run
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    kept = write_plan(tmp_path, text + "keep_files: true\n", "kept.yaml")
    code, out, err = run_cli(capsys, "run", str(kept), "--db", str(db))
    assert code == 0, out + err
    assert sorted(p.name for p in data.iterdir()) == ["storbench.0.0", "storbench.1.0"]


def test_reports_and_exports_are_private(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from storbench.cli import _write_output

    out = tmp_path / "export.csv"
    _write_output("a,b\n", str(out))
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "victim")
    with pytest.raises(UserError, match="symbolic link"):
        _write_output("a,b\n", str(link))
    assert not (tmp_path / "victim").exists()


def test_the_allow_list_holds_none_of_the_options_known_to_touch_files_devices_or_programs() -> None:
    from storbench.config import MANAGED_FIO_OPTIONS
    from storbench.fio.allowlist import REFUSAL_REASONS

    dangerous = set().union(*(names for _reason, names in REFUSAL_REASONS))
    assert {"mem", "iomem"} <= set(ALLOWED_FIO_OPTIONS)  # allowed, but only without a file (test above)
    assert not dangerous & set(ALLOWED_FIO_OPTIONS)
    assert not set(MANAGED_FIO_OPTIONS) & set(ALLOWED_FIO_OPTIONS)


def test_no_job_line_is_longer_than_fio_reads_as_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fio reads a job file a line at a time into a buffer of 4,096 (older) or 8,192 characters: the rest of a longer
    line is a line of its own. A path of 111 `dirs` made an 8,335-character `directory=` line whose tail, from the
    path the plan wrote, read `exec_prerun=sh -c reboot ...`: a command fio would run as root. `plan` refuses it."""
    from storbench.fio.jobfile import MAX_JOB_LINE, job_line

    path = tmp_path / "  exec_prerun=sh -c reboot xxxxxxxxxxxxxxx"
    evil = write_plan(tmp_path, f"name: evil\ntargets:\n  t: {{kind: path, path: \"{path}\", size: 1MiB}}\n"
                      "workload: {rw: create, files: 10, numjobs: 111, dirs: 111}\n")
    code, _, err = run_cli(capsys, "plan", str(evil))
    assert code == 2 and "refusing fio option directory: its line would be" in err and "fewer dirs" in err, err
    assert not any(p.name.startswith("  exec") for p in tmp_path.iterdir())  # nothing made
    with pytest.raises(ValueError, match="more than fio reads as one line"):
        job_line("directory", "/d" * MAX_JOB_LINE)
    assert job_line("directory", "/d" * 100) == "directory=" + "/d" * 100


def test_the_nfs_clean_up_splits_its_names_and_an_older_fio_is_held_to_its_own_buffer() -> None:
    """16 clients of 64 jobs had put 1,024 names on one `filename=` line, which the line limit then refused in the
    lab session's clean-up (a traceback after the results, the files left): a section per batch that fits. A fio
    before 3.15 reads 4,096 characters a line: `plan` holds it to 4,000."""
    from storbench.checks import check_job_texts
    from storbench.fio.jobfile import MAX_JOB_LINE
    from storbench.fio.nfs_jobs import render_nfs_removal_job
    from storbench.targets.base import PreparedTarget

    names = [f"storbench.c{c}.{j}.0" for c in range(1, 17) for j in range(64)]
    text = render_nfs_removal_job("nfs://127.0.0.1/export", "/x/engine.so", names)
    assert max(len(line) for line in text.splitlines()) <= MAX_JOB_LINE and text.count("[remove") >= 3
    listed = [n for line in text.splitlines() if line.startswith("filename=") for n in line[9:].split(":")]
    assert listed == names
    loaded = load_plan_text("name: d\ntargets:\n  t: {kind: path, path: /tmp/x, size: 1MiB}\n"
                            "workload: {rw: create, files: 10, numjobs: 64, dirs: 64}\n", "d.yaml")
    cases = expand(loaded)
    binding = JobBinding(options=(("directory", "/tmp/" + "p" * 40),))
    targets = {"t": PreparedTarget(spec=cases[0].target, binding=binding, details=())}
    check_job_texts(loaded, cases, targets, "fio-3.33")  # about 4,700 characters: fio 3.33 reads it whole
    with pytest.raises(UserError, match=r"more than fio-3\.12 reads as one"):
        check_job_texts(loaded, cases, targets, "fio-3.12")
