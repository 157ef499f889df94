"""Case -> the exact fio job file text. Pure; every value is checked before it is written."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from storbench.fio.allowlist import fio_text, is_allowed
from storbench.model import (
    FILL_JOB,
    METADATA_PHASES,
    METADATA_RW,
    NFS_METADATA_ENGINE,
    OBJECT_RW,
    Case,
    is_metadata,
    is_object,
    is_size_based,
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
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # may hold the S3 keys: never printed
    fio_binary: str | None = None  # a target that needs a special fio (the nfs engine)
    external_engine: str | None = None  # the shared object of storbench's NFS metadata engine


def escape_fio_path(path: str) -> str:
    """fio splits filename/directory values on ':'; escape it."""
    return path.replace(":", "\\:")


def is_safe_job_value(value: str) -> bool:
    """True when ``value`` cannot start a new line, section, comment or variable expansion in a job file, and fio
    reads it as written (fio strips blanks around a value: a path with one at its end would name another)."""
    return _JOB_VALUE_RE.fullmatch(value) is not None and value == value.strip()


# fio reads a job file a line at a time into a buffer of OPT_LEN_MAX (8,192 since fio 3.15; 4,096 before): the rest of
# a longer line is read as a line of its own, so a long `directory=` list (many `dirs` of a long path) could end in
# any option a plan wrote into the path (exec_prerun=..., run as root). No line reaches it; `checks.check_job_texts`
# holds an older fio to OLD_FIO_JOB_LINE.
OLD_FIO_JOB_LINE = 4000
MAX_JOB_LINE = 8000


def job_line(key: str, value: str) -> str:
    if not _JOB_KEY_RE.fullmatch(key):
        raise ValueError(f"refusing fio option name {key!r}")
    if len(key) + 1 + len(value) > MAX_JOB_LINE:
        raise ValueError(f"refusing fio option {key}: its line would be {len(key) + 1 + len(value):,} characters, "
                         f"more than fio reads as one line ({MAX_JOB_LINE:,} at most here)")
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
        ("time_based", "0" if is_size_based(w.rw) else "1"),
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
    shape = [job_line("bs", format_block_size(w.bs_bytes)), job_line("iodepth", "1"),
             job_line("numjobs", str(w.numjobs)), job_line("nrfiles", str(w.files)),
             job_line("filesize", format_block_size(w.bs_bytes))]
    lines: list[str] = []
    if w.rw != "create":
        lines += [f"[{FILL_JOB}]", job_line("nfsmeta_op", "create"), job_line("rw", "write"), *shape,
                  job_line("runtime", "0")]  # every file made: the runtime caps the measured section only
    lines += [f"[{case.case_id}]"] + ([job_line("stonewall", "1")] if w.rw != "create" else [])
    lines += [job_line("nfsmeta_op", w.rw), job_line("rw", METADATA_RW[w.rw][1]), *shape]
    return lines + ([job_line("unlink", "1")] if w.rw != "delete" else [])


def _phase_lines(case: Case, nfs: bool) -> list[str]:
    """rw: metadata: create, stat and delete in turn over the same files, each phase a stonewalled section
    ``<case>.<phase>`` with its own engine (or nfsmeta_op); create leaves its (empty) files for stat, fio lays
    them out to file_size before the stat phase measures, delete removes them. Each section lays its files out
    when it starts (``create_serialize=0``): by default fio lays out every section's files before the first runs,
    and the stat section's layout made the very files the create phase then opened (an open, not a create: twice
    the rate of real creates on a local filesystem)."""
    w = case.workload
    assert w.files is not None
    shape = [job_line("bs", format_block_size(w.bs_bytes)), job_line("iodepth", "1"),
             job_line("numjobs", str(w.numjobs)), job_line("nrfiles", str(w.files)),
             job_line("filesize", format_block_size(w.file_size_bytes or w.bs_bytes))]
    if not nfs:
        shape += [job_line("openfiles", "1"), job_line("fallocate", "none"), job_line("create_serialize", "0")]
    lines: list[str] = []
    for phase in METADATA_PHASES:
        lines.append(f"[{case.case_id}.{phase}]")
        if phase != "create":
            lines.append(job_line("stonewall", "1"))
        lines.append(job_line("nfsmeta_op", phase) if nfs else job_line("ioengine", METADATA_RW[phase][0]))
        lines += [job_line("rw", METADATA_RW[phase][1]), *shape]
        if phase == "create" and not nfs:
            lines.append(job_line("create_on_open", "1"))
        lines += passthrough_lines(case)  # every phase: after the last only, create and stat had run without them
    return lines


def _metadata_lines(case: Case) -> list[str]:
    """The job section of a metadata operation: each file of each job created, stat'ed or deleted once (size
    based; runtime only caps it). create makes empty files and unlinks them after the job (so every repetition
    creates anew); stat finds files of file_size that fio lays out before it measures, delete empty ones (its
    job writes: fio lays a written file out empty)."""
    w = case.workload
    assert w.files is not None and w.file_size_bytes is not None
    lines = [job_line("rw", METADATA_RW[w.rw][1]), job_line("bs", format_block_size(w.bs_bytes)),
             job_line("iodepth", "1"), job_line("numjobs", str(w.numjobs)), job_line("nrfiles", str(w.files)),
             job_line("filesize", format_block_size(w.file_size_bytes or w.bs_bytes)), job_line("openfiles", "1"),
             job_line("fallocate", "none")]
    if w.rw == "create":
        lines += [job_line("create_on_open", "1"), job_line("unlink", "1")]
    return lines


def _object_lines(case: Case) -> list[str]:
    """The sections of an object operation: each job clone works on ``files`` objects of bs (one request each);
    get, getput and delete_object are preceded by a size-based PUT of those objects, stonewalled."""
    w = case.workload
    assert w.files is not None
    size = job_line("size", format_block_size(w.files * w.bs_bytes))
    shape = [job_line("bs", format_block_size(w.bs_bytes)), job_line("iodepth", "1"),
             job_line("numjobs", str(w.numjobs)), size]
    lines: list[str] = []
    if w.rw != "put":
        lines += [f"[{FILL_JOB}]", job_line("rw", "write"), *shape, job_line("time_based", "0"),
                  job_line("ramp_time", "0"), job_line("runtime", "0")]  # every object PUT: fio's http engine
        # reads a missing object as zeros and deletes it as done, so GETs cut short had counted as fast successes
    lines += [f"[{case.case_id}]"] + ([job_line("stonewall", "1")] if w.rw != "put" else [])
    lines.append(job_line("rw", OBJECT_RW[w.rw]))
    if w.rwmixread is not None:
        lines.append(job_line("rwmixread", str(w.rwmixread)))
    return lines + shape


# fio's per-window logs of a repetition with a timeline, in fio's working directory: <name>_iops.<job>.log (each
# window's IOPS) and <name>_clat.<job>.log (each window's longest completion latency), one per numjobs clone
TIMELINE_LOG = "timeline"
# what storbench reads of one timeline log: a 10-minute repetition in 100 ms windows is about 200 kB
MAX_LOG_CHARS = 16 << 20


def timeline_lines(window_ms: int) -> list[str]:
    """The options that make fio log the I/O window by window, on the wall clock (`fio.logs`), for a repetition
    with faults: fio goes on past an I/O error during a fault (``continue_on_error=io``), its timeline whole; it
    then reports that error as the job's, and the repetition is judged failed (`fio.outcome.client_fault`)."""
    return [job_line("write_iops_log", TIMELINE_LOG), job_line("write_lat_log", TIMELINE_LOG),
            job_line("log_avg_msec", str(window_ms)), job_line("log_max_value", "1"), job_line("log_unix_epoch", "1"),
            job_line("continue_on_error", "io")]


def timeline_logs(names: Sequence[str]) -> list[str]:
    """Of the files fio left in its working directory, the timeline logs storbench reads (IOPS and completion
    latency; not the total and submission latency logs fio writes beside them), sorted. A `fio --client` writes
    each server's logs there with the server's name after the log's (``timeline_iops.1.log.10.214.0.11``)."""
    return sorted(name for name in names
                  if re.fullmatch(rf"{TIMELINE_LOG}_(iops|clat)\.[0-9]{{1,5}}\.log(\.[A-Za-z0-9.:_-]{{1,255}})?", name))


def timeline_log_client(name: str) -> str:
    """The fio server a timeline log came from (the name `fio --client` put after it); "" for local fio's."""
    _, _, server = name.partition(".log.")
    return server


def render_job(case: Case, binding: JobBinding, repetition: int | None = None, client: int = 0) -> str:
    """The job file for one case (with ``repetition``: that repetition's random seed, unless the plan sets
    randseed or randrepeat itself). numjobs clones are separate jobs in fio's output; storbench merges their
    latency bins itself, so group_reporting stays off."""
    w = case.workload
    metadata = is_metadata(w.rw)
    lines = [f"; storbench case {case.case_id} ({case.target.name})", "[global]"]
    lines += [job_line(k, v) for k, v in job_options(case, metadata_binding(binding, w.rw, w.dirs) if metadata
                                                  else binding)]
    if repetition is not None and not SEED_OPTIONS & {k for k, _ in w.fio_options}:
        lines.append(job_line("randseed", str(repetition_seed(case.case_id, repetition, client))))
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
        lines.append(job_line("rw", w.rw))
        if w.rwmixread is not None:
            lines.append(job_line("rwmixread", str(w.rwmixread)))
        lines += [
            job_line("bs", format_block_size(w.bs_bytes)),
            job_line("iodepth", str(w.iodepth)),
            job_line("numjobs", str(w.numjobs)),
        ]
    if w.timeline_window_ms is not None and w.rw != "metadata":  # in the measured section (the last)
        lines += timeline_lines(w.timeline_window_ms)
    if w.rw != "metadata":  # in the measured section (the last); the metadata cycle's in each of its phases
        lines += passthrough_lines(case)
    return "\n".join(lines) + "\n"


def passthrough_lines(case: Case) -> list[str]:
    """The plan's `workload.fio` options as job lines, each checked against the allow-list again."""
    lines = []
    for key, value in case.workload.fio_options:
        if not is_allowed(key, value):
            raise ValueError(f"refusing pass-through fio option {key}={value!r}: not on the allow-list")
        lines.append(job_line(key, fio_text(key, value)))  # 64MiB as 64m: fio reads IEC units as powers of 1000
    return lines


def fill_job(job_text: str, passes: int) -> str:
    """A case's job text turned into a size-based fill: its working set written ``passes`` times (fio `loops`),
    its runtime left as a cap."""
    if job_text.count("\ntime_based=1\n") != 1 or not 1 <= passes <= 100:
        raise ValueError("not a storbench job text, or passes out of range")
    return job_text.replace("\ntime_based=1\n", f"\ntime_based=0\nloops={passes}\n")


def continued_job(job_text: str, runtime_variable: str) -> str | None:
    """A time-based job text continued by a new fio for what is left of its measured section, with no ramp nor
    startdelay (a pod deleted mid-run and made again: its I/O goes on where it stopped): its runtime is the
    environment variable ``runtime_variable`` (fio expands ``${NAME}`` in a job file), which the one who starts fio
    sets to the seconds left. None for a job that is not time based (a size-based job cannot be split)."""
    lines = job_text.split("\n")
    if lines.count("time_based=1") != 1 or not re.fullmatch(r"[A-Z][A-Z0-9_]{0,63}", runtime_variable):
        return None
    changed = {"runtime": f"runtime=${{{runtime_variable}}}", "ramp_time": "ramp_time=0",
               "startdelay": "startdelay=0"}  # it goes on at once: the delay was waited by the pod before it
    return "\n".join(changed.get(line.partition("=")[0], line) for line in lines)


def render_layout_job(binding: JobBinding, size_bytes: int, numjobs: int, ioengine: str) -> str:
    """A job that writes every test file once, sequentially, so later cases find them complete."""
    lines = ["; storbench layout", "[global]", job_line("ioengine", ioengine), job_line("rw", "write"),
             job_line("bs", "1m"), job_line("size", format_block_size(size_bytes)), job_line("numjobs", str(numjobs))]
    lines += [job_line(k, v) for k, v in binding.options]
    lines.append("[layout]")
    return "\n".join(lines) + "\n"


def fio_command(fio_binary: str, job_path: str, output_path: str, extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The argv that runs one job file and writes json+ to a private file (never parsed from stdout)."""
    return (fio_binary, "--output-format=json+", f"--output={output_path}", *extra, job_path)


CEILING_RUNTIME_S = 3.0


def render_ceiling_job(case: Case) -> str:
    """The case's job on fio's null engine (no I/O reaches any device): what this client alone can drive
    with the same pattern, block size, depth and jobs."""
    w = case.workload
    lines = [f"; storbench client ceiling for case {case.case_id}", "[global]", job_line("ioengine", "null"),
             job_line("time_based", "1"), job_line("runtime", fio_seconds(min(w.runtime_s, CEILING_RUNTIME_S))),
             job_line("size", format_block_size(w.size_bytes or case.target.size_bytes or 1024**3)),
             "[ceiling]", job_line("rw", w.rw)]
    if w.rwmixread is not None:
        lines.append(job_line("rwmixread", str(w.rwmixread)))
    lines += [job_line("bs", format_block_size(w.bs_bytes)), job_line("iodepth", str(w.iodepth)),
              job_line("numjobs", str(w.numjobs))]
    lines += [line for line in passthrough_lines(case) if line.partition("=")[0] in CEILING_OPTIONS]
    return "\n".join(lines) + "\n"


# the case's pass-through options that cost this client CPU whatever engine runs them: its ceiling is measured with
# them (buffers filled anew or compressed, block sizes mixed, I/Os batched, offsets drawn), or it is too high and
# "client-bound" (at 80 % of it) too rarely said
CEILING_OPTIONS = frozenset({
    "refill_buffers", "scramble_buffers", "zero_buffers", "buffer_compress_percentage", "buffer_compress_chunk",
    "buffer_pattern", "dedupe_percentage", "bssplit", "bsrange", "bs_unaligned", "iodepth_batch_submit",
    "iodepth_batch", "iodepth_batch_complete_min", "iodepth_batch_complete_max", "iodepth_low",
    "random_distribution", "norandommap", "random_generator", "percentage_random"})


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
