"""A sequential design's stopping rule (`repeat: {min, max, until}` with the plan's `compare`) and what changed in
it between two versions of a run's plan. Its error rates hold only for the rule fixed before the data were seen:
a resume that changes it is refused unless asked for, and the answer is then marked. Pure."""

from __future__ import annotations

from storbench.config.schema import PlanConfig, RepeatConfig


def _pct(value: float | None) -> str:
    return "none" if value is None else f"{100 * value:g}%"


def stopping_rule_fields(config: PlanConfig) -> dict[str, str] | None:
    """The fields of a plan's stopping rule as text (None: the plan repeats a fixed number of times and has no
    such rule)."""
    if not isinstance(config.repeat, RepeatConfig):
        return None
    rule = {"min": str(config.repeat.min), "max": str(config.repeat.max), "until": config.repeat.until}
    compare = config.compare
    rule |= {"baseline": compare.baseline if compare else "none", "candidate": compare.candidate if compare else "none",
             "metrics": ", ".join(compare.metrics) if compare else "none",
             "margin": _pct(compare.margin if compare else None)}
    return rule


def design_changes(before: PlanConfig, after: PlanConfig) -> list[str]:
    """What changed in the stopping rule from ``before`` to ``after``, one item a field ("margin 5% -> 10%");
    empty when neither has a stopping rule or both have the same one."""
    old, new = stopping_rule_fields(before), stopping_rule_fields(after)
    if old == new:
        return []
    if old is None or new is None:
        return [f"repeat {_repeat_text(before)} -> {_repeat_text(after)}"]
    return [f"{key} {old[key]} -> {new[key]}" for key in old if old[key] != new[key]]


def _repeat_text(config: PlanConfig) -> str:
    repeat = config.repeat
    if isinstance(repeat, RepeatConfig):
        return f"{{min: {repeat.min}, max: {repeat.max}, until: {repeat.until}}}"
    return str(repeat)
