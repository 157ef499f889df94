"""A provisioned volume on this machine (shell): a loop device over a sparse file in the lab directory, its IOPS
and bandwidth capped by the kernel's block throttle — what a cloud disk at its provisioned limit, or a volume
behind a QoS throttle, looks like from inside the VM: the limit is not on anything this host can see as busy.

The throttle rules are set for this device only, in the cgroup storbench runs in (cgroup v1 ``blkio.throttle.*``,
else cgroup v2 ``io.max``), so fio, a child of storbench, is throttled on it and nothing else is touched. `down`
removes the rules, detaches the loop device and deletes the directory. `up` with the same spec is a no-op.

The loop device's number is recorded with the backing file's (st_dev, st_ino). After a killed run or a reboot the
same number may back someone else's file: before reusing or detaching the recorded device, the lab asks losetup
which file backs it now, and leaves it alone (saying so in one line) unless it is still the lab's own file.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from storbench.errors import UserError
from storbench.lab.labdir import default_lab_dir, ensure_lab_dir, lab_dir_exists, remove_lab_dir
from storbench.shell import run
from storbench.units import format_bytes

DEFAULT_LAB_DIR = default_lab_dir()
CGROUP_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class VolumeSpec:
    size_bytes: int
    iops: int | None = None  # per direction: reads and writes are each capped at this
    bw_bytes_per_s: int | None = None  # per direction


@dataclass(frozen=True)
class VolumeInfo:
    root: str
    device: str
    major_minor: str
    spec: VolumeSpec
    rules: tuple[tuple[str, str], ...]  # (throttle file, the line written to it)
    backing_dev: int  # st_dev and st_ino of the lab's volume.img when the loop device was made over it
    backing_ino: int


def throttle_lines(spec: VolumeSpec, major_minor: str, v2: bool) -> tuple[tuple[str, str], ...]:
    """(file name, line) that cap ``major_minor`` as ``spec`` says: cgroup v1 files, or one v2 io.max line.
    Pure."""
    if v2:
        parts = [f"{key}={value}" for key, value in (("riops", spec.iops), ("wiops", spec.iops),
                                                     ("rbps", spec.bw_bytes_per_s), ("wbps", spec.bw_bytes_per_s))
                 if value is not None]
        return (("io.max", f"{major_minor} {' '.join(parts)}"),) if parts else ()
    out = []
    for name, value in (("blkio.throttle.read_iops_device", spec.iops),
                        ("blkio.throttle.write_iops_device", spec.iops),
                        ("blkio.throttle.read_bps_device", spec.bw_bytes_per_s),
                        ("blkio.throttle.write_bps_device", spec.bw_bytes_per_s)):
        if value is not None:
            out.append((name, f"{major_minor} {value}"))
    return tuple(out)


def caps_text(spec: VolumeSpec, device: str) -> str:
    """The caps in plain words: "loop7 capped at 3,000 read and 3,000 write IOPS and 100MiB/s read and 100MiB/s
    write", or "loop7 not capped". Pure."""
    name = device.removeprefix("/dev/")
    caps = []
    if spec.iops is not None:
        caps.append(f"{spec.iops:,} read and {spec.iops:,} write IOPS")
    if spec.bw_bytes_per_s is not None:
        rate = f"{format_bytes(spec.bw_bytes_per_s)}/s"
        caps.append(f"{rate} read and {rate} write")
    return f"{name} capped at {' and '.join(caps)}" if caps else f"{name} not capped"


def clearing_line(file_name: str, major_minor: str) -> str:
    """The line that removes this device's rule from a throttle file. Pure."""
    if file_name == "io.max":
        return f"{major_minor} riops=max wiops=max rbps=max wbps=max"
    return f"{major_minor} 0"


def loop_backings(listing_json: str) -> dict[str, tuple[int, int]]:
    """Each attached loop device -> (st_dev, st_ino) of the file behind it, from the output of
    ``losetup --json --list --output NAME,BACK-INO,BACK-MAJ:MIN``. Pure."""
    devices = json.loads(listing_json or "{}").get("loopdevices", [])
    found = {}
    for device in devices:
        numbers, inode = str(device.get("back-maj:min") or ""), device.get("back-ino")  # int() drops the spaces
        if ":" in numbers and isinstance(inode, int):
            major, minor = numbers.split(":")
            found[str(device["name"])] = (os.makedev(int(major), int(minor)), inode)
    return found


def own_cgroup(proc_self_cgroup: str) -> tuple[Path, bool] | None:
    """(directory of the cgroup this process is in for block I/O, whether it is cgroup v2) from the text of
    /proc/self/cgroup: the v1 blkio hierarchy when mounted, else the v2 one. Pure but for what exists."""
    lines = [line.split(":", 2) for line in proc_self_cgroup.splitlines() if line.count(":") >= 2]
    for _, controllers, path in lines:
        if "blkio" in controllers.split(","):
            directory = CGROUP_ROOT / "blkio" / path.lstrip("/")
            if (directory / "blkio.throttle.read_iops_device").exists():
                return directory, False
    for hierarchy, _, path in lines:
        if hierarchy == "0":
            for base in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
                directory = base / path.lstrip("/")
                if (directory / "io.max").exists():
                    return directory, True
    return None


class VolumeLab:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(os.path.abspath(root or DEFAULT_LAB_DIR / "volume"))
        self.state = self.root / "lab.json"
        self.backing = self.root / "volume.img"

    def info(self) -> VolumeInfo | None:
        if not lab_dir_exists(self.root):
            return None
        try:
            raw = json.loads(self.state.read_text())
            return VolumeInfo(root=raw["root"], device=raw["device"], major_minor=raw["major_minor"],
                              spec=VolumeSpec(**raw["spec"]), rules=tuple(tuple(r) for r in raw["rules"]),
                              backing_dev=int(raw["backing_dev"]), backing_ino=int(raw["backing_ino"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # also a state from before backing_dev/backing_ino: down() finds our file's devices

    def _our_devices(self, info: VolumeInfo | None) -> tuple[list[str], dict[str, tuple[int, int]]]:
        """(the loop devices reading the lab's own volume.img now — and, with ``info``, only while that is still
        the file recorded when its device was made; every attached loop device -> its backing file)."""
        attached = loop_backings(run(["losetup", "--json", "--list", "--output", "NAME,BACK-INO,BACK-MAJ:MIN"],
                                     timeout_s=10))
        try:
            st = os.stat(self.backing)
        except FileNotFoundError:
            return [], attached
        ours = (st.st_dev, st.st_ino)
        if info is not None and (info.backing_dev, info.backing_ino) != ours:
            return [], attached
        return [device for device, backing in attached.items() if backing == ours], attached

    def _left_alone(self, info: VolumeInfo) -> str:
        return (f"volume lab: {info.device} no longer reads the file the lab made it over ({self.backing}): its "
                "number was reused after a reboot or a killed run; left attached and unused")

    def status(self) -> str:
        info = self.info()
        if info is None:
            return f"volume lab: down ({self.root} holds no lab)"
        if info.device not in self._our_devices(info)[0]:
            return self._left_alone(info)
        return (f"volume lab: up, {info.device} ({format_bytes(info.spec.size_bytes)}): "
                f"{caps_text(info.spec, info.device)}")

    def up(self, spec: VolumeSpec) -> tuple[VolumeInfo, str]:
        """The lab with ``spec`` (kept if it is up already on its own device), and the line ``down`` said about
        a recorded device it left alone ("" if none)."""
        current = self.info()
        if current is not None and current.spec == spec and current.device in self._our_devices(current)[0]:
            return current, ""
        left_alone = self.down()
        where = own_cgroup(Path("/proc/self/cgroup").read_text())
        if where is None:
            raise UserError("volume lab: no block throttle here (neither cgroup v1 blkio nor a cgroup v2 with io.max)",
                            hint="the volume lab needs a kernel with blk-throttling and root")
        directory, v2 = where
        ensure_lab_dir(self.root)
        try:
            with open(self.backing, "xb") as handle:  # sparse: nothing is written until fio writes
                handle.truncate(spec.size_bytes)
            backing = os.stat(self.backing)
            try:
                device = run(["losetup", "--find", "--show", "--direct-io=on", str(self.backing)],
                             timeout_s=30).strip()
            except UserError:
                device = run(["losetup", "--find", "--show", str(self.backing)], timeout_s=30).strip()
            numbers = run(["lsblk", "-dno", "MAJ:MIN", device], timeout_s=10).strip()
            rules = tuple((str(directory / name), line) for name, line in throttle_lines(spec, numbers, v2))
            info = VolumeInfo(root=str(self.root), device=device, major_minor=numbers, spec=spec, rules=rules,
                              backing_dev=backing.st_dev, backing_ino=backing.st_ino)
            self.state.write_text(json.dumps(asdict(info)))  # before the rules: down() finds what to undo
            for path, line in rules:
                Path(path).write_text(line + "\n")
        except BaseException:
            self.down()
            raise
        return info, left_alone

    def down(self) -> str:
        """Remove the throttle rules, detach the loop devices reading the lab's own file (also of a half-made
        lab), delete the directory. Safe when nothing is up. Returns one line about a recorded device that now
        reads another file and was left alone ("" if none)."""
        if not lab_dir_exists(self.root):
            return ""
        info = self.info()
        ours, attached = self._our_devices(info)
        if info is not None:
            for path, _ in info.rules:
                with contextlib.suppress(OSError):  # the cgroup is gone with its processes: so is the rule
                    Path(path).write_text(clearing_line(Path(path).name, info.major_minor) + "\n")
        for device in ours:
            with contextlib.suppress(UserError):
                run(["losetup", "-d", device], timeout_s=30)
        remove_lab_dir(self.root)
        if info is not None and info.device in attached and info.device not in ours:
            return self._left_alone(info)
        return ""
