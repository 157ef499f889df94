"""What a fault did and when, as the run loop recorded it during one repetition (issue 32). Pure: declares data."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FaultRecord:
    """One action of a plan's fault during a repetition: the fault itself or its undoing (``restore``), when it
    was started on the wall clock (epoch seconds, taken right before the lab was asked: a daemon killed or a rule
    inserted acts on the I/O at once, whatever the lab does after), what the lab said, and the
    error when it could not be done (its figures are then not a fault's)."""

    action: str
    target: str
    restore: bool
    at_s: float
    said: str = ""
    error: str = ""
    planned_at_s: float = 0.0  # into the measured section, as the plan asked (restore: the restore's time)
    measure_start_s: float = 0.0  # epoch seconds the measured section was due to start (the repetition's start + ramp)


@dataclass(frozen=True)
class WriteCheck:
    """What the checking writer (`check_writes`) found when it read its blocks back after a repetition: how many
    writes the storage acknowledged and how many failed (their outcome unknown: old or new is right), and each
    block classified (`durability.classify`): lost, stale, torn, corrupt, the rest ok. ``first_bad``: (finding,
    the first offsets in bytes into its region) for each finding but ok. ``error``: why it could not check."""

    blocks: int
    block_bytes: int
    acknowledged: int
    failed: int
    lost: int = 0
    stale: int = 0
    torn: int = 0
    corrupt: int = 0
    first_bad: tuple[tuple[str, tuple[int, ...]], ...] = ()
    error: str = ""
    # acknowledged writes read back: each block's last (one a written block); fewer than ``acknowledged`` when a
    # block was written again, which replaced an earlier write unseen. None: stored before it was counted
    read_back: int | None = None

    @property
    def bad(self) -> int:
        return self.lost + self.stale + self.torn + self.corrupt
