"""Clients that start together (pure): the start barrier each client's job waits at (bash where the server has it,
else the shell), and the files whose page cache the hosts lab drops before launch, so fio need not at open.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from storbench.fio.jobfile import job_line
from storbench.model import FILL_JOB

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
    # fio's list of directories: ':' apart, a ':' inside a path written '\\:' (`jobfile.escape_fio_path`)
    directories = tuple(d.replace("\\:", ":") for d in re.split(r"(?<!\\):", options["directory"]) if d)
    return CachedFiles(directories, rf"(?:[^/]*\.)?{pattern}") if directories else None


def without_start_delay(job_text: str) -> str:
    """``job_text`` without fio's ``startdelay``: with the start barrier, the delay is added to the barrier's moment
    instead. fio counts a startdelay from its own start, before the barrier's wait, which then swallowed a delay
    shorter than its lead and started I/O at max(lead, delay) while faults were timed at lead + delay."""
    return "\n".join(line for line in job_text.split("\n") if not line.startswith("startdelay="))


def with_start_barrier(job_text: str, start_at_ns: int, *, cache_dropped: bool = False) -> str:
    """``job_text`` with the start barrier in its first measured section (not [global], not the unmeasured
    fill before it); sections after a stonewall start when the one before ends, as they always do.
    ``cache_dropped``: storbench dropped the page cache of the job's files itself before launching fio (see
    cached_files), so the job does not do it again at the moment (``invalidate=0``)."""
    lines = job_text.split("\n")
    for index, line in enumerate(lines):
        if line.startswith("[") and line.endswith("]") and line[1:-1] not in ("global", FILL_JOB):
            barrier = [start_barrier_line(start_at_ns)] + ([job_line("invalidate", "0")] if cache_dropped else [])
            return "\n".join([*lines[:index + 1], *barrier, *lines[index + 1:]])
    raise ValueError("no measured job section")


BARRIER_FIRST_S = 1.0  # lead of the first repetition with some number of clients: this ...
BARRIER_PER_CLIENT_S = 0.08  # ... plus this per client (140 namespace hosts on 2 cores took 8 to 10 s)
BARRIER_MIN_S, BARRIER_MAX_S = 0.5, 60.0


def barrier_lead_s(clients: int, last_reached_s: float | None) -> float:
    """How far ahead of fio's launch the start barrier is set: a quarter more than the slowest server took
    to reach it the last time (``last_reached_s``), plus a quarter second; a per-client allowance the first
    time."""
    lead = (BARRIER_FIRST_S + BARRIER_PER_CLIENT_S * clients if last_reached_s is None
            else last_reached_s * 1.25 + 0.25)
    return min(BARRIER_MAX_S, max(BARRIER_MIN_S, lead))
