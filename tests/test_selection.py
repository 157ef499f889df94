"""The library under the CLI's result commands and `import`, without a database or fio: which runs, which
records, which objective; how imported files become numbered repetitions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from storbench.errors import UserError
from storbench.fio.parse import parse_fio_json
from storbench.importer import FioFile, prepare_import
from storbench.model import RunInfo
from storbench.selection import parse_objective, parse_where, resolve_runs, where_items


def _run(run_id: int) -> RunInfo:
    return RunInfo(run_id=run_id, plan_name="p", plan_text="", source="run", storbench_version="0", fio_version="",
                   host="h", kernel="k", run_order="interleaved", seed=0, tags=(), started_at_s=0.0,
                   finished_at_s=None)


RUNS = [_run(1), _run(2), _run(5)]


def test_run_spec_resolves_to_run_ids_and_a_label() -> None:
    assert resolve_runs(RUNS, "", "r.db", default_latest=True) == ([5], "run 5 (latest; --run all for every run)")
    assert resolve_runs(RUNS, "", "r.db", default_latest=False) == ([1, 2, 5], "all runs")
    assert resolve_runs(RUNS, "all", "r.db", default_latest=True) == ([1, 2, 5], "all runs")
    assert resolve_runs(RUNS, "2,5", "r.db", default_latest=True) == ([2, 5], "run 2,5")
    # a store several machines write (a team's PostgreSQL): the latest run may be a colleague's, and says whose
    shared = [*RUNS, replace(_run(6), host="bastion-2", started_at_s=10.0)]
    assert resolve_runs(shared, "", "r.db", default_latest=True) == (
        [6], "run 6 (latest, made on bastion-2; --run all for every run)")


def test_bad_run_specs_are_user_errors_with_a_hint() -> None:
    with pytest.raises(UserError) as bad:
        resolve_runs(RUNS, "latest", "r.db", default_latest=True)
    assert bad.value.one_line() == "--run 'latest' is not a run number (hint: e.g. --run 3, --run 2,3 or --run all)"
    with pytest.raises(UserError) as missing:
        resolve_runs(RUNS, "2,3", "r.db", default_latest=True)
    assert missing.value.one_line() == "no run 3 in r.db (hint: runs: 1, 2, 5)"


def test_where_items_and_their_parsing() -> None:
    assert where_items(["rw=randread"], ["a", "b"]) == ["rw=randread", "target=a", "target=b"]
    assert parse_where([" bs = 4k", "fio_options=a=b"]) == [("bs", "4k"), ("fio_options", "a=b")]
    for bad in ("rw", "=4k"):
        with pytest.raises(UserError, match="is not KEY=VALUE"):
            parse_where([bad])


def test_one_slo_parser_for_saturation_and_report() -> None:
    assert parse_objective(None) is None
    with pytest.raises(UserError):  # given, but empty: not silently no objective
        parse_objective("")
    objective = parse_objective("p99<=10ms")
    assert objective is not None and objective.limit_ns == 10_000_000
    with pytest.raises(UserError) as bad:
        parse_objective("p99 under 10ms")
    assert bad.value.one_line().startswith("--slo: ") and "mean<=500us" in bad.value.one_line()


def test_prepare_import_numbers_repetitions_per_case_across_files(fixtures: Path) -> None:
    text = (fixtures / "randrw-numjobs2.jsonplus.json").read_text()
    output = parse_fio_json(text)
    files = [FioFile("a.json", text, output), FioFile("b.json", text, output)]  # the same case twice
    prepared = prepare_import(files, "old-array")
    assert prepared.plan_text == "# imported from:\n# a.json\n# b.json\n"
    assert prepared.fio_version == output.fio_version
    assert prepared.cases == 1
    assert [(r.rep_index, r.source) for r in prepared.repetitions] == [(0, "a.json"), (1, "b.json")]
    assert prepared.repetitions[0].case == prepared.repetitions[1].case
    assert prepared.repetitions[0].case.target.name == "old-array"


def test_a_link_rate_selects_as_people_write_it() -> None:
    from storbench.model import LabPoint
    from storbench.stats.match import matches
    from synthetic import observation

    seen = observation(lab="lab=hosts link=100000000")
    assert seen.case.lab == LabPoint(link_bits_per_s=10**8)
    assert matches(seen, "link", "100Mbit", {}) and matches(seen, "link", "0.1Gbit", {})
    assert not matches(seen, "link", "1Gbit", {}) and not matches(seen, "link", "fast", {})


def test_a_where_that_matches_nothing_lists_the_stored_values_of_its_field() -> None:
    """`--where ioengine=uring` said only "no results match": it names the field's stored values."""
    from storbench.stats.match import no_match_line
    from synthetic import observation

    seen = [observation(case_id="a", ioengine="libaio", bs_bytes=4096),
            observation(case_id="b", ioengine="io_uring", bs_bytes=65536, direct=False)]
    assert no_match_line(seen, [("ioengine", "uring")], {}) == (
        "no results match ioengine=uring; stored values: io_uring, libaio")
    assert no_match_line(seen, [("rw", "randread"), ("bs", "1m")], {}) == (
        "no results match bs=1m; stored values: 4k, 64k")
    assert no_match_line(seen, [("engine", "spdk")], {}).endswith("stored values: io_uring, libaio")  # an alias
    assert no_match_line(seen, [("direct", "1"), ("ioengine", "io_uring")], {}) == (
        "no results match direct=1 ioengine=io_uring: each matches some results, but none all of them together")
    assert no_match_line(seen, [("iops", "5")], {}) == "no results match iops=5"  # a metric: no list of values
    # a value that is none of its field's: said so (it had read "no results match" alone)
    assert no_match_line(seen, [("bs", "4kb")], {}) == (
        "no results match bs=4kb: ambiguous size '4kb': write 4KiB (2^10 bytes a KiB) or 4kB (10^3 bytes a kB)")
    assert no_match_line(seen, [("qd", "abc")], {}) == "no results match qd=abc: abc is not a whole number"
    assert no_match_line(seen, [("direct", "maybe")], {}) == "no results match direct=maybe: maybe is not true or false"
    # a field the points' results have no value of (a client's name, on results summed over the clients)
    assert no_match_line(seen, [("client", "2")], {}) == "no results match client=2; no stored result has a client"


def test_the_readers_take_a_runs_design_and_never_its_plan_text() -> None:
    """Each reader answers from ``RunInfo.design``: the plan text here is not even YAML."""
    from dataclasses import replace

    from storbench.model import Expectation
    from storbench.run_design import DesignQuestion, RunDesign, SteadyDesign, StoppingRule, TargetExpectation
    from storbench.selection import Selection
    from storbench.stats.run_questions import (
        adaptive_questions,
        bring_ups,
        design_steady_rule,
        expectations,
        interval_levels,
        planned_repetitions,
        run_design_changes,
    )
    from storbench.stats.sequential import SequentialPlan

    decided = RunDesign(stopping=StoppingRule(3, 12, "decided"),
                        compare=DesignQuestion("pool_size=2", "pool_size=3", ("iops",), margin=0.1),
                        expectations=(TargetExpectation("a", iops=500.0),), bring_up="each_repetition")
    ci = RunDesign(stopping=StoppingRule(4, 9, "ci <= 5%", ci_pct=5.0))
    steady = RunDesign(repeat=3, steady=SteadyDesign("iops", 5, 0.2, 0.1, 25, 5))
    fixed = RunDesign(repeat=3, planned_repetitions=12)
    runs = [replace(_run(run_id), plan_text="name: [", design=design)
            for run_id, design in enumerate((decided, ci, steady, fixed), 1)]
    assert expectations(runs) == {(1, "a"): Expectation(iops=500.0)}
    assert interval_levels(runs).keys() == {2}
    assert bring_ups(runs) == {1: "each_repetition", 2: "once", 3: "once", 4: "once"}
    plan = SequentialPlan(min_rounds=3, max_rounds=12, margin=0.1)
    assert Selection([], runs, "", []).sequential_plans == {1: plan}
    [question] = adaptive_questions(runs)
    assert (question.run_id, question.baseline.text, question.metrics, question.plan, question.bring_up) == (
        1, "pool_size=2", ("iops",), plan, "each_repetition")
    unparsable = replace(runs[0], design=replace(decided, compare=DesignQuestion("=", "=", ("iops",))))
    assert adaptive_questions([unparsable]) == []
    assert [design_steady_rule(r.design) is not None for r in runs] == [False, False, True, False]
    assert [planned_repetitions(r) for r in runs] == [None, None, None, 12]
    widened = replace(decided, stopping=StoppingRule(3, 16, "decided"))
    assert run_design_changes([(1, decided), (2, widened)]) == ["max 12 -> 16"]
    assert run_design_changes([(1, decided), (2, RunDesign())]) == []  # a version without a design: not compared
