"""Whether a run with `repeat: {until: ...}` has its answer after the rounds so far. Pure.

`until: decided`: every metric the plan's `compare` names, at every matched point, is decided by the sequential
rule of `stats/sequential.py` on the pairs of rounds (repetition i of each side ran next to the other's).
`until: ci <= N%`: every point's IOPS interval is within ±N % of its mean, the t interval at CI_STOP_CONFIDENCE
(97.5 %; 99 % for N above 10), looked at from CI_STOP_MIN_ROUNDS rounds on (`config.repeat_bounds`). Stopping at the
first look whose plain 95 % interval is narrow enough would select samples whose spread happens to be small: that
interval then covers 88-95 % of true means (simulated at CV 5-25 %, N = 5 or 10: bench/ci_stop.py,
docs/methodology.md). A raised minimum alone does not fix it (93 % at min 10, N = 10, CV 25 %); the 97.5 % interval,
judged and shown for the run, covers 94.8-97.6 % there from 4 rounds on; for a wide target (N above 10) on noisy
points it covered 93.7-94.6 %, the 99 % interval 96.6 % or more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from storbench.config import ci_stop_confidence
from storbench.stats.compare import compare_observations
from storbench.stats.compare_cells import PointComparison
from storbench.stats.metric_values import metric_value
from storbench.stats.observations import Attempts, Observation, looks_made
from storbench.stats.selectors import Selector
from storbench.stats.sequential import Decision, SequentialPlan, SequentialVerdict, decide_metric
from storbench.stats.summary import summarize_points


@dataclass(frozen=True)
class MetricVerdict:
    comparison: PointComparison
    metric: str
    verdict: SequentialVerdict


def _per_rep(observations: Sequence[Observation], case_id: str, direction: str, metric: str) -> dict[int, float]:
    out = {}
    for o in observations:
        if o.ok and not o.client and o.direction is not None and o.case.case_id == case_id \
                and o.direction.value == direction:
            value = metric_value(o, metric)
            if value is not None:
                out[o.rep_index] = float(value)
    return out


@dataclass(frozen=True)
class PairedRounds:
    """One compared point and metric: the rounds both sides have, in round order, and each side's value in them
    (``baseline[i]`` and ``candidate[i]`` ran next to each other in round ``rounds[i]``)."""

    comparison: PointComparison
    metric: str
    rounds: tuple[int, ...]
    baseline: tuple[float, ...]
    candidate: tuple[float, ...]
    rounds_run: int = 0  # rounds run so far (the look's index): the rounds both sides reached, ok or failed


def paired_rounds(observations: Sequence[Observation], baseline: Selector, candidate: Selector,
                  metrics: Sequence[str], attempts: Attempts | None = None) -> list[PairedRounds]:
    """Every named metric at every matched point (``observations``: one run's), as the pairs of rounds the
    sequential rule is given; its looks counted by the rounds each side was run in (``attempts``: as stored)."""
    found = []
    for comparison in compare_observations(observations, baseline, candidate, {}):
        base, cand = comparison.baseline, comparison.candidate
        looks = looks_made(observations, base.run_ids[0], base.case_id, cand.case_id, attempts)  # one run's
        for metric in metrics:
            a = _per_rep(observations, base.case_id, base.direction_name, metric)
            b = _per_rep(observations, cand.case_id, cand.direction_name, metric)
            rounds = sorted(set(a) & set(b))
            found.append(PairedRounds(comparison, metric, tuple(rounds), tuple(a[i] for i in rounds),
                                      tuple(b[i] for i in rounds), rounds_run=looks))
    return found


def decided_verdicts(observations: Sequence[Observation], baseline: Selector, candidate: Selector,
                     metrics: Sequence[str], plan: SequentialPlan) -> list[MetricVerdict]:
    """The sequential verdict of every named metric at every matched point, on the rounds both sides have."""
    return [MetricVerdict(p.comparison, p.metric, decide_metric(p.metric, p.baseline, p.candidate, plan, p.rounds_run))
            for p in paired_rounds(observations, baseline, candidate, metrics)]


def all_decided(verdicts: Sequence[MetricVerdict]) -> bool:
    return bool(verdicts) and all(v.verdict.decision != Decision.UNDECIDED for v in verdicts)


def ci_reached(observations: Sequence[Observation], ci_pct: float) -> bool:
    """Every point's IOPS interval (at `config.ci_stop_confidence`) is within ±``ci_pct`` % of its mean."""
    level = ci_stop_confidence(ci_pct)
    points = summarize_points(observations, levels={o.run_id: level for o in observations})
    if not points:
        return False
    for point in points:
        iops = point.metric("iops")
        width = iops.half_width_pct if iops is not None else None
        if width is None or width > ci_pct:
            return False
    return True
