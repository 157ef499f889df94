"""The volume lab's pure parts: its spec and state, the caps in words, the pacer's rates file, and what losetup and
/proc/self/mountinfo say, read (`lab.volume` is the shell)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from storbench.units import format_bytes


@dataclass(frozen=True)
class VolumeSpec:
    size_bytes: int
    iops: int | None = None  # reads and writes together, as a provisioned volume counts them
    bw_bytes_per_s: int | None = None  # reads and writes together


@dataclass(frozen=True)
class VolumeInfo:
    root: str
    device: str
    major_minor: str
    spec: VolumeSpec
    backing_dev: int  # st_dev and st_ino of the loop device's backing file when the loop device was made over it
    backing_ino: int
    rules: tuple[tuple[str, str], ...] = ()  # a lab from before the pacer: (throttle file, the line written to it)


@dataclass(frozen=True)
class LoopBacking:
    # st_dev and st_ino of the file behind a loop device (None: it cannot be reached, its FUSE daemon dead), and
    # its path as the kernel gives it
    dev: int | None
    ino: int | None
    file: str


def caps_text(spec: VolumeSpec, device: str) -> str:
    """The caps in plain words: "loop7 paced at 3,000 IOPS and 100MiB/s, reads and writes together", or "loop7
    not capped". Pure."""
    name = device.removeprefix("/dev/")
    caps = caps_words(spec.iops, spec.bw_bytes_per_s)
    return f"{name} paced at {caps}, reads and writes together" if caps else f"{name} not capped"


def caps_words(iops: int | None, bw_bytes_per_s: int | None) -> str:
    """The caps in a few words, "3,000 IOPS and 100MiB/s"; "" for none. Pure."""
    caps = []
    if iops is not None:
        caps.append(f"{iops:,} IOPS")
    if bw_bytes_per_s is not None:
        caps.append(f"{format_bytes(bw_bytes_per_s)}/s")
    return " and ".join(caps)


def rates_json(spec: VolumeSpec) -> str:
    """The pacer's rates file for ``spec`` (`lab.pacer.read_rates`). Pure."""
    return json.dumps({"iops": spec.iops, "bw_bytes_per_s": spec.bw_bytes_per_s})


def clearing_line(file_name: str, major_minor: str) -> str:
    """The line that removes a device's block-throttle rule (a lab made before the pacer). Pure."""
    if file_name == "io.max":
        return f"{major_minor} riops=max wiops=max rbps=max wbps=max"
    return f"{major_minor} 0"


LOSETUP_COLUMNS = "NAME,BACK-INO,BACK-MAJ:MIN,BACK-FILE"


def makedev(major: int, minor: int) -> int:
    """A device number as st_dev gives it (glibc's gnu_dev_makedev, os.makedev on Linux). Pure."""
    return (((major & 0xFFFFF000) << 32) | ((major & 0xFFF) << 8) | ((minor & 0xFFFFFF00) << 12)
            | (minor & 0xFF))


def loop_backings(listing_json: str) -> dict[str, LoopBacking]:
    """Each attached loop device -> the file behind it, from the output of
    ``losetup --json --list --output NAME,BACK-INO,BACK-MAJ:MIN,BACK-FILE``. Pure."""
    devices = json.loads(listing_json or "{}").get("loopdevices", [])
    found = {}
    for device in devices:
        numbers, inode = str(device.get("back-maj:min") or ""), device.get("back-ino")  # int() drops the spaces
        if ":" in numbers and isinstance(inode, int):
            major, minor = numbers.split(":")
            found[str(device["name"])] = LoopBacking(makedev(int(major), int(minor)), inode,
                                                     str(device.get("back-file") or ""))
        elif device.get("back-file"):  # its file unreachable (a dead pacer's mount): known by its path alone
            found[str(device["name"])] = LoopBacking(None, None, str(device["back-file"]))
    return found


def mount_points(mountinfo: str) -> set[str]:
    """The mount points in /proc/self/mountinfo's text (its octal escapes undone). Pure. A dead FUSE daemon's
    mount is one too, where os.path.ismount says no (its stat fails)."""
    found = set()
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) > 4:
            found.add(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4]))
    return found
