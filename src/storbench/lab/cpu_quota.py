"""CPU quotas for lab daemons (shell): a cgroup per daemon under the cpu controller this machine has (cgroup v1
``cpu.cfs_quota_us``, else v2 ``cpu.max``), holding the daemon's process, with a quota of N cores. Changing the
quota takes effect at once (no restart), so `lab.ceph.osd_cpus` is a live setting.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from dataclasses import dataclass
from pathlib import Path

from storbench.errors import UserError

CGROUP_ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000
GROUP_PREFIX = "storbench-lab"


@dataclass(frozen=True)
class CpuController:
    root: Path  # where our cgroups are made: storbench's own cgroup in the hierarchy
    v2: bool
    at_root: bool = True  # our own cgroup is the hierarchy's root (cgroup v2 then has no no-internal-process rule)
    mount: Path | None = None  # the hierarchy's root (where labs of older versions made their cgroups)


def quota_line(cores: float | None, v2: bool) -> tuple[str, str]:
    """(file, text) that limits a cgroup to ``cores`` (None: no limit). Pure."""
    if v2:
        return "cpu.max", "max 100000" if cores is None else f"{max(1000, round(cores * PERIOD_US))} {PERIOD_US}"
    return "cpu.cfs_quota_us", "-1" if cores is None else str(max(1000, round(cores * PERIOD_US)))


def parse_quota(file_name: str, text: str) -> float | None:
    """The cores a quota file allows (None: unlimited). Pure."""
    parts = text.split()
    if file_name == "cpu.max":
        return None if parts[0] == "max" else int(parts[0]) / int(parts[1])
    quota = int(parts[0])
    return None if quota < 0 else quota / PERIOD_US


def parse_proc_cgroup(text: str) -> dict[str, str]:
    """/proc/self/cgroup -> controller -> our cgroup's path in its hierarchy; cgroup v2's line (``0::/path``)
    under the key "". Named v1 hierarchies (``name=systemd``) keep their name. Pure."""
    paths: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3 or not parts[2].startswith("/"):
            continue
        _, controllers, path = parts
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def own_group_dir(mount: Path, path: str) -> Path | None:
    """The directory of the cgroup at ``path`` in the hierarchy mounted at ``mount`` (None: a path that is not
    plain, e.g. with ``..`` or a ``(deleted)`` suffix). Pure."""
    parts = [part for part in path.split("/") if part]
    if any(part in (".", "..") for part in parts) or path.endswith(" (deleted)"):
        return None
    return mount.joinpath(*parts)


def _read_own(proc_cgroup: str | None) -> dict[str, str]:
    if proc_cgroup is None:
        try:
            proc_cgroup = Path("/proc/self/cgroup").read_text()
        except OSError:
            return {}
    return parse_proc_cgroup(proc_cgroup)


def _own_place(mount: Path, key: str, own: dict[str, str]) -> tuple[Path, bool] | None:
    """(our cgroup's directory in the hierarchy at ``mount``, whether it is the root); None when /proc/self/cgroup
    names no cgroup there or its directory is not under ``mount`` (another cgroup namespace's view)."""
    path = own.get(key)
    if path is None:
        return None
    directory = own_group_dir(mount, path)
    if directory is None or not directory.is_dir():
        return None
    return directory, directory == mount


def controller(cgroup_root: Path = CGROUP_ROOT, proc_cgroup: str | None = None) -> CpuController | None:
    """The cpu controller to make cgroups in, under storbench's own cgroup (a limit placed on storbench then holds
    the daemons too): cgroup v1's cpu hierarchy, else cgroup v2 when it offers cpu. ``proc_cgroup``: the text of
    /proc/self/cgroup (read when None)."""
    return _controller("cpu", (("cpu", "cpu.cfs_quota_us"), ("cpu,cpuacct", "cpu.cfs_quota_us")), cgroup_root,
                       proc_cgroup)


def _controller(name: str, v1_mounts: tuple[tuple[str, str], ...], cgroup_root: Path,
                proc_cgroup: str | None) -> CpuController | None:
    """Controller ``name`` under storbench's own cgroup: the first of cgroup v1's ``v1_mounts`` (mount, a file
    that shows the controller there), else cgroup v2 when it offers it."""
    own = _read_own(proc_cgroup)
    for mount_name, marker in v1_mounts:
        mount = cgroup_root / mount_name
        if (mount / marker).exists():
            place = _own_place(mount, name, own)
            return None if place is None else CpuController(place[0], v2=False, at_root=place[1], mount=mount)
    for base in (cgroup_root, cgroup_root / "unified"):
        controllers = base / "cgroup.controllers"
        if controllers.exists() and name in controllers.read_text().split():
            place = _own_place(base, "", own)
            return None if place is None else CpuController(place[0], v2=True, at_root=place[1], mount=base)
    return None


def enable_v2(directory: Path, at_root: bool, name: str) -> None:
    """Enable controller ``name`` for the children of cgroup v2's ``directory``. At the root a failure is left to
    the writes that follow; elsewhere cgroup v2 refuses it (EBUSY) while the cgroup holds processes, and storbench
    refuses rather than make the group in an ancestor, outside limits placed on it."""
    subtree = directory / "cgroup.subtree_control"
    if at_root:
        with contextlib.suppress(OSError):
            subtree.write_text(f"+{name}\n")
        return
    try:
        subtree.write_text(f"+{name}\n")
    except OSError as exc:
        raise UserError(f"lab: cannot give the OSDs cgroups under storbench's own cgroup {directory} "
                        f"({exc.strerror or exc}); cgroup v2 allows child groups only in a cgroup holding no "
                        f"processes",
                        hint="run storbench from a cgroup v2 root shell (echo $$ > /sys/fs/cgroup/cgroup.procs) or "
                             "on cgroup v1, or leave osd_cpus / osd_cpuset out") from None


def group_dir(ctl: CpuController, lab: str, daemon: str) -> Path:
    return ctl.root / f"{GROUP_PREFIX}-{lab}-{daemon}"


def limit(lab: str, daemons: dict[str, int], cores: float | None, cgroup_root: Path = CGROUP_ROOT,
          proc_cgroup: str | None = None) -> dict[str, Path]:
    """Put each daemon (name -> pid) in a cgroup of its own, under storbench's own cgroup, limited to ``cores``;
    returns name -> cgroup dir. ``cores`` None lifts the limit (the daemons stay in their cgroups)."""
    ctl = controller(cgroup_root, proc_cgroup)
    if ctl is None:
        raise UserError("lab: no cgroup cpu controller here (under storbench's own cgroup) to limit the OSDs' CPU",
                        hint="osd_cpus needs cgroup v1 cpu or cgroup v2 with the cpu controller (as root)")
    if ctl.v2:
        enable_v2(ctl.root, ctl.at_root, "cpu")
    file_name, line = quota_line(cores, ctl.v2)
    made = {}
    for name, pid in daemons.items():
        directory = group_dir(ctl, lab, name)
        directory.mkdir(exist_ok=True)
        try:
            (directory / file_name).write_text(line + "\n")
        except OSError as exc:  # cgroup v1 refuses a quota above the one of storbench's own cgroup (EINVAL)
            quota = "no CPU quota" if cores is None else f"a CPU quota of {cores:g} cores"
            raise UserError(f"lab: cannot give {name} {quota} in {directory} "
                            f"({exc.strerror or exc})", hint="storbench's own cgroup may allow less: lower osd_cpus"
                            ) from None
        (directory / "cgroup.procs").write_text(f"{pid}\n")
        made[name] = directory
    return made


def read_limit(directory: Path) -> float | None:
    """The cores the cgroup at ``directory`` allows (read back from the kernel's file)."""
    for file_name in ("cpu.cfs_quota_us", "cpu.max"):
        path = directory / file_name
        if path.exists():
            return parse_quota(file_name, path.read_text())
    raise UserError(f"lab: {directory} has no cpu quota file")


def remove_groups(lab: str, cgroup_root: Path = CGROUP_ROOT, proc_cgroup: str | None = None) -> None:
    """Remove this lab's daemon cgroups (their processes are gone; a cgroup with none left can be removed): under
    storbench's own cgroup, and at the hierarchy's root where older versions made them."""
    ctl = controller(cgroup_root, proc_cgroup)
    if ctl is None:
        return
    _remove_dirs(_lab_groups(lab, [ctl.root, ctl.mount]))


def _lab_groups(lab: str, parents: list[Path | None]) -> list[Path]:
    found: set[Path] = set()
    for parent in parents:
        if parent is not None:
            found.update(path for path in parent.glob(f"{GROUP_PREFIX}-{lab}-*") if path.is_dir())
    return sorted(found)


def _remove_dirs(directories: list[Path], timeout_s: float = 10.0) -> None:
    """rmdir each cgroup, retrying while the kernel still counts an exiting process in it (EBUSY); UserError naming
    those still busy after ``timeout_s`` (something still runs in them)."""
    deadline = time.monotonic() + timeout_s
    left = directories
    while left:
        busy = []
        for directory in left:
            try:
                os.rmdir(directory)
            except FileNotFoundError:
                pass
            except OSError as exc:
                if exc.errno == errno.EBUSY:
                    busy.append(directory)
        if not busy:
            return
        if time.monotonic() >= deadline:
            raise UserError(f"cgroup(s) {', '.join(map(str, busy))} still have processes in them",
                            hint=f"see which (cat {busy[0]}/cgroup.procs), stop them, then tear the lab down again")
        left = busy
        time.sleep(0.1)


# ---- pinning: a cpuset per daemon ----------------------------------------------------------------------------

def cpuset_controller(cgroup_root: Path = CGROUP_ROOT, proc_cgroup: str | None = None) -> CpuController | None:
    """Where to make cpusets, under storbench's own cgroup: cgroup v1's cpuset hierarchy, else cgroup v2 when it
    offers cpuset."""
    return _controller("cpuset", (("cpuset", "cpuset.cpus"),), cgroup_root, proc_cgroup)


def cpuset_root() -> tuple[Path, bool] | None:
    """Where to make cpusets (storbench's own cgroup in the cpuset hierarchy) and whether it is cgroup v2."""
    ctl = cpuset_controller()
    return None if ctl is None else (ctl.root, ctl.v2)


def pin(lab: str, daemons: dict[str, int], cpus: str | None, cgroup_root: Path = CGROUP_ROOT,
        proc_cgroup: str | None = None) -> None:
    """Put each daemon (name -> pid) in a cpuset of its own, under storbench's own cgroup, on ``cpus`` (None:
    every CPU of our cgroup)."""
    ctl = cpuset_controller(cgroup_root, proc_cgroup)
    if ctl is None:
        raise UserError("lab: no cgroup cpuset controller here (under storbench's own cgroup) to pin the OSDs",
                        hint="osd_cpuset needs cgroup v1 cpuset or cgroup v2 with the cpuset controller (as root)")
    root, v2 = ctl.root, ctl.v2
    if v2:
        enable_v2(root, ctl.at_root, "cpuset")
    everything = (root / ("cpuset.cpus.effective" if v2 else "cpuset.effective_cpus")).read_text().strip()
    mems = (root / ("cpuset.mems.effective" if v2 else "cpuset.effective_mems")).read_text().strip()
    for name, pid in daemons.items():
        directory = root / f"{GROUP_PREFIX}-{lab}-{name}"
        directory.mkdir(exist_ok=True)
        (directory / "cpuset.mems").write_text(mems + "\n")  # v1 needs both before a task may join
        (directory / "cpuset.cpus").write_text((cpus or everything) + "\n")
        (directory / "cgroup.procs").write_text(f"{pid}\n")


def pinned_cpus(lab: str, daemon: str) -> str | None:
    """The CPUs a daemon's cpuset allows, read back from the kernel (None: no cpuset)."""
    where = cpuset_root()
    if where is None:
        return None
    path = where[0] / f"{GROUP_PREFIX}-{lab}-{daemon}" / "cpuset.cpus"
    return path.read_text().strip() if path.exists() else None


def remove_cpusets(lab: str, cgroup_root: Path = CGROUP_ROOT, proc_cgroup: str | None = None) -> None:
    """Remove this lab's cpusets: under storbench's own cgroup, and at the root where older versions made them."""
    ctl = cpuset_controller(cgroup_root, proc_cgroup)
    if ctl is None:
        return
    _remove_dirs(_lab_groups(lab, [ctl.root, ctl.mount]))
