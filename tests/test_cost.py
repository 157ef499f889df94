"""Issue 35: what each I/O costs in CPU, by component. Known answers on synthetic telemetry; intervals over
repetitions; compare's cost lines; `show --cost` on real fio runs (the Ceph lab's replica case: test_ceph_lab)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from helpers import inside, run_cli, write_plan
from storbench.stats.compare import compare_observations
from storbench.stats.cost import polls, repetition_cost
from storbench.stats.selectors import parse_selector
from storbench.stats.summary import summarize_points
from storbench.telemetry.digest import TelemetryDigest
from synthetic import observation


def digest(processes: dict[str, float], busy_pct: float | None = 50.0,
           modes: dict[str, float] | None = None) -> TelemetryDigest:
    return TelemetryDigest(
        host_cpu_busy_pct=busy_pct, host_cpu_busy_max_pct=busy_pct, host_cpu_iowait_pct=None,
        host_cpu_pressure_pct=None, host_cpu_modes_pct=tuple((modes or {"softirq": 4.0, "irq": 1.0}).items()),
        process_cpu_cores=tuple(processes.items()), devices=(), interfaces=(), mem_used_bytes=None,
        page_cache_bytes=None, ceph_ops_per_s=None, ceph_op_latency_ns=None, ceph_cache_hit_pct=None,
        ceph_onode_hit_pct=None, remote=(), ceiling_iops=None)


def test_cost_per_io_by_component_known_answers() -> None:
    # 8 CPUs, half busy (4 cores): fio 0.5, OSDs 2.0, mon 0.1, irq + softirq 5 % of 8 = 0.4; 10,000 I/Os per second
    # of 4 KiB in both directions together
    telemetry = digest({"fio": 0.5, "ceph-osd": 2.0, "ceph-mon": 0.1})
    cost = repetition_cost(10_000.0, 10_000.0 * 4096, telemetry, fio_cores=0.45, host_cpus=8,
                           osd_cores_allocated=3.0)
    assert cost is not None
    assert cost.us_per_io("client") == pytest.approx(50.0)  # the sampled fio processes, not fio's own 0.45
    assert cost.us_per_io("osd") == pytest.approx(200.0)
    assert cost.us_per_io("mon") == pytest.approx(10.0)
    assert cost.us_per_io("kernel") == pytest.approx(40.0)
    assert cost.us_per_io("total") == pytest.approx(300.0)  # 3.0 cores: every component and the kernel
    assert cost.core("other") == pytest.approx(1.0)  # 4 busy - 3.0: not counted as the I/O's cost
    assert cost.host_pct("osd") == pytest.approx(25.0) and cost.host_pct("other") == pytest.approx(12.5)
    assert cost.iops_per_core("total") == pytest.approx(10_000 / 3.0)
    assert cost.iops_per_core("osd") == pytest.approx(5_000.0)
    assert cost.iops_per_core_allocated == pytest.approx(10_000 / 3.0)  # the OSDs' 3 cores
    # 2 cores per 39.0625 MiB/s
    assert cost.us_per_mib("osd") == pytest.approx(2.0 * 1e6 / (10_000 * 4096 / 2**20))
    assert cost.us_per_io("mds") is None
    # a fio server's job of a 1 s run that lived between two samples: the samples saw its idle parent only; fio's own
    # accounting of its jobs is the more, and stands
    missed = repetition_cost(10_000.0, 1.0, digest({"fio": 0.0, "ceph-osd": 2.0}), fio_cores=0.45, host_cpus=8,
                             osd_cores_allocated=None)
    assert missed is not None and missed.us_per_io("client") == pytest.approx(45.0)
    # fio not sampled: its own accounting; no quota: the machine's CPUs are the cores allocated
    unsampled = repetition_cost(1_000.0, 4096e3, digest({"ceph-osd": 1.0}), fio_cores=0.2, host_cpus=4,
                                osd_cores_allocated=None)
    assert unsampled is not None and unsampled.us_per_io("client") == pytest.approx(200.0)
    assert unsampled.iops_per_core_allocated == pytest.approx(250.0)
    # 3 OSDs of 2 cores each on a 4-CPU machine have 4 cores, not 6
    capped = repetition_cost(1_000.0, 4096e3, digest({"ceph-osd": 1.0}), fio_cores=0.2, host_cpus=4,
                             osd_cores_allocated=6.0)
    assert capped is not None and capped.iops_per_core_allocated == pytest.approx(250.0)
    # without telemetry, or without I/O, nothing is said
    assert repetition_cost(1_000.0, 1.0, None, 0.2, 4, None) is None
    assert repetition_cost(0.0, 0.0, telemetry, 0.2, 4, None) is None
    # the machine's CPU count unknown: no kernel, other or shares, the processes still
    blind = repetition_cost(10_000.0, 1.0, telemetry, None, None, None)
    assert blind is not None and blind.us_per_io("kernel") is None and blind.host_pct("osd") is None
    assert blind.us_per_io("osd") == pytest.approx(200.0)
    assert polls((("hipri", "1"),)) and polls((("sqthread_poll", "1"),)) and not polls((("nice", "1"),))
    # librbd's busy polling and libaio reaping its ring from user space poll too; an option set to 0 does not
    assert polls((("busy_poll", "1"),)) and polls((("userspace_reap", "1"),))
    assert not polls((("hipri", "0"),)) and not polls((("busy_poll", "false"),))


def _osd_reps(case_id: str, pool_size: int, osd_cores: list[float], iops: float = 10_000.0,
              run_id: int = 1) -> list:
    return [observation(case_id=case_id, run_id=run_id, repeat=i, target="rbd", target_kind="rbd", rw="randwrite",
                        direction="write", iops=iops, lab=f"lab=ceph pool_size={pool_size}", host_cpus=8,
                        ceph_osd_cpu_cores=cores, process_cpu_cores=(("fio", 0.5),), host_cpu_busy_pct=60.0)
            for i, cores in enumerate(osd_cores)]


def test_a_points_cost_has_an_interval_over_its_repetitions_and_shows_in_a_table() -> None:
    from storbench.report.cost import cost_table

    points = summarize_points(_osd_reps("a", 2, [1.9, 2.0, 2.1]))
    (point,) = points
    osd = point.metric("osd_cpu_us_per_io")
    assert osd is not None and osd.mean == pytest.approx(200.0) and osd.n == 3
    assert osd.half_width is not None and 0 < osd.half_width < 30  # t(2) x 10 / sqrt(3) = 24.8
    assert point.metric("iops_per_osd_core").mean == pytest.approx(10_000 * (1 / 1.9 + 1 / 2.0 + 1 / 2.1) / 3)
    console = Console(record=True, width=300)
    console.print(cost_table(points, "t"))
    text = console.export_text()
    assert "ceph-osd" in text and "200 ± 25" in text and "IOPS/osd core" in text and "ceph-mds" not in text


def test_compare_says_what_a_setting_did_to_the_cost_of_an_io_with_its_interval() -> None:
    from rich.console import Console

    from storbench.report.cost_compare import cost_change_markdown, cost_change_table, cost_changes
    from storbench.stats.compare_cells import Verdict

    seen = [*_osd_reps("r2", 2, [1.9, 2.0, 2.1]), *_osd_reps("r3", 3, [2.9, 3.0, 3.1])]
    comparisons = compare_observations(seen, parse_selector("pool_size=2"), parse_selector("pool_size=3"), {})
    (point,) = cost_changes(comparisons)
    assert point.point.startswith("rbd randwrite 4k qd")
    osd = {c.figure: c for c in point.changes}["ceph-osd CPU per I/O (µs)"]
    assert (osd.baseline, osd.candidate) == ("200", "300") and osd.change.startswith("+50.0% [")
    assert osd.verdict is Verdict.WORSE and "▼" in osd.change
    cell = comparisons[0].cell("osd_cpu_us_per_io")
    assert cell is not None and not cell.gated  # descriptive: never a regression gate's cell
    # a row per figure, the point named once, in the terminal's table and in Markdown
    console = Console(record=True, width=200)
    console.print(cost_change_table([point]))
    text = console.export_text()
    row = next(line for line in text.splitlines() if "ceph-osd CPU per I/O" in line)
    assert "200" in row and "300" in row and "+50.0% [" in row and text.count("rbd randwrite 4k qd") == 1
    markdown = cost_change_markdown([point])
    assert "|  | ceph-osd CPU per I/O (µs) | 200 | 300 | +50.0% [" in "\n".join(markdown)
    assert sum(1 for line in markdown if line.startswith("| rbd randwrite 4k qd")) == 1
    same = compare_observations([*_osd_reps("r2", 2, [2.0, 2.1, 1.9]), *_osd_reps("r3", 3, [1.9, 2.0, 2.1])],
                                parse_selector("pool_size=2"), parse_selector("pool_size=3"), {})
    unchanged = {c.figure: c for c in cost_changes(same)[0].changes}["ceph-osd CPU per I/O (µs)"]
    assert (unchanged.baseline, unchanged.candidate) == ("200", "200") and unchanged.change.startswith("+0.0% [")
    assert unchanged.verdict is Verdict.UNDECIDED and "~" in unchanged.change
    # one client's own record has no cost (the host's CPU is every client's)
    client = replace(seen[0], client="c1")
    assert summarize_points([client]) == [] or all(
        p.metric("osd_cpu_us_per_io") is None for p in summarize_points([client]))


@pytest.mark.fio
def test_show_cost_on_real_fio_runs_and_the_export_fields(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    plan = write_plan(tmp_path, f"""
name: cost
targets:
  scratch: {{kind: path, path: {tmp_path / 'data'}, size: 16MiB}}
workload: {{rw: [randread, randrw], bs: 4k, iodepth: 4, runtime: 1s, ioengine: psync, direct: false}}
repeat: {{until: "ci <= 90%", max: 4}}
telemetry: {{interval: 0.5s}}
""")
    (tmp_path / "data").mkdir()
    db = tmp_path / "r.db"
    with inside(tmp_path):
        code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db))
    assert code == 0, out + err
    code, out, err = run_cli(capsys, "show", "--db", str(db), "--cost")
    assert code == 0, err
    flat = " ".join(out.split())
    assert "CPU per I/O" in flat and "fio" in flat and "kernel" in flat and "IOPS/core" in flat
    assert flat.count("randrw") == 1  # a mixed case is one row: its CPU is both directions'
    assert "run 1 repeated `until: ci`: its intervals are t intervals at 99 %" in flat  # as under plain `show`
    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--format", "json")
    records = json.loads(out)
    for record in records:
        assert record["client_cpu_us_per_io"] > 0 and record["total_cpu_us_per_io"] >= record["client_cpu_us_per_io"]
        assert record["ios_per_s"] >= record["iops"] * (1 - 1e-5)  # the export rounds to 6 digits
        mixed = [r for r in records if r["rw"] == "randrw" and r["repeat"] == record["repeat"]]
        if record["rw"] == "randrw":  # both directions carry the repetition's one cost
            assert len({r["total_cpu_us_per_io"] for r in mixed}) == 1
            assert record["ios_per_s"] == pytest.approx(sum(r["iops"] for r in mixed), rel=1e-3)


def test_the_report_draws_cpu_per_io_stacked_by_component_and_iops_per_core() -> None:
    from storbench.report.cost import cost_figures

    points = summarize_points([*_osd_reps("r2", 2, [1.9, 2.0, 2.1]), *_osd_reps("r3", 3, [2.9, 3.0, 3.1])])
    stacked, per_core = cost_figures(points)
    assert stacked.stacked and [s.name for s in stacked.series] == ["fio", "ceph-osd", "all (95% CI)"]
    osd = stacked.series[1]
    assert osd.y == pytest.approx((200.0, 300.0)) and len(stacked.x_categories) == 2
    total = stacked.series[-1]
    assert total.y == pytest.approx((250.0, 350.0)) and total.error_y is not None and all(total.error_y)
    assert per_core.figure_id == "iops-per-core" and {s.name for s in per_core.series} == {"every component",
                                                                                          "ceph-osd"}
    assert cost_figures(summarize_points([observation()])) == []  # no telemetry: no cost figure
    # two repetitions far apart (t = 12.7): the arm below stops at zero, as the interval does (it drew -3,000 µs)
    wide = summarize_points([*_osd_reps("r2", 2, [0.5, 3.5])])
    (total_wide,) = [s for s in cost_figures(wide)[0].series if s.name.startswith("all")]
    assert total_wide.error_y_minus is not None and total_wide.y[0] - total_wide.error_y_minus[0] >= 0.0
    assert total_wide.error_y is not None and total_wide.error_y[0] > total_wide.y[0]  # the arm above is whole


def test_a_cpu_bound_point_names_the_component_whose_cost_per_io_grew_along_its_curve() -> None:
    def reps(iodepth: int, iops: float, osd_cores: list[float], busy: float) -> list:
        return [observation(case_id=f"qd{iodepth}", repeat=i, target="rbd", target_kind="rbd", rw="randwrite",
                            direction="write", iodepth=iodepth, iops=iops * (1 + 0.01 * i), lab="lab=ceph",
                            host_cpus=4, ceph_osd_cpu_cores=cores, process_cpu_cores=(("fio", 0.3),),
                            host_cpu_busy_pct=busy)
                for i, cores in enumerate(osd_cores)]

    # 4,000 IOPS on 0.8 OSD cores (200 µs per I/O), then 6,000 on 2.4 cores (400 µs): the OSDs' cost doubled
    points = summarize_points([*reps(1, 4_000.0, [0.78, 0.80, 0.82], 40.0),
                               *reps(16, 6_000.0, [2.35, 2.40, 2.45], 97.0)])
    deep = next(p for p in points if p.iodepth == 16)
    assert deep.bottleneck.kind.value == "cpu-bound", deep.bottleneck
    evidence = deep.bottleneck.evidence
    assert "CPU per I/O: ceph-osd 396, fio 50 µs" in evidence, evidence
    assert "ceph-osd's CPU per I/O grew 198 -> 396 µs since iodepth 1 (+100 % [" in evidence, evidence
    # the same cost at both depths: nothing said to have grown
    flat = summarize_points([*reps(1, 4_000.0, [0.78, 0.80, 0.82], 40.0),
                             *reps(16, 6_000.0, [1.17, 1.20, 1.23], 97.0)])
    assert "grew" not in next(p for p in flat if p.iodepth == 16).bottleneck.evidence


def test_a_volume_operation_has_no_cost_per_io() -> None:
    reps = [observation(case_id="p", repeat=i, rw="provision", target="csi", target_kind="pvc", iops=1 / 0.5,
                        lat_mean_ns=0.5e9, host_cpus=4, process_cpu_cores=(("fio", 0.2),), host_cpu_busy_pct=30.0)
            for i in range(3)]
    (point,) = summarize_points(reps)
    assert point.metric("total_cpu_us_per_io") is None and point.metric("client_cpu_us_per_io") is None


def test_cost_only_where_every_client_ran_on_the_machine_telemetry_read() -> None:
    from storbench.model import ClientMeasurement
    from storbench.stats.observations import ran_here

    def client(name: str) -> ClientMeasurement:
        return ClientMeasurement(client=name, jobs=1, job_errors=(0,), cpu_usr_pct=0.0, cpu_sys_pct=0.0,
                                 directions=())

    local = observation().case
    assert ran_here([client("local")], "vm", local)
    assert ran_here([client("10.214.0.10:8765"), client("10.214.0.11:8765")], "vm", local)  # the hosts lab's
    assert ran_here([client("vm:8765")], "vm", local)  # a fio server on this machine by its name
    assert not ran_here([client("10.214.0.10:8765"), client("192.0.2.7:8765")], "vm", local)  # a real one elsewhere
    assert not ran_here([client("server2")], None, local)
    pods = observation(target="k", target_kind="pvc").case
    assert not ran_here([client("sb-1@node-a")], "vm", pods)  # a real cluster's node
    on_lab = replace(pods, lab=replace(pods.lab, k8s=object()))  # type: ignore[arg-type]
    assert ran_here([client("sb-1@storbench-node-1")], "vm", on_lab)
    far = replace(_osd_reps("a", 2, [2.0])[0], fio=replace(_osd_reps("a", 2, [2.0])[0].fio, ran_here=False))
    point = summarize_points([far])[0]
    assert point.metric("osd_cpu_us_per_io") is None and point.metric("ios_per_s") is None


def test_compare_leaves_totals_out_when_one_side_has_no_kernel_part() -> None:
    from storbench.report.cost_compare import ONE_SIDED_KERNEL, cost_caption, cost_change_markdown, cost_changes

    old = [replace(o, host_cpus=None) for o in _osd_reps("r2", 2, [1.9, 2.0, 2.1])]
    new = [replace(o, telemetry=replace(o.telemetry, host_cpu_modes_pct=(("softirq", 5.0),)))
           for o in _osd_reps("r3", 3, [2.9, 3.0, 3.1])]
    (point,) = cost_changes(compare_observations([*old, *new], parse_selector("pool_size=2"),
                                                 parse_selector("pool_size=3"), {}))
    figures = [c.figure for c in point.changes]
    assert point.one_sided_kernel and "ceph-osd CPU per I/O (µs)" in figures
    assert not any("all components" in f or f.startswith("IOPS per core used") for f in figures)
    assert f"|  | {ONE_SIDED_KERNEL} | | | |" in cost_change_markdown([point])
    # its caption counts the figures that share the error rate, the totals left out of the table among them
    assert len(point.changes) == 3 and point.cells == 5
    assert "share its error rate among the 5 cost figures compared for it" in cost_caption([point])


def test_the_report_has_a_cost_section_with_its_table_figures_and_comparisons_cost_lines() -> None:
    from storbench.report.build import build_report
    from storbench.report.html import render_html

    seen = [*_osd_reps("r2", 2, [1.9, 2.0, 2.1]), *_osd_reps("r3", 3, [2.9, 3.0, 3.1])]
    comparisons = compare_observations(seen, parse_selector("pool_size=2"), parse_selector("pool_size=3"), {})
    doc = build_report("t", [], [], seen, comparisons=comparisons, baseline="pool_size=2", candidate="pool_size=3")
    page = render_html(doc, "")
    section = page.split("<h2>CPU cost per I/O</h2>")[1].split("</section>")[0]
    assert "<th>ceph-osd µs</th>" in section and "<td>200 ± 25</td>" in section and "<td>300 ± 25</td>" in section
    assert "cpu-cost" in section and "iops-per-core" in section  # its figures under its table
    compared = page.split("<h2>Comparison</h2>")[1].split("</section>")[0]
    cost = compared.split("CPU per I/O of every direction")[1]
    assert "<td>ceph-osd CPU per I/O (µs)</td><td>200</td><td>300</td><td class='verdict-worse'>+50.0% [" in cost


def test_the_reports_cost_table_shows_a_labels_control_characters_escaped() -> None:
    """A point's label carries plan and database text: the report's cost table escapes it as every other cell does
    (a right-to-left override would reorder what the page shows)."""
    from storbench.report.cost_compare import CostChange, PointCostChange, cost_change_html
    from storbench.stats.compare_cells import Verdict

    row = CostChange("fio CPU per I/O (µs)", "10", "20", "+100.0% [+50.0, +150.0] ▼", Verdict.WORSE)
    page = cost_change_html([PointCostChange("evil\u202e<b>x</b>", 1, (row,), False)])
    assert "\u202e" not in page and "evil\\u202e&lt;b&gt;x&lt;/b&gt;" in page


def test_repetitions_with_the_checking_writer_beside_fio_have_no_cost_per_io() -> None:
    """`check_writes` writes up to 200 synced blocks a second on the same storage: the OSDs' CPU counted them,
    fio's I/Os did not, and the cost per I/O came out up to two thirds too high at 300 IOPS."""
    from dataclasses import replace

    from storbench.model.fault_record import WriteCheck
    from storbench.stats.metric_values import observation_cost

    (plain, *_) = _osd_reps("a", 2, [1.9, 2.0, 2.1])
    assert observation_cost(plain) is not None
    checked = replace(plain, write_check=WriteCheck(blocks=64, block_bytes=4096, acknowledged=600, failed=0))
    assert observation_cost(checked) is None


def test_compare_shares_the_cost_lines_error_rate_among_its_cells() -> None:
    """A line of cost cells each at 95 % marks some change between sides with the same truth in 16-23 % of points
    (bench/cost_compare.py); its 5 % is shared among the cells (Bonferroni): a step shown at a plain 95 % but not at
    the shared level stays ~, and the line says the error rate is shared."""
    from helpers import bench_module
    from storbench.report.cost_compare import cost_caption, cost_changes
    from storbench.stats.compare_cells import Verdict, cost_cells
    from storbench.stats.estimate import welch_difference

    seen = [*_osd_reps("r2", 2, [1.9, 2.0, 2.1]), *_osd_reps("r3", 3, [2.185, 2.285, 2.385])]
    (c,) = compare_observations(seen, parse_selector("pool_size=2"), parse_selector("pool_size=3"), {})
    cell = c.cell("osd_cpu_us_per_io")
    assert cell is not None and cell.baseline is not None and cell.candidate is not None
    assert welch_difference(cell.baseline, cell.candidate, 0.95).significant  # a plain 95 % would mark it
    assert cell.verdict is Verdict.UNDECIDED and cost_cells(c) >= 4
    (point,) = cost_changes([c])
    assert point.cells == cost_cells(c) == len(point.changes)
    assert f"share its error rate among the {cost_cells(c)} cost figures compared for it" in cost_caption([point])
    bench = bench_module("cost_compare")
    plain, shared = bench.rate(600, 5, 0.12, False, seed=5)
    assert plain > 0.12 and shared <= 0.06, (plain, shared)


def test_a_repetition_with_a_fault_in_it_has_no_cost_per_io() -> None:
    """Its I/Os per second span the blackout while the daemons' CPU goes on: its µs per I/O would read how long the
    blackout lasted, not what an I/O costs. One whose fault was never done keeps its cost."""
    from dataclasses import replace

    from storbench.model.fault_record import FaultRecord
    from storbench.stats.failover_points import RepetitionFailover
    from storbench.stats.metric_values import observation_cost

    (plain, *_) = _osd_reps("a", 2, [1.9, 2.0, 2.1])
    fault = FaultRecord("stop", "osd.0", False, 100.0)
    assert observation_cost(replace(plain, failover=RepetitionFailover(1, 0, None, None, None))) is not None
    assert observation_cost(replace(plain, failover=RepetitionFailover(1, 0, fault, None, None))) is None
    failed = replace(fault, error="no such daemon")  # could not be done: the I/O ran as without it
    assert observation_cost(replace(plain, failover=RepetitionFailover(1, 0, failed, None, None))) is not None


def test_the_metadata_cycle_has_no_cost_per_operation() -> None:
    """`rw: metadata` runs create, stat and delete one after another, each rate over its own time: divided by
    their sum the CPU per operation came out 3 to 17 times too low. A single phase (`rw: delete`) keeps its cost."""
    from dataclasses import replace

    from storbench.stats.metric_values import observation_cost

    (plain, *_) = _osd_reps("a", 2, [1.9, 2.0, 2.1])

    def as_rw(rw: str) -> object:
        return replace(plain, case=replace(plain.case, workload=replace(plain.case.workload, rw=rw)))

    assert observation_cost(as_rw("metadata")) is None  # type: ignore[arg-type]
    assert observation_cost(as_rw("delete")) is not None  # type: ignore[arg-type]
    assert observation_cost(as_rw("create")) is None  # type: ignore[arg-type]  # it deletes its files after measuring


def test_the_cost_grew_rule_says_growth_of_no_growth_rarely_and_finds_a_large_one() -> None:
    """bench/cost_growth.py, the methodology's table in small: with no growth a component is named in at most a few
    per cent of points (the 5 % shared among the components), and a 30 % growth of the OSDs' at 10 repetitions
    is named most of the time."""
    from helpers import bench_module

    bench = bench_module("cost_growth")
    said, _ = bench.said_grown(800, 5, {}, seed=7)
    assert said <= 0.05, said
    _, osd = bench.said_grown(300, 10, {"osd": 1.30}, seed=8)
    assert osd >= 0.6, osd
