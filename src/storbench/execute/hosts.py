"""Run one repetition on many fio servers at once (`fio --client`), started by the supervisor like local fio.

fio 3.33 binds job files to the `--client` before them: `--client=A a.fio --client=B b.fio` runs a.fio on A
and b.fio on B (a lone job file after several clients runs only on the last). Options given on the command
line are not sent to the servers, so everything is in the job files. While fio runs, its standard output is
read as it comes and each server's "Starting" message is timestamped: the spread of those moments is the
start skew between clients. The JSON follows the messages; it is taken from the first line that is "{".

Many clients start together behind a barrier: a fio server runs a job only after its own set-up (a second of
polling before it reads the run command, clock calibration, file layout), and with many servers on one machine
those moments spread over seconds. Each client's first measured section therefore waits (exec_prerun, see
jobfile.with_start_barrier) until one wall-clock moment chosen when fio is launched: far enough ahead for the
slowest server of the previous repetition with as many clients to get there, and at first an allowance per
client. Servers on other machines need clocks in step (NTP); the skew stored is measured, never assumed.

When the servers are the hosts lab, their files are this machine's: storbench drops their page cache itself
before launching fio, and the jobs skip fio's own drop when it opens them (invalidate=0). The start is as cold,
but 140 drops no longer compete for two cores in the milliseconds after the moment (with files cached by the
repetition before, they held the last clients' first I/O up to a quarter second).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import IO

from storbench.errors import UserError
from storbench.execute.base import (
    PLAIN_FIO,
    FioSetup,
    StartsAtOnce,
    client_jobs,
    layout_failure,
    stored_job_text,
)
from storbench.execute.jobdirs import job_dir
from storbench.execute.supervisor import FioProcessResult, supervise
from storbench.fio.barrier import (
    BARRIER_MIN_S,
    CachedFiles,
    barrier_lead_s,
    cached_files,
    with_start_barrier,
    without_start_delay,
)
from storbench.fio.jobfile import (
    MAX_LOG_CHARS,
    S3_KEY_ENV,
    S3_KEY_ID_ENV,
    JobBinding,
    is_safe_job_value,
    timeline_logs,
)
from storbench.fio.outcome import barrier_arrivals_s, judge_clients_repetition
from storbench.model import Case, RepetitionOutcome


@dataclass(frozen=True)
class ClientsProcessResult(FioProcessResult):
    """What happened to one `fio --client` process, and when each server's messages came."""

    stamped_lines: tuple[tuple[float, str], ...] = ()  # (time first seen, line) of the messages before the JSON


def clients_command(fio_binary: str, pairs: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """``pairs``: (server "address,port", job file path) in client order. The JSON goes to standard output,
    after the servers' messages (see ``_StdoutReader``)."""
    argv = [fio_binary, "--output-format=json+"]
    for server, job_path in pairs:
        argv += [f"--client={server}", job_path]
    return tuple(argv)


class _StdoutReader:
    """Reads fio's standard output as it comes: the servers' messages, each stamped with the time it arrived,
    then the JSON document. (With --output fio buffers the messages until the end, which hides the skew.)"""

    def __init__(self) -> None:
        self.lines: list[tuple[float, str]] = []
        self.chunks: list[bytes] = []
        self._thread: threading.Thread | None = None

    def _loop(self, stream: IO[bytes]) -> None:
        in_json = False
        for raw in stream:
            self.chunks.append(raw)
            if not in_json:
                line = raw.decode(errors="replace").rstrip("\n")
                if line == "{":
                    in_json = True
                else:
                    self.lines.append((time.time(), line))

    def start(self, stream: IO[bytes]) -> None:
        self._thread = threading.Thread(target=self._loop, args=(stream,), name="storbench-client-output",
                                        daemon=True)
        self._thread.start()

    def finish(self) -> None:
        if self._thread is not None:
            self._thread.join(timeout=30)

    def text(self) -> str:
        return b"".join(self.chunks).decode(errors="replace")


SERVER_ENV_VALUES = (S3_KEY_ID_ENV, S3_KEY_ENV)  # what a server's fio needs from storbench's environment


def with_server_env(job_text: str, env: Sequence[tuple[str, str]]) -> str:
    """The job text a server receives: the S3 keys a local fio takes from its environment (``${NAME}``) written
    in, since a server expands names in its own environment. Only what is sent holds them: the text stored
    with the repetition keeps the names."""
    values = dict(env)
    for name in SERVER_ENV_VALUES:
        if name in values:
            if not values[name] or not is_safe_job_value(values[name]):
                raise UserError(f"an S3 key ({name}) holds characters a job file sent to fio's servers cannot carry",
                                hint="keys of letters, digits and + / = . _ - go; or measure from this machine "
                                "(without lab.hosts)")
            job_text = job_text.replace(f"${{{name}}}", values[name])
    return job_text


def drop_page_cache(files: CachedFiles) -> int:
    """Drop the page cache of the regular files ``files`` names (what fio's ``invalidate`` does when it opens a
    file: posix_fadvise DONTNEED over all of it); links are not followed. Returns how many; OSError if any
    could not be dropped."""
    pattern = re.compile(files.name_pattern)
    dropped = 0
    for directory in files.directories:
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            continue  # fio creates it
        for entry in entries:
            if pattern.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
                dropped += 1
    return dropped


def _cache_dropped(job_text: str) -> bool:
    files = cached_files(job_text)
    if files is None:
        return False
    try:
        drop_page_cache(files)
    except OSError:
        return False  # fio drops it, as it always does
    return True


class HostsExecutor(StartsAtOnce):
    """Drives fio servers (hosts, network namespaces, pods' fio --server) from this machine: a case with N
    clients runs on the first N ``servers``, each with its own job file."""

    name = "hosts"

    def __init__(self, fio_binary: str, servers: Sequence[str], *, term_grace_s: float = 3.0,
                 lab_servers: bool = False, end_left_jobs: Callable[[], object] | None = None) -> None:
        """``end_left_jobs``: ends what a client killed (the watchdog, a Ctrl-C) left running on the servers: a
        server's job outlives its client and would run beside the next repetition's (the hosts lab's `end_jobs`;
        a plan's own servers offer no way)."""
        self.fio_binary = fio_binary
        self.end_left_jobs = end_left_jobs
        # the servers are the hosts lab's, on this machine: they see its files, and keys sent to them stay here
        self.lab_servers = lab_servers
        self.servers = tuple(servers)
        self.term_grace_s = term_grace_s
        # clients -> seconds from the moment the barrier is timed from (before the page-cache drop) to the last
        # server there: the next lead covers the drop as well as the launch
        self._reached_s: dict[int, float] = {}
        # (case, when, lead) of the last `start_delay_s`: the moment a plan's faults are timed from
        self._timed_from: tuple[Case, float, float] | None = None

    def run_clients(self, job_texts: Sequence[str], servers: Sequence[str], timeout_s: float) -> ClientsProcessResult:
        if len(job_texts) != len(servers):
            raise ValueError("one job text per server")
        with job_dir("clients") as private_dir:
            work = Path(private_dir)
            pairs = []
            for index, (job_text, server) in enumerate(zip(job_texts, servers, strict=True), 1):
                job_path = work / f"client{index}.fio"
                job_path.write_text(job_text)
                pairs.append((server, str(job_path)))
            reader = _StdoutReader()
            try:
                ended = supervise(clients_command(self.fio_binary, pairs), cwd=work, timeout_s=timeout_s,
                                  term_grace_s=self.term_grace_s, stdout_reader=reader)
            except BaseException:  # killed as storbench stops: its jobs would run on in a lab kept up
                self._end_left_jobs()
                raise
            if ended.timed_out or ended.returncode != 0:  # killed, or ended without a server: their jobs go too
                self._end_left_jobs()
            logs = tuple((name, (work / name).read_text(errors="replace")[:MAX_LOG_CHARS])  # each server's, by name
                         for name in timeline_logs([entry.name for entry in work.iterdir()]))
            return ClientsProcessResult(**asdict(ended), output_text=reader.text(), stamped_lines=tuple(reader.lines),
                                        logs=logs)

    def _end_left_jobs(self) -> None:
        if self.end_left_jobs is not None:
            with contextlib.suppress(Exception):  # a clean-up that fails loses neither the outcome nor why it stopped
                self.end_left_jobs()

    def job_texts(self, case: Case, binding: JobBinding, rep_index: int) -> tuple[str, ...]:
        return client_jobs(case, binding, rep_index)

    def start_delay_s(self, case: Case) -> float:
        """With two clients or more the servers' I/O starts at the barrier, the lead `run_case` takes after it is
        called: a plan's faults are timed from there."""
        clients = len(self.servers[:case.clients])
        if clients < 2:
            return 0.0
        lead_s = barrier_lead_s(clients, self._reached_s.get(clients))
        self._timed_from = (case, time.time(), lead_s)  # `run_case` sets the barrier from this moment
        return lead_s

    def lay_out(self, case: Case, job_texts: Sequence[str], timeout_s: float, fio: FioSetup = PLAIN_FIO) -> str:
        """Each client's layout job on its server: a layout can outlast the start barrier's lead, and one client
        has no barrier."""
        laid = list(job_texts)
        result = self.run_clients([with_server_env(text, fio.env) for text in laid] if self.lab_servers else laid,
                                  list(self.servers[:case.clients]), timeout_s)
        return layout_failure(result.returncode, result.timed_out, result.stderr_tail)

    def run_case(self, case: Case, job_texts: Sequence[str], rep_index: int, timeout_s: float,
                 fio: FioSetup = PLAIN_FIO) -> RepetitionOutcome:
        """The servers run their own fio: ``fio.binary`` stays on this machine, and of ``fio.env`` only the S3
        keys go, inside the job texts sent (never stored), and only to the hosts lab's servers on this machine: a
        plan's own servers are refused for S3 targets (`config.operation_checks`), since fio's client expands
        ``${...}`` from its own environment before it sends a job file (the operator's keys never leave this
        machine). With more than one client the job texts gain the start
        barrier (and are stored with it: what ran)."""
        chosen = list(self.servers[:case.clients])
        barrier_at_s: float | None = None
        timed_from, self._timed_from = self._timed_from, None
        if len(chosen) >= 2:
            asked_s = time.time()
            dropped = [self.lab_servers and _cache_dropped(text) for text in job_texts]
            lead_s = barrier_lead_s(len(chosen), self._reached_s.get(len(chosen)))
            if timed_from is not None and timed_from[0] == case:  # the faults' moment: the drop eats into the lead
                asked_s, lead_s = timed_from[1], timed_from[2]
            launch_s = time.time()
            # one startdelay (a range is refused with several clients), waited after the lead, as faults are timed
            barrier_at_s = max(asked_s + lead_s, launch_s + BARRIER_MIN_S) + case.workload.start_delay_s[0]
            job_texts = [with_start_barrier(without_start_delay(text), int(barrier_at_s * 1e9), cache_dropped=done)
                         for text, done in zip(job_texts, dropped, strict=True)]
            timeout_s += lead_s
        sent = [with_server_env(text, fio.env) for text in job_texts] if self.lab_servers else list(job_texts)
        result = self.run_clients(sent, chosen, timeout_s)
        if barrier_at_s is not None:
            arrivals = barrier_arrivals_s(result.stamped_lines)
            if len(arrivals) == len(chosen):
                self._reached_s[len(chosen)] = max(arrivals.values()) - asked_s
        judged = judge_clients_repetition(
            rw=case.workload.rw, servers=chosen, returncode=result.returncode, timed_out=result.timed_out,
            timeout_s=timeout_s, output_text=result.output_text, stderr_tail=result.stderr_tail,
            started_at_s=result.started_at_s, finished_at_s=result.finished_at_s,
            job_text=stored_job_text(job_texts), command=result.command, fio_version=fio.version,
            stamped_lines=result.stamped_lines, barrier_at_s=barrier_at_s, rwmixread=case.workload.rwmixread)
        return replace(judged, logs=result.logs)
