"""Devices for OSDs (shell): ``count`` loop devices over sparse files in the lab directory, each split into
``parts`` equal device-mapper linear devices, one per OSD — so the device count and total capacity stay fixed
while OSDs per device change (`lab.ceph.devices`, `osds_per_device`). Recorded in the lab directory before they
exist, so a half-made lab is removed as cleanly as a whole one.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path

from storbench.errors import UserError
from storbench.shell import run

SECTOR = 512
STATE_FILE = "devices.json"


@dataclass(frozen=True)
class Part:
    device: int  # which device (0-based)
    part: int  # which slice of it (0-based)
    name: str  # the device-mapper name
    start_sector: int
    sectors: int

    @property
    def path(self) -> str:
        return f"/dev/mapper/{self.name}"


def layout(prefix: str, count: int, parts: int, device_bytes: int) -> list[Part]:
    """The slices: ``parts`` equal linear slices of each of ``count`` devices of ``device_bytes``. Pure."""
    per_part = device_bytes // SECTOR // parts
    if per_part * SECTOR < 1 << 30:
        raise UserError(f"lab: {device_bytes} bytes split {parts} ways leaves under 1 GiB per OSD",
                        hint="raise device_size or lower osds_per_device (BlueStore needs about 1 GiB)")
    return [Part(d, p, f"{prefix}-d{d}p{p}", p * per_part, per_part) for d in range(count) for p in range(parts)]


def create(root: Path, prefix: str, count: int, parts: int, device_bytes: int) -> list[Part]:
    """Make the loop devices and their slices; returns the slices in OSD order."""
    slices = layout(prefix, count, parts, device_bytes)
    state: dict[str, list[str]] = {"loops": [], "maps": []}
    record = root / STATE_FILE
    for index in range(count):
        backing = root / f"device{index}.img"
        with open(backing, "xb") as handle:
            handle.truncate(device_bytes)
        loop = run(["losetup", "--find", "--show", str(backing)], timeout_s=30).strip()
        state["loops"].append(loop)
        record.write_text(json.dumps(state))
        for piece in (s for s in slices if s.device == index):
            state["maps"].append(piece.name)
            record.write_text(json.dumps(state))
            run(["dmsetup", "create", piece.name, "--table",
                 f"0 {piece.sectors} linear {loop} {piece.start_sector}"], timeout_s=30)
    if Path("/usr/bin/udevadm").exists():
        run(["udevadm", "settle"], timeout_s=60)
    return slices


def remove(root: Path) -> None:
    """Remove the slices and detach the loop devices this lab recorded (safe when there are none)."""
    record = root / STATE_FILE
    try:
        state = json.loads(record.read_text())
    except (OSError, ValueError):
        return
    for name in reversed(state.get("maps", [])):
        with contextlib.suppress(UserError):
            run(["dmsetup", "remove", "--retry", name], timeout_s=60)
    for loop in state.get("loops", []):
        with contextlib.suppress(UserError):
            run(["losetup", "-d", loop], timeout_s=30)
    record.unlink(missing_ok=True)


def holders(loop: str) -> list[str]:
    """The device-mapper devices built on a loop device (to count OSDs per device)."""
    name = Path(loop).name
    directory = Path(f"/sys/block/{name}/holders")
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


def recorded_loops(root: Path) -> list[str]:
    try:
        return list(json.loads((root / STATE_FILE).read_text()).get("loops", []))
    except (OSError, ValueError):
        return []
