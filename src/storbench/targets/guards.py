"""Pure rules that protect data: which cases may touch which devices."""

from __future__ import annotations

from collections.abc import Iterable

from storbench.model import Case, rw_writes

# The system's own directories: programs read what lies in them (cron, systemd, shells' completion, the boot
# loader), so test files there, written with a plan's bytes (`buffer_pattern`), could be run as root. A path target
# may not be in them (storbench's own lab directory under /var/lib/storbench aside).
SYSTEM_DIRECTORIES = ("/etc", "/usr", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
                      "/sys", "/dev", "/run", "/var")
SYSTEM_EXCEPTIONS = ("/var/tmp", "/var/lib/storbench")


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def system_directory(path: str) -> str | None:
    """The system directory an absolute, resolved ``path`` is (or is in), where a test file may not go; None
    elsewhere. The root directory itself is one."""
    if path == "/":
        return "/"
    if any(_under(path, allowed) for allowed in SYSTEM_EXCEPTIONS):
        return None
    parts = path.split("/")
    # a home's dot-directories: a shell, a desktop or a completion reads what lies there at login (~/.bashrc.d,
    # ~/.config/autostart, ~/.local/share/bash-completion), as root's own for /root
    home = 2 if parts[1:2] == ["root"] else 3 if parts[1:2] == ["home"] and len(parts) > 2 else None
    if home is not None and len(parts) > home and parts[home].startswith("."):
        return "/".join(parts[:home + 1])
    return next((d for d in SYSTEM_DIRECTORIES if _under(path, d)), None)


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
    if case.target.device is None:  # the volume lab's loop device: storbench's own, nothing on it to destroy
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
    open_by: Iterable[tuple[int, str]] = (),
    loop_backing: str = "",
    lab_roots: Iterable[str] = (),
    backs_loops: Iterable[str] = (),
    swap_numbers: frozenset[tuple[int, int]] = frozenset(),
) -> str | None:
    """Why a device (with its partitions) is in use, or None. Used for any write to a raw device.

    ``mounted``: devices mounted in any mount namespace; ``open_by``: (pid, command) of processes that have it
    open (a Ceph OSD, a database, a VM); ``loop_backing``: the file behind it when it is a loop device, refused
    when it lies in a storbench lab; ``backs_loops``: loop devices whose backing file is this device;
    ``swap_numbers``: the active swap areas' device numbers (whatever name /proc/swaps gives them)."""
    if any(number in mounted for number in device_numbers):
        return "it (or one of its partitions) is mounted (in this or another mount namespace)"
    if any(path in swaps for path in device_paths) or any(number in swap_numbers for number in device_numbers):
        return "it (or one of its partitions) is an active swap area"
    holder_list = sorted(holders)
    if holder_list:
        return f"it is held by {', '.join(holder_list)} (device-mapper, LVM or RAID)"
    users = sorted(set(open_by))
    if users:
        shown = ", ".join(f"{command} (pid {pid})" for pid, command in users[:3])
        return f"it is open by {shown}{' and others' if len(users) > 3 else ''}"
    for root in lab_roots:
        if loop_backing and (loop_backing == root or loop_backing.startswith(root.rstrip("/") + "/")):
            return f"it is a loop device of a storbench lab (backed by {loop_backing})"
    loops = sorted(backs_loops)
    if loops:
        return f"it backs loop device {', '.join(loops)}"
    return None
