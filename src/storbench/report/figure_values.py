"""What a figure draws of a point: its mean and the arms of its 95 % interval in a unit, its verdict's mark, and
its target's declared limit (`expect:`) as a line. Pure."""

from __future__ import annotations

import math
from collections.abc import Sequence

from storbench.model import Expectation
from storbench.report.figures import MIB, Mark
from storbench.stats.point_summary import PointSummary
from storbench.units import format_bytes


def half_width(point: PointSummary, field: str, scale: float = 1.0) -> float:
    estimate = point.metric(field)
    half = estimate.half_width if estimate else None
    return 0.0 if half is None or math.isnan(half) else half / scale


def below_mean(point: PointSummary, field: str, scale: float = 1.0) -> float:
    """The error bar below the mean: down to the interval's lower bound (cut at zero, see stats.estimate)."""
    estimate = point.metric(field)
    if estimate is None or estimate.ci_low is None or math.isnan(estimate.ci_low):
        return 0.0
    return (estimate.mean - estimate.ci_low) / scale


def scaled_mean(point: PointSummary, field: str, scale: float = 1.0) -> float | None:
    estimate = point.metric(field)
    return None if estimate is None else estimate.mean / scale


def _declared(expected: Expectation | None, field: str) -> float | None:
    """The declared limit in a figure's unit: IOPS for ``iops``, MiB/s for ``bw_bytes_per_s`` (None: not declared)."""
    if expected is None:
        return None
    if field == "iops":
        return expected.iops or None
    return expected.bw_bytes_per_s / MIB if expected.bw_bytes_per_s else None


def expected_marks(points: Sequence[PointSummary], field: str) -> tuple[Mark, ...]:
    """One line per declared limit among ``points``' targets (`expect:`), in the figure's unit (see
    ``_declared``), labelled with the target when the points span several targets."""
    targets = {p.target for p in points}
    limits: dict[float, dict[str, None]] = {}  # one line per value: targets declaring the same share it
    for p in points:
        value = _declared(p.expected, field)
        if value is not None:
            limits.setdefault(value, {})[p.target] = None
    marks = []
    # the figure's points are each one direction: a limit of all of them is said so where a case has several
    every = ", all directions" if any(p.case_totals for p in points) else ""
    for value, declaring in limits.items():
        shown = f"{value:,.0f} IOPS" if field == "iops" else f"{format_bytes(value * MIB)}/s"
        names = f" ({', '.join(declaring)})" if len(targets) > 1 else ""
        marks.append(Mark(value, f"expected{names}: {shown}{every}"))
    return tuple(marks)


def verdict_mark(p: PointSummary) -> str:
    """The short verdict written on a bar or point ('' when unknown)."""
    return "" if p.bottleneck.kind == "unknown" else p.bottleneck.short
