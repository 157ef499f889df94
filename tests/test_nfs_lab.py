"""A real NFS server on this machine (nfs-ganesha in a network namespace) measured through fio's nfs engine.

Runs in CI (scripts/test.sh installs nfs-ganesha and builds a libnfs fio). Skipped where they are missing."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import run_cli, stored_repetitions, write_plan
from storbench.config import load_plan_text
from storbench.errors import UserError
from storbench.lab.nfs import NfsLab
from storbench.lab.nfs_conf import ANONYMOUS_UID, NAMESPACE, nfs_url
from storbench.lab.process import pids_with
from storbench.plan import expand
from storbench.shell import run


def _nfs_fio() -> str | None:
    from storbench.targets.nfs import nfs_fio_binary

    try:
        return nfs_fio_binary()
    except UserError:
        return None


pytestmark = [
    pytest.mark.fio,
    pytest.mark.nfs,
    pytest.mark.skipif(shutil.which("ganesha.nfsd") is None or os.geteuid() != 0 or _nfs_fio() is None,
                       reason="needs root, nfs-ganesha and a libnfs fio (scripts/setup.sh --labs; "
                              "storbench setup --labs)"),
]

PLAN = """
name: nfs
targets:
  export: {kind: nfs, size: 32MiB}
workload:
  rw: [randwrite, randread]
  bs: [4k, 64k]
  iodepth: 4
  runtime: 1s
repeat: 2
timeout_grace: 10s
lab:
  nfs: {}
"""


@pytest.fixture
def lab_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    directory = tmp_path / "lab"
    monkeypatch.setattr("storbench.lab.nfs.DEFAULT_LAB_DIR", directory)
    yield directory
    NfsLab(directory / "nfs").down()


def test_nfs_export_end_to_end(lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, PLAN)
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db))
    assert code in (0, 1), out + err
    assert "nfs lab: up" in out and "nfs lab: torn down" in out
    # its test file (one job) removed by name over libnfs, as it would be from an export that is not a lab's
    assert "removed 1 test files from nfs://" in out, out
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT case_id, status, job_text, error FROM repetitions").fetchall()
    software = json.loads(conn.execute("SELECT software_json FROM runs").fetchone()[0])
    conn.close()
    assert len(rows) == 8
    # the run records the server's version (history names it when a step comes with an upgrade)
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", software["nfs-ganesha"]), software
    # fio 3.33's nfs engine sometimes hangs at exit: the watchdog must catch it (timeout), nothing else may fail
    assert {r[1] for r in rows} <= {"ok", "timeout"}, [r[3] for r in rows]
    assert all(any(r[1] == "ok" for r in rows if r[0] == case) for case in {r[0] for r in rows})
    assert all("ioengine=nfs" in r[2] and "nfs_url=nfs://" in r[2] for r in rows)
    # nothing left behind
    assert NAMESPACE not in run(["ip", "netns", "list"])
    assert not (lab_dir / "nfs").exists()
    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--format", "csv", "--where", "status=ok")
    assert code == 0 and out.count("\n") >= 5


def _root_is_squashed(root: Path) -> None:
    """fio (root, AUTH_SYS uid 0) writes through the export as the anonymous uid: root is squashed, and the
    lab directory around the export is root's alone."""
    export = root / "export"
    assert os.lstat(export).st_uid == ANONYMOUS_UID and os.lstat(root).st_mode & 0o077 == 0
    fio = _nfs_fio()
    assert fio is not None
    done = subprocess.run([fio, "--name=probe", "--ioengine=nfs", f"--nfs_url={nfs_url()}", "--rw=write",
                           "--bs=4k", "--size=64k", "--filename=squash-probe"], capture_output=True, text=True,
                          timeout=60, check=False)
    written = export / "squash-probe"
    assert written.exists(), done.stdout + done.stderr
    assert os.lstat(written).st_uid == ANONYMOUS_UID


def test_nfs_lab_cli(lab_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "lab", "nfs", "up")
    assert code == 0 and "nfs://" in out
    code, out, _ = run_cli(capsys, "lab", "nfs", "up")  # twice is safe
    assert code == 0
    code, out, _ = run_cli(capsys, "lab", "nfs", "status")
    assert code == 0 and "nfs lab: up" in out
    _root_is_squashed(lab_dir / "nfs")
    code, out, _ = run_cli(capsys, "lab", "nfs", "down")
    assert code == 0 and NAMESPACE not in run(["ip", "netns", "list"])


META_PLAN = """
name: nfs-meta
targets:
  export: {kind: nfs, size: 16MiB}
workload:
  rw: [create, stat, delete, metadata]
  files: 60
  numjobs: [1, 3]
  runtime: 60s
repeat: 1
lab:
  nfs: {}
"""


def test_metadata_operations_on_an_nfs_export_through_libnfs(lab_dir: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """create, stat and delete over libnfs (storbench's fio engine, no mount): one timed operation per file of
    every job, the stored job text with the unmeasured create before stat and delete, nothing left on the
    export."""
    import json

    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, META_PLAN)), "--db", str(db), "--keep-lab")
    assert code == 0, out + err
    code, exported, err = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    records = json.loads(exported)
    # 3 operations x 2 job counts, and the phases (create, stat, delete: 3 directions) x 2 job counts
    assert code == 0 and len(records) == 12 and all(r["status"] == "ok" for r in records), err
    for record in records:
        assert record["total_ios"] == 60 * record["numjobs"], record  # the fill's creates are not counted
        assert record["ioengine"] == "storbench_nfsmeta" and record["lat_p99_ns"] >= record["lat_p50_ns"] > 0
    conn = sqlite3.connect(db)
    texts = {rw: text for rw, text in conn.execute(
        "SELECT json_extract(c.workload_json, '$.rw'), r.job_text FROM repetitions r JOIN cases c ON c.id = r.case_id")}
    conn.close()
    assert "[storbench-fill]" in texts["stat"] and "nfsmeta_op=stat\n" in texts["stat"]
    assert "[storbench-fill]" not in texts["create"] and "unlink=1\n" in texts["create"]
    assert [f"nfsmeta_op={phase}" in texts["metadata"] for phase in ("create", "stat", "delete")] == [True] * 3
    export = lab_dir / "nfs" / "export"
    assert export.is_dir() and list(export.iterdir()) == [], list(export.rglob("*"))[:5]
    assert "ganesha.nfsd" in out  # the server's CPU in the verdicts
    # what a cut delete phase left (some of the files, the first not among them) goes by name, none made again
    from storbench.lab.nfs import NfsLab
    from storbench.targets.nfs import clear_nfs_metadata_files, prepare_nfs_target

    info = NfsLab(lab_dir / "nfs").info()
    assert info is not None
    cycle = next(c for c in expand(load_plan_text(META_PLAN, "p.yaml"))
                 if c.workload.rw == "metadata" and c.workload.numjobs == 3)
    cycle = replace(cycle, target=replace(cycle.target, url=info.url))
    left = export / "storbench-files" / "metadata"
    left.mkdir(parents=True)
    for name in ("storbench.0.7", "storbench.0.59", "storbench.1.3", "storbench.2.0", "someone-elses"):
        (left / name).write_text("")
    for path in (left.parent, left, *left.iterdir()):  # as the NFS clients made them
        os.chown(path, ANONYMOUS_UID, ANONYMOUS_UID)
    clear_nfs_metadata_files(prepare_nfs_target(cycle.target, info.url, [cycle]), cycle)
    assert sorted(p.name for p in left.iterdir()) == ["someone-elses"]  # storbench's names only


FAULT_PLAN = """
name: nfs-fault
targets:
  export: {kind: nfs, size: 16MiB}
workload:
  rw: randread
  bs: [4k, 8k]
  iodepth: 2
  runtime: 3s
repeat: 2
timeout_grace: 5s
lab:
  nfs: {}
"""


def test_the_nfs_server_stopped_mid_run_is_a_recorded_failure_not_a_hang(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ganesha killed during the first repetition with no fault asking: fio (stuck in libnfs) is stopped by the
    watchdog, the repetition is recorded as failed with the server named, the run stops there (it had gone on, every
    later repetition failing against no server), and the lab leaves no process, namespace or directory."""
    import signal
    import threading
    import time


    def kill_server() -> None:
        deadline = time.time() + 60
        while time.time() < deadline and not pids_with("fio --output-format=json+"):
            time.sleep(0.1)
        time.sleep(1.0)  # inside the first measurement
        for pid in pids_with("ganesha.nfsd"):
            os.kill(pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_server)
    killer.start()
    started = time.time()
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, FAULT_PLAN)), "--db", str(db))
    killer.join()
    assert code == 2 and "nfs-ganesha stopped during the run" in err and "--resume" in err, out + err
    assert time.time() - started < 120  # the watchdog, not a hang
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT status, error FROM repetitions ORDER BY id").fetchall()
    conn.close()
    assert len(rows) == 1 and rows[0][0] in ("timeout", "failed"), rows
    assert "nfs-ganesha stopped during the run" in rows[0][1], rows
    assert pids_with("ganesha.nfsd") == [] and NAMESPACE not in run(["ip", "netns", "list"])
    assert not (lab_dir / "nfs").exists()
    # fio's job processes are sessions of their own: the watchdog kills them too, none is left stuck in libnfs
    assert pids_with("fio --output-format=json+") == []


CLIENTS_PLAN = """
name: nfs-clients
targets:
  export: {kind: nfs, size: 8MiB}
workload:
  rw: [randwrite, randread, create, stat]
  bs: 4k
  files: 40
  numjobs: 2
  iodepth: 2
  runtime: 1s
clients: 3
repeat: 1
timeout_grace: 20s
lab:
  nfs: {}
  hosts: {count: 3}
"""


def test_nfs_export_from_many_namespace_hosts(lab_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """clients of an nfs target: the NFS lab joins the hosts lab's bridge, each fio server lays out and reads its
    own files (storbench.c<N>.*) over libnfs, metadata operations count every client's files, and the export is
    empty of metadata files at the end."""
    import json

    from storbench.lab.hosts import HostsLab

    monkeypatch.setattr("storbench.lab.hosts.DEFAULT_LAB_DIR", lab_dir)
    db = tmp_path / "r.db"
    try:
        code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, CLIENTS_PLAN)), "--db", str(db),
                                 "--keep-lab")
        assert code == 0, out + err
        assert "nfs lab: up (nfs://10.214.0.2/export" in out
        export = lab_dir / "nfs" / "export"
        # each of the 3 clients laid out its 2 jobs' files, removed by name at the end; metadata left nothing
        assert "removed 6 test files from nfs://10.214.0.2/export" in out, out
        assert list(export.iterdir()) == [], list(export.rglob("*"))[:5]
        code, exported, err = run_cli(capsys, "export", "--db", str(db), "--format", "json", "--per-client")
        assert code == 0, err
        records = json.loads(exported)
        merged = [r for r in records if not r["client"]]
        assert len(merged) == 4 and all(r["status"] == "ok" for r in merged), merged
        for record in merged:
            if record["rw"] in ("create", "stat"):
                assert record["total_ios"] == 40 * 2 * record["clients"], record
            else:
                assert record["total_ios"] > 0 and record["ioengine"] == "nfs"
        assert len({r["client"] for r in records if r["client"] and r["clients"] == 3}) == 3
    finally:
        NfsLab(lab_dir / "nfs").down()
        HostsLab(lab_dir / "hosts").down()
    assert "sbnfs2" not in run(["ip", "-o", "link", "show"], timeout_s=10)


def test_a_kept_nfs_lab_joins_a_hosts_bridge_made_anew(lab_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both labs kept (--keep-lab), then the hosts lab brought up again with another count: its bridge is new, and
    the NFS lab, still up, must join it again or the servers cannot reach the export."""
    from storbench.lab.hosts import HostsLab
    from storbench.lab.hosts_conf import BRIDGE
    from storbench.lab.nfs_conf import BRIDGED_ADDRESS, NfsLabSpec

    hosts, nfs = HostsLab(lab_dir / "hosts"), NfsLab(lab_dir / "nfs")
    try:
        hosts.up(1, "fio")
        nfs.up(NfsLabSpec(bridge=BRIDGE))
        hosts.up(2, "fio")  # another count: down and up, a new bridge
        assert f"master {BRIDGE}" not in run(["ip", "-o", "link", "show", "sbnfs2"])
        nfs.up(NfsLabSpec(bridge=BRIDGE))
        assert f"master {BRIDGE}" in run(["ip", "-o", "link", "show", "sbnfs2"])
        reach = subprocess.run(["nsenter", "--net=/run/netns/storbench-host-2", "bash", "-c",
                                f"exec 3<>/dev/tcp/{BRIDGED_ADDRESS}/2049"], capture_output=True, timeout=20,
                               check=False)
        assert reach.returncode == 0, reach.stderr
    finally:
        nfs.down()
        hosts.down()


CUT_PLAN = """
name: nfs-cut
targets:
  export: {kind: nfs, size: 32MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 7s, ramp: 1s}
repeat: 2
timeout_grace: 20s
telemetry: {enabled: false}
lab:
  nfs: {}
faults:
  - {at: 3s, do: cut, on: server, restore_after: 1s}
"""


def test_the_nfs_servers_link_cut_for_a_second_stops_io_until_tcp_retries_after_it(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 32 on the NFS lab: each repetition takes the server's link down 3 s into its measured section and up
    1 s later. Nothing is refused, so libnfs's TCP connection retransmits with a growing backoff: no write
    completes for at least the second the link was down, and for at most a few more until a retry goes through;
    every fault is recorded, and the lab is gone afterwards."""
    import json

    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, CUT_PLAN)), "--db", str(db))
    assert code == 0, out + err
    line = next((x for x in out.splitlines() if "cut server, 2 repetitions" in x), "")
    assert line, out
    code, out, err = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    assert code == 0, err
    records = json.loads(out)
    assert len(records) == 2 and all(r["fault"] == "cut server" for r in records), records
    for r in records:
        assert 0.8 <= r["blackout_s"] <= 4.0, line
        assert r["first_io_after_fault_s"] >= 0.8, line
    assert not (lab_dir / "nfs").exists()



# the same cut 1.5 s into file creates and stats, 5,000 files a job, once each
CREATE_CUT_PLAN = (CUT_PLAN.replace("workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 7s, ramp: 1s}",
                                    "workload: {rw: [create, stat], files: 5000, numjobs: 2, runtime: 60s}")
                   .replace("repeat: 2", "repeat: 1").replace("timeout_grace: 20s", "timeout_grace: 30s")
                   .replace("{at: 3s, do: cut", "{at: 1.5s, do: cut"))


def test_files_created_or_stat_ed_through_a_cut_stall_for_the_cut_and_go_on_to_the_last(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """File-create and stat runs (size based: 5,000 files a job, the 60 s runtime only a cap) whose server's link
    is cut 1.5 s in for a second: fio's logs give their failover figures (a blackout of the cut and TCP's retry,
    operations going on after it), read to the last file, not to the cap (which had read the run as stopped for
    good and not recovered). stat's files, made by its job's fill section, are made by that section alone first,
    so the fault is timed from the stats (it had fallen in the fill); the report's timeline counts operations a
    second."""
    import json

    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, CREATE_CUT_PLAN)), "--db", str(db))
    assert code == 0, out + err
    assert "target export: its files or objects made before its faults in " in out and \
           " s (its job's fill section alone, not measured)" in out, out
    assert len([x for x in out.splitlines() if "cut server, 1 repetition" in x]) == 2, out
    code, exported, err = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    assert code == 0, err
    records = {r["rw"]: r for r in json.loads(exported)}
    assert sorted(records) == ["create", "stat"], records
    for record in records.values():
        assert record["fault"] == "cut server" and record["total_ios"] == 10_000, record
        assert 0.8 <= record["blackout_s"] <= 4.0 and record["first_io_after_fault_s"] >= 0.8, record
        assert record["recovery"] != "not recovered", record
    stat = next(r for r in stored_repetitions(db) if r.case.workload.rw == "stat")
    assert "[storbench-fill]" not in stat.job_text.split("\n") and "nfsmeta_op=stat" in stat.job_text, stat.job_text
    assert "; [storbench-fill] ran alone before this job" in stat.job_text, stat.job_text
    code, out, err = run_cli(capsys, "report", "--db", str(db), "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert '"ops/s, all clients"' in html
    summary = html.split("<table class='data summary'>")[1].split("</table>")[0]
    head = re.findall(r"<th[^>]*>([^<]*)</th>", summary)
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", summary)
    assert cells[head.index("MiB/s")] == "-", cells  # a file created moves no data (as `show` says)
    assert html.count('"ops/s, all clients"') == 2
    assert not (lab_dir / "nfs").exists()


CRASH_PLAN = """
name: nfs-crash-and-stop
targets:
  export: {kind: nfs, size: 16MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 11s, ramp: 1s}
repeat: 1
timeout_grace: 30s
telemetry: {enabled: false}
lab:
  nfs: {}
faults:
  - {at: 2s, do: crash, on: server, restore_after: 2s}
  - {at: 7s, do: stop, on: server, restore_after: 2s}
"""


def test_an_nfs_server_that_crashes_or_stops_and_starts_again_stalls_io_until_it_listens_again(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """nfs-ganesha SIGKILLed (a crash) 2 s into the measured section and started again 2 s later, then stopped
    cleanly (SIGTERM, an administrator's restart) at 7 s and started again 2 s later: each time libnfs's connection
    is reset or closed and it reconnects once the server listens again (NFSv3 holds no state to recover), so no
    write completes for about the two seconds plus the restart, and writes go on after; the repetition is not a
    failure, and no ganesha is left running."""
    import json

    from storbench.stats.failover_points import client_logs, measured_section
    from storbench.stats.timeline import failover

    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, CRASH_PLAN)), "--db", str(db))
    assert code == 0, out + err

    (repetition,) = stored_repetitions(db)
    crash, started, stop, again = repetition.faults
    assert crash.said == "nfs lab: server killed" and started.said.startswith("nfs lab: server started again")
    assert stop.said.startswith("nfs lab: server stopped (ganesha exited after ") and again.said.startswith(
        "nfs lab: server started again"), repetition.faults
    code, exported, err = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    assert code == 0, err
    (record,) = json.loads(exported)  # the failover figures read the first fault
    assert record["status"] == "ok" and record["fault"] == "crash server", record
    assert 1.5 <= record["blackout_s"] <= 5 and record["first_io_after_fault_s"] >= 1.5, record
    logs = client_logs(repetition)  # the second fault read on the same logs
    start_ms, end_ms = measured_section(logs, 100, 11)
    second = failover(logs, 100, round(stop.at_s * 1000), start_ms, end_ms, round(again.at_s * 1000))
    assert 1.5 <= second.blackout_s <= 5 and second.first_completion_s >= 1.5, second
    assert record["total_ios"] > 0 and not (lab_dir / "nfs").exists()
    assert not pids_with("ganesha.nfsd"), "a ganesha left running"


CUT_CLIENT_PLAN = """
name: client-cut
targets:
  export: {kind: nfs, size: 8MiB}
workload: {rw: randread, bs: 64k, iodepth: 2, runtime: 6s, ramp: 1s}
clients: 2
repeat: 1
telemetry: {interval: 0.5s}
timeout_grace: 30s
lab:
  nfs: {}
  hosts: {count: 2, link: 200Mbit}
faults:
  - {at: 2s, do: cut, on: client.2, restore_after: 2s}
  - {at: 4s, do: slow, on: client.1, to: 20Mbit, restore_after: 1s}
"""


def test_one_clients_link_cut_for_two_seconds_stalls_that_client_only(
        lab_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 32's per-client timeline: two fio servers of the hosts lab read the NFS lab's export; 2 s into the
    measured section client.2's link goes down for 2 s. Each server's 100 ms logs come back through `fio --client`
    (named after the server): client.2 shows a gap of about the cut (plus TCP's retransmission back-off), client.1
    none, and the report draws each client's blackout."""
    from storbench.lab.hosts import HostsLab
    from storbench.lab.hosts_conf import lab_host
    from storbench.stats.failover_points import point_failovers

    monkeypatch.setattr("storbench.lab.hosts.DEFAULT_LAB_DIR", lab_dir)
    db = tmp_path / "r.db"
    try:
        code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, CUT_CLIENT_PLAN)), "--db", str(db))
        assert code == 0, out + err
        (repetition,) = stored_repetitions(db)
        cut, back, slow, unslowed = repetition.faults
        assert (cut.said, back.said) == ("hosts lab: client.2's link down", "hosts lab: client.2's link up again")
        # a second fault, after: client.1's link shaped to 20 Mbit/s for a second (a level, `to:`), then as the
        # lab's links again
        assert (slow.said, unslowed.said) == ("hosts lab: client.1's link shaped to 20Mbit",
                                              "hosts lab: client.1's link shaped to 200Mbit again"), repetition.faults
        # while slowed, client.1's link is judged against 20 Mbit/s, which the export's reads fill: against the
        # lab's 200 Mbit/s the same bytes had read as 10 % at most
        assert repetition.telemetry is not None
        (util,) = repetition.telemetry.find("net", "util_pct", lab_host(1).host_veth)
        inside = [value for t0, t1, value in zip(util.starts_s, util.times_s, util.values, strict=True)
                  if slow.at_s <= t0 and t1 <= unslowed.at_s]
        assert inside and max(inside) > 50, util
        (point,) = point_failovers([repetition])
        blackouts = {client: seconds.mean for client, seconds in point.client_blackouts_s}
        assert len(blackouts) == 2, blackouts
        cut_client = next(c for c in blackouts if c.startswith(lab_host(2).address))
        other = next(c for c in blackouts if c != cut_client)
        # client.1, slowed to 20 Mbit/s for a second, goes on slower: 64 KiB reads had stalled there for the whole
        # second when the shaping's bucket was smaller than the packets the bridge hands it (up to 64 KiB)
        assert 1.5 <= blackouts[cut_client] <= 6 and blackouts[other] < 0.5, blackouts
        assert "each client's blackout:" in " ".join(out.split()), out
        code, _, err = run_cli(capsys, "report", "--db", str(db), "-o", str(tmp_path / "r.html"))
        assert code == 0, err
        assert "failover-clients-run1-" in (tmp_path / "r.html").read_text()
    finally:
        NfsLab(lab_dir / "nfs").down()
        HostsLab(lab_dir / "hosts").down()


def test_settling_after_faults_brings_back_a_server_a_failed_restore_left_down(lab_dir: Path) -> None:
    """Between repetitions with faults the NFS lab is made whole, as the Ceph lab is: a server whose restore
    failed (killed, or its links left down) listens again before the next repetition meets it; a whole lab is left
    alone (nothing said)."""
    from storbench.config import load_plan_text
    from storbench.events import LabHealed
    from storbench.lab.nfs import KIND
    from storbench.plan import expand

    (case,) = expand(load_plan_text("name: s\ntargets:\n  export: {kind: nfs, size: 8MiB}\nworkload: {rw: read}\n"
                                    "lab:\n  nfs: {}\n", "s.yaml"))
    lab = NfsLab()
    lab.up()
    assert KIND.settle(case, {}) is None
    assert KIND.lost(case, {}) is None
    lab.crash_server()
    assert not lab.running()
    said = KIND.lost(case, {})  # crashed with no fault asking: a run stops there
    assert said is not None and said[0].startswith("nfs lab: nfs-ganesha stopped during the run")
    assert "--resume" in said[1]
    healed = KIND.settle(case, {})
    assert isinstance(healed, LabHealed) and healed.lab == "nfs" and lab.running()
    lab.set_links(up=False)
    assert lab.links_down()
    assert isinstance(KIND.settle(case, {}), LabHealed) and lab.running() and not lab.links_down()
    assert KIND.settle(case, {}) is None
