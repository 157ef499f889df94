"""One storbench at a time on a lab (shell): a lab is claimed from its ``up`` to the end of its ``down`` by an
exclusive flock on ``.<name>.lock`` beside its directory (`claims_lab`, `frees_lab` on each lab's methods), so a
second run on the same lab directory, or `storbench lab ... down` while a run uses it, is refused in one line instead
of tearing the first one's namespaces, loop devices and daemons down under it."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
from collections.abc import Callable, Iterator
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
                            "STORBENCH_LAB_DIR; a hosts, NFS or k8s lab is one per machine)") from None
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


# ---- labs whose names are the machine's ------------------------------------------------------------------------
# The hosts, NFS and k8s labs name their network namespaces, bridges, firewall tables and veths the same whatever
# their directory, and find them by name at down: one such lab per kind on a machine. Its owner (the directory of
# the lab up now) is recorded in OWNERS, so an up or a down at another directory is refused instead of tearing that
# lab's objects down under it (the "another --dir" a busy lab's hint offers).
OWNERS = Path("/run/storbench-labs")


def _owner_file(kind: str) -> Path:
    return OWNERS / f"{kind}.owner"


def _in_use(root: Path) -> bool:
    """Whether the lab at ``root`` is there (its directory) or being brought up or down (its claim held)."""
    if _lstat(root) is not None:
        return True
    try:
        fd = os.open(_lock_file(root), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@contextlib.contextmanager
def _owners_locked(kind: str) -> Iterator[Path | None]:
    """The owner of ``kind``'s machine-wide names (None: none, or one whose lab is gone), read under a lock so that
    two processes do not both take them."""
    lock = OWNERS / f"{kind}.lock"
    for _attempt in range(10):
        _check_ancestors(lock, create=True)
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:  # its directory went with the last owner's down: made again above
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held, now = os.fstat(fd), _lstat(lock)
            if now is None or (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
                continue  # removed by the last owner's down as this process waited: take the one there now
            try:
                named = Path(_owner_file(kind).read_text().strip())
            except (OSError, ValueError):
                named = None
            yield named if named is not None and named.is_absolute() and _in_use(named) else None
            return
        finally:
            os.close(fd)
    raise UserError(f"{OWNERS}: the {kind} lab's lock file keeps changing", hint="try again")


def _forget_owner(kind: str) -> None:
    """The names free again (under `_owners_locked`): the owner record and the lock removed, and their directory when
    no other kind's are in it; nothing of the lab left in /run."""
    for file in (_owner_file(kind), OWNERS / f"{kind}.lock"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(file)
    with contextlib.suppress(OSError):
        os.rmdir(OWNERS)


def _refuse_other(kind: str, root: Path, owner: Path | None) -> None:
    if owner is not None and owner != root:
        raise UserError(f"a {kind} lab of {owner} is up on this machine: its network names are the machine's, one "
                        f"{kind} lab at a time", hint=f"use it (--dir {owner}), or take it down first: storbench lab "
                        f"{kind} down --dir {owner}")


def owns_names(kind: str) -> Callable[[Callable[Concatenate[S, P], R]], Callable[Concatenate[S, P], R]]:
    """For the ``up`` of a kind whose names are the machine's (below `claims_lab`): refused while another
    directory's lab of the kind is there, else the lab at ``self.root`` recorded as their owner."""
    def wrap(up: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
        @functools.wraps(up)
        def owned(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
            root = _absolute(self.root)
            with _owners_locked(kind) as owner:
                _refuse_other(kind, root, owner)
                _owner_file(kind).write_text(f"{root}\n")
            try:
                return up(self, *args, **kwargs)
            except BaseException:
                if _lstat(root) is None:  # an up refused or undone leaves no lab: nor its record in /run
                    with _owners_locked(kind) as owner:
                        _forget_owner(kind)
                raise
        return owned
    return wrap


def frees_names(kind: str) -> Callable[[Callable[Concatenate[S, P], R]], Callable[Concatenate[S, P], R]]:
    """For the ``down`` of such a kind (below `frees_lab`): refused while another directory's lab owns the names
    (a down at a directory with no lab had deleted them); its record dropped once this lab is down."""
    def wrap(down: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
        @functools.wraps(down)
        def freed(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
            root = _absolute(self.root)
            with _owners_locked(kind) as owner:
                _refuse_other(kind, root, owner)
            result = down(self, *args, **kwargs)
            if root not in _BRINGING_UP:
                with _owners_locked(kind) as owner:
                    if owner is None or owner == root:
                        _forget_owner(kind)
            return result
        return freed
    return wrap
