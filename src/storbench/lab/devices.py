"""Devices for OSDs (shell): ``count`` devices, each a sparse file in the lab directory, each split into
``parts`` equal slices — a loop device over each slice's byte range of the file — one OSD per slice, so the
device count and total capacity stay fixed while OSDs per device change (`lab.ceph.devices`,
`osds_per_device`). (Loop devices over offsets need nothing but the loop driver: no device-mapper, no partition
table.) Each recorded in the lab directory as soon as it is made, so a half-made lab is removed as cleanly as a
whole one; removed only while it still reads one of the lab's files (after a reboot a recorded name may be
another's device).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from storbench.errors import UserError
from storbench.shell import run

STATE_FILE = "devices.json"
ALIGN = 1 << 20


@dataclass(frozen=True)
class Part:
    device: int  # which device (0-based)
    part: int  # which slice of it (0-based)
    offset_bytes: int
    size_bytes: int


def layout(count: int, parts: int, device_bytes: int) -> list[Part]:
    """The slices: ``parts`` equal slices (MiB-aligned) of each of ``count`` devices of ``device_bytes``, in OSD
    order. Pure."""
    per_part = device_bytes // parts // ALIGN * ALIGN
    if per_part < 1 << 30:
        raise UserError(f"lab: {device_bytes} bytes split {parts} ways leaves under 1 GiB per OSD",
                        hint="raise device_size or lower osds_per_device (BlueStore needs about 1 GiB)")
    return [Part(d, p, p * per_part, per_part) for d in range(count) for p in range(parts)]


def backing_file(root: Path, device: int) -> Path:
    return root / f"device{device}.img"


def create(root: Path, count: int, parts: int, device_bytes: int) -> list[str]:
    """Make the devices and their slices; returns each slice's loop device, in OSD order."""
    slices = layout(count, parts, device_bytes)
    state: dict[str, list[str]] = {"loops": []}
    record = root / STATE_FILE
    _write_record(record, state)
    for index in range(count):
        with open(backing_file(root, index), "xb") as handle:
            handle.truncate(device_bytes)
    out = []
    for piece in slices:
        loop = run(["losetup", "--find", "--show", "--offset", str(piece.offset_bytes), "--sizelimit",
                    str(piece.size_bytes), str(backing_file(root, piece.device))], timeout_s=30).strip()
        state["loops"].append(loop)
        _write_record(record, state)
        out.append(loop)
    return out


def _write_record(record: Path, state: dict[str, list[str]]) -> None:
    """The record renamed over the last one whole (written in place, an interrupt had emptied it)."""
    written = record.with_suffix(".new")
    written.write_text(json.dumps(state))
    os.replace(written, record)


def remove(root: Path) -> None:
    """Detach the loop devices that read this lab's device files (safe when there are none): those it recorded, and
    any the record missed (a Ctrl-C while losetup attached one, a record cut short), found by the file they read."""
    record = root / STATE_FILE
    try:
        recorded = json.loads(record.read_text()).get("loops", [])
    except (OSError, ValueError, AttributeError):
        recorded = []
    attached = [f"/dev/{device.name}" for device in Path("/sys/block").glob("loop*")]
    # only a device that still reads one of this lab's files: after a reboot the recorded names may be another's
    loops = sorted({loop for loop in [*recorded, *attached] if _backs_onto(loop, root)})
    for loop in loops:
        with contextlib.suppress(UserError):
            run(["losetup", "-d", loop], timeout_s=30)
    # a loop device still closing (its OSD just died) is detached by the kernel a moment later: wait for it
    deadline = time.time() + 15
    while time.time() < deadline and any(_attached(loop) for loop in loops):
        time.sleep(0.2)
    if still := [loop for loop in loops if _attached(loop)]:  # the record stays: the next `down` finds them
        raise UserError(f"ceph lab: loop device(s) {', '.join(still)} still attached to the lab's device files",
                        hint=f"see what holds them (losetup --list; fuser -v {' '.join(still)}), then storbench lab "
                        "ceph down")
    record.unlink(missing_ok=True)


def _attached(loop: str) -> bool:
    return Path(f"/sys/block/{Path(loop).name}/loop/backing_file").exists()


def _backs_onto(loop: object, root: Path) -> bool:
    """Whether loop device ``loop`` (as recorded) reads one of the lab's device files under ``root`` now."""
    if not isinstance(loop, str) or not loop.startswith("/dev/loop"):
        return False
    try:
        backing = Path(f"/sys/block/{Path(loop).name}/loop/backing_file").read_text().strip()
    except OSError:
        return False
    backing = backing.removesuffix(" (deleted)")
    return Path(backing).parent == root.resolve() and Path(backing).name.startswith("device") \
        and Path(backing).name.endswith(".img")


def slices_of(root: Path, device: int) -> list[str]:
    """The loop devices reading device ``device``'s file (to count OSDs per device)."""
    listing = run(["losetup", "-j", str(backing_file(root, device))], timeout_s=10)
    return sorted(line.split(":", 1)[0] for line in listing.splitlines() if line.startswith("/dev/loop"))
