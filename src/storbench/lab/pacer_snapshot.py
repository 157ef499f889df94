"""The pacer's point-in-time copy (`Snapshot`): the file it serves as it was at one moment, each block kept before a
write lands on it and the rest copied a few blocks at a time beside the I/O; the copy a lying volume serves."""

from __future__ import annotations

import os

SNAPSHOT_BLOCK = 1 << 16  # what a snapshot keeps at a time
_ZEROS = bytes(SNAPSHOT_BLOCK)


class Snapshot:
    """A copy of the file served as it was at one moment, taken beside the I/O: before a write lands on a block not
    kept yet, that block's old bytes are kept first (`before_write`), and the rest is copied a few blocks at a time
    (`step`). A copy made by reading the live file (`cp`) would hold whatever was written while it read, the
    blocks it reached last (a checking writer's, past fio's region) the latest. Blocks of zeros stay holes."""

    def __init__(self, source_fd: int, path: str, size: int) -> None:
        self.path, self.size = path, size
        self.kept = bytearray(-(-size // SNAPSHOT_BLOCK))
        self.next = 0  # the first block `step` has not looked at
        self.failed = ""
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(self.fd, size)
            # its own handle on the file served: the pacer may switch (and close) its own before this copy is done
            self.source_fd = os.dup(source_fd)
        except OSError:
            os.close(self.fd)
            raise

    def _keep(self, block: int) -> None:
        if self.kept[block] or self.failed:
            return
        try:
            data = os.pread(self.source_fd, SNAPSHOT_BLOCK, block * SNAPSHOT_BLOCK)
            if data != _ZEROS[:len(data)]:
                os.pwrite(self.fd, data, block * SNAPSHOT_BLOCK)
        except OSError as exc:  # no room for the copy: it is no copy, and the writes go on
            self.failed = exc.strerror or str(exc)
            return
        self.kept[block] = 1

    def before_write(self, offset: int, length: int) -> None:
        for block in range(offset // SNAPSHOT_BLOCK, min(len(self.kept), (offset + max(length, 1) - 1)
                                                         // SNAPSHOT_BLOCK + 1)):
            self._keep(block)

    def step(self, blocks: int = 64) -> bool:
        """Keep the next ``blocks`` blocks; True when every block is kept (or the copy failed)."""
        end = min(len(self.kept), self.next + blocks)
        for block in range(self.next, end):
            self._keep(block)
        self.next = end
        return self.next >= len(self.kept) or bool(self.failed)

    def finish(self) -> str:
        """Every block kept and the copy on disk; "" or why it is no copy."""
        while not self.step(4096):
            pass
        if not self.failed:
            try:
                os.fsync(self.fd)
            except OSError as exc:
                self.failed = exc.strerror or str(exc)
        self.close()
        return self.failed

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            os.close(self.source_fd)
            self.fd = -1
