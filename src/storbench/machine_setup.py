"""`storbench setup` (shell): what scripts/setup.sh did, from the installed package — the system packages of the
options asked for (`requirements.setup_packages`) from this machine's own package sources, and with the labs a fio
built from Debian's own source package with libnfs and libcurl (the nfs and http engines) and storbench's
metadata engine for NFS (package data: `storbench/native`), cached in ~/.cache/storbench/fio-nfs. Source packages
come from `deb-src` entries derived from the machine's `deb` entries (`apt_sources`): its mirror, never a host
named here. Safe to run again: what is there is left alone."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path

from storbench.apt_sources import FILE_NAME, configured_entries, deb_src_text, has_sources
from storbench.errors import UserError
from storbench.fio.options import parse_engines
from storbench.requirements import SERVICES_NOT_WANTED, SETUP_PACKAGES
from storbench.shell import run

Say = Callable[[str], None]
APT_DIR = Path("/etc/apt")
APT_ENV = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
ENGINE_SOURCE = "storbench_nfsmeta.c"


def fio_nfs_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "storbench" / "fio-nfs"


def _apt(*args: str, timeout_s: float = 1800) -> None:
    _step(["apt-get", *args], f"apt-get {args[0]}", timeout_s=timeout_s, env=APT_ENV,
          hint="see apt's own message; storbench setup runs as root on Debian 12")


def _installed(package: str) -> bool:
    """Whether dpkg has ``package`` installed (not merely known: a removed package's configuration stays)."""
    done = subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True, check=False)
    return done.returncode == 0 and done.stdout.strip().endswith(" installed")


def missing_packages(packages: tuple[str, ...]) -> list[str]:
    if shutil.which("dpkg-query") is None:
        raise UserError("storbench setup installs Debian's packages, and this machine has no dpkg",
                        hint="install what `storbench doctor` lists with this system's own package manager")
    return [p for p in packages if not _installed(p)]


def _step(argv: list[str], what: str, *, timeout_s: float, hint: str, cwd: Path | None = None,
          env: dict[str, str] | None = None) -> str:
    """One step of the set-up (apt-get, the fio build); its output, or a UserError saying ``what`` failed with the
    last lines of what it said."""
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"{what} failed ({exc})", hint=hint) from None
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise UserError(f"{what} failed: {tail}", hint=hint)
    return done.stdout


BUILD_HINT = "see its message; storbench setup --labs runs as root on Debian 12 and installs the build's packages first"


def install_packages(packages: tuple[str, ...], say: Say) -> list[str]:
    """Install those of ``packages`` that are missing (apt-get, the machine's sources); stop and disable the
    services Debian starts that storbench does not want. Returns what was installed."""
    missing = missing_packages(packages)
    if not missing:
        return []
    say(f"setup: installing {' '.join(missing)}")
    _apt("update", "-qq")
    _apt("install", "-y", "-qq", "--no-install-recommends", *missing)
    if Path("/run/systemd/system").is_dir() and shutil.which("systemctl"):
        for package, service in SERVICES_NOT_WANTED.items():
            if package in missing:
                subprocess.run(["systemctl", "disable", "--now", service], capture_output=True, check=False)
    return missing


def _source_files() -> dict[str, str]:
    found = {}
    for path in [APT_DIR / "sources.list", *sorted((APT_DIR / "sources.list.d").glob("*"))]:
        if path.is_file() and path.suffix in (".list", ".sources"):
            found[str(path)] = path.read_text(errors="replace")
    return found


def ensure_source_packages(say: Say) -> None:
    """`deb-src` entries for apt-get source: the machine's own when it has some, else ours derived from its `deb`
    entries (written once, to /etc/apt/sources.list.d)."""
    entries = configured_entries(_source_files())
    if has_sources(entries):
        return
    if os.geteuid() != 0:
        raise UserError("building fio needs Debian's source package, and this machine has no deb-src entry for "
                        "Debian's main packages: "
                        f"writing one to {APT_DIR / 'sources.list.d'} needs root", hint="sudo storbench setup --labs")
    text = deb_src_text(entries)
    if not text:
        raise UserError("no apt sources with Debian's packages on this machine",
                        hint="add your mirror to /etc/apt/sources.list.d, then run storbench setup again")
    (APT_DIR / "sources.list.d" / FILE_NAME).write_text(text)
    say(f"setup: source packages from this machine's own mirrors ({APT_DIR / 'sources.list.d' / FILE_NAME})")
    _apt("update", "-qq")


def _has_engines(binary: Path) -> bool:
    try:
        engines = parse_engines(run([str(binary), "--enghelp"], timeout_s=30))
    except UserError:
        return False
    return {"nfs", "http"} <= engines


def build_fio_nfs(say: Say) -> Path:
    """fio from Debian's source package with libnfs and libcurl, and the NFS metadata engine; cached, and built
    again only when either is missing or the engine's source changed."""
    cache = fio_nfs_dir()
    source = (files("storbench") / "native" / ENGINE_SOURCE).read_text()
    cached_source = cache / ENGINE_SOURCE
    if (_has_engines(cache / "fio") and (cache / "storbench-nfsmeta.so").is_file() and cached_source.is_file()
            and cached_source.read_text() == source):
        return cache / "fio"
    install_packages(SETUP_PACKAGES["fio-nfs"], say)
    ensure_source_packages(say)
    say("setup: building fio with the nfs and http engines from Debian's source package (about a minute)")
    with tempfile.TemporaryDirectory(prefix="storbench-fio-") as work:
        _step(["apt-get", "source", "-qq", "--download-only", "fio"], "apt-get source fio", timeout_s=1800,
              hint="the machine's sources need deb-src entries for Debian's main component", cwd=Path(work),
              env=APT_ENV)
        dsc = sorted(Path(work).glob("fio_*.dsc"))
        if not dsc:
            raise UserError("apt-get source fio gave no fio_*.dsc", hint="the machine's deb-src entries need "
                            "Debian's main component")
        _step(["dpkg-source", "-x", str(dsc[-1]), f"{work}/src"], "building fio: dpkg-source -x", timeout_s=300,
              hint=BUILD_HINT, cwd=Path(work))
        src = Path(work) / "src"
        configured = _step(["./configure", "--disable-native"], "building fio: ./configure", timeout_s=600,
                           hint=BUILD_HINT, cwd=src)
        for engine in ("NFS engine", "http engine"):
            if not any(line.startswith(engine) and line.split()[-1] == "yes" for line in configured.splitlines()):
                raise UserError(f"fio's configure found no {engine} (libnfs-dev, libcurl4-openssl-dev)")
        _step(["make", f"-j{os.cpu_count() or 1}", "fio"], "building fio: make", timeout_s=3600, hint=BUILD_HINT,
              cwd=src)
        (src / ENGINE_SOURCE).write_text(source)
        _step(["gcc", "-O2", "-shared", "-fPIC", "-Wall", "-Werror", "-D_GNU_SOURCE", "-D_LARGEFILE_SOURCE",
               "-D_FILE_OFFSET_BITS=64", "-include", "config-host.h", "-I.", "-o", "storbench-nfsmeta.so",
               ENGINE_SOURCE, "-lnfs"], "building fio: the metadata engine's gcc", timeout_s=600, hint=BUILD_HINT,
              cwd=src)
        cache.mkdir(parents=True, exist_ok=True)
        for name, mode in (("fio", 0o755), ("storbench-nfsmeta.so", 0o755), (ENGINE_SOURCE, 0o644)):
            shutil.copyfile(src / name, cache / f".{name}.new")
            os.chmod(cache / f".{name}.new", mode)
            os.replace(cache / f".{name}.new", cache / name)
    if not _has_engines(cache / "fio"):
        raise UserError(f"the fio built at {cache / 'fio'} has no nfs or http engine")
    return cache / "fio"


LAB_MODULES_LOCK = "labs-modules.lock"  # package data: the labs' Python packages, pinned with hashes
# each package of that lock by the module it gives
LOCKED_MODULES = {"attrs": "attr", "idna": "idna", "outcome": "outcome", "pyfuse3": "pyfuse3", "sniffio": "sniffio",
                  "sortedcontainers": "sortedcontainers", "trio": "trio"}


def locked_blocks(text: str) -> dict[str, str]:
    """A lock file's requirement blocks (``name==version`` and its hash lines) by package name."""
    blocks: dict[str, str] = {}
    for block in re.split(r"\n(?=[a-z0-9][a-z0-9._-]*==)", text):
        lines = [line for line in block.strip("\n").splitlines() if not line.strip().startswith("#")]
        if lines and "==" in lines[0]:
            blocks[lines[0].split("==")[0].strip()] = "\n".join(lines)
    return blocks


def python_modules(say: Say) -> None:
    """The Python packages the labs import (pyfuse3 for the volume lab's pacer), into the environment storbench
    runs in, the ones missing, at the versions and hashes storbench's lock names (`LAB_MODULES_LOCK`; unpinned, an
    installed copy had taken whatever the index served); pyfuse3 built against the system's libfuse3, installed
    just before."""
    blocks = locked_blocks(files("storbench").joinpath(LAB_MODULES_LOCK).read_text())
    wanted = [blocks[name] for name, module in LOCKED_MODULES.items() if importlib.util.find_spec(module) is None]
    if not wanted:
        return
    say(f"setup: installing {' '.join(block.split(' ')[0] for block in wanted)} into {sys.prefix}")
    with tempfile.NamedTemporaryFile("w", suffix=".lock", prefix="storbench-") as lock:
        lock.write("\n".join(wanted) + "\n")
        lock.flush()
        run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--require-hashes",
             "--no-deps", "-r", lock.name], timeout_s=1800)
