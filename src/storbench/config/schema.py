"""The plan schema: ``PlanConfig``, a plan file as pydantic models, built from one module per section (``values``:
the shared value types; ``targets``, ``workload``, ``lab`` with ``hosts``, ``telemetry``, ``repeat`` with
``steady_state``, ``search`` and ``compare``); `storbench.config` re-exports their public names. Pure: declares data,
reads nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import Discriminator, Field, Tag, field_validator

from storbench.config.faults import MAX_FAULTS, CheckWritesConfig, FaultConfig
from storbench.config.lab import HostsConfig, LabConfig
from storbench.config.repeat import CompareConfig, RepeatConfig, SearchConfig, SteadyStateConfig
from storbench.config.targets import TargetConfig
from storbench.config.telemetry import TelemetryConfig
from storbench.config.values import (
    MAX_COUNT,
    SAFE_NAME_RE,
    Duration,
    FioScalar,
    StrictModel,
    Sweep,
    _no_duplicates,
    matching,
)
from storbench.config.workload import WorkloadConfig

__all__ = ["PlanConfig", "repeat_bounds", "run_order"]


MAX_TIMEOUT_GRACE_S = 3600.0  # a plan's watchdog grace: never a fio left running for a day on a full disk


class PlanConfig(StrictModel):
    """A storbench plan: targets x workload sweep, repeated."""

    name: Annotated[str, matching(SAFE_NAME_RE, "name must be 1-64 letters, digits, '_', '.' or '-', starting with "
                                  "a letter or digit")] = Field(
        description="Name of the plan; `--resume` continues the latest run of this name.")
    description: str = Field("", description="Free text, kept with the results.")
    targets: dict[str, TargetConfig] = Field(description="Named targets; every case runs on each of them.")
    workload: WorkloadConfig = Field(description="What fio does: rw, bs, iodepth, numjobs, runtime, ... "
                                     "(see `storbench docs plan-reference workload`).")
    repeat: Annotated[
        Annotated[Annotated[int, Field(ge=1, le=1000, strict=True)], Tag("count")]  # true is no count
        | Annotated[RepeatConfig, Tag("rounds")],
        Discriminator(lambda value: "rounds" if isinstance(value, Mapping) else "count"),
    ] = Field(
        3, description="Repetitions per case (the statistical sample unit), or `{min, max, until}` to stop when the "
        "answer is known.")
    compare: CompareConfig | None = Field(None, description="The comparison the plan answers (for `repeat: {until: "
                                          "decided}`).")
    steady_state: SteadyStateConfig | None = Field(
        None, description="Measure each point round by round (its repetitions, back to back) until it is steady, "
        "e.g. `{metric: iops, window: 5, range: 20%, slope: 10%, max_rounds: 25, confirm: 5}`; replaces "
        "`repeat`.")
    search: SearchConfig | None = Field(
        None, description="Measure only the load values that find the best IOPS within a latency objective and "
        "the knee, e.g. `{axis: iodepth, range: [1, 256], slo: p99<=10ms}` (see `search`).")
    order: Literal["interleaved", "sequential", "shuffled"] = Field(
        "interleaved",
        description="Order of repetitions: interleaved (all cases once, then again in reverse order: A B B A; the "
        "cases turned every two rounds, so each runs right after itself, or first after an OSD restart, as often as "
        "the others), sequential (each case's repetitions back to back), or shuffled (random, with `seed`).",
    )
    seed: int = Field(0, ge=0, le=MAX_COUNT,
                      description="Seed for `order: shuffled` (0 or more: a negative one shuffles as its opposite "
                      "does); recorded with the run, and kept by a resume.")
    exclude: list[dict[str, FioScalar | list[FioScalar]]] = Field(
        default_factory=list,
        description="Rules removing points from the sweep: a point is dropped when it matches every key of a rule.",
    )
    timeout_grace: Duration = Field(
        60.0, le=MAX_TIMEOUT_GRACE_S,
        description="The watchdog kills fio when a repetition takes longer than ramp + runtime + this (at most 1h).",
    )
    tags: Annotated[list[str], matching(SAFE_NAME_RE, "tag {value!r} must be letters, digits, '_', '.' or '-'",
                                        each=True)] = Field(
        default_factory=list, description="Labels stored with the run, for selecting it later.")
    keep_files: bool = Field(False, description="Leave the test files in path, cephfs and NFS directories after "
                             "the run (default: removed when the run ends, fails or is interrupted; a later run lays "
                             "them out again). An S3 target's objects are removed either way: they are PUT again "
                             "every repetition.")
    lab: LabConfig | None = Field(None, description="Test beds to bring up for the run (see `lab`).")
    clients: Sweep[Annotated[int, Field(ge=1, le=4096)]] = Field(
        [1], description="fio clients running each case at once, one per server (needs `hosts` or "
        "`lab.hosts` beyond 1). A list sweeps.")
    hosts: HostsConfig | None = Field(None, description="fio servers that run the cases as clients.")
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig,
                                       description="Samplers beside every repetition, and the client ceiling.")
    faults: list[FaultConfig] = Field(default_factory=list, max_length=MAX_FAULTS, description="Faults a lab of "
                                      "the plan injects during every repetition's measured section, e.g. `[{at: "
                                      "10s, do: freeze, on: volume, restore_after: 5s}]` (see `faults`).")
    check_writes: CheckWritesConfig | None = Field(None, description="Check that nothing acknowledged is lost: a "
                                                   "checking writer beside fio, its blocks read back after each "
                                                   "repetition (see `check_writes`; path, cephfs, block and rbd "
                                                   "targets).")

    @field_validator("clients")
    @classmethod
    def _distinct_clients(cls, values: list[int]) -> list[int]:
        return _no_duplicates(values)

    @field_validator("targets")
    @classmethod
    def _targets(cls, value: dict[str, object]) -> dict[str, object]:
        if not value:
            raise ValueError("a plan needs at least one target")
        return value


def run_order(config: PlanConfig) -> str:
    """The order repetitions run in: a steady-state plan runs each point's rounds back to back, a search each
    point's repetitions before it chooses the next."""
    return "sequential" if config.steady_state is not None or config.search is not None else config.order


def repeat_bounds(config: PlanConfig) -> tuple[int, int]:
    """(least, most) repetitions per case (for `until: ci`, the least raised to CI_STOP_MIN_ROUNDS)."""
    if config.steady_state is not None:  # the window, then its confirmation rounds
        steady = config.steady_state
        return steady.window + steady.confirm, steady.max_rounds + steady.confirm
    if isinstance(config.repeat, RepeatConfig):
        return config.repeat.least, config.repeat.max
    return config.repeat, config.repeat
