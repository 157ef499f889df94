"""Run one fio job locally: private files, fio started by the supervisor (own process group, watchdog), nothing
left behind."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from storbench.execute.base import PLAIN_FIO, FioSetup, StartsAtOnce, layout_failure, one_job
from storbench.execute.jobdirs import job_dir
from storbench.execute.supervisor import FioProcessResult, supervise
from storbench.fio.jobfile import MAX_LOG_CHARS, JobBinding, fio_command, timeline_logs
from storbench.fio.outcome import judge_repetition
from storbench.model import Case, RepetitionOutcome


class LocalExecutor(StartsAtOnce):
    """Runs fio as a child process on this machine."""

    name = "local"

    def __init__(self, fio_binary: str, *, term_grace_s: float = 3.0) -> None:
        self.fio_binary = fio_binary
        self.term_grace_s = term_grace_s

    def run(self, job_text: str, timeout_s: float, env: Sequence[tuple[str, str]] = (),
            fio_binary: str | None = None) -> FioProcessResult:
        """One fio process, unjudged (target layout jobs use this directly)."""
        with job_dir() as private_dir:
            work = Path(private_dir)
            job_path = work / "job.fio"
            output_path = work / "fio-output.json"
            job_path.write_text(job_text)
            command = fio_command(fio_binary or self.fio_binary, str(job_path), str(output_path))
            ended = supervise(command, cwd=work, timeout_s=timeout_s, term_grace_s=self.term_grace_s,
                              env=dict(env))
            output_text = output_path.read_text(errors="replace") if output_path.exists() else ""
            logs = tuple((name, (work / name).read_text(errors="replace")[:MAX_LOG_CHARS])
                         for name in timeline_logs([entry.name for entry in work.iterdir()]))
            return FioProcessResult(**asdict(ended), output_text=output_text, logs=logs)

    def job_texts(self, case: Case, binding: JobBinding, rep_index: int) -> tuple[str, ...]:
        return one_job(case, binding, rep_index)

    def lay_out(self, case: Case, job_texts: Sequence[str], timeout_s: float, fio: FioSetup = PLAIN_FIO) -> str:
        """The layout jobs run here, one after another."""
        for job_text in job_texts:
            result = self.run(job_text, timeout_s, fio.env, fio.binary)
            if why := layout_failure(result.returncode, result.timed_out, result.stderr_tail):
                return why
        return ""

    def run_case(self, case: Case, job_texts: Sequence[str], rep_index: int, timeout_s: float,
                 fio: FioSetup = PLAIN_FIO) -> RepetitionOutcome:
        (job_text,) = job_texts
        result = self.run(job_text, timeout_s, fio.env, fio.binary)
        return judge_repetition(
            rw=case.workload.rw, returncode=result.returncode, timed_out=result.timed_out, timeout_s=timeout_s,
            output_text=result.output_text, stderr_tail=result.stderr_tail, started_at_s=result.started_at_s,
            finished_at_s=result.finished_at_s, job_text=job_text, command=result.command, fio_version=fio.version,
            client=self.name, logs=result.logs, rwmixread=case.workload.rwmixread)
