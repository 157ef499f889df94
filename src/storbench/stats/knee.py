"""Saturation: the knee of IOPS against offered load, and the best IOPS within a latency objective."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from storbench.model.objective import LatencyObjective
from storbench.stats.bottleneck import LATENCY_GROWTH
from storbench.stats.curve import LOAD_AXES, CurveKey, LoadAxis, axis_value, outstanding_ios
from storbench.stats.estimate import Estimate
from storbench.stats.point_summary import PointSummary
from storbench.stats.slo import verdict
from storbench.stats.trend import FLAT_MARGIN, Change, judge_change, plateau, round_pairs

# Whether more load raised IOPS is `stats.trend.judge_change`'s answer, the same for every section.
# Latency "keeps growing" beyond the knee when the highest load's mean latency is at least this many times the
# knee's (the capped verdict's figure too).
MIN_LATENCY_GROWTH = LATENCY_GROWTH


class KneeKind(Enum):
    """What the sweep says about saturation (in words: `report.saturation_tables.knee_text`)."""

    WITHIN_SWEEP = "within the sweep"  # IOPS rose with load, then stopped while latency grew: the knee is inside
    AT_LOWEST_LOAD = "at the lowest load"  # IOPS flat from the first point while latency grew: already saturated
    STILL_RISING = "still rising"  # more load raised IOPS up to the highest load: no knee within the sweep
    LATENCY_FLAT = "latency flat"  # IOPS stopped rising, latency shown not to grow: the load did not reach the storage
    LATENCY_SHORT = "latency short"  # IOPS stopped rising, latency grew less than a knee's by its mean, not shown flat
    UNDECIDED = "undecided"  # nothing shown to rise further, nor shown flat: the repetitions cannot tell
    TOO_FEW_POINTS = "too few points"  # fewer than 2 load levels


@dataclass(frozen=True)
class Knee:
    """Where IOPS stops rising; for ``UNDECIDED``, the change that could not be told (``pending``, from the point
    at ``pending_from`` to the one at ``pending_to``)."""

    index: int | None
    kind: KneeKind
    pending: Change | None = None
    pending_from: int | None = None
    pending_to: int | None = None
    latency_growth: Change | None = None  # LATENCY_FLAT or LATENCY_SHORT: the mean latency at the top against k's


@dataclass(frozen=True)
class CurvePoint:
    load: int
    outstanding_ios: int
    iops: float
    iops_ci_half: float | None
    lat_mean_ns: float | None
    lat_p99_ns: float | None
    point: PointSummary


@dataclass(frozen=True)
class Curve:
    """IOPS and latency against one load axis, everything else fixed (in words: `report.labels.curve_label`).

    ``knee_kind`` says why there is (or is not) a knee; left out, it follows from ``knee_index``."""

    axis: str
    points: tuple[CurvePoint, ...]
    knee_index: int | None
    knee_kind: KneeKind | None = None
    pending: Knee | None = None  # for an undecided curve: the change that could not be told; LATENCY_SHORT: its growth

    def __post_init__(self) -> None:
        if self.knee_kind is None:
            derived = (KneeKind.STILL_RISING if self.knee_index is None
                       else KneeKind.AT_LOWEST_LOAD if self.knee_index == 0 else KneeKind.WITHIN_SWEEP)
            object.__setattr__(self, "knee_kind", derived)
        elif (self.knee_index is None) != (self.knee_kind not in (KneeKind.WITHIN_SWEEP, KneeKind.AT_LOWEST_LOAD)):
            raise ValueError(f"knee index {self.knee_index} does not go with {self.knee_kind}")

    @property
    def knee(self) -> CurvePoint | None:
        return None if self.knee_index is None else self.points[self.knee_index]

    @property
    def saturated_at_lowest_load(self) -> bool:
        """IOPS already flat from the first load level while latency grew: the knee is the first point."""
        return self.knee_kind is KneeKind.AT_LOWEST_LOAD


def locate_knee(iops: Sequence[Estimate], latency: Sequence[Estimate | None] | None = None) -> Knee:
    """The saturation knee of a curve whose points are in increasing load.

    The knee is the first point k against which every higher load is shown not to raise IOPS (each higher point
    judged flat or falling against k by `stats.trend.judge_change`: the change's 90 % interval inside +-10 %, or
    below no change), provided the mean latency at the highest load is at least 1.5 times k's (far beyond the
    run-to-run noise of latency, and what Little's law gives for +50 % outstanding I/O at flat IOPS). Comparing
    k with every higher load, not only with its neighbour, means a noisy dip cannot end a rise early, and a slow
    creep counts once it adds up.

    - k = 0: IOPS flat from the first point: ``AT_LOWEST_LOAD`` (already saturated at the lowest load).
    - 0 < k: ``WITHIN_SWEEP``.
    - every point but the last is out-raised by some higher load: ``STILL_RISING`` (no knee within the sweep).
    - at the first point no higher load raises, but some change is neither a rise nor shown flat: ``UNDECIDED``
      (no knee is claimed; the knee says which change and how many repetitions would tell).
    - IOPS stopped rising at k and latency is shown not to grow (the 90 % interval of its change at most +10 %):
      ``LATENCY_FLAT``, no knee (more load did not reach the storage: a sync engine ignores iodepth, fio's rate
      limit holds I/Os back).
    - IOPS stopped rising at k, latency grew less than 1.5 times by its mean but is not shown flat:
      ``LATENCY_SHORT``, no knee claimed either way (``latency_growth`` says by how much it grew).
    Missing latency (``latency`` None, or None at k or the last point) leaves the IOPS rule to decide alone.
    """
    if len(iops) < 2 or (latency is not None and len(latency) != len(iops)):
        return Knee(None, KneeKind.TOO_FEW_POINTS)
    found = plateau(iops)
    if found.pending is not None:
        return Knee(None, KneeKind.UNDECIDED, found.pending, found.pending_from, found.pending_to)
    k = found.start
    if k is None:
        return Knee(None, KneeKind.STILL_RISING)
    at_knee, at_end = (latency[k], latency[-1]) if latency is not None else (None, None)
    if at_knee is not None and at_end is not None and at_end.mean < MIN_LATENCY_GROWTH * at_knee.mean:
        # "did not grow" only where shown: the 90 % interval of the change (judge_change's) at most +10 %
        grown = judge_change(at_knee, at_end, round_pairs(at_knee, at_end))  # paired where they alternated
        flat = grown.high is not None and grown.high <= 1 + FLAT_MARGIN
        return Knee(None, KneeKind.LATENCY_FLAT if flat else KneeKind.LATENCY_SHORT, latency_growth=grown)
    return Knee(k, KneeKind.AT_LOWEST_LOAD if k == 0 else KneeKind.WITHIN_SWEEP)


def _metric(point: PointSummary, field: str) -> Estimate:
    value = point.metric(field)
    assert value is not None
    return value


def _load_axis(axis: str) -> LoadAxis:
    for load_axis in LOAD_AXES:
        if axis == load_axis:
            return load_axis
    raise ValueError(f"not a load axis: {axis}")


def curves(points: Sequence[PointSummary], axis: str, *, pool_runs: bool = True) -> list[Curve]:
    """One curve per group of points that differ only in ``axis`` (at least 2 load levels): the same curve key
    (`stats.curve`), runs pooled (a sweep measured over several runs is one curve) unless not ``pool_runs``: then
    a curve per run, for points summarised per run (two points of one case in one curve otherwise)."""
    load_axis = _load_axis(axis)
    groups: dict[CurveKey, list[PointSummary]] = {}
    for point in points:
        if point.metric("iops") is not None:
            groups.setdefault(point.curve_key(load_axis, pool_runs=pool_runs), []).append(point)
    out = []
    for members in groups.values():
        members = sorted(members, key=lambda p: axis_value(p.case, load_axis))
        if len({axis_value(p.case, load_axis) for p in members}) < 2:
            continue
        curve_points = []
        for p in members:
            iops = p.metric("iops")
            assert iops is not None
            mean = p.metric("lat_mean_ns")
            p99 = p.metric("lat_p99_ns")
            curve_points.append(CurvePoint(
                load=axis_value(p.case, load_axis), outstanding_ios=outstanding_ios(p.case), iops=iops.mean,
                iops_ci_half=iops.half_width, lat_mean_ns=mean.mean if mean else None,
                lat_p99_ns=p99.mean if p99 else None, point=p))
        knee = locate_knee([_metric(c.point, "iops") for c in curve_points],
                           [c.point.metric("lat_mean_ns") for c in curve_points])
        out.append(Curve(axis=axis, points=tuple(curve_points), knee_index=knee.index, knee_kind=knee.kind,
                         pending=knee if knee.kind in (KneeKind.UNDECIDED, KneeKind.LATENCY_SHORT) else None))
    return out


def best_under_objective(curve: Curve, objective: LatencyObjective, curves: Sequence[Curve] = ()
                         ) -> CurvePoint | None:
    """The highest-IOPS point that meets the objective: its latency figure's whole interval at most the limit, or
    without an interval its mean (`Verdict.MEAN_MEETS`: say so where it is shown), the search's rule
    (`stats.slo`); a point whose interval straddles the limit does not. A mixed workload's point meets it only when
    every direction of its case does (the other directions' curves among ``curves``), as the search judges: the
    read curve had named a load whose writes failed it. A point with a failed repetition does not meet it either,
    as the search judges (`stats.search._judged`): the repetitions left are the overload's survivors."""
    sides: dict[tuple[str, tuple[int, ...]], list[PointSummary]] = {}
    for one in curves:
        for c in one.points:
            sides.setdefault((c.point.case_id, c.point.run_ids), []).append(c.point)
    meeting = [c for c in curve.points if all(
        p.repetitions_ok == p.repetitions_total and verdict(p.metric(objective.field), objective).met
        for p in (sides.get((c.point.case_id, c.point.run_ids), [c.point]) if curves else [c.point]))]
    return max(meeting, key=lambda c: c.iops, default=None)
