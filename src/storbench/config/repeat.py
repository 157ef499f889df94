"""How a plan repeats and what it asks: `repeat` (a count, or rounds until the answer is known), `steady_state`,
`search` and `compare`. Pure."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator

from storbench.config.values import StrictModel, _fraction
from storbench.model.objective import parse_slo
from storbench.units import current_metric_name

__all__ = [
    "CI_STOP_CONFIDENCE", "CI_STOP_CONFIDENCE_WIDE", "CI_STOP_MIN_ROUNDS", "CI_STOP_WIDE_PCT", "CompareConfig",
    "RepeatConfig", "SearchConfig", "SteadyStateConfig", "ci_stop_confidence",
]

UNTIL_CI_RE = re.compile(r"ci\s*<=\s*([0-9]{1,2}(?:\.[0-9]{1,3})?)\s*%")
# `until: "ci <= N%"`: the interval judged (and shown for the run) is the t interval at this level, and no look comes
# before this many rounds. Stopping at the first look whose plain 95 % interval is narrow enough picks samples
# whose spread happens to be small, and that interval then covers 88-95 % of true means (90 % at min 3); these
# two keep it at 95 % (94.8-97.6 % at CV 5-25 %, N = 5 or 10: docs/methodology.md, bench/ci_stop.py), with the
# wider level below for a wide target.
CI_STOP_CONFIDENCE = 0.975
CI_STOP_MIN_ROUNDS = 4
# A wide target (more than +-10 %) on noisy points stops on fewer rounds, where a lucky small spread is likelier:
# at 97.5 % the interval then covered 93.7-94.6 % (N = 15-30 %, CV 30-40 %); at 99 % it covers 96.6 % or more.
CI_STOP_WIDE_PCT = 10.0
CI_STOP_CONFIDENCE_WIDE = 0.99


def _metric_now(value: object) -> object:
    """A metric's name as storbench calls it now (a plan may still say ``bw_bytes``)."""
    return current_metric_name(value) if isinstance(value, str) else value


def ci_stop_confidence(ci_pct: float) -> float:
    """The level of the t interval `until: "ci <= N%"` judges (and shows for the run) for the target ``ci_pct``."""
    return CI_STOP_CONFIDENCE if ci_pct <= CI_STOP_WIDE_PCT else CI_STOP_CONFIDENCE_WIDE


class RepeatConfig(StrictModel):
    """Repetitions that stop when the answer is known: balanced rounds (every case once, the order alternating
    round by round), at least `min` and at most `max` of them. The stopping rule stays valid however often it
    looks (`storbench docs methodology paired-changes`)."""

    min: int = Field(3, ge=2, le=1000, description="Rounds before the first look.")
    max: int = Field(ge=2, le=1000, description="Rounds at most.")
    until: str = Field(description="`decided`: every metric of the plan's `compare` is decided (higher, lower, or "
                       "equivalent within its margin); `ci <= 5%`: every point's IOPS interval is within ±5 % of "
                       f"its mean (the t interval at {100 * CI_STOP_CONFIDENCE:g} %, at "
                       f"{100 * CI_STOP_CONFIDENCE_WIDE:g} % for a target above {CI_STOP_WIDE_PCT:g} %, which "
                       f"covers 95 % after such a stop, and at least {CI_STOP_MIN_ROUNDS} rounds: a lower `min` is "
                       "raised).")

    @field_validator("until")
    @classmethod
    def _until(cls, value: str) -> str:
        if value != "decided" and not UNTIL_CI_RE.fullmatch(value.strip()):
            raise ValueError(f"until {value!r} must be 'decided' or like 'ci <= 5%'")
        return value

    @property
    def ci_pct(self) -> float | None:
        """The interval target of `until: ci <= N%`, else None."""
        match = UNTIL_CI_RE.fullmatch(self.until.strip())
        return float(match.group(1)) if match else None

    @property
    def least(self) -> int:
        """The rounds before the first look: `min`, for `until: ci` at least CI_STOP_MIN_ROUNDS (and at most
        `max`): below it the interval after a stop covers less than it says."""
        if self.ci_pct is None:
            return self.min
        return min(max(self.min, CI_STOP_MIN_ROUNDS), self.max)


class SteadyStateConfig(StrictModel):
    """Measure each point round by round until it is steady, the SNIA way
    (`storbench docs methodology preconditioning`): over the last `window` rounds, max - min within `range` of
    their mean and the fitted line's excursion within `slope` of it. Then `confirm` rounds more: the point's
    figures (means, intervals) come from them, since the window, chosen for its small spread, would give too narrow
    an interval. One that never gets steady is marked "not steady"."""

    metric: Annotated[Literal["iops", "bw_bytes_per_s", "lat_mean_ns"], BeforeValidator(_metric_now)] = Field(
        "iops", description="The figure tracked round by round.")
    window: int = Field(5, ge=3, le=100, description="Rounds in the measurement window.")
    range: Annotated[float, BeforeValidator(_fraction), Field(gt=0, lt=1)] = Field(
        0.20, description="Largest max - min within the window, as a share of its mean, e.g. 20%.")
    slope: Annotated[float, BeforeValidator(_fraction), Field(gt=0, lt=1)] = Field(
        0.10, description="Largest excursion of the least-squares line over the window, as a share of its mean.")
    max_rounds: int = Field(25, ge=3, le=1000, description="Rounds at most until steady; a point not steady by then is "
                            "marked so.")
    confirm: int = Field(5, ge=0, le=100, description="Rounds measured after the steady window, whose figures and "
                         "interval the point reports; 0: the window's mean, with no interval.")


class SearchConfig(StrictModel):
    """Find the saturation point without running the whole load grid
    (`storbench docs methodology saturation-search`): the load axis runs over a grid from `range` (powers of two
    and the 1.5x steps between them), and storbench measures only the values that bracket the highest IOPS meeting
    `slo` and the knee, each with the plan's `repeat`."""

    axis: Literal["iodepth", "numjobs", "clients"] = Field("iodepth", description="The load axis searched.")
    range: tuple[Annotated[int, Field(ge=1, le=4096)], Annotated[int, Field(ge=1, le=4096)]] = Field(
        description="Lowest and highest load, e.g. [1, 256].")
    slo: str = Field(description="The latency objective, e.g. `p99<=10ms` (mean, p50, p95, p99, p99.9).")
    tolerance: Annotated[float, BeforeValidator(_fraction), Field(ge=0, lt=1)] = Field(
        0.05, description="Stop narrowing a bracket once its ends' IOPS are shown within this of each other (the "
        "90% interval of their ratio), e.g. 5%.")

    @field_validator("range")
    @classmethod
    def _range(cls, value: tuple[int, int]) -> tuple[int, int]:
        if value[0] >= value[1]:
            raise ValueError(f"range {list(value)} must be [low, high] with low below high")
        return value

    @field_validator("slo")
    @classmethod
    def _slo(cls, value: str) -> str:
        parse_slo(value)  # ValueError with the reason
        return value


class CompareConfig(StrictModel):
    """The comparison a plan is run to answer: the run ends with its table, and `storbench compare` and `report`
    take it when given no sides; with `repeat: {until: decided}` the rounds stop once it is decided."""

    baseline: str = Field(description="Selector of the baseline side, as in `storbench compare`, e.g. pool_size=2.")
    candidate: str = Field(description="Selector of the candidate side, e.g. pool_size=3.")
    metrics: list[Annotated[Literal["iops", "bw_bytes_per_s", "lat_mean_ns", "lat_p95_ns", "lat_p99_ns"],
                            BeforeValidator(_metric_now)]] = Field(
        ["iops"], description="Metrics that must be decided (repeat: {until: decided}).")
    margin: Annotated[float, BeforeValidator(_fraction), Field(gt=0, lt=1)] | None = Field(
        None, description="Equivalence margin of repeat: {until: decided}, e.g. 5%: a change inside ±margin is "
        "decided as equivalent.")
