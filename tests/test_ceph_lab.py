"""A real Ceph cluster on this machine: RBD on a size-2 and a size-3 pool end to end, with OSD CPU and the
BlueStore cache hit ratio beside IOPS; memstore OSDs judged CPU-bound.

Runs in CI (scripts/test.sh installs Ceph). Skipped where Ceph's daemons are not installed."""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from helpers import run_cli, stored_repetitions, write_plan
from storbench.lab.ceph import CephLab
from storbench.lab.hosts import HostsLab
from storbench.lab.process import pids_with

pytestmark = [
    pytest.mark.fio,
    pytest.mark.ceph,
    pytest.mark.skipif(shutil.which("ceph-mon") is None or os.geteuid() != 0,
                       reason="needs root and Ceph (scripts/setup.sh --labs)"),
]

PLAN = """
name: replica
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 128MiB}
workload:
  rw: [randwrite, randread]
  bs: 4k
  iodepth: 16
  runtime: 2s
repeat: 2
lab:
  ceph:
    osds: 3
    osd_size: 2GiB
    pool_size: [2, 3]
"""

CPU_PLAN = """
name: memstore-cpu
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 256MiB}
workload:
  rw: randwrite
  bs: 4k
  iodepth: 32
  numjobs: 2
  runtime: 3s
repeat: 2
lab:
  ceph: {osds: 3, osd_size: 1GiB, objectstore: memstore, pool_size: 2}
"""


CLIENTS_PLAN = """
name: rbd-clients
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 64MiB}
workload:
  rw: [randwrite, randread]
  bs: 4k
  iodepth: 4
  runtime: 1s
clients: [1, 2]
repeat: 1
lab:
  ceph: {osds: 1, osd_size: 1GiB, objectstore: memstore, pool_size: 1}
  hosts: {count: 2}
"""


@pytest.fixture
def lab_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "lab"
    monkeypatch.setattr("storbench.lab.ceph.DEFAULT_LAB_DIR", directory)
    monkeypatch.setattr("storbench.lab.hosts.DEFAULT_LAB_DIR", directory)
    yield directory
    CephLab(directory / "ceph").down()
    HostsLab(directory / "hosts").down()


def _run(plan_text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    """Run a plan into tmp_path/r.db; returns the database and the run's output."""
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, plan_text)), "--db", str(db))
    assert code == 0, out + err
    return db, out


def test_rbd_randwrite_replica_2_vs_3(lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, out = _run(PLAN, tmp_path, capsys)
    # both replica sizes on one cluster, a pool each, alternating: the setting is not confounded with the cluster
    assert out.count("ceph lab: bringing up") == 1 and out.count("ceph lab: torn down") == 1
    assert "osd_size=2GiB" in out  # sizes shown with their unit
    assert "pools bench-size2 (size 2), bench-size3 (size 3)" in out
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT r.status, c.lab_json, r.job_text, r.target_json, json_extract(c.workload_json, '$.rw') "
                        "FROM repetitions r "
                        "JOIN cases c ON c.id = r.case_id ORDER BY r.started_at_s").fetchall()
    conn.close()
    assert len(rows) == 8 and {r[0] for r in rows} == {"ok"}
    sizes = [dict(json.loads(r[1]))["pool_size"] for r in rows]
    assert sorted(sizes) == ["2"] * 4 + ["3"] * 4
    for _status, _lab, job_text, target_json, _rw in rows:
        size = json.loads(target_json)["pool_size"]  # lab parameters in provenance
        assert json.loads(target_json)["pool"] == f"bench-size{size}"
        assert "ioengine=rbd" in job_text and f"pool=bench-size{size}\n" in job_text and "rbdname=img" in job_text
    writes = [s for s, r in zip(sizes, rows, strict=True) if r[4] == "randwrite"]
    assert writes == ["2", "3", "3", "2"]  # A B B A on the one cluster
    # nothing left behind: no daemon, no directory
    assert pids_with(str(lab_dir) + "/") == []
    assert not (lab_dir / "ceph").exists()

    code, out, err = run_cli(capsys, "compare", "--db", str(db), "--baseline", "pool_size=2", "--candidate",
                             "pool_size=3", "--format", "json")
    assert code == 0, err
    cells = json.loads(out)
    iops = [r for r in cells if r["metric"] == "iops" and r["direction"] == "write"]
    assert len(iops) == 1 and iops[0]["baseline_n"] == 2 and iops[0]["candidate_n"] == 2
    assert iops[0]["baseline_mean"] > 0 and iops[0]["candidate_mean"] > 0
    assert iops[0]["verdict"] in ("better", "worse", "~")
    assert iops[0]["baseline_bottleneck"] != "unknown" and iops[0]["candidate_bottleneck"] != "unknown"
    # issue 35: a third copy costs the OSDs more CPU per write, and about the same per read (served by the primary)
    osd = {r["direction"]: r for r in cells if r["metric"] == "osd_cpu_us_per_io"}
    assert set(osd) == {"read", "write"}, osd.keys()
    write_ratio = osd["write"]["candidate_mean"] / osd["write"]["baseline_mean"]
    read_ratio = osd["read"]["candidate_mean"] / osd["read"]["baseline_mean"]
    assert write_ratio > 1.15 and 0.75 < read_ratio < 1.33, (write_ratio, read_ratio)
    code, out, _ = run_cli(capsys, "compare", "--db", str(db), "--baseline", "pool_size=2", "--candidate",
                           "pool_size=3")
    flat = " ".join(out.split())
    assert "CPU cost per I/O, baseline vs candidate" in flat and "ceph-osd CPU per I/O (µs)" in flat, out
    assert "a point's intervals share its error rate among the " in flat, out
    code, out, err = run_cli(capsys, "show", "--db", str(db), "--cost")
    assert code == 0 and "ceph-osd" in out and "IOPS/osd core" in " ".join(out.split()), out + err

    # the OSDs' own view beside IOPS: their CPU, their op latency, the BlueStore cache hit ratio of reads
    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    records = json.loads(out)
    for record in records:
        assert record["ceph_osd_cpu_cores"] > 0.1  # three OSDs doing the I/O
        assert record["ceph_op_latency_ns"] > 0
        assert 0 < record["ceph_op_latency_ns"] < record["lat_mean_ns"]  # the OSD is part of fio's latency
    reads = [r for r in records if r["rw"] == "randread"]
    assert len(reads) == 4 and all(0 <= r["ceph_cache_hit_pct"] <= 100 for r in reads)
    for record in records:  # what each I/O cost the OSDs in CPU, beside the rest
        assert 0 < record["osd_cpu_us_per_io"] < record["total_cpu_us_per_io"]
        assert record["iops_per_osd_core"] > 0 and record["osd_host_cpu_pct"] > 0
    code, out, _ = run_cli(capsys, "show", "--db", str(db))
    header = next(line for line in out.splitlines() if "IOPS" in line)
    assert "osd cor" in header and "cache hit" in header and "verdict" in header  # (narrow test console)


def test_memstore_osds_on_two_cores_are_cpu_bound(lab_dir: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Memstore keeps data in RAM: no device can be the limit, the CPU that runs OSDs, mon and fio is."""
    _db, out = _run(CPU_PLAN, tmp_path, capsys)
    verdicts = [line for line in out.splitlines() if line.startswith("  rbd randwrite")]
    assert len(verdicts) == 1 and "cpu-bound" in verdicts[0] and "ceph-osd" in verdicts[0], out


def test_rbd_from_two_namespace_hosts_each_on_its_own_image(lab_dir: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """fio servers in network namespaces reach a Ceph lab on their bridge; every client has its own image."""
    db, out = _run(CLIENTS_PLAN, tmp_path, capsys)
    assert "hosts lab: 2 fio servers up" in out and "ceph lab: torn down" in out
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT r.status, c.clients, r.job_text, r.target_json, r.id FROM repetitions r "
                        "JOIN cases c ON c.id = r.case_id").fetchall()
    names = {rep_id: sorted(n for (n,) in conn.execute("SELECT name FROM clients WHERE repetition_id = ?",
                                                        (rep_id,))) for *_, rep_id in rows}
    conn.close()
    assert len(rows) == 4 and {r[0] for r in rows} == {"ok"}
    for _status, clients, job_text, target_json, rep_id in rows:
        details = json.loads(target_json)
        assert details["image"] == "img-c1 .. img-c2" and details["image_prefilled"].startswith("yes, 2 in")
        assert names[rep_id] == ["10.214.0.10:8765", "10.214.0.11:8765"][:clients]
        for index in range(1, clients + 1):
            assert f"rbdname=img-c{index}\n" in job_text
        assert "rbdname=img\n" not in job_text
    assert pids_with(str(lab_dir) + "/") == []
    assert "storbench-host-" not in os.popen("ip netns list").read()


def test_lab_cli_up_twice_status_down(lab_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "lab", "ceph", "up", "--osds", "1", "--pool", "one:1", "--osd-size", "1GiB")
    assert code == 0 and "conf" in out
    conf = lab_dir / "ceph" / "ceph.conf"
    assert conf.exists()
    first_pids = sorted(pids_with(str(lab_dir) + "/"))
    assert len(first_pids) >= 3  # mon, mgr, osd
    code, out, _ = run_cli(capsys, "lab", "ceph", "up", "--osds", "1", "--pool", "one:1", "--osd-size", "1GiB")
    assert code == 0 and sorted(pids_with(str(lab_dir) + "/")) == first_pids  # the same cluster, untouched
    code, out, _ = run_cli(capsys, "lab", "ceph", "status")
    assert code == 0 and "HEALTH_OK" in out and "one (size 1)" in out
    code, out, _ = run_cli(capsys, "lab", "ceph", "down")
    assert code == 0
    assert pids_with(str(lab_dir) + "/") == [] and not (lab_dir / "ceph").exists()
    code, out, _ = run_cli(capsys, "lab", "ceph", "status")
    assert code == 0 and "down" in out


def test_pool_size_larger_than_osds_is_a_plan_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, PLAN.replace("osds: 3", "osds: 2"))
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and "pool_size 3 needs at least 3 OSDs" in err and "lab.ceph.pool_size" in err


ADAPTIVE_PLAN = """
name: replica-adaptive
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 64MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 8, runtime: 1s}
repeat: {min: 3, max: 6, until: decided}
compare: {baseline: pool_size=1, candidate: pool_size=2, metrics: [iops], margin: 50%}
telemetry: {enabled: false}
lab:
  ceph: {osds: 2, osd_size: 1GiB, objectstore: memstore, pool_size: [1, 2]}
"""


def test_replica_sizes_alternate_on_one_cluster_until_decided(lab_dir: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    db, out = _run(ADAPTIVE_PLAN, tmp_path, capsys)
    assert out.count("ceph lab: bringing up") == 1
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT c.lab_json, r.rep_index FROM repetitions r JOIN cases c ON c.id = r.case_id "
                        "ORDER BY r.started_at_s").fetchall()
    conn.close()
    sizes = [dict(json.loads(lab))["pool_size"] for lab, _ in rows]
    rounds = len(rows) // 2
    assert len(rows) == 2 * rounds and 3 <= rounds <= 6
    assert sizes == ["1", "2", "2", "1", "1", "2", "2", "1", "1", "2", "2", "1"][:len(rows)]  # A B B A ...
    looks = [line for line in out.splitlines() if "after " in line and " rounds: " in line]
    assert looks and "after 3 rounds" in looks[0]
    last = looks[-1]
    if rounds < 6:  # stopped early: the last look decided
        assert "undecided" not in last and f"after {rounds} rounds" in last
    assert f"{2 * (6 - rounds)} not needed" in out if rounds < 6 else "not needed" not in out


CACHE_PLAN = """
name: cache-live
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 64MiB}
workload: {rw: randread, bs: 4k, iodepth: 4, runtime: 1s}
repeat: 2
telemetry: {enabled: false}
lab:
  ceph:
    osds: 1
    osd_size: 1GiB
    pool_size: 1
    cache_size: [64MiB, 128MiB]
    config: {osd_op_queue: wpq}
"""


def test_a_cache_size_axis_restarts_the_osds_with_each_value(lab_dir: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Both cache sizes on one cluster, A B B A; before each repetition the test itself asks every OSD's admin
    socket what it runs with: the case's cache size, and the plan's other option, every time."""
    from storbench.execute.local import LocalExecutor

    seen: list[tuple[int | None, dict[str, str]]] = []
    original = LocalExecutor.run_case

    def asking_the_osds(self: LocalExecutor, case, *args, **kwargs):  # type: ignore[no-untyped-def]
        shown = {}
        for socket in sorted((lab_dir / "ceph" / "run").glob("ceph-osd.*.asok")):
            running = json.loads(subprocess.run(["ceph", "--admin-daemon", str(socket), "config", "show"],
                                                capture_output=True, text=True, check=True).stdout)
            for name in ("bluestore_cache_size", "bluestore_cache_autotune", "osd_op_queue"):
                shown[f"{socket.name}:{name}"] = running[name]
        seen.append((case.lab.ceph.cache_size_bytes, shown))
        return original(self, case, *args, **kwargs)

    monkeypatch.setattr(LocalExecutor, "run_case", asking_the_osds)
    db, out = _run(CACHE_PLAN, tmp_path, capsys)
    assert out.count("ceph lab: bringing up") == 1  # one cluster for both values
    assert [size for size, _ in seen] == [64 << 20, 128 << 20, 128 << 20, 64 << 20]  # A B B A
    for size, shown in seen:
        assert len(shown) == 3  # the OSD answered
        assert {v for k, v in shown.items() if k.endswith("bluestore_cache_size")} == {str(size)}
        assert {v for k, v in shown.items() if k.endswith("autotune")} == {"false"}
        assert {v for k, v in shown.items() if k.endswith("osd_op_queue")} == {"wpq"}
    assert out.count("OSDs restarted with") == 2  # at each change, not before every repetition
    assert "cache_size=128MiB" in out
    conn = sqlite3.connect(db)
    statuses = [r[0] for r in conn.execute("SELECT status FROM repetitions")]
    conn.close()
    assert statuses == ["ok"] * 4
    assert pids_with(str(lab_dir) + "/") == [] and not (lab_dir / "ceph").exists()


FRESH_PLAN = """
name: osds-fresh
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 32MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 1s}
repeat: 2
telemetry: {enabled: false}
lab:
  ceph: {osds: [1, 2], osd_size: 1GiB, objectstore: memstore, pool_size: 1, bring_up: each_repetition}
"""


@pytest.mark.long  # its short case: test_osds_per_device_splits_one_loop_device_among_its_osds (fresh per repetition)
def test_a_fresh_cluster_per_round_alternates_osd_counts(lab_dir: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """osds 1 vs 2 with a fresh cluster per value and round: four bring-ups in the order A B B A, each a new
    cluster (its own fsid), and compare pairs the rounds and says the instance is sampled."""
    from storbench.lab.ceph import CephLab

    fsids: list[tuple[int, str]] = []
    original = CephLab.up

    def recording_up(self: CephLab, spec, *args, **kwargs):  # type: ignore[no-untyped-def]
        info = original(self, spec, *args, **kwargs)
        fsids.append((spec.osds, info.fsid))
        return info

    monkeypatch.setattr(CephLab, "up", recording_up)
    db, out = _run(FRESH_PLAN, tmp_path, capsys)
    assert "a fresh cluster per value and round, A B B A (2 bring-ups per arm)" in out
    assert [osds for osds, _ in fsids] == [1, 2, 2, 1] and len({fsid for _, fsid in fsids}) == 4
    assert out.count("ceph lab: torn down") == 4
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT c.lab_json, r.rep_index, r.status FROM repetitions r JOIN cases c ON c.id = r.case_id "
                        "ORDER BY r.started_at_s").fetchall()
    conn.close()
    assert [(dict(json.loads(lab))["osds"], rep) for lab, rep, _ in rows] == [("1", 0), ("2", 0), ("2", 1), ("1", 1)]
    assert {status for _, _, status in rows} == {"ok"}
    code, out, err = run_cli(capsys, "compare", "--db", str(db), "--baseline", "osds=1", "--candidate", "osds=2",
                             "--format", "json")
    assert code == 0, err
    iops = next(r for r in json.loads(out) if r["metric"] == "iops")
    assert iops["interval"] == "paired" and iops["pairs"] == 2
    code, out, err = run_cli(capsys, "compare", "--db", str(db), "--baseline", "osds=1", "--candidate", "osds=2")
    assert code == 0 and "a fresh cluster per value and round" in out + err and "confounded" not in out + err
    assert pids_with(str(lab_dir) + "/") == [] and not (lab_dir / "ceph").exists()


SIDE_PLAN = """
name: osds-side-by-side
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 32MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 1s}
repeat: 2
lab:
  ceph: {osds: [1, 2], osd_size: 1GiB, objectstore: memstore, pool_size: 1, bring_up: side_by_side}
"""


def test_clusters_side_by_side_alternate_osd_counts(lab_dir: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """osds 1 vs 2 side by side: both clusters up at once (each repetition sees both alive), each on its own
    directory and conf, the repetitions alternate A B B A, each case's image is on its own cluster, telemetry
    reads only that cluster's OSDs, and both are gone afterwards."""
    from storbench.execute.local import LocalExecutor

    alive: list[tuple[int, bool, bool]] = []
    original = LocalExecutor.run_case

    def checking(self: LocalExecutor, case, *args, **kwargs):  # type: ignore[no-untyped-def]
        from storbench.lab.ceph import CephLab

        alive.append((case.lab.ceph.osds, CephLab(lab_dir / "ceph").running(), CephLab(lab_dir / "ceph-2").running()))
        return original(self, case, *args, **kwargs)

    monkeypatch.setattr(LocalExecutor, "run_case", checking)
    db, out = _run(SIDE_PLAN, tmp_path, capsys)
    assert "osds: clusters side by side" in out and "(cluster 2 of 2 side by side)" in out
    assert [osds for osds, _, _ in alive] == [1, 2, 2, 1] and all(a and b for _, a, b in alive)
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT c.lab_json, r.target_json, r.status FROM repetitions r "
                        "JOIN cases c ON c.id = r.case_id ORDER BY r.started_at_s").fetchall()
    conn.close()
    for lab_json, target_json, status in rows:
        osds = dict(json.loads(lab_json))["osds"]
        assert status == "ok"
        conf = json.loads(target_json)["conf"]
        assert conf == str(lab_dir / ("ceph" if osds == "1" else "ceph-2") / "ceph.conf")
    from storbench.store import open_store

    for rep in open_store(db).repetitions():  # the OSD counters of the case's own cluster only
        assert rep.telemetry is not None and rep.case.lab.ceph is not None
        osds = {s.entity for s in rep.telemetry.series if s.source == "ceph"}
        assert osds == {f"osd.{i}" for i in range(rep.case.lab.ceph.osds)}, osds
    code, out, err = run_cli(capsys, "compare", "--db", str(db), "--baseline", "osds=1", "--candidate", "osds=2")
    assert code == 0 and "side by side" in out + err and "one cluster instance" in out + err
    assert pids_with(str(lab_dir) + "/") == []
    assert not (lab_dir / "ceph").exists() and not (lab_dir / "ceph-2").exists()


CPUS_PLAN = """
name: osd-cpus
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 32MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 8, runtime: 2s}
repeat: 2
lab:
  ceph: {osds: 1, osd_size: 1GiB, objectstore: memstore, pool_size: 1, osd_cpus: [0.2, 1]}
"""


def test_an_osd_cpu_quota_is_applied_live_and_read_back(lab_dir: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """osd_cpus 0.2 vs 1 on one cluster, A B B A, no restart: before each repetition the test reads the OSD's
    cgroup quota file itself; at 0.2 cores the OSD is held by its quota and the verdict says so."""
    from storbench.execute.local import LocalExecutor
    from storbench.lab import cpu_quota
    from storbench.lab.ceph import CephLab

    seen: list[tuple[float, float | None, bool]] = []
    original = LocalExecutor.run_case

    def reading_the_quota(self: LocalExecutor, case, *args, **kwargs):  # type: ignore[no-untyped-def]
        lab = CephLab(lab_dir / "ceph")
        ctl = cpu_quota.controller()
        assert ctl is not None
        [osd] = [d for d in json.loads((lab.root / "pids.json").read_text()) if d["name"].startswith("osd.")]
        group = cpu_quota.group_dir(ctl, lab.root.name, osd["name"])
        procs = (group / "cgroup.procs").read_text().split()
        quota = cpu_quota.parse_quota("cpu.cfs_quota_us" if not ctl.v2 else "cpu.max",
                                      (group / ("cpu.max" if ctl.v2 else "cpu.cfs_quota_us")).read_text())
        seen.append((case.lab.ceph.osd_cpus, quota, str(osd["pid"]) in procs))
        return original(self, case, *args, **kwargs)

    monkeypatch.setattr(LocalExecutor, "run_case", reading_the_quota)
    db, out = _run(CPUS_PLAN, tmp_path, capsys)
    assert [cores for cores, _, _ in seen] == [0.2, 1.0, 1.0, 0.2]  # A B B A
    assert all(quota == cores and inside for cores, quota, inside in seen), seen
    assert "OSDs restarted" not in out and out.count("OSD CPU quota set to") == 3
    code, out, err = run_cli(capsys, "show", "--db", str(db))
    assert code == 0, err
    verdicts = " ".join(out.split("bottlenecks (rules:")[1].split())  # the verdicts, lines unwrapped
    slow = verdicts.split("osd_cpus=0.2:")[1].split("rbd randwrite")[0]
    assert "cpu-bound" in slow and "of its 0.2-core CPU quota" in slow, out
    assert pids_with(str(lab_dir) + "/") == [] and not (lab_dir / "ceph").exists()
    ctl = cpu_quota.controller()
    assert ctl is not None and not list(ctl.root.glob(f"{cpu_quota.GROUP_PREFIX}-ceph-*"))  # cgroups removed


LINK_PLAN = """
name: link-speed
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 128MiB}
workload: {rw: read, bs: 1m, iodepth: 4, runtime: 5s, ramp: 1s}
clients: 1
repeat: 1
lab:
  ceph: {osds: 1, osd_size: 1GiB, objectstore: memstore, pool_size: 1}
  hosts: {count: 1, link: [50Mbit, 200Mbit]}
"""


def test_a_shaped_client_link_makes_large_reads_network_bound(lab_dir: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Client link 50 vs 200 Mbit/s (netem on both ends of the host's veth), one Ceph cluster, one repetition each
    (the A B B A order of a live setting is the replica and OSD CPU cases'): before each repetition the test reads
    the shaping back from tc; 1 MiB reads then run at about the link's rate, and
    the slow link's points are network-bound."""
    from storbench.execute.hosts import HostsExecutor
    from storbench.lab.hosts import HostsLab

    seen: list[tuple[int, str]] = []
    original = HostsExecutor.run_case

    def reading_tc(self: HostsExecutor, case, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((case.lab.link_bits_per_s, HostsLab(lab_dir / "hosts").shaping(1)))
        return original(self, case, *args, **kwargs)

    monkeypatch.setattr(HostsExecutor, "run_case", reading_tc)
    db, out = _run(LINK_PLAN, tmp_path, capsys)
    assert [rate for rate, _ in seen] == [50 * 10**6, 200 * 10**6]  # reshaped between the two
    for rate, shown in seen:
        assert "tbf" in shown and f"rate {rate // 10**6}Mbit" in shown, shown
    assert out.count("ceph lab: bringing up") == 1 and "links shaped to 50Mbit" in out
    code, out, err = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    assert code == 0, err
    for record in json.loads(out):
        rate_bytes = int(dict(kv.split("=", 1) for kv in record["lab"].split())["link"]) / 8
        assert 0.6 * rate_bytes <= record["bw_bytes_per_s"] <= 1.05 * rate_bytes, (record["bw_bytes_per_s"], rate_bytes)
    code, out, err = run_cli(capsys, "show", "--db", str(db))
    slow = next(line for line in out.splitlines() if "link=" in line and "50" in line and "network-bound" in line)
    assert "sbh1a at" in slow, out
    assert "storbench-host-" not in os.popen("ip netns list").read()


DB_PLAN = """
name: db-device
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 32MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 1s}
repeat: 1
telemetry: {enabled: false}
lab:
  ceph: {osds: 1, osd_size: 2GiB, pool_size: 1, db_device: [none, fast], db_size: 256MiB}
"""


def test_a_fast_db_device_really_holds_bluestores_db(lab_dir: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """db_device none vs fast: before each repetition the test asks the cluster's OSD metadata where BlueFS keeps
    its DB: a dedicated DB device on the lab's tmpfs for fast, none for none; the tmpfs goes with the lab."""
    from storbench.execute.local import LocalExecutor
    from storbench.lab.ceph import CephLab

    seen: list[tuple[str, dict[str, str], bool, dict[str, int]]] = []
    original = LocalExecutor.run_case

    def asking_the_cluster(self: LocalExecutor, case, *args, **kwargs):  # type: ignore[no-untyped-def]
        lab = CephLab(lab_dir / "ceph")
        fast = lab.root / "fastdb"
        files = {f.name: f.stat().st_size for f in fast.iterdir()} if fast.is_dir() else {}
        seen.append((case.lab.ceph.db_device, lab.osd_db_devices()["osd.0"], os.path.ismount(fast), files))
        return original(self, case, *args, **kwargs)

    monkeypatch.setattr(LocalExecutor, "run_case", asking_the_cluster)
    _db, out = _run(DB_PLAN, tmp_path, capsys)
    assert sorted(device for device, _, _, _ in seen) == ["fast", "none"]
    assert "emulated" in out
    for device, bluefs, mounted, files in seen:
        if device == "fast":  # BlueFS has a dedicated DB device, and it is the file on the lab's tmpfs
            assert bluefs.get("bluefs_dedicated_db") == "1" and mounted, bluefs
            assert files == {"ceph-0.db": 256 << 20}, files
        else:
            assert bluefs.get("bluefs_dedicated_db") == "0" and not mounted and not files, bluefs
    assert pids_with(str(lab_dir) + "/") == [] and not (lab_dir / "ceph").exists()
    assert str(lab_dir) not in Path("/proc/mounts").read_text()


OPD_PLAN = """
name: osds-per-device
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 32MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 1s}
repeat: 1
telemetry: {enabled: false}
lab:
  ceph: {pool_size: 1, devices: 1, device_size: 2GiB, osds_per_device: [1, 2], bring_up: each_repetition}
"""


def test_osds_per_device_splits_one_loop_device_among_its_osds(lab_dir: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """One device of 2 GiB holding 1, then 2 OSDs: before each repetition the test counts the device-mapper
    slices on the lab's loop device and the OSDs up, and finds each OSD's block on a slice; all gone after."""
    from storbench.execute.local import LocalExecutor
    from storbench.lab import devices
    from storbench.lab.ceph import CephLab

    seen: list[tuple[int, int, int, list[str]]] = []
    original = LocalExecutor.run_case

    def counting(self: LocalExecutor, case, *args, **kwargs):  # type: ignore[no-untyped-def]
        lab = CephLab(lab_dir / "ceph")
        stat = lab.mon("osd stat")
        blocks = sorted(os.path.realpath(lab.root / d / "block") for d in os.listdir(lab.root) if d.startswith("osd."))
        slices = devices.slices_of(lab.root, 0)
        seen.append((case.lab.ceph.osds_per_device, len(slices), int(stat["num_up_osds"]), blocks))
        assert blocks == slices  # each OSD's block is a slice of the one device
        return original(self, case, *args, **kwargs)

    monkeypatch.setattr(LocalExecutor, "run_case", counting)
    _run(OPD_PLAN, tmp_path, capsys)
    assert sorted(per for per, _, _, _ in seen) == [1, 2]
    for per, slices, up, blocks in seen:
        assert slices == per and up == per, seen
        assert len(blocks) == per and all(b.startswith("/dev/loop") for b in blocks), blocks
    assert pids_with(str(lab_dir) + "/") == [] and not (lab_dir / "ceph").exists()
    assert "device0.img" not in os.popen("losetup -a").read()


PIN_PLAN = """
name: osd-cpuset
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 32MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 1s}
repeat: 2
telemetry: {enabled: false}
lab:
  ceph: {osds: 1, osd_size: 1GiB, objectstore: memstore, pool_size: 1, osd_cpuset: [1, 0-1]}
"""


def test_osds_are_pinned_live_and_the_kernel_says_so(lab_dir: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """osd_cpuset 1 vs 0-1, A B B A on one cluster without a restart: before each repetition the test reads the
    OSD process's allowed CPUs from /proc (Cpus_allowed_list), which the kernel sets from its cpuset."""
    from storbench.execute.local import LocalExecutor
    from storbench.lab.ceph import CephLab

    seen: list[tuple[str, str]] = []
    original = LocalExecutor.run_case

    def reading_proc(self: LocalExecutor, case, *args, **kwargs):  # type: ignore[no-untyped-def]
        lab = CephLab(lab_dir / "ceph")
        [osd] = [d for d in json.loads((lab.root / "pids.json").read_text()) if d["name"].startswith("osd.")]
        status = Path(f"/proc/{osd['pid']}/status").read_text()
        allowed = next(line.split(":", 1)[1].strip() for line in status.splitlines()
                       if line.startswith("Cpus_allowed_list"))
        seen.append((case.lab.ceph.osd_cpuset, allowed))
        return original(self, case, *args, **kwargs)

    monkeypatch.setattr(LocalExecutor, "run_case", reading_proc)
    _db, out = _run(PIN_PLAN, tmp_path, capsys)
    assert seen == [("1", "1"), ("0-1", "0-1"), ("0-1", "0-1"), ("1", "1")], seen  # A B B A, applied
    assert "OSDs restarted" not in out and "pinned to CPUs 1" in out
    assert pids_with(str(lab_dir) + "/") == [] and not (lab_dir / "ceph").exists()


OSD_FAULT_PLAN = """
name: osd-fault
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 16MiB}
workload:
  rw: randwrite
  bs: 4k
  iodepth: 4
  runtime: 2s
repeat: 1
timeout_grace: 3s
lab:
  ceph: {osds: 2, osd_size: 1GiB, objectstore: memstore, pool_size: 1}
"""


def test_an_osd_killed_mid_run_is_recorded_with_the_clusters_health(lab_dir: Path, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """One of two OSDs killed during the first repetition with no fault asking (replica 1: its PGs go down, I/O
    to them blocks): the watchdog stops fio, the repetition is recorded with the OSD that stopped and the
    cluster's health in its error, the run stops there rather than measure the broken cluster (it had gone on,
    every later repetition measuring one OSD), and the lab leaves no daemon, mount or directory."""
    import signal
    import threading
    import time

    def measuring() -> bool:  # a fio running a case's job (not the image's layout)
        for pid in pids_with("fio --output-format=json+"):
            try:
                job = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[-2].decode()
                if Path(job).read_text().startswith("; storbench case"):
                    return True
            except (OSError, IndexError, UnicodeDecodeError):
                continue
        return False

    def kill_one_osd() -> None:
        deadline = time.time() + 120
        while time.time() < deadline and not measuring():
            time.sleep(0.1)
        time.sleep(1.0)
        osds = pids_with(f"ceph-osd -f -c {lab_dir}")
        if osds:
            os.kill(osds[-1], signal.SIGKILL)

    killer = threading.Thread(target=kill_one_osd)
    killer.start()
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, OSD_FAULT_PLAN)), "--db", str(db))
    killer.join()
    assert code == 2 and "stopped during the run" in err and "the run stops" in err, out + err
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT status, error FROM repetitions ORDER BY id").fetchall()
    conn.close()
    assert len(rows) == 1 and rows[0][0] in ("timeout", "failed"), rows
    assert "stopped during the run" in rows[0][1], rows[0][1]
    assert "cluster health: HEALTH_" in rows[0][1] and "osd" in rows[0][1].lower(), rows[0][1]
    assert pids_with(str(lab_dir)) == [] and not (lab_dir / "ceph").exists()
    assert str(lab_dir) not in Path("/proc/self/mounts").read_text()
    assert pids_with("fio --output-format=json+") == []  # no fio job left stuck in librbd


KILL_PLAN = """
name: ceph-osd-kill
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 32MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 8s, ramp: 1s}
repeat: 2
telemetry: {enabled: false}
lab:
  ceph: {osds: 3, osd_size: 1GiB, objectstore: memstore, pool_size: 2}
faults:
  - {at: 3s, do: kill, on: osd.1, restore_after: 2s}
check_writes: {blocks: 512}
"""


@pytest.mark.long  # short cases: an OSD killed mid-run recorded with health; a frozen host's stall and thaw
def test_an_osd_killed_mid_run_stalls_io_briefly_and_the_cluster_heals_before_the_next_repetition(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 32 on a real cluster: each repetition SIGKILLs osd.1 3 s into its measured section and starts it again
    2 s later. On one host a killed OSD's peers find its port closed and report it at once, so I/O stops for well
    under the 20 s heartbeat grace; the OSD coming back makes its placement groups peer (a second, separate stall).
    Both actions are stored with their times, the cluster is healthy again before the next repetition, every
    write the cluster acknowledged to the checking writer beside fio (an image of its own, through librbd) reads
    back as written, and the lab leaves no daemon behind."""
    from storbench.stats.failover_points import point_failovers

    db, out = _run(KILL_PLAN, tmp_path, capsys)
    assert out.count("ceph lab: healthy again after the fault") == 2, out
    line = next((x for x in out.splitlines() if "kill osd.1, 2 repetitions" in x), "")
    assert line, out
    repetitions = stored_repetitions(db)
    for r in repetitions:
        kill, start = r.faults
        assert (kill.restore, start.restore, kill.error, start.error) == (False, True, "", ""), r.faults
        assert kill.said == "ceph lab: osd.1 killed" and start.said == "ceph lab: osd.1 started again"
        assert 1.9 <= start.at_s - kill.at_s <= 2.5
    (point,) = point_failovers(repetitions)
    assert point.measured == 2 and point.blackout_s is not None and point.restore_blackout_s is not None, line
    assert point.blackout_s.mean < 5, line  # far shorter than osd_heartbeat_grace (20 s)
    # the writes caught on osd.1 waited until its peers reported it (a normal write here takes a few ms)
    assert point.longest_io_ns is not None and point.longest_io_ns.mean > 50e6, line
    assert point.first_completion_s is not None and point.first_completion_s.mean < 5, line
    assert point.recovered + point.not_recovered + point.undecided == 2, line
    # the cluster's PGs, watched through each repetition and its healing: a killed OSD's PGs leave active+clean
    # and come back once it is started again and has peered (time from the kill, in the line and the export)
    assert point.cluster_disturbed == 2 and point.cluster_never_clean == 0, line
    assert point.cluster_clean_s is not None and 2 <= point.cluster_clean_s.mean < 120, line
    assert "cluster: every PG active+clean again" in " ".join(out.split()), out
    checked = next((x for x in out.splitlines() if "writes acknowledged" in x), "")
    assert "2 repetitions read back" in checked and "0 lost, 0 stale, 0 torn, 0 corrupt" in checked, out
    assert all(r.write_check is not None and r.write_check.acknowledged > 100 for r in repetitions), checked
    assert pids_with(str(lab_dir) + "/") == [], "a lab daemon was left behind"


GRACE_PLAN = """
name: ceph-freeze-short-grace
targets:
  rbd: {kind: rbd, pool: bench, image: img, size: 32MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 10s, ramp: 1s}
repeat: 1
telemetry: {enabled: false}
lab:
  ceph:
    osds: 4
    hosts: 2
    osd_size: 1GiB
    objectstore: memstore
    pool_size: 2
    config: {osd_heartbeat_grace: 4, osd_heartbeat_interval: 1}
faults:
  - {at: 2s, do: freeze, on: host.1, restore_after: 7s}
check_writes: {blocks: 256}
"""


def test_a_frozen_host_stalls_io_for_about_the_heartbeat_grace_it_was_given(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A hung host: both OSDs of emulated host 1 of 2 (osd.0 and osd.2) frozen (SIGSTOP). They answer nothing, so
    their peers report them only after osd_heartbeat_grace without a heartbeat; with the grace set to 4 s for every
    daemon (the monitors read it too: `ceph config set global`) and heartbeats every second, no write completes for
    about those 4 s plus the marking down and peering — far less than the 20 s default gives
    (`examples/ceph-osd-failure`: about 27 s). The size-2 pool keeps a copy on each host (the host is the failure
    domain), so every placement group goes on from host 2, and nothing acknowledged is lost."""
    from storbench.stats.failover_points import point_failovers

    db, out = _run(GRACE_PLAN, tmp_path, capsys)
    repetitions = stored_repetitions(db)
    (point,) = point_failovers(repetitions)
    assert point.measured == 1 and point.blackout_s is not None, out
    assert 3.0 <= point.blackout_s.mean <= 12.0, out
    (repetition,) = repetitions
    freeze, thaw = repetition.faults
    assert (freeze.said, thaw.said) == ("ceph lab: host.1 (osd.0, osd.2) frozen",
                                        "ceph lab: host.1 (osd.0, osd.2) thawed"), repetition.faults
    assert repetition.write_check is not None and repetition.write_check.bad == 0, repetition.write_check
    assert repetition.write_check.acknowledged > 100, repetition.write_check
    assert pids_with(str(lab_dir) + "/") == [], "a lab daemon was left behind"


def test_an_osd_started_again_after_a_fault_is_back_in_its_cpu_quota(lab_dir: Path) -> None:
    """A fault's restore starts the OSD again outside its quota cgroup; it is put back at once, not when the next
    case's settings are applied (its recovery was measured with no quota)."""
    from storbench.lab.ceph import CephLab
    from storbench.lab.ceph_conf import CephLabSpec

    lab = CephLab(lab_dir / "ceph")
    try:
        lab.up(CephLabSpec(osds=1, osd_size_bytes=1 << 30, objectstore="memstore", pools=(("bench", 1),)))
        assert lab.limit_osd_cpus(0.5) and lab.osd_cpu_limits() == {"osd.0": 0.5}
        lab.stop_osd("osd.0")
        lab.start_osd("osd.0")
        assert lab._osd_groups_hold_osds()
        assert lab.osd_cpu_limits() == {"osd.0": 0.5}
    finally:
        lab.down()


def test_the_checking_writers_image_is_removed_only_when_storbench_made_it(lab_dir: Path) -> None:
    """`check_writes` on an rbd target writes an image of its own, `<image>.check`, and removes one a killed run
    left: only when it carries storbench's mark. An image of that name the operator made is left alone, and the
    writer says why."""
    import errno
    import subprocess

    from storbench.execute.regions import RbdRegion
    from storbench.lab.ceph import CephLab
    from storbench.lab.ceph_conf import CephLabSpec

    lab = CephLab(lab_dir / "ceph")
    try:
        lab.up(CephLabSpec(osds=1, osd_size_bytes=1 << 30, objectstore="memstore", pools=(("bench", 1),)))
        conf = str(lab.conf)
        subprocess.run(["rbd", "-c", conf, "create", "--size", "4M", "bench/theirs.check"], check=True)
        theirs = RbdRegion(conf, "admin", "bench", "theirs.check")
        with pytest.raises(OSError) as refused:
            theirs.prepare(1 << 20)
        assert refused.value.errno == errno.EEXIST and "storbench did not make it" in str(refused.value)
        theirs.discard()
        ours = RbdRegion(conf, "admin", "bench", "ours.check")
        ours.prepare(1 << 20)  # made and marked, of small objects (a faulted OSD holds some of them)
        info = json.loads(subprocess.run(["rbd", "-c", conf, "info", "--format", "json", "bench/ours.check"],
                                         capture_output=True, text=True, check=True).stdout)
        assert info["order"] == 16 and info["objects"] == 16, info
        cache = subprocess.run(["rbd", "-c", conf, "config", "image", "get", "bench/ours.check", "rbd_cache"],
                               capture_output=True, text=True, check=True).stdout.strip()
        assert cache == "false"  # the image's own setting: no pool's or cluster's turns its cache on
        again = RbdRegion(conf, "admin", "bench", "ours.check")
        again.prepare(1 << 20)  # as a killed run's leftover: removed and made again
        again.discard()
        ours.discard()  # its image is gone already: nothing more
        listed = subprocess.run(["rbd", "-c", conf, "ls", "bench"], capture_output=True, text=True,
                                check=True).stdout.split()
        assert listed == ["theirs.check"], listed  # the operator's image is still there
    finally:
        lab.down()


def test_a_monitor_port_another_process_holds_is_refused_and_nothing_is_left(lab_dir: Path) -> None:
    """A local user's process on the monitor's (or radosgw's) port: the daemon failed to bind and exited, yet its
    port answered and the lab went on with someone else's server. Refused before the daemon starts."""
    import socket

    from storbench.errors import UserError
    from storbench.lab.ceph import CephLab
    from storbench.lab.ceph_conf import LOOPBACK, CephLabSpec, mon_ports

    lab = CephLab(lab_dir / "ceph")
    with socket.socket() as theirs:
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # an earlier test's monitor, gone, can leave its connections on the port closing for up to a minute (a
        # fresh clone's CI once met EADDRINUSE here); the lab's own check connects, and is not held up by them
        deadline = time.monotonic() + 90
        while True:
            try:
                theirs.bind((LOOPBACK, mon_ports(0)[0]))
                break
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                    raise
                time.sleep(1)
        theirs.listen()
        with pytest.raises(UserError, match="is in use by another process"):
            lab.up(CephLabSpec(osds=1, osd_size_bytes=1 << 30, objectstore="memstore", pools=(("bench", 1),)))
    assert not (lab_dir / "ceph").exists() and pids_with(str(lab_dir)) == []
