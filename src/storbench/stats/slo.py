"""Whether a point meets a latency objective (`p99<=10ms`), the one rule the search and the saturation table
share (pure): the whole interval at most the limit meets, all of it above fails, anything else is uncertain and
counts as not meeting. A point without an interval (one repetition, a steady-state window) meets by its mean
alone: the search steps on with it, and what says so says it was not shown."""

from __future__ import annotations

from enum import Enum

from storbench.model.objective import LatencyObjective
from storbench.stats.estimate import Estimate
from storbench.stats.metrics import BIN_RESOLUTION, QUANTISED_FIELDS

__all__ = ["Verdict", "verdict"]


class Verdict(Enum):
    MEETS = "meets"
    MEAN_MEETS = "meets by its mean"  # no interval: its mean at most the limit, not shown to meet it
    FAILS = "fails"
    UNCERTAIN = "uncertain"

    @property
    def met(self) -> bool:
        """Counted as meeting (the search steps on, the best point is chosen among these)."""
        return self in (Verdict.MEETS, Verdict.MEAN_MEETS)


def verdict(latency: Estimate | None, objective: LatencyObjective) -> Verdict:
    """The whole interval at most the limit meets, all of it above fails; without an interval the mean decides
    (MEAN_MEETS, or FAILS). A percentile's interval is at least its bin either side: repetitions all in one bin
    have none narrower (9.98 ms in every repetition against p99<=10ms had met it on a zero-width interval)."""
    if latency is None:
        return Verdict.UNCERTAIN
    if latency.ci_low is None or latency.ci_high is None:
        return Verdict.MEAN_MEETS if latency.mean <= objective.limit_ns else Verdict.FAILS
    low, high = latency.ci_low, latency.ci_high
    if objective.field in QUANTISED_FIELDS:
        low, high = min(low, latency.mean * (1 - BIN_RESOLUTION)), max(high, latency.mean * (1 + BIN_RESOLUTION))
    if high <= objective.limit_ns:
        return Verdict.MEETS
    return Verdict.FAILS if low > objective.limit_ns else Verdict.UNCERTAIN
