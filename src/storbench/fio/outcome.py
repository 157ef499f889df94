"""Decide what one fio execution means: ok, failed or timed out, and with which measurements. Pure."""

from __future__ import annotations

from dataclasses import replace

from storbench.fio.parse import client_measurement, parse_fio_json
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
