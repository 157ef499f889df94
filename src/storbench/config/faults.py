"""`faults:`: timed faults during every repetition's measured section, each one a lab of the plan offers (issue 32).
Pure: declares data; which lab offers what is the lab registry's (`checks.check_faults`)."""

from __future__ import annotations

import math
import re

from pydantic import Field, field_validator, model_validator

from storbench.config.values import Duration, FioScalar, Size, StrictModel
from storbench.config.workload import WorkloadConfig
from storbench.faults import FaultStep
from storbench.units import duration_range_s

MAX_FAULTS = 16
FAULT_TIMELINE_WINDOW_MS = 100  # a plan with faults: fio logs its I/O in windows of this many ms (`fio.logs`)


class FaultConfig(StrictModel):
    """One fault, e.g. `{at: 20s, do: freeze, on: volume, restore_after: 5s}`."""

    at: Duration = Field(description="When, counted from the start of the measured section (after the ramp).")
    do: str = Field(pattern=r"^[a-z][a-z-]{0,31}$", description="The action, as a lab of the plan offers it "
                    "(`storbench plan` lists them), e.g. `freeze`.")
    on: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", description="What it acts on, in the lab's "
                    "words, e.g. `volume`.")
    restore_after: Duration | None = Field(None, description="Undo it this long after (within the measured "
                                           "section); none: it lasts to the end of the repetition.")
    to: str | int | None = Field(None, description="The level an action that takes one sets, e.g. `10Mbit` for "
                                 "`slow` (a link rate), `500` for `throttle` (IOPS).")

    @field_validator("on")
    @classmethod
    def _one_spelling(cls, value: str) -> str:
        """`client.01` is client.1 to the lab but another name to the check of faults on one target overlapping."""
        numbered = re.fullmatch(r"(.*)\.0+([0-9]+)", value)  # the number that ends the name
        if numbered:
            raise ValueError(f"write {numbered.group(1)}.{int(numbered.group(2))}, with no leading zero")
        return value

    @field_validator("to", mode="before")
    @classmethod
    def _to_text(cls, value: object) -> object:
        if isinstance(value, bool) or (value is not None and not isinstance(value, (str, int))):
            raise ValueError("to must be a level, e.g. 10Mbit or 500")
        return None if value is None else str(value)


def fault_steps(faults: list[FaultConfig]) -> tuple[FaultStep, ...]:
    """The plan's faults as typed steps, in the plan's order."""
    return tuple(FaultStep(at_s=f.at, action=f.do, target=f.on, restore_after_s=f.restore_after,
                           to=None if f.to is None else str(f.to)) for f in faults)


MAX_CHECK_BYTES = 1 << 30  # the checking writer's region at the most (it is read back whole after every repetition)
MIN_CHECK_BLOCKS = 2048
MAX_CHECK_BLOCKS = 1 << 20
# the writer's time beyond fio's ramp and runtime in a repetition: fio's start and layout, its end, the read-back
CHECK_MARGIN_S = 10.0
READ_BACK_S = 600.0  # how long reading every block back may take
CHECK_SHARE = 0.1  # the most of a volume's IOPS cap the checking writer may take (its writes are the cap's too)


def start_delays(workload: WorkloadConfig) -> list[tuple[FioScalar, float, float]]:
    """fio's `startdelay` (passed through `workload.fio`, a sweep, each value a delay or a range `10-30s`): (the value
    as written, its shortest, its longest wait in seconds); a value that does not read is the fio check's to
    refuse."""
    given = workload.fio.get("startdelay")
    found: list[tuple[FioScalar, float, float]] = []
    for value in given if isinstance(given, list) else [] if given is None else [given]:
        try:
            found.append((value, *duration_range_s(value)))
        except ValueError:
            continue
    return found


def most_start_delay_s(workload: WorkloadConfig) -> float:
    """The longest wait `startdelay` may put before the jobs start; 0 without one."""
    return max((high for _, _, high in start_delays(workload)), default=0.0)


class CheckWritesConfig(StrictModel):
    """`check_writes:` beside fio, a checking writer on the same storage: stamped blocks written for the whole
    repetition, each block once in a shuffled order before any again, what the storage acknowledged kept in
    storbench's memory, every block read back once the faults are undone and the lab settled, and each one
    classified (lost, stale, torn, corrupt or ok)."""

    blocks: int | None = Field(
        None, ge=16, le=MAX_CHECK_BLOCKS, description="How many blocks it writes over (its region: blocks x bs; on a "
        "block target, right after fio's `size`). Default: one for each write of the plan's longest repetition "
        "(`iops` x (ramp + runtime + fio's startdelay + 10 s)), at least 2,048, within 1 GiB, so that every "
        "acknowledged write is read back; with fewer, a block is written again and only its last write is checked.")
    bs: Size = Field(4096, description="Its block size: a multiple of 512 bytes (every 512-byte sector carries "
                     "its own stamp, so a write that lands in part is seen).")
    depth: int = Field(4, ge=1, le=64, description="Writes in flight at once (each of its threads owns its blocks, "
                       "so what each block should hold is known exactly).")
    iops: int = Field(200, ge=1, le=100_000, description="Its writes per second at the most: it stays a small "
                      "share of the load fio measures (each write is synchronous: O_DSYNC, O_DIRECT where the "
                      "filesystem takes it).")

    @field_validator("bs")
    @classmethod
    def _sectors(cls, value: int) -> int:
        if value <= 0 or value % 512 or value > 1 << 20:
            raise ValueError("bs must be a multiple of 512 bytes, at most 1MiB, e.g. 4k")
        return value

    @model_validator(mode="after")
    def _bounded(self) -> CheckWritesConfig:
        if self.blocks is not None and self.blocks * self.bs > MAX_CHECK_BYTES:
            raise ValueError(f"blocks x bs is {self.blocks * self.bs:,} bytes: at most 1GiB (it is read back whole "
                             f"after every repetition), e.g. blocks: {MAX_CHECK_BYTES // self.bs}")
        return self

    def writes_in(self, workload: WorkloadConfig) -> int:
        """About how many writes it makes in the plan's longest repetition: `iops` over its longest ramp, runtime
        and fio `startdelay` (the values of their sweeps; it writes while fio waits too) and `CHECK_MARGIN_S`."""
        longest_s = max(workload.ramp) + max(workload.runtime) + most_start_delay_s(workload)
        return math.ceil(self.iops * (longest_s + CHECK_MARGIN_S))

    @property
    def most_blocks(self) -> int:
        """The most blocks its region may have (`MAX_CHECK_BYTES`, `MAX_CHECK_BLOCKS`)."""
        return min(MAX_CHECK_BYTES // self.bs, MAX_CHECK_BLOCKS)

    def region_blocks(self, workload: WorkloadConfig) -> int:
        """The blocks it writes over in the plan's repetitions: the plan's, or one a write (`writes_in`), at least
        `MIN_CHECK_BLOCKS`, within `most_blocks`."""
        if self.blocks is not None:
            return self.blocks
        return max(MIN_CHECK_BLOCKS, min(self.writes_in(workload), self.most_blocks))

    def region_bytes(self, workload: WorkloadConfig) -> int:
        return self.region_blocks(workload) * self.bs
