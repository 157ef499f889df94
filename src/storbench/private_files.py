"""Files storbench writes for its user (shell): results databases, exports, reports and figures hold host
names, paths and plan text, so new ones are readable by their owner only (0600). An existing file keeps its
mode (the user chose it). A symbolic link is never followed: it could point anywhere."""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_MODE = 0o600


def create_private(path: str | Path) -> None:
    """Make ``path`` an empty 0600 file if it does not exist yet; leave an existing regular file alone."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_MODE)
    except FileExistsError:
        _refuse_link(path)
        return
    os.close(fd)


def write_private(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` to ``path``: a new file is created 0600; a symbolic link at ``path`` is refused."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, PRIVATE_MODE)
    except OSError as exc:
        if Path(path).is_symlink():
            raise OSError(exc.errno, "is a symbolic link; storbench does not write through links") from None
        raise
    with os.fdopen(fd, "wb") as out:
        out.write(data.encode() if isinstance(data, str) else data)


def _refuse_link(path: str | Path) -> None:
    if Path(path).is_symlink():
        raise OSError(f"{path} is a symbolic link; storbench does not write through links")
