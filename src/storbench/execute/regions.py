"""Where the checking writer's blocks live (shell; `check_writes`): a file of its own in a target's directory, a
range of a block device past fio's region, or an RBD image of its own next to the target's (through librbd, the
library fio's rbd engine uses, loaded with ctypes: no kernel client). Each one is made ready (``prepare``: made, or
zeroed, so every block reads as never written), opened, written and read a block at a time at byte offsets into
the region, closed, and what it made removed (``discard``).

A write returns only once the storage has acknowledged it: O_DSYNC (and O_DIRECT where the filesystem takes it) on
files and devices; librbd with its cache off (a write returns when every replica has it). A write that fails
raises ``OSError``.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import mmap
import os
from typing import Protocol

from storbench.ceph_client import CREATED_BY_KEY, RadosClient, checked

CHECK_IMAGE_ORDER = 16  # the checking writer's RBD image: objects of 2^16 bytes
CHECK_OBJECT_BYTES = 1 << CHECK_IMAGE_ORDER  # and its CephFS file's (`FileRegion`'s ``object_bytes``)


class Region(Protocol):
    """The checking writer's blocks on some storage."""

    def prepare(self, size_bytes: int) -> None:
        """Make the region ready, every byte zero (raises OSError when it cannot)."""

    def open(self) -> None:
        """Open it for writing and reading."""

    def write(self, buffer: mmap.mmap, offset: int) -> None:
        """Write the whole buffer at ``offset`` into the region; returns once acknowledged."""

    def read(self, buffer: mmap.mmap, offset: int) -> None:
        """Fill the buffer from ``offset`` into the region (past the end: zeros)."""

    def close(self) -> None: ...

    def discard(self) -> None:
        """Remove what ``prepare`` made (nothing for a device range)."""


class FileRegion:
    """A file of its own (``own_file``: made by ``prepare``, removed by ``discard``) or a device or file from
    ``offset_bytes`` on (zeroed by ``prepare``)."""

    def __init__(self, path: str, offset_bytes: int = 0, own_file: bool = False, direct: bool = True,
                 object_bytes: int | None = None) -> None:
        """``object_bytes``: a file of its own on CephFS is laid out in objects of that size (`_lay_out`)."""
        self.path, self.offset_bytes, self.own_file, self.direct = path, offset_bytes, own_file, direct
        self.object_bytes = object_bytes
        self._write_fd: int | None = None
        self._read_fd: int | None = None

    def prepare(self, size_bytes: int) -> None:
        if self.own_file:
            with contextlib.suppress(FileNotFoundError):  # a run killed before removing it: ours by its name
                os.unlink(self.path)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                self._lay_out(fd)
                os.ftruncate(fd, size_bytes)
            finally:
                os.close(fd)
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_DSYNC)
        try:
            size = os.lseek(fd, 0, os.SEEK_END)
            if self.offset_bytes + size_bytes > size:
                raise OSError(f"{self.path} has {size} bytes: no room for {size_bytes} past fio's "
                              f"{self.offset_bytes}")
            zeros = bytes(min(size_bytes, 1 << 20))  # as never written: an earlier repetition's blocks gone
            for start in range(0, size_bytes, len(zeros)):
                os.pwrite(fd, zeros[:size_bytes - start], self.offset_bytes + start)
        finally:
            os.close(fd)

    def _lay_out(self, fd: int) -> None:
        """A CephFS file's layout, set while it is empty: objects of ``object_bytes``, not CephFS's 4 MiB, for the
        reason the RBD image has small ones (`RbdRegion.prepare`). The stripe unit first: it must divide the object
        size. Where the client may not set layouts (no `p` in its MDS caps) the file keeps its directory's."""
        if self.object_bytes is None:
            return
        with contextlib.suppress(OSError):
            for name in ("ceph.file.layout.stripe_unit", "ceph.file.layout.object_size"):
                os.setxattr(fd, name, str(self.object_bytes).encode())

    def _open(self, flags: int) -> int:
        if self.direct:  # O_DIRECT where the filesystem takes it (a FUSE mount may not): else buffered
            try:
                return os.open(self.path, flags | os.O_DIRECT)
            except OSError:
                self.direct = False
        return os.open(self.path, flags)

    def open(self) -> None:
        self._write_fd = self._open(os.O_WRONLY | os.O_DSYNC)

    def write(self, buffer: mmap.mmap, offset: int) -> None:
        assert self._write_fd is not None
        written = os.pwritev(self._write_fd, [buffer], self.offset_bytes + offset)
        if written != len(buffer):
            raise OSError(f"short write: {written} of {len(buffer)} bytes")

    def read(self, buffer: mmap.mmap, offset: int) -> None:
        if self._read_fd is None:
            self._read_fd = self._open(os.O_RDONLY)
            if not self.direct:  # the page cache's copy dropped: the storage answers
                os.posix_fadvise(self._read_fd, 0, 0, os.POSIX_FADV_DONTNEED)
        buffer[:] = bytes(len(buffer))  # a short read (past the file's end) leaves zeros: never written
        # a read that fails raises: EIO, the storage cannot give the block back (lost, if acknowledged); anything
        # else (a timeout, a client cut off) leaves the read-back unfinished (`execute.checker.read_blocks`)
        os.preadv(self._read_fd, [buffer], self.offset_bytes + offset)

    def close(self) -> None:
        for fd in (self._write_fd, self._read_fd):
            if fd is not None:
                os.close(fd)
        self._write_fd = self._read_fd = None

    def discard(self) -> None:
        if self.own_file:
            with contextlib.suppress(OSError):
                os.unlink(self.path)


class RbdRegion:
    """An RBD image of the checking writer's own, ``image`` in ``pool``, made by ``prepare`` and removed by
    ``discard``; the cluster reached as ``client`` with ``conf`` (librbd's cache off: a write returns once every
    replica has it)."""

    def __init__(self, conf: str, client: str, pool: str, image: str) -> None:
        self.conf, self.client, self.pool, self.image = conf, client, pool, image
        self._client: RadosClient | None = None
        self._ioctx = ctypes.c_void_p()
        self._handle = ctypes.c_void_p()
        self._made = False

    def _connect(self) -> RadosClient:
        if self._client is None:
            client = RadosClient(self.conf, self.client)
            try:
                self._ioctx = client.ioctx(self.pool)
            except OSError:
                client.close()
                raise
            self._client = client
        return self._client

    def prepare(self, size_bytes: int) -> None:
        client = self._connect()
        name = self.image.encode()
        # a run killed before removing it left it: removed when it carries storbench's mark (one still open
        # elsewhere is not, and the create below says so); an image of that name storbench did not make is left
        existing = ctypes.c_void_p()
        if client.rbd.rbd_open(self._ioctx, name, ctypes.byref(existing), None) == 0:
            try:
                value, length = ctypes.create_string_buffer(64), ctypes.c_size_t(64)
                ours = client.rbd.rbd_metadata_get(existing, CREATED_BY_KEY.encode(), value, ctypes.byref(length)) in (
                    0, -errno.ERANGE)
            finally:
                client.rbd.rbd_close(existing)
            if not ours:
                raise OSError(errno.EEXIST, f"image {self.pool}/{self.image} exists and storbench did not make it "
                              "(no storbench.created mark): left alone")
            client.rbd.rbd_remove(self._ioctx, name)
        # objects of 64 KiB (order 16), not RBD's 4 MiB: the smallest region, 2,048 blocks of 4 KiB, had been 2
        # objects, on 2 placement groups, which a faulted OSD could miss altogether; now 128 of them
        order = ctypes.c_int(CHECK_IMAGE_ORDER)
        checked(client.rbd.rbd_create(self._ioctx, name, size_bytes, ctypes.byref(order)),
                f"creating image {self.pool}/{self.image}")
        self._made = True
        made = ctypes.c_void_p()
        checked(client.rbd.rbd_open(self._ioctx, name, ctypes.byref(made), None),
                f"opening image {self.pool}/{self.image}")
        try:
            checked(client.rbd.rbd_metadata_set(made, CREATED_BY_KEY.encode(), b"1"),
                    f"marking image {self.pool}/{self.image} as storbench's")
            # no cache for this image whatever the pool's or the cluster's settings say (an image's own config is
            # the last word): its writes return from the OSDs, and its read-back reads them there
            checked(client.rbd.rbd_metadata_set(made, b"conf_rbd_cache", b"false"),
                    f"turning the cache of image {self.pool}/{self.image} off")
        finally:
            client.rbd.rbd_close(made)

    def open(self) -> None:
        client = self._connect()
        checked(client.rbd.rbd_open(self._ioctx, self.image.encode(), ctypes.byref(self._handle), None),
                f"opening image {self.pool}/{self.image}")

    def write(self, buffer: mmap.mmap, offset: int) -> None:
        assert self._client is not None
        data = bytes(buffer)
        written = checked(self._client.rbd.rbd_write(self._handle, offset, len(data), data), "write")
        if written != len(data):
            raise OSError(f"short write: {written} of {len(data)} bytes")

    def read(self, buffer: mmap.mmap, offset: int) -> None:
        assert self._client is not None
        raw = ctypes.create_string_buffer(len(buffer))
        checked(self._client.rbd.rbd_read(self._handle, offset, len(buffer), raw), "read")
        buffer[:] = raw.raw

    def close(self) -> None:
        if self._client is not None and self._handle.value:
            self._client.rbd.rbd_close(self._handle)
            self._handle = ctypes.c_void_p()

    def discard(self) -> None:
        client, self._client = self._client, None
        if client is None:
            return
        try:
            if self._made:
                client.rbd.rbd_remove(self._ioctx, self.image.encode())
        finally:
            client.rados.rados_ioctx_destroy(self._ioctx)
            client.close()
