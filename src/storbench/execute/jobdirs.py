"""The private directories fio's job and output files live in while a repetition runs (shell). Each is named
after the storbench process that made it (``storbench-<pid>-…``, ``storbench-clients-<pid>-…`` in the system's
temporary directory) and removed when the repetition ends; one a killed storbench (``kill -9``) left behind is
removed at the next start: ``remove_stale_job_dirs``."""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

# tempfile's names: the prefix, then 8 characters of [a-z0-9_]
_JOB_DIR_RE = re.compile(r"storbench-(?:clients-)?([0-9]{1,10})-[a-z0-9_]{8}")


def job_dir(kind: str = "") -> tempfile.TemporaryDirectory[str]:
    """A new private (0700) directory for one repetition's files, named after this process."""
    return tempfile.TemporaryDirectory(prefix=f"storbench-{kind + '-' if kind else ''}{os.getpid()}-")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_job_dirs(parent: str | Path | None = None) -> list[Path]:
    """Remove the job directories in ``parent`` (the temporary directory) whose storbench process is gone: ours
    (same user), real directories (never a link), named by ``job_dir``. A directory whose pid is alive is kept,
    even if another program now has that pid. Returns what was removed."""
    root = Path(parent or tempfile.gettempdir())
    removed = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for entry in entries:
        match = _JOB_DIR_RE.fullmatch(entry.name)
        if match is None or int(match.group(1)) == os.getpid():
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or _alive(int(match.group(1))):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.lexists(entry.path):
            removed.append(Path(entry.path))
    return removed
