"""Adaptive saturation search: which load values to measure so that a few points give the best IOPS within a
latency objective and the saturation knee, instead of the whole load grid. Pure: no I/O, no clock, no printing.

A shell loops: ``values = next_values(grid, measured, objective)``, measures each value (a fixed number of
repetitions, summarised into Estimates) into ``measured``, and calls again; when ``values`` is empty,
``search_answer``. Every decision is a function of ``measured`` alone: the same points give the same answer.

The rules:

1. A point MEETS the objective when its latency interval's high end (its mean when n < 2) is at most the limit,
   FAILS when the interval's low end (its mean when n < 2) is above it, and is UNCERTAIN otherwise (also when it
   has no latency figure). Uncertain counts as not meeting: it ends a bracket and is never the best point, and
   the reason says so. More repetitions are never asked for.
2. Bracketing: the lowest grid value first (not meeting there: "objective missed at the lowest load"), then
   every STEP-th grid index (the grid has two values per doubling, so about x4 load; the top of the grid is the
   last step). Stepping stops at the first step that does not meet the objective, at the first step whose IOPS
   are shown not to rise over the previous step's (`stats.trend.judge_change`: flat or falling, the knee's rule;
   a change the repetitions cannot tell keeps stepping), or at the top. Why x4 and not doubling: steps cost
   log4 of the range instead of log2, a bracket then costs 2 bisections instead of 1 (on 1..256: at most 5 + 2 + 2
   points against 9 + 1 + 1), and below the knee a x4 step adds IOPS far beyond noise, so "no gain" is a clear
   sign.
3. Refining the objective: bisect on grid indices between the highest measured meeting point and the lowest
   measured point above it, until they are grid neighbours or their IOPS are shown within ``tolerance`` of each
   other (the 90 % interval of their ratio inside 1 +- tolerance; means that are close, or points of one
   repetition, are not enough) (IOPS do not fall with load, so the best IOPS within the objective is then known
   within tolerance; past the knee IOPS are flat and refining there buys nothing). Refining the knee: when
   `locate_knee` over the measured points (in load order, with mean latency) puts it at a point k, the measured
   point below k is out-raised, so the grid's knee is above it and at most k: bisect between the two the same
   way. When every measured point but the highest is out-raised ("still rising"), a knee can only hide between
   the two highest: bisect there too, so that "no knee within the sweep" is not said of an unmeasured gap. Never
   at or above the upper end of the objective's bracket (the first point that does not meet).
4. IOPS saturated while the objective holds: stepping stops, since more load only adds latency; the best point
   is on the plateau.
5. One value at a time, the objective's bracket before the knee's: each measurement can move the next bracket.
6. Only grid values not yet measured are returned, so a search measures at most the whole grid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise

from storbench.model.objective import LatencyObjective
from storbench.stats.estimate import Estimate, estimate, ratio_interval
from storbench.stats.knee import Knee, KneeKind, locate_knee
from storbench.stats.metric_values import metric_value
from storbench.stats.observations import Observation
from storbench.stats.slo import Verdict, verdict
from storbench.stats.trend import judge_change, round_pairs

STEP = 4  # grid indices per bracketing step: two grid values per doubling, so about x4 load
NARROW_CONFIDENCE = 0.90  # a bracket is narrow when its IOPS' ratio interval at this level is inside the tolerance


@dataclass(frozen=True)
class SearchPoint:
    """One measured load value: IOPS, the objective's latency figure (e.g. p99 in ns) and the mean latency (for
    the knee's latency-growth test), each over the repetitions."""

    load: int
    iops: Estimate
    latency: Estimate | None
    lat_mean: Estimate | None = None
    failed: int = 0  # repetitions of the load that failed: at a high load often the overload itself


def _judged(point: SearchPoint, objective: LatencyObjective) -> Verdict:
    """The point's verdict against the objective; one whose repetitions did not all measure is at best uncertain
    (the ones left are the survivors of what may be the overload: they cannot show it met)."""
    found = verdict(point.latency, objective)
    return Verdict.UNCERTAIN if point.failed and found.met else found


def search_grid(low: int, high: int) -> tuple[int, ...]:
    """The grid the full sweep would run: powers of two from low to high with the 1.5x midpoints between them
    (1, 2, 3, 4, 6, 8, 12, 16, 24, ...), low and high included, integers, strictly increasing."""
    if low < 1 or high < low:
        raise ValueError(f"a load grid needs 1 <= low <= high, not {low}..{high}")
    values = {low, high}
    power = 1
    while power <= high:
        values.update(v for v in (power, power * 3 // 2 if power >= 2 else power) if low <= v <= high)
        power *= 2
    return tuple(sorted(values))


@dataclass(frozen=True)
class _State:
    """The measured points by grid index, their verdicts, and where bracketing (rule 2) stands."""

    points: dict[int, SearchPoint]
    verdicts: dict[int, Verdict]
    next_step: int | None  # grid index to measure next while stepping up
    stop: str  # why stepping stopped: "missed", "saturated", "top" ("" while stepping)
    stop_at: int  # grid index where stepping stopped
    previous_step: int | None  # the step before it


def _rises(lower: SearchPoint, higher: SearchPoint) -> bool:
    """More load may still raise IOPS: the step is not shown flat or falling (one the repetitions cannot tell
    keeps the search stepping: the next x4 step costs one point and usually tells)."""
    # a search measures each value's repetitions back to back (never alternated), so ``round_pairs`` finds no
    # rounds and the change is Welch's; asked all the same, so that the rule stays the curves' one
    return not judge_change(lower.iops, higher.iops, round_pairs(lower.iops, higher.iops)).stopped


def _state(grid: Sequence[int], measured: Mapping[int, SearchPoint], objective: LatencyObjective) -> _State:
    if not grid or any(b <= a for a, b in pairwise(grid)):
        raise ValueError("the load grid must be non-empty and strictly increasing")
    position = {value: i for i, value in enumerate(grid)}
    off_grid = sorted(load for load in measured if load not in position)
    if off_grid:
        raise ValueError(f"measured loads not on the grid: {off_grid}")
    points = {position[load]: measured[load] for load in sorted(measured)}
    verdicts = {i: _judged(p, objective) for i, p in points.items()}
    last = len(grid) - 1
    previous: int | None = None
    for step in [*range(0, last, STEP), last]:
        if step not in points:
            return _State(points, verdicts, step, "", step, previous)
        if not verdicts[step].met:
            return _State(points, verdicts, None, "missed", step, previous)
        if previous is not None and not _rises(points[previous], points[step]):
            return _State(points, verdicts, None, "saturated", step, previous)
        previous = step
    return _State(points, verdicts, None, "top", last, previous)


def _slo_bracket(state: _State) -> tuple[int | None, int | None]:
    """(highest measured meeting index, lowest measured index above it), None where there is none."""
    meeting = [i for i, v in state.verdicts.items() if v.met]
    if not meeting:
        return None, min(state.points, default=None)
    low = max(meeting)
    return low, min((i for i in state.points if i > low), default=None)


def _narrow(state: _State, low: int, high: int, tolerance: float) -> bool:
    """The bracket needs no more points: grid neighbours, or IOPS shown within ``tolerance`` of each other (the 90 %
    interval of their ratio inside 1 +- tolerance: two one-sided 5 % tests, as "flat" along a curve; means alone,
    or points without an interval, are no evidence)."""
    if high - low <= 1:
        return True
    a, b = state.points[low].iops, state.points[high].iops
    if not (a.has_interval and b.has_interval) or a.mean <= 0 or b.mean <= 0:
        return False
    ratio_low, ratio_high = ratio_interval(a, b, NARROW_CONFIDENCE)
    return 1 - tolerance < ratio_low and ratio_high < 1 + tolerance


def _knee(state: _State) -> tuple[Knee, list[int]]:
    order = sorted(state.points)
    return locate_knee([state.points[i].iops for i in order], [state.points[i].lat_mean for i in order]), order


def next_values(grid: Sequence[int], measured: Mapping[int, SearchPoint], objective: LatencyObjective,
                tolerance: float = 0.05) -> tuple[int, ...]:
    """Which grid values to measure next (empty: the answer is known). See the module's rules 2-6."""
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, not {tolerance}")
    state = _state(grid, measured, objective)
    if state.next_step is not None:
        return (grid[state.next_step],)
    low, high = _slo_bracket(state)
    if low is None:
        return ()
    if high is not None and not _narrow(state, low, high, tolerance):
        return (grid[(low + high) // 2],)
    knee, order = _knee(state)
    if knee.kind is KneeKind.WITHIN_SWEEP and knee.index is not None:
        below, at = order[knee.index - 1], order[knee.index]
    elif knee.kind is KneeKind.STILL_RISING:
        below, at = order[-2], order[-1]
    else:
        return ()
    middle = (below + at) // 2
    if not _narrow(state, below, at, tolerance) and (high is None or middle < high):
        return (grid[middle],)
    return ()


@dataclass(frozen=True)
class SearchAnswer:
    """What the measured points say. ``slo_bracket``: (highest load meeting the objective, lowest load above it
    that does not), grid neighbours or within tolerance of IOPS once the search is done; None on the low side
    when the lowest load does not meet, on the high side when no measured load above the met one failed."""

    best: SearchPoint | None  # highest-IOPS measured point that meets the objective (None: none does)
    slo_bracket: tuple[int | None, int | None]
    knee: int | None  # load at the knee among the measured points (locate_knee in load order)
    knee_kind: KneeKind
    measured: int  # how many grid values were measured
    grid_size: int
    reason: str  # one line in words: why the search stopped


def _missed(v: Verdict, point: SearchPoint) -> str:
    if v is Verdict.FAILS:
        return "missed"
    if point.failed:
        return f"uncertain ({point.failed} of its repetitions failed: counted as missed)"
    return "uncertain (its interval straddles the limit: counted as missed)"


def _reason(grid: Sequence[int], state: _State, bracket: tuple[int | None, int | None], knee: KneeKind,
            tolerance: float, axis: str) -> str:
    low, high = bracket
    if not state.points:
        return "nothing measured yet"
    if low is None:
        first = min(state.points)
        missed = _missed(state.verdicts[first], state.points[first])
        return f"objective {missed} at the lowest load ({axis} {grid[first]})"
    if high is not None:
        missed = _missed(state.verdicts[high], state.points[high])
        text = f"objective met up to {axis} {grid[low]}, {missed} at {grid[high]}"
        if high - low <= 1:
            return f"{text} (neighbours on the grid)"
        if _narrow(state, low, high, tolerance):
            return (f"{text}; IOPS shown within {tolerance * 100:g} % across the bracket (the 90 % interval of "
                    "their ratio)")
        return f"{text} (not narrowed yet)"
    if state.stop == "saturated" and state.previous_step is not None and knee in (KneeKind.LATENCY_FLAT,
                                                                                 KneeKind.LATENCY_SHORT):
        return (f"IOPS stopped rising from {axis} {grid[state.previous_step]} to {grid[state.stop_at]} while latency "
                f"did not grow as it does at a knee ({knee.value}): the added load may not reach the "
                f"storage (a sync or buffered engine, a rate cap); loads above {grid[state.stop_at]} were not "
                "measured")
    if state.stop == "saturated" and state.previous_step is not None:
        return (f"IOPS saturated: {axis} {grid[state.previous_step]} to {grid[state.stop_at]} is shown to add "
                "none (the change within +-10 %, or a fall) while the objective held, so stepping stopped; loads "
                f"above {grid[state.stop_at]} were not measured (a curve that pauses can rise again: a sweep over "
                "them would show it)")
    if state.stop == "top":
        rising = ", IOPS still rising" if knee is KneeKind.STILL_RISING else ""
        return f"objective met at the highest load ({axis} {grid[-1]}){rising}"
    return "still stepping up (not finished)"


def search_answer(grid: Sequence[int], measured: Mapping[int, SearchPoint], objective: LatencyObjective,
                  tolerance: float = 0.05, axis: str = "load") -> SearchAnswer:
    """The answer from the measured points: the best meeting point (uncertain ones excluded), the objective's
    bracket, the knee over the measured points, and why the search stopped (``axis`` names the load in it)."""
    state = _state(grid, measured, objective)
    meeting = [p for i, p in state.points.items() if state.verdicts[i].met]
    best = max(meeting, key=lambda p: p.iops.mean, default=None)
    low, high = _slo_bracket(state)
    knee, order = _knee(state)
    return SearchAnswer(
        best=best,
        slo_bracket=(None if low is None else grid[low], None if high is None else grid[high]),
        knee=None if knee.index is None else grid[order[knee.index]],
        knee_kind=knee.kind,
        measured=len(state.points),
        grid_size=len(grid),
        reason=_reason(grid, state, (low, high), knee.kind, tolerance, axis))


WORST_FIRST = (Verdict.FAILS, Verdict.UNCERTAIN, Verdict.MEAN_MEETS, Verdict.MEETS)


def search_point(load: int, found: Sequence[Observation], objective: LatencyObjective) -> SearchPoint | None:
    """One load value's measured point from its repetitions' observations (``found``: one case, merged clients):
    IOPS summed over the directions of each repetition, then estimated over the repetitions; the objective's
    latency figure and the mean latency of the worst direction (a mixed workload meets the objective only when
    reads and writes both do). None when no repetition measured."""
    ok = [o for o in found if o.ok and o.measurement is not None and not o.client]
    failed = len({o.repetition for o in found if not o.client} - {o.repetition for o in ok})
    totals: dict[tuple[int, int], float] = {}
    by_direction: dict[str, list[Observation]] = {}
    for o in ok:
        totals[o.repetition] = totals.get(o.repetition, 0.0) + float(metric_value(o, "iops") or 0.0)
        by_direction.setdefault(o.direction_name, []).append(o)
    iops = estimate(list(totals.values()))
    if iops is None:
        return None

    def figures(field: str) -> list[Estimate]:
        found = [estimate([float(v) for o in members if (v := metric_value(o, field)) is not None])
                 for members in by_direction.values()]
        return [f for f in found if f is not None]

    # the direction whose verdict is worst, then the higher mean: the worst mean alone had let reads at 9.1 ms
    # [8.85, 9.35] stand for writes at 8.8 ms [0, 21.3] against 10 ms, and the point "met" the objective
    latency = min(figures(objective.field), key=lambda e: (WORST_FIRST.index(verdict(e, objective)), -e.mean),
                  default=None)
    return SearchPoint(load=load, iops=iops, latency=latency,
                       lat_mean=max(figures("lat_mean_ns"), key=lambda e: e.mean, default=None), failed=failed)
