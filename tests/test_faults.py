"""Faults in a plan (issue 32): the checks `plan` makes and the timeline it shows, on typed steps and offers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers import run_cli, write_plan
from storbench.faults import FaultOffer, FaultStep, fault_problems, fault_timeline

OFFERS = (FaultOffer("ceph", "kill", r"osd\.[0-9]+", "restart", "SIGKILL an OSD, as a crashed host"),
          FaultOffer("ceph", "out", r"osd\.[0-9]+", "in", "mark an OSD out: its data moves"),
          FaultOffer("volume", "freeze", "volume", "thaw", "hold every I/O, as a stalled volume"),
          FaultOffer("volume", "lose-writes", "volume", "", "serve an older copy: acknowledged writes vanish"))


def test_a_good_plan_has_no_problems_and_a_timeline() -> None:
    steps = [FaultStep(20, "kill", "osd.1", 60), FaultStep(30, "freeze", "volume", 2)]
    assert fault_problems(steps, measured_s=120, offers=OFFERS) == []
    timeline = [(e.at_s, e.text) for e in fault_timeline(steps, ramp_s=5, runtime_s=120, offers=OFFERS)]
    assert timeline == [(5, "measuring starts"), (25, "kill osd.1 (SIGKILL an OSD, as a crashed host)"),
                        (35, "freeze volume (hold every I/O, as a stalled volume)"), (37, "thaw volume"),
                        (85, "restart osd.1"), (125, "measuring ends")]


def test_each_refusal_is_one_line_with_the_fix() -> None:
    def problems(*steps: FaultStep) -> list[str]:
        return fault_problems(list(steps), measured_s=60, offers=OFFERS)

    [line] = problems(FaultStep(10, "kill", "mds.a"))
    assert "no lab of this plan can do it" in line and "kill osd.N (ceph)" in line
    [line] = problems(FaultStep(0, "kill", "osd.1"))
    assert "outside the measured section (0 to 60s" in line
    [line] = problems(FaultStep(70, "kill", "osd.1"))
    assert "outside the measured section" in line
    [line] = problems(FaultStep(10, "lose-writes", "volume", 5))
    assert "cannot undo 'lose-writes'" in line
    [line] = problems(FaultStep(10, "kill", "osd.1", -1))
    assert "restore_after must be after the fault" in line
    [line] = problems(FaultStep(10, "kill", "osd.1", 55))
    assert "restored at 65s, after the measured section ends (60s)" in line
    # undone in the last second: what the undoing did cannot be read, and "no stall after it" would be claimed
    [line] = problems(FaultStep(10, "kill", "osd.1", 49.3))
    assert "restored at 59.3s, in the last second of the measured section (60s)" in line
    assert problems(FaultStep(10, "kill", "osd.1", 49)) == []
    [line] = problems(FaultStep(10, "kill", "osd.1", 20), FaultStep(20, "out", "osd.1"))
    assert "faults on osd.1 overlap" in line
    assert problems(FaultStep(10, "kill", "osd.1", 5), FaultStep(20, "out", "osd.1")) == []  # one after the other
    [line] = fault_problems([FaultStep(10, "kill", "osd.1")], measured_s=60, offers=())
    assert line.endswith("the plan's labs offer: none")


def test_a_fault_that_sets_a_level_needs_one_that_reads() -> None:
    """`slow` takes a link rate and `throttle` an IOPS figure (`to:`); the others take none; the timeline says
    the level."""
    offers = (*OFFERS, FaultOffer("hosts", "slow", r"client\.[0-9]+", "restore the link of", "shape a link",
                                  takes="link rate"),
              FaultOffer("volume", "throttle", "volume", "lift the throttle on", "cap the IOPS", takes="IOPS"))

    def problems(*steps: FaultStep) -> list[str]:
        return fault_problems(list(steps), measured_s=60, offers=offers)

    assert problems(FaultStep(10, "slow", "client.1", 5, to="10Mbit"), FaultStep(10, "throttle", "volume", 5,
                                                                                 to="500")) == []
    [line] = problems(FaultStep(10, "slow", "client.1", 5))
    assert "needs the level it sets; give to: (a link rate, e.g. 10Mbit)" in line
    [line] = problems(FaultStep(10, "throttle", "volume", 5, to="fast"))
    assert "'fast' is not an IOPS figure like 500; give a IOPS, e.g. to: 500" in line, line
    [line] = problems(FaultStep(10, "slow", "client.1", 5, to="10 furlongs"))
    assert "is not a link rate" in line
    [line] = problems(FaultStep(10, "kill", "osd.1", to="3"))
    assert "'kill' sets no level; drop to: 3" in line
    timeline = [e.text for e in fault_timeline([FaultStep(10, "slow", "client.1", 5, to="10Mbit")], ramp_s=1,
                                               runtime_s=60, offers=offers)]
    assert "slow client.1 to 10Mbit (shape a link)" in timeline and "restore the link of client.1" in timeline


FAULT_PLAN = """
name: stall
targets:
  vol: {kind: block, destructive: true}
lab:
  volume: {size: 256MiB, iops: 2000}
workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 20s, ramp: 2s}
repeat: 3
faults:
  - {at: 8s, do: freeze, on: volume, restore_after: 3s}
"""


def test_plan_shows_when_each_fault_happens_and_refuses_what_no_lab_of_the_plan_offers(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, FAULT_PLAN)))
    assert code == 0, err
    timeline = out[out.index("faults in every repetition"):].splitlines()[1:]
    assert [line.split()[0] for line in timeline] == ["2.0s", "10.0s", "13.0s", "22.0s"], timeline
    assert "freeze volume (hold every I/O" in timeline[1] and timeline[2].endswith("thaw volume"), timeline
    for change, wanted in ((("restore_after: 3s", "restore_after: 30s"), "restored at 38s, after the measured "
                            "section ends (20s) (hint: shorten restore_after or lengthen runtime)"),
                           (("do: freeze", "do: kill"), "no lab of this plan can do it (hint: the plan's labs "
                            "offer: freeze volume (volume), lose-writes volume (volume), throttle volume (volume))"),
                           (("do: freeze", "do: freez"), "no lab of this plan can do it (did you mean 'freeze'?)"),
                           (("vol: {kind: block, destructive: true}\nlab:\n  volume: {size: 256MiB, iops: 2000}",
                             "vol: {kind: path, path: ./data, size: 16MiB}"), "the plan's labs offer: none"),
                           (("repeat: 3", "steady_state: {window: 3}"), "faults cannot be combined with "
                            "steady_state"),
                           (("on: volume", "on: '../x'"), "faults[0].on: String should match pattern")):
        plan = write_plan(tmp_path, FAULT_PLAN.replace(*change), "bad.yaml")
        code, out, err = run_cli(capsys, "plan", str(plan))
        assert code == 2 and wanted in err and len(err.strip().splitlines()) == 1, (change, err)


def test_fault_targets_are_said_as_a_plan_names_them() -> None:
    from storbench.faults import targets_text

    assert [targets_text(p) for p in (r"osd\.[0-9]{1,4}", r"client\.[0-9]+", "volume")] == ["osd.N", "client.N",
                                                                                            "volume"]


def test_the_driver_does_each_fault_at_its_time_and_always_undoes_it() -> None:
    """On a short schedule (times of 0.02-0.15 s): the fault, then its undoing, recorded in order with
    their wall-clock times; a repetition that ends before the undo time is undone on the way out; a fault that
    fails is recorded with its error and undone all the same (it may have done part of itself)."""
    import time

    from storbench.fault_driver import FaultDriver

    done: list[tuple[str, bool]] = []

    def act(step: FaultStep, restore: bool) -> str:
        done.append((step.target, restore))
        if step.target == "broken" and not restore:
            raise RuntimeError("the lab said no")
        return f"{'undid' if restore else 'did'} {step.action} {step.target}"

    steps = [FaultStep(0.05, "freeze", "a", 0.1), FaultStep(0.02, "freeze", "broken", 0.05)]
    with FaultDriver(steps, 0.0, act) as driver:
        time.sleep(0.3)
    assert done == [("broken", False), ("a", False), ("broken", True), ("a", True)]
    broken, did, broken_undone, undid = driver.records
    assert broken_undone.restore and broken_undone.target == "broken" and not broken_undone.error
    assert broken.error == "the lab said no" and not broken.restore and broken.target == "broken"
    assert (did.said, undid.said) == ("did freeze a", "undid freeze a")
    assert 0.08 <= undid.at_s - did.at_s <= 0.25 and did.planned_at_s == 0.05
    assert undid.planned_at_s == pytest.approx(0.15)
    assert did.measure_start_s <= did.at_s

    done.clear()
    with FaultDriver([FaultStep(0.02, "freeze", "a", 5.0)], 0.0, act) as early:
        time.sleep(0.1)  # fio ended long before the undo time
    assert done == [("a", False), ("a", True)] and [r.restore for r in early.records] == [False, True]
    done.clear()
    with FaultDriver([FaultStep(5.0, "freeze", "a", 1.0)], 0.0, act) as never:
        pass  # ended before the fault: nothing done, nothing to undo
    assert done == [] and never.records == []


def test_an_undoing_comes_before_another_fault_at_the_same_moment() -> None:
    """`kill osd.1` at 5 s undone after 5 s, and again at 10 s: the undo at 10 s first (the second kill came first,
    found the OSD dead, and the undo then started it again at once: the planned second fault never happened)."""
    from storbench.fault_driver import FaultDriver

    steps = [FaultStep(5.0, "kill", "osd.1", 5.0), FaultStep(10.0, "kill", "osd.1", 5.0)]
    assert FaultDriver(steps, 0.0, lambda step, restore: "").schedule() == [
        (5.0, 0, False), (10.0, 0, True), (10.0, 1, False), (15.0, 1, True)]
    at_once = [FaultStep(3.0, "freeze", "a", 0.0)]  # a fault undone the moment it is done: the fault first
    assert FaultDriver(at_once, 0.0, lambda step, restore: "").schedule() == [(3.0, 0, False), (3.0, 0, True)]


def test_a_fault_is_stamped_when_it_is_started_not_when_the_lab_returns() -> None:
    """A fault's effect on the I/O begins as the lab is asked (a daemon killed, a rule inserted), and some labs take
    a while to return (a daemon waited for, a pod deleted): the record's time is the moment the action started, so
    the time to the first completion and the level before the fault are read against when the fault began."""
    import time

    from storbench.fault_driver import FaultDriver

    started: list[float] = []

    def slow_act(step: FaultStep, restore: bool) -> str:
        started.append(time.time())
        time.sleep(0.2)  # the lab takes its time to say it is done
        return "done"

    with FaultDriver([FaultStep(0.02, "stop", "a", 0.3)], 0.0, slow_act) as driver:
        time.sleep(0.6)
    fault, undone = driver.records
    assert len(started) == 2
    assert abs(fault.at_s - started[0]) < 0.05 and abs(undone.at_s - started[1]) < 0.05


def test_compare_judges_what_the_faults_did_where_both_sides_had_them() -> None:
    """Two settings under the same fault (a heartbeat grace of 20 s against 6 s, say), each repetition one fault:
    compare gives the blackout's change with its interval and a verdict (shorter is better), beside IOPS; points
    without faults get no such cell."""
    from dataclasses import replace

    from storbench.model.fault_record import FaultRecord
    from storbench.report.compare_export import comparison_markdown
    from storbench.stats.compare import compare_observations
    from storbench.stats.compare_cells import Verdict
    from storbench.stats.failover_points import RepetitionFailover
    from storbench.stats.selectors import parse_selector
    from storbench.stats.timeline import Failover, Recovery
    from synthetic import observation

    def seen(grace: str, blackouts: list[float], faulted: bool = True) -> list[object]:
        out = []
        for index, blackout in enumerate(blackouts):
            o = observation(case_id=f"c{grace}", lab=f"lab=ceph grace={grace}", repeat=index, iops=1000.0 + index)
            figures = Failover(1000.0, blackout, (("local", blackout),), blackout, 0.0, 90.0, Recovery.RECOVERED,
                               blackout + 5, int(blackout * 1e9))
            fault = FaultRecord("freeze", "osd.1", False, 100.0 + index)
            out.append(replace(o, failover=RepetitionFailover(index, index, fault, None, figures) if faulted else None))
        return out

    long, short = seen("20", [24.0, 25.0, 26.0, 24.5]), seen("6", [9.0, 10.0, 9.5, 10.5])
    (c,) = compare_observations([*long, *short], parse_selector("grace=20"), parse_selector("grace=6"), {})
    cell = c.cell("blackout_s")
    assert cell is not None and cell.difference is not None
    assert cell.difference.change_pct == pytest.approx(100 * (9.75 / 24.875 - 1))
    assert cell.difference.change_ci_high_pct is not None and cell.difference.change_ci_high_pct < 0
    assert cell.verdict is Verdict.BETTER  # a shorter blackout
    assert c.cell("recovery_s") is not None and c.cell("iops") is not None
    assert "| blackout |" in comparison_markdown([c], "grace=20", "grace=6")
    from rich.console import Console

    from storbench.report.compare_tables import compare_table

    for width in (200, 100):  # the terminal's table too, its blackout kept when columns must go
        console = Console(record=True, width=width)
        console.print(compare_table([c], "grace=20", "grace=6", width=width))
        text = console.export_text()
        assert "blackout" in text and "-60.8%" in text, text
    (plain,) = compare_observations([*seen("20", [1.0, 2.0], False), *seen("6", [1.0, 2.0], False)],
                                    parse_selector("grace=20"), parse_selector("grace=6"), {})
    assert plain.cell("blackout_s") is None  # no faults: no failover cells
    # a side whose I/O never came back in 3 of 5: its first I/O after the fault is of the 2 that came back (0.5 s,
    # 0.6 s), not a sample of its faults: not judged (it had read -82 % [-94, -46], better), the blackout still is
    steady = seen("20", [3.0, 3.1, 2.9, 3.0, 3.05])
    broken = seen("6", [0.5, 0.6, 25.0, 25.0, 25.0])
    broken = [replace(o, failover=replace(o.failover, figures=replace(o.failover.figures, first_completion_s=None)))
              if o.failover.figures.blackout_s == 25.0 else o for o in broken]  # type: ignore[union-attr]
    (censored,) = compare_observations([*steady, *broken], parse_selector("grace=20"), parse_selector("grace=6"), {})
    assert censored.cell("first_io_after_fault_s") is None and censored.cell("blackout_s") is not None


def test_a_blackout_from_none_to_some_is_judged_in_seconds() -> None:
    """A setting under which the I/O never stopped against one under which it stopped for seconds: a baseline of 0
    has no percent change, so the change is given in seconds with its interval and judged (worse), paired where
    the repetitions alternated (a pair with a 0 has no ratio: the pairs' differences, none left out), Welch
    otherwise; it is in exports, and a regression gate sees it."""
    from dataclasses import replace

    from storbench.model.fault_record import FaultRecord
    from storbench.report.compare_export import comparison_rows
    from storbench.report.compare_tables import change_text
    from storbench.stats.compare import compare_observations
    from storbench.stats.compare_cells import Verdict, regressions
    from storbench.stats.failover_points import RepetitionFailover
    from storbench.stats.selectors import parse_selector
    from storbench.stats.timeline import Failover, Recovery
    from synthetic import observation

    def seen(grace: str, blackouts: list[float]) -> list[object]:
        out = []
        for index, blackout in enumerate(blackouts):
            o = observation(case_id=f"c{grace}", lab=f"lab=ceph grace={grace}", repeat=index, iops=1000.0 + index)
            figures = Failover(1000.0, blackout, (("local", blackout),), blackout, 0.0, 90.0, Recovery.RECOVERED,
                               blackout + 5, int(blackout * 1e9) + 1)
            fault = FaultRecord("freeze", "osd.1", False, 100.0 + index)
            out.append(replace(o, failover=RepetitionFailover(index, index, fault, None, figures)))
        return out

    data = [*seen("20", [0.0, 0.0, 0.0, 0.0]), *seen("6", [4.0, 5.0, 6.0, 5.0])]
    for interleaved, method in ((frozenset(), "welch"), (frozenset({1}), "paired")):
        (c,) = compare_observations(data, parse_selector("grace=20"), parse_selector("grace=6"), {},
                                    interleaved_runs=interleaved)
        cell = c.cell("blackout_s")
        assert cell is not None and cell.difference is not None, method  # was left out: no cell at all
        d = cell.difference
        assert d.method == method and d.diff == pytest.approx(5.0) and d.ci_low is not None and d.ci_low > 0, d
        assert cell.verdict is Verdict.WORSE
        assert change_text(c, "blackout_s")[0].startswith("+5.00 s [+") and " from 0 ▼" in change_text(
            c, "blackout_s")[0]
        row = next(r for r in comparison_rows([c]) if r["metric"] == "blackout_s")
        assert row["change_pct"] is None and row["change"] == pytest.approx(5.0), row
        assert any(r.cell.metric.field == "blackout_s" for r in regressions([c], 10.0))
    (same,) = compare_observations([*seen("20", [0.0] * 3), *seen("6", [0.0] * 3)], parse_selector("grace=20"),
                                   parse_selector("grace=6"), {})
    assert same.cell("blackout_s") is None  # no stall on either side: nothing to judge


def test_a_client_a_fault_stopped_is_not_called_a_straggler() -> None:
    from dataclasses import replace

    from storbench.model.fault_record import FaultRecord
    from storbench.stats.failover_points import RepetitionFailover
    from storbench.stats.summary import summarize_points
    from storbench.stats.timeline import Failover, Recovery
    from synthetic import observation

    slow = [observation(repeat=i, slowest_client="c1", slowest_client_pct_of_median=12.0) for i in range(3)]
    (plain,) = summarize_points(slow)
    assert "stragglers" in {w.code for w in plain.warnings}  # no fault: a slow client is worth a look
    figures = Failover(400.0, 0.0, (("c1", 280.0),), 0.0, 0.0, 51.0, Recovery.NOT_RECOVERED, None, None)
    faulted = [replace(o, failover=RepetitionFailover(i, i, FaultRecord("fail", "node.1", False, 20.0), None,
                                                      figures)) for i, o in enumerate(slow)]
    (point,) = summarize_points(faulted)
    codes = {w.code for w in point.warnings}
    assert "faulted" in codes and "stragglers" not in codes  # the node's failure, told by the failover lines


CHECK_PLAN = """
name: checked
targets:
  here: {kind: path, path: ./data, size: 8MiB}
workload: {rw: randwrite, bs: 4k, iodepth: 4, runtime: 2s, ramp: 0s}
repeat: 2
telemetry: {enabled: false}
check_writes: {blocks: 256, iops: 300}
"""


def test_check_writes_refuses_what_it_cannot_write_beside_fio_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The checking writer runs on this machine and writes: targets it has no place on, a device fio uses whole,
    someone's device without destructive, fio servers and a block size that is not whole sectors are refused by
    `plan`, each in one line with the fix."""
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, CHECK_PLAN)))
    assert code == 0 and "check_writes: beside fio, 256 stamped blocks of 4k written at 300 a second" in out, out + err
    # 256 blocks for about 300 x (2 s + 10 s) writes: only each block's last is read back, and plan says so
    said = " ".join(out.split())
    assert "a repetition may write about 3,600: a block is written again after about 1 s and only its last write " \
        "is read back, so a write lost and then replaced goes unseen (with blocks: 3600 each is read back)" in said, \
        said
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, CHECK_PLAN.replace("blocks: 256, ", ""),
                                                            "default.yaml")))
    said = " ".join(out.split())
    assert code == 0 and "check_writes: beside fio, 3,600 stamped blocks of 4k" in said, out + err  # one a write
    assert "each acknowledged write is read back" in said and "only its last" not in said, said
    # it writes while fio waits out a startdelay too (the longest of a sweep, the top of a range)
    delayed = CHECK_PLAN.replace("blocks: 256, ", "").replace("ramp: 0s}", "ramp: 0s, fio: {startdelay: [1s, 2-4s]}}")
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, delayed, "delayed.yaml")))
    assert code == 0 and "check_writes: beside fio, 4,800 stamped blocks of 4k" in " ".join(out.split()), out + err
    refusals = [
        ("here: {kind: path, path: ./data, size: 8MiB}", "here: {kind: nfs, url: 'nfs://10.0.0.1/x', size: 8MiB}",
         "cannot write beside fio on nfs target 'here'"),
        ("here: {kind: path, path: ./data, size: 8MiB}", "here: {kind: block}\nlab: {volume: {size: 64MiB}}",
         "which has no size"),
        ("here: {kind: path, path: ./data, size: 8MiB}", "here: {kind: block, device: /dev/vdz, size: 8MiB}",
         "without destructive: true"),
        ("check_writes: {blocks: 256, iops: 300}", "check_writes: {bs: 1000}", "multiple of 512"),
        ("check_writes: {blocks: 256, iops: 300}", "check_writes: {blocks: 300000}", "at most 1GiB"),
        ("here: {kind: path, path: ./data, size: 8MiB}", "here: {kind: block, size: 8MiB}\nlab: {volume: {size: "
         "64MiB}}", "check_writes writes just past the size of block target 'here'; workload.size (16MiB) moves fio's "
         "I/O there"),
        ("here: {kind: path, path: ./data, size: 8MiB}", "here: {kind: block, size: 8000001}\nlab: {volume: {size: "
         "64MiB}}", "not a multiple of 4 KiB"),
        ("here: {kind: path, path: ./data, size: 8MiB}", "here: {kind: block, size: 63.5MiB}\nlab: {volume: {size: "
         "64MiB}}", "check_writes writes 1MiB just past the 63.5MiB of block target 'here', more than the volume "
         "lab's 64MiB holds"),
        ("telemetry: {enabled: false}", "telemetry: {enabled: false}\nhosts: {servers: [10.0.0.1]}",
         "not on fio servers"),
    ]
    for old, new, says in refusals:
        text = CHECK_PLAN.replace(old, new).replace("path: ./data", f"path: {tmp_path}/data")
        if "workload.size" in says:
            text = text.replace("runtime: 2s,", "runtime: 2s, size: 16MiB,")
        code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, text, "bad.yaml")))
        fix = "hint:" in err or "e.g." in err
        assert code == 2 and says in err and fix and len(err.strip().splitlines()) == 1, (new, err)


@pytest.mark.fio
def test_check_writes_beside_real_fio_finds_every_acknowledged_write_and_leaves_no_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """On a healthy directory nothing acknowledged is lost: each repetition's writer is read back whole, its
    counts are stored with the repetition and `show` says them; its file is gone afterwards."""
    from storbench.store import open_store

    monkeypatch.chdir(tmp_path)
    plan = write_plan(tmp_path, CHECK_PLAN.replace("blocks: 256, ", ""))  # a block for each write: all read back
    code, out, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"))
    assert code == 0, out + err
    line = " ".join(out.split()).split("run 1 here randwrite 4k qd4: ")[-1]
    assert "2 repetitions read back" in line and "0 lost, 0 stale, 0 torn, 0 corrupt" in line, out
    assert "— every acknowledged write is there" in line, line
    store = open_store(tmp_path / "r.db", read_only=True)
    try:
        checks = [r.write_check for r in store.repetitions()]
    finally:
        store.close()
    assert all(c is not None and c.blocks == 3600 and c.block_bytes == 4096 and c.acknowledged > 50 and c.bad == 0
               and c.read_back == c.acknowledged for c in checks), checks
    assert not (tmp_path / "data" / "storbench.check").exists()
    code, out, err = run_cli(capsys, "export", "--db", str(tmp_path / "r.db"), "--format", "json", "--where",
                             "writes_lost=0")
    records = json.loads(out)
    assert code == 0 and len(records) == 2, out + err
    assert all(r["writes_acknowledged"] > 50 and r["writes_stale"] == r["writes_torn"] == 0
               and r["writes_read_back"] == r["writes_acknowledged"] for r in records)


def test_the_failover_verdict_counts_the_repetitions_a_stall_happened_in() -> None:
    """The one-sentence verdict is built from the figures alone: a stall is said with the repetitions it happened
    in counted ("in 1 of 3"), none says so, one that lasted to the end is a lower bound; clients stalled are
    counted, and the repetitions all stalled at once; the level, the recovery, the cluster and the acknowledged
    writes follow."""
    from types import SimpleNamespace

    from storbench.model.fault_record import WriteCheck
    from storbench.report.failover import failover_line, failover_verdict, scorecard_rows
    from storbench.report.write_checks import write_check_lines, write_check_text
    from storbench.stats.estimate import estimate
    from storbench.stats.failover_points import PointFailover, RepetitionFailover
    from storbench.stats.timeline import Failover, Recovery
    from storbench.stats.write_checks import PointWriteCheck, point_write_checks

    def point(blackouts: list[float], clients: dict[str, list[float]] | None = None,
              first: list[float | None] | None = None, **more: object) -> PointFailover:
        """A point whose repetitions had these blackouts (all clients together, and each client's own)."""
        clients = clients or {}
        firsts = first if first is not None else list(blackouts)
        figures = [Failover(pre_fault_iops=1000.0, blackout_s=b, first_completion_s=firsts[i], dip_pct=0.0,
                            client_blackouts_s=tuple((c, v[i]) for c, v in clients.items()), degraded_pct=None,
                            recovery=Recovery.NOT_RECOVERED, recovery_s=None, longest_io_ns=None, end_pct=90.0)
                   for i, b in enumerate(blackouts)]
        fields: dict[str, object] = dict(
            case_id="c", run_id=1, action="freeze", target="osd.1",
            repetitions=tuple(RepetitionFailover(i, i, None, None, f) for i, f in enumerate(figures)),
            blackout_s=estimate(blackouts), restore_blackout_s=None,
            first_completion_s=estimate([f for f in firsts if f is not None]),
            client_blackouts_s=tuple((c, estimate(v)) for c, v in clients.items()),
            dip_pct=estimate([0, 0, 0]), degraded_pct=None, recovery_s=None, longest_io_ns=None,
            recovered=0, not_recovered=3, undecided=0, end_pct=estimate([90, 92, 94]), left_pct=estimate([90, 92, 94]))
        fields.update(more)
        return PointFailover(**fields)  # type: ignore[arg-type]

    stalled = point([27.0, 27.5, 28.0])
    checked = PointWriteCheck(1, "c", 3, WriteCheck(16384, 4096, 14_122, 0, read_back=14_122), None, ())
    said = failover_verdict(stalled, checked, "rbd randwrite 4k qd8")
    assert said.startswith("rbd randwrite 4k qd8: I/O stopped for 27.5 s [") and "after osd.1 was frozen;" in said
    assert "; shown below the level before to the end in 3 of 3, left at 92 % [87, 97];" in said, said
    assert said.endswith("0 of 14,122 acknowledged writes lost (each read back).")
    # a region with fewer blocks than writes: only each block's last write was read back, and that is all it says
    replaced = PointWriteCheck(1, "c", 3, WriteCheck(2048, 4096, 14_122, 0, read_back=6_144), None, ())
    assert failover_verdict(stalled, replaced, "x").endswith(
        "0 lost of the 6,144 acknowledged writes read back, each block's last (7,978 of the 14,122 were followed by "
        "another write to their block and not checked: check_writes with more blocks, or fewer writes a second, reads "
        "back each).")
    assert write_check_text(replaced) == "0 of 6,144 read back lost (14,122 acknowledged)"
    assert "each block's last acknowledged write is there (7,978 earlier writes replaced before the read-back, not " \
        "checked)" in write_check_lines([replaced], {})[-1]
    assert "every acknowledged write is there" in write_check_lines([checked], {})[-1]
    # stored before the writes read back were counted: the claim a clean read-back supports, no more
    older = PointWriteCheck(1, "c", 3, WriteCheck(2048, 4096, 14_122, 0), None, ())
    assert failover_verdict(stalled, older, "x").endswith("0 lost: every block held its last acknowledged write "
                                                          "(14,122 acknowledged; a write replaced by a later one to "
                                                          "its block is not checked).")
    assert write_check_text(older) == "0 lost (each block's last of 14,122 acknowledged)"
    # the cluster clean again in 1 of 3, the others not within the watch: said, not "every PG active+clean" alone
    unclean = failover_verdict(point([27.0, 27.5, 28.0], cluster_disturbed=3, cluster_never_clean=2,
                                     cluster_clean_s=estimate([38.0])), None, "x")
    assert "; every PG active+clean 38.0 s after the fault (in 1 of 3); a PG not active+clean again within the " \
        "watch in 2 of 3." in unclean, unclean
    # what happened is counted repetition by repetition: stopped in 1 of 3 (not "not shown every time")
    unsure = failover_verdict(point([0.0, 0.0, 1.8]), None, "x")
    assert "I/O stopped for 0.60 s [0.00, 3.18] after osd.1 was frozen (in 1 of 3);" in unsure, unsure
    assert "acknowledged" not in unsure
    # stopped every time, a wide interval reaching zero: said as it is, with no "not every time"
    wide = failover_verdict(point([0.5, 3.0]), None, "x")
    assert "I/O stopped for 1.8 s [0.0, 17.6] after osd.1 was frozen;" in wide, wide
    assert "never stopped" in failover_verdict(point([0.0, 0.0, 0.0]), None, "x")
    # a repetition whose fault made fio fail (I/O never back, the watchdog) has no figures: "every repetition" had
    # counted only the ones that ended, with nothing said of it
    back = point([1.0, 1.1], recovered=2, not_recovered=0, failed=1, failed_error="fio timed out after 95 s")
    said_back = failover_verdict(back, None, "x")
    assert "back to at least 90 % of the level before in every repetition that ended;" in said_back, said_back
    assert "1 more repetition with the fault failed, left out of these figures (fio timed out after 95 s)" in said_back
    assert "that ended" not in failover_verdict(point([1.0, 1.1], recovered=2, not_recovered=0), None, "x")
    # a repetition too short to tell after the undoing is said so, not lumped with the undecided
    why = "(fewer than 5 s of the run after the stall and the last fault action, or than 2 s of I/O before the fault)"
    short = failover_verdict(point([1.0, 1.1], recovered=1, not_recovered=0, undecided=1, too_short=1), None, "x")
    assert f"back to at least 90 % of the level before in 1 of 2, too short to tell in 1 {why}" in short, short
    both = failover_verdict(point([1.0, 1.1, 1.0], recovered=1, not_recovered=0, undecided=2, too_short=1), None, "x")
    assert f"too short to tell in 1 {why}, the rest undecided" in both, both
    assert "the rest undecided" in failover_verdict(point([1.0, 1.1], recovered=1, not_recovered=0, undecided=1),
                                                    None, "x")
    every = failover_verdict(point([1.0, 1.1], recovered=0, not_recovered=0, undecided=2, too_short=2), None, "x")
    assert f"; whether it came back too short to tell in every repetition {why}" in every, every
    below = failover_verdict(point([1.0, 1.1, 1.2], recovered=0, not_recovered=2, undecided=1, too_short=1), None, "x")
    assert f"shown below the level before to the end in 2 of 3, left at 92 % [87, 97]; too short to tell in 1 {why}" \
        in below, below
    # never back in 2 of 3: the blackout there is a lower bound, the first I/O is of the one that came back
    gone = point([20.0, 20.0, 3.0], first=[None, None, 3.0])
    assert "I/O stopped for 14.3 s [" in failover_verdict(gone, None, "x")
    assert ", to the end of the run in 2 of 3 (there a lower bound);" in failover_verdict(gone, None, "x")
    line = failover_line(gone, "x")
    assert "(to the end in 2 of 3: there a lower bound); first I/O 3.00 s after the fault (in 1 of 3);" in line, line
    assert "no I/O after the fault to the end;" in failover_line(point([20.0], first=[None]), "x")
    one_of_two = point([2.0, 2.2, 2.1], {"a": [0.0, 0.0, 0.1], "b": [2.0, 2.2, 2.1]})
    assert "on 1 of 2 clients" in failover_verdict(one_of_two, None, "x")
    only_one = point([0.0, 0.0, 0.0], {"client.1": [1.0, 1.2, 1.1], "client.2": [0.0] * 3}, action="delete",
                     target="client.1")
    alone = failover_verdict(only_one, None, "x")
    assert "I/O stopped on 1 of 2 clients after client.1 was deleted, the others went on: client.1 for 1.1 s [" in alone
    assert "never stopped" not in alone and "every client" not in alone
    both = failover_verdict(point([0.0, 0.0, 0.0], {"client.1": [20.0, 21.0, 22.0], "client.2": [0.0, 0.0, 3.0]},
                                  action="fail", target="node.1"), None, "x")
    assert "I/O stopped on 2 of 2 clients after node.1 was powered off, never on all of them at once: client.1 " \
        "for 21.0 s [" in both and "; client.2 for 1.0 s [0.0, 5.3] (in 1 of 3);" in both, both
    # all clients together stalled for one 100 ms window now and then, one client for minutes: that client's stall
    # is the answer, and the moments all stopped at once are counted, not called "never"
    hiccup = failover_verdict(point([0.0, 0.1, 0.3], {"client.1": [280.8, 281.1, 281.4], "client.2": [0.0, 0.1, 0.3]},
                                    action="fail", target="node.1"), None, "x")
    assert "I/O stopped on 2 of 2 clients after node.1 was powered off, on all of them at once in 2 of 3: client.1 " \
        "for 281.1 s" in hiccup and "every client" not in hiccup and "never" not in hiccup, hiccup
    apart = failover_verdict(point([0.0, 0.0, 0.0], {"client.1": [20.0, 21.0, 22.0], "client.2": [5.0, 6.0, 7.0]},
                                   action="fail", target="node.1"), None, "x")
    assert "stopped on 2 of 2 clients after node.1 was powered off, never on all of them at once: " in apart
    assert "the others went on" not in apart
    # both clients stopped together in one repetition, apart in the two others: not "never at once"
    once = failover_verdict(point([2.0, 0.0, 0.0], {"a": [2.0, 1.0, 0.0], "b": [2.0, 0.0, 1.5]}), None, "x")
    assert "I/O stopped on 2 of 2 clients after osd.1 was frozen, on all of them at once in 1 of 3: " in once, once
    lost = PointWriteCheck(1, "c", 3, WriteCheck(1024, 4096, 1_064, 0, lost=145, stale=44), 0, ())
    assert failover_verdict(stalled, lost, "x").endswith(
        "; acknowledged writes lost or damaged: 189 of the 3,072 blocks read back did not hold their last "
        "acknowledged write (1,064 writes acknowledged).")
    assert write_check_text(lost) == "145 lost, 44 stale (of 3,072 blocks)"
    # two repetitions could not be read back (the storage stopped taking writes): what was read is not all there was
    stuck = "its writes had not returned 60 s after the repetition ended: nothing read back"
    reps = [SimpleNamespace(run_id=1, case=SimpleNamespace(case_id="c"), rep_index=i, write_check=check, faults=())
            for i, check in enumerate((WriteCheck(1000, 4096, 0, 0, error=stuck),
                                       WriteCheck(1000, 4096, 0, 0, error=stuck),
                                       WriteCheck(1000, 4096, 450, 0, read_back=450)))]
    (partly,) = point_write_checks(reps)  # type: ignore[arg-type]
    assert (partly.checked, partly.unchecked) == (1, 2)
    assert write_check_text(partly) == "0 of 450 lost; 2 of 3 repetitions not checked"
    assert failover_verdict(stalled, partly, "x").endswith(
        "; 0 of 450 acknowledged writes lost (each read back) in the 1 of 3 repetitions read back; the other 2 not "
        "checked.")
    line = write_check_lines([partly], {})[-1]
    assert "1 repetition read back" in line and "; 2 not checked: its writes" in line, line
    # every checking write failed: "0 of 0 lost" had counted as a check, clean
    failed_all = [SimpleNamespace(run_id=1, case=SimpleNamespace(case_id="c"), rep_index=0,
                                  write_check=WriteCheck(1000, 4096, 0, 800, read_back=0), faults=())]
    (none,) = point_write_checks(failed_all)  # type: ignore[arg-type]
    assert (none.checked, none.unchecked) == (0, 1) and write_check_text(none).startswith("not checked: no checking")
    # a repetition whose fault (a lie's serving) was not done put no write at risk: its "0 lost" is no evidence
    from storbench.model.fault_record import FaultRecord

    undone = [SimpleNamespace(run_id=1, case=SimpleNamespace(case_id="c"), rep_index=i, write_check=WriteCheck(
        1000, 4096, 400, 0, read_back=400), faults=(FaultRecord("lose-writes", "volume", False, 1.0),
                                                    FaultRecord("lose-writes", "volume", True, 2.5, error=error)))
        for i, error in enumerate(("", "volume lab: no copy kept to serve"))]
    (half,) = point_write_checks(undone)  # type: ignore[arg-type]
    assert (half.checked, half.unchecked, half.total.acknowledged) == (1, 1, 400), half
    assert half.errors == ("its fault was not done, so no write was put at risk: volume lab: no copy kept to serve",)
    # two back (one of them after a degraded stretch), one not: each figure says which repetitions it is of
    mixed = point([4.9, 5.0, 4.9], degraded_pct=estimate([61.0]), end_pct=estimate([99.0, 101.0, 58.0]),
                  recovered=2, not_recovered=1, left_pct=estimate([58.0]))
    assert ": I/O stopped for 4.9 s [" in failover_verdict(mixed, None, "x") and failover_verdict(mixed, None, "x") \
        .endswith("; then 61 % of the level before until it was back (in 1 of 3); shown below it to the end in 1 "
                  "of 3, left at 58 %.")  # the level at the end of all three (86 %) is not what the one was left at
    line = failover_line(mixed, "x")
    assert "then 61 % of it until back (in 1 of 3); at the end 86 % [26, 146] of it; recovered 2 of 3" in line, line
    (row,) = scorecard_rows([mixed], {})
    assert row[7:9] == ("61 (in 1 of 3)", "86 [26, 146]"), row
    assert re.fullmatch(r"\d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\]", row[4]), row  # seconds to the first I/O: not whole
    back = failover_verdict(point([4.9, 5.0, 4.9], degraded_pct=None, recovered=3, not_recovered=0), None, "x")
    assert back.endswith("; back to at least 90 % of the level before in every repetition.")  # nothing for "it"
    assert "after the server was stopped" in failover_verdict(
        point([4.9, 5.0, 4.9], action="stop", target="server"), None, "x")


def test_a_repetition_that_does_not_end_removes_its_checking_writers_file(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Interrupted mid-repetition (Ctrl-C, or the lab's settling failing), the writer's region is released there
    and then: an rbd image `<image>.check` left behind had refused every later check."""
    from storbench import checks, orchestrate
    from storbench.checks import check_everything
    from storbench.config import load_plan_text
    from storbench.execute import checker
    from storbench.execute.fake import FakeExecutor, Raise
    from storbench.fio.options import FioCapabilities
    from storbench.plan import expand
    from storbench.store import open_store

    caps = FioCapabilities(binary="/usr/bin/fio", version="fio-3.33", options=frozenset(), engines=frozenset())
    monkeypatch.setattr(checks, "fio_capabilities", lambda binary, engines=(): caps)
    monkeypatch.chdir(tmp_path)
    released: list[str] = []
    real = checker.CheckingWriter._release

    def release(self: checker.CheckingWriter) -> None:
        released.append("released")
        real(self)

    monkeypatch.setattr(checker.CheckingWriter, "_release", release)
    loaded = load_plan_text(CHECK_PLAN, "checked.yaml")
    cases = expand(loaded)
    store = open_store(tmp_path / "r.db")
    try:
        with pytest.raises(KeyboardInterrupt):
            orchestrate.run_plan(loaded, cases, check_everything(loaded, cases, caps.binary, create=True), store,
                                 FakeExecutor([Raise(KeyboardInterrupt())]), _Quiet(), resume=False)
    finally:
        store.close()
    assert released == ["released"]
    assert not (tmp_path / "data" / "storbench.check").exists()


class _Quiet:
    def run_started(self, *args: object) -> None: ...
    def repetition_started(self, *args: object) -> None: ...
    def repetition_finished(self, *args: object) -> None: ...
    def event(self, *args: object) -> None: ...


def test_the_longest_io_shown_is_the_longest_of_all_repetitions_not_a_mean_of_each_ones_longest(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """"longest I/O" reads as the worst I/O seen: over repetitions whose longest I/Os were 1 s, 2 s and 6 s it is
    6 s, with the mean of each repetition's longest (3 s) said as that; one repetition gives its own."""
    from types import SimpleNamespace

    from storbench.model import Status
    from storbench.report.failover import failover_line, scorecard_rows
    from storbench.stats import failover_points
    from storbench.stats.timeline import Failover, Recovery

    def figures(longest_s: float) -> Failover:
        return Failover(pre_fault_iops=1000.0, blackout_s=1.0, client_blackouts_s=(), first_completion_s=1.0,
                        dip_pct=0.0, degraded_pct=90.0, recovery=Recovery.RECOVERED, recovery_s=2.0,
                        longest_io_ns=int(longest_s * 1e9), dip_before_pct=70.0 + longest_s)

    longest = iter([1.0, 2.0, 6.0])
    monkeypatch.setattr(failover_points, "repetition_failover", lambda r: failover_points.RepetitionFailover(
        r.rep_index, r.rep_index, None, None, figures(next(longest))))
    reps = [SimpleNamespace(faults=("x",), status=Status.OK, run_id=1, rep_index=i,
                            case=SimpleNamespace(case_id="c")) for i in range(3)]
    (point,) = failover_points.point_failovers(reps)  # type: ignore[arg-type]
    assert failover_line(point, "x").endswith("; longest I/O 6s (each repetition's: mean 3s)")
    (row,) = scorecard_rows([point], {})
    assert "6s (each repetition's: mean 3s)" in row
    # the dip beside the noise's own low before the fault (the mean of 71, 72 and 76)
    assert "dip to 0 % [0, 0] of the level before (the noise alone: as low as 73 % [" in failover_line(point, "x")
    assert "0 [0, 0]; before the fault 73" in row
    longest = iter([1.5])
    (alone,) = failover_points.point_failovers(reps[:1])  # type: ignore[arg-type]
    assert failover_line(alone, "x").endswith("; longest I/O 1.5s")


def test_a_report_over_two_runs_of_one_plan_says_each_failover_rows_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs of one faulted plan in one report: their failover rows and verdicts had read the same (the case's
    label only); each says its run now, as `show` does."""
    from storbench.model import RunInfo
    from storbench.report import build
    from storbench.stats import failover_points
    from storbench.stats.estimate import Estimate
    from synthetic import observation

    def point(run_id: int, blackout_s: float) -> failover_points.PointFailover:
        figure = Estimate(n=3, mean=blackout_s, stddev=0.1, ci_low=blackout_s - 0.2, ci_high=blackout_s + 0.2)
        return failover_points.PointFailover("c", run_id, "stop", "nfs", (), figure, *(None,) * 6, 3, 0, 0)

    monkeypatch.setattr(build, "point_failovers", lambda repetitions: [point(1, 5.0), point(2, 2.0)])
    runs = [RunInfo(run_id=r, plan_name="p", plan_text="", source="run", storbench_version="0", fio_version="",
                    host="h", kernel="k", run_order="interleaved", seed=0, tags=(), started_at_s=0.0,
                    finished_at_s=1.0) for r in (1, 2)]
    seen = [observation(case_id="c", run_id=r, repeat=i, iops=1000.0) for r in (1, 2) for i in range(3)]
    doc = build.build_report("t", runs, [], seen)
    assert [row[0].split(":")[0] for row in doc.failover] == ["run 1", "run 2"]
    monkeypatch.setattr(build, "point_failovers", lambda repetitions: [point(1, 5.0)])
    one = build.build_report("t", runs[:1], [], [o for o in seen if o.run_id == 1])
    assert len(one.failover) == 1 and not one.failover[0][0].startswith("run ")


def test_a_fault_that_holds_the_io_needs_its_restore() -> None:
    """A frozen volume holds fio's last I/Os: without restore_after fio could not end, and every repetition would be
    a watchdog timeout."""
    offers = (FaultOffer("volume", "freeze", "volume", "thaw", "hold every I/O", holds_io=True),)
    [line] = fault_problems([FaultStep(10, "freeze", "volume")], measured_s=60, offers=offers)
    assert "'freeze' holds every I/O until it is undone" in line and "give restore_after, a time to thaw" in line
    assert fault_problems([FaultStep(10, "freeze", "volume", 5)], measured_s=60, offers=offers) == []
    from storbench.lab.volume import VolumeKind

    assert next(o for o in VolumeKind.faults if o.action == "freeze").holds_io


def test_lose_writes_counts_the_volumes_copies_on_the_lab_disk() -> None:
    from storbench.config import load_plan_text
    from storbench.demands import lab_disk_demands
    from storbench.plan import expand

    text = ("name: lw\ntargets:\n  vol: {kind: block}\nworkload: {rw: randwrite, runtime: 30s}\nlab: {volume: "
            "{size: 1GiB}}\n")
    for faults, copies in (("", 1), ("faults: [{at: 10s, do: lose-writes, on: volume}]\n", 3)):
        loaded = load_plan_text(text + faults, "p.yaml")
        [demand] = [d for d in lab_disk_demands(loaded.config, expand(loaded)) if d.resource.startswith("disk")]
        [need] = [n for n in demand.needs if n.key == ("lab", "volume", "size")]
        assert need.amount == copies << 30, need


@pytest.mark.parametrize(("lab", "fault", "says"), [
    ("hosts: {count: 2}}\nclients: 2\n#", "{at: 5s, do: cut, on: client.9, restore_after: 2s}",
     "every case of the plan's hosts lab has client.1 to client.2"),
    ("hosts: {count: 2}}\nclients: 2\n#", "{at: 5s, do: cut, on: client.0, restore_after: 2s}",
     "every case of the plan's hosts lab has client.1 to client.2"),
    ("hosts: {count: 4}}\nclients: [2, 4]\n#", "{at: 5s, do: cut, on: client.3, restore_after: 2s}",
     "every case of the plan's hosts lab has client.1 to client.2"),  # the 2-client cases do not run client.3
    ("hosts: {count: 2}}\nclients: 2\n#", "{at: 5s, do: cut, on: client.02, restore_after: 2s}",
     "write client.2, with no leading"),
    ("ceph: {osds: [3, 6]}", "{at: 5s, do: kill, on: osd.3, restore_after: 2s}",  # osd.3 only in the larger
     "faults\\[0\\] acts on osd.3, and the Ceph lab's smallest cluster has osd.0 to osd.2"),
    ("ceph: {osds_per_device: [1, 2], devices: 2, pool_size: 2}", "{at: 5s, do: kill, on: osd.3, restore_after: 2s}",
     "the Ceph lab's smallest cluster has osd.0 to osd.1"),
    ("ceph: {osds: 3}", "{at: 5s, do: kill, on: osd.3, restore_after: 2s}", "the Ceph lab has osd.0 to osd.2"),
    ("ceph: {osds: 3}", "{at: 5s, do: kill, on: osd.00, restore_after: 2s}", "write osd.0, with no leading zero"),
])
def test_a_fault_on_a_target_the_plans_lab_does_not_have_is_refused_by_plan(lab: str, fault: str,
                                                                              says: str) -> None:
    """`client\\.[0-9]{1,4}` took client.9 on a two-host lab: every repetition was stored "with faults" where none
    happened, said only at run time. client.3 of a 4-host lab was taken with `clients: [2, 4]`: the 2-client cases
    stored a fault on a host they do not run, as a fault with no blackout. `client.02` got past the check that one
    target's faults do not overlap (another name than client.2)."""
    from storbench.config import load_plan_text
    from storbench.errors import UserError
    from storbench.lab.registry import check_faults
    from storbench.plan import expand

    text = (f"name: f\ntargets:\n  t: {{kind: path, path: /tmp/f, size: 1MiB}}\nworkload: {{rw: randwrite, "
            f"runtime: 20s}}\nlab: {{{lab}}}\nfaults: [{fault}]\n")
    with pytest.raises(UserError, match=says):  # by the plan's own checks (the lab's settings) or the labs'
        loaded = load_plan_text(text, "p.yaml")
        check_faults(loaded, expand(loaded))
    fine = load_plan_text(text.replace("client.02", "client.2").replace("client.9", "client.2")
                          .replace("client.0", "client.1")
                          .replace("client.3", "client.2").replace("osd.3", "osd.1").replace("osd.00", "osd.0"),
                          "p.yaml")
    check_faults(fine, expand(fine))


def test_a_startdelay_is_counted_before_the_faults_and_one_drawn_at_random_is_refused() -> None:
    from storbench.config import load_plan_text
    from storbench.errors import UserError
    from storbench.lab.registry import check_faults
    from storbench.plan import expand

    text = ("name: f\ntargets:\n  t: {kind: path, path: /tmp/f, size: 1MiB}\nworkload: {rw: randwrite, runtime: 20s, "
            "fio: {startdelay: DELAY}}\nlab: {hosts: {count: 2}}\nfaults: [{at: 5s, do: cut, on: client.1, "
            "restore_after: 2s}]\nclients: 2\n")
    # one client (several on fio servers refuse a range at load: they start together at the barrier)
    loaded = load_plan_text(text.replace("DELAY", "10-30s").replace("clients: 2", "clients: 1"), "p.yaml")
    with pytest.raises(UserError, match="startdelay draws the jobs' start between 10s and 30s"):
        check_faults(loaded, expand(loaded))
    fixed = load_plan_text(text.replace("DELAY", "15s"), "p.yaml")
    check_faults(fixed, expand(fixed))
    assert {c.workload.start_delay_s for c in expand(fixed)} == {(15.0, 15.0)}  # the faults wait for it


def test_a_cluster_that_did_not_heal_in_time_says_what_its_pgs_were_doing() -> None:
    """A memstore OSD killed and started again comes back empty: with CephFS's thousands of small objects the
    recovery (paced by Ceph's recovery sleep) outlasted the heal's wait, and the run ended on "timed out waiting
    for 3 OSDs up and in and all PGs active+clean" alone. The monitor's `pg stat` (as the lab's answered) says why."""
    from storbench.lab.ceph_faults import recovery_note

    stat = {"pg_ready": True, "pg_summary": {
        "num_pg_by_state": [{"name": "active+recovering+undersized+degraded+remapped", "num": 1},
                            {"name": "active+recovery_wait+undersized+degraded+remapped", "num": 28},
                            {"name": "active+clean", "num": 20}],
        "num_pgs": 49, "degraded_objects": 3568, "degraded_total": 12081, "recovering_objects_per_sec": 9}}
    assert recovery_note(stat, "memstore") == (
        "29 of 49 PGs not active+clean, 3,568 objects degraded, recovered at 9 objects/s (about 7 min to go); a "
        "memstore OSD started again comes back empty, so every object it held is recovered (bluestore keeps its "
        "data)")
    assert recovery_note(stat, "bluestore").endswith("(about 7 min to go)")
    stuck = {"pg_summary": {"num_pg_by_state": [{"name": "peering", "num": 3}], "num_pgs": 3}}
    assert recovery_note(stuck, "bluestore") == "3 of 3 PGs not active+clean"
    clean = {"pg_summary": {"num_pg_by_state": [{"name": "active+clean", "num": 3}], "num_pgs": 3}}
    assert recovery_note(clean, "bluestore") == "" and recovery_note({}, "memstore") == ""


def test_a_heal_that_times_out_says_what_the_pgs_were_doing() -> None:
    """The heal's own error carries the PGs' state (the monitor's `pg stat`), and only its own words when the
    monitor does not answer."""
    import contextlib
    from types import SimpleNamespace

    from storbench.errors import UserError
    from storbench.lab.ceph_faults import CephFaults

    stat = {"pg_summary": {"num_pg_by_state": [{"name": "active+recovery_wait+degraded", "num": 2}], "num_pgs": 2,
                           "degraded_objects": 1200, "recovering_objects_per_sec": 10}}

    class Lab:
        dir = SimpleNamespace(daemons=lambda: [])
        answers = True
        _pg_stat = CephFaults._pg_stat

        def connected(self) -> contextlib.AbstractContextManager[None]:
            return contextlib.nullcontext()

        def mon(self, prefix: str, **arguments: object) -> object:
            if prefix == "pg stat" and not self.answers:
                raise UserError("ceph lab: `pg stat` failed: timed out")
            return {"osds": []} if prefix == "osd dump" else stat

        def _wait(self, check: object, what: str, timeout_s: float, **progress: object) -> None:
            assert set(progress) == {"left", "ceiling_s"}  # the recovery's progress extends the wait
            raise UserError(f"ceph lab: timed out after 180s waiting for {what}", hint="see the daemon logs")

    spec = SimpleNamespace(osds=3, objectstore="memstore")
    lab = Lab()
    with pytest.raises(UserError) as said:
        CephFaults.heal(lab, spec)  # type: ignore[arg-type]
    assert said.value.message.startswith("ceph lab: timed out after 180s waiting for 3 OSDs up and in and all PGs "
                                         "active+clean; 2 of 2 PGs not active+clean, 1,200 objects degraded, "
                                         "recovered at 10 objects/s (about 2 min to go); a memstore OSD"), said.value
    assert said.value.hint == "see the daemon logs"
    lab.answers = False
    with pytest.raises(UserError) as plain:
        CephFaults.heal(lab, spec)  # type: ignore[arg-type]
    assert plain.value.message == "ceph lab: timed out after 180s waiting for 3 OSDs up and in and all PGs active+clean"


def test_a_heal_waits_while_the_recovery_makes_progress_and_no_longer() -> None:
    """The heal's wait (180 s) moves on while the work left (objects degraded or misplaced, PGs not clean) goes
    down, up to a ceiling; a recovery that stalls ends it 180 s after its last progress. Before, a recovery going
    at 8 objects a second was cut off at 180 s."""
    from storbench.errors import UserError
    from storbench.lab import ceph_daemons
    from storbench.lab.ceph_daemons import CephDaemons, pg_tally, recovery_left, waited_enough

    # pure: the first look sets the measure; less than ever moves the deadline, never past the ceiling
    assert waited_enough(0, 180, None, 500, 10, 180, 1800) == (180, 500)
    assert waited_enough(0, 180, 500, 490, 100, 180, 1800) == (280, 490)
    assert waited_enough(0, 280, 490, 495, 150, 180, 1800) == (280, 495)  # up again: a new measure, no gain
    assert waited_enough(0, 1750, 10, 5, 1700, 180, 1800) == (1800, 5)
    assert waited_enough(0, 180, 500, None, 100, 180, 1800) == (180, 500)  # the cluster did not say
    assert waited_enough(0, 180, 0, 3000, 20, 180, 1800) == (180, 3000)  # work showing up: the new measure
    stat = {"pg_summary": {"num_pg_by_state": [{"name": "active+clean", "num": 40},
                                               {"name": "active+recovery_wait+degraded", "num": 9}],
                           "num_pgs": 49, "degraded_objects": 300, "misplaced_objects": 7}}
    assert recovery_left(stat) == 9 + 300 + 7 and recovery_left({}) is None
    # routine work beside active+clean is clean (a kept lab's PGs scrub); an inconsistency a scrub found is not
    scrubbing = {"num_pg_by_state": [{"name": "active+clean+scrubbing+deep", "num": 2},
                                     {"name": "active+clean+snaptrim", "num": 1},
                                     {"name": "active+clean+inconsistent", "num": 1}], "num_pgs": 4}
    assert recovery_left(scrubbing) == 1 and pg_tally(scrubbing) == (3, 4)

    class Clock:
        now = 1000.0

        def time(self) -> float:
            return self.now

        def sleep(self, seconds: float) -> None:
            self.now += seconds

    def waited(work: Callable[[float], int | None] | None, look_s: float = 0.0) -> tuple[float, str]:
        clock = Clock()
        lab = SimpleNamespace(root=Path("/nonexistent"), _logs_hint=lambda logs: "see the logs")
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ceph_daemons, "time", clock)
            with pytest.raises(UserError) as said:
                CephDaemons._wait(lab, lambda: bool(clock.sleep(look_s)), "all PGs active+clean",  # type: ignore
                                  180.0,
                                  left=None if work is None else lambda: work(clock.now - 1000.0), ceiling_s=1800.0)
        return clock.now - 1000.0, said.value.message

    seconds, message = waited(None)
    assert 180 <= seconds < 181 and message == "ceph lab: timed out after 180s waiting for all PGs active+clean"
    seconds, message = waited(None, look_s=60)  # a look that takes the monitor's whole minute: no reason made up
    assert seconds > 180 and message == "ceph lab: timed out after 180s waiting for all PGs active+clean", message
    seconds, message = waited(lambda t: max(0, 3000 - round(8 * t)) if t < 300 else 600)  # stalls at 300 s
    assert 479 < seconds < 481 and message.endswith("waiting for all PGs active+clean (no progress in the last "
                                                    "180s)"), (seconds, message)
    seconds, message = waited(lambda t: 100_000 - round(8 * t))  # slow but steady: to the ceiling
    assert 1800 <= seconds < 1801 and "(still recovering at the 1800s ceiling)" in message, (seconds, message)
    # an OSD marked in again: the PG map says all clean at first, then its backfill shows and goes down
    seconds, message = waited(lambda t: 0 if t < 10 else max(1, 3000 - round(8 * (t - 10))))
    assert seconds > 300 and "no progress" in message, (seconds, message)


def test_lose_writes_without_a_restore_is_refused_it_would_lose_nothing() -> None:
    """The copy is served at the restore: without restore_after nothing is lost, and a write check beside it had read
    "0 of N acknowledged writes lost" next to "made to lose writes"."""
    from storbench.config import load_plan_text
    from storbench.errors import UserError
    from storbench.lab.registry import check_faults
    from storbench.plan import expand

    text = ("name: lw\ntargets:\n  vol: {kind: block}\nworkload: {rw: randwrite, runtime: 30s}\nlab: {volume: "
            "{size: 1GiB}}\nfaults: [FAULT]\n")
    loaded = load_plan_text(text.replace("FAULT", "{at: 10s, do: lose-writes, on: volume}"), "p.yaml")
    with pytest.raises(UserError, match="'lose-writes' acts at its restore"):
        check_faults(loaded, expand(loaded))
    kept = load_plan_text(text.replace("FAULT", "{at: 10s, do: lose-writes, on: volume, restore_after: 5s}"), "p.yaml")
    check_faults(kept, expand(kept))


@pytest.mark.parametrize(("volume", "check", "says"), [
    ("iops: 150", "{}", "check_writes writes 200 a second, more than 10% of the volume lab's cap of 150 IOPS"),
    ("iops: 3000", "{iops: 301}", "more than 10% of the volume lab's cap of 3000 IOPS"),
    ("iops: 100", "{iops: 10, blocks: 62000}", "62,000 blocks back at the volume lab's cap of 100 IOPS: 620 s"),
    ("iops: 3000", "{}", None),
    ("bw: 100MiB/s", "{}", None),  # no IOPS cap
])
def test_a_checking_writer_must_stay_a_small_share_of_the_volumes_cap(volume: str, check: str, says: str | None
                                                                      ) -> None:
    """The volume's cap counts the writer's writes: 150 IOPS with its default 200 a second had left fio nothing,
    said nowhere; a region read back at a low cap outlasted the read-back's 600 s and was blamed on the storage."""
    from storbench.config import load_plan_text
    from storbench.errors import UserError

    text = (f"name: cw\ntargets:\n  vol: {{kind: block, size: 32MiB}}\nworkload: {{rw: randwrite, runtime: 30s}}\n"
            f"lab: {{volume: {{size: 1GiB, {volume}}}}}\ncheck_writes: {check}\n")
    if says is None:
        load_plan_text(text, "p.yaml")
        return
    with pytest.raises(UserError, match=re.escape(says)):
        load_plan_text(text, "p.yaml")


def test_a_read_back_short_of_its_acknowledged_writes_says_which_part_more_blocks_would_check() -> None:
    """Blocks whose later write failed are left out of the read-back too, and no number of blocks checks them: the
    line had sent every one of them to `check_writes` with more blocks."""
    from storbench.model.fault_record import WriteCheck
    from storbench.report.write_checks import none_lost_text

    replaced = none_lost_text(WriteCheck(1000, 4096, 1_500, 0, read_back=1_000))
    assert replaced.endswith("(500 of the 1,500 were followed by another write to their block and not checked: "
                             "check_writes with more blocks, or fewer writes a second, reads back each)"), replaced
    failing = none_lost_text(WriteCheck(1000, 4096, 1_500, 40, read_back=980))
    assert "; 40 writes failed, and a block whose last write failed may hold that write, which no number of blocks " \
        "changes)" in failing, failing
