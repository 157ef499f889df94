"""What `check_writes` found, in words (pure): a point's line, its cell in the failover table, and the claim a clean
read-back supports — each block's last acknowledged write is there; every acknowledged write only when none was
replaced by a later write to its block before the read-back (docs/methodology.md, "Nothing acknowledged lost")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from storbench.model.fault_record import WriteCheck
from storbench.stats.write_checks import PointWriteCheck


def _bad_counts(total: WriteCheck) -> list[tuple[str, int]]:
    return [("lost", total.lost), ("stale", total.stale), ("torn", total.torn), ("corrupt", total.corrupt)]


def none_lost_text(total: WriteCheck) -> str:
    """What a clean read-back shows, and no more: each block's last acknowledged write is there. Every acknowledged
    write only when each was its block's last (none replaced by a later write to its block before the read-back,
    which hides a loss: bench/write_check_power.py)."""
    n = total.acknowledged
    if total.read_back is None:  # stored before the writes read back were counted
        return f"0 lost: every block held its last acknowledged write ({n:,} acknowledged; a write replaced by a " \
            "later one to its block is not checked)"
    if total.read_back >= n:
        return f"0 of {n:,} acknowledged writes lost (each read back)"
    failed = (f"; {total.failed:,} writes failed, and a block whose last write failed may hold that write, which "
              "no number of blocks changes" if total.failed else "")
    return (f"0 lost of the {total.read_back:,} acknowledged writes read back, each block's last "
            f"({n - total.read_back:,} of the {n:,} were followed by another write to their block and not checked: "
            f"check_writes with more blocks, or fewer writes a second, reads back each{failed})")


def write_check_text(check: PointWriteCheck | None) -> str:
    """'0 of 1,234 lost' when every block read back held what it should (of those read back, when some were
    replaced unchecked); else the count of each kind of bad block; '-' unchecked."""
    if check is None or check.checked == 0:
        return "-" if check is None else "not checked: " + "; ".join(check.errors)
    total = check.total
    unchecked = (f"; {check.unchecked} of {check.checked + check.unchecked} repetitions not checked"
                 if check.unchecked else "")
    if not total.bad:
        if total.read_back is None:
            return f"0 lost (each block's last of {total.acknowledged:,} acknowledged){unchecked}"
        if total.read_back < total.acknowledged:
            return f"0 of {total.read_back:,} read back lost ({total.acknowledged:,} acknowledged){unchecked}"
        return f"0 of {total.acknowledged:,} lost{unchecked}"
    return ", ".join(f"{count:,} {name}" for name, count in _bad_counts(total) if count) + \
        f" (of {check.blocks_read:,} blocks){unchecked}"


def write_check_lines(checks: Sequence[PointWriteCheck], labels: Mapping[str, str]) -> list[str]:
    """`check_writes`' findings, one line per point: writes acknowledged, blocks lost / stale / torn / corrupt and
    the first bad offsets."""
    if not checks:
        return []
    lines = ["acknowledged writes (check_writes: stamped blocks written beside fio, every block read back after each "
             "repetition once its faults were undone; storbench docs methodology \"nothing acknowledged lost\"):"]
    for c in checks:
        total = c.total
        head = (f"  run {c.run_id} {labels.get(c.case_id, c.case_id)}: {c.checked} repetition"
                f"{'s' if c.checked != 1 else ''} read back, {total.acknowledged:,} writes acknowledged"
                f" ({total.failed:,} failed, their outcome unknown), {total.blocks:,} blocks of "
                f"{total.block_bytes:,} bytes each time: ")
        head += ", ".join(f"{count:,} {name}" for name, count in _bad_counts(total))
        if total.bad:
            first = "; ".join(f"{finding} at {', '.join(f'{o:,}' for o in offsets)}"
                              for finding, offsets in total.first_bad)
            head += (f" — NOT everything acknowledged is there (repetition {(c.first_bad_repetition or 0) + 1}: "
                     f"{first} bytes into its region)")
        elif c.checked:
            replaced = total.acknowledged - total.read_back if total.read_back is not None else None
            head += (" — every acknowledged write is there" if replaced is not None and replaced <= 0 else
                     " — each block's last acknowledged write is there" + (
                         f" ({replaced:,} earlier writes replaced before the read-back, not checked)" if replaced
                         else " (earlier writes to a block, replaced, are not checked)"))
        if c.errors:
            head += f"; {c.unchecked} not checked: {'; '.join(c.errors)}"
        lines.append(head)
    return lines
