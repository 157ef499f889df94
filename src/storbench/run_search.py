"""The search driver (shell): with a plan's `search`, the repetitions of each search group run one load value at
a time, each value asked of `stats.search` once its predecessors are stored, and the answer told at the end.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from storbench.events import SearchAnswered, SearchStopped
from storbench.model import Case, ScheduledRepetition
from storbench.model.objective import parse_slo
from storbench.run_state import RunState
from storbench.stats.curve import axis_value, search_key
from storbench.stats.observations import observations
from storbench.stats.search import next_values, search_answer, search_grid, search_point

if TYPE_CHECKING:
    from storbench.model.objective import LatencyObjective
    from storbench.stats.curve import LoadAxis, SearchKey
    from storbench.stats.observations import Observation
    from storbench.stats.search import SearchPoint


def in_order(run: RunState, items: Sequence[ScheduledRepetition]) -> Iterator[ScheduledRepetition]:
    """The repetitions to run, in order: ``items`` as scheduled, or with a `search` only those of the load values
    the search asks for, one value at a time (each asked once its predecessors are stored)."""
    search = run.loaded.config.search
    if search is None:
        yield from items
        return

    objective = parse_slo(search.slo)
    grid = search_grid(*search.range)
    groups: dict[SearchKey, dict[int, list[ScheduledRepetition]]] = {}
    for item in items:
        key, load = _search_key(item.case, search.axis)
        groups.setdefault(key, {}).setdefault(load, []).append(item)
    for key, by_load in groups.items():
        first = next(iter(by_load.values()))[0].case
        asked: list[int] = []
        for load in sorted(_search_points(run, key, search.axis, objective)):  # resumed: finish the points begun
            if load in by_load:
                asked.append(load)
                yield from by_load[load]
        while True:
            measured = _search_points(run, key, search.axis, objective)
            values = next_values(grid, measured, objective, search.tolerance)
            if not values:
                break
            value = values[0]
            if value in asked or value not in by_load:  # measured nothing, or excluded from the plan
                run.observer.event(SearchStopped(first, search.axis, value, value in asked))
                break
            asked.append(value)
            yield from by_load[value]
        answer = search_answer(grid, measured, objective, search.tolerance, axis=search.axis)
        run.observer.event(SearchAnswered(first, search.axis, answer, objective, tuple(sorted(measured))))


def _search_key(case: Case, axis: LoadAxis) -> tuple[SearchKey, int]:
    """(what a search group shares: the case without its load, `stats.curve.search_key`; the load)."""

    return search_key(case, axis), axis_value(case, axis)


def _search_points(run: RunState, key: SearchKey, axis: LoadAxis, objective: LatencyObjective
                   ) -> dict[int, SearchPoint]:
    """The load values of one search group (``key``) measured so far in this run (its stored repetitions, those
    of an interrupted run's earlier session too)."""

    loads = {c.case_id: load for c in run.cases for k, load in [_search_key(c, axis)] if k == key}
    found: dict[int, list[Observation]] = {}
    for o in observations(r for r in run.store.repetitions([run.run_id]) if r.case.case_id in loads):
        found.setdefault(loads[o.case.case_id], []).append(o)
    points = {load: search_point(load, obs, objective) for load, obs in found.items()}
    return {load: point for load, point in points.items() if point is not None}
