"""The failover timeline's arithmetic (issue 32): fio's per-window logs read against the moment of a fault, on
synthetic logs with known answers and on real fio logs of a 1.2 s stall."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from storbench.fio.logs import LogRow, parse_log
from storbench.stats.timeline import ClientLog, Recovery, failover, longest_stall

FIXTURES = Path(__file__).parent / "fixtures" / "fio-logs"
T0 = 1_795_692_000_000  # epoch ms
WINDOW = 100


def synthetic(rate: Callable[[float], float], seconds: float, cv: float = 0.05, seed: int = 1,
              client: str = "c1", slow: dict[float, int] | None = None) -> ClientLog:
    """A client's 100 ms IOPS log: ``rate(t)`` IOPS at t seconds after T0 (0: nothing completes, so no row), with
    per-window noise of ``cv``; ``slow`` puts a latency (ns) in the window closing at that second."""
    rng = random.Random(seed)
    iops, lat = [], []
    for k in range(1, int(seconds * 1000 / WINDOW) + 1):
        t = k * WINDOW / 1000
        level = rate(t - WINDOW / 2000)
        if level > 0:
            iops.append(LogRow(T0 + k * WINDOW, max(1, round(level * rng.gauss(1, cv))), "write"))
            lat.append(LogRow(T0 + k * WINDOW, (slow or {}).get(round(t, 1), 2_000_000), "write"))
    return ClientLog(client, tuple(iops), tuple(lat))


def at(seconds: float) -> int:
    return T0 + round(seconds * 1000)


def test_parse_log_reads_fio_rows_and_names_a_bad_line() -> None:
    rows = parse_log("1795692180698, 503, 1, 0, 0\n\n1795692180798, 490, 0, 4096\n1795692180899, 5, 2, 0, 0, 1\n")
    assert rows == (LogRow(1795692180698, 503, "write"), LogRow(1795692180798, 490, "read"),
                    LogRow(1795692180899, 5, "trim"))
    with pytest.raises(ValueError, match="line 2 is not a fio log row"):
        parse_log("1, 2, 0\nnot, a, row\n")
    with pytest.raises(ValueError, match="line 1 is not a fio log row"):
        parse_log("1, 2, 7\n")  # no such direction
    with pytest.raises(ValueError, match="negative"):
        parse_log("1, -2, 0\n")
    # a log cut short mid-row (a pod's stream that ended, a log kept to its first characters): the rows before it
    assert parse_log("1795692180698, 503, 1, 0, 0\n1795692180798, 4") == (LogRow(1795692180698, 503, "write"),)
    with pytest.raises(ValueError, match="line 2"):  # a whole bad line is no log cut short
        parse_log("1795692180698, 503, 1, 0, 0\n1795692180798, 4\n")


def test_a_repetition_with_a_log_that_does_not_read_has_no_figures_and_says_why() -> None:
    """Two clients, one log unreadable: its figures are not read from the other client alone (whose I/O never
    stopped: the stall of the client on the failed node would go unseen); the problem names the log."""
    from storbench.model import Case, PathTarget, Status, StoredRepetition, WorkloadPoint
    from storbench.model.fault_record import FaultRecord
    from storbench.stats.failover_points import repetition_failover

    workload = WorkloadPoint(rw="randwrite", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=30, ramp_s=0,
                             direct=True, ioengine="libaio", size_bytes=1 << 20, timeline_window_ms=WINDOW)
    case = Case(case_id="c", target=PathTarget(name="t", path="/x", size_bytes=1 << 20), workload=workload)
    rows = "\n".join(f"{r.t_ms}, {r.value}, 1, 0" for r in synthetic(lambda t: 1000, 30).iops) + "\n"
    logs = (("timeline_iops.1.log.client.1", rows), ("timeline_iops.1.log.client.2", "garbled\n" + rows))
    repetition = StoredRepetition(repetition_id=1, run_id=1, case=case, rep_index=0, status=Status.OK,
                                  started_at_s=T0 / 1000, finished_at_s=T0 / 1000 + 30, fio_version="fio-3.33",
                                  error="", clients=(), faults=(FaultRecord("kill", "osd.0", False, at(10) / 1000),),
                                  logs=logs)
    found = repetition_failover(repetition)
    assert found.figures is None and "timeline_iops.1.log.client.2" in found.problem and "line 1" in found.problem
    readable = repetition_failover(replace(repetition, logs=logs[:1]))
    assert readable.figures is not None and readable.problem == ""


def test_a_three_second_blackout_at_the_fault_then_back_to_the_level() -> None:
    log = synthetic(lambda t: 0 if 10 <= t < 13 else 1000, 30, slow={13.1: 3_050_000_000})
    result = failover([log], WINDOW, at(10), at(0), at(30))
    assert result.blackout_s == pytest.approx(3.0, abs=0.11)
    assert result.first_completion_s == pytest.approx(3.0, abs=0.11)
    assert result.client_blackouts_s == (("c1", result.blackout_s),)
    assert result.pre_fault_iops == pytest.approx(1000, rel=0.02)
    assert result.dip_pct == 0.0  # nothing completed in the stall's windows
    assert result.recovery is Recovery.RECOVERED
    assert result.recovery_s is not None and 3.0 <= result.recovery_s <= 3.2  # right after the stall
    assert result.degraded_pct is None
    assert result.longest_io_ns == 3_050_000_000


def test_the_stall_at_the_undoing_is_its_own_not_the_faults() -> None:
    """An OSD killed at 10 s (I/O stops 0.3 s until its peers report it) and started again at 14 s (its placement
    groups peer: I/O stops 0.8 s once more): the fault's blackout is the first stall, the undoing's the second, the
    first I/O after the fault ends the first; the recovery is judged after the second. A thaw that ends the fault's
    own stall (the volume frozen 10-13 s) leaves no stall at the undoing."""
    log = synthetic(lambda t: 0 if 10 <= t < 10.3 or 14.2 <= t < 15.0 else 1000, 30)
    result = failover([log], WINDOW, at(10), at(0), at(30), restore_ms=at(14))
    assert result.blackout_s == pytest.approx(0.3, abs=0.11)
    assert result.first_completion_s == pytest.approx(0.3, abs=0.11)
    assert result.restore_blackout_s == pytest.approx(0.8, abs=0.11)
    assert result.recovery is Recovery.RECOVERED and result.recovery_s is not None and result.recovery_s >= 5.0
    frozen = failover([synthetic(lambda t: 0 if 10 <= t < 13 else 1000, 30)], WINDOW, at(10), at(0), at(30),
                      restore_ms=at(13))
    assert frozen.blackout_s == pytest.approx(3.0, abs=0.11) and frozen.restore_blackout_s == 0.0
    assert failover([log], WINDOW, at(10), at(0), at(30)).restore_blackout_s is None  # nothing undone


def test_a_later_faults_stall_is_its_own_and_the_first_io_ends_the_first_stall() -> None:
    """A fault at 10 s stalls the I/O 0.5 s; a second at 30 s stalls it 5 s. The first fault's blackout and first I/O
    are its 0.5 s (they were the second's 5 s, and the first I/O 24.9 s after the fault); with no next fault told,
    the blackout stays the longest stall after it, but the first I/O after the fault still ends the first stall."""
    log = synthetic(lambda t: 0 if 10 <= t < 10.5 or 30 <= t < 35 else 1000, 60)
    first = failover([log], WINDOW, at(10), at(0), at(60), next_fault_ms=at(30))
    assert first.blackout_s == pytest.approx(0.5, abs=0.11)
    assert first.first_completion_s == pytest.approx(0.5, abs=0.11)
    assert first.client_blackouts_s == (("c1", first.blackout_s),)
    alone = failover([log], WINDOW, at(10), at(0), at(60))
    assert alone.blackout_s == pytest.approx(5.0, abs=0.11)
    assert alone.first_completion_s == pytest.approx(0.5, abs=0.11)
    # undone after the next fault: no stall is read as the undoing's
    late = failover([log], WINDOW, at(10), at(0), at(60), restore_ms=at(40), next_fault_ms=at(30))
    assert late.restore_blackout_s is None and late.blackout_s == pytest.approx(0.5, abs=0.11)


def test_degraded_without_a_stall_recovers_when_the_level_is_shown_back() -> None:
    log = synthetic(lambda t: 600 if 10 <= t < 18 else 1000, 40)
    result = failover([log], WINDOW, at(10), at(0), at(40))
    assert result.blackout_s == 0.0 and result.first_completion_s == 0.0
    assert result.dip_pct is not None and 45 <= result.dip_pct <= 60  # the lowest 100 ms window of a 60 % stretch
    assert result.degraded_pct == pytest.approx(60, abs=3)
    assert result.end_pct == pytest.approx(100, abs=5)  # back: the seconds the test read are at the level before
    # at 8 s, or up to a few windows before it (the first block of the hold may start in the last of the 60 %)
    assert result.recovery_s is not None and 7.7 <= result.recovery_s <= 9.0, result.recovery_s


def test_a_run_that_never_recovers_says_so() -> None:
    degraded = failover([synthetic(lambda t: 600 if t >= 10 else 1000, 30)], WINDOW, at(10), at(0), at(30))
    assert degraded.recovery is Recovery.NOT_RECOVERED and degraded.recovery_s is None
    # one quantity each: the level until back is a recovered run's; a run not back has the level it was left at
    assert degraded.degraded_pct is None and degraded.end_pct == pytest.approx(60, abs=3)
    # a client that stops at the fault and never completes again: its stall lasts to the end of the run (a lower
    # bound), no first I/O after the fault, and the run is not back: its level at the end is nothing
    stopped = failover([synthetic(lambda t: 0 if t >= 10 else 1000, 30)], WINDOW, at(10), at(0), at(30))
    assert stopped.blackout_s == pytest.approx(20.0, abs=0.11) and stopped.recovery is Recovery.NOT_RECOVERED
    assert stopped.first_completion_s is None and stopped.end_pct == 0.0 and stopped.recovery_s is None
    # stopped again at the undoing, for good
    undone = failover([synthetic(lambda t: 0 if 10 <= t < 12 or t >= 15 else 1000, 30)], WINDOW, at(10), at(0),
                      at(30), restore_ms=at(15))
    assert undone.first_completion_s == pytest.approx(2.0, abs=0.11) and undone.recovery is Recovery.NOT_RECOVERED
    # back 2 s before the end: too short to tell (5 one-second blocks are the test)
    late = failover([synthetic(lambda t: 0 if 10 <= t < 28 else 1000, 30)], WINDOW, at(10), at(0), at(30))
    assert late.recovery is Recovery.UNTOLD and late.recovery_s is None and late.end_pct is None


def test_the_recovery_test_reads_no_second_from_before_the_undoing() -> None:
    """A link slowed to 20 % from 10 s and restored, its I/O back at once: the test reads only the seconds after the
    undoing. Restored at 27 s of 30 s, the last third had read three slowed seconds with three back ones ("not
    recovered, 60 %"): 3 s after the undoing are too short to tell. Restored at 33 s of 40 s, the last 10 s had read
    "not recovered, 76 %": the 7 s after it are back. A fault without an undoing is read as before."""
    for seed in range(5):
        late = failover([synthetic(lambda t: 200 if 10 <= t < 27 else 1000, 30, seed=seed)], WINDOW, at(10), at(0),
                        at(30), restore_ms=at(27))
        assert late.recovery is Recovery.UNTOLD and late.end_pct is None, seed
        assert late.degraded_pct is None and late.recovery_s is None
        back = failover([synthetic(lambda t: 200 if 10 <= t < 33 else 1000, 40, seed=seed)], WINDOW, at(10), at(0),
                        at(40), restore_ms=at(33))
        assert back.recovery is Recovery.RECOVERED and back.end_pct == pytest.approx(100, abs=5), seed
        assert back.recovery_s == pytest.approx(23.0, abs=0.3) and back.degraded_pct == pytest.approx(20, abs=2)
        # the same through a later action given as data (a second fault's undoing), not the first's restore
        other = failover([synthetic(lambda t: 200 if 10 <= t < 33 else 1000, 40, seed=seed)], WINDOW, at(10), at(0),
                         at(40), actions_ms=(at(10), at(33)))
        assert other.recovery is Recovery.RECOVERED and other.end_pct == back.end_pct
    never = failover([synthetic(lambda t: 200 if t >= 10 else 1000, 30)], WINDOW, at(10), at(0), at(30))
    assert never.recovery is Recovery.NOT_RECOVERED and never.end_pct == pytest.approx(20, abs=2)
    # the fault itself is no later action: off the windows' grid, given among the actions (as a stored repetition
    # gives every action), it reads exactly as with none (it had moved the test a window on and re-cut its blocks)
    for seed in range(20):
        log = synthetic(lambda t: 900 if t >= 10 else 1000, 40, cv=0.10, seed=seed)
        assert failover([log], WINDOW, at(10.037), at(0), at(40), actions_ms=(at(10.037),)) == failover(
            [log], WINDOW, at(10.037), at(0), at(40)), seed


def test_eighty_five_percent_is_not_called_recovered() -> None:
    """A 15 % loss is outside the +-10 % margin: never 'recovered', whatever the noise (seeds)."""
    for seed in range(20):
        log = synthetic(lambda t: 850 if t >= 10 else 1000, 40, cv=0.10, seed=seed)
        assert failover([log], WINDOW, at(10), at(0), at(40)).recovery is Recovery.NOT_RECOVERED, seed


def test_a_level_above_the_one_before_is_recovered() -> None:
    """A restarted server that serves 20 % faster than before its stop (fresh caches) has recovered: the test is
    one-sided (not more than 10 % down), for every seed; its recovery time is where it came back, not the end."""
    for seed in range(20):
        log = synthetic(lambda t: 0 if 10 <= t < 13 else (1200 if t >= 13 else 1000), 40, cv=0.10, seed=seed)
        result = failover([log], WINDOW, at(10), at(0), at(40))
        assert result.recovery is Recovery.RECOVERED, seed
        assert result.recovery_s is not None and result.recovery_s == pytest.approx(3.0, abs=0.2), seed


def test_one_client_stalls_the_others_do_not() -> None:
    stalled = synthetic(lambda t: 0 if 10 <= t < 12 else 500, 30, client="h1", seed=2)
    fine = synthetic(lambda t: 500, 30, client="h2", seed=3)
    result = failover([stalled, fine], WINDOW, at(10), at(0), at(30))
    blackouts = dict(result.client_blackouts_s)
    assert blackouts["h1"] == pytest.approx(2.0, abs=0.11) and blackouts["h2"] == 0.0
    assert result.blackout_s == 0.0  # the other client kept completing: no stall for all
    assert result.client_blackout_s == blackouts["h1"]  # what compare judges here: the longest one client waited
    assert result.pre_fault_iops == pytest.approx(1000, rel=0.02)  # the clients' IOPS add up
    assert result.dip_pct is not None and 40 <= result.dip_pct <= 60  # half the I/O went missing for 2 s


def test_the_last_rows_a_little_before_the_planned_end_do_not_make_an_empty_last_second() -> None:
    """As nfs-restart's two clients logged them: each client's rows a few tens of ms apart from the other's, the last
    ones about 180 ms before the planned end of a 30 s run, a 5 s stop in the middle. The measured section ends at
    the last row and its last window holds it, so the last second is no artificial drop (before, two empty windows
    at the end pulled the final block 20 % down and left every such run 'undecided')."""
    from storbench.stats.failover_points import measured_section
    from storbench.stats.timeline import merged_iops

    def shifted(log: ClientLog, ms: int, upto_s: float) -> ClientLog:
        return ClientLog(log.client, tuple(LogRow(r.t_ms + ms, r.value, r.direction) for r in log.iops
                                           if r.t_ms + ms <= at(upto_s)), log.max_lat)

    stopped = lambda t: 0 if 9 <= t < 14 else 9500  # noqa: E731
    one = shifted(synthetic(stopped, 31, seed=4, client="h1"), 0, 29.84)
    two = shifted(synthetic(stopped, 31, seed=5, client="h2"), 24, 29.83)
    start, end = measured_section([one, two], WINDOW, 30)
    assert (start, end) == (at(0), at(29.824))  # the last row, not the planned end (nothing stopped at the end)
    windows = merged_iops([one, two], WINDOW, start, end)
    assert len(windows) == 298 and windows[-1] > 15000  # the rows closing at 29.8 and 29.824 s are in the last window
    result = failover([one, two], WINDOW, at(9), start, end, at(14))
    assert result.recovery is Recovery.RECOVERED and result.blackout_s == pytest.approx(5.0, abs=0.15)
    gone = shifted(synthetic(lambda t: 0 if t >= 20 else 9500, 31, seed=6), 0, 30)
    assert measured_section([gone], WINDOW, 30) == (at(0), at(30))  # I/O that never came back: the planned end


def test_a_stall_before_the_fault_is_not_the_faults() -> None:
    log = synthetic(lambda t: 0 if 3 <= t < 4 else 1000, 30)  # something else, before the fault
    assert failover([log], WINDOW, at(15), at(0), at(30)).blackout_s == 0.0
    first = longest_stall([at(1), at(2)], WINDOW, at(0), at(0), at(2))
    assert first is not None and (first.start_ms, first.end_ms) == (at(0), at(0.9))  # before any completion
    second = longest_stall([at(1), at(2)], WINDOW, at(0), at(1), at(2))
    assert second is not None and (second.start_ms, second.end_ms) == (at(1), at(1.9))  # the one ending after 1 s
    assert longest_stall([at(1), at(1.1), at(1.2)], WINDOW, at(0.9), at(1), at(1.2)) is None  # never stopped


def test_real_fio_logs_of_a_stall() -> None:
    """fio 3.33, 4k random reads at iodepth 4 on the volume lab, its pacer stopped (SIGSTOP) for 1.2 s: a 1,201 ms
    step between two rows of the 100 ms log, and the I/O caught in it logged 1.204 s."""
    iops = parse_log((FIXTURES / "stall-1.2s_iops.log").read_text())
    lat = parse_log((FIXTURES / "stall-1.2s_clat.log").read_text())
    steps = [b.t_ms - a.t_ms for a, b in itertools.pairwise(iops)]
    before = iops[steps.index(max(steps))].t_ms  # the last completion before the stall
    result = failover([ClientLog("local", iops, lat)], WINDOW, before, iops[0].t_ms - WINDOW, iops[-1].t_ms)
    assert result.blackout_s == pytest.approx(1.1, abs=0.01)  # 1,201 ms between rows, less one window
    assert result.longest_io_ns is not None and 1.2e9 <= result.longest_io_ns <= 1.21e9
    assert result.pre_fault_iops is None and result.dip_pct is None  # 1.4 s before it: no level of 2 s blocks


@pytest.mark.fio
def test_a_case_with_a_timeline_brings_back_fios_window_logs(tmp_path: Path) -> None:
    """A plan with faults gives its cases a timeline window: real fio then logs the I/O window by window on the
    wall clock, and the local executor hands the IOPS and completion-latency logs back with the outcome."""
    import shutil

    from storbench.execute.local import LocalExecutor
    from storbench.fio.jobfile import JobBinding, render_job
    from storbench.model import Case, PathTarget, Status, WorkloadPoint

    fio = shutil.which("fio")
    if fio is None:
        pytest.skip("needs fio")
    workload = WorkloadPoint(rw="randread", bs_bytes=4096, iodepth=2, numjobs=2, runtime_s=1.5, ramp_s=0.5,
                             direct=False, ioengine="psync", size_bytes=4 << 20, timeline_window_ms=100)
    case = Case("timeline", PathTarget("t", str(tmp_path), 4 << 20), workload)
    job = render_job(case, JobBinding((("directory", str(tmp_path)),)), repetition=0)
    assert "write_iops_log=timeline\n" in job and "log_avg_msec=100\n" in job and "log_unix_epoch=1\n" in job
    outcome = LocalExecutor(fio).run_case(case, (job,), 0, timeout_s=30)
    assert outcome.status == Status.OK, outcome.error
    names = [name for name, _ in outcome.logs]
    assert names == ["timeline_clat.1.log", "timeline_clat.2.log", "timeline_iops.1.log", "timeline_iops.2.log"]
    for name, text in outcome.logs:
        rows = parse_log(text)
        # windows of 100 ms through the measured 1.5 s (fio logs after the ramp), stamped on the wall clock
        assert 10 <= len(rows) <= 17, (name, len(rows))
        assert all(outcome.started_at_s * 1000 <= row.t_ms <= outcome.finished_at_s * 1000 for row in rows), name
        assert all(row.value > 0 and row.direction == "read" for row in rows), name


def test_the_clusters_pgs_read_from_pg_stat_and_timed_from_the_fault() -> None:
    """`pg stat` answers (Ceph 16's, and one without `pg_summary`) become samples; a log written and read back
    is the same; the cluster's recovery is the first sample after PGs left active+clean in which all are back,
    timed from the fault, with the most degraded objects; PGs that never left say so; never back: None."""
    from storbench.telemetry.cluster_state import (
        ClusterSample,
        cluster_recovery,
        parse_log,
        pg_stat_sample,
        render_log,
    )

    pacific = {"pg_ready": True, "pg_summary": {
        "num_pg_by_state": [{"name": "active+clean", "num": 40}, {"name": "active+undersized+degraded", "num": 9}],
        "num_pgs": 49, "degraded_objects": 321, "degraded_total": 3000, "misplaced_objects": 7}}
    assert pg_stat_sample(pacific, 5) == ClusterSample(5, 49, 9, 321, 7)
    assert pg_stat_sample({"num_pgs": 8, "num_pg_by_state": [{"name": "active+clean", "num": 8}]}, 1) == \
        ClusterSample(1, 8, 0, 0, 0)
    assert pg_stat_sample("not json of pg stat", 1) is None and pg_stat_sample({"num_pg_by_state": []}, 1) is None

    def samples(not_clean: list[int], degraded: list[int]) -> list[ClusterSample]:
        return [ClusterSample(1000 * t, 49, n, d, 0) for t, (n, d) in enumerate(zip(not_clean, degraded, strict=True))]

    through = samples([0, 0, 0, 5, 9, 9, 4, 0, 0], [0, 0, 0, 10, 300, 200, 50, 0, 0])
    assert parse_log(render_log(through)) == through
    found = cluster_recovery(through, fault_ms=2000)  # PGs leave at 3 s, all back at 7 s: 5 s after the fault
    assert found is not None and found.clean_after_s == 5.0 and found.disturbed and found.degraded_objects_max == 300
    calm = cluster_recovery(samples([0] * 6, [0] * 6), fault_ms=1000)
    assert calm is not None and not calm.disturbed and calm.clean_after_s is None
    stuck = cluster_recovery(samples([0, 3, 3, 3], [0, 9, 9, 9]), fault_ms=0)
    assert stuck is not None and stuck.disturbed and stuck.clean_after_s is None
    assert cluster_recovery(through, fault_ms=99_000) is None  # nothing watched after the fault


def test_kubernetes_events_are_kept_as_a_log_and_read_against_the_fault() -> None:
    """The pods' events (what Kubernetes said happened to them) round-trip through their CSV log, messages with
    commas and control characters included (made safe when read); read against the fault, each pod's first event
    of each reason from a second before it on (a kubelet's time is whole seconds), in time order."""
    from storbench.telemetry.k8s_events import PodEvent, after_fault, parse_log, render_log

    events = [PodEvent(at(11), "sb-c1-2", "Started", "Started container fio"),
              PodEvent(at(9.5), "sb-c1", "Killing", 'Stopping container fio, "grace" 5s\x1b[2J'),
              PodEvent(at(10.2), "sb-c1-2", "Scheduled", "Successfully assigned storbench/sb-c1-2 to node"),
              PodEvent(at(12), "sb-c1-2", "Started", "again"), PodEvent(at(2), "sb-c1", "Started", "long before")]
    read = parse_log(render_log(events))
    assert len(read) == 5 and read[0] == PodEvent(at(2), "sb-c1", "Started", "long before")
    assert read[1].message == 'Stopping container fio, "grace" 5s\\x1b[2J'  # shown escaped, never run
    found = after_fault(read, at(10))
    assert [(round(s, 1), e.pod, e.reason) for s, e in found] == [
        (0.0, "sb-c1", "Killing"), (0.2, "sb-c1-2", "Scheduled"), (1.0, "sb-c1-2", "Started")]
    assert parse_log("t_ms,pod,reason,message\nnot,a,valid\n12,p,r,m\n") == [PodEvent(12, "p", "r", "m")]


def _shifted(log: ClientLog, ms: int) -> ClientLog:
    return ClientLog(log.client, tuple(LogRow(r.t_ms + ms, r.value, r.direction) for r in log.iops), log.max_lat)


def test_a_fault_that_barely_touches_the_io_has_a_dip_near_the_level_not_zero() -> None:
    """A fault with no stall whose I/O stays within the margin (a throttle above the rate, an idle OSD marked out):
    recovered at once, and its dip is its lowest window after the fault, not 0 % as a full stall's."""
    flat = failover([synthetic(lambda t: 1000, 30)], WINDOW, at(10), at(0), at(30))
    assert flat.recovery is Recovery.RECOVERED and flat.blackout_s == 0.0
    assert flat.dip_pct is not None and 85 <= flat.dip_pct <= 100, flat.dip_pct  # the noise's lowest window
    small = failover([synthetic(lambda t: 700 if 10 <= t < 10.5 else 1000, 30, cv=0.01)], WINDOW, at(10), at(0),
                     at(30))
    assert small.dip_pct == pytest.approx(70, abs=3)  # half a second at 70 %: the blocks stay within the margin


def test_the_dip_comes_with_the_lowest_of_as_many_windows_before_the_fault() -> None:
    """The lowest of fifty windows varying 15 % is about 65 % of their mean: a fault that did nothing "dips" to it.
    The same low over as many windows before the fault says so (within a few % of the dip, over 20 runs), while a
    real fall to 30 % for a second stands far below its reference."""
    for seed in range(20):
        nothing = failover([synthetic(lambda t: 1000, 40, cv=0.15, seed=seed)], WINDOW, at(20), at(0), at(40))
        assert nothing.dip_pct is not None and nothing.dip_before_pct is not None
        assert nothing.dip_pct < 80 and abs(nothing.dip_pct - nothing.dip_before_pct) < 20, (seed, nothing)
        fell = failover([synthetic(lambda t: 300 if 20 <= t < 21 else 1000, 40, cv=0.15, seed=seed)], WINDOW,
                        at(20), at(0), at(40))
        assert fell.dip_pct is not None and fell.dip_before_pct is not None
        assert fell.dip_pct < 40 < 50 < fell.dip_before_pct, (seed, fell)


def test_clients_whose_logs_end_apart_have_no_stall_at_the_end() -> None:
    """Two clients started 300 ms apart (their last rows 300 ms apart): the one that ends first did not stall, and
    the end of the run, where only one client still logs, is no drop of the level."""
    from storbench.stats.failover_points import logs_failover

    h1 = synthetic(lambda t: 500, 30, client="h1", seed=2)
    h2 = _shifted(synthetic(lambda t: 0 if 9.7 <= t < 11.7 else 500, 30, client="h2", seed=3), 300)
    result = logs_failover([h1, h2], WINDOW, 30, at(10))
    assert not isinstance(result, str)
    blackouts = dict(result.client_blackouts_s)
    assert blackouts["h1"] == 0.0 and blackouts["h2"] == pytest.approx(2.0, abs=0.11)
    for seed in range(10):  # both lose 20 % for good: the dip is about 80 %, not the one client of the last windows
        rate = lambda t: 800 if t >= 10 else 1000  # noqa: E731
        one = synthetic(rate, 30, client="h1", seed=seed)
        two = _shifted(synthetic(rate, 30, client="h2", seed=seed + 50), 300)
        lost = logs_failover([one, two], WINDOW, 30, at(10))
        assert not isinstance(lost, str) and lost.recovery is Recovery.NOT_RECOVERED
        assert dict(lost.client_blackouts_s) == {"h1": 0.0, "h2": 0.0}
        assert lost.dip_pct is not None and lost.dip_pct > 60, (seed, lost.dip_pct)
        assert lost.degraded_pct is None and lost.end_pct == pytest.approx(80, abs=3)


@pytest.mark.parametrize("fault_s", [28.0, 28.5, 29.0])
def test_io_that_stops_for_good_in_the_last_seconds_is_a_blackout_to_the_end(fault_s: float) -> None:
    """The last row then comes within the slack of the planned end, but no later than the fault: the section runs
    to the planned end, and the stall with it."""
    from storbench.stats.failover_points import logs_failover

    log = synthetic(lambda t: 0 if t >= fault_s else 1000, 30)
    result = logs_failover([log], WINDOW, 30, at(fault_s))
    assert not isinstance(result, str) and result.blackout_s == pytest.approx(30 - fault_s, abs=0.11)
    assert result.client_blackouts_s == (("c1", pytest.approx(30 - fault_s, abs=0.11)),)


@pytest.mark.parametrize("stops", [True, False])
def test_a_fault_in_the_last_second_is_too_late_to_read(stops: bool) -> None:
    """Logs end up to a second early anyway (fio logs no partial window; clients start apart): a fault 0.5 s before
    the end, whether the I/O stopped at it or the rows just ended, gives no figures (neither a blackout nor none)."""
    from storbench.stats.failover_points import TOO_LATE, logs_failover

    log = synthetic((lambda t: 0 if t >= 29.5 else 1000) if stops else (lambda t: 1000 if t < 29.2 else 0), 30)
    assert logs_failover([log], WINDOW, 30, at(29.5 if stops else 29.12)) == TOO_LATE


def test_a_fault_before_fios_first_logged_io_is_not_read() -> None:
    """A volume frozen 0.3 s before fio's first row and thawed 2 s later: its stall is fio's start to the logs, not a
    stall that I/O came out of. No figures, and why (not "never stopped" and a stall at the thaw)."""
    from storbench.stats.failover_points import logs_failover

    log = _shifted(synthetic(lambda t: 1000, 28), 2000)  # first row 2.1 s after T0
    said = logs_failover([log], WINDOW, 30, at(-0.3), at(2.0))
    assert isinstance(said, str) and said.startswith("its fault came 2.4 s before fio's first I/O was logged (fio "
                                                     "still starting"), said  # how far: a later `at` by that much


def test_a_client_that_logged_nothing_leaves_the_others_timeline() -> None:
    """A repetition whose fio wrote an empty IOPS log for one client (a failed one, or a client that never started):
    the others' timeline, and for none at all, no timeline, not a crash of `show` or the report."""
    from dataclasses import replace

    from storbench.model import Case, PathTarget, Status, StoredRepetition, WorkloadPoint
    from storbench.model.fault_record import FaultRecord
    from storbench.stats.failover_points import repetition_failover

    workload = WorkloadPoint(rw="randwrite", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=30, ramp_s=0,
                             direct=True, ioengine="libaio", size_bytes=1 << 20, timeline_window_ms=WINDOW)
    case = Case(case_id="c", target=PathTarget(name="t", path="/x", size_bytes=1 << 20), workload=workload)
    rows = "\n".join(f"{r.t_ms}, {r.value}, 1, 0" for r in synthetic(lambda t: 0 if 10 <= t < 12 else 1000, 30).iops)
    repetition = StoredRepetition(repetition_id=1, run_id=1, case=case, rep_index=0, status=Status.FAILED,
                                  started_at_s=T0 / 1000, finished_at_s=T0 / 1000 + 30, fio_version="fio-3.33",
                                  error="", clients=(), faults=(FaultRecord("freeze", "volume", False, at(10) / 1000),),
                                  logs=(("timeline_iops.1.log.h1", rows), ("timeline_iops.1.log.h2", "")))
    found = repetition_failover(repetition)
    assert found.figures is not None and [c for c, _ in found.figures.client_blackouts_s] == ["h1"]
    empty = repetition_failover(replace(repetition, logs=(("timeline_iops.1.log", ""),)))
    assert empty.figures is None and empty.problem == "no timeline logs"


def test_a_fault_is_read_against_its_own_restore_not_an_earlier_failed_faults() -> None:
    """Two kills of osd.0, the first failed (and is now undone all the same at its restore time): the second is
    read against its own restore (25 s), not the first's (10 s), which had made its restore blackout 2 s."""
    from storbench.model import Case, PathTarget, Status, StoredRepetition, WorkloadPoint
    from storbench.model.fault_record import FaultRecord
    from storbench.stats.failover_points import repetition_failover

    workload = WorkloadPoint(rw="randwrite", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=30, ramp_s=0,
                             direct=True, ioengine="libaio", size_bytes=1 << 20, timeline_window_ms=WINDOW)
    case = Case(case_id="c", target=PathTarget(name="t", path="/x", size_bytes=1 << 20), workload=workload)
    rows = "\n".join(f"{r.t_ms}, {r.value}, 1, 0" for r in synthetic(
        lambda t: 0 if 20 <= t < 22 or 25 <= t < 25.5 else 1000, 30).iops)
    faults = (FaultRecord("kill", "osd.0", False, at(5) / 1000, error="no such OSD"),
              FaultRecord("kill", "osd.0", True, at(10) / 1000),
              FaultRecord("kill", "osd.0", False, at(20) / 1000),
              FaultRecord("kill", "osd.0", True, at(25) / 1000))
    repetition = StoredRepetition(repetition_id=1, run_id=1, case=case, rep_index=0, status=Status.OK,
                                  started_at_s=T0 / 1000, finished_at_s=T0 / 1000 + 30, fio_version="fio-3.33",
                                  error="", clients=(), faults=faults, logs=(("timeline_iops.1.log", rows),))
    found = repetition_failover(repetition)
    assert found.fault is faults[2] and found.restore is faults[3]


def test_a_repetitions_second_fault_bounds_the_first_ones_stalls() -> None:
    """Two faults in one repetition (osd.0 at 10 s, osd.1 at 30 s): the figures are the first's, and the 5 s stall
    after the second is not its blackout."""
    from storbench.model import Case, PathTarget, Status, StoredRepetition, WorkloadPoint
    from storbench.model.fault_record import FaultRecord
    from storbench.stats.failover_points import repetition_failover

    workload = WorkloadPoint(rw="randwrite", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=60, ramp_s=0,
                             direct=True, ioengine="libaio", size_bytes=1 << 20, timeline_window_ms=WINDOW)
    case = Case(case_id="c", target=PathTarget(name="t", path="/x", size_bytes=1 << 20), workload=workload)
    rows = "\n".join(f"{r.t_ms}, {r.value}, 1, 0" for r in synthetic(
        lambda t: 0 if 10 <= t < 10.5 or 30 <= t < 35 else 1000, 60).iops)
    faults = (FaultRecord("kill", "osd.0", False, at(10) / 1000), FaultRecord("kill", "osd.1", False, at(30) / 1000))
    repetition = StoredRepetition(repetition_id=1, run_id=1, case=case, rep_index=0, status=Status.OK,
                                  started_at_s=T0 / 1000, finished_at_s=T0 / 1000 + 60, fio_version="fio-3.33",
                                  error="", clients=(), faults=faults, logs=(("timeline_iops.1.log", rows),))
    found = repetition_failover(repetition)
    assert found.fault is faults[0] and found.figures is not None
    assert found.figures.blackout_s == pytest.approx(0.5, abs=0.11)


def test_a_later_faults_undoing_bounds_where_the_recovery_test_reads() -> None:
    """osd.0 killed at 10 s, osd.1 at 30 s (the I/O at half from there) and osd.1 started again at 57 s of 60: the
    recovery test reads no second before that undoing, so 3 s are too short to tell; it had read 13 s at half and
    3 back ("not recovered")."""
    from storbench.model import Case, PathTarget, Status, StoredRepetition, WorkloadPoint
    from storbench.model.fault_record import FaultRecord
    from storbench.stats.failover_points import repetition_failover

    workload = WorkloadPoint(rw="randwrite", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=60, ramp_s=0,
                             direct=True, ioengine="libaio", size_bytes=1 << 20, timeline_window_ms=WINDOW)
    case = Case(case_id="c", target=PathTarget(name="t", path="/x", size_bytes=1 << 20), workload=workload)
    rows = "\n".join(f"{r.t_ms}, {r.value}, 1, 0" for r in synthetic(
        lambda t: 0 if 10 <= t < 10.5 else (500 if 30 <= t < 57 else 1000), 60).iops)
    faults = (FaultRecord("kill", "osd.0", False, at(10) / 1000), FaultRecord("kill", "osd.1", False, at(30) / 1000),
              FaultRecord("kill", "osd.1", True, at(57) / 1000))
    repetition = StoredRepetition(repetition_id=1, run_id=1, case=case, rep_index=0, status=Status.OK,
                                  started_at_s=T0 / 1000, finished_at_s=T0 / 1000 + 60, fio_version="fio-3.33",
                                  error="", clients=(), faults=faults, logs=(("timeline_iops.1.log", rows),))
    found = repetition_failover(repetition)
    assert found.fault is faults[0] and found.restore is None and found.figures is not None
    assert found.figures.recovery is Recovery.UNTOLD and found.figures.end_pct is None


def test_a_failed_undoing_is_said_and_the_figures_read_as_never_undone() -> None:
    """The lab could not undo the fault (its restore record carries the error): the repetition says so, its figures
    are read as never undone (no blackout when undone), and the point's line and verdict say it failed."""
    from storbench.model import Case, PathTarget, Status, StoredRepetition, WorkloadPoint
    from storbench.model.fault_record import FaultRecord
    from storbench.report.failover import failover_line, failover_verdict
    from storbench.stats.failover_points import point_failovers

    workload = WorkloadPoint(rw="randwrite", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=30, ramp_s=0,
                             direct=True, ioengine="libaio", size_bytes=1 << 20, timeline_window_ms=WINDOW)
    case = Case(case_id="c", target=PathTarget(name="t", path="/x", size_bytes=1 << 20), workload=workload)
    rows = "\n".join(f"{r.t_ms}, {r.value}, 1, 0" for r in synthetic(lambda t: 0 if 10 <= t < 12 else 1000, 30).iops)
    faults = (FaultRecord("freeze", "volume", False, at(10) / 1000),
              FaultRecord("freeze", "volume", True, at(15) / 1000, error="the lab said no"))
    repetition = StoredRepetition(repetition_id=1, run_id=1, case=case, rep_index=0, status=Status.OK,
                                  started_at_s=T0 / 1000, finished_at_s=T0 / 1000 + 30, fio_version="fio-3.33",
                                  error="", clients=(), faults=faults, logs=(("timeline_iops.1.log", rows),))
    (point,) = point_failovers([repetition])
    (found,) = point.repetitions
    assert found.restore is None and found.undo_error == "the lab said no" and found.figures is not None
    assert found.figures.restore_blackout_s is None
    assert "its undoing failed in 1 of 1 (the lab said no): read as never undone there" in failover_line(point, "x")
    assert "its undoing failed in 1 of 1" in failover_verdict(point, None, "x")


def test_a_stall_after_the_undoing_that_lasts_to_the_end_is_a_lower_bound() -> None:
    """The fault stalls 0.5 s; its undoing at 14 s stops the I/O for good: the blackout when undone lasts to the end
    of the run, a lower bound, and the line says so (it had given the figure alone)."""
    from storbench.report.failover import failover_line
    from storbench.stats.estimate import estimate
    from storbench.stats.failover_points import PointFailover, RepetitionFailover

    log = synthetic(lambda t: 0 if 10 <= t < 10.5 or t >= 14.1 else 1000, 30)
    found = failover([log], WINDOW, at(10), at(0), at(30), restore_ms=at(14))
    assert found.restore_open and found.restore_blackout_s is not None and found.restore_blackout_s > 15
    point = PointFailover(case_id="c", run_id=1, action="freeze", target="volume",
                          repetitions=(RepetitionFailover(1, 0, None, None, found),),
                          blackout_s=estimate([found.blackout_s]),
                          restore_blackout_s=estimate([found.restore_blackout_s]),
                          first_completion_s=estimate([0.5]), dip_pct=None, degraded_pct=None, recovery_s=None,
                          longest_io_ns=None, recovered=0, not_recovered=1, undecided=0)
    assert "when undone (to the end in 1 of 1: there a lower bound)" in failover_line(point, "x")


def test_clients_out_of_step_by_part_of_a_window_make_no_dip() -> None:
    """Two clients whose 100 ms logs run out of step (started some milliseconds apart, each row a millisecond early
    or late): a fault that did nothing to either has no dip, whatever the offset. Rows placed whole in one window
    put two of a client half a window off in one window and none in the next: a dip to half the level (and, at the
    end, a last window missing a client's share)."""

    def logged(name: str, offset_ms: int, seed: int, after: float) -> ClientLog:
        rng = random.Random(seed)
        rows = tuple(LogRow(T0 + offset_ms + k * WINDOW + rng.randint(-1, 1),
                            round((500 if k < 100 else after) * rng.gauss(1, 0.02)), "write") for k in range(1, 301))
        return ClientLog(name, rows)

    for offset_ms, seed in itertools.product(range(0, 100, 7), range(3)):
        a, b = logged("a", 0, seed, 500), logged("b", offset_ms, seed + 100, 500)
        result = failover([a, b], WINDOW, at(10), at(0), at(30) + offset_ms)
        assert result.dip_pct is not None and result.dip_pct > 85, (offset_ms, seed, result.dip_pct)
        # down to 80 % for good: the dip to the end is about 80 %, not a last window missing one client's rows
        a, b = logged("a", 0, seed, 400), logged("b", offset_ms, seed + 100, 400)
        down = failover([a, b], WINDOW, at(10), at(0), at(30) + offset_ms,
                        client_ends_ms={"a": a.iops[-1].t_ms, "b": b.iops[-1].t_ms})
        assert down.recovery is Recovery.NOT_RECOVERED and down.dip_pct is not None and down.dip_pct > 70, (
            offset_ms, seed, down.dip_pct)


def test_a_fault_that_did_nothing_mid_window_recovers_at_zero_seconds_not_before_it() -> None:
    result = failover([synthetic(lambda t: 1000, 30)], WINDOW, at(10.09), at(0), at(30))
    assert result.recovery is Recovery.RECOVERED and result.recovery_s == 0.0


def test_a_size_based_job_that_ended_on_its_own_is_read_to_its_last_operation() -> None:
    """A file-create case (size based: each file once, its 30 s runtime only a cap) whose fio did its files in 12 s
    with a 1 s stall at 4 s: its measured section ends with its last operation, so the I/O is not taken to have
    stopped at 12 s for the 18 s left of the cap (which read it as not recovered); a fault after its last
    operation says that more files make a run long enough; a job that ran to its cap is read to the cap (its I/O
    stopped for good there)."""
    from dataclasses import replace

    from storbench.model import (
        Case,
        ClientMeasurement,
        DirectionMeasurement,
        LatencySummary,
        PathTarget,
        Status,
        StoredRepetition,
        WorkloadPoint,
    )
    from storbench.model.fault_record import FaultRecord
    from storbench.model.operations import Direction
    from storbench.stats.failover_points import repetition_failover, run_length_s

    def repetition(ran_s: float, fault_s: float, stall: tuple[float, float]) -> StoredRepetition:
        workload = WorkloadPoint(rw="create", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=30, ramp_s=0,
                                 direct=False, ioengine="filecreate", files=20_000, file_size_bytes=4096,
                                 timeline_window_ms=WINDOW)
        case = Case(case_id="c", target=PathTarget(name="t", path="/x", size_bytes=1 << 20), workload=workload)
        log = synthetic(lambda t: 0 if stall[0] <= t < stall[1] else 2000, ran_s)
        rows = "\n".join(f"{r.t_ms}, {r.value}, 1, 0" for r in log.iops)
        latency = LatencySummary(samples=1, min_ns=1, max_ns=1, mean_ns=1.0, stddev_ns=0.0)
        made = DirectionMeasurement(direction=Direction.WRITE, total_ios=20_000, io_bytes=0,
                                    runtime_ms=round(ran_s * 1000), iops=2000.0, bw_bytes_per_s=0.0, clat=latency,
                                    lat=latency)
        client = ClientMeasurement(client="local", jobs=1, job_errors=(0,), cpu_usr_pct=0.0, cpu_sys_pct=0.0,
                                   directions=(made,))
        return StoredRepetition(repetition_id=1, run_id=1, case=case, rep_index=0, status=Status.OK,
                                started_at_s=T0 / 1000, finished_at_s=T0 / 1000 + ran_s, fio_version="fio-3.33",
                                error="", clients=(client,), logs=(("timeline_iops.1.log", rows),),
                                faults=(FaultRecord("cut", "server", False, at(fault_s) / 1000),
                                        FaultRecord("cut", "server", True, at(fault_s + 1) / 1000)))

    done = repetition(12, 4, (4, 5))
    assert run_length_s(done) == 12
    found = repetition_failover(done)
    assert found.figures is not None, found.problem
    assert 0.9 <= found.figures.blackout_s <= 1.1 and found.figures.first_completion_s is not None
    assert found.figures.recovery == Recovery.RECOVERED, found.figures
    late = repetition_failover(repetition(12, 13, (13, 14)))
    assert late.figures is None and "after fio had done its 20,000 files a job" in late.problem, late.problem
    capped = repetition(30, 4, (4, 31))  # nothing completed after the fault to the cap
    assert run_length_s(capped) == 30
    stuck = repetition_failover(capped)
    assert stuck.figures is not None and stuck.figures.first_completion_s is None
    cycle = replace(done, case=replace(done.case, workload=replace(done.case.workload, rw="metadata",
                                                                   timeline_window_ms=None)), logs=())
    assert "give a fault to one operation at a time" in repetition_failover(cycle).problem


def _poisson_log(iops: float, seconds: float, seed: int, stall: tuple[float, float] | None = None) -> ClientLog:
    """A slow client's 100 ms log: completions at random at ``iops`` a second (none in ``stall``)."""
    rng = random.Random(seed)
    rows = []
    for k in range(1, int(seconds * 10) + 1):
        count, t = 0, 0.0
        while (t := t + rng.expovariate(iops)) < 0.1:
            count += 1
        if stall is not None and stall[0] <= k / 10 - 0.05 < stall[1]:
            count = 0
        if count:
            rows.append(LogRow(T0 + k * WINDOW, count * 10, "write"))
    return ClientLog("c1", tuple(rows))


def test_a_slow_clients_own_gaps_are_no_stall_of_the_fault() -> None:
    """A client doing 20 I/Os a second has no completion in one 100 ms window in seven: over 40 s after a fault that
    does nothing its longest gap is about 0.3 s, which had read "I/O stopped for 0.3 s" in every repetition. Such a
    gap is within chance (the share of empty windows before the fault); a real stall of a second is not, nor one of
    0.3 s at 1,000 I/Os a second."""
    claimed = 0
    for seed in range(30):
        nothing = failover([_poisson_log(20, 60, seed)], WINDOW, at(20), at(0), at(60))
        assert nothing.blackout_s > 0, seed  # the gap is there, and kept as the figure
        claimed += nothing.stalled
        if not nothing.stalled:
            assert nothing.by_chance and nothing.first_completion_s == 0.0 and nothing.gap_before_s > 0, nothing
        real = failover([_poisson_log(20, 60, seed, stall=(20.0, 21.5))], WINDOW, at(20), at(0), at(60))
        assert real.stalled and real.blackout_s >= 1.4 and real.first_completion_s is not None, (seed, real)
        fast = failover([_poisson_log(1000, 60, seed, stall=(20.0, 20.3))], WINDOW, at(20), at(0), at(60))
        assert fast.stalled and fast.blackout_s == pytest.approx(0.3, abs=0.01), (seed, fast)
    assert claimed <= 2, claimed


def test_show_says_a_gap_within_chance_is_no_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict of three repetitions whose only gaps are a slow client's own: no "I/O stopped", the longest gap
    and the gaps before the fault said instead; the line keeps the blackout's figure and says it is within
    chance. A real stall of 1.5 s is said as ever."""
    import dataclasses
    from types import SimpleNamespace

    from storbench.model import Status
    from storbench.report.failover import failover_line, failover_verdict
    from storbench.stats import failover_points

    def verdict_and_line(stall: tuple[float, float] | None) -> tuple[str, str]:
        found = iter([failover([_poisson_log(20, 60, seed, stall)], WINDOW, at(20), at(0), at(60))
                      for seed in (3, 4, 5)])
        monkeypatch.setattr(failover_points, "repetition_failover", lambda r: failover_points.RepetitionFailover(
            r.rep_index, r.rep_index, None, None, next(found)))
        reps = [SimpleNamespace(faults=("x",), status=Status.OK, run_id=1, rep_index=i,
                                case=SimpleNamespace(case_id="c")) for i in range(3)]
        (point,) = failover_points.point_failovers(reps)  # type: ignore[arg-type]
        point = dataclasses.replace(point, action="freeze", target="osd.1")
        return failover_verdict(point, None, "x"), failover_line(point, "x")

    said, line = verdict_and_line(None)
    assert said.startswith("x: I/O never stopped for longer than chance allows after osd.1 was frozen (the longest "
                           "stretch without a completion 0."), said
    assert "I/O stopped" not in said and "; before the fault, up to 0." in said, said
    assert "(within chance: gaps before the fault up to 0." in line, line
    said, line = verdict_and_line((20.0, 21.5))
    assert said.startswith("x: I/O stopped for 1.5 s [") and "chance" not in said + line, (said, line)


def test_no_stall_is_called_within_chance_without_two_seconds_before_the_fault() -> None:
    """A fault 0.5 s into the run has too few windows before it to tell a share of empty ones from: its 1.3 s stall
    at 1,000 I/Os a second is the fault's, not "within chance" of an invented share."""
    early = failover([_poisson_log(1000, 30, 1, stall=(0.5, 1.8))], WINDOW, at(0.5), at(0), at(30))
    assert early.stalled and not early.by_chance and early.first_completion_s is not None, early


def test_the_stall_after_the_undoing_is_judged_against_chance_too() -> None:
    """A slow client (20 I/Os a second), a fault at 20 s undone at 30 s that did nothing: the longest gap after the
    undoing is the client's own, said within chance, and the level after the fault is not read from after it; a
    real 1.5 s stall at the undoing is not within chance."""
    quiet = [failover([_poisson_log(20, 60, seed)], WINDOW, at(20), at(0), at(60), restore_ms=at(30))
             for seed in range(20)]
    assert sum(f.restore_by_chance for f in quiet) >= 18, [f.restore_blackout_s for f in quiet]
    real = failover([_poisson_log(20, 60, 3, stall=(30.0, 31.5))], WINDOW, at(20), at(0), at(60), restore_ms=at(30))
    assert real.restore_blackout_s is not None and real.restore_blackout_s >= 1.4 and not real.restore_by_chance


def test_the_reports_timeline_is_a_repetition_that_succeeded() -> None:
    """The report drew the first repetition with faults, a failed one too: its "not recovered" sat beside a
    scorecard of the others ("recovered 2 of 2") with nothing to say it had failed."""
    from storbench.model import Case, PathTarget, Status, StoredRepetition, WorkloadPoint
    from storbench.model.fault_record import FaultRecord
    from storbench.report.failover import timeline_figures

    workload = WorkloadPoint(rw="randwrite", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=30, ramp_s=0,
                             direct=True, ioengine="libaio", size_bytes=1 << 20, timeline_window_ms=WINDOW)
    case = Case(case_id="c", target=PathTarget(name="t", path="/x", size_bytes=1 << 20), workload=workload)
    rows = "\n".join(f"{r.t_ms}, {r.value}, 1, 0" for r in synthetic(lambda t: 0 if 10 <= t < 12 else 1000,
                                                                      30).iops) + "\n"
    reps = [StoredRepetition(repetition_id=i + 1, run_id=1, case=case, rep_index=i, status=status,
                             started_at_s=T0 / 1000, finished_at_s=T0 / 1000 + 30, fio_version="fio-3.33", error="",
                             clients=(), faults=(FaultRecord("kill", "osd.0", False, at(10) / 1000),),
                             logs=(("timeline_iops.1.log", rows),))
            for i, status in enumerate((Status.FAILED, Status.OK))]
    (figure,) = timeline_figures(reps, {"c": "t randwrite"})
    assert "repetition 2" in figure.title, figure.title
    from storbench.stats.failover_points import point_failovers

    (point,) = point_failovers(reps)  # the failed one: counted beside the figures, which are the other's
    assert point.measured == 1 and point.failed == 1, point
    assert timeline_figures(reps[:1], {"c": "t randwrite"}) == []
    # two runs of the case: each figure names its run (their titles had read alike)
    from dataclasses import replace

    both = timeline_figures([*reps, *(replace(r, run_id=2, repetition_id=r.repetition_id + 2) for r in reps)],
                            {"c": "t randwrite"})
    assert [f.title.split(":")[0] for f in both] == ["run 1", "run 2"], [f.title for f in both]


def test_where_in_its_window_the_fault_fell_does_not_turn_a_stalls_verdict() -> None:
    """A 0.2 s stall at 1,000 IOPS, the fault 1, 50 or 99 ms into its 100 ms window: the part of that window before
    the fault had counted as empty time before it (0.01 to 0.99 of a window), so the last fault's stall read
    "within chance" ("never stopped for longer than chance allows") and the others' did not."""
    log = synthetic(lambda t: 0 if 20.0 <= t < 20.2 else 1000, 60)
    for offset_ms in (1, 50, 99):
        found = failover([log], WINDOW, at(20) + offset_ms, at(0), at(60))
        assert found.stalled and not found.by_chance, (offset_ms, found)
        assert found.blackout_s == pytest.approx(0.2, abs=0.11), (offset_ms, found)
