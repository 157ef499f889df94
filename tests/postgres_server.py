"""A throwaway PostgreSQL server for the tests (Debian's `postgresql` package, installed by `setup.sh --dev`): made
with initdb in a temporary directory, listening only on a Unix socket there (no TCP port), run by an unprivileged
user when the tests run as root (PostgreSQL refuses root), stopped and removed afterwards."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def postgres_bin() -> Path | None:
    """The directory of Debian's PostgreSQL server programs (the newest installed), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name))
    return Path(found[-1]).parent if found else None


def _as_user(user: str | None) -> list[str]:
    return ["runuser", "-u", user, "--"] if user else []


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a server; yields a URL of a database ``storbench`` on it (user ``storbench``, trust over the socket)."""
    bindir = postgres_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL is not installed: run scripts/setup.sh --dev")
    user = "nobody" if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="storbench-pg-"))
    data, sockets = root / "data", root / "sockets"
    sockets.mkdir()
    if user:
        entry = pwd.getpwnam(user)
        for path in (root, sockets):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    started = False
    try:
        subprocess.run([*_as_user(user), str(bindir / "initdb"), "-D", str(data), "-U", "storbench", "--auth=trust",
                        "--no-sync", "-E", "UTF8"], check=True, capture_output=True, cwd=root)
        subprocess.run([*_as_user(user), str(bindir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w",
                        "-o", f"-c listen_addresses='' -k {sockets} -c fsync=off -c full_page_writes=off", "start"],
                       check=True, capture_output=True, cwd=root)
        started = True
        deadline = time.monotonic() + 30
        while subprocess.run([str(bindir / "pg_isready"), "-h", str(sockets)], capture_output=True).returncode:
            if time.monotonic() > deadline:
                raise RuntimeError("PostgreSQL did not start: " + (root / "log").read_text())
            time.sleep(0.1)
        subprocess.run([str(bindir / "createdb"), "-h", str(sockets), "-U", "storbench", "storbench"], check=True,
                       capture_output=True)
        yield f"postgresql://storbench@/storbench?host={sockets}"
    finally:
        if started:
            subprocess.run([*_as_user(user), str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                            "stop"], capture_output=True, cwd=root)
        shutil.rmtree(root, ignore_errors=True)


def new_database(url: str, name: str) -> str:
    """A fresh, empty database ``name`` on the server of ``url``; its URL."""
    bindir = postgres_bin()
    assert bindir is not None
    host = url.split("host=", 1)[1]
    subprocess.run([str(bindir / "createdb"), "-h", host, "-U", "storbench", name], check=True, capture_output=True)
    return f"postgresql://storbench@/{name}?host={host}"
