"""The volume lab: a loop device over storbench's pacer, as a provisioned cloud volume looks from inside its VM.
Real fio sweeps against it: latency must follow Little's law evenly (each I/O waits depth / cap), the verdict must
say "capped beyond this host", the knee must sit at the lowest load, and a declared `expect` must read near
100 %."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import run_cli, stored_repetitions, write_plan
from storbench.lab.pacer import CATCH_UP_S, Bucket, Control, read_control, read_rates
from storbench.lab.process import pids_with
from storbench.lab.volume import VolumeLab
from storbench.lab.volume_conf import (
    LOSETUP_COLUMNS,
    LoopBacking,
    VolumeSpec,
    caps_text,
    clearing_line,
    loop_backings,
    mount_points,
    rates_json,
)

needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("losetup") is None or shutil.which("fio") is None,
                                reason="needs root, losetup and fio")


@given(st.lists(st.tuples(st.floats(0, 0.01), st.integers(512, 1 << 20), st.booleans()), min_size=1, max_size=60),
       st.integers(1, 50_000), st.sampled_from([None, 10 << 20, 200 << 20]))
def test_the_bucket_starts_ios_no_faster_than_the_caps_and_never_before_they_arrive(
        gaps: list[tuple[float, int, bool]], iops: int, bw: int | None) -> None:
    """Turns 1/iops (and the previous I/O's bytes) apart; an I/O that finds the volume idle starts no sooner than it
    arrives, one that finds it busy (``busy``: I/Os in the pacer since the previous one) on the next turn even when
    that is past (the pacer was late), back to CATCH_UP_S before now and never before the volume went busy."""
    bucket, now, starts, busy_since = Bucket(iops, bw), 0.0, [], 0.0
    for gap, size, busy in gaps:
        now += gap
        busy_since = busy_since if busy and starts else now
        start = bucket.admit(now, size, busy_since)
        assert start >= max(now - CATCH_UP_S, busy_since)
        if not starts:
            assert start == now
        if starts:
            previous_start, previous_size = starts[-1]
            assert start - previous_start >= 1 / iops - 1e-12
            if bw:
                assert start - previous_start >= previous_size / bw - 1e-12
            # exactly: its turn, or the earliest it may start when that is further back
            turn = previous_start + max(1 / iops, previous_size / bw if bw else 0)
            assert start == pytest.approx(max(max(now - CATCH_UP_S, busy_since), turn), abs=1e-9)
        starts.append((start, size))


def test_the_bucket_keeps_no_credit_while_idle_and_takes_new_caps() -> None:
    bucket = Bucket(iops=1000)
    assert bucket.admit(10.0, 4096) == 10.0
    assert bucket.admit(10.0, 4096) == pytest.approx(10.001)  # a burst is paced: one per millisecond
    assert bucket.admit(50.0, 4096) == 50.0  # idle for 40 s: no burst of 40,000 saved up
    assert bucket.admit(50.0, 4096) == pytest.approx(50.001)
    bucket.set_rates(None, 4096 * 100)  # 100 4k I/Os per second by bandwidth only
    assert bucket.admit(60.0, 4096) == 60.0 and bucket.admit(60.0, 4096) == pytest.approx(60.01)
    assert Bucket().admit(1.0, 1 << 20) == 1.0  # no caps: never waits


def test_a_busy_volume_keeps_the_turns_its_pacer_was_late_for() -> None:
    """Under CPU steal the pacer woke late, and each late turn was lost for good: 1,500 IOPS delivered 500-1,400
    in 100 ms windows. With I/Os in the pacer the volume is busy, not idle: a late turn is kept (the I/O starts at
    once), turns stay 1/iops apart, no further back than CATCH_UP_S nor than when the volume went busy; idle, or
    after a restart, nothing is kept."""
    bucket = Bucket(iops=1000)
    assert bucket.admit(10.0, 4096, busy_since_s=10.0) == 10.0
    late = [bucket.admit(10.030, 4096, busy_since_s=10.0) for _ in range(3)]  # the pacer was held 30 ms
    assert late == pytest.approx([10.001, 10.002, 10.003])  # each on its own turn, served right away
    assert bucket.admit(10.030, 4096) == 10.030  # no busy time given: the volume was idle
    assert bucket.admit(10.5, 4096, busy_since_s=10.5) == 10.5  # idle since: it went busy as this one came
    assert bucket.admit(10.6, 4096, busy_since_s=10.58) == 10.58  # held 20 ms after it went busy again: not before
    busy = [bucket.admit(20.0, 4096, busy_since_s=10.5) for _ in range(2)]  # busy all along, the pacer held 9 s
    assert busy == pytest.approx([20.0 - CATCH_UP_S, 20.0 - CATCH_UP_S + 0.001])  # kept, but only so far back
    bucket.restart()  # a stall's end: the I/Os it held are no backlog
    assert bucket.admit(30.0, 4096, busy_since_s=25.0) == 30.0
    assert bucket.admit(30.0, 4096, busy_since_s=25.0) == pytest.approx(30.001)
    assert bucket.set_rates(500, None) and bucket.admit(31.0, 4096, busy_since_s=25.0) == 31.0  # new caps too


def test_a_restored_cap_applies_to_the_ios_already_waiting() -> None:
    """64 I/Os queued behind a throttle of 1 IOPS had kept their starts (the last 64 s away) after the restore: the
    recovery read as 64 s late while the fault's record said the restore was on time. New caps start the spacing
    over; the serving loop admits the waiting I/Os again."""
    bucket = Bucket(iops=1)
    starts = [bucket.admit(0.0, 4096) for _ in range(64)]
    assert starts[-1] == pytest.approx(63.0)
    assert bucket.set_rates(3000, None) is True
    again = [bucket.admit(1.0, 4096) for _ in range(63)]  # the 63 still waiting, admitted again at the restore
    assert again[0] == 1.0 and again[-1] == pytest.approx(1.0 + 62 / 3000)
    assert bucket.set_rates(3000, None) is False  # the same caps: the spacing goes on (no extra I/O let through)
    assert bucket.admit(1.0, 4096) == pytest.approx(1.0 + 63 / 3000)


def test_rates_and_caps_in_words() -> None:
    spec = VolumeSpec(size_bytes=1 << 30, iops=3000, bw_bytes_per_s=100 << 20)
    assert read_rates(rates_json(spec)) == (3000.0, float(100 << 20))
    assert read_rates(rates_json(VolumeSpec(1 << 30))) == (None, None)
    assert read_rates('{"iops": -5, "bw_bytes_per_s": "fast"}') == (None, None)
    # the control file also stalls the volume, or swaps in an older copy (faults, issue 32)
    assert read_control('{"iops": 3000, "frozen": true}') == Control(3000.0, None, True, None)
    assert read_control('{"frozen": "yes", "backing": ""}') == Control()  # only true freezes; no empty path
    assert read_control('{"backing": "/lab/old.img"}').backing == "/lab/old.img"
    assert caps_text(spec, "/dev/loop7") == "loop7 paced at 3,000 IOPS and 100MiB/s, reads and writes together"
    assert caps_text(VolumeSpec(1 << 30), "/dev/loop7") == "loop7 not capped"
    # a lab made before the pacer had block-throttle rules: down() still clears them
    assert clearing_line("blkio.throttle.read_iops_device", "7:3") == "7:3 0"
    assert clearing_line("io.max", "7:3") == "7:3 riops=max wiops=max rbps=max wbps=max"


@pytest.fixture
def lab_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    directory = tmp_path / "lab"
    monkeypatch.setattr("storbench.lab.volume.DEFAULT_LAB_DIR", directory)
    yield directory
    VolumeLab(directory / "volume").down()


def test_a_paced_point_whose_p99_is_far_above_its_turn_says_the_machine_did_not_pace_evenly() -> None:
    """At the cap each I/O waits iodepth / cap: a p99 above 3 times that means the pacer's timers were late (a busy
    machine); the point says so. Below the cap (not pacing) or on the old block throttle (its own warning), not."""
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    def point(p99_ms: float, iops: float = 2990.0, lab: str = "lab=volume volume_size=1073741824 "
              "volume_iops=3000 volume_pacing=even") -> list[str]:
        rows = [observation(case_id="c", iodepth=6, repeat=rep, direction="read", rw="randread", iops=iops,
                            lat_mean_ns=2e6, lat_p99_ns=p99_ms * 1e6, lab=lab) for rep in range(3)]
        return [w.code for w in summarize_points(rows)[0].warnings]

    assert "uneven_pacing" not in point(2.2)  # 1.1x iodepth / cap (2 ms): even
    assert "uneven_pacing" in point(7.0)  # 3.5x: the timers were late
    assert "uneven_pacing" not in point(7.0, iops=1500.0)  # below the cap: nothing was paced
    old = point(97.0, lab="lab=volume volume_size=1073741824 volume_iops=3000")  # stored before the pacer
    assert "throttle_latency" in old and "uneven_pacing" not in old


IOPS_PLAN = """
name: paced
targets:
  volume: {kind: block, expect: {iops: 500}}
workload: {rw: randread, bs: 4k, iodepth: [8, 16, 32], runtime: 1s}
repeat: 5
lab:
  volume: {size: 256MiB, iops: 500}
"""
# Well below what the pacer serves on a busy 2-core machine: at 3,000 IOPS, CI's runner once saw 2,467, and at
# 1,500 with a third of the CPU stolen single repetitions fell to 1,300 or lower, and at 1,000 below 900 (CI,
# 2026-12-03). At 500 each I/O of iodepth 8 waits 16 ms for its turn: a pacer held off its CPU for less than that
# loses no turn. From iodepth 8:
# at 1, once at 2 and once at 4 (a full suite, 2026-11-28: 1,418 ± 81 of 1,500), the pacer idled while fio turned
# an I/O around (95 % of the cap, and iodepth 32's +5 % a real rise, "under-driven", as the verdict rightly said).
# Five repetitions a depth: "at its declared" needs each interval within 5 % of the cap, and three (t = 4.3) had
# been wider than that with one repetition a few % low ("near its declared", the same CI run).
CAP_IOPS = 500
# At the cap each I/O waits its turn: mean latency depth / cap (Little's law), evenly. Stated factors: the mean
# within 0.75-1.5 of it (at iodepth 8 the path's own ~0.1 ms hides under the 16 ms turn), the p99 at least the
# mean and at most 3 times depth / cap. The kernel's block throttle, which this lab used before, gave p99 48 times
# depth / cap at iodepth 6 (97 ms) and a p99 below the mean at iodepth 1.
MEAN_FACTOR = (0.75, 1.5)
P99_FACTOR = 3.0


@pytest.mark.fio
@needs_root
def test_a_paced_volume_answers_as_a_provisioned_one_littles_law_at_every_depth(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, IOPS_PLAN)), "--db", str(db))
    assert code == 0, out + err
    assert "volume lab: up (/dev/loop" in out and "paced at 500 IOPS, reads and writes together" in out, out
    code, out, err = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    records = json.loads(out)
    assert {int(r["iodepth"]) for r in records} == {8, 16, 32} and len(records) == 15
    for row in records:
        depth, iops = int(row["iodepth"]), float(row["iops"])
        assert 0.9 * CAP_IOPS <= iops <= 1.03 * CAP_IOPS, row  # the cap holds at every depth
        turn_ns = depth / CAP_IOPS * 1e9
        mean, p99 = float(row["lat_mean_ns"]), float(row["lat_p99_ns"])
        assert MEAN_FACTOR[0] * turn_ns <= mean <= MEAN_FACTOR[1] * turn_ns, (depth, mean, turn_ns)
        assert mean <= p99 <= P99_FACTOR * turn_ns, (depth, mean, p99, turn_ns)
    code, out, err = run_cli(capsys, "show", "--db", str(db))
    assert code == 0, err
    verdicts = [line for line in out.splitlines() if line.strip().startswith("volume randread")]
    assert len(verdicts) == 3 and all("capped beyond this host" in line for line in verdicts), out
    assert "at its declared 500 IOPS" in out and "under-driven" not in out
    code, shown, err = run_cli(capsys, "show", "--db", str(db), "--format", "json")
    assert code == 0 and not any(w["code"] == "throttle_latency" for p in json.loads(shown) for w in p["warnings"])
    code, out, err = run_cli(capsys, "saturation", "--db", str(db))
    assert code == 0, err
    assert "already saturated at the lowest load" in out, out
    # nothing left behind: no loop device reads the lab's file, no pacer, no mount, no directory
    assert not (lab_dir / "volume").exists()
    assert str(lab_dir) not in os.popen("losetup -a").read() and str(lab_dir) not in Path("/proc/mounts").read_text()
    assert not pids_with(str(lab_dir))


BW_PLAN = """
name: throttled-bw
targets:
  volume: {kind: block, precondition: {fill: 1x, bs: 1m}}
workload: {rw: read, bs: [256k, 512k, 1m], iodepth: 2, runtime: 1s}
repeat: 3
lab:
  volume: {size: 64MiB, bw: 40MiB/s}
"""
# 40 I/Os a second at 1m: the first I/O starts at once, so a 1 s run holds one more than the cap's share (+2.5 %);
# at 20MiB/s (20 a second, +5 %, a whole I/O's swing 5 % more) "flat" (the change's 90 % interval within +-10 %)
# failed now and then on this VM. The volume is written whole first (1.6 s at the cap): a fresh lab's first read of a
# region came 4-12 % under the cap on this VM (36 MiB/s at 128k, 40.0 over the same offsets again; 2026-12-03),
# and the first repetition of 256k read 16 % apart from the others in CI.


@pytest.mark.fio
@needs_root
def test_a_bandwidth_throttle_is_capped_across_block_sizes(lab_dir: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, BW_PLAN)), "--db", str(db))
    assert code == 0, out + err
    code, out, err = run_cli(capsys, "show", "--db", str(db))
    verdicts = [line for line in out.splitlines() if line.strip().startswith("volume read") and " — " in line]
    assert len(verdicts) == 3 and all("capped beyond this host" in line for line in verdicts), out
    assert "MiB/s flat at" in out


STEADY_PLAN = """
name: steady-volume
targets:
  volume: {kind: block}
workload: {rw: randread, bs: 4k, iodepth: 4, runtime: 2s}
steady_state: {metric: iops, window: 3, range: 10%, slope: 5%, max_rounds: 12, confirm: 3}
telemetry: {enabled: false}
lab:
  volume: {size: 64MiB, iops: 2000}
"""
# 2 s rounds and up to 12 of them: on a VM whose CPU is stolen now and then, 1 s rounds of the user-space pacer at
# 1000 IOPS varied by 16 % (842-989) and 9 rounds never met the 10 % range


@pytest.mark.fio
@needs_root
def test_a_volume_whose_speed_halves_mid_run_is_steady_only_after_the_change(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The volume's cap drops from 2000 to 1000 IOPS before the third round (the pacer is given its new rate just
    before that round's fio starts, as a burst credit running out would): no window that holds a round from
    before the change may be declared steady, and the point's figures come from the rounds after the window."""
    from storbench.execute.local import LocalExecutor
    from storbench.lab.volume import VolumeLab

    db = tmp_path / "r.db"
    original = LocalExecutor.run_case
    changed: list[int] = []

    def run_case(self: LocalExecutor, case: object, job_texts: object, rep_index: int, *args: object,
                 **kwargs: object) -> object:
        if rep_index == 2 and not changed:
            assert VolumeLab(lab_dir / "volume").set_caps(1000, None).spec.iops == 1000
            changed.append(rep_index)
        return original(self, case, job_texts, rep_index, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(LocalExecutor, "run_case", run_case)
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, STEADY_PLAN)), "--db", str(db))
    assert code == 0, out + err
    assert changed == [2], "the cap was never changed"
    steady = [line for line in out.splitlines() if ": steady by SNIA's rule after" in line]
    assert len(steady) == 1, out
    rounds = int(steady[0].split("steady by SNIA's rule after ")[1].split()[0])
    assert rounds - 3 >= 2, (rounds, out)  # the window (3 rounds) starts at the first round after the change
    code, out, err = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    records = json.loads(out)
    assert len(records) == 3  # the 3 rounds after the window only
    for record in records:
        # the new cap's, not the old (about 1,700 before it); a pacer short of CPU once gave 750 of the 1,000
        assert 600 <= float(record["iops"]) <= 1100, record["iops"]

SEARCH_PLAN = """
name: {name}
targets:
  volume: {{kind: block}}
workload: {{rw: randread, bs: 4k, iodepth: 4, numjobs: {numjobs}, runtime: 1s, fio: {{rate_iops: 112}}}}
repeat: 3
telemetry: {{enabled: false}}
lab:
  volume: {{size: 64MiB, iops: 600}}
{search}"""


def _best_under_objective(db: Path) -> tuple[int | None, float | None, int]:
    """(numjobs, IOPS) of the best point within mean<=20ms among a database's stored points, by the search's own
    rule, and how many points it holds."""
    from storbench.model.objective import parse_slo
    from storbench.stats.observations import Observation, observations
    from storbench.stats.search import search_answer, search_grid, search_point
    from storbench.store import open_store

    store = open_store(db)
    repetitions = store.repetitions([r.run_id for r in store.runs()])
    store.close()
    objective = parse_slo("mean<=20ms")
    found: dict[int, list[Observation]] = {}
    for o in observations(repetitions):
        found.setdefault(o.case.workload.numjobs, []).append(o)
    points = {load: p for load, obs in found.items() if (p := search_point(load, obs, objective)) is not None}
    answer = search_answer(search_grid(1, 12), points, objective)
    best = answer.best
    return (best.load, best.iops.mean, len(points)) if best else (None, None, len(points))


@pytest.mark.fio
@needs_root
def test_the_search_finds_the_grids_best_iops_within_the_objective_with_fewer_points(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each fio job is held to 112 IOPS and the volume to 600: up to 4 jobs the volume keeps up (448 IOPS, three
    quarters of its cap: short queues), from 6 on more is asked than the cap and every job's 4 I/Os queue at it (24
    or more in flight: a mean of 40 ms and up by Little's law). The search over numjobs 1..12 must give the full
    grid's best IOPS within mean<=20ms — 4 jobs, 448 IOPS, as the whole grid gave when it was run beside it (1, 2,
    3, 4, 6, 8 and 12 jobs: 27 s more of the suite) — from fewer points. (Rates are a quarter of what they were
    first: CI's busy runner once served 4 jobs at 2,400 IOPS too slowly. The objective is on the mean, as Little's
    law sets it: a p99 of 111 I/Os a repetition is about their largest one or two, and one stall of the VM (28 ms,
    in one of three repetitions at 1 job, 2026-12-03) put its interval over a p99 objective at the lowest load.)"""
    search_db = tmp_path / "search.db"
    searched = SEARCH_PLAN.format(name="search", numjobs=1,
                                  search="search: {axis: numjobs, range: [1, 12], slo: mean<=20ms}\n")
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, searched, "search.yaml")), "--db",
                             str(search_db))
    assert code == 0, out + err
    said = [line for line in out.splitlines() if line.startswith("search volume randread 4k qd=4")]
    words = " ".join(out.split())  # the console wraps the long line
    assert len(said) == 1 and "of 7 grid values" in words, out
    # the pacer's percentiles are a provisioned volume's, not the kernel block throttle's bursts (a warning then)
    assert "block throttle" not in words, out
    search_load, search_iops, search_points = _best_under_objective(search_db)
    assert search_points < 7, search_points  # fewer than the grid's 7 values
    assert search_load == 4 and search_iops is not None, (said, search_load)
    assert abs(search_iops / 448 - 1) <= 0.10, (search_load, search_iops)
    assert f"best {search_iops:,.0f} IOPS at numjobs={search_load}" in said[0]


def test_loop_backings_reads_losetups_json() -> None:
    listing = """{"loopdevices": [
      {"name": "/dev/loop0", "back-ino": 9978966, "back-maj:min": "     254:0  ", "back-file": "/lab/mnt/volume"},
      {"name": "/dev/loop1", "back-ino": 12, "back-maj:min": "   8:17", "back-file": null},
      {"name": "/dev/loop2", "back-ino": null, "back-maj:min": null}]}"""  # util-linux 2.38's spacing
    assert loop_backings(listing) == {"/dev/loop0": LoopBacking(os.makedev(254, 0), 9978966, "/lab/mnt/volume"),
                                      "/dev/loop1": LoopBacking(os.makedev(8, 17), 12, "")}
    assert loop_backings('{"loopdevices": []}') == {} and loop_backings("") == {}
    # a dead pacer's file cannot be reached: losetup gives no inode, and the device is known by its path alone
    dead = '{"loopdevices": [{"name": "/dev/loop3", "back-ino": null, "back-maj:min": null, "back-file": "/l/v"}]}'
    assert loop_backings(dead) == {"/dev/loop3": LoopBacking(None, None, "/l/v")}


def test_mount_points_include_a_dead_fuse_mount_and_undo_escapes() -> None:
    mountinfo = ("36 25 0:32 / / rw - ext4 /dev/vda rw\n"
                 "90 36 0:55 / /var/lib/storbench/lab/volume/mnt rw,nosuid - fuse.pacer pacer rw\n"
                 "91 36 0:56 / /tmp/with\\040space rw - tmpfs tmpfs rw\n")
    assert mount_points(mountinfo) == {"/", "/var/lib/storbench/lab/volume/mnt", "/tmp/with space"}


def _backing(device: str) -> tuple[int, int] | None:
    listing = subprocess.run(["losetup", "--json", "--list", "--output", LOSETUP_COLUMNS], check=True,
                             capture_output=True, text=True).stdout
    backing = loop_backings(listing).get(device)
    return (backing.dev, backing.ino) if backing else None


def _reuse_number(device: str, someone_elses: Path) -> None:
    """What a reboot or a killed run can leave: the lab's loop number now backs another user's file."""
    someone_elses.write_bytes(b"their data\n" + bytes(1 << 20))
    subprocess.run(["losetup", "-d", device], check=True)
    subprocess.run(["losetup", device, str(someone_elses)], check=True)


def _detach_loops_under(directory: Path) -> None:
    """Detach every loop device reading a file below ``directory`` (the test's own), whatever happened."""
    for backing_file in Path("/sys/block").glob("loop*/loop/backing_file"):
        if backing_file.read_text().startswith(f"{directory}/"):
            subprocess.run(["losetup", "-d", f"/dev/{backing_file.parent.parent.name}"], check=False)


@needs_root
def test_a_recorded_loop_number_now_backing_someone_elses_file_is_neither_reused_nor_detached(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = VolumeLab(lab_dir / "volume")
    spec = VolumeSpec(size_bytes=16 << 20)
    reused = "no longer reads the file the lab made it over"
    made: list[str] = []
    try:
        info, said = lab.up(spec)
        made.append(info.device)
        assert said == "" and _backing(info.device) == (info.backing_dev, info.backing_ino)
        assert lab.up(spec) == (info, "")  # its own device, still reading its file: kept

        first = tmp_path / "theirs-1.img"
        _reuse_number(info.device, first)
        assert reused in lab.status()
        again, said = lab.up(spec)  # refuses the reused number: a new device over a new file of its own
        made.append(again.device)
        assert again.device != info.device and _backing(again.device) == (again.backing_dev, again.backing_ino)
        assert said.startswith(f"volume lab: {info.device} {reused}") and "left attached" in said, said
        assert _backing(info.device) == (os.stat(first).st_dev, os.stat(first).st_ino)  # still attached, theirs

        second = tmp_path / "theirs-2.img"
        _reuse_number(again.device, second)
        code, out, err = run_cli(capsys, "lab", "volume", "down", "--dir", str(lab.root))
        assert code == 0 and out.startswith(f"volume lab: {again.device} {reused}"), out + err
        assert _backing(again.device) == (os.stat(second).st_dev, os.stat(second).st_ino)  # not detached
        assert not (lab_dir / "volume").exists()
        assert first.read_bytes().startswith(b"their data\n") and second.read_bytes().startswith(b"their data\n")

        third, _ = lab.up(spec)  # a state that does not describe the lab's file now: not sure, so not touched
        made.append(third.device)
        state = json.loads(lab.state.read_text())
        lab.state.write_text(json.dumps({**state, "backing_ino": state["backing_ino"] + 1}))
        assert reused in lab.down() and _backing(third.device) == (third.backing_dev, third.backing_ino)
        assert not (lab_dir / "volume").exists() and not pids_with(str(lab_dir))  # its pacer stopped, all the same
    finally:
        _detach_loops_under(tmp_path)
        for device in made:  # the one left alone reads the lab's (now unmounted) file: its path no longer under it
            if _backing(device) is not None and not Path(f"/sys/block/{Path(device).name}/loop/backing_file"
                                                          ).read_text().startswith(f"{tmp_path}/theirs"):
                subprocess.run(["losetup", "-d", device], check=False)


@needs_root
def test_lab_volume_up_status_and_down_from_the_command_line(lab_dir: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    root = lab_dir / "volume"
    code, out, err = run_cli(capsys, "lab", "volume", "up", "--iops", "2000", "--size", "64MiB", "--dir", str(root))
    assert code == 0 and "paced at 2,000 IOPS, reads and writes together" in out, out + err
    assert os.path.ismount(root / "mnt") and pids_with(str(root))
    code, out, err = run_cli(capsys, "lab", "volume", "status", "--dir", str(root))
    assert code == 0 and out.startswith("volume lab: up, /dev/loop") and "(64MiB)" in out, out + err
    code, out, err = run_cli(capsys, "lab", "volume", "down", "--dir", str(root))
    assert code == 0 and "loop device, pacer and" in out, out + err
    assert not root.exists() and not pids_with(str(root)) and str(root) not in Path("/proc/mounts").read_text()


@needs_root
def test_a_pacer_that_cannot_start_is_one_line_with_the_fix_and_leaves_nothing(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pyfuse3 (setup.sh without --labs) the pacer exits at once: the lab says why and how to fix it."""
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'pyfuse3'\"\nexit 1\n")
    python.chmod(0o755)
    monkeypatch.setattr("storbench.lab.volume.sys.executable", str(python))
    root = lab_dir / "volume"
    code, out, err = run_cli(capsys, "lab", "volume", "up", "--iops", "2000", "--size", "64MiB", "--dir", str(root))
    assert code != 0 and "the pacer did not mount its file" in err and "No module named 'pyfuse3'" in err, out + err
    assert "sudo storbench setup --labs installs pyfuse3" in err, err
    assert not root.exists()


LYING_PLAN = """
name: volume-lies
targets:
  volume: {kind: block, size: 32MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 4s, ramp: 0s}
repeat: 2
telemetry: {enabled: false}
lab:
  volume: {size: 64MiB, iops: 2000}
faults:
  - {at: 1s, do: lose-writes, on: volume, restore_after: 1.5s}
check_writes: {blocks: 1024, iops: 200}
"""


@pytest.mark.fio
@needs_root
def test_a_volume_that_loses_acknowledged_writes_is_caught_by_check_writes(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 32's lying test bed: 1 s into the run the volume lab keeps a copy of its data and 1.5 s later serves
    it, so every write acknowledged in between vanishes. The checking writer beside fio (stamped blocks past
    fio's 32 MiB, its journal in storbench's memory) reads its blocks back after the repetition: lost and stale
    blocks are counted, stored and said, with their first offsets, and the report's scorecard says so too. The
    second repetition loses its own writes, not the first's copy truncated under it (its copy is kept from the file
    served then, into a slot not served)."""

    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, LYING_PLAN)), "--db", str(db))
    assert code == 0, out + err
    line = next((x for x in out.splitlines() if "read back, " in x and "writes acknowledged" in x), "")
    assert "NOT everything acknowledged is there" in line, out
    assert "acknowledged writes lost or damaged: " in " ".join(out.split()), out  # the verdict in a sentence
    repetitions = stored_repetitions(db)
    assert len(repetitions) == 2 and all(r.status.value == "ok" for r in repetitions), repetitions
    for repetition in repetitions:
        check = repetition.write_check
        # 200 a second for 4 s beside fio on the 2,000 IOPS cap: ~800; a CPU-starved pacer (a VM's stolen CPU) served
        # 477, still far more than the ~300 the lie's 1.5 s puts at risk
        assert check is not None and not check.error and check.acknowledged > 300, check
        assert check.lost + check.stale > 20 and check.torn == check.corrupt == 0, check  # ~1.5 s at 200 writes/s
        assert check.first_bad and all(0 <= o < 1024 * 4096 for _, offsets in check.first_bad for o in offsets)
    code, out, err = run_cli(capsys, "report", "--db", str(db), "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    scorecard = (tmp_path / "r.html").read_text().split("<table class='data failover'>")[1].split("</table>")[0]
    assert re.search(r"<td>[\d,]+ lost(, [\d,]+ stale)? \(of [\d,]+ blocks\)</td>", scorecard), scorecard
    assert not (lab_dir / "volume").exists()


FREEZE_PLAN = """
name: volume-freeze
targets:
  volume: {kind: block, size: 48MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 9s, ramp: 1s}
repeat: 2
telemetry: {enabled: false}
lab:
  volume: {size: 64MiB, iops: 2000}
faults:
  - {at: 4s, do: freeze, on: volume, restore_after: 1s}
check_writes: {iops: 200}
"""


@pytest.mark.fio
@needs_root
def test_a_volume_frozen_for_a_second_mid_run_shows_a_one_second_blackout_and_recovers(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 32 end to end on the volume lab: every repetition freezes the volume 4 s into its measured section
    and thaws it 1 s later. fio's 100 ms logs show no completion for about that second (the blackout, with an
    interval over the two repetitions), the first I/O about 1 s after the fault, the dip to 0, the level never
    shown below the one before (not "not recovered"), the longest I/O about a second; the fault times are stored
    with each repetition, the report draws the timeline, and the lab is gone afterwards."""

    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, FREEZE_PLAN)))
    assert code == 0, out + err
    assert "freeze volume" in out and "thaw volume" in out, out
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, FREEZE_PLAN)), "--db", str(db))
    assert code == 0, out + err
    line = next((x for x in out.splitlines() if "freeze volume, 2 repetitions" in x), "")
    assert line, out
    # its IOPS span the stall: said, and no bottleneck of a steady load claimed
    assert "figures span a fault at volume randwrite 4k qd4" in out and "bottlenecks (rules" not in out, out
    # the writer beside fio: a stall loses nothing it acknowledged
    checked = next((x for x in out.splitlines() if "writes acknowledged" in x), "")
    assert "2 repetitions read back" in checked and "0 lost, 0 stale, 0 torn, 0 corrupt" in checked, out
    # its region past fio's 48 MiB holds a block for each write (200 x (1 + 9 + 10) s): every one read back
    assert "4,000 blocks of 4,096 bytes" in checked and "every acknowledged write is there" in " ".join(out.split())
    repetitions = stored_repetitions(db)
    from storbench.stats.failover_points import point_failovers

    (point,) = point_failovers(repetitions)
    assert point.measured == 2 and point.blackout_s is not None and point.first_completion_s is not None
    assert 0.7 <= point.blackout_s.mean <= 1.3, line
    assert point.blackout_s.has_interval
    assert 0.7 <= point.first_completion_s.mean <= 1.3, line
    assert point.dip_pct is not None and point.dip_pct.mean == 0  # a whole window without a completion
    # the level back within +-10 % at the end is never contradicted; whether it is shown depends on the few
    # seconds before the fault (a fresh clone's run once left both repetitions undecided)
    assert point.not_recovered == 0 and point.recovered + point.undecided == 2, line
    assert point.longest_io_ns is not None and 0.7e9 <= point.longest_io_ns.mean <= 1.5e9, line
    for r in repetitions:  # the fault and its undoing, 1 s apart, on the wall clock inside the repetition
        fault, thaw = r.faults
        assert (fault.action, fault.restore, thaw.restore) == ("freeze", False, True) and not fault.error
        assert 0.95 <= thaw.at_s - fault.at_s <= 1.3
        assert r.started_at_s < fault.at_s < thaw.at_s < r.finished_at_s
    code, out, err = run_cli(capsys, "export", "--db", str(db), "--format", "json", "--where", "fault=freeze volume")
    assert code == 0, err
    records = json.loads(out)  # each repetition's own figures, one record each (writes only)
    assert len(records) == 2 and all(0.7 <= r["blackout_s"] <= 1.3 and r["recovery"] != "not recovered"
                                     and r["undo_blackout_s"] < 0.5 for r in records), records
    code, out, err = run_cli(capsys, "report", "--db", str(db), "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert "<h2>Failover</h2>" in html and html.count("<div id='failover-run1-") == 1
    scorecard = html.split("<table class='data failover'>")[1].split("</table>")[0]  # the point's row
    assert re.search(r"<td>freeze volume</td><td>2</td><td>(0\.[7-9]\d|1\.[0-2]\d) \[", scorecard), scorecard
    assert re.search(r"<td>0 of [\d,]+ lost</td>", scorecard), scorecard
    # under it, the figures as `show` says them (the recovery time, what was undecided: no column for them)
    assert re.search(r"<p class='note'>run 1 [^<]*: freeze volume, 2 repetitions: [^<]*recovered \d of 2",
                     html), html.split("<table class='data failover'>")[1][:3000]
    assert not (lab_dir / "volume").exists()


THROTTLE_PLAN = """
name: volume-throttle
targets:
  volume: {kind: block, size: 48MiB}
workload: {rw: randread, bs: 4k, iodepth: 4, runtime: 8s, ramp: 1s}
repeat: 1
telemetry: {enabled: false}
lab:
  volume: {size: 64MiB, iops: 2000}
faults:
  - {at: 3s, do: throttle, on: volume, to: 500, restore_after: 2s}
"""


@pytest.mark.fio
@needs_root
def test_a_volume_throttled_mid_run_dips_to_its_new_cap_and_comes_back(
        lab_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fault that sets a level (`to:`): 3 s into the run the 2,000 IOPS volume is capped at 500 (as a cloud
    volume whose burst credit runs out) and 2 s later given its own cap again. No stall, but the windows during
    the throttle run at about a quarter of the level before; the level after the restore is back."""
    db = tmp_path / "r.db"
    code, out, err = run_cli(capsys, "run", str(write_plan(tmp_path, THROTTLE_PLAN)), "--db", str(db))
    assert code == 0, out + err
    (repetition,) = stored_repetitions(db)
    throttle, back = repetition.faults
    assert (throttle.said, back.said) == ("volume lab: capped at 500 IOPS", "volume lab: caps back to 2,000 IOPS")
    from storbench.stats.failover_points import point_failovers

    (point,) = point_failovers([repetition])
    assert point.blackout_s is not None and point.blackout_s.mean < 0.5, out  # slower, never stopped
    assert point.dip_pct is not None and 10 <= point.dip_pct.mean <= 40, out  # 500 of 2,000 IOPS, window by window
    assert point.not_recovered == 0, out
    assert not (lab_dir / "volume").exists()


@needs_root
def test_settling_after_faults_thaws_the_volume_and_gives_back_its_own_caps(lab_dir: Path) -> None:
    """Between repetitions with faults the volume lab is made whole: a volume a failed restore left frozen (the
    next repetition would hang) or at the fault's cap (it would run slower) is thawed and at its plan's caps again;
    a whole lab is left alone."""
    from storbench.config import load_plan_text
    from storbench.events import LabHealed
    from storbench.lab.volume import KIND, VolumeLab
    from storbench.plan import expand

    (case,) = expand(load_plan_text("name: s\ntargets:\n  v: {kind: block}\nworkload: {rw: randread}\n"
                                    "lab:\n  volume: {size: 16MiB, iops: 500}\n", "s.yaml"))
    assert case.lab.volume is not None and case.lab.volume.iops == 500
    lab = VolumeLab()
    lab.up(VolumeSpec(case.lab.volume.size_bytes, 500, None))
    assert KIND.settle(case, {}) is None
    lab.freeze(True)
    lab.set_caps(100, None)
    healed = KIND.settle(case, {})
    assert isinstance(healed, LabHealed) and healed.lab == "volume"
    assert not json.loads(lab.rates.read_text())["frozen"] and read_rates(lab.rates.read_text()) == (500, None)
    info = lab.info()
    assert info is not None and info.spec.iops == 500
    assert KIND.settle(case, {}) is None


@needs_root
def test_the_pacer_survives_changes_sent_one_after_another_from_the_moment_the_lab_is_up(lab_dir: Path) -> None:
    """Changes sent back to back (a fault and its restore, then a settle) right after `up`: the control file was
    rewritten in place, so the pacer, woken by the first SIGHUP, could read it half written and die (and a SIGHUP
    before it listened would end it too). Now the file is renamed over whole and the pacer ignores SIGHUP until it
    listens: every bring-up stays up, with the last change."""
    from storbench.lab.volume import VolumeLab

    lab = VolumeLab()
    for attempt in range(10):
        lab.up(VolumeSpec(16 << 20, 500 + attempt, None))
        lab.freeze(True)
        lab.set_caps(100, None)
        lab.freeze(False)
        lab.set_caps(900, None)
        time.sleep(0.2)
        assert lab.status().startswith("volume lab: up"), (attempt, lab.status(), lab.log.read_text()[-500:])
        assert read_rates(lab.rates.read_text()) == (900, None)
        lab.down()


INTERRUPT_PLAN = """
name: interrupted
targets:
  volume: {kind: block}
workload: {rw: randread, bs: 4k, iodepth: 4, runtime: 30s}
repeat: 1
lab:
  volume: {size: 256MiB, iops: 2000}
"""


@pytest.mark.fio
@needs_root
def test_ctrl_c_pressed_again_and_again_still_tears_the_lab_down(tmp_path: Path) -> None:
    """An impatient user: Ctrl-C mid-run, then again every 10 ms while storbench stops fio and tears the volume lab
    down. The first interrupts; the others are held (one line says so) until the lab is down: no loop device on
    its file, no pacer, no mount, no directory, exit 130 with the resume hint. Before, a second Ctrl-C stopped fio's
    kill or the teardown halfway and left the lab up."""
    import signal
    import sys
    import threading

    lab = tmp_path / "lab"
    env = {**os.environ, "STORBENCH_LAB_DIR": str(lab), "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "storbench", "run", str(write_plan(tmp_path, INTERRUPT_PLAN)),
               "--db", str(tmp_path / "r.db")]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: list[str] = []
    errors: list[str] = []
    up, down = threading.Event(), threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if line.startswith("volume lab: up"):
                up.set()
            if "volume lab: torn down" in line:
                down.set()
        down.set()  # ended without saying so: stop pressing

    def read_errors() -> None:
        assert process.stderr is not None
        errors.extend(process.stderr)

    readers = [threading.Thread(target=read, daemon=True), threading.Thread(target=read_errors, daemon=True)]
    for reader in readers:
        reader.start()
    try:
        assert up.wait(60), "".join(lines)
        time.sleep(1.5)  # fio under way
        pressed = 0
        while not down.is_set() and process.poll() is None and pressed < 3000:
            process.send_signal(signal.SIGINT)
            pressed += 1
            time.sleep(0.01)
        process.wait(timeout=120)
        for reader in readers:
            reader.join(10)
        out, err = "".join(lines), "".join(errors)
        assert process.returncode == 130, out + err
        assert pressed >= 2 and "Ctrl-C is held until that is done" in err, (pressed, err)
        assert "interrupted: every finished repetition is stored" in err and "volume lab: torn down" in out, out + err
        assert not (lab / "volume").exists(), out + err
        assert str(lab) not in os.popen("losetup -a").read() and str(lab) not in Path("/proc/mounts").read_text()
        assert not pids_with(str(lab))
    finally:
        if process.poll() is None:
            process.kill()
        VolumeLab(lab / "volume").down()  # whatever happened: nothing left for the next test


@needs_root
def test_down_after_the_pacer_died_detaches_its_device_and_unmounts(lab_dir: Path) -> None:
    """The pacer killed (OOM, a crash): its file could not be reached, so losetup gave no inode and the device was
    passed over, and os.path.ismount said no to the dead mount: down left the device attached for good and the
    directory half removed, and the next up failed. Both are found now."""
    import signal

    lab = VolumeLab(lab_dir / "volume")
    info, _ = lab.up(VolumeSpec(size_bytes=16 << 20))
    for daemon in lab.dir.live():
        os.kill(daemon.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while lab.dir.live() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert str(lab.mount) in mount_points(Path("/proc/self/mountinfo").read_text())  # dead, still mounted
    lab.down()
    assert not (lab_dir / "volume").exists()
    assert str(lab.mount) not in mount_points(Path("/proc/self/mountinfo").read_text())
    assert not Path(f"/sys/block/{Path(info.device).name}/loop/backing_file").exists() or str(lab_dir) not in \
        Path(f"/sys/block/{Path(info.device).name}/loop/backing_file").read_text()
    again, _ = lab.up(VolumeSpec(size_bytes=16 << 20))  # and the next up works
    assert again.device.startswith("/dev/loop")


@needs_root
def test_a_kept_lab_left_frozen_is_not_taken_again_as_it_is(lab_dir: Path) -> None:
    """`--keep-lab` and a Ctrl-C during a `freeze volume` fault: the next run's `up` had reused the frozen volume,
    every repetition hanging until the watchdog. A lab with a fault still on is brought up anew."""
    from storbench.lab.pacer import read_control

    lab = VolumeLab(lab_dir / "volume")
    spec = VolumeSpec(size_bytes=16 << 20)
    lab.up(spec)
    lab.freeze(True)
    assert read_control(lab.rates.read_text()).frozen
    lab.up(spec)
    assert not read_control(lab.rates.read_text()).frozen


@needs_root
def test_the_ceph_labs_down_unmounts_a_mount_os_path_ismount_does_not_see(tmp_path: Path) -> None:
    """ceph-fuse killed (OOM, a crash) leaves its mount, where os.path.ismount says no (its stat fails): the Ceph
    lab's down had skipped the unmount, and the directory stayed with the mount in it. A bind mount within one
    filesystem, which ismount does not see either, stands in for it at the CephFS mount point: down unmounts it
    (read from the kernel's table) and removes the lab, leaving what was mounted there alone."""
    from storbench.lab.ceph import CephLab

    lab = CephLab(tmp_path / "ceph")
    lab.dir.ensure()
    mount, elsewhere = lab.root / "mnt" / "cephfs", tmp_path / "elsewhere"
    mount.mkdir(parents=True, mode=0o700)
    elsewhere.mkdir()
    (elsewhere / "kept").write_text("not the lab's")
    subprocess.run(["mount", "--bind", str(elsewhere), str(mount)], check=True)
    assert str(mount) in mount_points(Path("/proc/self/mountinfo").read_text()) and not os.path.ismount(mount)
    try:
        lab.down()
        assert str(mount) not in mount_points(Path("/proc/self/mountinfo").read_text())
        assert not lab.root.exists() and (elsewhere / "kept").read_text() == "not the lab's"
    finally:
        if str(mount) in mount_points(Path("/proc/self/mountinfo").read_text()):
            subprocess.run(["umount", "-l", str(mount)], check=False)


@needs_root
def test_a_sigterm_during_lab_up_undoes_the_bring_up(tmp_path: Path) -> None:
    """`timeout 5 storbench lab volume up` (or a closed terminal) during its bring-up: SIGTERM ended Python at
    once, leaving the pacer, its mount and the directory, and `status` then said "down". Now it is a Ctrl-C: the
    kind's up tears down what it made."""
    import signal
    import sys

    root = tmp_path / "lab" / "volume"
    process = subprocess.Popen([sys.executable, "-m", "storbench", "lab", "volume", "up", "--iops", "2000", "--size",
                                "64MiB", "--dir", str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        deadline = time.monotonic() + 60
        while not (root / "pids.json").exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.002)
        assert process.poll() is None, process.communicate()  # the pacer is starting: up is under way
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=120)
        assert process.returncode == 130, (process.returncode, out, err)
        assert not root.exists() and not pids_with(str(root)), out + err
        assert str(root) not in os.popen("losetup -a").read() and str(root) not in Path("/proc/mounts").read_text()
    finally:
        if process.poll() is None:
            process.kill()
        VolumeLab(root).down()  # whatever happened: nothing left for the next test


def test_a_pacer_that_stopped_is_a_lost_lab_not_a_whole_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settling compared the control file only: a pacer gone (its process or its mount) had left every later
    repetition measuring a dead device, a write check reading "0 of 0 lost"."""
    from types import SimpleNamespace

    from storbench.lab.volume import KIND, VolumeLab

    case = SimpleNamespace(lab=SimpleNamespace(volume=object()))
    monkeypatch.setattr(VolumeLab, "info", lambda self: object())
    monkeypatch.setattr(VolumeLab, "_pacer_running", lambda self: True)
    assert KIND.lost(case, {}) is None  # type: ignore[arg-type]
    monkeypatch.setattr(VolumeLab, "_pacer_running", lambda self: False)
    lost = KIND.lost(case, {})  # type: ignore[arg-type]
    assert lost is not None and "its pacer stopped during the run" in lost.said and "--resume" in lost.hint
