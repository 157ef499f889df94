"""`storbench doctor`'s probes (shell): for each piece `storbench.requirements` lists, whether this machine has it
and what it says of itself. Reads PATH, files, fio's own answers, Python's modules, the kernel's cgroups and its
performance-monitoring units; installs nothing."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable

from storbench.errors import UserError
from storbench.execute.fio_binary import fio_version
from storbench.fio.options import parse_engines
from storbench.lab.cpu_quota import controller
from storbench.lab.k8s import binaries_dir, csi_dir
from storbench.requirements import REQUIREMENTS, Found, Requirement
from storbench.shell import run
from storbench.targets.s3 import http_fio_binary
from storbench.telemetry.perf import CPU_PMUS, PMU_DIRECTORY


def _program(name: str) -> Found:
    path = shutil.which(name)
    return Found(path is not None, path or "")


def _file(name: str) -> Found:
    if name == "fio-nfs":
        try:
            return Found(True, http_fio_binary())  # the nfs engine's fio, with the http engine too
        except UserError as error:
            return Found(False, error.message)
    path = binaries_dir() / "kubelet" if name == "kubernetes" else csi_dir() / "storbench-csi"
    return Found(path.is_file(), str(path.parent))


def _cgroup(_: str) -> Found:
    found = controller()
    return Found(found is not None, "" if found is None else str(found.root))


def _module(name: str) -> Found:
    return Found(importlib.util.find_spec(name) is not None)


def _root(_: str) -> Found:
    return Found(os.geteuid() == 0)


def _pmu(_: str, directory: str = PMU_DIRECTORY) -> Found:
    """A CPU performance-monitoring unit the kernel offers (``cpu``, or a hybrid CPU's ``cpu_core``), as perf counts
    cycles with; missing: which units there are instead (a VM without a virtual PMU has only software ones)."""
    try:
        units = sorted(os.listdir(directory))
    except OSError:
        units = []
    found = [unit for unit in CPU_PMUS if unit in units]
    if found:
        return Found(True, f"{', '.join(found)} under {directory}")
    return Found(False, f"under {directory} only {', '.join(units) or 'nothing'}")


PROBES: dict[str, Callable[[str], Found]] = {"program": _program, "file": _file, "module": _module,
                                             "cgroup": _cgroup, "root": _root, "pmu": _pmu}


def examine(fio: str | None) -> dict[Requirement, Found]:
    """Every requirement probed; ``fio``: the fio a run would use (None: not found); its engines are its own."""
    engines: frozenset[str] = frozenset()
    version = ""
    said = ""
    if fio is not None:
        try:
            version = fio_version(fio)
            engines = parse_engines(run([fio, "--enghelp"], timeout_s=30))
        except UserError as error:
            said, version = error.message, ""
    found: dict[Requirement, Found] = {}
    for requirement in REQUIREMENTS:
        if requirement.probe == "engine":
            found[requirement] = Found(requirement.name in engines)
        elif requirement.name == "fio":
            found[requirement] = Found(bool(version), f"{version} at {fio}" if version else said)
        else:
            found[requirement] = PROBES[requirement.probe](requirement.name)
    return found
