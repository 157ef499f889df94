"""One storbench at a time on a run (shell): the process running a run holds a lease on it in its store, so that a
`--resume` of it from another process is refused while it goes on (the two would run the same repetitions at once,
on one target, each disturbing the other's figures, and the later save would replace the earlier).

SQLite: an open-file-description lock (Linux's F_OFD_SETLK) on one byte of the database file, at 2^62 plus the run
id, far beyond the bytes SQLite locks itself; the kernel drops it when the process ends, however it ends, and
unlike a POSIX lock it is not dropped when another descriptor of the file is closed. The descriptor is closed only
after the store's connection (closing a descriptor of the file drops the process's POSIX locks, SQLite's own).
PostgreSQL: a session advisory lock on (storbench's class, the run id), dropped when the connection closes.
Where the file system offers no locks, no lease is taken (the run goes on as before).
"""

from __future__ import annotations

import errno
import fcntl
import os
import sqlite3
import struct

from storbench.store.rows import Connection

LEASE_CLASS = 0x5354_4F52  # "STOR": the first key of storbench's run leases on PostgreSQL (the second: the run id)
LEASE_BYTE = 1 << 62  # the SQLite file's byte for run 0; run N locks the byte N after it
_FLOCK = "hhqqi4x"  # struct flock on Linux (LP64): type, whence, start, len, pid


class RunLeases:
    """The runs this process holds in one store."""

    def __init__(self, conn: Connection, path: str) -> None:
        self.conn = conn
        self.path = path
        self._fd: int | None = None
        self.held: set[int] = set()

    def _lock(self, command: int, kind: int, run_id: int) -> bytes:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        return fcntl.fcntl(self._fd, command, struct.pack(_FLOCK, kind, os.SEEK_SET, LEASE_BYTE + run_id, 1, 0))

    def claim(self, run_id: int) -> bool:
        """Take run ``run_id``'s lease; False when another process holds it."""
        if run_id in self.held:
            return True
        if isinstance(self.conn, sqlite3.Connection):
            try:
                self._lock(fcntl.F_OFD_SETLK, fcntl.F_WRLCK, run_id)
            except OSError as exc:  # held (POSIX allows EAGAIN or EACCES for a conflict); else no such file (a
                # store in memory) or no locks on this file system: no lease, and the run goes on
                return exc.errno not in (errno.EAGAIN, errno.EACCES)
        elif not self._pg_try(run_id):
            return False
        self.held.add(run_id)
        return True

    def _pg_try(self, run_id: int) -> bool:
        return bool(self.conn.execute("SELECT pg_try_advisory_lock(?, ?) AS got", (LEASE_CLASS, run_id)).fetchone()
                    ["got"])

    def held_elsewhere(self, run_id: int) -> bool:
        """Whether another process holds run ``run_id``'s lease (it is running it), without taking it."""
        if run_id in self.held:
            return False
        if isinstance(self.conn, sqlite3.Connection):
            try:
                found = self._lock(fcntl.F_OFD_GETLK, fcntl.F_WRLCK, run_id)
            except OSError:
                return False
            return bool(struct.unpack(_FLOCK, found)[0] != fcntl.F_UNLCK)
        if not self._pg_try(run_id):
            return True
        self.conn.execute("SELECT pg_advisory_unlock(?, ?)", (LEASE_CLASS, run_id))
        return False

    def release(self) -> None:
        """Drop every lease (after the store's connection is closed: see the module)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self.held.clear()
