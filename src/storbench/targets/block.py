"""Raw block device targets (shell): checked as the node in /dev a plan names (a link resolved), written only with
`destructive: true` and never while it, or one of its partitions, is mounted, swapped on, held, open or a lab's."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from storbench.errors import UserError
from storbench.execute.supervisor import process_dirs
from storbench.fio.jobfile import JobBinding, escape_fio_path
from storbench.lab.labdir import DEFAULT_LAB_ROOT, default_lab_dir
from storbench.model import BlockTarget, Case, rw_writes
from storbench.shell import read_text
from storbench.targets.base import FileCheckPlace, PreparedTarget
from storbench.targets.guards import block_write_refusal, device_in_use, parse_mounted_devices, parse_swap_devices
from storbench.trusted_files import untrusted_above


def untrusted_device(device: Path) -> str | None:
    """Why the canonical path of a device a plan names cannot be written through (None: it can): not in /dev, or a
    directory on the way another user may write (they could put another node there)."""
    if device.parts[:2] != ("/", "dev"):
        return "is not in /dev"
    if not os.path.lexists(device):  # /dev/vg0/lv0 of a volume group not active: its stat says it is not there
        return None
    found = untrusted_above(device)
    return None if found is None else f"lies below {found[0]}, which {found[1]}"


def _block_numbers(paths: Iterable[str]) -> frozenset[tuple[int, int]]:
    """The (major, minor) of the block devices among ``paths`` (a path that is gone, or a swap file, left out): an
    active swap area named /dev/mapper/rhel-swap or by its UUID is /dev/dm-1 all the same."""
    found = set()
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode):
            found.add((os.major(st.st_rdev), os.minor(st.st_rdev)))
    return frozenset(found)


def _device_numbers(device: Path) -> tuple[list[tuple[int, int]], list[str], list[str], str]:
    """The device's and its partitions' (major, minor), their /dev paths, holders, and size in bytes."""
    st = device.stat()
    major, minor = os.major(st.st_rdev), os.minor(st.st_rdev)
    sys_dir = Path(f"/sys/dev/block/{major}:{minor}").resolve()
    numbers = [(major, minor)]
    paths = [str(device)]
    holders: list[str] = []
    for holder in (sys_dir / "holders").glob("*"):
        holders.append(holder.name)
    for child in sys_dir.glob("*/partition"):
        part_dir = child.parent
        dev_text = read_text(str(part_dir / "dev")).strip()
        if ":" in dev_text:
            a, b = dev_text.split(":")
            numbers.append((int(a), int(b)))
        paths.append(f"/dev/{part_dir.name}")
        holders.extend(h.name for h in (part_dir / "holders").glob("*"))
    sectors = read_text(str(sys_dir / "size")).strip()
    size = str(int(sectors) * 512) if sectors.isdigit() else ""
    return numbers, paths, holders, size


def _mounted_everywhere() -> frozenset[tuple[int, int]]:
    """Devices mounted in any mount namespace on this machine (a container's or a lab's mounts are invisible in
    /proc/self/mountinfo): each namespace's mountinfo, read once through one of its processes."""
    devices: set[tuple[int, int]] = set(parse_mounted_devices(read_text("/proc/self/mountinfo")))
    seen: set[str] = set()
    for entry in process_dirs():
        try:
            namespace = os.readlink(entry / "ns" / "mnt")
        except OSError:
            continue
        if namespace in seen:
            continue
        seen.add(namespace)
        devices |= parse_mounted_devices(read_text(str(entry / "mountinfo")))
    return frozenset(devices)


def _open_by(numbers: set[tuple[int, int]]) -> list[tuple[int, str]]:
    """(pid, command) of other processes holding one of these block devices open (a Ceph OSD, a database)."""
    users = []
    for entry in process_dirs(others=True):
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(fd)
            except OSError:
                continue
            if stat.S_ISBLK(st.st_mode) and (os.major(st.st_rdev), os.minor(st.st_rdev)) in numbers:
                users.append((int(entry.name), read_text(str(entry / "comm")).strip()))
                break
    return users


def _loop_backing(device: Path) -> str:
    """The backing file of a loop device, or ''."""
    return read_text(f"/sys/block/{device.resolve().name}/loop/backing_file").strip()


def _loops_backed_by(paths: Sequence[str]) -> list[str]:
    return [loop.parent.parent.name for loop in Path("/sys/block").glob("loop*/loop/backing_file")
            if read_text(str(loop)).strip() in paths]


def _lab_roots() -> list[str]:

    return [str(default_lab_dir()), str(DEFAULT_LAB_ROOT), "/var/tmp/storbench-lab"]  # the last: older versions


def check_block_target(spec: BlockTarget, cases: Sequence[Case], *, where: str = "") -> PreparedTarget:
    """A raw device: it must exist and be a block device; writes need a device that nothing has mounted, swapped
    on or stacked on top of, and ``destructive: true``. In that order: a device in use is told so, not told to add
    ``destructive: true`` and then refused anyway."""
    if spec.device is None:
        raise AssertionError("the volume lab's device is prepared with its lab, not checked here")
    # the device itself, not a name for it: fio is given the node the checks looked at, so a link repointed after
    # them (one another user owns) writes nowhere else, and the swap and in-use checks see every alias of it
    device = Path(os.path.realpath(spec.device))
    problem = untrusted_device(device)
    if problem:
        raise UserError(f"target '{spec.name}': {spec.device} is {device}, which {problem}", where=where,
                        hint="name the device node in /dev (or a link root owns to it, as /dev/disk/by-id/...)")
    try:
        mode = device.stat().st_mode
    except OSError as exc:
        raise UserError(f"target '{spec.name}': cannot stat {device}: {exc.strerror}", where=where,
                        hint="check the device path") from None
    if not stat.S_ISBLK(mode):
        raise UserError(f"target '{spec.name}': {device} is not a block device", where=where,
                        hint="use kind: path for a directory or a file system")
    numbers, paths, holders, size = _device_numbers(device)
    # written by a case, or by the checking writer past fio's region (check_writes needs destructive: true there)
    if spec.destructive or any(rw_writes(c.workload.rw) for c in cases):
        swaps = parse_swap_devices(read_text("/proc/swaps"))
        reason = device_in_use(numbers, _mounted_everywhere(), paths, swaps, holders, open_by=_open_by(set(numbers)),
                               loop_backing=_loop_backing(device), lab_roots=_lab_roots(),
                               backs_loops=_loops_backed_by(paths), swap_numbers=_block_numbers(swaps))
        if reason:
            raise UserError(f"target '{spec.name}': {device} cannot be written to while in use: {reason}",
                            where=where, hint="unmount it (or stop what uses it) first, or pick another device; "
                            "destructive: true does not change this")
    for case in cases:
        refusal = block_write_refusal(case)
        if refusal:
            raise UserError(refusal, where=where,
                            hint=f"add 'destructive: true' to target '{spec.name}' if that is what you want")
    return PreparedTarget(
        spec=spec,
        binding=JobBinding(options=(("filename", escape_fio_path(str(device))),)),
        details=(("kind", "block"), ("device", str(device)), ("device_size_bytes", size),
                 ("destructive", "yes" if spec.destructive else "no")),
        check_place=FileCheckPlace(str(device), spec.size_bytes) if spec.size_bytes else None,
    )
