"""Run one repetition on many fio servers at once (`fio --client`), with the local executor's watchdog.

fio 3.33 binds job files to the `--client` before them: `--client=A a.fio --client=B b.fio` runs a.fio on A
and b.fio on B (a lone job file after several clients runs only on the last). Options given on the command
line are not sent to the servers, so everything is in the job files. While fio runs, its standard output is
read as it comes and each server's "Starting" message is timestamped: the spread of those moments is the
start skew between clients. The JSON follows the messages; it is taken from the first line that is "{".
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from storbench.execute.local import _die_with_parent, _kill_group, _tail


@dataclass(frozen=True)
class ClientsProcessResult:
    command: tuple[str, ...]
    returncode: int | None
    timed_out: bool
    output_text: str
    stderr_tail: str
    started_at_s: float
    finished_at_s: float
    stamped_lines: tuple[tuple[float, str], ...]  # (time first seen, line) of the messages before the JSON


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

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.lines: list[tuple[float, str]] = []
        self.chunks: list[bytes] = []
        self._thread = threading.Thread(target=self._loop, name="storbench-client-output", daemon=True)

    def _loop(self) -> None:
        in_json = False
        for raw in self.stream:
            self.chunks.append(raw)
            if not in_json:
                line = raw.decode(errors="replace").rstrip("\n")
                if line == "{":
                    in_json = True
                else:
                    self.lines.append((time.time(), line))

    def start(self) -> None:
        self._thread.start()

    def finish(self) -> tuple[str, tuple[tuple[float, str], ...]]:
        self._thread.join(timeout=30)
        return b"".join(self.chunks).decode(errors="replace"), tuple(self.lines)


class HostsExecutor:
    """Drives fio servers (hosts, network namespaces, pods' fio --server) from this machine."""

    name = "hosts"

    def __init__(self, fio_binary: str, *, term_grace_s: float = 3.0) -> None:
        self.fio_binary = fio_binary
        self.term_grace_s = term_grace_s

    def run_clients(self, job_texts: Sequence[str], servers: Sequence[str], timeout_s: float) -> ClientsProcessResult:
        if len(job_texts) != len(servers):
            raise ValueError("one job text per server")
        with tempfile.TemporaryDirectory(prefix="storbench-clients-") as private_dir:
            work = Path(private_dir)
            pairs = []
            for index, (job_text, server) in enumerate(zip(job_texts, servers, strict=True), 1):
                job_path = work / f"client{index}.fio"
                job_path.write_text(job_text)
                pairs.append((server, str(job_path)))
            stderr_path = work / "stderr.txt"
            command = clients_command(self.fio_binary, pairs)
            started = time.time()
            timed_out = False
            with open(stderr_path, "wb") as stderr_file:
                process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                           stderr=stderr_file, cwd=private_dir, process_group=0,
                                           preexec_fn=_die_with_parent, env=dict(os.environ))
                assert process.stdout is not None
                reader = _StdoutReader(process.stdout)
                reader.start()
                try:
                    process.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    _kill_group(process, self.term_grace_s)
                except BaseException:
                    _kill_group(process, 0.5)
                    raise
            finished = time.time()
            output_text, stamped = reader.finish()
            process.stdout.close()
            return ClientsProcessResult(command=command, returncode=None if timed_out else process.returncode,
                                        timed_out=timed_out, output_text=output_text,
                                        stderr_tail=_tail(stderr_path), started_at_s=started,
                                        finished_at_s=finished, stamped_lines=stamped)
