"""CPU cycles per I/O (`telemetry.cycles`): perf's CSV read back, the counter run for real (with a software event
where the machine has no CPU PMU), cycles per I/O by component, and the run refused with the reason where the
machine cannot count cycles."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from helpers import inside, run_cli, write_plan
from storbench.stats.cost import repetition_cost
from storbench.telemetry.cycles import CycleCounter, machine_cycles_unavailable
from storbench.telemetry.perf import cycles_unavailable, parse_perf_stat, perf_stat_arguments
from test_cost import digest

CANNOT_COUNT = machine_cycles_unavailable()


def test_perf_stat_csv_known_answers() -> None:
    # as perf 6.1 writes with -x, -o FILE: a comment, a blank line, then value,unit,event,run time,% enabled,...
    counted = "# started on Sat Nov 28 14:30:00 2026\n\n1234567,,cycles,1000000,100.00,,\n"
    assert parse_perf_stat(counted, "cycles") == (1234567.0, None)
    assert parse_perf_stat("98765,,cycles:u,500,100.00,,\n", "cycles") == (98765.0, None)
    assert parse_perf_stat("0.89,msec,task-clock,893596,100.00,0.009,CPUs utilized\n", "task-clock") == (0.89, None)
    # this machine's answer (no PMU), and an event perf could not schedule
    assert parse_perf_stat("<not supported>,,cycles,0,100.00,,\n", "cycles") == (
        None, "perf stat says <not supported> for cycles")
    assert parse_perf_stat("<not counted>,,cycles,0,0.00,,\n", "cycles")[1] == "perf stat says <not counted> for cycles"
    assert parse_perf_stat("1,,instructions,1,100.00,,\n", "cycles") == (None, "perf stat printed no cycles count")
    assert perf_stat_arguments("perf", "cycles", [30, 4], "/t/o.csv") == [
        "perf", "stat", "-x", ",", "-e", "cycles", "-p", "4,30", "-o", "/t/o.csv"]
    assert perf_stat_arguments("perf", "cycles", None, "o")[6] == "-a"
    assert cycles_unavailable(None, ["cpu"]) == "perf is not installed"
    assert cycles_unavailable("/usr/bin/perf", ["cpu_core", "software"]) is None
    why = cycles_unavailable("/usr/bin/perf", ["software", "tracepoint"])
    assert why is not None and "no cpu PMU" in why and "software, tracepoint" in why


@pytest.mark.serial  # the machine's own task-clock: another test beside it would count too
@pytest.mark.skipif(CANNOT_COUNT == "perf is not installed",
                    reason="perf is not installed (storbench setup --dev installs linux-perf)")
def test_the_counter_runs_perf_beside_named_processes_and_the_machine() -> None:
    # task-clock (ms of CPU per second) is a software event every kernel counts: the same spawning, interrupting
    # and reading as cycles, with an answer known here: a spinning process is about one CPU
    # a name of its own (its /proc comm): another python3 busy on the machine must not count as it
    spinner = subprocess.Popen([sys.executable, "-c", "open('/proc/self/comm', 'w').write('sbspinner')\n"
                                "while True: pass"])
    try:
        time.sleep(0.3)
        counter = CycleCounter(["sbspinner", "no-such-process"], event="task-clock")
        counter.start()
        time.sleep(1.0)
        series, problems = counter.stop()
    finally:
        spinner.kill()
        spinner.wait()
    rates = {s.entity: s.values[0] for s in series}
    assert problems == ()
    assert set(rates) == {"host", "sbspinner"}  # a name with no process is not counted
    assert 500 <= rates["sbspinner"] <= 1100 and rates["host"] >= rates["sbspinner"] * 0.9
    assert all(s.source == "perf" and s.metric == "task-clock_per_s" for s in series)


def test_cycles_per_io_by_component_and_for_the_machine() -> None:
    telemetry = replace(digest({"fio": 0.5, "ceph-osd": 2.0}),
                        cycles_per_s=(("host", 8e9), ("ceph-osd", 4e9), ("radosgw", 1e8)))
    cost = repetition_cost(10_000.0, 4096e4, telemetry, None, 8, None)
    assert cost is not None
    assert cost.cycles_per_io("osd") == pytest.approx(400_000.0)
    assert cost.cycles_per_io("host") == pytest.approx(800_000.0)
    assert cost.cycles_per_io("rgw") == pytest.approx(10_000.0)
    assert cost.cycles_per_io("client") is None  # fio started after the counters: not counted on its own
    assert repetition_cost(10_000.0, 1.0, digest({"fio": 0.5}), None, 8, None).cycles_per_io("host") is None


def test_the_cost_table_has_cycle_columns_where_perf_counted() -> None:
    from storbench.report.cost import cost_table, cost_table_html
    from storbench.stats.summary import summarize_points
    from synthetic import observation

    counted = [replace(o, telemetry=replace(o.telemetry, cycles_per_s=(("host", 2e9 * (1 + i / 10)),)))
               for i, o in enumerate(observation(case_id="a", repeat=i, target="rbd", target_kind="rbd",
                                                 direction="write", rw="randwrite", iops=10_000.0, host_cpus=8,
                                                 process_cpu_cores=(("fio", 0.5),), host_cpu_busy_pct=60.0)
                                     for i in range(3))]
    points = summarize_points(counted)
    assert points[0].metric("host_cycles_per_io").mean == pytest.approx(220_000.0)
    console = Console(record=True, width=300)
    console.print(cost_table(points, "t"))
    text = console.export_text()
    assert "host cycles/I/O" in text and "220,000 ±" in text
    assert "host cycles/I/O" in cost_table_html(points)
    plain = summarize_points([replace(o, telemetry=replace(o.telemetry, cycles_per_s=())) for o in counted])
    console = Console(record=True, width=300)
    console.print(cost_table(plain, "t"))
    assert "cycles" not in console.export_text()


CYCLES_PLAN = """
name: cycles
targets:
  scratch: {{kind: path, path: {data}, size: 8MiB}}
workload: {{rw: randread, bs: 4k, iodepth: 1, runtime: 1s, ioengine: psync, direct: false}}
repeat: 1
telemetry: {{interval: 0.5s, cycles: true}}
"""


@pytest.mark.skipif(CANNOT_COUNT is None, reason="this machine counts cycles: the refusal is not reached")
def test_a_plan_asking_for_cycles_is_refused_with_the_reason_where_they_cannot_be_counted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data").mkdir()
    plan = write_plan(tmp_path, CYCLES_PLAN.format(data=tmp_path / "data"))
    code, _out, err = run_cli(capsys, "plan", str(plan))
    assert code != 0 and "telemetry.cycles: cannot count CPU cycles here" in err
    assert CANNOT_COUNT is not None and CANNOT_COUNT in " ".join(err.split())
    assert "hint:" in err


@pytest.mark.fio
@pytest.mark.skipif(CANNOT_COUNT is not None, reason=f"cycles cannot be counted here: {CANNOT_COUNT}")
def test_a_real_run_counts_the_machines_cycles_per_io(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "data").mkdir()
    plan = write_plan(tmp_path, CYCLES_PLAN.format(data=tmp_path / "data"))
    db = tmp_path / "r.db"
    with inside(tmp_path):
        code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db))
    assert code == 0, out + err
    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    (record,) = json.loads(out)
    assert record["host_cycles_per_io"] > 0
