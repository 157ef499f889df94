"""Files storbench reads or runs as root that someone else could have written (shell, with a pure core).

A plan may name a ceph.conf (`targets.*.conf`) and an S3 `credentials_file`; storbench runs the libnfs/libcurl fio
and its metadata engine from a cache directory. Whoever can write such a file, or rename an entry in a directory
above it, chooses what root's Ceph tools do (a conf's `log_file`, `keyring`, `mon_host`) or what root runs. So a
file is used only when it is a regular file (looked at with lstat: never a symbolic link) owned by a trusted user
and not writable by group or others, and every directory above it passes the lab directory's rule
(`labdir.ancestor_problem`): no link, owned by a trusted user, not writable by group or others unless sticky.
Then nobody else can change what the path names between the check and its use.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection
from pathlib import Path

from storbench.errors import UserError
from storbench.lab.labdir import ancestor_problem


def invoking_uids() -> frozenset[int]:
    """Whose files a plan may name: root, the effective uid, and the user who ran sudo ($SUDO_UID)."""
    uids = {0, os.geteuid()}
    sudo_uid = os.environ.get("SUDO_UID", "")
    if sudo_uid.isdigit():
        uids.add(int(sudo_uid))
    return frozenset(uids)


def program_uids() -> frozenset[int]:
    """Whose files storbench runs or loads as code: root and the effective uid only."""
    return frozenset({0, os.geteuid()})


def file_problem(mode: int, uid: int, owners: Collection[int]) -> str | None:
    """Why a file (its lstat mode and owner) could have been written by someone else (None: it could not). Pure."""
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if not stat.S_ISREG(mode):
        return "is not a regular file"
    if uid not in owners:
        return f"is owned by uid {uid}"
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"has mode {stat.S_IMODE(mode):04o}, writable by group or others"
    return None


def untrusted(path: str | Path, owners: Collection[int]) -> str | None:
    """Why ``path`` (relative: to the current directory) or a directory above it could have been written by a
    user not in ``owners`` — "<path> <problem>" — or None when it could not."""
    absolute = Path(os.path.abspath(path))  # not resolve(): that would follow the links refused here
    found = untrusted_above(absolute, owners)
    if found is not None:
        return f"{found[0]} {found[1]}"
    try:
        st = os.lstat(absolute)
    except FileNotFoundError:
        return f"{absolute} does not exist"
    except OSError as exc:
        return f"{absolute} cannot be looked at ({exc.strerror})"
    problem = file_problem(st.st_mode, st.st_uid, owners)
    return f"{absolute} {problem}" if problem else None


def untrusted_above(path: Path, owners: Collection[int] = ()) -> tuple[Path, str] | None:
    """The first directory above the absolute ``path`` that a user other than root, the effective uid and
    ``owners`` could have written, with why (`labdir.ancestor_problem`: a link, another's, writable by group or
    others without the sticky bit, not there); None when none could. Whoever can write one can swap what ``path``
    names between a check and its use."""
    euid = os.geteuid()
    for here in reversed(path.parents):
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return here, "does not exist"
        except OSError as exc:  # a name too long, a directory we may not search
            return here, f"cannot be looked at ({exc.strerror})"
        problem = ancestor_problem(st.st_mode, st.st_uid, euid, also=owners)
        if problem:
            return here, problem
    return None


def trusted_program(path: str | Path, what: str, *, hint: str) -> str:
    """``path`` as a string when root may run or load it (owned by root or us, as is every directory above it,
    none writable by group or others); else a UserError naming ``what`` and the problem."""
    problem = untrusted(path, program_uids())
    if problem:
        raise UserError(f"{what}: {problem}; refusing to run it as uid {os.geteuid()}", hint=hint)
    return str(path)
