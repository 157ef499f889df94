"""Find a fio binary and ask it what it supports (shell). What a binary answered is cached by its content's hash
(`~/.cache/storbench/fio-capabilities/SHA256.json`, the user's own and 0600): `plan`, `run` and `doctor` ask a
binary once, not four or more processes at every start; a binary rebuilt in place is a new hash, so it is asked
again."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from storbench.errors import UserError
from storbench.fio.options import FioCapabilities, parse_engines, parse_option_names, parse_version
from storbench.private_files import write_private

CACHE_FORMAT = 1


def find_fio(explicit: str | None = None) -> str:
    named = explicit or os.environ.get("STORBENCH_FIO")
    candidate = named or "fio"
    path = shutil.which(candidate)
    if path is None:
        given = "--fio" if explicit else "STORBENCH_FIO"
        raise UserError(
            f"fio not found ({candidate!r})",
            hint=f"no such program: check the path {given} names" if named else
            "install it (Debian: apt-get install fio) or pass --fio PATH / set STORBENCH_FIO",
        )
    return path


def _ask(binary: str, *args: str) -> str:
    try:
        done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"cannot run {binary} {' '.join(args)}: {exc}", hint="check the fio installation") from None
    return done.stdout


def fio_version(binary: str) -> str:
    """What ``binary --version`` says it is ("fio-3.33"). Raises UserError when it is not fio."""
    try:
        return parse_version(_ask(binary, "--version"))
    except ValueError as exc:
        raise UserError(f"{binary} does not look like fio: {exc}", hint="pass --fio PATH to a real fio") from None


def _cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "storbench" / "fio-capabilities"


def binary_digest(binary: str) -> str | None:
    """The SHA-256 of a binary's content (None when it cannot be read): what identifies an fio, whatever its path."""
    try:
        with open(binary, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


def _load(path: Path) -> dict[str, object] | None:
    """A cache file of ours (owned by this user, writable by no one else), else None."""
    try:
        found = path.lstat()
        if not path.is_file() or found.st_uid != os.geteuid() or found.st_mode & 0o022:
            return None
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) and document.get("format") == CACHE_FORMAT else None


def _strings(value: object) -> frozenset[str]:
    return frozenset(v for v in value if isinstance(v, str)) if isinstance(value, list) else frozenset()


def fio_capabilities(binary: str, engines: tuple[str, ...] = ()) -> FioCapabilities:
    """Version, option names, engines, and each requested engine's own options: from the cache of this binary's
    content when it has them, else asked of the binary (and cached)."""
    digest = binary_digest(binary)
    path = _cache_dir() / f"{digest}.json" if digest else None
    cached = (_load(path) if path is not None else None) or {}
    per_engine = cached.get("engine_options")
    known = ({name: _strings(options) for name, options in per_engine.items() if isinstance(name, str)}
             if isinstance(per_engine, dict) else {})
    version = cached.get("version")
    if isinstance(version, str):
        options, found = _strings(cached.get("options")), _strings(cached.get("engines"))
    else:
        version = fio_version(binary)
        options = parse_option_names(_ask(binary, "--cmdhelp"))
        found = parse_engines(_ask(binary, "--enghelp"))
    missing = [engine for engine in engines if engine not in known]
    for engine in missing:
        known[engine] = parse_option_names(_ask(binary, f"--enghelp={engine}"))
    if path is not None and (missing or not cached):
        with contextlib.suppress(OSError):  # a cache that cannot be written costs the next start, nothing else
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            partial = path.with_suffix(f".{os.getpid()}.partial")
            write_private(partial, json.dumps({
                "format": CACHE_FORMAT, "binary": binary, "version": version, "options": sorted(options),
                "engines": sorted(found), "engine_options": {e: sorted(o) for e, o in sorted(known.items())}}))
            partial.replace(path)
    return FioCapabilities(binary=binary, version=version, options=options, engines=found,
                           engine_options=tuple((e, known[e]) for e in engines))
