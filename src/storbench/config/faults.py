"""`faults:`: timed faults during every repetition's measured section, each one a lab of the plan offers (issue 32).
Pure: declares data; which lab offers what is the lab registry's (`checks.check_faults`)."""

from __future__ import annotations

from pydantic import Field

from storbench.config.values import Duration, StrictModel
from storbench.faults import FaultStep

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


def fault_steps(faults: list[FaultConfig]) -> tuple[FaultStep, ...]:
    """The plan's faults as typed steps, in the plan's order."""
    return tuple(FaultStep(at_s=f.at, action=f.do, target=f.on, restore_after_s=f.restore_after) for f in faults)
