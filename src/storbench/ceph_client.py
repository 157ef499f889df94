"""A Ceph cluster reached through librados, loaded with ctypes (shell): the client library fio's rbd engine and the
ceph tools use, without a process per question (the ceph CLI costs a core for a third of a second a call; a
sampler asking every second would take that from the storage it measures). Just what storbench needs: monitor
commands (JSON in, JSON out), and RBD images of its own (`execute.regions.RbdRegion`)."""

from __future__ import annotations

import ctypes
import json
import os
from typing import Any

_handle, _text, _size = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
# Image metadata storbench sets on the images it creates: only those are written without `destructive: true`, and
# only those are removed
CREATED_BY_KEY = "storbench.created"


def _libraries() -> tuple[ctypes.CDLL, ctypes.CDLL]:
    """librados and librbd with the signatures used here (librados.h, librbd.h)."""
    rados, rbd = ctypes.CDLL("librados.so.2"), ctypes.CDLL("librbd.so.1")
    rados.rados_create.argtypes = [ctypes.POINTER(_handle), _text]
    rados.rados_conf_read_file.argtypes = [_handle, _text]
    rados.rados_conf_set.argtypes = [_handle, _text, _text]
    rados.rados_connect.argtypes = [_handle]
    rados.rados_ioctx_create.argtypes = [_handle, _text, ctypes.POINTER(_handle)]
    rados.rados_ioctx_destroy.argtypes = [_handle]
    rados.rados_ioctx_destroy.restype = None
    rados.rados_shutdown.argtypes = [_handle]
    rados.rados_shutdown.restype = None
    rados.rados_mon_command.argtypes = [_handle, ctypes.POINTER(_text), _size, _text, _size,
                                        ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_size),
                                        ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_size)]
    rados.rados_buffer_free.argtypes = [ctypes.c_void_p]
    rados.rados_buffer_free.restype = None
    rbd.rbd_create.argtypes = [_handle, _text, ctypes.c_uint64, ctypes.POINTER(ctypes.c_int)]
    rbd.rbd_open.argtypes = [_handle, _text, ctypes.POINTER(_handle), _text]
    rbd.rbd_close.argtypes = [_handle]
    rbd.rbd_remove.argtypes = [_handle, _text]
    rbd.rbd_metadata_get.argtypes = [_handle, _text, ctypes.c_char_p, ctypes.POINTER(_size)]
    rbd.rbd_metadata_set.argtypes = [_handle, _text, _text]
    for call in (rbd.rbd_write, rbd.rbd_read):
        call.argtypes = [_handle, ctypes.c_uint64, _size, ctypes.c_char_p]
        call.restype = ctypes.c_ssize_t
    return rados, rbd


def checked(code: int, what: str) -> int:
    """A librados/librbd return value: a negative errno raised as OSError."""
    if code < 0:
        raise OSError(-code, f"{what}: {os.strerror(-code)}")
    return code


class RadosClient:
    """One connection to a cluster as ``client`` (without "client."), configured by ``conf``; librados' own
    timeouts (``op_timeout_s``) so no call waits for ever on a cluster that never recovers."""

    def __init__(self, conf: str, client: str = "admin", op_timeout_s: int = 120) -> None:
        self.rados, self.rbd = _libraries()
        self.cluster = ctypes.c_void_p()
        checked(self.rados.rados_create(ctypes.byref(self.cluster), client.encode()), "rados_create")
        try:
            checked(self.rados.rados_conf_read_file(self.cluster, conf.encode()), f"reading {conf}")
            for key, value in (("rbd_cache", "false"), ("rados_osd_op_timeout", str(op_timeout_s)),
                               ("rados_mon_op_timeout", str(op_timeout_s)), ("client_mount_timeout", "60")):
                checked(self.rados.rados_conf_set(self.cluster, key.encode(), value.encode()), f"setting {key}")
            checked(self.rados.rados_connect(self.cluster), "connecting to the cluster")
        except OSError:
            self.rados.rados_shutdown(self.cluster)
            raise

    def mon_command(self, command: dict[str, Any]) -> Any:
        """A monitor command's JSON answer (``format: json`` is added)."""
        text = json.dumps({**command, "format": "json"}).encode()
        commands = (_text * 1)(text)
        out, out_len = ctypes.c_void_p(), _size()
        status, status_len = ctypes.c_void_p(), _size()
        code = self.rados.rados_mon_command(self.cluster, commands, 1, b"", 0, ctypes.byref(out),
                                            ctypes.byref(out_len), ctypes.byref(status), ctypes.byref(status_len))
        try:
            answer = ctypes.string_at(out, out_len.value) if out.value else b""
            said = ctypes.string_at(status, status_len.value).decode(errors="replace") if status.value else ""
        finally:
            for buffer in (out, status):
                if buffer.value:
                    self.rados.rados_buffer_free(buffer)
        checked(code, f"{command.get('prefix')}{': ' + said if said else ''}")
        return json.loads(answer) if answer else None

    def ioctx(self, pool: str) -> ctypes.c_void_p:
        ioctx = ctypes.c_void_p()
        checked(self.rados.rados_ioctx_create(self.cluster, pool.encode(), ctypes.byref(ioctx)), f"opening pool {pool}")
        return ioctx

    def close(self) -> None:
        self.rados.rados_shutdown(self.cluster)
