"""NFS targets (shell): an export driven by fio's nfs engine (libnfs), with a fio built for it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path

from storbench.errors import UserError, described
from storbench.execute.hosts import HostsExecutor
from storbench.execute.local import LocalExecutor
from storbench.fio.jobfile import JobBinding, client_binding, render_layout_job
from storbench.fio.nfs_jobs import render_nfs_clear_job, render_nfs_removal_job
from storbench.fio.options import parse_engines
from storbench.fio.parse import json_after_messages, parse_fio_json
from storbench.model import Case, Direction, NfsTarget, RepetitionOutcome, Status, is_metadata
from storbench.shell import interrupts_held, run
from storbench.targets.base import FILENAME_FORMAT, PreparedTarget
from storbench.trusted_files import trusted_program
from storbench.watchdog import WATCHDOG_FILL_TOTAL_REQUESTS_PER_S

# The fio build and its engine run as root: only from where nobody else could have put or changed them.
UNTRUSTED_BUILD_HINT = ("build it as the user that runs storbench (sudo storbench setup --labs puts it in root's "
                        "cache), or set STORBENCH_FIO_NFS to a copy owned by root, mode 0755, in root's directories")


def nfs_fio_binary() -> str:
    """A fio with the nfs engine: $STORBENCH_FIO_NFS, or the one storbench setup --labs cached (in
    $XDG_CACHE_HOME or ~/.cache of whoever runs storbench: root's own under plain sudo). Used only when it and
    every directory above it are root's or ours and closed to group and others (trusted_files)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "storbench" / "fio-nfs" / "fio"
    binary = os.environ.get("STORBENCH_FIO_NFS") or str(cache)
    if not Path(binary).is_file():
        raise UserError(f"no fio with the nfs engine at {binary} (Debian's fio is built without libnfs)",
                        hint="run storbench setup --labs (builds it in about a minute), or set STORBENCH_FIO_NFS")
    trusted_program(binary, "the fio with the nfs engine", hint=UNTRUSTED_BUILD_HINT)
    if "nfs" not in parse_engines(run([binary, "--enghelp"], timeout_s=30)):
        raise UserError(f"{binary} has no nfs engine", hint="rebuild it: storbench setup --labs")
    return binary


def nfs_metadata_engine(binary: str) -> str:
    """storbench's fio engine for metadata operations over libnfs, built beside the nfs-capable fio."""
    engine = Path(binary).parent / "storbench-nfsmeta.so"
    if not engine.is_file():
        raise UserError(f"no metadata engine for NFS at {engine} (built with fio by storbench setup --labs)",
                        hint="run storbench setup --labs again")
    return trusted_program(engine, "storbench's NFS metadata engine", hint=UNTRUSTED_BUILD_HINT)


def _ios_done(output_text: str) -> tuple[int, bool] | None:
    """(the I/Os fio says it did, every job and client; whether no job failed), or None when the output is not
    fio JSON. The nfs engine reports a failed open as error 0: a layout that did no I/O failed too."""
    try:
        output = parse_fio_json(json_after_messages(output_text))  # fio servers' messages come first
    except ValueError:
        return None
    return sum(d.total_ios for job in output.jobs for d in job.directions), all(job.error == 0 for job in output.jobs)


def _layout_ok(timed_out: bool, returncode: int | None, output_text: str) -> bool:
    done = None if timed_out or returncode != 0 else _ios_done(output_text)
    return done is not None and done[0] > 0 and done[1]


def _laid_out_names(binding: JobBinding, numjobs: int) -> tuple[str, ...]:
    """The files a layout job of ``binding`` writes: its filename_format for each job (one file each)."""
    name_format = dict(binding.options)["filename_format"]
    return tuple(name_format.replace("$jobnum", str(job)).replace("$filenum", "0") for job in range(numjobs))


def check_nfs_target(spec: NfsTarget, cases: Sequence[Case], *, where: str = "") -> None:
    try:
        binary = nfs_fio_binary()
        if any(is_metadata(c.workload.rw) for c in cases):
            nfs_metadata_engine(binary)
    except UserError as exc:
        raise UserError(f"target '{spec.name}': {exc.message}", where=where, hint=exc.hint) from None


def prepare_nfs_target(spec: NfsTarget, url: str, cases: Sequence[Case], *, servers: Sequence[str] = (),
                       client_fio: str = "fio") -> PreparedTarget:
    """Lay the test files out first (fio 3.33's nfs engine creates files only for rw=write), then bind jobs to
    them. A layout that fails or does no I/O is an error: the nfs engine reports a failed open as error 0.

    ``servers``: the cases run on these fio servers; each client has files of its own (``storbench.c<N>.*``),
    laid out by that client itself through ``client_fio`` (this machine's fio, the servers' client), so the
    files are made over the same network path the measurement takes. Real servers run their own nfs-capable
    fio: this machine's is needed only for metadata operations (namespace hosts, whose engine path is ours)."""
    metadata = any(is_metadata(c.workload.rw) for c in cases)
    binary = nfs_fio_binary() if metadata or not servers else None
    binding = JobBinding(options=(("nfs_url", url), ("filename_format", FILENAME_FORMAT)), fio_binary=binary,
                         external_engine=nfs_metadata_engine(binary) if metadata and binary else None)
    details = (("kind", "nfs"), ("url", url), ("fio", binary or "the fio servers' own"))
    if all(is_metadata(c.workload.rw) for c in cases):  # metadata jobs make and remove their own files
        return PreparedTarget(spec=spec, binding=binding, details=details)
    numjobs = max((c.workload.numjobs for c in cases), default=1)
    size = spec.size_bytes or 1 << 28
    clients = max(c.clients for c in cases) if servers else 0
    names = (tuple(name for c in range(1, clients + 1) for name in _laid_out_names(client_binding(binding, c),
                                                                                   numjobs))
             if servers else _laid_out_names(binding, numjobs))
    prepared = PreparedTarget(spec=spec, binding=binding, details=details, laid_out=names)
    try:
        if servers:
            _lay_out_on_servers(spec, binding, size, numjobs, servers[:clients], client_fio, url)
            return prepared
        assert binary is not None
        layout = LocalExecutor(binary).run(render_layout_job(binding, size, numjobs, "nfs"), timeout_s=600)
        if not _layout_ok(layout.timed_out, layout.returncode, layout.output_text):
            tail = " ".join(layout.stderr_tail.split()[-20:])
            raise UserError(f"target '{spec.name}': laying out {numjobs} file(s) on {url} failed: {tail}",
                            hint="check that the export is writable over NFSv3")
        return prepared
    except BaseException:  # a layout that failed part way (or was interrupted) may have made some: removed by name
        with interrupts_held(), contextlib.suppress(Exception):  # the layout's own error is the one to tell
            remove_laid_out(prepared)
        raise


def remove_laid_out(prepared: PreparedTarget) -> tuple[int, str]:
    """Delete the test files storbench laid out on an NFS export (through this machine's libnfs fio and
    storbench's metadata engine: one unlink each). Returns (files removed, why the rest stayed: "" if none)."""
    url = dict(prepared.details).get("url")
    if not prepared.laid_out or url is None:
        return 0, ""
    try:
        binary = nfs_fio_binary()
        engine = nfs_metadata_engine(binary)
    except UserError as exc:
        return 0, exc.message
    result = LocalExecutor(binary).run(render_nfs_removal_job(url, engine, prepared.laid_out), timeout_s=120)
    done = _ios_done(result.output_text)
    removed = done[0] if done else 0
    if removed < len(prepared.laid_out):
        return removed, " ".join((result.stderr_tail or "fio did not say why").split()[-12:])
    return removed, ""


def clear_nfs_metadata_files(prepared: PreparedTarget, case: Case) -> None:
    """The files a metadata operation of ``case`` may have left on the export (a phase its runtime cut, a
    repetition killed) deleted by name through storbench's NFS engine (`fio.nfs_jobs.render_nfs_clear_job`): a
    create over them would open them, and they would stay on the export. Given the time a fill of as many files
    may take (`watchdog.fill_limit_s`'s rate for all jobs together)."""
    w = case.workload
    count = (w.files or 0) * w.numjobs * case.clients
    binary = prepared.binding.fio_binary or nfs_fio_binary()
    done = LocalExecutor(binary).run(render_nfs_clear_job(case, prepared.binding),
                                     timeout_s=60 + count / WATCHDOG_FILL_TOTAL_REQUESTS_PER_S)
    if done.timed_out or done.returncode != 0:
        tail = " ".join((done.stderr_tail or "fio did not say why").split()[-16:])
        raise UserError(f"target '{prepared.spec.name}': clearing what its metadata operations left on the export "
                        f"failed: {tail}", hint="storbench setup --labs builds the NFS engine again (an engine built "
                        "before it could clear is refused by fio)")


def clears_by_name(prepared: PreparedTarget) -> bool:
    """Whether ``prepared`` is an NFS export with storbench's metadata engine: what its metadata operations leave is
    cleared by name (`clear_nfs_metadata_files`)."""
    return dict(prepared.details).get("kind") == "nfs" and prepared.binding.external_engine is not None


def clear_after(prepared: PreparedTarget, case: Case, outcome: RepetitionOutcome) -> str:
    """After a repetition of a metadata operation on an NFS export that may have left files there: one that did not
    end well, or whose deletes (`rw: delete`, the metadata cycle's delete phase) did not reach every file (its
    runtime cut them); a create or stat that ended well removed its own (fio's `unlink`). Those files deleted by
    name; "" or why they could not be (told, and the run goes on)."""
    w = case.workload
    if not is_metadata(w.rw) or not clears_by_name(prepared):
        return ""
    deletes = Direction.TRIM if w.rw == "metadata" else Direction.WRITE
    done = sum(d.total_ios for c in outcome.clients for d in c.directions if d.direction == deletes)
    if outcome.status == Status.OK and (w.rw not in ("delete", "metadata")
                                        or done >= (w.files or 0) * w.numjobs * case.clients):
        return ""
    try:
        clear_nfs_metadata_files(prepared, case)
    except (UserError, OSError) as exc:  # OSError: its job file not written (a full disk)
        return described(exc)
    return ""


def _lay_out_on_servers(spec: NfsTarget, binding: JobBinding, size: int, numjobs: int, servers: Sequence[str],
                        client_fio: str, url: str) -> None:

    texts = [render_layout_job(client_binding(binding, index), size, numjobs, "nfs")
             for index in range(1, len(servers) + 1)]
    result = HostsExecutor(client_fio, servers).run_clients(texts, servers, timeout_s=600)
    if not _layout_ok(result.timed_out, result.returncode, result.output_text):
        tail = " ".join((result.stderr_tail or result.output_text).split()[-20:])
        raise UserError(f"target '{spec.name}': laying out {numjobs} file(s) per client on {url} from "
                        f"{len(servers)} fio server(s) failed: {tail}",
                        hint="check that the servers reach the export over NFSv3 and run a fio with the nfs engine")
