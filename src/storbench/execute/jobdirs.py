"""The private directories fio's job and output files live in while a repetition runs (shell). Each is named
after the storbench process that made it (``storbench-<pid>-…``, ``storbench-clients-<pid>-…`` in the system's
temporary directory), held by that process with a lock on the directory (flock) while it is used, and removed
when the repetition ends; one a killed storbench (``kill -9``) left behind is removed at the next start, with the
fio job processes still working in it: ``remove_stale_job_dirs``. The lock, not the pid, says a directory is in
use: a storbench in another PID namespace sharing the temporary directory (a container, a pod with the host's
/tmp) has a pid this one cannot see."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from storbench.execute.supervisor import process_dirs

# tempfile's names: the prefix, then 8 characters of [a-z0-9_]; made with a leading "." and renamed to it once
# locked, so a cleaner never sees a directory under its name before its lock
_JOB_DIR_RE = re.compile(r"(\.?)storbench-(?:clients-)?([0-9]{1,10})-[a-z0-9_]{8}")
# one still under its "." name (its maker killed between making and renaming it, a moment) is taken for stale only
# once unchanged this long: it may be between its making and its lock
FRESH_S = 60.0


@contextlib.contextmanager
def job_dir(kind: str = "") -> Iterator[str]:
    """A new private (0700) directory for one repetition's files, named after this process and locked by it
    until the block ends, then removed."""
    made = tempfile.mkdtemp(prefix=f".storbench-{kind + '-' if kind else ''}{os.getpid()}-")
    try:
        held = os.open(made, os.O_RDONLY | os.O_DIRECTORY)  # close-on-exec: fio does not inherit the lock
    except OSError:
        shutil.rmtree(made, ignore_errors=True)
        raise
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        named = os.path.join(os.path.dirname(made), os.path.basename(made)[1:])
        os.rename(made, named)  # the lock is the directory's: it goes with it
        made = named
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)  # still held: no cleaner takes it half removed
        os.close(held)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _in_use(path: str) -> bool:
    """Whether a storbench holds the directory at ``path`` (its lock), in any PID namespace. A directory that
    cannot be opened counts as in use."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # the lock, if taken, goes with it
    return False


def remove_stale_job_dirs(parent: str | Path | None = None, now_s: float | None = None) -> list[Path]:
    """Remove the job directories in ``parent`` (the temporary directory) that no storbench holds: ours (same
    user), real directories (never a link), named by ``job_dir``, whose lock is free and whose pid is not alive here
    (a storbench before the lock held none). One still under its "." name is removed only once unchanged for
    `FRESH_S`: it may be one just made and not yet locked (a storbench in another PID namespace has a pid this one
    cannot see); under its own name a directory is locked from the start."""
    root = Path(parent or tempfile.gettempdir())
    now_s = time.time() if now_s is None else now_s
    removed = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for entry in entries:
        match = _JOB_DIR_RE.fullmatch(entry.name)
        if match is None or int(match.group(2)) == os.getpid():
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        unnamed = bool(match.group(1))
        if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid()
                or (unnamed and now_s - info.st_mtime < FRESH_S)
                or _alive(int(match.group(2))) or _in_use(entry.path)):
            continue
        _kill_fio_in(entry.path)
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.lexists(entry.path):
            removed.append(Path(entry.path))
    return removed


def _kill_fio_in(path: str) -> None:
    """SIGKILL this user's fio processes working in ``path``: the jobs of a fio whose storbench was killed (kill -9).
    Its main process dies with storbench (`supervisor`), but the job processes, each in a session of its own, do not,
    and went on doing I/O until their runtime ended (a hung one for ever)."""
    resolved = os.path.realpath(path)  # the kernel gives a process's working directory resolved (a linked TMPDIR)
    for proc in process_dirs(others=True):
        try:
            if (os.readlink(proc / "cwd") != resolved or proc.stat().st_uid != os.getuid()
                    or (proc / "comm").read_text().strip() != "fio"):
                continue
            os.kill(int(proc.name), signal.SIGKILL)
        except OSError:  # gone meanwhile, or not ours to read
            continue
