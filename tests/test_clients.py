"""Many clients: fio servers in network namespaces driven with `fio --client`, per-client results merged
exactly; the pure pieces (job files per client, client/server output, start skew) with known answers."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from helpers import inside, run_cli, write_plan
from storbench.errors import UserError
from storbench.execute.hosts import drop_page_cache, with_server_env
from storbench.fio.barrier import (
    BARRIER_MAX_S,
    BARRIER_MIN_S,
    CachedFiles,
    barrier_lead_s,
    cached_files,
    start_barrier_line,
    with_start_barrier,
)
from storbench.fio.jobfile import JobBinding, render_client_jobs, render_job
from storbench.fio.merge import client_measurements_by_host, merge_clients
from storbench.fio.outcome import judge_clients, start_skew_s
from storbench.fio.parse import json_after_messages, parse_fio_json
from storbench.lab.hosts_conf import is_lab_server
from storbench.model import Case, Direction, LatencyHistogram, PathTarget, RbdTarget, WorkloadPoint

FIXTURES = Path(__file__).parent / "fixtures"
THREE = (FIXTURES / "clients3-randread.jsonplus.txt").read_text()
SERVERS = ["10.214.0.10,8765", "10.214.0.11,8765", "10.214.0.12,8765"]

# ---------------------------------------------------------------------------------------------------------------
# Pure


def test_client_server_output_gives_one_measurement_per_server() -> None:
    output = parse_fio_json(json_after_messages(THREE))
    clients = client_measurements_by_host(output)
    assert sorted(c.client for c in clients) == ["10.214.0.10:8765", "10.214.0.11:8765", "10.214.0.12:8765"]
    assert all(len(c.disks) == 1 for c in clients)  # each server's own disk_util entry
    merged = merge_clients(clients)
    (read,) = merged
    # the aggregate is the sum of the clients (fio's own "All clients" entry is skipped: it has no bins)
    assert read.total_ios == sum(c.directions[0].total_ios for c in clients)
    assert read.iops == pytest.approx(sum(c.directions[0].iops for c in clients))
    # percentiles of the aggregate come from the clients' bins added together
    histograms = [c.directions[0].lat.histogram for c in clients]
    assert all(h is not None for h in histograms)
    added = _added_bins([h for h in histograms if h is not None])  # by hand, not by the merge under test
    assert read.lat.histogram is not None and dict(read.lat.histogram.bins) == added
    assert sum(added.values()) == read.total_ios
    assert read.lat.percentile_ns(99.0) == _fio_percentile(added, 99.0)


def _added_bins(histograms: list[LatencyHistogram]) -> dict[int, int]:
    """The clients' bins added value by value (what a merge must give), with a Counter."""
    from collections import Counter

    added: Counter[int] = Counter()
    for histogram in histograms:
        for value, count in histogram.bins:
            added[value] += count
    return dict(added)


def _fio_percentile(bins: dict[int, int], percent: float) -> int:
    """fio's rule, written again: the first bin whose cumulative count reaches percent/100 of all I/Os."""
    total, seen = sum(bins.values()), 0
    for value in sorted(bins):
        seen += bins[value]
        if seen >= percent / 100 * total:
            return value
    raise AssertionError("no I/O")


def test_global_options_as_one_object_or_a_list_per_server_read_the_same() -> None:
    # fio 3.33 writes one "global options" object; fio >= 3.39 a list of them when there are several servers
    root = json.loads(json_after_messages(THREE))
    as_object = parse_fio_json(json.dumps(root)).global_options
    assert ("ioengine", "libaio") in as_object and ("size", "8m") in as_object
    root["global options"] = [root["global options"], root["global options"]]
    as_list = parse_fio_json(json.dumps(root))
    assert as_list.global_options == as_object
    assert len(client_measurements_by_host(as_list)) == 3


def test_a_missing_server_fails_the_repetition() -> None:
    clients, error = judge_clients(THREE, "randread", SERVERS)
    assert error == "" and len(clients) == 3
    _, error = judge_clients(THREE, "randread", [*SERVERS, "10.214.0.13,8765"])
    assert error == "1 of 4 clients returned no result (first: 10.214.0.13:8765)"
    _, error = judge_clients(THREE, "randwrite", SERVERS)
    assert "did no write I/O" in error
    # a mix (randrw) whose clients read only: at rwmixread 100 no failure (it had failed every repetition of a
    # rwmixread: [0, 50, 100] sweep at 0 and 100); at 50, with their many reads, a failure still
    _, error = judge_clients(THREE, "randrw", SERVERS, rwmixread=100)
    assert error == ""
    _, error = judge_clients(THREE, "randrw", SERVERS)
    assert "did no write I/O" in error


def test_start_skew_is_the_spread_of_the_servers_starting_messages() -> None:
    lines = [(10.0, "<a> j: (g=0): rw=randread"), (11.2, "<b> Starting 1 process"), (11.25, "<a> Starting 2 processes"),
             (11.3, "<b> Starting 1 process"), (11.5, "<c> Starting 1 thread"), (12.0, "<a> j: Laying out IO file")]
    assert start_skew_s(lines) == pytest.approx(0.3)
    assert start_skew_s(lines[:2]) is None  # one server seen


def test_behind_a_barrier_a_server_starts_at_the_barrier_or_when_it_got_there() -> None:
    saving = "{host} abc : Saving output of prerun in abc.prerun.txt"
    lines = [(9.0, "<a> Starting 1 process"), (9.5, saving.format(host="<a>")), (9.8, saving.format(host="<b>")),
             (10.4, saving.format(host="<c>")), (10.1, saving.format(host="<a>"))]  # a's second job came later
    assert start_skew_s(lines, barrier_at_s=10.0) == pytest.approx(0.4)  # c was 0.4 s late; a and b waited
    assert start_skew_s(lines[:4], barrier_at_s=11.0) == 0.0  # all waited
    assert start_skew_s(lines, barrier_at_s=None) is None  # without a barrier: the 'Starting' messages


def test_the_barrier_lead_learns_from_the_last_repetition() -> None:
    assert barrier_lead_s(8, None) < barrier_lead_s(140, None)  # first time: an allowance per client
    assert barrier_lead_s(140, 4.0) == pytest.approx(5.25)
    assert barrier_lead_s(2, 0.01) == BARRIER_MIN_S and barrier_lead_s(250, 500.0) == BARRIER_MAX_S


def test_the_barrier_goes_into_the_first_measured_section_only() -> None:
    block = Case("abc123", PathTarget("t", path="/d", size_bytes=1 << 20),
                 WorkloadPoint("randread", 4096, 4, 1, 1.0, 0.0, True, "libaio", size_bytes=1 << 20), clients=2)
    binding = JobBinding(options=(("directory", "/d"), ("filename_format", "storbench.$jobnum.$filenum")))
    text = with_start_barrier(render_job(block, binding), 1_800_000_000_123_456_789)
    lines = text.splitlines()
    assert lines[lines.index("[abc123]") + 1] == start_barrier_line(1_800_000_000_123_456_789)
    assert "1800000000123456789" in text and text.count("exec_prerun=") == 1
    phases = replace_workload(block, rw="metadata", files=4, file_size_bytes=4096)
    text = with_start_barrier(render_job(phases, binding), 1_800_000_000_000_000_000)
    lines = text.splitlines()
    assert text.count("exec_prerun=") == 1 and lines[lines.index("[abc123.create]") + 1].startswith("exec_prerun=")
    with pytest.raises(ValueError):
        with_start_barrier("[global]\nrw=read\n", 1)
    with pytest.raises(ValueError):
        start_barrier_line(-5)


def test_the_files_whose_cache_is_dropped_before_the_moment_are_each_clients_own() -> None:
    case = Case("abc123", PathTarget("t", path="/d", size_bytes=1 << 20),
                WorkloadPoint("randread", 4096, 1, 2, 1.0, 0.0, False, "psync", size_bytes=1 << 20), clients=12)
    binding = JobBinding(options=(("directory", "/d:/e"), ("filename_format", "storbench.$jobnum.$filenum")))
    texts = render_client_jobs(case, binding)
    files = cached_files(texts[1])
    assert files is not None and files.directories == ("/d", "/e")
    colon = JobBinding(options=(("directory", "/mnt/a\\:b:/e"), ("filename_format", "storbench.$jobnum.$filenum")))
    colon_files = cached_files(render_client_jobs(case, colon)[1])  # a ':' in a path, escaped for fio: one path
    assert colon_files is not None and colon_files.directories == ("/mnt/a:b", "/e"), colon_files
    import re
    named = [name for name in ("10.214.0.1.storbench.c2.0.0", "storbench.c2.1.3", "10.214.0.1.storbench.c12.0.0",
                               "storbench.c2.0.0.tmp", "storbench.c20.0.0", "other")
             if re.fullmatch(files.name_pattern, name)]
    assert named == ["10.214.0.1.storbench.c2.0.0", "storbench.c2.1.3"]
    # not where fio must drop it itself or the plan decides: an explicit invalidate, a fill in the same run
    assert cached_files(texts[1].replace("[global]\n", "[global]\ninvalidate=1\n")) is None
    assert cached_files(render_client_jobs(replace_workload(case, rw="get", files=2), binding)[0]) is None
    assert cached_files(texts[1].replace("$filenum", "$unknown")) is None
    barred = with_start_barrier(texts[1], 1_800_000_000_000_000_000, cache_dropped=True).splitlines()
    assert barred[barred.index("[abc123]") + 2] == "invalidate=0" and barred.count("invalidate=0") == 1
    assert "invalidate=0" not in with_start_barrier(texts[1], 1_800_000_000_000_000_000)
    assert is_lab_server("10.214.3.20,8765") and not is_lab_server("10.215.0.10,8765")
    assert not is_lab_server("storage-host,8765")


@pytest.mark.skipif(shutil.which("fincore") is None, reason="needs fincore (util-linux)")
def test_dropping_the_cache_empties_it_for_those_files_only(tmp_path: Path) -> None:
    def cached_bytes(path: Path) -> int:
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(path)],
                             capture_output=True, text=True, check=True).stdout
        return int(out.split()[0])

    mine, other, aimed = tmp_path / "10.214.0.1.storbench.c1.0.0", tmp_path / "keep.dat", tmp_path / "outside"
    for path in (mine, other, aimed):
        path.write_bytes(os.urandom(1 << 20))
        path.read_bytes()
    (tmp_path / "storbench.c1.0.1").symlink_to(aimed)  # a link by a matching name is not followed
    assert min(cached_bytes(p) for p in (mine, other, aimed)) > 0
    os.sync()  # dirty pages stay until written back
    dropped = drop_page_cache(CachedFiles((str(tmp_path), str(tmp_path / "missing")),
                                          r"(?:[^/]*\.)?storbench\.c1\.\d+\.\d+"))
    assert dropped == 1
    assert cached_bytes(mine) == 0 and cached_bytes(other) > 0 and cached_bytes(aimed) > 0


def replace_workload(case: Case, **changes: object) -> Case:
    from dataclasses import replace
    return replace(case, workload=replace(case.workload, **changes))  # type: ignore[arg-type]


def test_the_barrier_line_carries_nothing_fio_would_cut_or_replace() -> None:
    for line in (start_barrier_line(1_800_000_000_123_456_789), start_barrier_line(1_800_000_000_1, shell_only=True)):
        value = line.removeprefix("exec_prerun=")
        assert ";" not in value and "#" not in value and "${" not in value and "\n" not in value
        assert value.endswith("|| true")  # fio's redirection lands on this `true` alone
    assert "EPOCHREALTIME" in start_barrier_line(1_800_000_000_123_456_789)
    assert "bash" not in start_barrier_line(1_800_000_000_123_456_789, shell_only=True)


def _path_of(tmp_path: Path, *tools_wanted: str) -> dict[str, str]:
    """An environment whose PATH has only ``tools_wanted``."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in tools_wanted:
        found = shutil.which(tool)
        assert found is not None
        (tools / tool).symlink_to(found)
    return {**os.environ, "PATH": str(tools)}


@pytest.mark.fio
@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
@pytest.mark.parametrize("server", ["bash", "no bash", "shell only"])
def test_the_barrier_holds_a_real_fio_job_until_its_moment_and_leaves_no_file(tmp_path: Path, server: str) -> None:
    """fio runs the barrier as `sh -c '<command> > <job>.prerun.txt 2>&1'` in its own directory: the job's I/O
    starts at the moment (its log's first entry, wall-clock), and no output file is left; with bash, without it
    (the shell's own wait) and with the shell's wait asked for."""
    data = tmp_path / "data"
    data.mkdir()
    fio = shutil.which("fio")
    assert fio is not None
    # bash alone must do it (no date, no sleep to fall back on); without bash the shell must
    env = _path_of(tmp_path, "sh", "bash") if server == "bash" else _path_of(tmp_path, "sh", "date", "sleep")
    job = tmp_path / "j.fio"

    def write_job(start_at_s: float) -> None:
        job.write_text(f"[j]\ndirectory={data}\nsize=1m\nrw=randread\nbs=4k\nruntime=0.5\ntime_based=1\n"
                       f"write_iops_log={tmp_path}/first\nlog_avg_msec=0\nlog_unix_epoch=1\n"
                       f"{start_barrier_line(int(start_at_s * 1e9), shell_only=server == 'shell only')}\n")

    start_at_s = time.time() + 1.5
    write_job(start_at_s)
    done = subprocess.run([fio, "--output-format=json", str(job)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    first_ms = int((tmp_path / "first_iops.1.log").read_text().split(",")[0])
    # fio's log stamps whole milliseconds (its epoch's and the time since, each cut), so up to 2 ms early
    assert start_at_s * 1000 - 2 <= first_ms < start_at_s * 1000 + 500
    assert not list(tmp_path.glob("*.prerun.txt"))
    # a job that reaches a moment already past does not wait
    write_job(time.time() - 60)
    started = time.monotonic()
    done = subprocess.run([fio, "--output-format=json", str(job)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False, env=env)
    assert done.returncode == 0 and time.monotonic() - started < 1.4
    assert not list(tmp_path.glob("*.prerun.txt"))


@pytest.mark.fio
@pytest.mark.skipif(shutil.which("fio") is None or shutil.which("chrt") is None or os.geteuid() != 0,
                    reason="needs fio, chrt and root")
def test_the_barrier_waits_at_real_time_priority_and_fio_keeps_its_own(tmp_path: Path) -> None:
    """While a job waits at the barrier, the waiting bash is SCHED_FIFO (its wait ends at the moment even on a
    saturated machine) and fio, its parent, is not."""
    fio = shutil.which("fio")
    assert fio is not None
    start_at_ns = int((time.time() + 2.0) * 1e9)
    job = tmp_path / "j.fio"
    job.write_text(f"[j]\ndirectory={tmp_path}\nsize=1m\nrw=randread\nbs=4k\nruntime=0.2\ntime_based=1\n"
                   f"{start_barrier_line(start_at_ns)}\n")
    process = subprocess.Popen([fio, "--output-format=json", str(job)], cwd=tmp_path, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    found: list[tuple[int, int]] = []  # (waiting bash's policy, its parent's), as seen until it changes
    try:  # bash asks for its priority right after it starts: look until it has it, or the wait is nearly over
        while not (found and found[-1][0] == os.SCHED_FIFO) and time.time_ns() < start_at_ns - 200_000_000:
            for entry in Path("/proc").iterdir():
                try:
                    command = (entry / "cmdline").read_bytes()
                    parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
                if command.startswith(b"bash") and str(start_at_ns // 1000).encode() in command:
                    found.append((os.sched_getscheduler(int(entry.name)), os.sched_getscheduler(parent)))
            time.sleep(0.05)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, err
    assert found and found[-1] == (os.SCHED_FIFO, os.SCHED_OTHER)


def test_servers_get_the_s3_keys_inside_the_job_text_sent() -> None:
    text = "[j]\nhttp_s3_keyid=${STORBENCH_S3_KEY_ID}\nhttp_s3_key=${STORBENCH_S3_KEY}\n"
    env = (("STORBENCH_S3_KEY_ID", "AKIA0001"), ("STORBENCH_S3_KEY", "se/cr+et"), ("CEPH_CONF", "/etc/x"))
    assert with_server_env(text, env) == "[j]\nhttp_s3_keyid=AKIA0001\nhttp_s3_key=se/cr+et\n"
    assert with_server_env(text, ()) == text  # nothing else of storbench's environment goes
    for key in ("x\n[evil]", "se#cret", "a$b"):  # one line, not a traceback after the labs are up
        with pytest.raises(UserError, match="holds characters a job file sent to fio's servers cannot carry"):
            with_server_env(text, (("STORBENCH_S3_KEY", key),))


def test_each_client_gets_its_own_job_file_and_file_names() -> None:
    case = Case("abc123", PathTarget("t", path="/d", size_bytes=1 << 20),
                WorkloadPoint("randread", 4096, 4, 1, 1.0, 0.0, True, "libaio", size_bytes=1 << 20), clients=3)
    binding = JobBinding(options=(("directory", "/d"), ("filename_format", "storbench.$jobnum.$filenum")))
    texts = render_client_jobs(case, binding)
    assert len(texts) == 3
    for index, text in enumerate(texts, 1):
        assert f"filename_format=storbench.c{index}.$jobnum.$filenum" in text
        assert text.startswith(f"; storbench case abc123 client {index}")
    # apart from the client number the files are the same job
    assert texts[0].replace("c1.", "cN.").replace("client 1", "client N") == \
        texts[2].replace("c3.", "cN.").replace("client 3", "client N")


def test_each_client_gets_its_own_rbd_image() -> None:
    case = Case("abc123", RbdTarget("r", size_bytes=1 << 20, pool="bench", image="img", client="admin"),
                WorkloadPoint("randwrite", 4096, 4, 1, 1.0, 0.0, True, "rbd", size_bytes=1 << 20), clients=2)
    binding = JobBinding(options=(("clientname", "admin"), ("pool", "bench"), ("rbdname", "img")))
    first, second = render_client_jobs(case, binding)
    assert "rbdname=img-c1\n" in first and "rbdname=img-c2\n" in second
    assert "pool=bench" in first and "clientname=admin" in second


# ---------------------------------------------------------------------------------------------------------------
# Bad plans


BASE = """\
name: many
targets:
  scratch: {kind: path, path: ./data, size: 1MiB}
workload:
  rw: randread
"""


@pytest.mark.parametrize(("extra", "says"), [
    ("clients: [1, 4]\n", "clients: 4 needs 4 fio servers, and the plan names none"),
    ("clients: 3\nhosts: {servers: [a, b]}\n", "clients: 3 needs 3 fio servers, the plan has 2"),
    ("hosts: {servers: [a]}\nlab: {hosts: {count: 2}}\n", "both hosts and a hosts lab"),
    ("hosts: {servers: ['a;rm -rf /']}\n", "must be host, host:port or [v6]:port"),
    ("hosts: {servers: [a, 'a:8765']}\n", "a server is listed twice"),
    ("clients: 0\n", "greater than or equal to 1"),
    ("hosts: {servers: [a]}\n", "runs on fio servers: its path must be absolute"),
])
def test_bad_client_plans_are_one_line(extra: str, says: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, BASE + extra)
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and len(err.strip().splitlines()) == 1 and says in err, err


def test_faults_need_one_fio_server_per_host(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`fio --client` names a server's timeline log after its host alone: a second server on that host would
    overwrite the first's log, and a client's stall would go unseen."""
    plan = BASE.replace("./data", "/srv/data") + "clients: 2\nlab: {volume: {iops: 500}}\n" \
        "faults: [{at: 1s, do: freeze, on: volume, restore_after: 1s}]\nhosts: {servers: ['a:8765', 'A:8766']}\n"
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, plan)))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "the plan's faults need each fio server on its own host; a serves two" in err, err
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, plan.replace("'A:8766'", "b"))))
    assert code == 0, err
    # a third server on a's host that no case uses (clients: 2 takes the first two): no refusal
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, plan.replace("'A:8766'", "b, 'a:8767'"))))
    assert code == 0, err


def test_nfs_targets_on_real_servers_need_a_url_they_reach(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An export named by url runs on real fio servers (their own nfs-capable fio); the NFS lab, reachable from
    this machine's namespaces only, is refused with them in one line."""
    nfs = BASE.replace("{kind: path, path: ./data, size: 1MiB}", "{kind: nfs, size: 1GiB, url: 'nfs://server/export'}")
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, nfs + "hosts: {servers: [a]}\n")))
    assert code == 0 and "3 fio runs" in out, err
    lab = BASE.replace("{kind: path, path: ./data, size: 1MiB}", "{kind: nfs, size: 1GiB}")
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, lab + "hosts: {servers: [a]}\nlab: {nfs: {}}\n")))
    assert code == 2 and "NFS lab cannot be reached from real fio servers" in err and len(err.strip().splitlines()) == 1


def test_a_ceph_lab_is_out_of_reach_of_real_servers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rbd = BASE.replace("{kind: path, path: ./data, size: 1MiB}", "{kind: rbd, size: 1GiB}")
    plan = write_plan(tmp_path, rbd + "hosts: {servers: [a]}\nlab: {ceph: {osds: 1, pool_size: 1}}\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and "cannot be reached from real fio servers" in err and len(err.strip().splitlines()) == 1


def test_raw_devices_on_servers_are_only_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    block = BASE.replace("{kind: path, path: ./data, size: 1MiB}", "{kind: block, device: /dev/nvme0n1, "
                         "destructive: true}")
    plan = write_plan(tmp_path, block.replace("rw: randread", "rw: [randread, randwrite]")
                      + "hosts: {servers: [a]}\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and "would write to a raw device on fio servers" in err, err
    plan = write_plan(tmp_path, block + "hosts: {servers: [a]}\n")
    code, out, err = run_cli(capsys, "plan", str(plan))  # reads: the device is the servers' business
    assert code == 0 and "3 fio runs" in out, err
    # a precondition writes the device too, on every server (all of it without size): it had been let through
    filled = block.replace("destructive: true}", "destructive: true, precondition: {fill: 1x}}")
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, filled + "hosts: {servers: [a]}\n")))
    assert code == 2 and "would write to a raw device on fio servers (its precondition)" in err, err


# ---------------------------------------------------------------------------------------------------------------
# Real: 8 network-namespace hosts


HOSTS_PLAN = """
name: clients
targets:
  scratch: {kind: path, path: ./data, size: 16MiB}
workload:
  rw: [randread, randrw]
  bs: 4k
  iodepth: 2
  runtime: 1s
clients: 8
repeat: 2
lab:
  hosts: {count: 8}
"""


@pytest.mark.fio
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("fio") is None,
                    reason="needs root, iproute2 and fio (network namespaces)")
def test_eight_namespace_hosts_merged_exactly(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("storbench.lab.ceph.DEFAULT_LAB_DIR", tmp_path / "lab")
    plan = write_plan(tmp_path, HOSTS_PLAN)
    db = tmp_path / "r.db"
    with inside(tmp_path):
        code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db))
    assert code == 0, out + err
    assert "hosts lab: 8 fio servers up" in out and "hosts lab: torn down" in out
    # nothing left behind
    assert "storbench-host-" not in os.popen("ip netns list").read()
    assert not (tmp_path / "lab" / "hosts").exists()
    assert not list(tmp_path.rglob("*.prerun.txt"))  # the barrier leaves no file where the servers ran

    from storbench.records import export_records
    from storbench.stats.observations import observations
    from storbench.store import open_store

    store = open_store(db)
    repetitions = store.repetitions()
    store.close()
    eight = [r for r in repetitions if r.case.clients == 8]
    assert len(eight) == 4 and all(r.status.value == "ok" for r in eight)
    for rep in eight:
        assert len({c.client for c in rep.clients}) == 8
        assert rep.start_skew_s is not None and 0 <= rep.start_skew_s < 5
        assert "client 8" in rep.job_text and "--client=10.214.0.17,8765" not in rep.job_text
        assert rep.job_text.count("exec_prerun=") == 8  # each client's job waited at the start barrier
        # the lab's files are this machine's: storbench dropped their cache before launch, fio does not at the moment
        assert rep.job_text.count("\ninvalidate=0\n") == 8
    records = {(r.case_id, r.repeat, r.direction): r for r in export_records(observations(eight))}
    for rep in eight:
        for direction in (Direction.READ, Direction.WRITE):
            parts = [c.direction(direction) for c in rep.clients]
            present = [p for p in parts if p is not None]
            if not present:
                continue
            record = records[(rep.case.case_id, rep.rep_index + 1, direction.value)]  # exports count from 1
            assert record.iops == pytest.approx(sum(p.iops for p in present))
            bins = _added_bins([p.lat.histogram for p in present if p.lat.histogram is not None])
            for percent, field in ((50.0, "lat_p50_ns"), (99.0, "lat_p99_ns"), (99.9, "lat_p999_ns")):
                assert getattr(record, field) == _fio_percentile(bins, percent)  # from merged bins, exactly

    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--per-client", "--format", "json")
    exported = json.loads(out)
    per_client = [r for r in exported if r["client"] and r["clients"] == 8]
    assert len({r["client"] for r in per_client}) == 8
    merged = [r for r in exported if not r["client"] and r["clients"] == 8]
    assert all(r["clients_reporting"] == 8 and r["slowest_client"] for r in merged)
    # the hosts lab's fio servers run on this machine's CPUs: their I/O has a CPU cost (issue 35)
    assert all(r["client_cpu_us_per_io"] > 0 and r["total_cpu_us_per_io"] > 0 for r in merged)
    assert all(r["total_cpu_us_per_io"] is None for r in per_client)  # the host's CPU is every client's
    conn = sqlite3.connect(db)
    try:
        names = {row[0] for row in conn.execute("SELECT DISTINCT name FROM clients")}
    finally:
        conn.close()
    assert {f"10.214.0.{i}:8765" for i in range(10, 18)} <= names


@pytest.mark.fio
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("fio") is None,
                    reason="needs root, iproute2 and fio (network namespaces)")
def test_settling_after_faults_reconnects_and_reshapes_the_hosts_a_failed_restore_left(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between repetitions with faults the hosts lab is made whole, as the other labs are: a client a failed
    restore left cut off is reconnected and one left at a fault's rate is shaped as the others again; a whole
    lab is left alone (nothing said)."""
    from storbench.config import load_plan_text
    from storbench.events import LabHealed
    from storbench.lab.hosts import HostsLab
    from storbench.lab.hosts_conf import lab_host
    from storbench.lab.hosts_kind import KIND
    from storbench.plan import expand

    monkeypatch.setattr("storbench.lab.hosts.DEFAULT_LAB_DIR", tmp_path / "lab")
    (case,) = expand(load_plan_text(HOSTS_SETTLE_PLAN, "s.yaml"))
    lab = HostsLab()
    try:
        lab.up(2, "fio")
        lab.set_link(100_000_000, None)  # as `enter` sets a plan's lab.hosts.link
        assert KIND.settle(case, {}) is None
        lab.set_host_link(2, up=False)
        assert lab.unsettled() == ([2], [])
        healed = KIND.settle(case, {})
        assert isinstance(healed, LabHealed) and healed.lab == "hosts" and lab.running(2)
        lab.shape_host(1, 8_000_000, None)
        assert lab.unsettled() == ([], [1]) and "8Mbit" in lab.shaping(1)
        # telemetry's rates: client.1's own while a fault shaped it apart, the lab's for the others
        assert lab.link_rates() == {lab_host(1).host_veth: 8_000_000, lab_host(2).host_veth: 100_000_000}
        assert isinstance(KIND.settle(case, {}), LabHealed)
        assert lab.shaping(1).split(" root ")[1] == lab.shaping(2).split(" root ")[1]  # but for the qdisc's handle
        assert "100Mbit" in lab.shaping(1)
        assert set(lab.link_rates().values()) == {100_000_000}
        lab.shape_host(2, 100_000_000, None)  # a restore that worked: shaped as the others, nothing to settle
        assert lab.unsettled() == ([], []) and KIND.settle(case, {}) is None
        assert lab_host(2).host_veth in lab.link_rates()
    finally:
        lab.down()


@pytest.mark.fio
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("fio") is None,
                    reason="needs root, iproute2 and fio (network namespaces)")
def test_a_killed_clients_job_does_not_run_on_beside_the_next_repetition(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A fio server hands a job's processes to init when its client goes: a client the watchdog killed had left its
    job writing on the hosts lab's server, beside the next repetition's. The executor ends them; the server stays
    and answers. Runs wire it for the lab's own servers only (a plan's servers offer no way)."""
    from storbench.execute.hosts import HostsExecutor
    from storbench.execute.local import LocalExecutor
    from storbench.lab.hosts import HostsLab
    from storbench.lab.hosts_conf import lab_host
    from storbench.run_state import Executors
    from storbench.shell import run

    monkeypatch.setattr("storbench.lab.hosts.DEFAULT_LAB_DIR", tmp_path / "lab")
    lab = HostsLab()
    data = tmp_path / "w.dat"
    try:
        info = lab.up(1, "fio")
        job = f"[w]\nfilename={data}\nrw=write\nbs=64k\nsize=64m\nrate=1m\nioengine=psync\n"
        namespace = lab_host(1).namespace
        # another program in the namespace, not a job of its server (as a fault's `tc`): left alone
        subprocess.run(["nsenter", f"--net=/run/netns/{namespace}", "sh", "-c", "sleep 60 >/dev/null 2>&1 &"],
                       check=True, timeout=30)
        executor = HostsExecutor("fio", info.servers, lab_servers=True, end_left_jobs=lab.end_jobs)
        assert executor.run_clients([job], list(info.servers), timeout_s=2).timed_out
        left = [int(pid) for pid in run(["ip", "netns", "pids", namespace], timeout_s=30).split()]
        fio = [pid for pid in left if os.readlink(f"/proc/{pid}/exe").endswith("/fio")]
        assert fio == [daemon.pid for daemon in lab.dir.live()], left  # the server alone
        assert any(os.readlink(f"/proc/{pid}/exe").endswith("/sleep") for pid in left), left
        written = data.stat().st_size
        time.sleep(1.5)
        assert data.stat().st_size == written, "the killed client's job writes on"
        assert lab.running(1)
        wired = Executors(LocalExecutor("fio"), list(info.servers), "fio", "run1", None, lab_servers=True).hosts
        assert wired is not None and wired.end_left_jobs is not None
        own = Executors(LocalExecutor("fio"), ["10.9.9.9"], "fio", "run1", None, lab_servers=True).hosts
        assert own is not None and own.end_left_jobs is None
    finally:
        lab.down()


HOSTS_SETTLE_PLAN = """
name: settle
targets:
  scratch: {kind: path, path: /tmp/settle, size: 4MiB}
workload: {rw: read}
clients: 2
lab:
  hosts: {count: 2, link: 100Mbit}
"""


REMOTE_PLAN = """
name: remote
targets:
  shared: {{kind: path, path: {directory}, size: 4MiB}}
workload:
  rw: randread
  bs: 4k
  runtime: 1s
clients: 2
hosts: {{servers: ['10.214.0.10', '10.214.0.11:8765']}}
"""


@pytest.mark.fio
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("fio") is None,
                    reason="needs root, iproute2 and fio (network namespaces)")
def test_real_servers_are_trusted_with_their_own_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """With `hosts: servers` the directory is on other machines: storbench neither creates nor checks it here;
    fio on each server does, and a server without it fails the repetition with fio's own words."""
    from storbench.lab.hosts import HostsLab

    lab = HostsLab(tmp_path / "lab")
    lab.up(2, shutil.which("fio") or "fio")
    try:
        there = tmp_path / "on-the-servers"
        there.mkdir()
        missing = tmp_path / "nowhere"
        db = tmp_path / "r.db"
        good = write_plan(tmp_path, REMOTE_PLAN.format(directory=there), "good.yaml")
        bad = write_plan(tmp_path, REMOTE_PLAN.format(directory=missing), "bad.yaml")
        # fio's client trusts its servers (one can make it write files here): only servers the operator names
        code, out, err = run_cli(capsys, "run", str(good), "--db", str(db), "--fio-server", "10.214.0.10")
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "fio server 10.214.0.11:8765 is not one the operator named" in err
        assert "--fio-server 10.214.0.11:8765" in err and not db.exists()
        trusted = ("--fio-server", "10.214.0.10:8765", "--fio-server", "10.214.0.11")
        code, out, err = run_cli(capsys, "run", str(good), "--db", str(db), *trusted)
        assert code == 0, out + err
        code, out, err = run_cli(capsys, "run", str(bad), "--db", str(db), *trusted)
        assert code != 0
        assert not missing.exists()  # not made here: the servers' filesystem is not ours
    finally:
        lab.down()
    from storbench.store import open_store

    store = open_store(db)
    by_plan = {rep.case.target.path: rep for rep in store.repetitions()}
    store.close()
    ok, failed = by_plan[str(there)], by_plan[str(missing)]
    assert ok.status.value == "ok" and len(ok.clients) == 2
    # each server wrote its own file in the directory it was given
    assert sorted(p.name for p in there.iterdir()) == ["10.214.0.10.storbench.c1.0.0", "10.214.0.11.storbench.c2.0.0"]
    assert failed.status.value == "failed" and f"fio: {missing} is not a directory" in failed.error


def test_run_drives_only_the_fio_servers_the_operator_names(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """fio's client trusts its servers (a server can make it write a file here, named as the server likes): a
    plan's `hosts.servers` are driven only when the operator names each, on the command line or in
    $STORBENCH_FIO_SERVERS; refused in one line before anything is sent or stored. `plan` connects to none."""
    plan = write_plan(tmp_path, REMOTE_PLAN.format(directory=tmp_path / "there"))
    db = tmp_path / "r.db"
    monkeypatch.delenv("STORBENCH_FIO_SERVERS", raising=False)
    code, _, err = run_cli(capsys, "run", str(plan), "--db", str(db))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "fio server 10.214.0.10:8765, 10.214.0.11:8765 is not one the operator named" in err
    assert "--fio-server 10.214.0.10:8765 --fio-server 10.214.0.11:8765" in err and not db.exists()
    monkeypatch.setenv("STORBENCH_FIO_SERVERS", "10.214.0.10")
    code, _, err = run_cli(capsys, "run", str(plan), "--db", str(db), "--fio-server", "10.214.0.12")
    assert code == 2 and "fio server 10.214.0.11:8765 is not" in err, err
    code, _, err = run_cli(capsys, "run", str(plan), "--db", str(db), "--fio-server", "not a host")
    assert code == 2 and "--fio-server: server 'not a host' must be host" in err, err
    # `plan` connects to none, and says what run would refuse; with run's command line, nothing
    code, out, err = run_cli(capsys, "plan", str(plan), "--fio-server", "10.214.0.12")
    flat = " ".join(out.split())
    assert code == 0 and "⚠ run would refuse it: " in flat and "fio server 10.214.0.11:8765 is not one the" in flat
    code, out, err = run_cli(capsys, "plan", str(plan), "--fio-server", "10.214.0.11")
    assert code == 0 and "run would refuse it" not in out, out + err


def test_faults_on_many_clients_are_timed_from_the_barrier_not_the_launch() -> None:
    """Behind the start barrier the servers' I/O begins the lead after `run_case` is called (12 s for 140 clients
    the first time): a fault at 10 s had struck before any I/O."""
    from storbench.execute.hosts import HostsExecutor

    servers = [f"10.214.0.{n}" for n in range(2, 142)]
    executor = HostsExecutor("/usr/bin/fio", servers)
    case = Case("abc123", PathTarget("t", path="/d", size_bytes=1 << 20),
                WorkloadPoint("randread", 4096, 4, 1, 1.0, 0.0, True, "libaio", size_bytes=1 << 20), clients=140)
    assert executor.start_delay_s(case) == barrier_lead_s(140, None) > 10
    assert executor.start_delay_s(replace(case, clients=1)) == 0.0  # one client: no barrier
    executor._reached_s[140] = 2.0  # reached in 2 s the last time
    assert executor.start_delay_s(case) == barrier_lead_s(140, 2.0) == 2.75


def test_a_link_rate_in_bytes_is_refused_not_read_as_bits() -> None:
    """tc reads `mbps` as megabytes and people write 100MB for bytes: a capital B would shape 8 times off."""
    from storbench.units import link_rate_bits

    assert [link_rate_bits(v) for v in ("1Gbit", "100Mbit", "10gbps", "100Mb", "1GBit")] == [
        10**9, 10**8, 10**10, 10**8, 10**9]
    for value in ("100MB", "100MBps", "1GB", "800kB"):
        with pytest.raises(ValueError, match="B is bytes: a link rate is in bits"):
            link_rate_bits(value)


def test_a_link_delay_without_a_link_is_refused_not_dropped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, "name: d\ntargets:\n  t: {kind: path, path: ./d, size: 1MiB}\nworkload: {rw: randread, "
                                "runtime: 1s}\nclients: 2\nlab: {hosts: {count: 2, link_delay: 5ms}}\n")
    code, out, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and "link_delay needs link:" in err, out + err


@pytest.mark.fio
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("fio") is None,
                    reason="needs root, iproute2 and fio (network namespaces)")
def test_fio_servers_lay_their_files_out_without_any_io(tmp_path: Path) -> None:
    """Before a repetition with faults each server runs its job's set-up alone (create_only): a server's layout
    can outlast the start barrier's lead, and one client has no barrier at all."""
    from storbench.execute.base import FioSetup
    from storbench.execute.hosts import HostsExecutor
    from storbench.fio.layout import layout_job
    from storbench.lab.hosts import HostsLab

    there = tmp_path / "files"
    there.mkdir()
    case = Case("abc123", PathTarget("t", path=str(there), size_bytes=4 << 20),
                WorkloadPoint("randread", 4096, 4, 1, 1.0, 0.0, False, "psync", size_bytes=4 << 20), clients=2)
    lab = HostsLab(tmp_path / "lab")
    info = lab.up(2, shutil.which("fio") or "fio")
    try:
        executor = HostsExecutor(shutil.which("fio") or "fio", info.servers, lab_servers=True)
        binding = JobBinding(options=(("directory", str(there)), ("filename_format", "storbench.$jobnum.$filenum")))
        texts = render_client_jobs(case, binding, 0)
        ran = []
        real = executor.run_clients
        executor.run_clients = lambda *a: ran.append(real(*a)) or ran[-1]  # type: ignore[method-assign]
        assert executor.lay_out(case, [layout_job(text) for text in texts], 60, FioSetup()) == ""
    finally:
        lab.down()
    files = sorted(p.name for p in there.iterdir())
    assert len(files) == 2 and all(p.stat().st_size == 4 << 20 for p in there.iterdir()), files
    (result,) = ran
    assert result.returncode == 0
    jobs = json.loads(json_after_messages(result.output_text))["client_stats"]
    assert {job["read"]["io_bytes"] for job in jobs} == {0}


def test_a_mixed_clients_missing_direction_is_a_fault_only_where_chance_cannot_explain_it() -> None:
    """rwmixread: 95: a client of 60 I/Os, all reads, drew no write by chance 4.6 % of the time (a hundred clients:
    nearly every repetition had failed); of 1,000 reads and no write it is a fault. rwmixread 0: no read is asked."""
    from storbench.fio.outcome import client_fault
    from storbench.model import ClientMeasurement, Direction, DirectionMeasurement, LatencySummary

    def reads(n: int, direction: Direction = Direction.READ) -> ClientMeasurement:
        lat = LatencySummary(samples=n, min_ns=1, max_ns=1, mean_ns=1.0, stddev_ns=0.0)
        done = DirectionMeasurement(direction=direction, total_ios=n, io_bytes=0, runtime_ms=1000, iops=float(n),
                                    bw_bytes_per_s=0.0, clat=lat, lat=lat)
        return ClientMeasurement(client="c", jobs=1, job_errors=(), cpu_usr_pct=0.0, cpu_sys_pct=0.0,
                                 directions=(done,))

    assert client_fault(reads(60), "randrw", 95) is None
    fault = client_fault(reads(1000), "randrw", 95)
    assert fault is not None and fault.missing == ("write",)
    assert client_fault(reads(1000, Direction.WRITE), "randrw", 0) is None
    assert client_fault(reads(1000), "randwrite") is not None  # not a mix: its one direction is asked
    nothing = ClientMeasurement(client="c", jobs=1, job_errors=(), cpu_usr_pct=0.0, cpu_sys_pct=0.0, directions=())
    none_at_all = client_fault(nothing, "randrw", 70)  # fio's nfs engine: error 0 and no I/O: a failure, however mixed
    assert none_at_all is not None and none_at_all.missing == ("read", "write")
    # S3's getput is a mix too: at rwmixread 100 it PUTs nothing, and 30 GETs of a 99/1 mix may PUT none by chance
    assert client_fault(reads(1000), "getput", 100) is None and client_fault(reads(30), "getput", 99) is None
    assert client_fault(reads(1000), "getput", 70) is not None


def test_a_startdelay_on_many_clients_is_waited_after_the_barrier_not_swallowed_by_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """fio counts startdelay from its own start, before the barrier's wait: a delay shorter than the lead did
    nothing, and faults were timed lead + delay after the launch. The delay moves into the barrier's moment; a
    range, which draws each job's start, is refused with several clients on fio servers."""
    from storbench.execute.hosts import ClientsProcessResult, HostsExecutor

    executor = HostsExecutor("/usr/bin/fio", ["10.214.0.2", "10.214.0.3"])
    sent: list[list[str]] = []

    def clients(texts, servers, timeout_s):  # type: ignore[no-untyped-def]
        sent.append(list(texts))
        return ClientsProcessResult(returncode=1, timed_out=False, stderr_tail="x", started_at_s=0.0,
                                    finished_at_s=1.0, command=(), output_text="")

    monkeypatch.setattr(executor, "run_clients", clients)
    monkeypatch.setattr("storbench.execute.hosts.time.time", lambda: 1_000.0)
    case = Case("abc123", PathTarget("t", path="/d", size_bytes=1 << 20),
                WorkloadPoint("randread", 4096, 4, 1, 1.0, 0.0, True, "libaio", size_bytes=1 << 20,
                              fio_options=(("startdelay", "20s"),)), clients=2)
    binding = JobBinding(options=(("directory", "/d"), ("filename_format", "storbench.$jobnum.$filenum")))
    executor.run_case(case, render_client_jobs(case, binding), 0, 60.0)
    lead_s = executor.start_delay_s(case)
    for text in sent[0]:
        assert "startdelay=" not in text, text
        assert start_barrier_line(int((1_000.0 + lead_s + 20.0) * 1e9)) in text.split("\n"), text
    # (fio 3.33 reads `30sec` as 30 us, its unit unknown to it: such a value is refused at plan, with the units)
    for delay in ("1s-5s", "10-30s"):
        plan = write_plan(tmp_path, "name: d\ntargets:\n  t: {kind: path, path: ./d, size: 1MiB}\nworkload: {rw: "
                                    f"randread, runtime: 1s, fio: {{startdelay: {delay}}}}}\nclients: 2\n"
                                    "lab: {hosts: {count: 2}}\n")
        code, _, err = run_cli(capsys, "plan", str(plan))
        assert code == 2 and f"startdelay {delay} draws each job's start, and 2 clients on fio servers" in err, err
    # each pod's fio would draw its own start too: the clients' sum would add sections that did not overlap
    plan = write_plan(tmp_path, "name: d\ntargets:\n  t: {kind: pvc, size: 1GiB}\nworkload: {rw: randread, "
                                "runtime: 1s, fio: {startdelay: 1s-5s}}\nclients: 2\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and "startdelay 1s-5s draws each job's start, and 2 clients in pods" in err, err
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, plan.read_text().replace("1s-5s", "5s"))))
    assert code == 0, err


def test_a_link_change_cut_short_leaves_every_host_to_be_reshaped(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A tc that fails at host 2 of 3 had left host 1 at the new rate under the old rate's record: the next run at
    the old value took the lab for whole. Every host stays marked apart until all are shaped."""
    import json

    from storbench.errors import UserError
    from storbench.lab import hosts
    from storbench.lab.hosts import HostsLab

    lab = HostsLab(tmp_path)
    lab.state.parent.mkdir(parents=True, exist_ok=True)
    lab.state.write_text(json.dumps({"root": str(tmp_path), "count": 3, "servers": ["a", "b", "c"],
                                     "link": [100_000_000, None]}))
    shaped: list[int] = []

    def shape(index: int, rate: object, delay: object) -> None:
        if index == 2:
            raise UserError("tc: RTNETLINK answers: No buffer space available")
        shaped.append(index)

    monkeypatch.setattr(hosts, "_shape", shape)
    with pytest.raises(UserError):
        lab.set_link(1_000_000_000, None)
    state = json.loads(lab.state.read_text())
    assert shaped == [1] and state["link"] == [100_000_000, None] and state["shaped_apart"] == [1, 2, 3]
    monkeypatch.setattr(hosts, "run", lambda argv, **_: "")  # no link is down
    assert lab.unsettled() == ([], [1, 2, 3])  # settled back to the recorded rate before the next value


def test_the_hosts_lab_refuses_a_machine_with_a_route_into_its_network(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A LAN or VPN on 10.214.x.x (or a wider 10/8): the lab's bridge would take those hosts' addresses over while it
    is up, and the fio servers' job files could go to a machine there. Its own bridge's routes and the default
    route are not clashes."""
    from storbench.errors import UserError
    from storbench.lab import hosts
    from storbench.lab.hosts_conf import subnet_clashes

    own = ("default via 192.0.2.1 dev eth0 \n10.214.0.0/16 dev sbhosts0 proto kernel scope link src 10.214.0.1 \n"
           "local 10.214.0.1 dev sbhosts0 table local proto kernel scope host src 10.214.0.1 \n"
           "blackhole 192.0.2.128/25 \n")
    assert subnet_clashes(own) == []
    assert subnet_clashes(own + "10.0.0.0/8 via 10.8.0.1 dev tun0 \n") == ["10.0.0.0/8 via 10.8.0.1 dev tun0"]
    assert subnet_clashes("local 10.214.3.7 dev eth1 table local proto kernel\n") == ["local 10.214.3.7 dev eth1 table"]
    # a VPN's halves of the default route, and guards that forward nothing wider than the lab's /16: left alone
    assert subnet_clashes(own + "0.0.0.0/1 via 10.8.0.1 dev tun0 \n128.0.0.0/1 via 10.8.0.1 dev tun0 \n"
                          "blackhole 10.0.0.0/8 proto static \nunreachable 10.0.0.0/9 \n"
                          "prohibit 10.214.0.0/15 \n") == []
    # one as narrow as the lab's or narrower shadows its addresses
    assert subnet_clashes("blackhole 10.214.0.0/26 proto bird \n") == ["blackhole 10.214.0.0/26 proto bird"]
    assert subnet_clashes("unreachable 10.214.0.0/16 \n") == ["unreachable 10.214.0.0/16"]
    asked: list[list[str]] = []

    def answer(argv: list[str], **_: object) -> str:
        asked.append(list(argv))
        return "10.214.0.0/16 via 192.0.2.9 dev eth0 \n" if argv[:2] == ["ip", "-o"] else ""

    monkeypatch.setattr(hosts, "run", answer)
    monkeypatch.setattr(hosts, "require_tools", lambda *args, **kwargs: None)
    downs: list[object] = []
    monkeypatch.setattr(hosts.HostsLab, "down", lambda self: downs.append(self))
    with pytest.raises(UserError, match=r"its network 10.214.0.0/16 meets this machine's route 10.214.0.0/16 via"):
        hosts.HostsLab(tmp_path / "lab").up(2, "/usr/bin/fio")
    assert not [argv for argv in asked if "-batch" in argv or argv[0] == "nft"], asked  # nothing built
    assert not downs  # nor a kept lab taken down to be refused


def test_a_kept_hosts_lab_is_reused_only_with_every_server_answering_and_the_same_fio(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`lab hosts up` (the system fio, no nfs engine) then a plan with an nfs target: `up` had reused the servers,
    and every repetition failed for the engine; host 4 of 8 dead in a kept lab had failed every case of 4 clients
    or more (only hosts 1 and 8 were asked)."""
    import json

    from storbench.lab import hosts

    class Rebuilt(Exception):
        pass

    def rebuild(*args: object, **kwargs: object) -> None:
        raise Rebuilt

    from storbench.execute.fio_binary import binary_digest

    lab = hosts.HostsLab(tmp_path / "lab")
    lab.dir.ensure()
    servers = [hosts.lab_host(i).server for i in (1, 2, 3)]
    fio, other = tmp_path / "fio", tmp_path / "fio-nfs"
    fio.write_bytes(b"fio-3.33")
    other.write_bytes(b"fio-3.33 with nfs")
    lab.state.write_text(json.dumps({"root": str(lab.root), "count": 3, "servers": servers,
                                     "fio": {"path": str(fio), "sha256": binary_digest(str(fio))}}))
    dead: set[str] = set()
    monkeypatch.setattr(hosts, "_firewalled", lambda: True)
    monkeypatch.setattr(hosts, "port_open", lambda address, port: address not in dead)
    monkeypatch.setattr(hosts.HostsLab, "down", lambda self: None)
    monkeypatch.setattr(hosts, "require_tools", rebuild)
    assert lab.up(3, str(fio)).servers == tuple(servers)  # the same fio, every server answering: reused
    with pytest.raises(Rebuilt):
        lab.up(3, str(other))
    fio.write_bytes(b"fio-3.39")  # rebuilt in place: one path, another fio
    with pytest.raises(Rebuilt):
        lab.up(3, str(fio))
    fio.write_bytes(b"fio-3.33")
    dead.add(hosts.lab_host(2).address)
    assert not lab.running(3)
    with pytest.raises(Rebuilt):
        lab.up(3, str(fio))


def _dropping(monkeypatch: pytest.MonkeyPatch, drop_s: float, arrives_after_s: float | None = None
              ) -> tuple[Any, list[list[str]], list[float], Case, JobBinding]:
    """A hosts executor of two lab servers on a clock of its own (``now``): each client's page-cache drop takes
    ``drop_s``; the servers reach the barrier ``arrives_after_s`` after the launch (None: they say nothing)."""
    from storbench.execute import hosts as hosts_executor
    from storbench.execute.hosts import ClientsProcessResult, HostsExecutor

    now = [1_000.0]
    executor = HostsExecutor("/usr/bin/fio", ["10.214.0.11,8765", "10.214.0.12,8765"], lab_servers=True)
    sent: list[list[str]] = []

    def clients(texts, servers, timeout_s):  # type: ignore[no-untyped-def]
        sent.append(list(texts))
        lines = () if arrives_after_s is None else tuple(
            (now[0] + arrives_after_s, f"<{host}> job0 : Saving output of prerun in /tmp/x") for host in ("a", "b"))
        return ClientsProcessResult(returncode=1, timed_out=False, stderr_tail="x", started_at_s=0.0,
                                    finished_at_s=1.0, command=(), output_text="", stamped_lines=lines)

    def dropped(text: str) -> bool:
        now[0] += drop_s
        return True

    monkeypatch.setattr(executor, "run_clients", clients)
    monkeypatch.setattr(hosts_executor, "_cache_dropped", dropped)
    monkeypatch.setattr("storbench.execute.hosts.time.time", lambda: now[0])
    case = Case("abc123", PathTarget("t", path="/d", size_bytes=1 << 20),
                WorkloadPoint("randread", 4096, 4, 1, 1.0, 0.0, True, "libaio", size_bytes=1 << 20), clients=2)
    binding = JobBinding(options=(("directory", "/d"), ("filename_format", "storbench.$jobnum.$filenum")))
    return executor, sent, now, case, binding


def test_the_page_cache_drop_before_launch_eats_into_the_barriers_lead_not_the_faults_timing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan's faults are timed from the moment `start_delay_s` is asked (the lead); `run_case` then drops every
    client's page cache (seconds with 100 clients after buffered writes) and had set the barrier a lead after that:
    the faults fired early by the drop's length, before the measured section began."""
    executor, sent, now, case, binding = _dropping(monkeypatch, 0.15)
    lead_s = executor.start_delay_s(case)  # asked at 1000.0, as the fault driver is entered
    executor.run_case(case, render_client_jobs(case, binding), 0, 60.0)
    assert now[0] == pytest.approx(1_000.3)
    for text in sent[0]:
        assert start_barrier_line(int((1_000.0 + lead_s) * 1e9)) in text.split("\n"), text


def test_a_drop_longer_than_the_lead_is_learnt_so_the_next_barrier_keeps_the_faults_moment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The first repetition cannot know how long the drop takes: its barrier moves past the lead. The time the
    servers took to reach it is counted from the faults' moment (before the drop), so the next lead covers the
    drop and the barrier is again that moment plus the lead. Counted from the launch, the lead never grew and
    every repetition's faults fired before the measured section."""
    executor, sent, now, case, binding = _dropping(monkeypatch, 2.0, arrives_after_s=0.3)  # 4 s of drops in all
    for _ in range(2):
        asked_s = now[0]
        lead_s = executor.start_delay_s(case)
        executor.run_case(case, render_client_jobs(case, binding), 0, 60.0)
        now[0] += 10.0
    assert lead_s >= 4.3  # the drop and the launch, learnt from the first repetition
    for text in sent[1]:
        assert start_barrier_line(int((asked_s + lead_s) * 1e9)) in text.split("\n"), text


@pytest.mark.fio
@pytest.mark.skipif(shutil.which("fio") is None or not Path("/proc/net/if_inet6").exists(), reason="needs fio, IPv6")
def test_a_fio_server_on_an_ipv6_address_is_driven(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`[::1]:PORT` had gone to fio as "[::1],PORT", which fio resolves as a host name and fails ("failed to
    resolve"); fio takes an IPv6 address as "ip6:::1,PORT"."""
    import socket
    import subprocess

    with socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))
        port = probe.getsockname()[1]
    data = tmp_path / "data"
    data.mkdir()
    server = subprocess.Popen([shutil.which("fio") or "fio", f"--server=ip6:::1,{port}"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        plan = write_plan(tmp_path, REMOTE_PLAN.format(directory=data).replace("clients: 2\n", "").replace(
            "['10.214.0.10', '10.214.0.11:8765']", f"['[::1]:{port}']"))
        db = tmp_path / "r.db"
        code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db), "--fio-server", f"[::1]:{port}")
        assert code == 0, out + err
    finally:
        server.terminate()
        server.wait(10)
    from storbench.store import open_store

    store = open_store(db)
    repetitions = store.repetitions()
    store.close()
    assert repetitions and all(r.status.value == "ok" and len(r.clients) == 1 for r in repetitions), [
        r.error for r in repetitions]


def test_an_ipv6_server_goes_to_fio_as_ip6_and_reads_back_as_written() -> None:
    from storbench.config.lab import server_address, server_text
    from storbench.fio.outcome import fio_client_name

    sent = server_address("[fe80:0::1]:9000")
    assert sent == "ip6:fe80::1,9000" and server_text(sent) == "[fe80::1]:9000"
    assert fio_client_name(sent) == "fe80::1:9000"
    assert server_text(server_address("db1")) == "db1:8765" and fio_client_name("10.0.0.1,8765") == "10.0.0.1:8765"
    with pytest.raises(ValueError, match="not an IPv6 address"):
        server_address("[12345::]:80")


def test_the_eta_counts_the_start_barriers_lead_on_many_servers() -> None:
    """100 servers wait about 9 s for their barrier every repetition: the plan's ETA had left it out."""
    from storbench.schedule import fio_seconds, repetition_seconds

    case = Case("abc123", PathTarget("t", path="/d", size_bytes=1 << 20),
                WorkloadPoint("randread", 4096, 4, 1, 5.0, 0.0, True, "libaio", size_bytes=1 << 20), clients=100)
    assert repetition_seconds(case) == pytest.approx(fio_seconds(case) + barrier_lead_s(100, None))
    assert barrier_lead_s(100, None) > 8
    one = replace(case, clients=1)
    assert repetition_seconds(one) == fio_seconds(one)  # one client: no barrier
