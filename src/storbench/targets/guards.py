"""Pure rules that protect data: which cases may touch which devices."""

from __future__ import annotations

from collections.abc import Iterable

from storbench.model import Case, rw_writes


def parse_mounted_devices(mountinfo_text: str) -> frozenset[tuple[int, int]]:
    """(major, minor) of every mounted filesystem's device, from /proc/self/mountinfo."""
    devices: set[tuple[int, int]] = set()
    for line in mountinfo_text.splitlines():
        fields = line.split()
        if len(fields) > 2 and ":" in fields[2]:
            major, minor = fields[2].split(":", 1)
            if major.isdigit() and minor.isdigit():
                devices.add((int(major), int(minor)))
    return frozenset(devices)


def parse_swap_devices(swaps_text: str) -> frozenset[str]:
    """Paths of active swap areas, from /proc/swaps."""
    return frozenset(line.split()[0] for line in swaps_text.splitlines()[1:] if line.strip())


def block_write_refusal(case: Case) -> str | None:
    """Why this case may not write to its block device, or None when it may."""
    if case.target.kind != "block" or not rw_writes(case.workload.rw):
        return None
    if not case.target.destructive:
        return (
            f"case {case.case_id} would {case.workload.rw} on raw device {case.target.device} "
            f"of target '{case.target.name}', destroying its data"
        )
    return None


def device_in_use(
    device_numbers: Iterable[tuple[int, int]],
    mounted: frozenset[tuple[int, int]],
    device_paths: Iterable[str],
    swaps: frozenset[str],
    holders: Iterable[str],
) -> str | None:
    """Why a device (with its partitions) is in use, or None. Used for any write to a raw device."""
    if any(number in mounted for number in device_numbers):
        return "it (or one of its partitions) is mounted"
    if any(path in swaps for path in device_paths):
        return "it (or one of its partitions) is an active swap area"
    holder_list = sorted(holders)
    if holder_list:
        return f"it is held by {', '.join(holder_list)} (device-mapper, LVM or RAID)"
    return None
