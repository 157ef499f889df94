"""Decide what one fio execution means: ok, failed or timed out, and with which measurements. Pure."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from storbench.fio.parse import client_measurement, client_measurements_by_host, json_after_messages, parse_fio_json
from storbench.model import RW_DIRECTIONS, ClientMeasurement, RepetitionOutcome, Status


def judge_client(output_text: str, rw: str, client: str) -> tuple[ClientMeasurement | None, str]:
    """Parse one client's fio JSON. Returns the measurement and an error ("" when it is a success).

    A run that reports an error in any job, or moved no I/O in a direction its pattern asks for,
    is a failure even when fio exits 0 (fio's nfs engine, for one, reports error 0 with zero I/Os).
    """
    if not output_text.strip():
        return None, "fio wrote no output"
    try:
        output = parse_fio_json(output_text)
    except ValueError as exc:
        return None, f"fio output unreadable: {exc}"
    measurement = client_measurement(output, client)
    if measurement.job_errors:
        return measurement, f"fio job error {measurement.job_errors[0]}"
    expected = RW_DIRECTIONS.get(rw, ())
    missing = [d.value for d in expected if measurement.direction(d) is None]
    if missing:
        return measurement, f"fio did no {'/'.join(missing)} I/O"
    return measurement, ""


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
    )
    if timed_out:
        return replace(base, status=Status.TIMEOUT,
                       error=f"watchdog: fio ran longer than {timeout_s:g}s and was killed")
    measurement, error = judge_client(output_text, rw, client)
    if returncode != 0:
        last_line = next((line for line in reversed(stderr_tail.strip().splitlines()) if line.strip()), "")
        error = f"fio exited with status {returncode}" + (f": {last_line.strip()}" if last_line else "")
    clients = (measurement,) if measurement is not None else ()
    return replace(base, status=Status.FAILED if error else Status.OK, error=error, clients=clients)


_STARTING_RE = re.compile(r"^<(?P<host>[^>]+)> Starting \d+ (?:process|thread)")


def start_skew_s(stamped_lines: Sequence[tuple[float, str]]) -> float | None:
    """Spread (max - min) of the moments each server reported 'Starting N process', from the client's
    output read as it grew. None with fewer than two servers seen (servers sharing a hostname count once)."""
    first: dict[str, float] = {}
    for stamp, line in stamped_lines:
        match = _STARTING_RE.match(line)
        if match and match.group("host") not in first:
            first[match.group("host")] = stamp
    return max(first.values()) - min(first.values()) if len(first) >= 2 else None


def judge_clients(output_text: str, rw: str, servers: Sequence[str]) -> tuple[tuple[ClientMeasurement, ...], str]:
    """Client/server output of ``servers`` ("address,port"): one measurement per server that answered,
    and an error when any server is missing, reports a job error or moved no I/O it should have."""
    if not output_text.strip():
        return (), "fio wrote no output"
    try:
        output = parse_fio_json(json_after_messages(output_text))
    except ValueError as exc:
        return (), f"fio output unreadable: {exc}"
    clients = tuple(client_measurements_by_host(output))
    expected = [server.replace(",", ":") for server in servers]
    missing = [server for server in expected if server not in {c.client for c in clients}]
    if missing:
        return clients, f"{len(missing)} of {len(expected)} clients returned no result (first: {missing[0]})"
    for client in clients:
        if client.job_errors:
            return clients, f"fio job error {client.job_errors[0]} on {client.client}"
        gaps = [d.value for d in RW_DIRECTIONS.get(rw, ()) if client.direction(d) is None]
        if gaps:
            return clients, f"{client.client} did no {'/'.join(gaps)} I/O"
    return clients, ""


def judge_clients_repetition(
    *, rw: str, servers: Sequence[str], returncode: int | None, timed_out: bool, timeout_s: float,
    output_text: str, stderr_tail: str, started_at_s: float, finished_at_s: float, job_text: str,
    command: tuple[str, ...], fio_version: str, stamped_lines: Sequence[tuple[float, str]] = (),
) -> RepetitionOutcome:
    # the servers' own complaints ("<host> fio: ... is not a directory") come on standard output, before the JSON
    complaints = [line.strip() for _, line in stamped_lines if "fio: " in line]
    tail = "\n".join(part for part in (stderr_tail.rstrip("\n"), "\n".join(complaints[-20:])) if part)
    base = RepetitionOutcome(status=Status.OK, started_at_s=started_at_s, finished_at_s=finished_at_s,
                             job_text=job_text, command=command, fio_version=fio_version, raw_output=output_text,
                             stderr_tail=tail, start_skew_s=start_skew_s(stamped_lines))
    if timed_out:
        return replace(base, status=Status.TIMEOUT,
                       error=f"watchdog: fio ran longer than {timeout_s:g}s and was killed")
    clients, error = judge_clients(output_text, rw, servers)
    if returncode != 0:
        last_line = next((line for line in reversed(stderr_tail.strip().splitlines()) if line.strip()), "")
        error = f"fio exited with status {returncode}" + (f": {last_line.strip()}" if last_line else "")
    if error and complaints:
        error += f"; {complaints[0]}"
    return replace(base, status=Status.FAILED if error else Status.OK, error=error, clients=clients)
