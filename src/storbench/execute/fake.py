"""An executor that runs nothing: it replays stored fio outputs, or is scripted to hang past the watchdog, fail
or raise, so the run loop can be tested fast and deterministically without fio. What it hands back is judged
by the same code as a real local run (`fio.outcome.judge_repetition`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from storbench.execute.base import PLAIN_FIO, FioSetup, StartsAtOnce, one_job, stored_job_text
from storbench.fio.jobfile import JobBinding
from storbench.fio.outcome import judge_repetition
from storbench.model import Case, RepetitionOutcome


@dataclass(frozen=True)
class Replay:
    """fio ran and wrote ``output_text`` (its JSON, as stored), exited with ``returncode``, said ``stderr``."""

    output_text: str
    returncode: int = 0
    stderr: str = ""


@dataclass(frozen=True)
class Hang:
    """fio ran past the watchdog and was killed."""


@dataclass(frozen=True)
class Raise:
    """Running the repetition raised ``error`` (a KeyboardInterrupt, a lost connection...)."""

    error: BaseException


@dataclass(frozen=True)
class FakeCall:
    """What the fake was asked to run."""

    case: Case
    job_texts: tuple[str, ...]
    rep_index: int
    timeout_s: float
    fio: FioSetup


Step = Replay | Hang | Raise
Script = Sequence[Step] | Callable[[FakeCall], Step]


class FakeExecutor(StartsAtOnce):
    """Plays ``script``: the steps in order, one per run (running out is an error), or a function choosing the
    step for each run. ``calls`` keeps what it was asked to run."""

    def __init__(self, script: Script, *, name: str = "fake", clock: Callable[[], float] = time.time) -> None:
        self.script = script
        self.name = name
        self.clock = clock
        self.calls: list[FakeCall] = []
        self.asked: list[tuple[str, str]] = []  # ("lay_out" or "run", case id), in the order asked
        self.layout_failure = ""  # what lay_out answers

    def job_texts(self, case: Case, binding: JobBinding, rep_index: int) -> tuple[str, ...]:
        return one_job(case, binding, rep_index)

    def _next_step(self, call: FakeCall) -> Step:
        if callable(self.script):
            return self.script(call)
        index = len(self.calls) - 1
        if index >= len(self.script):
            raise AssertionError(f"the fake executor's script has {len(self.script)} steps; run {index + 1} asked")
        return self.script[index]

    @property
    def laid_out(self) -> list[str]:
        """The cases whose files it was asked to lay out, by id."""
        return [case_id for what, case_id in self.asked if what == "lay_out"]

    def lay_out(self, case: Case, job_texts: Sequence[str], timeout_s: float, fio: FioSetup = PLAIN_FIO) -> str:
        self.asked.append(("lay_out", case.case_id))
        return self.layout_failure

    def run_case(self, case: Case, job_texts: Sequence[str], rep_index: int, timeout_s: float,
                 fio: FioSetup = PLAIN_FIO) -> RepetitionOutcome:
        call = FakeCall(case=case, job_texts=tuple(job_texts), rep_index=rep_index, timeout_s=timeout_s, fio=fio)
        self.calls.append(call)
        self.asked.append(("run", case.case_id))
        step = self._next_step(call)
        if isinstance(step, Raise):
            raise step.error
        started = self.clock()
        output, returncode, stderr = (step.output_text, step.returncode, step.stderr) if isinstance(step, Replay) \
            else ("", None, "")
        return judge_repetition(
            rw=case.workload.rw, returncode=returncode, timed_out=isinstance(step, Hang), timeout_s=timeout_s,
            output_text=output, stderr_tail=stderr, started_at_s=started, finished_at_s=self.clock(),
            job_text=stored_job_text(job_texts), command=("fake-fio", fio.binary or "fio"),
            fio_version=fio.version, client=self.name, rwmixread=case.workload.rwmixread)
