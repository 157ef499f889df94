"""One storbench at a time on a lab (shell): a lab is claimed from its ``up`` to the end of its ``down`` by an
exclusive flock on ``.<name>.lock`` beside its directory (`claims_lab`, `frees_lab` on each lab's methods), so a
second run on the same lab directory, or `storbench lab ... down` while a run uses it, is refused in one line instead
of tearing the first one's namespaces, loop devices and daemons down under it."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from storbench.errors import UserError
from storbench.lab.labdir import _absolute, _check_ancestors, _lstat

_HELD: dict[Path, int] = {}  # lab directory -> this process's lock on it (its lock file's descriptor)
_BRINGING_UP: set[Path] = set()  # labs whose up is under way in this process (a down inside it keeps the lock)


def hold_lab(root: Path) -> None:
    """This process's claim on the lab at ``root``: an exclusive flock on ``.<name>.lock`` beside it (the directory
    itself is removed and made anew by down and up), held from its up to the end of its down, or of the process.
    Another storbench's run or `storbench lab` command on the same directory is refused in one line instead of
    tearing this one's lab down under it. Held already by this process: nothing to do."""
    root = _absolute(root)
    if root in _HELD:
        return
    _check_ancestors(root, create=True)  # the lock file's directory: trusted (or made 0700 by us)
    lock = _lock_file(root)
    for _attempt in range(10):
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise UserError(f"the lab at {root} is in use by another storbench (a run, or a `storbench lab` "
                            "command)", hint="wait for it to end, or give this one another --dir (or "
                            "STORBENCH_LAB_DIR)") from None
        held, now = os.fstat(fd), _lstat(lock)
        if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
            _HELD[root] = fd
            return
        os.close(fd)  # its holder removed that file as it gave the lab up: take the one there now
    raise UserError(f"the lab at {root}: its lock file keeps changing", hint="try again")


def _lock_file(root: Path) -> Path:
    return root.with_name(f".{root.name}.lock")


def holds_lab(root: Path) -> bool:
    """Whether this process has claimed the lab at ``root`` (brought it up, for a run or a command)."""
    return _absolute(root) in _HELD


def release_lab(root: Path) -> None:
    """Give up this process's claim on the lab at ``root`` (its down has ended): its lock file removed while still
    held (nothing left behind; a process that opened it meanwhile sees it gone and takes a new one), then freed."""
    root = _absolute(root)
    fd = _HELD.pop(root, None)
    if fd is not None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(_lock_file(root))
        os.close(fd)


class _Rooted(Protocol):
    root: Path


S = TypeVar("S", bound=_Rooted)
P = ParamSpec("P")
R = TypeVar("R")


def claims_lab(up: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """For a lab's ``up``: the lab claimed (`hold_lab`) before anything is looked at or torn down, and kept."""
    @functools.wraps(up)
    def claimed(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        hold_lab(self.root)
        root = _absolute(self.root)
        inside = root in _BRINGING_UP
        _BRINGING_UP.add(root)
        try:
            return up(self, *args, **kwargs)
        except BaseException:
            if not inside:  # an up that failed has torn its lab down (or left it to `down`): nothing to guard
                release_lab(root)
            raise
        finally:
            if not inside:
                _BRINGING_UP.discard(root)
    return claimed


def frees_lab(down: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
    """For a lab's ``down``: the lab claimed while it is torn down, then given up, unless an ``up`` of this process
    is tearing a stale lab down before it brings a new one up."""
    @functools.wraps(down)
    def freed(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        hold_lab(self.root)
        try:
            return down(self, *args, **kwargs)
        finally:
            if _absolute(self.root) not in _BRINGING_UP:
                release_lab(self.root)
    return freed
