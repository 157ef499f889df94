"""Whether a point meets a latency objective (`p99<=10ms`), the one rule the search and the saturation table
share (pure): the whole interval (the mean when n < 2) at most the limit meets, all of it above fails, anything
else is uncertain and counts as not meeting."""

from __future__ import annotations

from enum import Enum

from storbench.model.objective import LatencyObjective
from storbench.stats.estimate import Estimate

__all__ = ["Verdict", "verdict"]


class Verdict(Enum):
    MEETS = "meets"
    FAILS = "fails"
    UNCERTAIN = "uncertain"


def verdict(latency: Estimate | None, objective: LatencyObjective) -> Verdict:
    """The whole interval (the mean when n < 2) at most the limit meets, all of it above fails."""
    if latency is None:
        return Verdict.UNCERTAIN
    high = latency.mean if latency.ci_high is None else latency.ci_high
    low = latency.mean if latency.ci_low is None else latency.ci_low
    if high <= objective.limit_ns:
        return Verdict.MEETS
    return Verdict.FAILS if low > objective.limit_ns else Verdict.UNCERTAIN
