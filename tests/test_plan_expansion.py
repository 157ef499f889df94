"""Pure tests of plan loading and expansion: the sweep, exclude rules, case ids, run order, ETA and units."""

from __future__ import annotations

import itertools
import re
import textwrap
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from storbench.case_ids import case_id_for
from storbench.config import load_plan_text
from storbench.errors import UserError
from storbench.model import Case, LabPoint, ScheduledRepetition
from storbench.plan import expand
from storbench.schedule import estimate, schedule
from storbench.units import (
    format_block_size,
    format_bytes,
    format_duration,
    format_latency_ns,
    parse_duration_s,
    parse_fio_size_bytes,
    parse_size_bytes,
)

KIB = 1024
MIB = 1024 * KIB
QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart.yaml"

SWEEP = textwrap.dedent(
    """\
    name: sweep
    targets:
      scratch: {kind: path, path: ./data, size: 256MiB}
    workload:
      rw: [randread, randwrite, randrw]
      rwmixread: 70
      bs: [4k, 64k, 1m]
      iodepth: [1, 16]
      runtime: 2s
      ramp: 1s
    repeat: 3
    """
)


def cases_of(text: str) -> list[Case]:
    return expand(load_plan_text(text, "plan.yaml"))


def point(case: Case) -> tuple[str, int, int]:
    return case.workload.rw, case.workload.bs_bytes, case.workload.iodepth


def ids(cases: list[Case]) -> list[str]:
    return [c.case_id for c in cases]


# ---- the cartesian product ------------------------------------------------------------------------


def test_cartesian_product_3x3x2() -> None:
    cases = cases_of(SWEEP)
    assert len(cases) == 18
    assert {point(c) for c in cases} == set(
        itertools.product(["randread", "randwrite", "randrw"], [4 * KIB, 64 * KIB, MIB], [1, 16])
    )
    assert len(set(ids(cases))) == 18


def test_expansion_order_is_slowest_axis_first() -> None:
    cases = cases_of(SWEEP)
    assert [point(c) for c in cases[:3]] == [("randread", 4 * KIB, 1), ("randread", 4 * KIB, 16),
                                             ("randread", 64 * KIB, 1)]
    assert [c.workload.rw for c in cases] == ["randread"] * 6 + ["randwrite"] * 6 + ["randrw"] * 6


def test_quickstart_example_expands_to_18_cases() -> None:
    loaded = load_plan_text(QUICKSTART.read_text(), str(QUICKSTART))
    cases = expand(loaded)
    assert len(cases) == 18
    assert loaded.config.repeat == 3
    assert {c.target.size_bytes for c in cases} == {256 * MIB}


def test_scalar_values_are_one_point_sweeps_with_parsed_units() -> None:
    (case,) = cases_of(textwrap.dedent(
        """\
        name: one
        targets:
          t: {kind: path, path: ./d, size: 64KiB}
        workload:
          rw: randwrite
          bs: 8k
          iodepth: 4
          numjobs: 2
          runtime: 1m
          ramp: 2s
          direct: false
          ioengine: psync
        """
    ))
    w = case.workload
    assert (w.rw, w.bs_bytes, w.iodepth, w.numjobs, w.runtime_s, w.ramp_s, w.direct, w.ioengine) == (
        "randwrite", 8192, 4, 2, 60.0, 2.0, False, "psync")
    assert w.size_bytes == 64 * KIB
    assert w.rwmixread is None
    assert (case.target.name, case.target.kind, case.target.path) == ("t", "path", "./d")


def test_targets_and_fio_lists_are_sweep_axes_too() -> None:
    text = textwrap.dedent(
        """\
        name: multi
        targets:
          a: {kind: path, path: ./a, size: 1m}
          b: {kind: path, path: ./b, size: 1m}
        workload:
          rw: [read, write]
          fio: {thinktime: [0, 5], refill_buffers: 1}
        """
    )
    cases = cases_of(text)
    assert len(cases) == 2 * 2 * 2
    assert {(c.target.name, c.workload.rw, dict(c.workload.fio_options)["thinktime"]) for c in cases} == set(
        itertools.product(["a", "b"], ["read", "write"], ["0", "5"]))
    assert all(dict(c.workload.fio_options)["refill_buffers"] == "1" for c in cases)


def test_workload_size_overrides_the_target_size() -> None:
    cases = cases_of(SWEEP.replace("  runtime: 2s", "  runtime: 2s\n  size: 16MiB"))
    assert {c.workload.size_bytes for c in cases} == {16 * MIB}
    assert {c.target.size_bytes for c in cases} == {256 * MIB}


# ---- exclude rules --------------------------------------------------------------------------------


def _full_points() -> set[tuple[str, int, int]]:
    return {point(c) for c in cases_of(SWEEP)}


def test_exclude_removes_exactly_the_matching_points() -> None:
    cases = cases_of(SWEEP + "exclude:\n  - {rw: randwrite, bs: 1m}\n")
    removed = {("randwrite", MIB, 1), ("randwrite", MIB, 16)}
    assert len(cases) == 16
    assert {point(c) for c in cases} == _full_points() - removed


def test_exclude_list_values_and_several_rules() -> None:
    cases = cases_of(SWEEP + "exclude:\n  - {rw: [randread, randwrite], iodepth: 16}\n  - {bs: 4k, iodepth: 1}\n")
    expected = {
        p for p in _full_points()
        if not (p[0] in ("randread", "randwrite") and p[2] == 16) and not (p[1] == 4 * KIB and p[2] == 1)
    }
    assert {point(c) for c in cases} == expected
    assert len(cases) == 18 - 6 - 3  # the two rules never overlap: they differ in iodepth


@pytest.mark.parametrize("written", ["1m", "1MiB", "1024k", 1048576])
def test_exclude_values_are_normalised_like_the_sweep(written: object) -> None:
    cases = cases_of(SWEEP + f"exclude:\n  - {{bs: {written}}}\n")
    assert len(cases) == 12
    assert MIB not in {c.workload.bs_bytes for c in cases}


@pytest.mark.parametrize("written", ["1.5", "true", "16k"])
def test_an_exclude_value_that_is_no_whole_number_is_refused_with_the_axis_values(written: str) -> None:
    """`{iodepth: 1.5}` and `{iodepth: true}` had dropped iodepth 1 (int() reads both as 1); "16k" had been "invalid
    literal for int()" with no hint."""
    with pytest.raises(UserError) as caught:
        cases_of(SWEEP + f"exclude:\n  - {{iodepth: {written}}}\n")
    assert "exclude 'iodepth': expected a whole number" in caught.value.message, caught.value.message
    assert caught.value.hint == "values of iodepth in the plan: 1, 16", caught.value.hint
    assert len(cases_of(SWEEP + "exclude:\n  - {iodepth: '16'}\n")) == 9  # a whole number as text is one


def test_exclude_on_target_and_fio_axis() -> None:
    text = textwrap.dedent(
        """\
        name: multi
        targets:
          a: {kind: path, path: ./a, size: 1m}
          b: {kind: path, path: ./b, size: 1m}
        workload:
          rw: read
          fio: {thinktime: [0, 5]}
        exclude:
          - {target: b, thinktime: 5}
        """
    )
    cases = cases_of(text)
    assert {(c.target.name, dict(c.workload.fio_options)["thinktime"]) for c in cases} == {("a", "0"), ("a", "5"),
                                                                                      ("b", "0")}


def test_exclude_removing_everything_is_a_user_error() -> None:
    with pytest.raises(UserError) as caught:
        cases_of(SWEEP + "exclude:\n  - {iodepth: [1, 16]}\n")
    assert caught.value.where == "plan.yaml:12: exclude"
    assert "remove every case" in caught.value.message


# ---- rwmixread only for mixed patterns --------------------------------------------------------------


def test_rwmixread_only_kept_for_mixed_patterns() -> None:
    text = SWEEP.replace("rwmixread: 70", "rwmixread: [30, 70]").replace("bs: [4k, 64k, 1m]", "bs: 4k").replace(
        "iodepth: [1, 16]", "iodepth: 1")
    cases = cases_of(text)
    by_rw = Counter(c.workload.rw for c in cases)
    assert by_rw == {"randread": 1, "randwrite": 1, "randrw": 2}
    assert {c.workload.rwmixread for c in cases if c.workload.rw == "randrw"} == {30, 70}
    assert {c.workload.rwmixread for c in cases if c.workload.rw != "randrw"} == {None}
    assert len(set(ids(cases))) == 4


def test_rwmixread_does_not_change_the_id_of_a_pure_read_case() -> None:
    def randread_id(mix: int) -> str:
        (case,) = cases_of(SWEEP.replace("rw: [randread, randwrite, randrw]", "rw: randread").replace(
            "rwmixread: 70", f"rwmixread: {mix}").replace("bs: [4k, 64k, 1m]", "bs: 4k").replace(
            "iodepth: [1, 16]", "iodepth: 1"))
        return case.case_id

    def randrw_id(mix: int) -> str:
        (case,) = cases_of(SWEEP.replace("rw: [randread, randwrite, randrw]", "rw: randrw").replace(
            "rwmixread: 70", f"rwmixread: {mix}").replace("bs: [4k, 64k, 1m]", "bs: 4k").replace(
            "iodepth: [1, 16]", "iodepth: 1"))
        return case.case_id

    assert randread_id(30) == randread_id(70)
    assert randrw_id(30) != randrw_id(70)


# ---- case ids -------------------------------------------------------------------------------------

REFORMATTED = textwrap.dedent(
    """\
    # the same plan as SWEEP: other key order, flow/block style, other unit spellings, comments
    repeat: 5            # repetitions and order do not define a case
    order: shuffled
    workload: {iodepth: [1, 16], ramp: 1000ms, runtime: 2, bs: [4096, 64KiB, 1MiB],
               rwmixread: 70, rw: [randread, randwrite, randrw]}
    targets:
      scratch:
        size: 268435456
        path: ./data
        kind: path
    name: renamed-plan
    description: names, descriptions and tags are not part of a case either
    tags: [x]
    """
)


def test_case_ids_are_12_hex_chars() -> None:
    for case_id in ids(cases_of(SWEEP)):
        assert re.fullmatch(r"[0-9a-f]{12}", case_id), case_id


def test_case_ids_are_stable_for_the_same_text() -> None:
    assert ids(cases_of(SWEEP)) == ids(cases_of(SWEEP))


def test_case_ids_ignore_key_order_formatting_units_and_plan_metadata() -> None:
    assert ids(cases_of(REFORMATTED)) == ids(cases_of(SWEEP))


def test_reordered_sweep_values_give_the_same_ids_in_another_order() -> None:
    reordered = cases_of(SWEEP.replace("bs: [4k, 64k, 1m]", "bs: [1m, 4k, 64k]"))
    assert set(ids(reordered)) == set(ids(cases_of(SWEEP)))
    assert ids(reordered) != ids(cases_of(SWEEP))


def test_changing_one_parameter_changes_only_the_affected_ids() -> None:
    before = {point(c): c.case_id for c in cases_of(SWEEP)}
    after = {point(c): c.case_id for c in cases_of(SWEEP.replace("iodepth: [1, 16]", "iodepth: [1, 32]"))}
    for (rw, bs, depth), case_id in before.items():
        if depth == 1:
            assert after[(rw, bs, 1)] == case_id
        else:
            assert after[(rw, bs, 32)] != case_id


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("size: 256MiB", "size: 512MiB"),
        ("path: ./data", "path: ./other"),
        ("scratch:", "disk:"),
        ("runtime: 2s", "runtime: 3s"),
        ("ramp: 1s", "ramp: 0s"),
        ("runtime: 2s", "runtime: 2s\n  direct: false"),
        ("runtime: 2s", "runtime: 2s\n  ioengine: psync"),
        ("runtime: 2s", "runtime: 2s\n  numjobs: 2"),
        ("runtime: 2s", "runtime: 2s\n  fio: {thinktime: 1}"),
    ],
)
def test_every_case_parameter_is_part_of_the_id(old: str, new: str) -> None:
    changed = SWEEP.replace(old, new)
    assert changed != SWEEP
    assert not set(ids(cases_of(changed))) & set(ids(cases_of(SWEEP)))


def test_case_id_for_matches_expand_and_covers_clients_and_lab() -> None:
    case = cases_of(SWEEP)[0]
    assert case_id_for(case.target, case.workload) == case.case_id
    assert case_id_for(case.target, case.workload, clients=2) != case.case_id
    assert case_id_for(case.target, case.workload, lab=LabPoint(nfs=True)) != case.case_id
    assert case_id_for(case.target, replace(case.workload, iodepth=case.workload.iodepth + 1)) != case.case_id
    assert case_id_for(replace(case.target, path="./elsewhere"), case.workload) != case.case_id


# ---- schedule -------------------------------------------------------------------------------------


def _abc() -> list[Case]:
    cases = cases_of(SWEEP.replace("bs: [4k, 64k, 1m]", "bs: 4k").replace("iodepth: [1, 16]", "iodepth: 1"))
    assert len(cases) == 3
    return cases


def _n_cases(n: int) -> list[Case]:
    depths = ", ".join(str(2 ** i) for i in range(n))
    cases = cases_of(SWEEP.replace("rw: [randread, randwrite, randrw]", "rw: randread")
                     .replace("bs: [4k, 64k, 1m]", "bs: 4k").replace("iodepth: [1, 16]", f"iodepth: [{depths}]"))
    assert len(cases) == n
    return cases


def _order(items: list[ScheduledRepetition]) -> list[tuple[str, int]]:
    return [(item.case.case_id, item.rep_index) for item in items]


def test_schedule_sequential() -> None:
    a, b, c = _abc()
    got = _order(schedule([a, b, c], 2, "sequential", 0))
    assert got == [(a.case_id, 0), (a.case_id, 1), (b.case_id, 0), (b.case_id, 1), (c.case_id, 0), (c.case_id, 1)]


def test_schedule_interleaved_goes_back_and_forth_and_turns() -> None:
    """Rounds in mirrored pairs (A B C, C B A), the cases turned for the next pair (B C A, A C B): the case that
    ends one round and begins the next, right after itself, is C, then A, then B."""
    a, b, c = _abc()
    got = _order(schedule([a, b, c], 6, "interleaved", 0))
    names = {a.case_id: "A", b.case_id: "B", c.case_id: "C"}
    assert "".join(names[case_id] for case_id, _ in got) == "ABCCBA" "BCAACB" "CABBAC"
    assert [rep for _, rep in got] == [r for r in range(6) for _ in range(3)]
    assert "".join(names[i] for i, _ in _order(schedule([a, b, c], 3, "interleaved", 0))) == "ABCCBABCA"
    two = _order(schedule([a, b], 4, "interleaved", 0))
    assert "".join(names[i] for i, _ in two) == "ABBAABBA"  # two cases: A B B A, as always


@pytest.mark.parametrize("n", [3, 4, 5, 6])
def test_interleaved_rounds_cancel_drift_and_share_the_carry_over(n: int) -> None:
    """Over 2 x n rounds of n cases: within every pair of rounds each case's positions add up to n - 1 (linear
    drift cancels pair by pair), and each case follows itself at a round's boundary exactly once (before, the
    round's last case did every other round and the others never)."""
    cases = _n_cases(n)
    order = schedule(cases, 2 * n, "interleaved", 0)
    rounds = [[i.case.case_id for i in order if i.rep_index == r] for r in range(2 * n)]
    for first, second in zip(rounds[::2], rounds[1::2], strict=True):
        for case in cases:
            assert first.index(case.case_id) + second.index(case.case_id) == n - 1
    after_itself = [after[0] for before, after in itertools.pairwise(rounds) if before[-1] == after[0]]
    assert sorted(after_itself) == sorted(c.case_id for c in cases)


def test_schedule_shuffled_is_seeded_and_complete() -> None:
    cases = cases_of(SWEEP)
    repeat = 3
    first = _order(schedule(cases, repeat, "shuffled", 42))
    assert first == _order(schedule(cases, repeat, "shuffled", 42))
    assert Counter(first) == Counter((c.case_id, r) for c in cases for r in range(repeat))
    assert len(first) == len(cases) * repeat
    assert first != _order(schedule(cases, repeat, "shuffled", 43))
    assert first != _order(schedule(cases, repeat, "interleaved", 42))
    assert sorted(first) != first  # really shuffled, not some sorted order


@pytest.mark.parametrize("order", ["sequential", "interleaved", "shuffled"])
def test_every_order_schedules_each_repetition_once(order: str) -> None:
    cases = cases_of(SWEEP)
    got = _order(schedule(cases, 5, order, 7))
    assert Counter(got) == Counter((c.case_id, r) for c in cases for r in range(5))


def test_schedule_refuses_an_unknown_order() -> None:
    with pytest.raises(ValueError, match="unknown order"):
        schedule(_abc(), 2, "random", 0)


# ---- estimate -------------------------------------------------------------------------------------

LAYOUT_SPEED = 300 * MIB


def test_estimate_quickstart_shape() -> None:
    cases = cases_of(SWEEP)
    est = estimate(cases, 3)
    # 18 cases x (ramp 1 + runtime 2 + 0.6 fio start-up) x 3 repetitions + one 256MiB file at 300MiB/s
    assert est.seconds == pytest.approx(18 * 3.6 * 3 + 256 / 300)
    assert (est.cases, est.repetitions, est.layout_bytes, est.destructive_cases) == (18, 54, 256 * MIB, 0)


def test_estimate_counts_fios_startdelay_at_its_longest() -> None:
    """fio's `startdelay` (a range draws one in between) is waited out before the jobs start: the estimate had
    left it out (1.65 s estimated, 6.7 s taken), and a delay of three years had passed --max-hours."""
    cases = cases_of(SWEEP)
    delayed = [replace(c, workload=replace(c.workload, fio_options=(*c.workload.fio_options, ("startdelay",
                                                                                              "2-5s"))))
               for c in cases]
    assert estimate(delayed, 3).seconds == pytest.approx(estimate(cases, 3).seconds + 18 * 3 * 5.0)


def test_estimate_layout_is_the_largest_working_set_per_target() -> None:
    text = textwrap.dedent(
        """\
        name: two
        targets:
          a: {kind: path, path: ./a, size: 256MiB}
          b: {kind: path, path: ./b, size: 64MiB}
        workload:
          rw: randread
          numjobs: [1, 2]
          runtime: [1s, 4s]
          ramp: 0s
        """
    )
    cases = cases_of(text)
    assert len(cases) == 8
    est = estimate(cases, 2)
    layout = 2 * 256 * MIB + 2 * 64 * MIB  # numjobs 2 -> two files per target
    runtime_sum = 2 * 2 * (1 + 4) + 8 * 0.6  # targets x numjobs x runtimes, plus start-up per case
    assert est.layout_bytes == layout
    assert est.seconds == pytest.approx(runtime_sum * 2 + layout / LAYOUT_SPEED)
    assert est.repetitions == 16


def test_estimate_layout_counts_every_client_and_rbd_image() -> None:
    text = textwrap.dedent(
        """\
        name: many
        targets:
          files: {kind: path, path: /srv/bench, size: 16MiB}
          rbd: {kind: rbd, size: 64MiB}
        workload:
          rw: randread
          numjobs: 2
          runtime: 1s
        clients: [1, 4]
        hosts: {servers: [a, b, c, d]}
        """
    )
    est = estimate(cases_of(text), 1)
    assert est.layout_bytes == 16 * MIB * 2 * 4 + 64 * MIB * 4  # files per job and client; an image per client


def test_estimate_block_targets_need_no_layout_and_count_destructive_cases() -> None:
    text = textwrap.dedent(
        """\
        name: raw
        targets:
          dev: {kind: block, device: /dev/loop0, destructive: true}
        workload:
          rw: [randread, randwrite, trim]
          runtime: 1s
        """
    )
    est = estimate(cases_of(text), 1)
    assert est.layout_bytes == 0
    assert est.destructive_cases == 2
    assert est.seconds == pytest.approx(3 * (1 + 0 + 0.6))


# ---- units ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4k", 4096),
        ("4K", 4096),
        ("4KiB", 4096),
        ("10GB", 10 * 10**9),
        ("10 GB", 10 * 10**9),
        ("4kB", 4000),
        ("4KB", 4000),
        ("3MB", 3 * 10**6),
        ("2TB", 2 * 10**12),
        ("10GiB", 10 * 2**30),
        ("10gib", 10 * 2**30),
        ("10G", 10 * 2**30),
        ("64KiB", 64 * KIB),
        ("1m", MIB),
        ("256MiB", 256 * MIB),
        ("2g", 2 * 1024 * MIB),
        ("1.5k", 1536),
        ("512", 512),
        (" 8 k ", 8192),
        (512, 512),
        (0, 0),
    ],
)
def test_parse_size_bytes(text: object, expected: int) -> None:
    assert parse_size_bytes(text) == expected


@pytest.mark.parametrize("text", ["4kk", "k", "-4k", "1.1k", "4 MiBs", "", True, None, 1.5, -1])
def test_parse_size_bytes_refuses(text: object) -> None:
    with pytest.raises(ValueError):
        parse_size_bytes(text)


@pytest.mark.parametrize(
    ("text", "hint"),
    [("10 gb", "write 10GiB (2^30 bytes a GiB) or 10GB (10^9 bytes a GB)"),
     ("10gb", "write 10GiB (2^30 bytes a GiB) or 10GB (10^9 bytes a GB)"),
     ("256mb", "write 256MiB (2^20 bytes a MiB) or 256MB (10^6 bytes a MB)"),
     ("4kb", "write 4KiB (2^10 bytes a KiB) or 4kB (10^3 bytes a kB)"),
     ("1Gb", "write 1GiB (2^30 bytes a GiB) or 1GB (10^9 bytes a GB)")],
)
def test_parse_size_bytes_refuses_an_ambiguous_unit_with_both_readings(text: str, hint: str) -> None:
    """``10 gb`` was silently 10GiB: a lower-case unit could mean either, so it is refused with both spellings."""
    with pytest.raises(ValueError, match="ambiguous size") as err:
        parse_size_bytes(text)
    assert hint in str(err.value)


def test_fio_sizes_keep_fios_meaning() -> None:
    """What fio read from a job file (an imported output) keeps fio's kb_base=1024 meaning: 4KB is 4096 there."""
    assert parse_fio_size_bytes("4KB") == 4096
    assert parse_fio_size_bytes("4kb") == 4096
    assert parse_fio_size_bytes("1g") == 2**30


@pytest.mark.parametrize(
    ("text", "expected"),
    [("5s", 5.0), ("500ms", 0.5), ("2m", 120.0), ("1h", 3600.0), ("250us", 0.00025), ("3", 3.0), (7, 7.0),
     (1.5, 1.5), ("1.5s", 1.5), ("10S", 10.0), ("30sec", 30.0), ("2min", 120.0), ("500msec", 0.5),
     ("1d", 86400.0)],  # fio's own spellings too
)
def test_parse_duration_s(text: object, expected: float) -> None:
    assert parse_duration_s(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["5 minutes", "s", "-1s", "1w", "", False, None, -2])
def test_parse_duration_s_refuses(text: object) -> None:
    with pytest.raises(ValueError):
        parse_duration_s(text)


@pytest.mark.parametrize(
    ("n", "expected"),
    [(0, "0B"), (512, "512B"), (4096, "4KiB"), (1536, "1.5KiB"), (1500, "1.46KiB"), (MIB, "1MiB"),
     (256 * MIB, "256MiB"), (1024 * MIB, "1GiB"), (150 * KIB + 512, "150KiB")],
)
def test_format_bytes(n: int, expected: str) -> None:
    assert format_bytes(n) == expected


@pytest.mark.parametrize(
    ("n", "expected"),
    [(512, "512"), (4096, "4k"), (6144, "6k"), (1536, "1536"), (MIB, "1m"), (3 * MIB, "3m"),
     (1024 * MIB, "1g"), (MIB + 4096, "1028k")],
)
def test_format_block_size(n: int, expected: str) -> None:
    assert format_block_size(n) == expected
    assert parse_size_bytes(expected) == n  # round trip: what fio reads back is the same size


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [(0, "0s"), (5, "5s"), (3.5, "3.5s"), (59, "59s"), (60, "1m00s"), (75, "1m15s"), (4000, "1h06m40s")],
)
def test_format_duration(seconds: float, expected: str) -> None:
    assert format_duration(seconds) == expected


@pytest.mark.parametrize(
    ("ns", "expected"),
    [(None, "-"), (850, "850ns"), (12_345, "12.3µs"), (4_560_000, "4.56ms"), (1_200_000_000, "1.2s"),
     (999_499_999, "999ms"), (999_600_000, "1s"), (999_700, "1ms"), (999.7, "1µs")],  # never "1e+03ms"
)
def test_format_latency_ns(ns: float | None, expected: str) -> None:
    assert format_latency_ns(ns) == expected


def test_plan_states_the_design_of_each_swept_lab_setting() -> None:
    from storbench.schedule import estimate

    text = textwrap.dedent("""\
        name: designs
        targets:
          rbd: {kind: rbd, pool: bench, image: img, size: 64MiB}
        workload: {rw: randwrite}
        lab:
          ceph: {osds: [3, 4], pool_size: [2, 3], objectstore: bluestore}
        """)
    designs = estimate(cases_of(text), 3).lab_designs
    assert any(d.startswith("pool_size: interleaved on one cluster") for d in designs)
    assert any(d.startswith("osds: blocked") for d in designs)
    assert not any("objectstore" in d for d in designs)  # not swept


def test_plan_says_the_design_and_counts_the_restarts_of_the_order_the_run_takes() -> None:
    """order: sequential with a cache_size sweep: `plan` had said "interleaved on one cluster ... A B B A" (the run
    blocks the values in time) and counted the restarts of the interleaved order (14) for the 1 the run makes."""
    from storbench.schedule import OSD_RESTART_S, estimate

    text = textwrap.dedent("""\
        name: orders
        targets:
          rbd: {kind: rbd, pool: bench, image: img, size: 64MiB}
        workload: {rw: randwrite, runtime: 1s}
        lab:
          ceph: {cache_size: [64MiB, 1GiB]}
        """)
    cases = cases_of(text)
    interleaved = estimate(cases, 10)
    sequential = estimate(cases, 10, order="sequential")
    assert interleaved.lab_designs[0].startswith("cache_size: interleaved on one cluster")
    assert sequential.lab_designs[0].startswith("cache_size: blocked in time on one cluster")
    assert "confounded with time" in sequential.lab_designs[0] and "A B B A" not in sequential.lab_designs[0]
    assert "in random order" in estimate(cases, 10, order="shuffled", seed=1).lab_designs[0]
    # 10 interleaved rounds of two option blocks turn 10 times (A B, B A, ...); sequential once
    assert interleaved.seconds - sequential.seconds == pytest.approx((10 - 1) * OSD_RESTART_S)


def test_the_eta_counts_a_precondition_once_per_image_as_the_run_writes_it() -> None:
    """A 10 min precondition of an rbd image with osd_recovery_sleep swept over 3 values on one cluster had been
    counted 3 times (once per lab point); the run writes the image once. A pool_size sweep is an image per pool."""
    from storbench.config import load_plan_text
    from storbench.schedule import preconditions_seconds

    def seconds(lab: str) -> float:
        loaded = load_plan_text(textwrap.dedent(f"""\
            name: pre
            targets:
              rbd: {{kind: rbd, pool: bench, image: img, size: 64MiB,
                     precondition: {{workload: randwrite 4k, for: 10m}}}}
            workload: {{rw: randwrite, runtime: 1s}}
            lab: {{ceph: {lab}}}
            """), "pre.yaml")
        return preconditions_seconds(loaded.config, expand(loaded), 3)

    assert seconds("{config: {osd_recovery_sleep: [0, 0.05, 0.1]}}") == pytest.approx(600.0)
    assert seconds("{pool_size: [2, 3]}") == pytest.approx(1200.0)


def test_create_and_delete_have_no_file_size_of_their_own() -> None:
    """create makes empty files and delete removes empty ones: a file_size sweep had doubled their cases (the same
    measurement, other ids); stat's file size stays its own."""
    loaded = load_plan_text(textwrap.dedent("""\
        name: m
        targets:
          t: {kind: path, path: /tmp/m, size: 1MiB}
        workload: {rw: [create, stat, delete], file_size: [4k, 8k], numjobs: [1, 4]}
        """), "m.yaml")
    cases = expand(loaded)
    shapes = sorted((c.workload.rw, c.workload.file_size_bytes, c.workload.numjobs) for c in cases)
    assert shapes == [("create", 4096, 1), ("create", 4096, 4), ("delete", 4096, 1), ("delete", 4096, 4),
                      *[("stat", size, jobs) for size in (4096, 8192) for jobs in (1, 4)]]
    # a plan's overwrite has fio write a delete's files out to file_size: then it is the delete's own
    written = load_plan_text(textwrap.dedent("""\
        name: m
        targets:
          t: {kind: path, path: /tmp/m, size: 1MiB}
        workload: {rw: delete, file_size: [4k, 8k], fio: {overwrite: 1}}
        """), "m.yaml")
    assert sorted(c.workload.file_size_bytes for c in expand(written)) == [4096, 8192]
    assert len({c.case_id for c in cases}) == len(cases)
