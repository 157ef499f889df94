"""Where a lab keeps its files and which processes it started (shell, with a pure core for the checks).

A lab runs as root, and `down` deletes its directory and kills its daemons, so nobody else may be able to
choose what that directory is or what it holds:

- the default root is /var/lib/storbench/lab (not world-writable /var/tmp, where anyone could plant
  a symbolic link named like the lab); $STORBENCH_LAB_DIR and `--dir` pass the same checks;
- every directory we create is created 0700; the lab's own directory must be a real directory (never a
  symbolic link), owned by us (the effective uid) and closed to group and others;
- every existing directory above it must be a real directory owned by root or us and not writable by group
  or others, unless it is sticky (like /tmp: nobody else can rename or delete an entry we own there). Every
  path is checked with lstat, so a symbolic link anywhere on the way is refused rather than followed;
- each daemon's pid is recorded with its start time (field 22 of /proc/PID/stat) in the lab's `pids.json`
  when it starts; `down` kills exactly those, and only while the start time still matches, so a pid the
  kernel has since given to another process is never killed. The lab never matches processes by command line.

Once the directory is checked, nobody but us can change what is in it, so paths inside it are safe to use.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import stat
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storbench.errors import UserError
from storbench.lab.process import start_daemon
from storbench.shell import interrupts_held

DEFAULT_LAB_ROOT = Path("/var/lib/storbench/lab")
PIDS_FILE = "pids.json"


def default_lab_dir() -> Path:
    """$STORBENCH_LAB_DIR, or /var/lib/storbench/lab (root-owned, 0700)."""
    return Path(os.environ.get("STORBENCH_LAB_DIR") or DEFAULT_LAB_ROOT)


# ---- pure checks ------------------------------------------------------------------------------------------------

def ancestor_problem(mode: int, uid: int, euid: int, *, also: Collection[int] = ()) -> str | None:
    """Why an existing directory above a lab directory (or another file root uses) cannot be trusted (None: it
    can). ``also``: more owners to trust besides root and ``euid`` (the user who ran sudo)."""
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(mode):
        return "is not a directory"
    if uid not in (0, euid, *also):
        return f"is owned by uid {uid}"
    if mode & (stat.S_IWGRP | stat.S_IWOTH) and not mode & stat.S_ISVTX:
        return "is writable by group or others"
    return None


def lab_dir_problem(mode: int, uid: int, euid: int) -> str | None:
    """Why a directory cannot be a lab's own directory (None: it can)."""
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(mode):
        return "is not a directory"
    if uid != euid:
        return f"is owned by uid {uid}, not {euid}"
    if mode & 0o077:
        return f"has mode {stat.S_IMODE(mode):04o}, open to group or others"
    return None


# ---- the lab directory ------------------------------------------------------------------------------------------

def _absolute(path: Path) -> Path:
    # abspath, not resolve(): resolving would follow the very links we refuse
    return Path(os.path.abspath(path))


def _refuse(path: Path, problem: str) -> UserError:
    return UserError(f"lab directory: {path} {problem}; refusing to use it as root",
                     hint="use a directory owned by root, mode 0700, below directories only root can write "
                          "(default /var/lib/storbench/lab; --dir or STORBENCH_LAB_DIR choose another)")


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _check_ancestors(path: Path, *, create: bool) -> None:
    """Every directory above ``path``, from /: trusted, or (with ``create``) made 0700 by us."""
    euid = os.geteuid()
    parts = path.parts
    for depth in range(1, len(parts)):
        here = Path(*parts[:depth])
        st = _lstat(here)
        if st is None:
            if not create:
                return  # nothing below a missing directory exists either
            with contextlib.suppress(FileExistsError):  # someone else's entry is refused just below
                os.mkdir(here, 0o700)
            st = os.lstat(here)
            problem = lab_dir_problem(st.st_mode, st.st_uid, euid)
        else:
            problem = ancestor_problem(st.st_mode, st.st_uid, euid)
        if problem:
            raise _refuse(here, problem)


LAB_PATH_RE = re.compile(r"[A-Za-z0-9._/+-]+")  # what a lab's path may hold: it goes into daemons' configuration files


def ensure_lab_dir(path: Path) -> Path:
    """Create (0700) or check the lab directory ``path`` and everything above it; returns it absolute. A path of
    other characters is refused: it is written into daemons' configuration (ganesha.conf, ceph.conf) and their
    command lines, where a space or a quote had broken them."""
    path = _absolute(path)
    if not LAB_PATH_RE.fullmatch(str(path)):
        raise UserError(f"lab directory {str(path)!r}: a lab's path holds only letters, digits and . _ + - /",
                        hint="give another --dir (or STORBENCH_LAB_DIR)")
    _check_ancestors(path, create=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    problem = lab_dir_problem(st.st_mode, st.st_uid, os.geteuid())
    if problem:
        raise _refuse(path, problem)
    return path


def lab_dir_exists(path: Path) -> bool:
    """True when ``path`` is a safe lab directory, False when it does not exist; refuses anything else."""
    path = _absolute(path)
    _check_ancestors(path, create=False)
    st = _lstat(path)
    if st is None:
        return False
    problem = lab_dir_problem(st.st_mode, st.st_uid, os.geteuid())
    if problem:
        raise _refuse(path, problem)
    return True


def every_step(*steps: Callable[[], object]) -> None:
    """A tear-down's steps, every one whatever another raises; the first error raised once all have run (a step
    that stopped the rest had left the namespaces, the firewall tables or the directory after it up)."""
    if errors := each_step(steps):
        raise errors[0]


def each_step(steps: Iterable[Callable[[], object]]) -> list[Exception]:
    """Run every one of ``steps`` whatever another raises; what they raised, in order."""
    errors: list[Exception] = []
    for step in steps:
        try:
            step()
        except Exception as exc:
            errors.append(exc)
    return errors


def remove_lab_dir(path: Path) -> None:
    """Delete a checked lab directory. shutil.rmtree works through file descriptors and never follows a
    symbolic link inside; the directory itself was just checked not to be one."""
    if lab_dir_exists(path):
        shutil.rmtree(_absolute(path), ignore_errors=True)


# ---- the lab's daemons ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Daemon:
    name: str
    pid: int
    start: int  # clock ticks after boot: /proc/PID/stat field 22


def parse_start_time(stat_text: str) -> int:
    """Field 22 (starttime) of /proc/PID/stat; the command name (field 2) may hold spaces and ')'."""
    fields = stat_text.rsplit(")", 1)[1].split()
    return int(fields[19])  # fields[0] is field 3 (state)


def start_time(pid: int) -> int | None:
    try:
        return parse_start_time(Path(f"/proc/{pid}/stat").read_text())
    except (OSError, ValueError, IndexError):
        return None


def record_daemon(lab_dir: Path, name: str, pid: int) -> Daemon:
    """Remember a daemon we just started (its pid cannot be reused yet: it is our unreaped child)."""
    started = start_time(pid)
    if started is None:
        raise UserError(f"lab: {name} exited at once", hint=f"see the logs in {lab_dir / 'log'}")
    daemon = Daemon(name=name, pid=pid, start=started)
    _write_daemons(lab_dir, [*recorded_daemons(lab_dir), daemon])
    return daemon


def _write_daemons(lab_dir: Path, daemons: Sequence[Daemon]) -> None:
    """The record of the lab's daemons, renamed over the last one whole: written in place, an interrupt or a full
    disk mid-write had left half a record, read as none, and `down` then killed nothing."""
    file = lab_dir / PIDS_FILE
    written = file.with_suffix(".new")
    written.write_text(json.dumps([d.__dict__ for d in daemons]))
    os.replace(written, file)


def recorded_daemons(lab_dir: Path) -> list[Daemon]:
    try:
        raw = json.loads((lab_dir / PIDS_FILE).read_text())
        return [Daemon(name=str(d["name"]), pid=int(d["pid"]), start=int(d["start"])) for d in raw]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _zombie(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return text.rsplit(")", 1)[1].split()[0] == "Z"


def live(daemons: Sequence[Daemon]) -> list[Daemon]:
    """The daemons still running as the very processes we started."""
    return [d for d in daemons if start_time(d.pid) == d.start and not _zombie(d.pid)]


def forget_daemons(lab_dir: Path, names: Sequence[str]) -> None:
    """Drop daemons from the record (after stopping them, before starting them again)."""
    _write_daemons(lab_dir, [d for d in recorded_daemons(lab_dir) if d.name not in names])


def kill_daemons(daemons: Sequence[Daemon], *, timeout_s: float = 15, graceful_s: float = 0) -> None:
    """Stop each recorded daemon that is still the process we started (its process group too: we started it as
    a session leader, and a group cannot be reused while its leader lives), then wait until gone. With
    ``graceful_s``, SIGTERM first and SIGKILL only for what is still there after that long."""
    targets = live(daemons)

    def send(daemon: Daemon, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if os.getpgid(daemon.pid) == daemon.pid:
                os.killpg(daemon.pid, sig)
            else:
                os.kill(daemon.pid, sig)

    if graceful_s > 0:
        for daemon in targets:
            send(daemon, signal.SIGTERM)
        deadline = time.time() + graceful_s
        while time.time() < deadline and live(targets):
            time.sleep(0.1)
        targets = live(targets)
    for daemon in targets:
        send(daemon, signal.SIGKILL)
    deadline = time.time() + timeout_s
    while time.time() < deadline and live(targets):
        time.sleep(0.1)
    for daemon in targets:  # a daemon this process started stays a zombie, in its cgroup, until reaped
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(daemon.pid, os.WNOHANG)


def port_open(address: str, port: int, *, timeout_s: float = 0.5) -> bool:
    """True when something on ``address`` accepts a TCP connection to ``port`` within ``timeout_s``: the one check
    every lab makes that a daemon of its answers."""
    try:
        with socket.create_connection((address, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def require_tools(lab: str, tools: Sequence[str], hint: str) -> None:
    """Refuse to bring ``lab`` up without the programs it runs."""
    for tool in tools:
        if shutil.which(tool) is None:
            raise UserError(f"{lab} lab: {tool} is not installed", hint=hint)


class LabDir:
    """One lab's state directory (``root``, checked as above), its state file and the daemons it recorded."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "lab.json"

    def exists(self) -> bool:
        return lab_dir_exists(self.root)

    def read_state(self) -> Any:
        """The state file's JSON (what `up` wrote), or None when the directory holds no lab or the file cannot
        be read."""
        if not self.exists():
            return None
        try:
            return json.loads(self.state.read_text())
        except (OSError, ValueError):
            return None

    def ensure(self) -> Path:
        return ensure_lab_dir(self.root)

    def remove(self) -> None:
        remove_lab_dir(self.root)

    def record(self, name: str, pid: int) -> Daemon:
        return record_daemon(self.root, name, pid)

    def start(self, name: str, argv: Sequence[str], log: Path) -> Daemon:
        """Start a daemon and record it, a Ctrl-C meanwhile held to the end: one between the two had left it
        running, unknown to `down`."""
        with interrupts_held():
            return self.record(name, start_daemon(argv, log))

    def daemons(self) -> list[Daemon]:
        return recorded_daemons(self.root)

    def live(self) -> list[Daemon]:
        return live(recorded_daemons(self.root))

    def forget(self, names: Sequence[str]) -> None:
        forget_daemons(self.root, names)

    def lost(self) -> list[str]:
        """The daemons recorded that no longer run (exited, or a zombie nobody reaped), by name: each name's latest
        record (a daemon started again is recorded again)."""
        latest = {d.name: d for d in self.daemons()}
        running = set(live(list(latest.values())))
        return [name for name, d in latest.items() if d not in running]

    def kill(self, *, graceful_s: float = 0) -> None:
        """Stop every daemon recorded (see ``kill_daemons``)."""
        kill_daemons(recorded_daemons(self.root), graceful_s=graceful_s)


class LabRoot:
    """A lab opened at its directory: ``root`` when given, else ``default``, made absolute but never resolved (a
    symbolic link on the way is refused, not followed); its `LabDir` (state file, daemon records, removal) and
    its state file."""

    def __init__(self, root: Path | None, default: Path) -> None:
        self.root = Path(os.path.abspath(root or default))  # no resolve(): links are refused
        self.dir = LabDir(self.root)  # its state file, daemon records and removal
        self.state = self.dir.state
