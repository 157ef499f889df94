"""The one executor interface: a case's job texts in, one judged outcome out.

Local (`execute/local.py`), many fio servers (`execute/hosts.py`), Kubernetes pods (`execute/kubernetes.py`) and
the fake that replays stored outputs (`execute/fake.py`) all implement `Executor`; the run loop calls
`job_texts` then `run_case` and never asks which one it holds. What a repetition stores as its job text is
the clients' files one after the other (`stored_job_text`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from storbench.fio.jobfile import JobBinding, render_client_jobs, render_job
from storbench.model import Case, RepetitionOutcome
from storbench.telemetry.series import TelemetrySource


@dataclass(frozen=True)
class FioSetup:
    """Which fio runs a case's jobs, and with what: the version the run checked (recorded with each outcome;
    pods report their own), a target's own binary (the nfs engine; None: the executor's), and what the target
    needs in fio's environment (CEPH_CONF for the rbd engine)."""

    version: str = ""
    binary: str | None = None
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # may hold the S3 keys: never printed


PLAIN_FIO = FioSetup()


class Executor(Protocol):
    name: str

    def job_texts(self, case: Case, binding: JobBinding, rep_index: int) -> tuple[str, ...]:
        """The job files this executor runs for one repetition of ``case`` (one per client, in client order)."""
        ...

    def start_delay_s(self, case: Case) -> float:
        """How long after `run_case` is called fio starts (0 for fio started at once; pods wait for a common
        start): a plan's faults are timed from then."""
        ...

    def run_case(self, case: Case, job_texts: Sequence[str], rep_index: int, timeout_s: float,
                 fio: FioSetup = PLAIN_FIO) -> RepetitionOutcome:
        """Run the jobs, wait for them (fio still running after ``timeout_s``, the watchdog, is killed and the
        outcome is a timeout) and judge what came back."""
        ...

    def lay_out(self, case: Case, job_texts: Sequence[str], timeout_s: float, fio: FioSetup = PLAIN_FIO) -> str:
        """Run the case's layout jobs (`fio.layout.layout_job` of each client's: fio's set-up alone, or the fill
        section alone), as its clients would run its jobs, before a repetition whose faults are timed from its
        start; "" when done, else why not."""
        ...

    def telemetry(self, case: Case, interval_s: float) -> TelemetrySource | None:
        """What the machines ``case``'s clients run on report beside this host's own sampling, every
        ``interval_s`` (a Kubernetes cluster's nodes); None: nothing more."""
        ...


class StartsAtOnce:
    """For executors whose fio starts as `run_case` is called (a plan's faults are timed from then), on this host
    or fio servers beside it: this host's sampling is all their telemetry."""

    def start_delay_s(self, case: Case) -> float:
        return 0.0

    def telemetry(self, case: Case, interval_s: float) -> TelemetrySource | None:
        return None

    def lay_out(self, case: Case, job_texts: Sequence[str], timeout_s: float, fio: FioSetup = PLAIN_FIO) -> str:
        return ""


def layout_failure(returncode: int | None, timed_out: bool, stderr_tail: str) -> str:
    """Why a layout-only fio run failed ("" when it did not)."""
    if timed_out:
        return "fio did not finish it within its time"
    if returncode != 0:
        tail = " ".join(stderr_tail.split()[-12:])
        return f"fio exited {returncode}" + (f": {tail}" if tail else "")
    return ""


def one_job(case: Case, binding: JobBinding, rep_index: int) -> tuple[str, ...]:
    """A single fio process on this machine runs the case's plain job file."""
    return (render_job(case, binding, rep_index),)


def client_jobs(case: Case, binding: JobBinding, rep_index: int) -> tuple[str, ...]:
    """Many clients each get their own job file (own file names, own RBD image, own random seed)."""
    return tuple(render_client_jobs(case, binding, rep_index))


def stored_job_text(job_texts: Sequence[str], made_again: Sequence[tuple[int, str]] = ()) -> str:
    """A repetition's job text as stored: its clients' job files one after the other, then the job of each pod made
    again mid-run for a client (``made_again``: (client, job text), a fault or anyone deleted its pod), which ran the
    rest of the measured section."""
    again = [f"; client.{client}: its pod made again mid-run, this job for the rest of the measured section\n{text}"
             for client, text in made_again]
    return "\n".join([*job_texts, *again])
