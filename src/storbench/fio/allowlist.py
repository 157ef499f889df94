"""Which fio options a plan may pass through (`workload.fio`), with the grammar of their values, and which
engines may drive which kind of target. Pure.

A plan is untrusted input run as root. An option that names a file or a device, appends to or fills one,
saves state, loads a profile, changes priorities or runs a program can destroy data or reach outside the
target, so only options that shape the I/O storbench already aims at its own test files are allowed, and
each value must match that option's grammar (so `mem=mmap:/some/file` is refused while `mem=mmap` is not).
Everything else is refused with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# ---- value grammars (whole-value matches; no '$', quotes, newlines or section brackets can pass) -------------

# Sizes, percentages and durations are whole numbers, durations in the units fio knows: fio reads the number with
# strtoll and its unit from what follows, so `rate=1.5m` was 1 byte/s, `offset=50.5%` 50 bytes, `startdelay=30sec`
# 30 us and `thinktime=100ns` 100 us (`fio --debug=parse --parse-only` shows what fio stores)
_NUM = r"[0-9]{1,15}(?:\.[0-9]{1,9})?"
_SIZE = r"[0-9]{1,15}(?:[kKmMgGtTpP](?:i?[bB])?|[bB])?"
_PCT = r"(?:100|[0-9]{1,2})"
_DUR = r"[0-9]{1,15}(?:us|usec|ms|msec|s|m|h|d)?"
_CPUS = r"[0-9]{1,4}(?:-[0-9]{1,4})?(?:,[0-9]{1,4}(?:-[0-9]{1,4})?){0,255}"
_DIST_ONE = (r"(?:random|zipf:" + _NUM + r"|pareto:" + _NUM + r"|gauss:" + _NUM + r"|normal:" + _NUM
             + r"(?::" + _NUM + r")?|zoned(?:_abs)?:" + _PCT + r"/(?:" + _SIZE + r"|" + _PCT + r"%?)"
             + r"(?::" + _PCT + r"/(?:" + _SIZE + r"|" + _PCT + r"%?)){0,63})")
_BSSPLIT_ONE = _SIZE + r"/" + r"(?:" + _PCT + r")?" + r"(?::" + _SIZE + r"/(?:" + _PCT + r")?){0,63}"


def _per_direction(one: str) -> str:
    """fio's read,write,trim triplets: ``X``, ``X,Y``, ``,Y`` ..."""
    return rf"(?:{one})?(?:,(?:{one})?){{0,2}}"


@dataclass(frozen=True)
class Grammar:
    """A named value grammar: ``pattern`` must match the whole value text."""

    name: str
    pattern: str
    example: str

    def accepts(self, text: str) -> bool:
        return bool(text) and re.fullmatch(self.pattern, text) is not None


BOOL = Grammar("0 or 1 (true/false)", r"[01]", "1")
UINT = Grammar("a whole number", r"[0-9]{1,15}", "8")
SIZE = Grammar("a size, e.g. 4k or 1MiB", _SIZE, "4k")
SIZE_OR_PCT = Grammar("a size (e.g. 1g) or a percentage (e.g. 50%)", rf"(?:{_SIZE}|{_PCT}%)", "50%")
PERCENT = Grammar("a percentage 0-100", _PCT, "30")
# the one percentage fio reads as a decimal (its OPT_FLOAT_LIST): 99.9 is meant
PERCENT_DECIMAL = Grammar("a percentage 0-100, e.g. 99.9", r"(?:100|[0-9]{1,2}(?:\.[0-9]{1,6})?)", "99.9")
PERCENTS = Grammar("percentages 0-100 for read,write,trim", _per_direction(_PCT), "50")
DURATION = Grammar("a duration, e.g. 100us, 5ms or 2s", _DUR, "10ms")
DURATION_RANGE = Grammar("a duration or a range, e.g. 2s or 1s-5s", rf"{_DUR}(?:-{_DUR})?", "1s-3s")
RATE = Grammar("bytes/s for read,write,trim, e.g. 10m or 10m,5m", _per_direction(_SIZE), "10m,5m")
IOPS = Grammar("IOPS for read,write,trim, e.g. 500 or 500,100", _per_direction(r"[0-9]{1,12}"), "500")
CPU_LIST = Grammar("CPU numbers and ranges, e.g. 0-3,6", _CPUS, "0-1")
DISTRIBUTION = Grammar("random, zipf:THETA, pareto:H, normal:DEV[:CENTER], gauss:DEV or zoned[_abs]:P/R:...",
                       _per_direction(_DIST_ONE), "zipf:1.2")
BSSPLIT = Grammar("block size/percent pairs, e.g. 4k/60:64k/40 (a ',' starts the write split)",
                  _per_direction(_BSSPLIT_ONE), "4k/60:64k/40")
BSRANGE = Grammar("min-max block sizes, e.g. 4k-64k (read,write)", _per_direction(f"{_SIZE}-{_SIZE}"), "4k-64k")
PATTERN = Grammar("a number, or hex digits after 0x", r"(?:0[xX][0-9A-Fa-f]{1,512}|[0-9]{1,20})", "0xdeadbeef")


def choice(*values: str) -> Grammar:
    return Grammar("one of " + ", ".join(values), "(?:" + "|".join(re.escape(v) for v in values) + ")", values[-1])


def choice_with_number(*values: str) -> Grammar:
    return Grammar("one of " + ", ".join(values) + " (optionally :NUMBER)",
                   "(?:" + "|".join(re.escape(v) for v in values) + rf")(?::{_NUM})?", values[0])


@dataclass(frozen=True)
class AllowedOption:
    grammar: Grammar
    what: str  # one line for the plan reference
    engines: frozenset[str] = frozenset()  # empty: any engine (a general option); else only these engines'


_IO_URING = frozenset({"io_uring"})
_LIBAIO_IO_URING = frozenset({"libaio", "io_uring"})

# Options that only shape the I/O fio does on the files or device storbench gives it.
ALLOWED_FIO_OPTIONS: dict[str, AllowedOption] = {
    # block sizes and alignment
    "bssplit": AllowedOption(BSSPLIT, "mix of block sizes"),
    "bsrange": AllowedOption(BSRANGE, "range of block sizes"),
    "ba": AllowedOption(SIZE, "offset alignment (blockalign)"),
    "blockalign": AllowedOption(SIZE, "offset alignment"),
    "bs_unaligned": AllowedOption(BOOL, "block sizes need not be sector aligned"),
    # where in the file, how random
    "rw_sequencer": AllowedOption(choice_with_number("sequential", "identical"), "offset sequencer for rw:N"),
    "randrepeat": AllowedOption(BOOL, "repeatable random offsets (storbench seeds each repetition)"),
    "randseed": AllowedOption(UINT, "random seed (storbench seeds each repetition unless given)"),
    "allrandrepeat": AllowedOption(BOOL, "repeatable random for everything"),
    "norandommap": AllowedOption(BOOL, "random offsets may repeat"),
    "random_generator": AllowedOption(choice("tausworthe", "lfsr", "tausworthe64"), "random generator"),
    "random_distribution": AllowedOption(DISTRIBUTION, "distribution of random offsets (hot spots)"),
    "percentage_random": AllowedOption(PERCENTS, "percent of random I/O in a mixed sequential/random job"),
    "offset": AllowedOption(SIZE_OR_PCT, "start offset in the file"),
    "offset_increment": AllowedOption(SIZE_OR_PCT, "offset step between jobs"),
    "offset_align": AllowedOption(SIZE, "alignment of offset"),
    "number_ios": AllowedOption(UINT, "stop after this many I/Os"),
    "io_size": AllowedOption(SIZE_OR_PCT, "I/O volume per job"),
    "io_limit": AllowedOption(SIZE_OR_PCT, "I/O volume per job"),
    "nrfiles": AllowedOption(Grammar("a whole number 1-4096", r"(?:[1-9][0-9]{0,2}|[1-3][0-9]{3}|40[0-8][0-9]"
                                                              r"|409[0-6])", "2"),
                             "files per job (storbench names them)"),
    "openfiles": AllowedOption(UINT, "files kept open at once"),
    "file_service_type": AllowedOption(choice_with_number("random", "roundrobin", "sequential", "zipf", "pareto",
                                                          "normal", "gauss"), "how jobs pick among nrfiles"),
    # syncing, caching, layout of storbench's own files
    "fsync": AllowedOption(UINT, "fsync every N writes"),
    "fdatasync": AllowedOption(UINT, "fdatasync every N writes"),
    "write_barrier": AllowedOption(UINT, "barrier write every N writes"),
    "end_fsync": AllowedOption(BOOL, "fsync when the job ends"),
    "fsync_on_close": AllowedOption(BOOL, "fsync when a file is closed"),
    "sync": AllowedOption(choice("0", "1", "none", "sync", "dsync"), "O_SYNC / O_DSYNC writes"),
    "fadvise_hint": AllowedOption(choice("0", "1", "sequential", "random"), "posix_fadvise hint"),
    "fallocate": AllowedOption(choice("none", "native", "posix", "keep", "0", "1"), "how test files are allocated"),
    "invalidate": AllowedOption(BOOL, "drop the page cache of the file before the job"),
    "pre_read": AllowedOption(BOOL, "read the file into the page cache first"),
    "overwrite": AllowedOption(BOOL, "writes overwrite existing blocks"),
    "create_serialize": AllowedOption(BOOL, "lay out files one job at a time"),
    "create_fsync": AllowedOption(BOOL, "fsync a file after laying it out"),
    "create_on_open": AllowedOption(BOOL, "create files when the job opens them"),
    "write_hint": AllowedOption(choice("none", "short", "medium", "long", "extreme"), "write lifetime hint"),
    "atomic": AllowedOption(BOOL, "atomic direct writes"),
    # submission and pacing
    "iodepth_batch": AllowedOption(UINT, "I/Os submitted at once"),
    "iodepth_batch_submit": AllowedOption(UINT, "I/Os submitted at once"),
    "iodepth_batch_complete_min": AllowedOption(UINT, "least completions reaped at once"),
    "iodepth_batch_complete": AllowedOption(UINT, "least completions reaped at once"),
    "iodepth_batch_complete_max": AllowedOption(UINT, "most completions reaped at once"),
    "iodepth_low": AllowedOption(UINT, "refill the queue below this depth"),
    "io_submit_mode": AllowedOption(choice("inline", "offload"), "who submits I/O"),
    "serialize_overlap": AllowedOption(BOOL, "no overlapping I/Os in flight"),
    "thinktime": AllowedOption(DURATION, "pause between I/Os"),
    "thinktime_spin": AllowedOption(DURATION, "busy part of the pause"),
    "thinktime_blocks": AllowedOption(UINT, "I/Os between pauses"),
    "thinktime_blocks_type": AllowedOption(choice("complete", "issue"), "what thinktime_blocks counts"),
    "thinktime_iotime": AllowedOption(DURATION, "I/O time between pauses"),
    "rate": AllowedOption(RATE, "bandwidth cap of each job (numjobs clone, client), each direction its own"),
    "rate_min": AllowedOption(RATE, "bandwidth floor of each job (it fails below it)"),
    "rate_iops": AllowedOption(IOPS, "IOPS cap of each job (numjobs clone, client), each direction its own: 500 on a "
                                           "70/30 mix is 500 reads and about 214 writes a second"),
    "rate_iops_min": AllowedOption(IOPS, "IOPS floor of each job (it fails below it)"),
    "rate_process": AllowedOption(choice("linear", "poisson"), "arrival process of rate-limited I/O"),
    "rate_cycle": AllowedOption(UINT, "averaging window of rate_min, ms"),
    "rate_ignore_thinktime": AllowedOption(BOOL, "rate ignores thinktime"),
    "startdelay": AllowedOption(DURATION_RANGE, "delay before the job starts"),
    "latency_target": AllowedOption(DURATION, "find the depth that meets this latency"),
    "latency_window": AllowedOption(DURATION, "window of latency_target"),
    "latency_percentile": AllowedOption(PERCENT_DECIMAL, "percentile of latency_target"),
    "latency_run": AllowedOption(BOOL, "keep searching for latency_target"),
    "max_latency": AllowedOption(DURATION, "the job fails above this latency"),
    # buffer contents
    "zero_buffers": AllowedOption(BOOL, "write zeros"),
    "refill_buffers": AllowedOption(BOOL, "new buffer contents for every write"),
    "scramble_buffers": AllowedOption(BOOL, "scramble buffer contents"),
    "buffer_pattern": AllowedOption(PATTERN, "buffer contents pattern"),
    "buffer_compress_percentage": AllowedOption(PERCENT, "compressibility of written data"),
    "buffer_compress_chunk": AllowedOption(SIZE, "granularity of compressible data"),
    "dedupe_percentage": AllowedOption(PERCENT, "share of duplicate blocks"),
    "dedupe_mode": AllowedOption(choice("repeat", "working_set"), "how duplicates are made"),
    "dedupe_working_set_percentage": AllowedOption(PERCENT, "working set of dedupe_mode=working_set"),
    "mem": AllowedOption(choice("malloc", "shm", "shmhuge", "mmap"), "buffer memory (no file-backed mappings)"),
    "iomem": AllowedOption(choice("malloc", "shm", "shmhuge", "mmap"), "buffer memory (no file-backed mappings)"),
    "mem_align": AllowedOption(SIZE, "buffer alignment"),
    "iomem_align": AllowedOption(SIZE, "buffer alignment"),
    # verification of what storbench's own jobs write
    "verify": AllowedOption(choice("0", "md5", "crc64", "crc32c", "crc32c-intel", "crc32", "crc16", "crc7",
                                   "xxhash", "sha512", "sha256", "sha1", "sha3-224", "sha3-256", "sha3-384",
                                   "sha3-512", "meta", "pattern", "null"), "verify written data"),
    "do_verify": AllowedOption(BOOL, "run the verify phase"),
    "verify_interval": AllowedOption(SIZE, "verify header interval"),
    "verify_offset": AllowedOption(SIZE, "verify header offset"),
    "verify_pattern": AllowedOption(PATTERN, "verify pattern"),
    "verify_fatal": AllowedOption(BOOL, "stop at the first verify failure"),
    "verify_async": AllowedOption(Grammar("a whole number 0-64", r"(?:[0-9]|[1-5][0-9]|6[0-4])", "4"),
                                  "verify threads (fio makes as many per job)"),
    "verify_backlog": AllowedOption(UINT, "verify after this many writes"),
    "verify_backlog_batch": AllowedOption(UINT, "blocks verified per backlog"),
    # where fio's own threads run (fio only, not the host's settings)
    "cpus_allowed": AllowedOption(CPU_LIST, "CPUs fio's jobs may run on"),
    "cpus_allowed_policy": AllowedOption(choice("shared", "split"), "how jobs share cpus_allowed"),
    "numa_cpu_nodes": AllowedOption(CPU_LIST, "NUMA nodes fio's jobs run on"),
    "numa_mem_policy": AllowedOption(Grammar("default, prefer:N, bind:NODES, interleave:NODES or local",
                                             rf"(?:default|local|prefer:[0-9]{{1,4}}|(?:bind|interleave):{_CPUS})",
                                             "local"),
                                     "NUMA memory policy of fio's jobs"),
    "thread": AllowedOption(BOOL, "jobs as threads instead of processes"),
    "clocksource": AllowedOption(choice("gettimeofday", "clock_gettime", "cpu"), "fio's clock"),
    # engine options that only tune submission (never name a pool, image, URL, host or file)
    "hipri": AllowedOption(BOOL, "polled completions (io_uring)", _IO_URING),
    "fixedbufs": AllowedOption(BOOL, "pre-mapped buffers (io_uring)", _IO_URING),
    "registerfiles": AllowedOption(BOOL, "registered files (io_uring)", _IO_URING),
    "sqthread_poll": AllowedOption(BOOL, "kernel submission thread (io_uring)", _IO_URING),
    "sqthread_poll_cpu": AllowedOption(UINT, "CPU of the submission thread (io_uring)", _IO_URING),
    "nonvectored": AllowedOption(choice("-1", "0", "1"), "non-vectored reads and writes (io_uring)", _IO_URING),
    "uncached": AllowedOption(BOOL, "uncached buffered I/O (io_uring)", _IO_URING),
    "force_async": AllowedOption(UINT, "force async every N I/Os (io_uring)", _IO_URING),
    "nowait": AllowedOption(BOOL, "RWF_NOWAIT (libaio, io_uring)", _LIBAIO_IO_URING),
    "userspace_reap": AllowedOption(BOOL, "reap completions in user space (libaio)", frozenset({"libaio"})),
    "busy_poll": AllowedOption(BOOL, "busy-poll completions (rbd)", frozenset({"rbd"})),
}

# Why some well-known options are refused (anything not allowed is refused; these get a specific reason).
REFUSAL_REASONS: tuple[tuple[str, frozenset[str]], ...] = (
    ("names, creates or removes files or devices outside storbench's test files",
     frozenset({"filename", "directory", "filename_format", "opendir", "lockfile", "unique_filename",
                "allow_file_create", "create_only", "unlink", "unlink_each_loop", "wait_for"})),
    ("could write to a mounted device or beyond the test files",
     frozenset({"allow_mounted_write", "file_append", "fill_device", "fill_fs", "zonemode", "zonesize",
                "zonecapacity", "zonerange", "zoneskip", "read_beyond_wp", "zone_reset_threshold",
                "zone_reset_frequency", "trim_percentage", "trim_verify_zero", "trim_backlog",
                "trim_backlog_batch"})),
    ("runs programs", frozenset({"exec_prerun", "exec_postrun", "trigger", "trigger_file", "trigger_timeout",
                                "trigger_remote"})),
    ("reads or writes state, log or trace files",
     frozenset({"read_iolog", "read_iolog_chunked", "write_iolog", "replay_redirect", "merge_blktrace_file",
                "verify_state_save", "verify_state_load", "verify_dump", "write_bw_log", "write_lat_log",
                "write_iops_log", "write_hist_log", "per_job_logs", "error_dump", "include", "profile"})),
    ("changes priorities, users, cgroups or host settings",
     frozenset({"nice", "prio", "prioclass", "cmdprio", "cmdprio_class", "cmdprio_percentage",
                "cmdprio_bssplit", "ioscheduler", "cgroup", "cgroup_nodelete", "cgroup_weight", "uid", "gid",
                "lockmem", "hugepage_size", "gtod_cpu"})),
    ("names a cluster, pool, image, URL or host: storbench sets these from the target",
     frozenset({"clustername", "rbdname", "pool", "clientname", "nfs_url", "hostname", "port", "interface",
                "namespace", "cmd_type", "spdk_json_conf", "http_host", "http_mode", "https", "http_user",
                "http_pass", "http_s3_key", "http_s3_keyid", "http_s3_region", "http_swift_auth_token",
                "http_s3_sse_customer_key", "http_s3_sse_customer_algorithm", "http_s3_storage_class"})),
    ("would break the latency bins and throughput storbench reports",
     frozenset({"disable_lat", "disable_clat", "disable_slat", "disable_bw_measurement", "gtod_reduce",
                "stats", "unified_rw_reporting", "kb_base", "unit_base", "slat_percentiles",
                "significant_figures", "log_offset"})),
)


def is_refused(name: str) -> bool:
    """True for a fio option storbench knows and refuses (with its reason), rather than a name it does not know."""
    return any(name in names for _, names in REFUSAL_REASONS)


def refusal_reason(name: str) -> str:
    """Why ``name`` (not on the allow-list) is refused."""
    for reason, names in REFUSAL_REASONS:
        if name in names:
            return reason
    return "is not on storbench's list of options that only shape the I/O"


def value_refusal(name: str, text: str) -> str | None:
    """Why ``text`` is not a valid value of the allowed option ``name``, or None."""
    option = ALLOWED_FIO_OPTIONS[name]
    if option.grammar.accepts(text):
        return None
    whole = (" (fio reads whole numbers: it takes the digits before a '.' and drops the rest, so write 1536k for "
             "1.5m, 500us for 0.5ms)" if re.search(r"[0-9]\.[0-9]", text) and option.grammar.pattern != _NUM
             and "." not in option.grammar.example else "")
    units = (" (fio's time units are us, ms, s, m, h and d: it reads a number with another, as 30sec or 100ns, in "
             "its base unit, 30sec as 30 us)"
             if option.grammar in (DURATION, DURATION_RANGE) and re.search(r"[0-9](?:ns|sec|min)\b", text) else "")
    return f"value {text!r} is not allowed for '{name}': expected {option.grammar.name}{whole}{units}"


SIZED_GRAMMARS = (SIZE, SIZE_OR_PCT, RATE, BSSPLIT, BSRANGE, DISTRIBUTION)  # values that hold sizes
_IEC_SIZE_RE = re.compile(r"(?<![0-9A-Za-z.])([0-9]{1,15}(?:\.[0-9]{1,6})?[kKmMgGtTpP])i[bB]")


def fio_text(name: str, text: str) -> str:
    """An allowed option's value as its job line writes it, so that fio reads the sizes storbench reads: an IEC unit
    (``64MiB``) as its bare letter (``64m``). fio's default ``kb_base=1024`` reads IEC units as powers of 1000 (its
    compatibility mode: ``bs=4KiB`` was 4,000 bytes, ``rate=100MiB`` 100,000,000 bytes a second), storbench every
    unit letter as a power of 1024; plans may not set ``kb_base``."""
    if ALLOWED_FIO_OPTIONS[name].grammar not in SIZED_GRAMMARS:
        return text
    return _IEC_SIZE_RE.sub(lambda match: match[1].lower(), text)


def is_allowed(name: str, text: str) -> bool:
    """True when ``name=text`` may go into a job file from a plan."""
    return name in ALLOWED_FIO_OPTIONS and value_refusal(name, text) is None


# ---- engines per target kind -------------------------------------------------------------------------------

# Engines that do I/O to a local file or block device through the kernel.
# engines that keep one I/O a job in flight whatever iodepth says
SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap"})
# options that hold a job to a rate (or a pause between I/Os): more load along an axis reaches the storage no more
RATE_OPTIONS = ("rate", "rate_iops", "rate_min", "rate_iops_min", "thinktime")
LOCAL_ENGINES = ("libaio", "io_uring", "psync", "sync", "pvsync", "pvsync2", "vsync", "posixaio", "mmap")
ENGINES_BY_TARGET_KIND: dict[str, tuple[str, ...]] = {
    "path": LOCAL_ENGINES,
    "block": LOCAL_ENGINES,
    "cephfs": LOCAL_ENGINES,
    "pvc": LOCAL_ENGINES,
    "rbd": ("rbd",),
    "nfs": ("nfs",),
    "s3": ("http",),
}


def engine_refusal(engine: str, target_kind: str) -> str | None:
    """Why ``engine`` may not drive a target of ``target_kind``, or None."""
    allowed = ENGINES_BY_TARGET_KIND.get(target_kind, ())
    if engine in allowed:
        return None
    return f"ioengine '{engine}' cannot drive a {target_kind} target (allowed: {', '.join(allowed)})"


def engine_option_refusal(name: str, engine: str) -> str | None:
    """Why the allowed option ``name`` does not apply with ``engine``, or None."""
    engines = ALLOWED_FIO_OPTIONS[name].engines
    if not engines or engine in engines:
        return None
    return f"fio option '{name}' belongs to ioengine {', '.join(sorted(engines))}, not {engine}"
