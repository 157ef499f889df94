"""What `check_writes` found per point (pure; issue 32's "nothing acknowledged lost"): every repetition's read-back
summed over the point's repetitions, with the first bad offsets of the first repetition that had any."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from storbench.model import StoredRepetition
from storbench.model.fault_record import WriteCheck


@dataclass(frozen=True)
class PointWriteCheck:
    """One (run, case)'s write checks: repetitions read back, writes acknowledged and failed, and the blocks found
    lost, stale, torn or corrupt, summed; ``first_bad`` of the first repetition with any; ``errors``: why a
    repetition could not be checked."""

    run_id: int
    case_id: str
    checked: int
    total: WriteCheck
    first_bad_repetition: int | None  # its index, from 0
    errors: tuple[str, ...]
    unchecked: int = 0  # repetitions that could not be read back (``errors`` says why): not in ``total``

    @property
    def blocks_read(self) -> int:
        """Blocks read back over the repetitions checked."""
        return self.total.blocks * self.checked


NONE_ACKNOWLEDGED = "no checking write was acknowledged (every one failed): nothing was read back against"
FAULT_NOT_DONE = "its fault was not done, so no write was put at risk"


def point_write_checks(repetitions: Sequence[StoredRepetition]) -> list[PointWriteCheck]:
    """One entry per (run, case) with write checks, in the order first seen."""
    groups: dict[tuple[int, str], list[StoredRepetition]] = {}
    for r in repetitions:
        if r.write_check is not None:
            groups.setdefault((r.run_id, r.case.case_id), []).append(r)
    out = []
    for (run_id, case_id), found in groups.items():
        # a repetition none of whose checking writes was acknowledged checked nothing: "0 of 0 lost" is no evidence;
        # nor is one whose fault (or its undoing: a lie's serving) was not done, which put no write at risk
        checks = [replace(r.write_check, error=NONE_ACKNOWLEDGED) if not r.write_check.error
                  and r.write_check.acknowledged == 0 else
                  replace(r.write_check, error=f"{FAULT_NOT_DONE}: {undone.error}") if not r.write_check.error
                  and (undone := next((f for f in r.faults if f.error), None)) is not None else r.write_check
                  for r in found if r.write_check is not None]
        read = [c for c in checks if not c.error]
        bad = next((r for r in found if r.write_check is not None and r.write_check.bad), None)
        first = checks[0]
        counted = [c.read_back for c in read]
        out.append(PointWriteCheck(
            run_id=run_id, case_id=case_id, checked=len(read),
            total=WriteCheck(blocks=first.blocks, block_bytes=first.block_bytes,
                             acknowledged=sum(c.acknowledged for c in read), failed=sum(c.failed for c in read),
                             lost=sum(c.lost for c in read), stale=sum(c.stale for c in read),
                             torn=sum(c.torn for c in read), corrupt=sum(c.corrupt for c in read),
                             first_bad=bad.write_check.first_bad if bad is not None and bad.write_check else (),
                             read_back=None if None in counted else sum(c for c in counted if c is not None)),
            first_bad_repetition=bad.rep_index if bad is not None else None,
            errors=tuple(sorted({c.error for c in checks if c.error})), unchecked=len(checks) - len(read)))
    return out
