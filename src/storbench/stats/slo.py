"""Whether a point meets a latency objective (`p99<=10ms`), the one rule the search and the saturation table
share (pure): the whole interval at most the limit meets, all of it above fails, anything else is uncertain and
counts as not meeting. A point without an interval (one repetition, a steady-state window) meets by its mean
alone: the search steps on with it, and what says so says it was not shown."""

from __future__ import annotations

from enum import Enum

from storbench.model.objective import LatencyObjective
from storbench.stats.estimate import Estimate

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
    (MEAN_MEETS, or FAILS)."""
    if latency is None:
        return Verdict.UNCERTAIN
    if latency.ci_low is None or latency.ci_high is None:
        return Verdict.MEAN_MEETS if latency.mean <= objective.limit_ns else Verdict.FAILS
    if latency.ci_high <= objective.limit_ns:
        return Verdict.MEETS
    return Verdict.FAILS if latency.ci_low > objective.limit_ns else Verdict.UNCERTAIN
