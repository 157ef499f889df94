"""Container images built on this machine, as docker-archive tars for `ctr images import` (shell).

No registry is needed: the fio image is busybox-static plus this machine's fio and the shared libraries it
links; the pause image is a few lines of C linked statically.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from storbench.errors import UserError
from storbench.execute.k8s_manifests import FIO_USER

PAUSE_C = r"""
#include <signal.h>
#include <unistd.h>
static void leave(int sig) { (void)sig; _exit(0); }
int main(void) {
    signal(SIGTERM, leave);
    signal(SIGINT, leave);
    for (;;) pause();
}
"""
FIO_ENTRYPOINT = ["/usr/bin/fio"]
BUSYBOX_APPLETS = ("sh", "cat", "sleep", "date", "mkdir", "ls", "echo", "test", "[", "rm", "cp", "env", "true",
                   "wc")


def shared_libraries(binary: str) -> list[str]:
    """Absolute paths of the libraries `ldd` says ``binary`` loads (the dynamic loader included); none for a
    statically linked one (ldd says "not a dynamic executable" and exits 1: that had ended in a traceback)."""
    done = subprocess.run(["ldd", binary], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        if "not a dynamic executable" in done.stdout + done.stderr:
            return []
        said = (done.stderr or done.stdout).strip()[:300] or f"exit status {done.returncode}"
        raise UserError(f"ldd {binary}: {said}", hint="give a fio binary of this machine's architecture (--fio PATH)")
    return sorted({match for match in re.findall(r"(/[^\s)]+)", done.stdout) if os.path.exists(match)})


def _add_file(tar: tarfile.TarFile, source: str, name: str, mode: int = 0o755) -> None:
    data = Path(source).read_bytes()
    info = tarfile.TarInfo(name.lstrip("/"))
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


def _add_dir(tar: tarfile.TarFile, name: str, mode: int = 0o755) -> None:
    info = tarfile.TarInfo(name.lstrip("/"))
    info.type, info.mode = tarfile.DIRTYPE, mode
    tar.addfile(info)


def _add_link(tar: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name.lstrip("/"))
    info.type, info.linkname = tarfile.SYMTYPE, target
    tar.addfile(info)


def _archive(layer: bytes, tag: str, entrypoint: list[str]) -> bytes:
    """A docker-archive (docker save format) holding one layer."""
    diff_id = hashlib.sha256(layer).hexdigest()
    config = json.dumps({"architecture": "amd64", "os": "linux",
                         "config": {"Entrypoint": entrypoint, "Env": ["PATH=/bin:/usr/bin:/sbin"],
                                    "WorkingDir": "/"},
                         "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]}}).encode()
    config_name = f"{hashlib.sha256(config).hexdigest()}.json"
    manifest = json.dumps([{"Config": config_name, "RepoTags": [tag], "Layers": [f"{diff_id}/layer.tar"]}]).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in ((config_name, config), (f"{diff_id}/layer.tar", layer), ("manifest.json", manifest)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def fio_layer(fio_binary: str) -> bytes:
    """The fio image's one layer: busybox's shell and a few applets, this machine's fio and the libraries it links.
    Every entry has mtime 0 and owner root, so the same files give the same bytes (and digest)."""
    busybox = shutil.which("busybox")
    if busybox is None:
        raise UserError("the fio image: busybox is not installed", hint="run sudo storbench setup --k8s "
                        "(or apt-get install busybox-static)")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for directory in ("bin", "usr", "usr/bin", "lib", "lib64", "usr/lib", "etc", "data"):
            _add_dir(tar, directory)
        _add_dir(tar, "tmp", 0o1777)  # fio's output and logs, whichever user runs it
        _add_file(tar, busybox, "bin/busybox")
        for applet in BUSYBOX_APPLETS:
            _add_link(tar, f"bin/{applet}", "busybox")
        real_fio = os.path.realpath(fio_binary)
        _add_file(tar, real_fio, "usr/bin/fio")
        added = {"bin", "usr", "usr/bin", "tmp", "lib", "lib64", "usr/lib", "etc", "data"}
        for library in shared_libraries(real_fio):
            parts = Path(library.lstrip("/")).parts
            for depth in range(1, len(parts)):
                directory = "/".join(parts[:depth])
                if directory not in added:
                    _add_dir(tar, directory)
                    added.add(directory)
            _add_file(tar, os.path.realpath(library), library, 0o755)
        # root for the lab's pods; the unprivileged user (65532) the restricted Pod Security Standard asks for
        passwd = f"root:x:0:0:root:/:/bin/sh\nfio:x:{FIO_USER}:{FIO_USER}:fio:/tmp:/bin/sh\n".encode()
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        tar.addfile(info, io.BytesIO(passwd))
    return buffer.getvalue()


def fio_image(tag: str, fio_binary: str) -> bytes:
    """The fio image as a docker-archive, for the lab's `ctr images import`."""
    return _archive(fio_layer(fio_binary), tag, FIO_ENTRYPOINT)


def pause_image(tag: str) -> bytes:
    if shutil.which("gcc") is None:
        raise UserError("k8s lab: gcc is needed to build the pause image", hint="apt-get install gcc libc6-dev")
    with tempfile.TemporaryDirectory(prefix="storbench-pause-") as work:
        source, binary = Path(work) / "pause.c", Path(work) / "pause"
        source.write_text(PAUSE_C)
        subprocess.run(["gcc", "-static", "-O2", "-o", str(binary), str(source)], check=True, capture_output=True)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            _add_file(tar, str(binary), "pause")
        return _archive(buffer.getvalue(), tag, ["/pause"])
