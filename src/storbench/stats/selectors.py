"""Which results form one side of a comparison (`Selector`: ``KEY=VALUE,...``, matched by `stats.match`), the Ceph
settings among a selector's keys that need a cluster per value, and what a run that stopped when decided asked
(`Question`: its plan's two selectors and metrics)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from storbench.errors import did_you_mean
from storbench.model import CLUSTER_SETTINGS, RW_DIRECTIONS, Case, Status
from storbench.stats import match
from storbench.stats.metrics import COMPARE_METRICS
from storbench.stats.observations import ClientFigures, Observation

_SELECTOR_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*([^,]+?)\s*$")


@dataclass(frozen=True)
class Selector:
    """Which results form one side of a comparison: every key=value must hold (`stats.match`). Keys are record
    fields, lab settings, ``run`` (run number), or ``tag`` (a tag of the run)."""

    text: str
    pairs: tuple[tuple[str, str], ...]

    @property
    def keys(self) -> frozenset[str]:
        return frozenset("run_id" if k == "run" else match.canonical_key(k) for k, _ in self.pairs)


def parse_selector(text: str) -> Selector:
    """``3`` (a run), ``run=3``, ``target=nvme``, ``tag=after``, ``bs=4k,rw=randread``, ``pool_size=2`` (a lab
    parameter). ValueError on bad text; unknown keys are found by ``unknown_keys`` against the data."""
    stripped = text.strip()
    if stripped.isdigit():
        return Selector(text, (("run", stripped),))
    pairs = []
    for part in stripped.split(","):
        match = _SELECTOR_RE.match(part)
        if not match:
            raise ValueError(f"{part.strip()!r} is not KEY=VALUE")
        key, value = match.groups()
        pairs.append((key, value))
    if not pairs:
        raise ValueError("empty selector")
    return Selector(text, tuple(pairs))


def unknown_keys(selector: Selector, observations: Sequence[Observation]) -> list[str]:
    """Selector keys that are neither fields, `run`/`tag`, nor lab settings of any observation."""
    return match.unknown_keys([k for k, _ in selector.pairs], observations)


def select(observations: Sequence[Observation], selector: Selector,
           tags: Mapping[int, tuple[str, ...]]) -> list[Observation]:
    return match.select(observations, selector.pairs, tags)


@dataclass(frozen=True)
class Question:
    """What a run that stopped when decided asked (its plan's `compare`): the metrics the rule decided at every
    point the two selectors matched in that run."""

    baseline: Selector
    candidate: Selector
    metrics: tuple[str, ...]

    def text(self, run_id: int) -> str:
        labels = {m.field: m.label for m in COMPARE_METRICS}
        named = ", ".join(labels.get(m, m) for m in self.metrics)
        return f"run {run_id}: {named} of {self.candidate.text} vs {self.baseline.text}"


def blocked_settings(*selectors: Selector) -> list[str]:
    """The Ceph settings the selectors name that need a cluster per value (so their sides cannot alternate), but
    not one every selector names with the same value (``osds=3`` on both sides: both ran on one cluster, and a
    comparison of another setting on it had lost its pairing and been called blocked)."""
    named = {k for selector in selectors for k, _ in selector.pairs} & CLUSTER_SETTINGS
    same = {k for k in named if len(selectors) > 1
            and len({tuple(v for key, v in selector.pairs if key == k) for selector in selectors}) == 1}
    return sorted(named - same)


@dataclass(frozen=True)
class SideRefusal:
    """Why a plan's `compare` cannot be asked of its own cases: the side (``compare.baseline``...), the reason,
    and a hint."""

    side: str
    message: str
    hint: str


def plan_side_refusal(cases: Sequence[Case], baseline: Selector, candidate: Selector) -> SideRefusal | None:
    """Whether the plan's two sides select its cases as `compare` would select their results: each side's keys
    known, each side some cases, the two sides not the same cases. None when they do. (A run asked a question its
    cases cannot answer would look after every round at nothing and run to `max`.)"""
    # one per direction the case's pattern reports, as its results will be (a side may select direction=read)
    planned = [Observation(run_id=0, case=case, rep_index=0, status=Status.OK, direction=direction,
                           measurement=None, started_at_s=0.0, finished_at_s=0.0, fio_version="", error="",
                           fio=ClientFigures())
               for case in cases for direction in RW_DIRECTIONS.get(case.workload.rw, (None,))]
    chosen = []
    for side, selector in (("baseline", baseline), ("candidate", candidate)):
        unknown = unknown_keys(selector, planned)
        if unknown:
            return SideRefusal(side, f"unknown key {unknown[0]!r}", did_you_mean(unknown[0], match.known_keys(planned))
                               or "keys: the workload's and the lab's settings, target, rw, direction")
        found = select(planned, selector, {})
        if not found:
            why = match.no_match_line(planned, selector.pairs, {})
            return SideRefusal(side, why.replace("no results match", "no point of the plan has").replace(
                "stored values", "the plan's values"), "select a value the plan sweeps")
        chosen.append({o.case.case_id for o in found})
    if chosen[0] == chosen[1]:
        return SideRefusal("candidate", f"{candidate.text!r} selects the same points as the baseline's "
                           f"{baseline.text!r}",
                           "the two sides must differ in what the plan sweeps, e.g. pool_size=2 and pool_size=3")
    return None
