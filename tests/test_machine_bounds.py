"""Every plan value bounded by the machine (issue 28, finding 7): sizes and numbers below 2^63 when the plan is
loaded; memory (memstore OSDs, tmpfs DB devices, fio's buffers), the lab directory's disk (the labs' sparse files,
written in full) and a local target's free inodes checked by `storbench plan`, before anything starts. Each
refusal is one line naming the plan key with its numbers."""

from __future__ import annotations

import os
import shutil
import sqlite3
import textwrap
from contextlib import closing
from pathlib import Path

import pytest

from helpers import run_cli, write_plan
from storbench.config import load_plan_text
from storbench.demands import Demand, Need, inodes_need, lab_disk_demands, memory_demands, over_share
from storbench.errors import UserError
from storbench.plan import expand
from storbench.units import MAX_DURATION_S, MAX_SIZE_BYTES, parse_duration_s, parse_size_bytes

GiB = 1024**3
MiB = 1024**2
OSD_TARGET = 896 * MiB  # the lab's default osd_memory_target (lab.ceph_conf.MIN_OSD_MEMORY_TARGET)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STORBENCH_LAB_DIR", str(tmp_path / "lab"))  # its filesystem is the one checked
    monkeypatch.delenv("STORBENCH_FIO", raising=False)


def _one_line(status: int, out: str, err: str) -> str:
    assert "Traceback" not in out + err
    assert status == 2, f"exit status {status}: {err!r}"
    assert out == "" and len(err.splitlines()) == 1, err
    return err.strip()


# ---- the attacker's probes, through `storbench plan` -----------------------------------------------------------

PROBES = {
    "memstore-1TiB": ("""\
        name: probe
        targets:
          img: {kind: rbd, size: 900GiB}
        workload: {rw: randread}
        lab:
          ceph: {objectstore: memstore, osd_size: 1TiB, osds: 1, pool_size: 1}
        """, 6, "lab.ceph.osd_size", ("of memory", "memstore OSDs (in RAM) 1 x 1TiB", "objectstore: bluestore")),
    "fast-db-16x1TiB": ("""\
        name: probe
        targets:
          img: {kind: rbd, size: 1GiB}
        workload: {rw: randread}
        lab:
          ceph: {db_device: fast, db_size: 1TiB, osds: 16}
        """, 6, "lab.ceph.db_size", ("needs 16TiB of memory", "DB devices on tmpfs 16 x 1TiB", "db_device: none")),
    "device-size-1EiB": ("""\
        name: probe
        targets:
          img: {kind: rbd, size: 1GiB}
        workload: {rw: randread}
        lab:
          ceph: {osds_per_device: [1], device_size: 1EiB, pool_size: 1}
        """, 6, "lab.ceph.device_size", ("of disk in the lab directory", "OSD device files 1 x 1024PiB",
                                         "lower device_size")),
    "volume-15TiB": ("""\
        name: probe
        targets:
          vol: {kind: block}
        workload: {rw: randread}
        lab:
          volume: {size: 15TiB}
        """, 6, "lab.volume.size", ("needs 15TiB of disk in the lab directory", "volume device 15TiB")),
    "s3-bs-16g-numjobs-64": ("""\
        name: probe
        targets:
          obj: {kind: s3}
        workload: {rw: put, bs: 16g, numjobs: 64}
        lab:
          ceph: {rgw: true}
        """, 4, "workload.bs", ("fio's buffers: bs 16GiB x iodepth 1 x numjobs 64 x clients 1", "of memory",
                                "lower bs, iodepth, numjobs or clients")),
    "bs-16EiB": ("""\
        name: probe
        targets:
          scratch: {kind: path, path: ./data, size: 1MiB}
        workload: {rw: randread, bs: 16EiB}
        """, 4, "workload.bs", ("'16EiB' is larger than the largest size", str(MAX_SIZE_BYTES))),
}


@pytest.mark.parametrize("name", sorted(PROBES))
def test_the_probes_are_refused_by_plan_in_one_line(name: str, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Through `plan` only: should a check regress, `run` would really bring these labs up."""
    if shutil.which("fio") is None and name != "bs-16EiB":
        pytest.skip("the machine checks come after asking fio what it supports")
    text, line, key, says = PROBES[name]
    path = write_plan(tmp_path, textwrap.dedent(text))

    refusal = _one_line(*run_cli(capsys, "plan", str(path)))

    assert refusal.startswith(f"storbench: error: {path}:{line}: {key}: "), refusal
    for text_part in says:
        assert text_part in refusal, refusal
    if "of memory" in refusal or "of disk" in refusal:
        assert "a plan may use 90% of it" in refusal and "available" in refusal
    assert not (tmp_path / "lab").exists() and not (tmp_path / "data").exists()


@pytest.mark.fio
@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio on PATH")
@pytest.mark.parametrize(("workload", "key", "says"), [
    ("{rw: randread, bs: 16EiB}", "workload.bs", "'16EiB' is larger than the largest size"),  # was OverflowError
    # 64 TiB of buffers: a regression would lay out the 1 GiB file and see fio fail to allocate them, no worse
    ("{rw: randread, bs: 1g, iodepth: 65536}", "workload.bs", "fio's buffers: bs 1GiB x iodepth 65536"),
])
def test_run_refuses_before_anything_starts(workload: str, key: str, says: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = write_plan(tmp_path, f"name: probe\ntargets:\n  scratch: {{kind: path, path: ./data, size: 1GiB}}\n"
                                f"workload: {workload}\n")
    db = tmp_path / "r.db"

    refusal = _one_line(*run_cli(capsys, "run", str(path), "--db", str(db)))

    assert refusal.startswith(f"storbench: error: {path}:4: {key}: ") and says in refusal, refusal
    if db.exists():  # never a half-run
        with closing(sqlite3.connect(db)) as conn:
            assert conn.execute("SELECT count(*) FROM repetitions").fetchone()[0] == 0
    assert not (tmp_path / "data").exists()


def test_a_million_files_per_job_in_4096_jobs_is_refused_for_the_inodes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through `plan` only: should the check regress, `run` would fill this filesystem's inodes."""
    if shutil.which("fio") is None:
        pytest.skip("needs fio on PATH")
    stats = os.statvfs(tmp_path)
    if not stats.f_files or stats.f_favail > 4_000_000_000:
        pytest.skip(f"{tmp_path} has no inode limit this plan could cross")
    path = write_plan(tmp_path, "name: probe\ntargets:\n  here: {kind: path, path: ./data, size: 1MiB}\n"
                                "workload: {rw: create, files: 1000000, numjobs: 4096}\n")

    refusal = _one_line(*run_cli(capsys, "plan", str(path)))

    assert refusal.startswith(f"storbench: error: {path}:3: targets.here: "), refusal
    assert "makes 4,096,000,001 files (rw create: files 1000000 x numjobs 4096 x clients 1" in refusal
    assert " free inodes and a plan may use 90% of them (" in refusal
    assert "hint: lower files, numjobs or clients" in refusal
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(("files", "favail", "refused"), [
    (1000, 100, True),  # a filesystem with an inode limit
    (0, 0, False),  # btrfs: no limit, nothing reported
    (-1, -1, False),  # CephFS through ceph-fuse: "unknown", as -1
])
def test_a_filesystem_that_reports_no_inode_limit_is_not_held_to_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: int, favail: int, refused: bool) -> None:
    from storbench.config import load_plan_text
    from storbench.errors import UserError
    from storbench.plan import expand
    from storbench.targets import local

    real = os.statvfs(tmp_path)
    fields = [real.f_bsize, real.f_frsize, real.f_blocks, real.f_bfree, real.f_bavail, files, favail, favail,
              real.f_flag, real.f_namemax]
    monkeypatch.setattr(local.os, "statvfs", lambda _path: os.statvfs_result(fields))
    cases = expand(load_plan_text("name: p\ntargets:\n  here: {kind: path, path: ./d, size: 1MiB}\n"
                                  "workload: {rw: create, files: 200}\n", "p.yaml"))
    if refused:
        with pytest.raises(UserError, match="100 free inodes"):
            local._check_inodes("here", tmp_path, cases, "")
    else:
        local._check_inodes("here", tmp_path, cases, "")


@pytest.mark.fio
@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio on PATH")
def test_a_small_lab_plan_still_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The checks refuse what does not fit, not labs as such: the same probes at sizes a small machine holds."""
    path = write_plan(tmp_path, "name: fine\ntargets:\n  img: {kind: rbd, size: 64MiB}\nworkload: {rw: randread}\n"
                                "lab:\n  ceph: {objectstore: memstore, osd_size: 256MiB, osds: 1, pool_size: 1}\n"
                                "  volume: {size: 64MiB}\n")
    status, out, err = run_cli(capsys, "plan", str(path))
    assert (status, err) == (0, ""), err
    assert "1 case" in out


# ---- the schema: sizes and numbers below 2^63 ------------------------------------------------------------------

def test_sizes_are_parsed_exactly_up_to_the_largest() -> None:
    assert parse_size_bytes(str(MAX_SIZE_BYTES)) == MAX_SIZE_BYTES  # a float would round it to 2^63
    assert parse_size_bytes(MAX_SIZE_BYTES) == MAX_SIZE_BYTES
    assert parse_size_bytes("7EiB") == 7 * 2**60
    assert parse_size_bytes("1.5k") == 1536
    for too_large in (str(MAX_SIZE_BYTES + 1), MAX_SIZE_BYTES + 1, "8EiB", "16e", "9999999999e"):
        with pytest.raises(ValueError, match="larger than the largest size"):
            parse_size_bytes(too_large)


def test_durations_are_finite_and_bounded() -> None:
    assert parse_duration_s(f"{MAX_DURATION_S}s") == MAX_DURATION_S
    with pytest.raises(ValueError, match="longer than the longest duration"):
        parse_duration_s(f"{MAX_DURATION_S + 1}s")
    for bad in (float("inf"), float("nan")):
        with pytest.raises(ValueError, match="is not a duration"):
            parse_duration_s(bad)


BASE = "name: x\ntargets:\n  t: {kind: path, path: ./d, size: 1MiB}\nworkload:\n  rw: read\n"


@pytest.mark.parametrize(("extra", "key", "says"), [
    ("  runtime: .inf\n", "workload.runtime", "is not a duration"),
    ("timeout_grace: 1.0e+300\n", "timeout_grace", "longer than the longest duration"),
    ("seed: 9223372036854775808\n", "seed", "less than or equal to 9223372036854775807"),
    ("telemetry: {pids: [99999999]}\n", "telemetry.pids[0]", "less than or equal to 4194304"),
    ("lab: {volume: {iops: 1000001}}\n", "lab.volume.iops", "less than or equal to 1000000"),
    ("lab: {ceph: {osd_size: 8EiB}}\n", "lab.ceph.osd_size", "larger than the largest size"),
    ("lab: {ceph: {config: {bluestore_cache_size: 99999999999999999999}}}\n", "lab.ceph.config",
     "larger than the largest size"),
    ("  fio: {io_size: 8192p}\n", "workload.fio.io_size", "8192p is larger than the largest size"),  # 2^63
    ("  fio: {rate: '1m,8388608t'}\n", "workload.fio.rate", "8388608t is larger than the largest size"),
    ("  fio: {bssplit: '4k/50:9000p/50'}\n", "workload.fio.bssplit", "9000p is larger than the largest size"),
    ("  fio: {bsrange: 4k-16384P}\n", "workload.fio.bsrange", "16384P is larger than the largest size"),
    ("  fio: {random_distribution: 'zoned_abs:50/9999p:50/1g'}\n", "workload.fio.random_distribution",
     "9999p is larger than the largest size"),
])
def test_schema_numbers_are_bounded(extra: str, key: str, says: str) -> None:
    with pytest.raises(UserError) as caught:
        load_plan_text(BASE + extra, "p.yaml")
    assert caught.value.where.endswith(key), caught.value.where
    assert says in caught.value.one_line() and len(caught.value.one_line().splitlines()) == 1


def test_fio_sizes_just_below_two_to_the_63_pass() -> None:
    loaded = load_plan_text(BASE + "  fio: {io_size: 8191p, rate: '1536,8191p', bssplit: '4k/50:8191p/50'}\n",
                            "p.yaml")
    assert dict(loaded.config.workload.fio) == {"io_size": "8191p", "rate": "1536,8191p",
                                                "bssplit": "4k/50:8191p/50"}  # taken as written, not clamped


@pytest.mark.parametrize(("option", "says"), [
    ("rate: 1.5m", "fio reads whole numbers"), ("offset: 50.5%", "fio reads whole numbers"),
    ("thinktime: 100ns", "fio's time units are us, ms, s, m, h and d"),
    ("startdelay: 30sec", "fio's time units are us, ms, s, m, h and d"), ("startdelay: 2min", "fio's time units"),
    ("latency_target: 1.5ms", "fio reads whole numbers")])
def test_fio_values_fio_would_read_otherwise_are_refused(option: str, says: str) -> None:
    """`fio --debug=parse --parse-only` shows what fio 3.33 stores: rate=1.5m is 1 byte/s, offset=50.5% 50 bytes,
    thinktime=100ns 100 us, startdelay=30sec 30 us and 2min 2 us; they had passed the grammar."""
    with pytest.raises(UserError) as caught:
        load_plan_text(BASE + f"  fio: {{{option}}}\n", "p.yaml")
    assert says in caught.value.one_line(), caught.value.one_line()


@pytest.mark.parametrize(("option", "says"), [
    ("verify: crc32c", "workload.fio.verify with rw: read: a time-based job verifies what it wrote"),
    ("number_ios: 1000", "fio runs a time-based job to its runtime whatever number_ios says"),
    ("latency_target: 5ms", "fio searches the queue depth that meets it, then measures one latency_window"),
    ("startdelay: 1s-5s", "startdelay 1s-5s draws each of numjobs 2 clones' start apart")])
def test_fio_options_that_would_measure_another_thing_than_the_figures_say_are_refused(option: str,
                                                                                       says: str) -> None:
    """fio 3.33's own behaviour: verify reads counted as the job's reads, number_ios ignored on a time-based job,
    latency_target ending the job after one window, each numjobs clone drawing its own startdelay."""
    with pytest.raises(UserError) as caught:
        load_plan_text(BASE + f"  numjobs: 2\n  fio: {{{option}}}\n", "p.yaml")
    assert says in caught.value.one_line(), caught.value.one_line()
    kept = {"latency_target: 5ms": "latency_target: 5ms, latency_run: 1", "verify: crc32c": "verify: 0"}
    if option in kept:  # with latency_run: 1 the search runs the whole runtime; verify: 0 verifies nothing
        load_plan_text(BASE + f"  fio: {{{kept[option]}}}\n", "p.yaml")


def test_a_drawn_startdelay_is_refused_under_a_search_along_numjobs() -> None:
    """The search reaches numjobs 64 while `workload.numjobs` stays 1: the drawn startdelay got past the check."""
    text = BASE.replace("  rw: read\n", "  rw: randread\n  fio: {startdelay: 1s-10s}\n") + \
        'repeat: 2\nsearch: {axis: numjobs, range: [1, 64], slo: "p99<=10ms"}\n'
    with pytest.raises(UserError) as caught:
        load_plan_text(text, "p.yaml")
    assert "startdelay 1s-10s draws each of numjobs 64 clones' start apart" in caught.value.one_line()
    load_plan_text(text.replace("1s-10s", "5s"), "p.yaml")


def test_expected_iops_must_be_finite() -> None:
    text = BASE.replace("size: 1MiB}", "size: 1MiB, expect: {iops: .inf}}")
    with pytest.raises(UserError) as caught:
        load_plan_text(text, "p.yaml")
    assert caught.value.where.endswith("targets.t.expect.iops"), caught.value.where


# ---- the pure arithmetic, with small numbers ------------------------------------------------------------------

def _demands(text: str) -> tuple[list[Demand], list[Demand]]:
    loaded = load_plan_text(textwrap.dedent(text), "p.yaml")
    cases = expand(loaded)
    return memory_demands(loaded.config, cases), lab_disk_demands(loaded.config, cases)


def _amounts(demand: Demand) -> dict[tuple[str, ...], int]:
    return {need.key: need.amount for need in demand.needs}


def test_memory_of_a_cluster_with_fast_db_and_fio() -> None:
    memory, _ = _demands("""\
        name: x
        targets: {img: {kind: rbd, size: 64MiB}}
        workload: {rw: randread, bs: [4k, 64k], iodepth: [2, 8], numjobs: 3}
        lab: {ceph: {osds: 2, osd_size: 1GiB, pool_size: 1, db_device: fast, db_size: 128MiB,
                     osd_memory_target: [1GiB, 2GiB]}}
        """)
    assert len(memory) == 1  # one cluster: the OSD memory targets alternate on it
    assert _amounts(memory[0]) == {
        ("lab", "ceph", "osds"): 2 * 2 * GiB,  # the larger memory target of the two
        ("lab", "ceph"): GiB,
        ("lab", "ceph", "db_size"): 2 * 128 * MiB + 64 * MiB,  # the tmpfs, with its slack
        ("workload", "bs"): 64 * 1024 * 8 * 3,  # the largest case's buffers: bs x iodepth x numjobs
    }


def test_memstore_osds_hold_their_data_in_memory_not_on_disk() -> None:
    memory, disk = _demands("""\
        name: x
        targets: {img: {kind: rbd, size: 64MiB}}
        workload: {rw: randread}
        lab: {ceph: {objectstore: memstore, osds: 2, osd_size: 1GiB, pool_size: 1}}
        """)
    assert _amounts(memory[0]) == {("lab", "ceph", "osds"): 2 * OSD_TARGET, ("lab", "ceph"): GiB,
                                   ("lab", "ceph", "osd_size"): 2 * GiB, ("workload", "bs"): 4096}
    assert disk == []  # memstore writes no OSD files


def test_bluestore_osd_files_osd_devices_volume_and_k8s_volumes_fill_the_lab_disk() -> None:
    _, disk = _demands("""\
        name: x
        targets: {img: {kind: rbd, size: 64MiB}}
        workload: {rw: randread}
        lab:
          ceph: {osds: [1, 3], osd_size: 2GiB, pool_size: 1}
          volume: {size: 5GiB}
          k8s: {block_volumes: 2, block_size: 256MiB}
        """)
    # one cluster at a time: each configuration's files, with the volume and the k8s lab's block volumes
    assert [_amounts(d) for d in disk] == [
        {("lab", "ceph", "osd_size"): n * 2 * GiB, ("lab", "volume", "size"): 5 * GiB,
         ("lab", "k8s", "block_size"): 2 * 256 * MiB} for n in (1, 3)]
    _, side_by_side = _demands("""\
        name: x
        targets: {img: {kind: rbd, size: 64MiB}}
        workload: {rw: randread}
        lab: {ceph: {osds_per_device: [1, 2], devices: 2, device_size: 4GiB, pool_size: 1, bring_up: side_by_side}}
        """)
    # side by side: both clusters at once, each on its devices' files
    assert len(side_by_side) == 1 and side_by_side[0].total == 2 * 2 * 4 * GiB


def test_nfs_lab_files_are_on_the_lab_disk() -> None:
    _, disk = _demands("""\
        name: x
        targets: {share: {kind: nfs, size: 3MiB}}
        workload: {rw: randread, numjobs: [1, 4]}
        lab: {nfs: {}}
        """)
    assert [_amounts(d) for d in disk] == [{("targets", "share", "size"): 3 * MiB * 4}]


def test_fio_on_the_hosts_servers_is_not_this_machines_memory() -> None:
    memory, _ = _demands("""\
        name: x
        targets: {t: {kind: path, path: /srv/x, size: 1GiB}}
        workload: {rw: randread, bs: 1m, iodepth: 64}
        hosts: {servers: [a, b]}
        clients: 2
        """)
    assert memory == []
    here, _ = _demands("""\
        name: x
        targets: {t: {kind: path, path: /srv/x, size: 1GiB}}
        workload: {rw: randread, bs: 1m, iodepth: 64}
        """)
    assert [d.total for d in here] == [MiB * 64]


def test_over_share_refuses_above_ninety_percent_with_the_numbers() -> None:
    demand = Demand("memory", (Need(("a",), "a 6B", 6, ""), Need(("b",), "b 3B", 3, "")))
    assert over_share(demand, 10, "here") is None  # 9 <= 90 % of 10
    refusal = over_share(demand, 9, "here")  # 9 > 8 (90 % of 9, rounded down)
    assert refusal == ("needs 9B of memory: a 6B + b 3B; here has 9B available and a plan may use 90% of it (8B)")
    assert demand.largest.key == ("a",)


def test_inodes_of_metadata_and_file_workloads() -> None:
    metadata = load_plan_text(BASE.replace("rw: read", "rw: [create, stat]\n  files: [7, 5]\n  numjobs: [2, 3]\n"
                                           "  dirs: 2"), "p.yaml")
    need = inodes_need(expand(metadata))
    assert need is not None
    assert need.amount == 7 * 3 + 2  # the largest case's files x numjobs, and its directories
    assert need.key == ("workload", "files") and "files 7 x numjobs 3 x clients 1" in need.text
    reads = load_plan_text(BASE.replace("rw: read", "rw: read\n  numjobs: 4\n  fio: {nrfiles: 5}"), "p.yaml")
    assert inodes_need(expand(reads)) == Need(("workload", "numjobs"), "rw read: nrfiles 5 x numjobs 4 x "
                                              "clients 1", 21, "lower files, numjobs or clients")


# ---- fio's buffers follow the largest block size it could use --------------------------------------------------

@pytest.mark.parametrize(("fio", "key", "block_bytes"), [
    ("{bssplit: 1t/100}", ("workload", "fio", "bssplit"), 1024**4),
    ("{bssplit: '4k/60:64k/40,4k/50:2m/50'}", ("workload", "fio", "bssplit"), 2 * MiB),  # the write split's
    ("{bsrange: 4k-1t}", ("workload", "fio", "bsrange"), 1024**4),
    ("{bsrange: '4k-8k,,512-128k'}", ("workload", "fio", "bsrange"), 128 * 1024),
    ("{bssplit: 1k/100}", ("workload", "bs"), 64 * 1024),  # smaller than bs: bs counts
    ("{bsrange: 4k-100k}", ("workload", "fio", "bsrange"), 102400),
])
def test_fio_buffers_count_the_largest_block_of_bssplit_and_bsrange(fio: str, key: tuple[str, ...],
                                                                     block_bytes: int) -> None:
    memory, _ = _demands(f"""\
        name: x
        targets: {{t: {{kind: path, path: /srv/x, size: 1GiB}}}}
        workload: {{rw: randread, bs: 64k, iodepth: 64, numjobs: 64, fio: {fio}}}
        """)
    need = {n.key: n for n in memory[0].needs}[key]
    assert need.amount == block_bytes * 64 * 64
    assert "x iodepth 64 x numjobs 64" in need.text


def test_a_terabyte_bssplit_block_is_refused_by_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("fio") is None:
        pytest.skip("the machine checks come after asking fio what it supports")
    path = write_plan(tmp_path, "name: probe\ntargets:\n  scratch: {kind: path, path: ./data, size: 1MiB}\n"
                                "workload: {rw: randread, iodepth: 64, numjobs: 64, fio: {bssplit: 1t/100}}\n")

    refusal = _one_line(*run_cli(capsys, "plan", str(path)))

    assert refusal.startswith(f"storbench: error: {path}:4: workload.fio.bssplit: "), refusal
    assert "fio's buffers: bssplit block 1TiB x iodepth 64 x numjobs 64" in refusal and "of memory" in refusal


# ---- an NFS lab's export is in the lab directory: its files count against that filesystem's inodes --------------

NFS_LAB_PLAN = "name: probe\ntargets:\n  share: {kind: nfs, size: 1MiB}\nworkload: {rw: create, files: 1000000, " \
               "numjobs: 4096}\nlab: {nfs: {}}\n"


def test_a_million_files_per_job_on_the_nfs_lab_is_refused_for_the_lab_directorys_inodes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through `plan` only: the lab directory is in tmp_path (STORBENCH_LAB_DIR), nothing is brought up."""
    if shutil.which("fio") is None:
        pytest.skip("the machine checks come after asking fio what it supports")
    stats = os.statvfs(tmp_path)
    if not stats.f_files or stats.f_favail > 4_000_000_000:
        pytest.skip(f"{tmp_path} has no inode limit this plan could cross")
    path = write_plan(tmp_path, NFS_LAB_PLAN)

    refusal = _one_line(*run_cli(capsys, "plan", str(path)))

    assert refusal.startswith(f"storbench: error: {path}:4: workload.files: the NFS lab's export makes "
                              "4,096,000,001 files (rw create: files 1000000 x numjobs 4096 x clients 1"), refusal
    assert f"the filesystem of the lab directory ({tmp_path})" in refusal and "a plan may use 90% of them" in refusal
    assert not (tmp_path / "lab").exists()


@pytest.mark.parametrize(("target", "files", "favail", "refused"), [
    ("{kind: nfs, size: 1MiB}", 1000, 100, True),  # the lab's export, on a filesystem with an inode limit
    ("{kind: nfs, size: 1MiB}", 0, 0, False),  # no limit reported
    ("{kind: nfs, size: 1MiB, url: 'nfs://10.0.0.9/srv'}", 1000, 100, False),  # another server's inodes
])
def test_nfs_lab_inodes_against_the_lab_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str,
                                                  files: int, favail: int, refused: bool) -> None:
    from storbench import checks

    real = os.statvfs(tmp_path)
    fields = [real.f_bsize, real.f_frsize, real.f_blocks, real.f_bfree, real.f_bavail, files, favail, favail,
              real.f_flag, real.f_namemax]
    monkeypatch.setattr(checks.os, "statvfs", lambda _path: os.statvfs_result(fields))
    loaded = load_plan_text(f"name: p\ntargets:\n  share: {target}\nworkload: {{rw: create, files: 200}}\n"
                            "lab: {nfs: {}}\n", "p.yaml")
    if refused:
        with pytest.raises(UserError, match="has 100 free inodes") as caught:
            checks._check_lab_inodes(loaded, expand(loaded), tmp_path)
        assert caught.value.where.endswith("workload.files")
    else:
        checks._check_lab_inodes(loaded, expand(loaded), tmp_path)


def test_offsets_count_in_the_files_fio_lays_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fio extends each job's file to its offset (offset + its number x offset_increment) plus the size after it:
    4 jobs of 4 MiB at offset 8t, 1t apart, lay out 38 TiB, which the free-space check now sees (it counted 16
    MiB), and a day of watchdog grace to fill the disk with is refused."""
    from storbench.working_set import working_set_bytes

    text = textwrap.dedent(f"""\
        name: x
        targets:
          d: {{kind: path, path: {tmp_path}/data, size: 4MiB}}
        workload: {{rw: randread, numjobs: 4, fio: {{offset: 8t, offset_increment: 1t}}}}
        """)
    (case,) = expand(load_plan_text(text, "p.yaml"))
    assert working_set_bytes(case) == 4 * (4 << 20) + (4 * 8 + 6) * (1 << 40)
    # each of a job's nrfiles files begins at its offset: 4,096 files at 1 GiB lay out 4 TiB (it counted 1 GiB)
    many = text.replace("numjobs: 4, fio: {offset: 8t, offset_increment: 1t}", "fio: {nrfiles: 4096, offset: 1g}")
    (case,) = expand(load_plan_text(many, "p.yaml"))
    assert working_set_bytes(case) == (4 << 20) + 4096 * (1 << 30)
    # a share is of the file's size when fio opens it: a file laid out longer each repetition (real fio: 1, 3, 7
    # MiB for the third job at offset_increment: 100%), refused on file targets
    halves = text.replace("offset: 8t, offset_increment: 1t", "offset: 50%")
    with pytest.raises(UserError, match="50% is a share of a file that fio lays out"):
        load_plan_text(halves, "p.yaml")
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, text)))
    assert code == 2 and "needs 38TiB of test files" in err, err
    with pytest.raises(UserError, match="is not at most 1h"):
        load_plan_text(text + "timeout_grace: 24h\n", "p.yaml")


def test_a_precondition_writes_where_its_cases_do(tmp_path: Path) -> None:
    """Cases at offset 4g, 2g apart per job: their precondition writes there too (it had written from byte 0 and
    left the measured region unwritten); cases of one target at different offsets are refused."""
    from storbench.schedule import precondition_case, preconditions

    text = textwrap.dedent(f"""\
        name: x
        targets:
          d: {{kind: path, path: {tmp_path}/data, size: 4MiB, precondition: {{fill: 1x}}}}
        workload: {{rw: randread, numjobs: 4, fio: {{offset: 4g, offset_increment: 2g}}}}
        """)
    loaded = load_plan_text(text, "p.yaml")
    cases = expand(loaded)
    job = precondition_case(preconditions(loaded.config)["d"], cases)
    assert ("offset", "4g") in job.workload.fio_options and ("offset_increment", "2g") in job.workload.fio_options
    assert job.workload.numjobs == 4
    mixed = expand(load_plan_text(text.replace("offset: 4g", "offset: [4g, 8g]"), "p.yaml"))
    with pytest.raises(UserError, match="its cases write at different offsets"):
        precondition_case(preconditions(loaded.config)["d"], mixed)


def test_the_estimate_counts_preconditions_and_pods_start_budget(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A precondition of 100 hours made a plan of 17 seconds, under --max-hours; now its time is in the estimate
    and the refusal. A pvc target's pods get their start budget before each fio starts: in the ETA too."""
    from storbench.schedule import estimate, repetition_seconds

    text = textwrap.dedent(f"""\
        name: x
        targets:
          d: {{kind: path, path: {tmp_path}/data, size: 4MiB, precondition: {{workload: randwrite 4k, for: 100h}}}}
        workload: {{rw: randread, runtime: 1s}}
        repeat: 2
        """)
    from storbench.cli.run import _check_size

    loaded = load_plan_text(text, "p.yaml")
    with pytest.raises(UserError, match=r"the plan would take about 100\.0 h, more than --max-hours 24"):
        _check_size(loaded, expand(loaded), 10_000, 24.0)
    pvc = expand(load_plan_text("name: k\ntargets:\n  v: {kind: pvc, storage_class: fast, size: 1GiB}\n"
                                "workload: {rw: randread, runtime: 10s, ramp: 2s}\n", "k.yaml"))
    assert repetition_seconds(pvc[0]) >= 10 + 2 + 30
    assert estimate(pvc, 5).seconds >= 5 * 42


def test_a_precondition_on_an_image_refuses_jobs_that_each_write_their_own_region(tmp_path: Path) -> None:
    """On an image or a device the precondition is one job: with numjobs 4 and offset_increment 1g the cases
    measure [0, 4g) while it would fill [0, 1g): refused."""
    from storbench.schedule import precondition_case, preconditions

    text = textwrap.dedent("""\
        name: x
        targets:
          img: {kind: rbd, pool: bench, image: img, size: 1GiB, precondition: {fill: 1x}}
        workload: {rw: randread, numjobs: 4, fio: {offset_increment: 1g}}
        """)
    loaded = load_plan_text(text, "p.yaml")
    with pytest.raises(UserError, match="each write their own region"):
        precondition_case(preconditions(loaded.config)["img"], expand(loaded))
    one = load_plan_text(text.replace("numjobs: 4", "numjobs: 1"), "p.yaml")
    assert ("offset_increment", "1g") in precondition_case(preconditions(one.config)["img"],
                                                           expand(one)).workload.fio_options


def test_a_volume_operation_waits_for_no_pod_start_in_the_estimate() -> None:
    from storbench.schedule import ESTIMATE_VOLUME_OPERATION_S, repetition_seconds

    (case,) = expand(load_plan_text("name: k\ntargets:\n  v: {kind: pvc, storage_class: fast, size: 1GiB}\n"
                                    "workload: {rw: provision, runtime: 60s}\n", "k.yaml"))
    assert repetition_seconds(case) == ESTIMATE_VOLUME_OPERATION_S


def test_a_plan_that_would_run_more_processes_than_the_machine_has_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """4,096 jobs with 64 verify threads each are 266,241 fio tasks: a machine of pid_max 32,768 (this VM's) would
    have every fork on it fail; refused by `plan`, naming numjobs. A plan within it passes."""
    from storbench import checks

    available = checks.free_tasks()  # this machine's, read from /proc
    assert available is not None and 0 < available <= 4_194_304
    monkeypatch.setattr(checks, "free_tasks", lambda: 32_768 - 452)
    text = textwrap.dedent(f"""\
        name: x
        targets:
          d: {{kind: path, path: {tmp_path}/data, size: 4MiB}}
        workload: {{rw: randwrite, numjobs: 4096, fio: {{verify: 0, verify_async: 64}}}}
        """)
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, text)))
    assert code == 2 and "needs 266,241 processes and threads: fio's 266,241 (numjobs 4096 x (1 + verify_async 64) " \
        "+ 1, x clients 1); this machine has 32,316 available" in " ".join(err.split()), err
    fits = text.replace("numjobs: 4096", "numjobs: 4").replace("verify_async: 64", "verify_async: 2")
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, fits, "fits.yaml")))
    assert code == 0, out + err
    # io_submit_mode: offload starts a submitter thread per iodepth in each job (fio's rate-submit workqueue):
    # 2 jobs at iodepth 65,536 are 131,075 tasks, not the 3 they had passed as
    offload = text.replace("numjobs: 4096, fio: {verify: 0, verify_async: 64}",
                           "numjobs: 2, iodepth: 65536, fio: {io_submit_mode: offload}")
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, offload, "offload.yaml")))
    assert code == 2 and "needs 131,075 processes and threads: fio's 131,075 (numjobs 2 x (1 + verify_async 0 + " \
        "offload's submitters (iodepth) 65,536) + 1, x clients 1)" in " ".join(err.split()), err
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, offload.replace("65536", "16"), "o16.yaml")))
    assert code == 0, out + err
    # the Ceph lab's OSD threads count too: 16 OSDs of 64 shards x 32 threads had passed as fio's 2 tasks
    osds = textwrap.dedent("""\
        name: x
        targets:
          img: {kind: rbd, size: 64MiB}
        workload: {rw: randread}
        lab:
          ceph: {osds: 16, osd_size: 1GiB, config: {osd_op_num_shards: 64, osd_op_num_threads_per_shard: 32}}
        """)
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, osds, "osds.yaml")))
    assert code == 2 and "the Ceph lab's OSD threads, 33,840 a cluster" in " ".join(err.split()), err
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, osds.replace("64, osd_op", "2, osd_op"),
                                                            "few.yaml")))
    assert code == 0, out + err


def test_the_k8s_labs_host_path_volumes_count_against_the_disk_they_are_made_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The k8s lab's provisioner makes each claim a directory under /tmp/hostpath_pv whatever its size: 4 clients
    of 8 TiB each would fill that filesystem; `plan` refuses it, naming the target. Another StorageClass (a real
    driver's) is not counted here."""
    from storbench.demands import k8s_volume_demands

    text = ("name: k\nlab: {k8s: {}}\nclients: 4\ntargets:\n  v: {kind: pvc, size: 8TiB, pod_security: baseline}\n"
            "workload: {rw: randwrite, runtime: 1s}\n")
    loaded = load_plan_text(text, "k.yaml")
    (demand,) = k8s_volume_demands(loaded.config, expand(loaded), "storbench-hostpath")
    assert demand.total == 4 * (8 << 40) and demand.needs[0].key == ("targets", "v", "size")
    other = load_plan_text(text.replace("pod_security: baseline", "pod_security: baseline, storage_class: fast"), "o")
    assert k8s_volume_demands(other.config, expand(other), "storbench-hostpath") == []
    code, _, err = run_cli(capsys, "plan", str(write_plan(tmp_path, text)))
    assert code == 2 and "needs 32TiB of disk of the k8s lab's volumes: k8s lab volumes of 'v' 32TiB" in err, err
    # the lab's CSI driver keeps its volumes under the lab directory, without quota: counted there (it had been
    # let through whatever its size)
    from storbench.demands import lab_disk_demands

    csi = load_plan_text(text.replace("lab: {k8s: {}}", "lab: {k8s: {csi: true, block_volumes: 0}}").replace(
        "pod_security: baseline", "pod_security: baseline, storage_class: storbench-csi"), "c")
    (disk,) = lab_disk_demands(csi.config, expand(csi))
    assert disk.total == 4 * (8 << 40) and "k8s lab CSI volumes of 'v' 32TiB" in disk.needs[0].text, disk


def test_a_path_whose_directory_grows_too_long_once_resolved_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan's ./data is short; the directory fio would get (the current directory taken in) is over 1,024
    characters: refused in one line, before fio's 4,096-byte buffer for a directory and its file's name is near."""
    deep = tmp_path.joinpath(*["d" * 200] * 6)
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    text = "name: x\ntargets:\n  t: {kind: path, path: ./data, size: 1MiB}\nworkload: {rw: randread}\n"
    code, _, err = run_cli(capsys, "plan", str(write_plan(deep, text)))
    said = " ".join(err.split())
    assert code == 2 and "target 't': the directory fio would get" in said and "is too long (it is " in said, err
    assert "a path of at most 1,024 is taken) (hint: point path at a shorter directory)" in said, err
