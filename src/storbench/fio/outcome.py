"""Decide what one fio execution means: ok, failed or timed out, and with which measurements. Pure.

Every executor (local, hosts, Kubernetes, the fake) judges through this module; the failure rule itself is
written once, in `client_fault`.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from storbench.fio.merge import client_measurement, client_measurements_by_host
from storbench.fio.parse import embedded_fio_json, json_after_messages, parse_fio_json
from storbench.model import MIXED_RW, RW_DIRECTIONS, ClientMeasurement, RepetitionOutcome, Status, is_size_based


@dataclass(frozen=True)
class ClientFault:
    """Why a client's measurement is a failure: the first job error, or the directions it did no I/O in."""

    job_error: int | None
    missing: tuple[str, ...]

    def describe(self, subject: str, where: str = "") -> str:
        """``subject`` did no read I/O / fio job error 5``where`` (the executors' wording)."""
        if self.job_error is not None:  # fio's error is an errno: its name says what it was
            named = f" ({errno.errorcode[self.job_error]})" if self.job_error in errno.errorcode else ""
            return f"fio job error {self.job_error}{named}{where}"
        return f"{subject} did no {'/'.join(self.missing)} I/O"


def client_fault(measurement: ClientMeasurement, rw: str, rwmixread: int | None = None) -> ClientFault | None:
    """The failure rule, for every executor: a client whose jobs report an error, or that moved no I/O in a
    direction its pattern asks for, failed, even when fio exits 0 (fio's nfs engine, for one, reports error 0
    with zero I/Os). None: the measurement stands."""
    if measurement.job_errors:
        return ClientFault(job_error=measurement.job_errors[0], missing=())
    missing = tuple(d.value for d in RW_DIRECTIONS.get(rw, ()) if measurement.direction(d) is None)
    if rw in MIXED_RW and missing:  # a mix (getput too) moves what rwmixread asks: none of a direction at 0 %, and a
        # client's few I/Os may all go one way by chance; missing is a fault where that chance is below one in a million
        reads = (50 if rwmixread is None else rwmixread) / 100
        done = sum(d.total_ios for d in measurement.directions)
        share = {"read": reads, "write": 1 - reads}
        missing = tuple(d for d in missing if share.get(d, 1.0) > 0
                        and (done == 0 or (1 - share.get(d, 1.0)) ** done < 1e-6))  # no I/O at all: every one
    return ClientFault(job_error=None, missing=missing) if missing else None


def exit_error(returncode: int | None, stderr_tail: str) -> str:
    """fio exited non-zero: the status and what it said, its own `fio: ...` lines (the first says what went wrong,
    the last only what it did about it: "fio: job global dropped"), else its last line."""
    lines = [line.strip() for line in stderr_tail.strip().splitlines() if line.strip()]
    said = "; ".join(line for line in lines if line.startswith("fio: ")) or (lines[-1] if lines else "")
    said = said if len(said) <= 500 else said[:499] + "…"
    return f"fio exited with status {returncode}" + (f": {said}" if said else "")


def killed_error(timeout_s: float) -> str:
    return f"watchdog: fio ran longer than {timeout_s:g}s and was killed"


def judge_client(output_text: str, rw: str, client: str, rwmixread: int | None = None
                 ) -> tuple[ClientMeasurement | None, str]:
    """Parse one client's fio JSON. Returns the measurement and an error ("" when it is a success)."""
    if not output_text.strip():
        return None, "fio wrote no output"
    try:  # fio writes its notes and errors to --output too, before the document (with thread=1, or fio >= 3.42)
        output = parse_fio_json(embedded_fio_json(output_text) or output_text)
    except ValueError as exc:
        return None, f"fio output unreadable: {exc}"
    measurement = client_measurement(output, client, size_based=is_size_based(rw))
    fault = client_fault(measurement, rw, rwmixread)
    return measurement, fault.describe("fio") if fault else ""


def judge_repetition(
    *,
    rw: str,
    returncode: int | None,
    timed_out: bool,
    timeout_s: float,
    output_text: str,
    stderr_tail: str,
    started_at_s: float,
    finished_at_s: float,
    job_text: str,
    command: tuple[str, ...],
    fio_version: str,
    client: str = "local",
    logs: tuple[tuple[str, str], ...] = (),
    rwmixread: int | None = None,
) -> RepetitionOutcome:
    base = RepetitionOutcome(
        status=Status.OK,
        started_at_s=started_at_s,
        finished_at_s=finished_at_s,
        job_text=job_text,
        command=command,
        fio_version=fio_version,
        raw_output=output_text,
        stderr_tail=stderr_tail,
        logs=logs,
    )
    if timed_out:
        return replace(base, status=Status.TIMEOUT, error=killed_error(timeout_s))
    measurement, error = judge_client(output_text, rw, client, rwmixread)
    if returncode != 0:  # what fio said: on stderr, or in the output file before its document, else its job's error
        document = embedded_fio_json(output_text)
        said = stderr_tail if stderr_tail.strip() else (
            output_text[:output_text.find(document)] if document else output_text)[-4000:]
        error = exit_error(returncode, said) if said.strip() or not error else f"fio exited with status " \
            f"{returncode}: {error}"
    clients = (measurement,) if measurement is not None else ()
    return replace(base, status=Status.FAILED if error else Status.OK, error=error, clients=clients)


_STARTING_RE = re.compile(r"^<(?P<host>[^>]+)> Starting \d+ (?:process|thread)")


_BARRIER_RE = re.compile(r"^<(?P<host>[^>]+)> \S+ : Saving output of prerun in ")


def barrier_arrivals_s(stamped_lines: Sequence[tuple[float, str]]) -> dict[str, float]:
    """When each server's last job reached the start barrier (fio says so just before it runs exec_prerun),
    as this client saw it."""
    last: dict[str, float] = {}
    for stamp, line in stamped_lines:
        match = _BARRIER_RE.match(line)
        if match:
            last[match.group("host")] = max(stamp, last.get(match.group("host"), stamp))
    return last


def start_skew_s(stamped_lines: Sequence[tuple[float, str]], barrier_at_s: float | None = None) -> float | None:
    """Spread (max - min) of the moments the servers started their I/O. Behind a start barrier at
    ``barrier_at_s`` a server starts at the barrier, or when it reached it if that was later (an upper bound:
    the message left the server just before). Without one, the moments each server reported 'Starting N
    process', from the client's output read as it grew. None with fewer than two servers seen (servers sharing
    a hostname count once)."""
    if barrier_at_s is not None:
        arrivals = barrier_arrivals_s(stamped_lines)
        if len(arrivals) >= 2:
            starts = [max(barrier_at_s, moment) for moment in arrivals.values()]
            return max(starts) - min(starts)
    first: dict[str, float] = {}
    for stamp, line in stamped_lines:
        match = _STARTING_RE.match(line)
        if match and match.group("host") not in first:
            first[match.group("host")] = stamp
    return max(first.values()) - min(first.values()) if len(first) >= 2 else None


def fio_client_name(server: str) -> str:
    """How fio's client names a server's results ("hostname:port", `fio.parse`) for a server given as it takes it
    ("host,port", or "ip6:ADDRESS,port" whose results it names "ADDRESS:port")."""
    host, _, port = server.removeprefix("ip6:").rpartition(",")
    return f"{host}:{port}"


def judge_clients(output_text: str, rw: str, servers: Sequence[str], rwmixread: int | None = None
                  ) -> tuple[tuple[ClientMeasurement, ...], str]:
    """Client/server output of ``servers`` ("address,port"): one measurement per server that answered,
    and an error when any server is missing, reports a job error or moved no I/O it should have."""
    if not output_text.strip():
        return (), "fio wrote no output"
    try:
        output = parse_fio_json(json_after_messages(output_text))
    except ValueError as exc:
        return (), f"fio output unreadable: {exc}"
    clients = tuple(client_measurements_by_host(output, size_based=is_size_based(rw)))
    expected = [fio_client_name(server) for server in servers]
    missing = [server for server in expected if server not in {c.client for c in clients}]
    if missing:
        return clients, f"{len(missing)} of {len(expected)} clients returned no result (first: {missing[0]})"
    for client in clients:
        fault = client_fault(client, rw, rwmixread)
        if fault:
            return clients, fault.describe(client.client, f" on {client.client}")
    return clients, ""


def judge_clients_repetition(
    *, rw: str, servers: Sequence[str], returncode: int | None, timed_out: bool, timeout_s: float,
    output_text: str, stderr_tail: str, started_at_s: float, finished_at_s: float, job_text: str,
    command: tuple[str, ...], fio_version: str, stamped_lines: Sequence[tuple[float, str]] = (),
    barrier_at_s: float | None = None, rwmixread: int | None = None,
) -> RepetitionOutcome:
    # the servers' own complaints ("<host> fio: ... is not a directory") come on standard output, before the JSON
    complaints = [line.strip() for _, line in stamped_lines if "fio: " in line]
    tail = "\n".join(part for part in (stderr_tail.rstrip("\n"), "\n".join(complaints[-20:])) if part)
    base = RepetitionOutcome(status=Status.OK, started_at_s=started_at_s, finished_at_s=finished_at_s,
                             job_text=job_text, command=command, fio_version=fio_version, raw_output=output_text,
                             stderr_tail=tail, start_skew_s=start_skew_s(stamped_lines, barrier_at_s))
    if timed_out:
        return replace(base, status=Status.TIMEOUT, error=killed_error(timeout_s))
    clients, error = judge_clients(output_text, rw, servers, rwmixread)
    if returncode != 0:
        error = exit_error(returncode, stderr_tail)
    if error and complaints:
        error += f"; {complaints[0]}"
    return replace(base, status=Status.FAILED if error else Status.OK, error=error, clients=clients)
