"""`storbench import` keeps what each job ran: a client/server output's servers are its clients (not one client
"imported"); jobs of one name that ran other settings are refused, not summed as one point; `bs=4k,64k` is its own
point, at the size the pattern used; a file written with `--status-interval` gives its final report, not the first
interval's; and times are fio's (its report is written when the run ends)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import run_cli, stored_repetitions
from storbench.fio.parse import json_after_messages, parse_fio_json

FIXTURES = Path(__file__).parent / "fixtures"
THREE = FIXTURES / "clients3-randread.jsonplus.txt"  # three fio servers, one job 'j' each


def test_client_server_output_keeps_each_server_as_a_client(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "import", str(THREE), "--db", str(db))
    assert code == 0 and "imported 1 repetitions of 1 cases" in out, out + err
    (rep,) = stored_repetitions(db)
    document = parse_fio_json(json_after_messages(THREE.read_text()))
    assert rep.case.clients == 3
    assert sorted(c.client for c in rep.clients) == sorted(job.host for job in document.jobs)
    assert [sum(d.total_ios for d in c.directions) for c in rep.clients] == [
        sum(d.total_ios for d in job.directions) for job in document.jobs]
    # fio's timestamp is when it wrote the report: the run ended then, and began its runtime before
    runtime_s = max(d.runtime_ms for c in rep.clients for d in c.directions) / 1000
    assert document.timestamp_s > 0 and rep.finished_at_s == pytest.approx(document.timestamp_s)
    assert rep.started_at_s == pytest.approx(rep.finished_at_s - runtime_s)


def test_jobs_of_one_name_that_ran_other_settings_are_refused(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    text = THREE.read_text()
    document = json.loads(json_after_messages(text))
    document["client_stats"][1]["job options"]["bs"] = "1m"  # one server given another block size
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps(document))
    local = json.loads((FIXTURES / "randread-plain.json").read_text())
    second = json.loads(json.dumps(local["jobs"][0]))
    second["job options"]["bs"] = "64k"  # a second job of the same name, run after the first (stonewall)
    local["jobs"].append(second)
    one_after_another = tmp_path / "stonewall.json"
    one_after_another.write_text(json.dumps(local))
    for path, says in ((servers, "the jobs named 'j' ran with different settings (bs: 4k and 1m)"),
                       (one_after_another, "the jobs named 'reads' ran with different settings (bs: 4k and 64k)")):
        code, out, err = run_cli(capsys, "import", str(path), "--db", str(tmp_path / "r.db"))
        assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, out + err
        assert f"{path}: {says}" in err and "nothing imported" in err and "name=" in err, err
    assert not (tmp_path / "r.db").exists()
    # beside a good file: that one is imported, the mixed one named
    code, out, err = run_cli(capsys, "import", str(servers), str(FIXTURES / "randread-plain.json"), "--db",
                             str(tmp_path / "r.db"))
    assert code == 2 and "imported 1 repetitions" in out and f"skipped {servers}: the jobs named 'j'" in err, out + err


def test_an_output_with_no_job_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads((FIXTURES / "randread-plain.json").read_text())
    document["jobs"] = []
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(document))
    code, out, err = run_cli(capsys, "import", str(path), "--db", str(tmp_path / "r.db"))
    assert code == 2 and "fio output with no job in it" in err and not (tmp_path / "r.db").exists(), out + err


def _fio(tmp_path: Path, name: str, *options: str) -> Path:
    out = tmp_path / f"{name}.json"
    subprocess.run(["fio", f"--name={name}", f"--filename={tmp_path / 'data'}", "--size=4m", "--time_based",
                    "--output-format=json+", f"--output={out}", *options], check=True, capture_output=True,
                   timeout=60)
    return out


@pytest.mark.fio
@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio on PATH")
def test_a_status_interval_file_gives_its_final_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _fio(tmp_path, "si", "--rw=randread", "--runtime=3", "--status-interval=1")
    text = path.read_text()
    assert text.count('"fio version"') >= 3  # a report each second, the final one last
    db = tmp_path / "r.db"
    assert run_cli(capsys, "import", str(path), "--db", str(db))[0] == 0
    (rep,) = stored_repetitions(db)
    (reads,) = rep.clients[0].directions
    assert reads.runtime_ms >= 2900, reads.runtime_ms  # the whole run, not its first second


@pytest.mark.fio
@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio on PATH")
def test_read_and_write_block_sizes_apart_are_a_point_of_their_own(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    apart = _fio(tmp_path, "w", "--rw=write", "--bs=4k,64k", "--runtime=1")
    same = _fio(tmp_path, "w2", "--rw=write", "--bs=64k", "--runtime=1")
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "import", str(apart), str(same), "--db", str(db))
    assert code == 0 and "2 repetitions of 2 cases" in out, out + err
    first, second = stored_repetitions(db)
    (writes,) = first.clients[0].directions
    assert writes.io_bytes // writes.total_ios == 65536
    assert first.case.workload.bs_bytes == 65536  # the size the writes had, not the reads' 4k
    assert ("bs", "4k,64k") in first.case.workload.fio_options
    assert second.case.workload.bs_bytes == 65536 and first.case.case_id != second.case.case_id


def test_a_clients_export_row_has_its_own_cpu_and_disk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`export --per-client`: each server's row carries its own CPU and busiest device, not the repetition's
    totals beside its own figures."""
    db = tmp_path / "r.db"
    assert run_cli(capsys, "import", str(THREE), "--db", str(db))[0] == 0
    code, out, err = run_cli(capsys, "export", "--db", str(db), "--per-client", "--format", "json")
    assert code == 0, err
    rows = {row["client"]: row for row in json.loads(out)}
    document = parse_fio_json(json_after_messages(THREE.read_text()))
    for job in document.jobs:
        mine = rows[job.host]
        assert (mine["cpu_usr_pct"], mine["cpu_sys_pct"]) == pytest.approx((job.usr_cpu_pct, job.sys_cpu_pct), abs=0.01)
        utils = [d.util_pct for d in document.disks if d.host == job.host]
        assert mine["disk_util_pct"] == (pytest.approx(max(utils), abs=0.01) if utils else None)
    merged = rows[""]
    assert merged["cpu_usr_pct"] == pytest.approx(sum(job.usr_cpu_pct for job in document.jobs), abs=0.01)


@pytest.mark.parametrize(("bs", "rw", "size"), [("8k,32k", "randtrim", 32768), (",8k", "randtrim", 8192),
                                                ("8k,32k,", "randtrim", 4096), ("8k,,16k", "randwrite", 4096),
                                                ("4k,64k", "write", 65536), ("64k", "randtrim", 65536)])
def test_block_sizes_per_direction_are_read_as_fio_reads_them(bs: str, rw: str, size: int) -> None:
    """fio's manual: bs=R,W,T; a type left out after the last value takes that value, an empty one the default
    (4k)."""
    from storbench.importer import _block_size

    assert _block_size(bs, rw)[0] == size


def _rewritten(tmp_path: Path, name: str, change) -> Path:  # type: ignore[no-untyped-def]
    document = json.loads((FIXTURES / "randrw-numjobs2.jsonplus.json").read_text())
    change(document)
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def test_fios_other_spellings_of_an_option_import_as_what_fio_ran(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """rwmixwrite=30 is 70 % reads (it had been stored as fio's default 50), buffered=0 is direct I/O, timeout= is
    the runtime, a job's readwrite= overrides the global rw=, and a size in KiB is what fio read: 1,000 bytes a KiB
    under fio's default kb_base (powers of 1024 under kb_base=1000)."""
    def spelled(document: dict) -> None:  # type: ignore[type-arg]
        document["global options"] = {**{k: v for k, v in document["global options"].items()
                                         if k not in ("direct", "runtime", "size")},
                                      "buffered": "0", "timeout": "1", "rw": "read", "size": "16MiB"}
        for job in document["jobs"]:
            options = job["job options"]
            del options["rwmixread"], options["rw"]
            options.update(rwmixwrite="30", readwrite="randrw", bs="4KiB")

    def kb_base(document: dict) -> None:  # type: ignore[type-arg]
        spelled(document)
        document["global options"]["kb_base"] = "1000"
        for job in document["jobs"]:
            job["jobname"] = job["job options"]["name"] = "other"

    db = tmp_path / "r.db"
    for path in (_rewritten(tmp_path, "spelled.json", spelled), _rewritten(tmp_path, "kb.json", kb_base)):
        code, out, err = run_cli(capsys, "import", str(path), "--db", str(db))
        assert code == 0, out + err
    by_name = {rep.case.workload.size_bytes: rep.case.workload for rep in stored_repetitions(db)}
    assert set(by_name) == {16_000_000, 16 << 20}, by_name
    default, kb1000 = by_name[16_000_000], by_name[16 << 20]
    assert (default.rw, default.rwmixread, default.direct, default.runtime_s) == ("randrw", 70, True, 1.0)
    assert default.bs_bytes == 4000 and kb1000.bs_bytes == 4096


def test_an_imported_job_named_like_a_delete_phase_keeps_its_writes(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    def renamed(document: dict) -> None:  # type: ignore[type-arg]
        for job in document["jobs"]:
            job["jobname"] = job["job options"]["name"] = "nightly.delete"

    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "import", str(_rewritten(tmp_path, "d.json", renamed)), "--db", str(db))
    assert code == 0, out + err
    (rep,) = stored_repetitions(db)
    assert sorted(d.direction.value for c in rep.clients for d in c.directions) == ["read", "write"]


def test_size_based_clones_that_end_apart_import_over_the_longest_ones_runtime(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fio's default is size based: a clone that finished first was counted as still working when the clones'
    rates were added. Their I/O over the longest runtime, as fio's group report gives it."""
    def size_based(document: dict) -> None:  # type: ignore[type-arg]
        del document["global options"]["time_based"]
        slow = document["jobs"][1]
        slow["job_runtime"] = 2000
        for direction in ("read", "write"):
            slow[direction]["runtime"] = 2000
            slow[direction]["iops"] /= 2
            slow[direction]["bw_bytes"] //= 2

    db = tmp_path / "r.db"
    path = _rewritten(tmp_path, "s.json", size_based)
    code, out, err = run_cli(capsys, "import", str(path), "--db", str(db))
    assert code == 0, out + err
    (rep,) = stored_repetitions(db)
    document = json.loads(path.read_text())
    reads = sum(job["read"]["total_ios"] for job in document["jobs"])
    (read,) = [d for c in rep.clients for d in c.directions if d.direction.value == "read"]
    assert read.iops == pytest.approx(reads / 2.0, rel=1e-6), (read.iops, reads)
