"""A run's design: what its plan asked of the measurements, fixed when the run is created (or resumed) and stored
with it as versioned JSON, so readers never parse the plan's YAML again: the targets' expectations, the steady-state
rule, the stopping rule with its comparison (the sequential question), the bring-up mode and how many repetitions
the plan needs. The plan text stays stored as the record of what the user wrote; this is what the run was.

Pure data with no storbench import (``model.RunInfo`` carries one); ``config.design.plan_design`` makes one from a
plan, and the store keeps it in ``runs.design_json`` and ``plan_versions.design_json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from storbench.units import current_metric_name

# The JSON shape of a design: {"schema": 1, ...design_to_json's fields}. A new shape gets a new number and a
# migration (store/migrations.py) that converts the stored ones.
DESIGN_SCHEMA = 1


@dataclass(frozen=True)
class TargetExpectation:
    """What one target was declared as (its plan's `expect:`)."""

    target: str
    iops: float | None = None
    bw_bytes_per_s: int | None = None


@dataclass(frozen=True)
class SteadyDesign:
    """A plan's `steady_state`: measure each point round by round until steady (fractions, not percent)."""

    metric: str
    window: int
    range_fraction: float
    slope_fraction: float
    max_rounds: int
    confirm: int


@dataclass(frozen=True)
class StoppingRule:
    """A plan's `repeat: {min, max, until}`: balanced rounds that stop when the answer is known."""

    min_rounds: int
    max_rounds: int
    until: str  # "decided", or "ci <= N%" as written
    ci_pct: float | None = None  # N of `until: ci <= N%`
    # the level of the interval `until: ci` judged and shows (None: a run stored before it was kept, judged at 97.5 %)
    ci_confidence: float | None = None


@dataclass(frozen=True)
class DesignQuestion:
    """A plan's `compare`: the comparison it is run to answer (selectors as written)."""

    baseline: str
    candidate: str
    metrics: tuple[str, ...]
    margin: float | None = None


@dataclass(frozen=True)
class RunDesign:
    """What a run's plan asked: ``repeat`` (a fixed count) or ``stopping`` (a rule) is set when the design comes
    from a plan; neither is for an import, or a plan no storbench could read when its design was stored."""

    repeat: int | None = None
    stopping: StoppingRule | None = None
    compare: DesignQuestion | None = None
    steady: SteadyDesign | None = None
    expectations: tuple[TargetExpectation, ...] = ()
    bring_up: str = "once"  # lab.ceph.bring_up ("once" without a Ceph lab)
    # repetitions the plan needs in all; None when it decides as it goes (search, `until`, steady state)
    planned_repetitions: int | None = None
    # what the repetitions run under besides their case (faults, check_writes, client hosts, preconditions), each
    # as canonical text: a resume may not change it. None: not recorded (a run stored before it was)
    conditions: tuple[tuple[str, str], ...] | None = None

    @property
    def from_plan(self) -> bool:
        return self.repeat is not None or self.stopping is not None


NO_DESIGN = RunDesign()


def design_to_json(design: RunDesign) -> dict[str, Any]:
    stopping, compare, steady = design.stopping, design.compare, design.steady
    return {
        "schema": DESIGN_SCHEMA,
        "repeat": design.repeat,
        "stopping": None if stopping is None else {
            "min_rounds": stopping.min_rounds, "max_rounds": stopping.max_rounds, "until": stopping.until,
            "ci_pct": stopping.ci_pct, "ci_confidence": stopping.ci_confidence},
        "compare": None if compare is None else {
            "baseline": compare.baseline, "candidate": compare.candidate, "metrics": list(compare.metrics),
            "margin": compare.margin},
        "steady": None if steady is None else {
            "metric": steady.metric, "window": steady.window, "range_fraction": steady.range_fraction,
            "slope_fraction": steady.slope_fraction, "max_rounds": steady.max_rounds, "confirm": steady.confirm},
        "expectations": [{"target": e.target, "iops": e.iops, "bw_bytes_per_s": e.bw_bytes_per_s}
                         for e in design.expectations],
        "bring_up": design.bring_up,
        "planned_repetitions": design.planned_repetitions,
        "conditions": None if design.conditions is None else [list(pair) for pair in design.conditions],
    }


def _int(raw: Any) -> int:
    if type(raw) is not int:
        raise ValueError(f"{raw!r} is not an integer")
    return raw


def _int_or_none(raw: Any) -> int | None:
    return None if raw is None else _int(raw)


def _number_or_none(raw: Any) -> float | None:
    return None if raw is None else _number(raw)


def _number(raw: Any) -> float:
    if type(raw) not in (int, float):
        raise ValueError(f"{raw!r} is not a number")
    return float(raw)


def _text(raw: Any) -> str:
    if not isinstance(raw, str):
        raise ValueError(f"{raw!r} is not a text")
    return raw


def design_from_json(raw: Any) -> RunDesign:
    """A stored design (schema 1); ValueError for any other shape (no storbench wrote it)."""
    if not isinstance(raw, dict) or raw.get("schema") != DESIGN_SCHEMA:
        raise ValueError(f"design stored in an unknown shape: {str(raw)[:80]}")
    stopping, compare, steady = raw["stopping"], raw["compare"], raw["steady"]
    return RunDesign(
        repeat=_int_or_none(raw["repeat"]),
        stopping=None if stopping is None else StoppingRule(
            min_rounds=_int(stopping["min_rounds"]), max_rounds=_int(stopping["max_rounds"]),
            until=_text(stopping["until"]), ci_pct=_number_or_none(stopping["ci_pct"]),
            ci_confidence=_number_or_none(stopping.get("ci_confidence"))),
        compare=None if compare is None else DesignQuestion(
            baseline=_text(compare["baseline"]), candidate=_text(compare["candidate"]),
            metrics=tuple(current_metric_name(_text(m)) for m in compare["metrics"]),
            margin=_number_or_none(compare["margin"])),
        steady=None if steady is None else SteadyDesign(
            metric=current_metric_name(_text(steady["metric"])), window=_int(steady["window"]),
            range_fraction=_number(steady["range_fraction"]), slope_fraction=_number(steady["slope_fraction"]),
            max_rounds=_int(steady["max_rounds"]), confirm=_int(steady["confirm"])),
        expectations=tuple(TargetExpectation(target=_text(e["target"]), iops=_number_or_none(e["iops"]),
                                             bw_bytes_per_s=_int_or_none(e["bw_bytes_per_s"]))
                           for e in raw["expectations"]),
        bring_up=_text(raw["bring_up"]),
        planned_repetitions=_int_or_none(raw["planned_repetitions"]),
        conditions=None if raw.get("conditions") is None else tuple(
            (_text(name), _text(text)) for name, text in raw["conditions"]),
    )
