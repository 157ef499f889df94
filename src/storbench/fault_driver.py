"""A plan's faults during one repetition (shell; issue 32): each fault done at its time into the measured section
and undone at its restore time, on a timer beside the running fio; what was done recorded with its wall-clock
time. Whatever happens to the repetition (fio fails, times out, is interrupted), a fault that was done (or tried
and failed: it may have done part of itself) and has a restore is undone before the next repetition starts: nothing
stays broken.

The measured section is taken to start ``ramp_s`` after the driver starts (right before fio is started); the
timeline's figures are read against the recorded times (`stats.timeline.failover`), not against the plan's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from types import TracebackType

from storbench.beside import Beside
from storbench.faults import FaultStep
from storbench.model.fault_record import FaultRecord
from storbench.shell import interrupts_held

Act = Callable[[FaultStep, bool], str]  # do (False) or undo (True) one step on the running lab; says what it did


class FaultDriver(Beside):
    """``with FaultDriver(steps, ramp_s, act):`` around one repetition; ``records`` afterwards."""

    thread_name = "storbench-faults"

    def __init__(self, steps: Sequence[FaultStep], ramp_s: float, act: Act,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.steps = tuple(steps)
        self.ramp_s = ramp_s
        self.act = act
        self.clock = clock
        self.records: list[FaultRecord] = []
        self.measure_start_s = 0.0
        self._open: dict[int, FaultStep] = {}  # faults done and not yet undone, by their index in the plan

    def schedule(self) -> list[tuple[float, int, bool]]:
        """(seconds into the measured section, step index, restore) in time order; a restore after its fault, and
        before another fault at the same moment (`kill osd.1` undone at 10 s as the next `kill osd.1` comes: the undo
        first, or the second kill found the OSD dead and the undo started it again at once)."""
        when = [(step.at_s, index, False) for index, step in enumerate(self.steps)]
        when += [(at, index, True) for index, step in enumerate(self.steps) if (at := step.restore_at_s) is not None]

        def order(item: tuple[float, int, bool]) -> tuple[float, int, int]:
            at, index, restore = item
            return at, (2 if self.steps[index].at_s == at else 0) if restore else 1, index

        return sorted(when, key=order)

    def __enter__(self) -> FaultDriver:
        self.measure_start_s = self.clock() + self.ramp_s
        self.start_beside()
        return self

    def work(self) -> None:
        for planned, index, restore in self.schedule():
            if self.stopping.wait(max(0.0, self.measure_start_s + planned - self.clock())):
                return
            if restore and index not in self._open:
                continue  # its fault was not done: nothing to undo
            self._do(index, restore, planned)

    def _do(self, index: int, restore: bool, planned: float) -> None:
        step = self.steps[index]
        started_s = self.clock()  # the fault acts on the I/O as the lab is asked; the lab may take a while to return
        try:
            said, error = self.act(step, restore), ""
        except Exception as exc:  # a fault that fails leaves the repetition running, and says so
            said, error = "", str(getattr(exc, "message", exc)) or type(exc).__name__
        if restore:
            self._open.pop(index, None)
        elif step.restore_after_s is not None:  # also a fault that failed: it may have done part of itself (a
            self._open[index] = step  # rule inserted, then a signal that failed), which its undoing reverts
        self.records.append(FaultRecord(step.action, step.target, restore, started_s, said, error, planned,
                                        self.measure_start_s))

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        with interrupts_held():  # a Ctrl-C meanwhile waits: the action under way ends, every fault still on is
            self.stop_beside()  # undone, and no fault acts on a lab being torn down
            for index in sorted(self._open):  # the repetition ended before a restore: undo it now
                self._do(index, True, self.clock() - self.measure_start_s)
