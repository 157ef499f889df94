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
    root: Path  # where our cgroups are made
    v2: bool


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


def controller() -> CpuController | None:
    """The cpu controller to make cgroups in: cgroup v1's cpu hierarchy, else the v2 root when it offers cpu."""
    for name in ("cpu", "cpu,cpuacct"):
        if (CGROUP_ROOT / name / "cpu.cfs_quota_us").exists():
            return CpuController(CGROUP_ROOT / name, v2=False)
    for base in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
        controllers = base / "cgroup.controllers"
        if controllers.exists() and "cpu" in controllers.read_text().split():
            return CpuController(base, v2=True)
    return None


def group_dir(ctl: CpuController, lab: str, daemon: str) -> Path:
    return ctl.root / f"{GROUP_PREFIX}-{lab}-{daemon}"


def limit(lab: str, daemons: dict[str, int], cores: float | None) -> dict[str, Path]:
    """Put each daemon (name -> pid) in a cgroup of its own limited to ``cores``; returns name -> cgroup dir.
    ``cores`` None lifts the limit (the daemons stay in their cgroups)."""
    ctl = controller()
    if ctl is None:
        raise UserError("lab: no cgroup cpu controller here to limit the OSDs' CPU",
                        hint="osd_cpus needs cgroup v1 cpu or cgroup v2 with the cpu controller (as root)")
    if ctl.v2:
        subtree = ctl.root / "cgroup.subtree_control"
        with contextlib.suppress(OSError):
            subtree.write_text("+cpu\n")
    file_name, line = quota_line(cores, ctl.v2)
    made = {}
    for name, pid in daemons.items():
        directory = group_dir(ctl, lab, name)
        directory.mkdir(exist_ok=True)
        (directory / file_name).write_text(line + "\n")
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


def remove_groups(lab: str) -> None:
    """Remove this lab's daemon cgroups (their processes are gone; a cgroup with none left can be removed)."""
    ctl = controller()
    if ctl is None:
        return
    _remove_dirs(list(ctl.root.glob(f"{GROUP_PREFIX}-{lab}-*")))


def _remove_dirs(directories: list[Path], timeout_s: float = 10.0) -> None:
    """rmdir each cgroup, retrying while the kernel still counts an exiting process in it (EBUSY)."""
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
        if not busy or time.monotonic() >= deadline:
            return
        left = busy
        time.sleep(0.1)


# ---- pinning: a cpuset per daemon ----------------------------------------------------------------------------

CPU_LIST_RE = r"^[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?)*$"


def parse_cpu_list(text: str) -> list[int]:
    """``0-2,5`` -> [0, 1, 2, 5]; ValueError for anything else. Pure."""
    import re

    if not re.fullmatch(CPU_LIST_RE, text):
        raise ValueError(f"{text!r} is not a CPU list like 1 or 0-3,6")
    cpus: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        first, last = int(low), int(high or low)
        if last < first:
            raise ValueError(f"{part!r}: a range goes up")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def cpuset_root() -> tuple[Path, bool] | None:
    """Where to make cpusets: cgroup v1's cpuset hierarchy, else the v2 root when it offers cpuset."""
    if (CGROUP_ROOT / "cpuset" / "cpuset.cpus").exists():
        return CGROUP_ROOT / "cpuset", False
    for base in (CGROUP_ROOT, CGROUP_ROOT / "unified"):
        controllers = base / "cgroup.controllers"
        if controllers.exists() and "cpuset" in controllers.read_text().split():
            return base, True
    return None


def pin(lab: str, daemons: dict[str, int], cpus: str | None) -> None:
    """Put each daemon (name -> pid) in a cpuset of its own on ``cpus`` (None: every CPU of the root)."""
    where = cpuset_root()
    if where is None:
        raise UserError("lab: no cgroup cpuset controller here to pin the OSDs",
                        hint="osd_cpuset needs cgroup v1 cpuset or cgroup v2 with the cpuset controller (as root)")
    root, v2 = where
    if v2:
        with contextlib.suppress(OSError):
            (root / "cgroup.subtree_control").write_text("+cpuset\n")
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


def remove_cpusets(lab: str) -> None:
    where = cpuset_root()
    if where is None:
        return
    _remove_dirs(list(where[0].glob(f"{GROUP_PREFIX}-{lab}-*")))
