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
import mmap
import os
from typing import Protocol


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

    def __init__(self, path: str, offset_bytes: int = 0, own_file: bool = False, direct: bool = True) -> None:
        self.path, self.offset_bytes, self.own_file, self.direct = path, offset_bytes, own_file, direct
        self._write_fd: int | None = None
        self._read_fd: int | None = None

    def prepare(self, size_bytes: int) -> None:
        if self.own_file:
            with contextlib.suppress(FileNotFoundError):  # a run killed before removing it: ours by its name
                os.unlink(self.path)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
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
        buffer[:] = bytes(len(buffer))
        with contextlib.suppress(OSError):  # a short read leaves zeros: never written
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


# librados and librbd, as far as the checking writer needs them (their C API, librados.h and librbd.h).
_ERRNO_TEXT = "librbd {what}: {text}"


def _libraries() -> tuple[ctypes.CDLL, ctypes.CDLL]:
    rados, rbd = ctypes.CDLL("librados.so.2"), ctypes.CDLL("librbd.so.1")
    handle, text = ctypes.c_void_p, ctypes.c_char_p
    rados.rados_create.argtypes = [ctypes.POINTER(handle), text]
    rados.rados_conf_read_file.argtypes = [handle, text]
    rados.rados_conf_set.argtypes = [handle, text, text]
    rados.rados_connect.argtypes = [handle]
    rados.rados_ioctx_create.argtypes = [handle, text, ctypes.POINTER(handle)]
    rados.rados_ioctx_destroy.argtypes = [handle]
    rados.rados_ioctx_destroy.restype = None
    rados.rados_shutdown.argtypes = [handle]
    rados.rados_shutdown.restype = None
    rbd.rbd_create.argtypes = [handle, text, ctypes.c_uint64, ctypes.POINTER(ctypes.c_int)]
    rbd.rbd_open.argtypes = [handle, text, ctypes.POINTER(handle), text]
    rbd.rbd_close.argtypes = [handle]
    rbd.rbd_remove.argtypes = [handle, text]
    rbd.rbd_write.argtypes = [handle, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_char_p]
    rbd.rbd_write.restype = ctypes.c_ssize_t
    rbd.rbd_read.argtypes = [handle, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_char_p]
    rbd.rbd_read.restype = ctypes.c_ssize_t
    return rados, rbd


def _check(code: int, what: str) -> int:
    if code < 0:
        raise OSError(-code, _ERRNO_TEXT.format(what=what, text=os.strerror(-code)))
    return code


class RbdRegion:
    """An RBD image of the checking writer's own, ``image`` in ``pool``, made by ``prepare`` and removed by
    ``discard``; the cluster reached as ``client`` with ``conf``. Operations time out after ``op_timeout_s``
    (librados' own timeout) rather than wait for ever on a cluster that never recovers."""

    def __init__(self, conf: str, client: str, pool: str, image: str, op_timeout_s: int = 120) -> None:
        self.conf, self.client, self.pool, self.image, self.op_timeout_s = conf, client, pool, image, op_timeout_s
        self._rados: ctypes.CDLL | None = None
        self._rbd: ctypes.CDLL | None = None
        self._cluster = ctypes.c_void_p()
        self._ioctx = ctypes.c_void_p()
        self._handle = ctypes.c_void_p()
        self._made = False

    def _connect(self) -> tuple[ctypes.CDLL, ctypes.CDLL]:
        if self._rados is None or self._rbd is None:
            rados, rbd = _libraries()
            _check(rados.rados_create(ctypes.byref(self._cluster), self.client.encode()), "rados_create")
            _check(rados.rados_conf_read_file(self._cluster, self.conf.encode()), f"reading {self.conf}")
            for key, value in (("rbd_cache", "false"), ("rados_osd_op_timeout", str(self.op_timeout_s)),
                               ("rados_mon_op_timeout", str(self.op_timeout_s)), ("client_mount_timeout", "60")):
                _check(rados.rados_conf_set(self._cluster, key.encode(), value.encode()), f"setting {key}")
            _check(rados.rados_connect(self._cluster), "connecting to the cluster")
            _check(rados.rados_ioctx_create(self._cluster, self.pool.encode(), ctypes.byref(self._ioctx)),
                   f"opening pool {self.pool}")
            self._rados, self._rbd = rados, rbd
        return self._rados, self._rbd

    def prepare(self, size_bytes: int) -> None:
        _, rbd = self._connect()
        order = ctypes.c_int(0)
        _check(rbd.rbd_create(self._ioctx, self.image.encode(), size_bytes, ctypes.byref(order)),
               f"creating image {self.pool}/{self.image}")
        self._made = True

    def open(self) -> None:
        _, rbd = self._connect()
        _check(rbd.rbd_open(self._ioctx, self.image.encode(), ctypes.byref(self._handle), None),
               f"opening image {self.pool}/{self.image}")

    def write(self, buffer: mmap.mmap, offset: int) -> None:
        assert self._rbd is not None
        data = bytes(buffer)
        written = _check(self._rbd.rbd_write(self._handle, offset, len(data), data), "write")
        if written != len(data):
            raise OSError(f"short write: {written} of {len(data)} bytes")

    def read(self, buffer: mmap.mmap, offset: int) -> None:
        assert self._rbd is not None
        raw = ctypes.create_string_buffer(len(buffer))
        _check(self._rbd.rbd_read(self._handle, offset, len(buffer), raw), "read")
        buffer[:] = raw.raw

    def close(self) -> None:
        if self._rbd is not None and self._handle.value:
            self._rbd.rbd_close(self._handle)
            self._handle = ctypes.c_void_p()

    def discard(self) -> None:
        if self._rados is None or self._rbd is None:
            return
        try:
            if self._made:
                self._rbd.rbd_remove(self._ioctx, self.image.encode())
        finally:
            self._rados.rados_ioctx_destroy(self._ioctx)
            self._rados.rados_shutdown(self._cluster)
            self._rados = self._rbd = None
