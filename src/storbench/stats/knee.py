"""Saturation: the knee of IOPS against offered load, and the best IOPS within a latency objective."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from storbench.stats.summary import PointSummary
from storbench.units import parse_duration_s

LOAD_AXES = ("iodepth", "numjobs", "clients")
# A knee must stand out: the normalised IOPS curve must rise this much above the straight line.
MIN_KNEE_PROMINENCE = 0.05


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
    """IOPS and latency against one load axis, everything else fixed (in words: `report.labels.curve_label`)."""

    axis: str
    points: tuple[CurvePoint, ...]
    knee_index: int | None

    @property
    def knee(self) -> CurvePoint | None:
        return None if self.knee_index is None else self.points[self.knee_index]


def find_knee(loads: Sequence[float], iops: Sequence[float]) -> int | None:
    """Kneedle on IOPS against log2(load): normalise both to [0, 1] and take the point furthest above the
    chord from the first to the last point. None when there are fewer than 3 points, IOPS does not rise, or
    no point stands out (still scaling: not saturated within the sweep)."""
    if len(loads) < 3 or len(loads) != len(iops):
        return None
    xs = [math.log2(x) for x in loads]
    lo_x, hi_x = min(xs), max(xs)
    lo_y, hi_y = min(iops), max(iops)
    if hi_x == lo_x or hi_y <= lo_y:
        return None
    gaps = [((y - lo_y) / (hi_y - lo_y)) - ((x - lo_x) / (hi_x - lo_x)) for x, y in zip(xs, iops, strict=True)]
    best = max(range(len(gaps)), key=lambda i: gaps[i])
    if gaps[best] < MIN_KNEE_PROMINENCE:  # includes a curve still rising at its end: no knee within the sweep
        return None
    return best


def _other_fields(point: PointSummary, axis: str) -> tuple[object, ...]:
    fields = ["target", "rw", "rwmixread", "bs_bytes", "direction", "ioengine", "direct", "runtime_s",
              "fio_options", "lab", *LOAD_AXES]
    return tuple(getattr(point, f) for f in fields if f != axis)


def curves(points: Sequence[PointSummary], axis: str) -> list[Curve]:
    """One curve per group of points that differ only in ``axis`` (at least 2 load levels)."""
    if axis not in LOAD_AXES:
        raise ValueError(f"not a load axis: {axis}")
    groups: dict[tuple[object, ...], list[PointSummary]] = {}
    for point in points:
        if point.metric("iops") is not None:
            groups.setdefault(_other_fields(point, axis), []).append(point)
    out = []
    for members in groups.values():
        members = sorted(members, key=lambda p: int(getattr(p, axis)))
        if len({getattr(p, axis) for p in members}) < 2:
            continue
        curve_points = []
        for p in members:
            iops = p.metric("iops")
            assert iops is not None
            mean = p.metric("lat_mean_ns")
            p99 = p.metric("lat_p99_ns")
            curve_points.append(CurvePoint(
                load=int(getattr(p, axis)), outstanding_ios=p.iodepth * p.numjobs * p.clients, iops=iops.mean,
                iops_ci_half=iops.half_width, lat_mean_ns=mean.mean if mean else None,
                lat_p99_ns=p99.mean if p99 else None, point=p))
        knee = find_knee([c.load for c in curve_points], [c.iops for c in curve_points])
        out.append(Curve(axis=axis, points=tuple(curve_points), knee_index=knee))
    return out


_SLO_RE = re.compile(r"^\s*(p\d+(?:\.\d+)?|mean)\s*<=\s*(\S+)\s*$")


@dataclass(frozen=True)
class LatencyObjective:
    field: str
    label: str
    limit_ns: float


def parse_slo(text: str) -> LatencyObjective:
    """``p99<=10ms``, ``p95<=500us``, ``p99.9<=20ms``, ``mean<=1ms``. ValueError on anything else."""
    match = _SLO_RE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not an objective like p99<=10ms")
    which, limit = match.groups()
    fields = {"mean": "lat_mean_ns", "p50": "lat_p50_ns", "p95": "lat_p95_ns", "p99": "lat_p99_ns",
              "p99.9": "lat_p999_ns"}
    if which not in fields:
        raise ValueError(f"{which!r}: use one of {', '.join(fields)}")
    return LatencyObjective(fields[which], which, parse_duration_s(limit) * 1e9)


def best_under_objective(curve: Curve, objective: LatencyObjective) -> CurvePoint | None:
    """The highest-IOPS point whose mean (over repetitions) latency figure meets the objective."""
    meeting = []
    for c in curve.points:
        estimate = c.point.metric(objective.field)
        if estimate is not None and estimate.mean <= objective.limit_ns:
            meeting.append(c)
    return max(meeting, key=lambda c: c.iops, default=None)
