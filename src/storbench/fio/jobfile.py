"""Case -> the exact fio job file text. Pure; every value is checked before it is written."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from storbench.fio.allowlist import is_allowed
from storbench.model import (
    FILL_JOB,
    METADATA_PHASES,
    METADATA_RW,
    NFS_METADATA_ENGINE,
    OBJECT_RW,
    Case,
    is_metadata,
    is_object,
)
from storbench.units import format_block_size

# What may appear in a value written to a job file. Anything that could start a new line, a section,
# a comment, an environment expansion or one of fio's '$' keywords ($jobnum, $mb_memory, ...) is refused,
# whatever its origin; '$' only in storbench's own file name format.
_JOB_VALUE_RE = re.compile(r"[A-Za-z0-9_.,:/+%@ =*^~\\-]*")
_JOB_KEY_RE = re.compile(r"[a-z][a-z0-9_]*")
_OWN_FILENAME_FORMAT_RE = re.compile(  # (in an S3 bucket, or in the metadata directory of an NFS export)
    r"(?:/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]/|/storbench-files/(?:create|stat|delete|metadata)/)?"
    r"storbench\.(?:[0-9a-f]{8,32}\.)?(?:c[0-9]{1,4}\.)?\$jobnum\.\$filenum")  # (an S3 run's token)
# S3 keys reach fio's http engine only through its environment: the job text names the variables.
S3_KEY_ID_ENV = "STORBENCH_S3_KEY_ID"
S3_KEY_ENV = "STORBENCH_S3_KEY"
_OWN_ENV_VALUES = {"http_s3_keyid": f"${{{S3_KEY_ID_ENV}}}", "http_s3_key": f"${{{S3_KEY_ENV}}}"}


@dataclass(frozen=True)
class JobBinding:
    """How a prepared target appears in a job file: its fio options (directory, filename, pool, ...) and the
    environment fio needs for it (CEPH_CONF for the rbd engine)."""

    options: tuple[tuple[str, str], ...]
    env: tuple[tuple[str, str], ...] = ()
    fio_binary: str | None = None  # a target that needs a special fio (the nfs engine)
    external_engine: str | None = None  # the shared object of storbench's NFS metadata engine


def escape_fio_path(path: str) -> str:
    """fio splits filename/directory values on ':'; escape it."""
    return path.replace(":", "\\:")


def is_safe_job_value(value: str) -> bool:
    """True when ``value`` cannot start a new line, section, comment or variable expansion in a job file."""
    return _JOB_VALUE_RE.fullmatch(value) is not None


def _line(key: str, value: str) -> str:
    if not _JOB_KEY_RE.fullmatch(key):
        raise ValueError(f"refusing fio option name {key!r}")
    if key == "filename_format" and _OWN_FILENAME_FORMAT_RE.fullmatch(value):
        return f"{key}={value}"
    if _OWN_ENV_VALUES.get(key) == value:
        return f"{key}={value}"
    if not is_safe_job_value(value):
        raise ValueError(f"refusing fio value {value!r} for {key!r}: it could change the job file")
    return f"{key}={value}"


def fio_seconds(seconds: float) -> str:
    """A duration as fio reads it: whole seconds as a number, anything finer in milliseconds (fio reads "1.5" as 1
    second and "0.5" as none: a 0.5 s ramp would not have happened)."""
    if seconds == int(seconds):
        return f"{int(seconds)}"
    return f"{round(seconds * 1000)}ms"


def job_options(case: Case, binding: JobBinding) -> list[tuple[str, str]]:
    """The ordered (option, value) pairs of a case's job, global section first."""
    w = case.workload
    engine = w.ioengine
    if engine == NFS_METADATA_ENGINE:
        if binding.external_engine is None:
            raise ValueError("the NFS metadata engine needs its shared object in the binding")
        engine = f"external:{binding.external_engine}"
    options: list[tuple[str, str]] = [
        ("ioengine", engine),
        ("direct", "1" if w.direct else "0"),
        ("time_based", "0" if is_metadata(w.rw) or w.rw == "delete_object" else "1"),
        ("runtime", fio_seconds(w.runtime_s)),
        ("ramp_time", fio_seconds(w.ramp_s)),
    ]
    if w.size_bytes is not None:
        options.append(("size", format_block_size(w.size_bytes)))
    options.extend(binding.options)
    options.extend([("clat_percentiles", "1"), ("lat_percentiles", "1")])
    return options


SEED_OPTIONS = frozenset({"randseed", "randrepeat"})


def repetition_seed(case_id: str, repetition: int, client: int = 0) -> int:
    """fio's random seed for one repetition (and client) of a case: a new offset sequence each repetition, so
    repetitions are independent samples (fio's default repeats the same offsets, which a cache would learn),
    yet the same on a re-run, so results reproduce."""
    digest = hashlib.sha256(f"{case_id}:{repetition}:{client}".encode()).hexdigest()
    return int(digest[:8], 16)


# The private directory of metadata operations inside a target directory: storbench makes it (0700) before
# the run and removes it after, so the files fio creates, stats and deletes there can be no one else's.
METADATA_DIR = "storbench-files"


def metadata_dir_names(dirs: int | None) -> list[str]:
    """The subdirectories a metadata operation's jobs are spread over (none: the operation's own directory)."""
    return [f"d{i}" for i in range(dirs)] if dirs else []


def metadata_binding(binding: JobBinding, rw: str, dirs: int | None = None) -> JobBinding:
    """The binding with its directory moved into ``METADATA_DIR``/``rw``: a directory per operation, so creates
    always start from an empty one whatever stat or delete left; with ``dirs``, a list of that many
    subdirectories, which fio hands to the job clones in turn."""
    def moved(value: str) -> str:
        base = f"{value}/{METADATA_DIR}/{rw}"
        return ":".join(f"{base}/{name}" for name in metadata_dir_names(dirs)) or base

    if any(k == "nfs_url" for k, _ in binding.options):  # an NFS export through libnfs: paths inside it
        if dirs:
            raise ValueError("dirs is not supported on nfs targets")
        nfs = tuple(("nfsmeta_url", v) if k == "nfs_url" else
                    ("filename_format", f"/{METADATA_DIR}/{rw}/{v}") if k == "filename_format"  # a client's own
                    else (k, v) for k, v in binding.options)
        return replace(binding, options=nfs)
    options = tuple((k, moved(v) if k == "directory" else v) for k, v in binding.options)
    if not any(k == "directory" for k, _ in options):
        raise ValueError("metadata operations need a directory target")
    return replace(binding, options=options)


def _nfs_metadata_lines(case: Case) -> list[str]:
    """A metadata operation through storbench's NFS engine: stat and delete first create their files in an
    unmeasured section (``FILL_JOB``, empty files: the engine creates, it does not write); create and stat
    unlink theirs after the job (the engine then removes the empty directories)."""
    w = case.workload
    assert w.files is not None
    shape = [_line("bs", format_block_size(w.bs_bytes)), _line("iodepth", "1"), _line("numjobs", str(w.numjobs)),
             _line("nrfiles", str(w.files)), _line("filesize", format_block_size(w.bs_bytes))]
    lines: list[str] = []
    if w.rw != "create":
        lines += [f"[{FILL_JOB}]", _line("nfsmeta_op", "create"), _line("rw", "write"), *shape]
    lines += [f"[{case.case_id}]"] + ([_line("stonewall", "1")] if w.rw != "create" else [])
    lines += [_line("nfsmeta_op", w.rw), _line("rw", METADATA_RW[w.rw][1]), *shape]
    return lines + ([_line("unlink", "1")] if w.rw != "delete" else [])


def _phase_lines(case: Case, nfs: bool) -> list[str]:
    """rw: metadata: create, stat and delete in turn over the same files, each phase a stonewalled section
    ``<case>.<phase>`` with its own engine (or nfsmeta_op); create leaves its (empty) files for stat, fio lays
    them out to file_size before the stat phase measures, delete removes them."""
    w = case.workload
    assert w.files is not None
    shape = [_line("bs", format_block_size(w.bs_bytes)), _line("iodepth", "1"), _line("numjobs", str(w.numjobs)),
             _line("nrfiles", str(w.files)), _line("filesize", format_block_size(w.file_size_bytes or w.bs_bytes))]
    if not nfs:
        shape += [_line("openfiles", "1"), _line("fallocate", "none")]
    lines: list[str] = []
    for phase in METADATA_PHASES:
        lines.append(f"[{case.case_id}.{phase}]")
        if phase != "create":
            lines.append(_line("stonewall", "1"))
        lines.append(_line("nfsmeta_op", phase) if nfs else _line("ioengine", METADATA_RW[phase][0]))
        lines += [_line("rw", METADATA_RW[phase][1]), *shape]
        if phase == "create" and not nfs:
            lines.append(_line("create_on_open", "1"))
    return lines


def _metadata_lines(case: Case) -> list[str]:
    """The job section of a metadata operation: each file of each job created, stat'ed or deleted once (size
    based; runtime only caps it). create makes empty files and unlinks them after the job (so every repetition
    creates anew); stat and delete find files of file_size that fio lays out before it measures."""
    w = case.workload
    assert w.files is not None and w.file_size_bytes is not None
    lines = [_line("rw", METADATA_RW[w.rw][1]), _line("bs", format_block_size(w.bs_bytes)),
             _line("iodepth", "1"), _line("numjobs", str(w.numjobs)), _line("nrfiles", str(w.files)),
             _line("filesize", format_block_size(w.file_size_bytes or w.bs_bytes)), _line("openfiles", "1"),
             _line("fallocate", "none")]
    if w.rw == "create":
        lines += [_line("create_on_open", "1"), _line("unlink", "1")]
    return lines


def _object_lines(case: Case) -> list[str]:
    """The sections of an object operation: each job clone works on ``files`` objects of bs (one request each);
    get, getput and delete_object are preceded by a size-based PUT of those objects, stonewalled."""
    w = case.workload
    assert w.files is not None
    size = _line("size", format_block_size(w.files * w.bs_bytes))
    shape = [_line("bs", format_block_size(w.bs_bytes)), _line("iodepth", "1"), _line("numjobs", str(w.numjobs)), size]
    lines: list[str] = []
    if w.rw != "put":
        lines += [f"[{FILL_JOB}]", _line("rw", "write"), *shape, _line("time_based", "0"), _line("ramp_time", "0")]
    lines += [f"[{case.case_id}]"] + ([_line("stonewall", "1")] if w.rw != "put" else [])
    lines.append(_line("rw", OBJECT_RW[w.rw]))
    if w.rwmixread is not None:
        lines.append(_line("rwmixread", str(w.rwmixread)))
    return lines + shape


# fio's per-window logs of a repetition with a timeline, in fio's working directory: <name>_iops.<job>.log (each
# window's IOPS) and <name>_clat.<job>.log (each window's longest completion latency), one per numjobs clone
TIMELINE_LOG = "timeline"


def timeline_lines(window_ms: int) -> list[str]:
    """The options that make fio log the I/O window by window, on the wall clock (`fio.logs`)."""
    return [_line("write_iops_log", TIMELINE_LOG), _line("write_lat_log", TIMELINE_LOG),
            _line("log_avg_msec", str(window_ms)), _line("log_max_value", "1"), _line("log_unix_epoch", "1")]


def timeline_logs(names: Sequence[str]) -> list[str]:
    """Of the files fio left in its working directory, the timeline logs storbench reads (IOPS and completion
    latency; not the total and submission latency logs fio writes beside them), sorted."""
    return sorted(name for name in names if re.fullmatch(rf"{TIMELINE_LOG}_(iops|clat)\.[0-9]{{1,5}}\.log", name))


def render_job(case: Case, binding: JobBinding, repetition: int | None = None, client: int = 0) -> str:
    """The job file for one case (with ``repetition``: that repetition's random seed, unless the plan sets
    randseed or randrepeat itself). numjobs clones are separate jobs in fio's output; storbench merges their
    latency bins itself, so group_reporting stays off."""
    w = case.workload
    metadata = is_metadata(w.rw)
    lines = [f"; storbench case {case.case_id} ({case.target.name})", "[global]"]
    lines += [_line(k, v) for k, v in job_options(case, metadata_binding(binding, w.rw, w.dirs) if metadata
                                                  else binding)]
    if repetition is not None and not SEED_OPTIONS & {k for k, _ in w.fio_options}:
        lines.append(_line("randseed", str(repetition_seed(case.case_id, repetition, client))))
    if is_object(w.rw):
        lines += _object_lines(case)
    elif w.rw == "metadata":
        lines += _phase_lines(case, nfs=w.ioengine == NFS_METADATA_ENGINE)
    elif metadata and w.ioengine == NFS_METADATA_ENGINE:
        lines += _nfs_metadata_lines(case)
    elif metadata:
        lines += [f"[{case.case_id}]", *_metadata_lines(case)]
    else:
        lines.append(f"[{case.case_id}]")
        lines.append(_line("rw", w.rw))
        if w.rwmixread is not None:
            lines.append(_line("rwmixread", str(w.rwmixread)))
        lines += [
            _line("bs", format_block_size(w.bs_bytes)),
            _line("iodepth", str(w.iodepth)),
            _line("numjobs", str(w.numjobs)),
        ]
        if w.timeline_window_ms is not None:
            lines += timeline_lines(w.timeline_window_ms)
    for key, value in w.fio_options:
        if not is_allowed(key, value):
            raise ValueError(f"refusing pass-through fio option {key}={value!r}: not on the allow-list")
        lines.append(_line(key, value))
    return "\n".join(lines) + "\n"


def fill_job(job_text: str, passes: int) -> str:
    """A case's job text turned into a size-based fill: its working set written ``passes`` times (fio `loops`),
    its runtime left as a cap."""
    if job_text.count("\ntime_based=1\n") != 1 or not 1 <= passes <= 100:
        raise ValueError("not a storbench job text, or passes out of range")
    return job_text.replace("\ntime_based=1\n", f"\ntime_based=0\nloops={passes}\n")


def render_layout_job(binding: JobBinding, size_bytes: int, numjobs: int, ioengine: str) -> str:
    """A job that writes every test file once, sequentially, so later cases find them complete."""
    lines = ["; storbench layout", "[global]", _line("ioengine", ioengine), _line("rw", "write"), _line("bs", "1m"),
             _line("size", format_block_size(size_bytes)), _line("numjobs", str(numjobs))]
    lines += [_line(k, v) for k, v in binding.options]
    lines.append("[layout]")
    return "\n".join(lines) + "\n"


def render_nfs_removal_job(url: str, engine: str, names: Sequence[str]) -> str:
    """A job that deletes ``names`` (storbench's own test files, laid out by it) from the NFS export at ``url``
    through storbench's NFS metadata engine: one unlink per file."""
    if not names or not all(re.fullmatch(r"storbench\.[A-Za-z0-9.]+", n) for n in names):
        raise ValueError("only storbench's own test file names are removed")
    lines = ["; storbench: removing its test files", "[global]", _line("ioengine", f"external:{engine}"),
             _line("nfsmeta_url", url), _line("nfsmeta_op", "delete"), _line("rw", METADATA_RW["delete"][1]),
             _line("bs", "4k"), _line("filesize", "4k"), "[remove]", _line("filename", ":".join(names))]
    return "\n".join(lines) + "\n"


def fio_command(fio_binary: str, job_path: str, output_path: str, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The argv that runs one job file and writes json+ to a private file (never parsed from stdout)."""
    return (fio_binary, "--output-format=json+", f"--output={output_path}", *extra, job_path)


CEILING_RUNTIME_S = 3.0


def render_ceiling_job(case: Case) -> str:
    """The case's job on fio's null engine (no I/O reaches any device): what this client alone can drive
    with the same pattern, block size, depth and jobs."""
    w = case.workload
    lines = [f"; storbench client ceiling for case {case.case_id}", "[global]", _line("ioengine", "null"),
             _line("time_based", "1"), _line("runtime", fio_seconds(min(w.runtime_s, CEILING_RUNTIME_S))),
             _line("size", format_block_size(w.size_bytes or case.target.size_bytes or 1024**3)),
             "[ceiling]", _line("rw", w.rw)]
    if w.rwmixread is not None:
        lines.append(_line("rwmixread", str(w.rwmixread)))
    lines += [_line("bs", format_block_size(w.bs_bytes)), _line("iodepth", str(w.iodepth)),
              _line("numjobs", str(w.numjobs))]
    return "\n".join(lines) + "\n"


def client_image(image: str, index: int) -> str:
    """The RBD image client ``index`` (1-based) of a many-client case works on."""
    return f"{image}-c{index}"


def _client_option(key: str, value: str, index: int) -> str:
    if key == "filename_format":
        return value.replace("$jobnum", f"c{index}.$jobnum", 1)
    if key == "rbdname":
        return client_image(value, index)
    return value


def client_binding(binding: JobBinding, index: int) -> JobBinding:
    """The binding of client ``index`` (1-based) of a many-client case: its own file names and RBD image."""
    return replace(binding, options=tuple((key, _client_option(key, value, index)) for key, value in binding.options))


def render_client_jobs(case: Case, binding: JobBinding, repetition: int | None = None) -> list[str]:
    """One job file per client of a many-client case. Each client's files get their own names
    (``filename_format`` gains ``c<N>.``), so clients sharing a filesystem never share a file; fio's servers
    also prefix file names in a ``directory`` with the client's address. An RBD image is per client too
    (``<image>-c<N>``)."""
    texts = []
    for index in range(1, case.clients + 1):
        texts.append(render_job(case, client_binding(binding, index), repetition, index)
                     .replace(f"; storbench case {case.case_id}", f"; storbench case {case.case_id} client {index}", 1))
    return texts


# The start barrier of many clients: each client's first measured section runs this before its I/O (fio's
# exec_prerun runs after the files are set up and before the job's clock starts), so every server waits until
# one wall-clock moment. fio runs it as `sh -c '<this> > <job>.prerun.txt 2>&1'`.
#
# The wait must end at the moment itself, not at "now + how long was left when I looked": with 140 servers on two
# cores the jobs reach the barrier while the machine is saturated, and a shell that reads the clock (`date`) and
# then starts `sleep` can be held off the CPU for a hundred milliseconds in between, which the sleep then adds.
# So bash (when the server has it: `command -v` is the shell's own, and the shell becomes bash) reads the clock
# itself ($EPOCHREALTIME, no process started) and waits in the same process (`read -t` on a pipe nobody writes):
# first until a quarter second before the moment, then, on a machine that has gone quiet, the rest. At the moment
# one process per job ends and nothing else starts. Where the server may (root, util-linux's chrt), bash waits
# at real-time priority (SCHED_FIFO 1): at the moment all the waits end at once instead of queueing behind the
# first jobs to start, and the job itself (fio) runs at its own priority, which the wait does not change; a
# sleeping real-time process takes no CPU, and the kernel caps real-time use anyway. Without bash 5 the shell
# does it as before (`date`, then `exec sleep`); the parenthesised fallbacks run only when the line before them
# failed. The redirection belongs
# to the `true` after the last `||`, which runs only if everything failed, so no file is left in the server's
# directory. A server past the moment does not wait. Values inside are storbench's own integers; fio cuts option
# values at ';' and '#' and replaces '${NAME}', so none of those appear.
_SHELL_WAIT = ("d=$(( ({start_at_ns} - $(date +%s%N)) / 1000 )) && exec sleep"
               " $(( d > 0 ? d / 1000000 : 0 )).$(printf %06d $(( d > 0 ? d % 1000000 : 0 )))")
_BASH_WAIT_UNTIL = ("IFS=., read -r s u <<< $EPOCHREALTIME && d=$(( {until_us} - s * 1000000 - 1$u + 1000000 ))"
                    " && printf -v x %d.%06d $(( d > 0 ? d / 1000000 : 0 )) $(( d > 0 ? d % 1000000 : 0 ))"
                    " && ! read -t $x -u 3")
BARRIER_QUIET_S = 0.25  # bash's second look at the clock, this long before the moment


def start_barrier_line(start_at_ns: int, *, shell_only: bool = False) -> str:
    """The ``exec_prerun`` line that holds a job until ``start_at_ns`` (ns since the epoch, this clock).
    ``shell_only``: the plain-shell wait alone (what the barrier was before; the many-clients benchmark compares)."""
    if not 0 < start_at_ns < 10**19:
        raise ValueError("start time out of range")
    start_at_ns = int(start_at_ns)
    shell = _SHELL_WAIT.format(start_at_ns=start_at_ns)
    if shell_only:
        return f"exec_prerun={shell} || true"
    start_at_us = start_at_ns // 1000
    waits = " && ".join(_BASH_WAIT_UNTIL.format(until_us=until_us)
                        for until_us in (start_at_us - int(BARRIER_QUIET_S * 1e6), start_at_us))
    return (f"exec_prerun=command -v bash > /dev/null && exec bash -c 'exec 3<> <(:) && [[ -n $EPOCHREALTIME ]]"
            f" && ( chrt -f -p 1 $$ > /dev/null 2>&1 || true ) && {waits} || ( {shell} )' || ( {shell} ) || true")


# What fio replaces in filename_format, as patterns of a file's name (another $ word names no file of ours).
_NAME_WORDS = {"$jobnum": r"\d+", "$filenum": r"\d+", "$clientuid": r"[^/]*"}


@dataclass(frozen=True)
class CachedFiles:
    """The files a job will read or write, so their page cache can be dropped before the start barrier: regular
    files in ``directories`` whose names match ``name_pattern`` (fio's servers put the client's address and a dot
    before each name, which the pattern allows)."""

    directories: tuple[str, ...]
    name_pattern: str


def _global_options(job_text: str) -> dict[str, str]:
    options: dict[str, str] = {}
    in_global = False
    for line in job_text.split("\n"):
        if line.startswith("[") and line.endswith("]"):
            in_global = line == "[global]"
        elif in_global and "=" in line:
            key, value = line.split("=", 1)
            options[key] = value
    return options


def cached_files(job_text: str) -> CachedFiles | None:
    """The files of a job on a ``directory`` (with storbench's ``filename_format``) whose page cache fio would
    drop when it opens them (``invalidate``, fio's default), or None where that is not so or not known: the job
    sets ``invalidate`` itself, fills its files in an earlier section of the same run (the fill must be dropped
    after it), has more than one measured section, or names its files otherwise."""
    options = _global_options(job_text)
    sections = [line[1:-1] for line in job_text.split("\n") if line.startswith("[") and line.endswith("]")]
    measured = [name for name in sections if name != "global"]
    if ("invalidate" in options or f"[{FILL_JOB}]" in job_text.split("\n") or len(measured) != 1
            or "\ninvalidate=" in job_text or "directory" not in options or "filename_format" not in options):
        return None
    pattern = ""
    for part in re.split(r"(\$\w+)", options["filename_format"]):
        if part.startswith("$"):
            word = _NAME_WORDS.get(part, re.escape(measured[0]) if part == "$jobname" else None)
            if word is None:
                return None
            pattern += word
        else:
            pattern += re.escape(part)
    if not pattern or "/" in options["filename_format"]:
        return None
    directories = tuple(d for d in options["directory"].split(":") if d)
    return CachedFiles(directories, rf"(?:[^/]*\.)?{pattern}") if directories else None


def with_start_barrier(job_text: str, start_at_ns: int, *, cache_dropped: bool = False) -> str:
    """``job_text`` with the start barrier in its first measured section (not [global], not the unmeasured
    fill before it); sections after a stonewall start when the one before ends, as they always do.
    ``cache_dropped``: storbench dropped the page cache of the job's files itself before launching fio (see
    cached_files), so the job does not do it again at the moment (``invalidate=0``)."""
    lines = job_text.split("\n")
    for index, line in enumerate(lines):
        if line.startswith("[") and line.endswith("]") and line[1:-1] not in ("global", FILL_JOB):
            barrier = [start_barrier_line(start_at_ns)] + ([_line("invalidate", "0")] if cache_dropped else [])
            return "\n".join([*lines[:index + 1], *barrier, *lines[index + 1:]])
    raise ValueError("no measured job section")
