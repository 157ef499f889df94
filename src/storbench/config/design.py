"""A plan's design as a run stores it (``plan_design``: expectations, steady-state rule, stopping rule and its
comparison, bring-up mode, planned repetitions), and what changed in a sequential design's stopping rule
(`repeat: {min, max, until}` with the plan's `compare`) between two versions of a run's plan. Its error rates hold
only for the rule fixed before the data were seen: a resume that changes it is refused unless asked for, and the
answer is then marked. Pure."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from storbench.config.repeat import RepeatConfig, ci_stop_confidence
from storbench.config.schema import PlanConfig, repeat_bounds
from storbench.run_design import DesignQuestion, RunDesign, SteadyDesign, StoppingRule, TargetExpectation

__all__ = ["check_writes_blocks", "condition_changes", "design_changes", "plan_design", "run_conditions",
           "stopping_rule_fields"]


def plan_design(config: PlanConfig, case_count: int | None) -> RunDesign:
    """What ``config`` asks of a run; ``case_count``: how many cases the plan expands to (None: unknown, so no
    planned repetitions)."""
    repeat = config.repeat
    compare = config.compare
    steady = config.steady_state
    low, high = repeat_bounds(config)
    decides = config.search is not None or steady is not None or low != high
    ceph = config.lab.ceph if config.lab is not None else None
    return RunDesign(
        repeat=repeat if isinstance(repeat, int) else None,
        stopping=StoppingRule(min_rounds=repeat.min, max_rounds=repeat.max, until=repeat.until,
                              ci_pct=repeat.ci_pct,
                              ci_confidence=None if repeat.ci_pct is None else ci_stop_confidence(repeat.ci_pct))
        if isinstance(repeat, RepeatConfig) else None,
        compare=None if compare is None else DesignQuestion(
            baseline=compare.baseline, candidate=compare.candidate, metrics=tuple(compare.metrics),
            margin=compare.margin),
        steady=None if steady is None else SteadyDesign(
            metric=steady.metric, window=steady.window, range_fraction=steady.range, slope_fraction=steady.slope,
            max_rounds=steady.max_rounds, confirm=steady.confirm),
        expectations=tuple(TargetExpectation(target=name, iops=target.expect.iops, bw_bytes_per_s=target.expect.bw)
                           for name, target in config.targets.items()
                           if target.expect is not None
                           and (target.expect.iops is not None or target.expect.bw is not None)),
        bring_up=ceph.bring_up if ceph is not None else "once",
        planned_repetitions=None if decides or case_count is None else case_count * high,
        conditions=run_conditions(config),
    )


def run_conditions(config: PlanConfig) -> tuple[tuple[str, str], ...]:
    """What a plan's repetitions run under besides their case, each section as canonical JSON: its faults, the
    checking writer, the client hosts, the targets' preconditions, the Ceph lab's bring-up (a cluster per round or
    one: what `compare` says of the run's design) (none of them in a case id)."""
    preconditions = {name: pre.model_dump(mode="json") for name, target in config.targets.items()
                     if (pre := getattr(target, "precondition", None)) is not None}
    check = config.check_writes
    sections: dict[str, Any] = {
        "faults": [fault.model_dump(mode="json") for fault in config.faults],
        # its region as the writer has it (the default follows the longest repetition: a resume adding a longer
        # runtime would change it)
        "check_writes": None if check is None else {**check.model_dump(mode="json"),
                                                    "blocks": check.region_blocks(config.workload)},
        "hosts": config.hosts.model_dump(mode="json") if config.hosts else None,
        "precondition": preconditions,
        "bring_up": config.lab.ceph.bring_up if config.lab is not None and config.lab.ceph is not None else "once",
        # the search's objective and steps: the loads left are chosen, and the answer judged, against it
        "search": config.search.model_dump(mode="json") if config.search is not None else None,
        # and each load's repetitions, the intervals it reads (a section of its own: a run stored before it was
        # recorded resumes as it did)
        "search_repeat": config.repeat if config.search is not None and isinstance(config.repeat, int) else None,
    }
    return tuple((name, json.dumps(value, sort_keys=True)) for name, value in sections.items())


def condition_changes(before: RunDesign, after: RunDesign, unmeasured: Collection[str] = ()) -> list[str]:
    """The sections of ``run_conditions`` that differ (none when either was not recorded). A checking writer
    stored with no region (a run stored between `blocks` becoming optional and its region being recorded) is
    taken to have had the region it has now. ``unmeasured``: targets none of whose repetitions is stored, whose
    preconditions a resume may add or change (a target added with a precondition of its own had been refused)."""
    if before.conditions is None or after.conditions is None:
        return []
    old = dict(before.conditions)
    new = dict(after.conditions)
    if unmeasured:
        for conditions in (old, new):
            if (text := conditions.get("precondition")) is not None:
                kept = {k: v for k, v in json.loads(text).items() if k not in unmeasured}
                conditions["precondition"] = json.dumps(kept, sort_keys=True)
    if (stored := _check_writes(before)) is not None and stored.get("blocks") is None \
            and (now := _check_writes(after)) is not None:
        old["check_writes"] = json.dumps({**stored, "blocks": now.get("blocks")}, sort_keys=True)
    return [name for name, text in new.items() if old.get(name, text) != text]


def _check_writes(design: RunDesign) -> dict[str, Any] | None:
    found = json.loads(dict(design.conditions or ()).get("check_writes") or "null")
    return found if isinstance(found, dict) else None


def check_writes_blocks(design: RunDesign) -> int | None:
    """The region, in blocks, of the checking writer a run's repetitions ran beside (None: none, or not
    recorded)."""
    blocks = (_check_writes(design) or {}).get("blocks")
    return blocks if type(blocks) is int else None


def _pct(value: float | None) -> str:
    return "none" if value is None else f"{100 * value:g}%"


def stopping_rule_fields(design: RunDesign) -> dict[str, str] | None:
    """The fields of a design's stopping rule as text (None: the plan repeats a fixed number of times and has no
    such rule)."""
    stopping = design.stopping
    if stopping is None:
        return None
    rule = {"min": str(stopping.min_rounds), "max": str(stopping.max_rounds), "until": stopping.until}
    compare = design.compare
    if stopping.until != "decided":  # `until: ci`: the comparison is no part of the rule
        return rule
    rule |= {"baseline": compare.baseline if compare else "none", "candidate": compare.candidate if compare else "none",
             "metrics": ", ".join(compare.metrics) if compare else "none",
             "margin": _pct(compare.margin if compare else None)}
    return rule


def _steady_fields(design: RunDesign) -> dict[str, str] | None:
    """The steady-state rule's fields a resume may not change (its margins, window, metric and rounds after the
    window); `max_rounds` it may raise: the points not yet steady go on, judged by the same rule."""
    steady = design.steady
    if steady is None:
        return None
    return {"metric": steady.metric, "window": str(steady.window), "range": _pct(steady.range_fraction),
            "slope": _pct(steady.slope_fraction), "confirm": str(steady.confirm)}


def _lowered_max_rounds(before: RunDesign, after: RunDesign) -> list[str]:
    """`steady_state.max_rounds` lowered: the points' windows are judged within it, so a point found steady at a
    later round would be judged again as not steady, on rounds already measured (raised, it is allowed)."""
    old, new = before.steady, after.steady
    if old is None or new is None or new.max_rounds >= old.max_rounds:
        return []
    return [f"steady_state.max_rounds {old.max_rounds} -> {new.max_rounds}"]


def design_changes(before: RunDesign, after: RunDesign) -> list[str]:
    """What changed in the stopping rule (and the steady-state rule, which says when a point's rounds stop) from
    ``before`` to ``after``, one item a field ("margin 5% -> 10%", "steady_state.range 10% -> 40%"); empty when
    neither has such a rule or both have the same one."""
    steady = _steady_fields(before), _steady_fields(after)
    return [*_field_changes("", stopping_rule_fields(before), stopping_rule_fields(after),
                            f"repeat {_repeat_text(before)} -> {_repeat_text(after)}"),
            *_field_changes("steady_state.", *steady, f"steady_state {'none' if steady[0] is None else 'set'} -> "
                            f"{'none' if steady[1] is None else 'set'}"),
            *_lowered_max_rounds(before, after)]


def _field_changes(prefix: str, old: dict[str, str] | None, new: dict[str, str] | None, whole: str) -> list[str]:
    """Each field that changed ("<prefix>margin 5% -> 10%"), or ``whole`` when the rule came or went."""
    if old == new:
        return []
    if old is None or new is None:
        return [whole]
    # a field only one rule has (`until: decided`'s comparison) is said by the field that chose the rule
    return [f"{prefix}{key} {old[key]} -> {new[key]}" for key in old if key in new and old[key] != new[key]]


def _repeat_text(design: RunDesign) -> str:
    stopping = design.stopping
    if stopping is not None:
        return f"{{min: {stopping.min_rounds}, max: {stopping.max_rounds}, until: {stopping.until}}}"
    return str(design.repeat)
