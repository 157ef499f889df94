"""Local targets (shell): a directory on a mounted filesystem (raw block devices: `targets.block`), and a
directory or device on real fio servers, bound by name."""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

from storbench.config.values import path_length_problem
from storbench.demands import MACHINE_SHARE, inodes_need
from storbench.errors import UserError
from storbench.execute.regions import CHECK_OBJECT_BYTES
from storbench.fio.jobfile import METADATA_DIR, JobBinding, escape_fio_path, is_safe_job_value, metadata_dir_names
from storbench.model import METADATA_RW, BlockTarget, Case, CephfsTarget, PathTarget, is_metadata
from storbench.shell import read_text
from storbench.targets.base import CHECK_FILE, FILENAME_FORMAT, FileCheckPlace, PreparedTarget
from storbench.targets.guards import (
    system_directory,
)
from storbench.trusted_files import invoking_uids, untrusted_above
from storbench.units import format_bytes
from storbench.working_set import working_set_bytes

# Every test file storbench's jobs make: its own (storbench.J.F), a client's (storbench.cN.J.F), and a fio
# server's, which prefixes the client's file with its address (10.214.0.10.storbench.c1.0.0).
TEST_FILE_RE = re.compile(r"(?:[0-9A-Fa-f.:\[\]]{1,64}\.)?storbench\.(?:c[0-9]{1,5}\.)?[0-9]{1,6}\.[0-9]{1,6}")


def filesystem_of(path: Path, mounts_text: str | None = None) -> tuple[str, str, str]:
    """(mount point, filesystem type, source device or server) holding ``path``: the longest matching mount (the
    last one mounted there when several are)."""
    best = ("", "", "")
    text = read_text("/proc/self/mounts") if mounts_text is None else mounts_text
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            mount_point = fields[1].replace("\\040", " ")
            if (str(path) == mount_point or str(path).startswith(mount_point.rstrip("/") + "/")) and len(
                mount_point
            ) >= len(best[0]):
                best = (mount_point, fields[2], fields[0].replace("\\040", " "))
    return best


# What a target's expected filesystem (`expect_fs`, or the kind: cephfs) accepts among /proc/mounts types.
FILESYSTEM_FAMILIES = {"ceph": ("ceph", "fuse.ceph-fuse", "fuse.ceph"), "nfs": ("nfs", "nfs4"),
                       "fuse": ("fuse",)}


def filesystem_matches(fs_type: str, expected: str) -> bool:
    return fs_type in FILESYSTEM_FAMILIES.get(expected, (expected,)) or (
        expected == "fuse" and fs_type.startswith("fuse."))


def check_path_target(spec: PathTarget | CephfsTarget, cases: Sequence[Case], *, create: bool, claim: bool = False,
                      where: str = "") -> PreparedTarget:
    """Resolve the directory; with ``create`` make it, with ``claim`` also create storbench's test files in it
    (``claim_test_files``; the caller removes them). Refuse when the working set cannot fit, or when the
    directory or an existing test file could let another user redirect fio's writes."""
    assert spec.path is not None
    directory = Path(spec.path).expanduser().resolve()
    if (problem := path_length_problem(str(directory))) is not None:  # the plan's own text was checked; this is
        # what fio gets, the current directory, ~ and symbolic links taken in
        raise UserError(f"target '{spec.name}': the directory fio would get, {str(directory)[:60]!r}..., is too long "
                        f"({problem})", where=where, hint="point path at a shorter directory")
    if not is_safe_job_value(escape_fio_path(str(directory))):
        raise UserError(f"target '{spec.name}': the directory {str(directory)!r} has characters that cannot go into "
                        "a fio job file", where=where, hint="use a directory without quotes, '$', '#', ';' or brackets")
    system = system_directory(str(directory))
    if system is not None:  # programs read what lies there: a plan's bytes could be run as root
        whose = "a home's dot-directory" if "/." in system else "the system's own directory"
        raise UserError(f"target '{spec.name}': {directory} is in {whose} {system}, where storbench writes no test "
                        "files", where=where,
                        hint="point path at a directory of its own on the filesystem to measure, e.g. /mnt/nvme/bench")
    if directory.exists() and not directory.is_dir():
        raise UserError(f"target '{spec.name}': {directory} exists and is not a directory", where=where,
                        hint="point path at a directory")
    probe = directory if directory.exists() else directory.parent
    if not probe.is_dir():  # storbench makes at most the last component: never a tree on the wrong disk
        what = "is not a directory" if probe.exists() else "does not exist"
        raise UserError(f"target '{spec.name}': {probe} {what}, so {directory} cannot be made in it", where=where,
                        hint="is its filesystem mounted? storbench creates only the last directory of path")
    mount_point, fs_type, source = filesystem_of(directory)
    expected = "ceph" if isinstance(spec, CephfsTarget) else spec.expect_fs
    if expected is not None and not filesystem_matches(fs_type, expected):
        raise UserError(f"target '{spec.name}': {directory} is on {fs_type or 'an unknown filesystem'} "
                        f"({source or '?'}, mounted at {mount_point or '?'}), not {expected}", where=where,
                        hint=f"mount the {expected} filesystem there first" + (
                            "" if isinstance(spec, CephfsTarget) else ", or drop expect_fs"))
    if not os.access(probe, os.W_OK):
        raise UserError(f"target '{spec.name}': {probe} is not writable", where=where,
                        hint="choose a directory you can write")
    needed = max((working_set_bytes(c) for c in cases), default=0)  # every job's and client's files
    existing = sum(f.stat().st_size for f in directory.glob("storbench.*")) if directory.exists() else 0
    free = shutil.disk_usage(probe).free
    if needed - existing > free:
        raise UserError(
            f"target '{spec.name}': needs {format_bytes(needed)} of test files, {probe} has {format_bytes(free)} free",
            where=where, hint="lower the target's size or numjobs, or free space",
        )
    _check_inodes(spec.name, probe, cases, where)
    if create:
        directory.mkdir(exist_ok=True)
    if directory.exists():
        refusal = directory_refusal(directory)
        if refusal:
            raise UserError(f"target '{spec.name}': {refusal}", where=where,
                            hint="use a directory owned by you (or root) that only its owner can write, as is "
                            "every directory above it")
    if directory.exists():
        refusal = claim_test_files(directory, test_file_names(cases), create=claim)
        if refusal is None and claim and any(is_metadata(c.workload.rw) for c in cases):
            refusal = claim_metadata_dir(directory, max((c.workload.dirs or 0 for c in cases), default=0) or None)
        if refusal:
            raise UserError(f"target '{spec.name}': {refusal}", where=where,
                            hint="remove it; storbench only writes test files it created itself")
    return PreparedTarget(
        spec=spec,
        binding=JobBinding(options=(("directory", escape_fio_path(str(directory))),
                                    ("filename_format", FILENAME_FORMAT))),
        details=(("kind", "path"), ("directory", str(directory)), ("mount_point", mount_point),
                 ("filesystem", fs_type), ("source", source)),
        check_place=FileCheckPlace(str(directory / CHECK_FILE), own_file=True, object_bytes=CHECK_OBJECT_BYTES
                                   if filesystem_matches(fs_type, "ceph") else None),
    )


def _check_inodes(name: str, probe: Path, cases: Sequence[Case], where: str) -> None:
    """The files the largest case makes fit in MACHINE_SHARE of the free inodes of the directory's filesystem
    (one without an inode limit reports none, as btrfs does, or -1, as CephFS through ceph-fuse does, and is not
    checked)."""
    need = inodes_need(cases)
    stats = os.statvfs(probe)
    if need is None or stats.f_files <= 0 or stats.f_favail < 0:
        return
    limit = int(stats.f_favail * MACHINE_SHARE)
    if need.amount > limit:
        raise UserError(f"target '{name}': makes {need.amount:,} files ({need.text}, and its directories); {probe} "
                        f"has {stats.f_favail:,} free inodes and a plan may use {MACHINE_SHARE:.0%} of them "
                        f"({limit:,})", where=where, hint=need.hint)


def directory_refusal(directory: Path) -> str | None:
    """Why storbench may not make test files in ``directory``: another user who owns it, or may write to it
    (without the sticky bit), could swap a test file for a link to any file or device between storbench's
    check and fio's open. None when it is safe."""
    st = os.lstat(directory)
    if stat.S_ISLNK(st.st_mode):
        return f"{directory} is a symbolic link"
    if st.st_uid not in (0, os.geteuid()):
        return f"{directory} belongs to uid {st.st_uid}, not to the user running storbench"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        return f"{directory} is writable by other users (mode {stat.S_IMODE(st.st_mode):o}, no sticky bit)"
    # a directory above it that another user may write: they could rename the test directory away and put a link
    # to any directory in its place, for fio (root's) to reopen its files through on every repetition
    found = untrusted_above(directory, invoking_uids())
    if found is not None:
        return (f"{found[0]}, above {directory}, {found[1]}: another user could swap the test directory for a link "
                "between storbench's check and fio's open")
    return None


def test_file_names(cases: Sequence[Case]) -> list[str]:
    """The files fio's jobs of these cases open in a local directory (storbench.JOB.FILE). Metadata operations
    work in a private directory of their own (``claim_metadata_dir``): no names here."""
    cases = [c for c in cases if not is_metadata(c.workload.rw)]
    if not cases:
        return []
    jobs = max((c.workload.numjobs for c in cases), default=1)
    files = max((int(dict(c.workload.fio_options).get("nrfiles", "1")) for c in cases), default=1)
    return [f"storbench.{job}.{number}" for job in range(jobs) for number in range(files)]


def claim_metadata_dir(directory: Path, dirs: int | None = None) -> str | None:
    """Make storbench's private directory for metadata operations (``METADATA_DIR``, mode 0700) in
    ``directory``, or accept one a kept earlier run left: a real directory of this user that no one else may
    enter. Returns why it is refused, or None."""
    path = directory / METADATA_DIR
    spread = [path / rw / name for rw in METADATA_RW for name in metadata_dir_names(dirs)]
    for made in (path, *(path / rw for rw in METADATA_RW), *spread):  # a directory per operation (and dirs)
        try:
            os.mkdir(made, 0o700)
            continue
        except FileExistsError:
            pass
        st = os.lstat(made)
        if not stat.S_ISDIR(st.st_mode):
            return f"{made} exists and is not a directory"
        if st.st_uid != os.geteuid() or st.st_mode & 0o077:
            return (f"{made} exists and is not storbench's own (owner uid {st.st_uid}, mode "
                    f"{stat.S_IMODE(st.st_mode):o})")
    return None


def _own_directory(path: Path) -> bool:
    """Whether ``path`` is a real directory (no link followed) of this user."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def remove_metadata_dir(directory: Path) -> int:
    """Remove the private directory of metadata operations and the files in it (never following a link).
    Returns how many files were removed."""
    path = directory / METADATA_DIR
    if not _own_directory(path):
        return 0
    count = sum(len(files) for _, _, files in os.walk(path))
    shutil.rmtree(path, ignore_errors=True)
    return count


def empty_operation_dir(directory: Path, rw: str) -> int:
    """Remove the files a metadata operation's own directory (``METADATA_DIR``/``rw`` in ``directory``) holds from
    an earlier repetition, keeping its directories (never following a link, only this user's files): a create
    killed before fio's `unlink`, or a cycle whose delete phase the runtime cut, had left files that the next
    create then only opened, twice as fast as a create. Returns how many were removed."""
    path = directory / METADATA_DIR / rw
    if not _own_directory(path):
        return 0
    removed = 0
    for parent, _, files in os.walk(path):
        for name in files:
            found = Path(parent) / name
            try:
                if os.lstat(found).st_uid == os.geteuid():
                    found.unlink()
                    removed += 1
            except OSError:
                continue
    return removed


def claim_test_files(directory: Path, names: Sequence[str], *, create: bool = True) -> str | None:
    """Create each test file that does not exist yet (with ``create``), exclusively and without following links
    (mode 0600), so fio opens storbench's own regular file; an existing one must be a regular file of this user
    with one link. Returns why a file is refused, or None."""
    own = os.geteuid()
    for name in names:
        path = directory / name
        if create:
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
                continue
            except FileExistsError:
                pass  # judged below
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            return f"test file {path} is a symbolic link"
        if not stat.S_ISREG(st.st_mode):
            return f"test file {path} is not a regular file"
        if st.st_uid != own:
            return f"test file {path} belongs to uid {st.st_uid}"
        if st.st_nlink != 1:
            return f"test file {path} has {st.st_nlink} hard links"
    return None


def remove_test_files(directory: Path) -> int:
    """Remove storbench's test files (regular files of this user named like them) from ``directory``; never
    follows a link. Returns how many were removed."""
    removed = 0
    own = os.geteuid()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        if not TEST_FILE_RE.fullmatch(entry.name):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and st.st_uid == own:
                os.unlink(entry.path)
                removed += 1
        except OSError:
            continue
    return removed


def remote_target(spec: PathTarget | BlockTarget | CephfsTarget) -> PreparedTarget:
    """A directory or device on other machines (real fio servers): bound by the name the servers know it by,
    checked by fio there. The plan check has made sure the path is absolute and a device is only read."""
    if isinstance(spec, BlockTarget):
        assert spec.device is not None  # the plan check refuses the volume lab with fio servers
        binding = JobBinding(options=(("filename", escape_fio_path(spec.device)),))
        where: tuple[str, str] = ("device", spec.device)
    else:
        assert spec.path is not None and spec.path.startswith("/")
        binding = JobBinding(options=(("directory", escape_fio_path(spec.path)), ("filename_format", FILENAME_FORMAT)))
        where = ("directory", spec.path)
    return PreparedTarget(spec=spec, binding=binding,
                          details=(("kind", spec.kind), where, ("checked", "on the fio servers")))
