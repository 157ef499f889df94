"""What to run: one point of the workload sweep, a case (target x workload x clients x lab point), a target's
precondition and a case's place in the run order. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from storbench.model.lab_point import NO_LAB, LabPoint, setting_text
from storbench.model.operations import Status, is_object
from storbench.model.target import TargetSpec
from storbench.units import duration_range_s, format_block_size, format_duration

__all__ = [
    "OPTIONAL_WORKLOAD_FIELDS", "Case", "Precondition", "PreconditionRecord", "ScheduledRepetition", "WorkloadPoint",
]


@dataclass(frozen=True)
class WorkloadPoint:
    """One point of the workload sweep: every fio setting of one case."""

    rw: str
    bs_bytes: int
    iodepth: int
    numjobs: int
    runtime_s: float
    ramp_s: float
    direct: bool
    ioengine: str
    rwmixread: int | None = None
    size_bytes: int | None = None
    fio_options: tuple[tuple[str, str], ...] = ()
    # metadata operations (create, stat, delete): files per job and each file's size; object operations: objects
    # per job (their size is bs); None for block I/O (and then left out of the case id, so block cases keep theirs)
    files: int | None = None
    file_size_bytes: int | None = None
    dirs: int | None = None  # metadata operations: the jobs' files spread over this many directories (None: one)
    # fio logs the I/O window by window (ms; a plan with faults: the blackout, dip and recovery are read from them);
    # None: no logs
    timeline_window_ms: int | None = None

    @property
    def start_delay_s(self) -> tuple[float, float]:
        """fio's `startdelay` as the plan passes it through: (least, most) seconds before the jobs start (a range
        `10-30s` draws one in between); (0, 0) without one or one that does not read."""
        given = [value for key, value in self.fio_options if key == "startdelay"]
        try:
            return duration_range_s(given[-1]) if given else (0.0, 0.0)
        except ValueError:
            return 0.0, 0.0


# Fields of WorkloadPoint a case id leaves out while they are None (added after ids were pinned).
OPTIONAL_WORKLOAD_FIELDS = ("files", "file_size_bytes", "dirs", "timeline_window_ms")

@dataclass(frozen=True)
class Case:
    """One point of the sweep. ``case_id`` is a stable hash of its definition."""

    case_id: str
    target: TargetSpec
    workload: WorkloadPoint
    clients: int = 1
    lab: LabPoint = NO_LAB

    def parameters(self) -> dict[str, str]:
        """The values people filter and compare on, as display strings (sizes with their unit)."""
        w = self.workload
        params = {
            "target": self.target.name,
            "rw": w.rw,
            "bs": format_block_size(w.bs_bytes),
            "iodepth": str(w.iodepth),
            "numjobs": str(w.numjobs),
            "runtime": format_duration(w.runtime_s),
            "ramp": format_duration(w.ramp_s),
            "direct": "1" if w.direct else "0",
            "ioengine": w.ioengine,
            "rwmixread": "" if w.rwmixread is None else str(w.rwmixread),
            "clients": str(self.clients),
        }
        if w.files is not None:  # metadata and object operations
            params["objects" if is_object(w.rw) else "files"] = str(w.files)
        if w.file_size_bytes is not None:
            params["file_size"] = format_block_size(w.file_size_bytes)
        if w.dirs is not None:
            params["dirs"] = str(w.dirs)
        params.update(dict(w.fio_options))
        params.update((k, setting_text(k, v)) for k, v in self.lab.pairs())
        return params


@dataclass(frozen=True)
class Precondition:
    """What a target is written with before its first measurement (a plan's `precondition`): its working set
    written sequentially ``passes`` times, or a workload for ``duration_s``."""

    rw: str
    bs_bytes: int
    iodepth: int
    passes: int | None = None
    duration_s: float | None = None

    def text(self) -> str:
        what = f"{self.rw} {format_block_size(self.bs_bytes)} qd{self.iodepth}"
        if self.passes is not None:
            return f"fill {self.passes}x ({what})"
        return f"{what} for {format_duration(self.duration_s or 0.0)}"


@dataclass(frozen=True)
class PreconditionRecord:
    """A precondition as it ran on one target (in one lab configuration), stored with the run."""

    target: str
    lab: tuple[tuple[str, str], ...]
    precondition: Precondition
    status: Status
    started_at_s: float
    finished_at_s: float
    written_bytes: int
    job_text: str
    error: str = ""


@dataclass(frozen=True)
class ScheduledRepetition:
    """One execution of a case in the run order."""

    case: Case
    rep_index: int
