"""What each stored run asked, from its stored design (``RunInfo.design``), never its plan text read again: its
steady-state rule, sequential question, expectations, interval levels, bring-up mode and planned repetitions.
Pure: the store reads the runs (`selection.select`); these functions only read them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from storbench.config import CI_STOP_CONFIDENCE, design_changes, plan_design
from storbench.model import Expectation, RunInfo
from storbench.run_design import DesignQuestion, RunDesign
from storbench.stats.selectors import parse_selector
from storbench.stats.sequential import SequentialPlan
from storbench.stats.steady import SteadyRule

if TYPE_CHECKING:  # heavy modules (scipy) load only for the commands that use them
    from storbench.config import PlanConfig
    from storbench.stats.selectors import Selector


def steady_rule(config: PlanConfig) -> SteadyRule | None:
    """A plan's `steady_state` as the rule (None: the plan measures a fixed number of repetitions)."""

    return design_steady_rule(plan_design(config, None))


def design_steady_rule(design: RunDesign) -> SteadyRule | None:
    """A design's steady-state rule (None: its plan measures a fixed number of repetitions)."""

    steady = design.steady
    if steady is None:
        return None
    return SteadyRule(metric=steady.metric, window=steady.window, range_fraction=steady.range_fraction,
                      slope_fraction=steady.slope_fraction, max_rounds=steady.max_rounds, confirm=steady.confirm)


def planned_repetitions(run: RunInfo) -> int | None:
    """How many repetitions a run's current plan asks for (from its stored design); None when the plan decides as
    it goes (a search, `repeat: {until: ...}`, steady state) or no storbench read a plan in it."""
    return run.design.planned_repetitions


def run_design_changes(versions: Sequence[tuple[int, RunDesign]]) -> list[str]:
    """How a run's stopping rule changed across its plan versions (``Store.design_versions``), each field's first
    and last value ("margin 5% -> 10%"); empty when it never changed (or a version has no design). Pure."""

    designs = [design for _, design in versions]
    if len(designs) < 2 or not all(design.from_plan for design in designs):
        return []
    if any(design_changes(designs[0], later) for later in designs[1:]):
        return design_changes(designs[0], designs[-1]) or ["changed, then changed back"]
    return []


def sequential_plan(design: RunDesign) -> SequentialPlan | None:
    """The looks of a run repeated `until: decided` (None for any other run)."""
    stopping = design.stopping
    if stopping is None or stopping.until != "decided":
        return None
    return SequentialPlan(min_rounds=stopping.min_rounds, max_rounds=stopping.max_rounds,
                          margin=design.compare.margin if design.compare else None)


def interleaved_runs(runs: Sequence[RunInfo]) -> frozenset[int]:
    """Runs whose repetitions alternated between cases round by round (order: interleaved): repetition i of each of
    their cases ran in round i, so their cases pair up (`compare`, and the curves through the observations'
    ``alternated``)."""
    return frozenset(r.run_id for r in runs if r.run_order == "interleaved")


def shuffled_runs(runs: Sequence[RunInfo]) -> frozenset[int]:
    """Runs whose repetitions ran in random order (order: shuffled): not blocked, not paired."""
    return frozenset(r.run_id for r in runs if r.run_order == "shuffled")


def expectations(runs: Sequence[RunInfo]) -> dict[tuple[int, str], Expectation]:
    """(run, target name) -> what the target was declared as (`expect:` in the run's stored design)."""
    return {(run.run_id, e.target): Expectation(iops=e.iops, bw_bytes_per_s=e.bw_bytes_per_s)
            for run in runs for e in run.design.expectations}


def interval_levels(runs: Sequence[RunInfo]) -> dict[int, float]:
    """Runs repeated `until: "ci <= N%"` (whether they stopped early or reached `max`), with the t level their
    intervals are shown at (the level stored with its design, `config.ci_stop_confidence`; 97.5 % for a run
    stored before it was): the rule judged that interval, and it is the one that covers 95 % after such a stop
    (a plain 95 % interval would cover less). Other runs are not listed (95 %)."""

    return {run.run_id: run.design.stopping.ci_confidence or CI_STOP_CONFIDENCE for run in runs
            if run.design.stopping is not None and run.design.stopping.ci_pct is not None}


def bring_ups(runs: Sequence[RunInfo]) -> dict[int, str]:
    """Each run's `lab.ceph.bring_up`, from its stored design ("once" when it has no Ceph lab, or no design): whether
    the sides of a setting that needs a cluster per value alternated, and how."""
    return {run.run_id: run.design.bring_up for run in runs}


@dataclass(frozen=True)
class AdaptiveQuestion:
    """What a run with `repeat: {until: decided}` asked: its plan's `compare` (selectors, metrics) and looks."""

    run_id: int
    baseline: Selector
    candidate: Selector
    metrics: tuple[str, ...]
    plan: SequentialPlan
    bring_up: str = "once"  # lab.ceph.bring_up


def adaptive_questions(runs: Sequence[RunInfo]) -> list[AdaptiveQuestion]:
    """The runs whose rounds stopped when their comparison was decided, with that comparison, from their stored
    designs (selectors that no longer parse are left out). Pure."""

    found = []
    for run in runs:
        compare, plan = run.design.compare, sequential_plan(run.design)
        if compare is None or plan is None:
            continue
        try:
            baseline, candidate = parse_selector(compare.baseline), parse_selector(compare.candidate)
        except ValueError:
            continue
        found.append(AdaptiveQuestion(run.run_id, baseline, candidate, compare.metrics, plan,
                                      bring_up=run.design.bring_up))
    return found


def asked_comparison(runs: Sequence[RunInfo]) -> DesignQuestion | None:
    """The comparison the runs' plans name (`compare:`), when every one of them names it and names the same sides;
    None otherwise (no run names one, or they differ, or some name none). `storbench compare` and `report` take it
    when given no sides; a run ends with it. Pure."""
    asked = {(r.design.compare.baseline, r.design.compare.candidate) if r.design.compare else None: r.design.compare
             for r in runs}
    return next(iter(asked.values())) if len(asked) == 1 else None
