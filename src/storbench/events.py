"""What a run tells while it runs, as data: the run loop, the labs and the sessions emit these, and the CLI words
them (`report.events.event_text`). Pure: declares data only.

One dataclass per kind of event; `RunEvent` is their union. A field holds the model's own values (a `Case`, a
steady state, a search's answer), never a sentence made for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from storbench.model import Case, Precondition
    from storbench.model.objective import LatencyObjective
    from storbench.stats.adaptive import MetricVerdict
    from storbench.stats.search import SearchAnswer
    from storbench.stats.steady import SteadyState


# ---- labs


@dataclass(frozen=True)
class LabBringingUp:
    """A lab cluster about to come up: its settings (name, value), which of the clusters side by side it is
    (``slot`` 0-based of ``slots``) and its pools (name, size)."""

    lab: str
    settings: tuple[tuple[str, str], ...]
    slot: int = 0
    slots: int = 1
    pools: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class LabUp:
    """A lab is up: where it answers (a conf file, a URL, a device), in how long (None: not timed), and what a
    user should know of it (the export, the caps, the number of servers)."""

    lab: str
    where: str = ""
    seconds: float | None = None
    servers: int | None = None
    detail: str = ""


@dataclass(frozen=True)
class LabTornDown:
    """A lab taken down after the run (or its lab configuration): nothing of it left."""

    lab: str


@dataclass(frozen=True)
class CleanUpFailed:
    """A step of a clean-up that raised while the rest went on: ``what`` it was meant to remove (a lab, the run's
    test data), the error in one line. Told when the error is not the one the run ends on (a session failing of
    its own, or a second step's); `storbench lab KIND down` removes what a lab left."""

    what: str
    error: str
    lab: str = ""  # the lab kind, when a lab's tear-down raised


@dataclass(frozen=True)
class LabHealed:
    """After a repetition with faults: the lab made whole again (every daemon running, the cluster healthy) in
    ``seconds``, before the next repetition."""

    lab: str
    seconds: float


@dataclass(frozen=True)
class LabLeftAlone:
    """Something a lab found that is not its own and left alone (e.g. a recorded loop device now on another
    file): ``what`` the lab's own account of it."""

    lab: str
    what: str


@dataclass(frozen=True)
class OsdsRestarted:
    """The lab's OSDs restarted with the next case's live settings (name, value; none: the base options)."""

    lab: str
    settings: tuple[tuple[str, str], ...]
    seconds: float


@dataclass(frozen=True)
class OsdCpusSet:
    """The OSDs' CPU quota (``quota_changed``: to ``cores`` per OSD, None: lifted) and CPU set (``pinned``: to
    ``cpuset``, None: every CPU) changed without a restart."""

    lab: str
    quota_changed: bool
    cores: float | None
    pinned: bool
    cpuset: str | None


@dataclass(frozen=True)
class LinksShaped:
    """The client hosts' links shaped for the next case (traffic control): a rate, and a delay when set."""

    lab: str
    bits_per_s: int
    delay_s: float | None


# ---- targets and preconditions


@dataclass(frozen=True)
class TestDataCleaned:
    """Test data the run laid out, cleaned up after it: ``removed`` of them (``unit``: "objects" or "test
    files") from ``place`` (a bucket, a URL, a directory), and ``left`` that stay there, and why."""

    target: str
    place: str
    unit: str
    removed: int
    left: int = 0
    why: str = ""


@dataclass(frozen=True)
class LaidOut:
    """A case's files laid out before its first repetition with faults (fio's set-up alone, not measured), so its
    faults are timed from the I/O."""

    target: str
    seconds: float
    by_fill: bool = False  # made by the job's fill section run alone (an S3 GET's objects), not fio's set-up


@dataclass(frozen=True)
class LayoutFailed:
    """A case's files could not be laid out before its first repetition with faults: that repetition's faults are
    timed across fio's own layout (its failover figures may have no level before the fault)."""

    target: str
    why: str


@dataclass(frozen=True)
class PreconditionRan:
    """A target's precondition: starting (no ``written_bytes`` yet), then done with what it wrote and how long it
    took."""

    target: str
    precondition: Precondition
    written_bytes: int | None = None
    seconds: float | None = None


# ---- the run and its points


@dataclass(frozen=True)
class PlanVersionAdded:
    """A resumed run whose plan gained points: stored as its next version."""

    run_id: int
    version: int
    new_points: int


@dataclass(frozen=True)
class StoppingRuleChanged:
    """A resumed run whose stopping rule changed, accepted (`--accept-changed-design`)."""

    run_id: int
    what: str  # the keys that changed, as the plan names them


@dataclass(frozen=True)
class PointRestarted:
    """A steady-state point interrupted before it settled, or a search's load before its repetitions were all
    measured, starts over on a new lab or precondition."""

    case: Case
    steady_found: bool  # steady, its rounds after the window not all measured (else: not steady yet)
    dropped: int
    searched: bool = False  # a search's load (``steady_found`` then unused)


@dataclass(frozen=True)
class SteadyProgress:
    """How a steady-state point stands after a round: ``phase`` "measuring" (not steady yet, or out of rounds),
    "found" (steady by SNIA's rule at this round) or "settled" (its rounds after the window measured)."""

    case: Case
    state: SteadyState
    ran: int
    phase: str


@dataclass(frozen=True)
class BudgetReached:
    """`--budget` spent: no new round after ``rounds``."""

    rounds: int


@dataclass(frozen=True)
class CiLook:
    """`repeat: {until: "ci <= N%"}` looked after ``rounds`` rounds."""

    rounds: int
    confidence: float
    ci_pct: float
    done: bool


@dataclass(frozen=True)
class SequentialLook:
    """`repeat: {until: decided}` looked after ``rounds`` rounds at one comparison and metric."""

    rounds: int
    verdict: MetricVerdict
    max_rounds: int


@dataclass(frozen=True)
class SearchStopped:
    """A search asked for a load that measured nothing or is not in the plan's cases."""

    case: Case
    axis: str
    value: int
    measured_nothing: bool


@dataclass(frozen=True)
class SearchAnswered:
    """A search's answer for one curve: its best load within the objective, the knee, the loads it measured."""

    case: Case
    axis: str
    answer: SearchAnswer
    objective: LatencyObjective
    measured: tuple[int, ...]


RunEvent = (LabBringingUp | LabUp | LabTornDown | CleanUpFailed | LabHealed | LabLeftAlone | OsdsRestarted | OsdCpusSet
            | LinksShaped | TestDataCleaned | LaidOut | LayoutFailed | PreconditionRan | PlanVersionAdded
            | StoppingRuleChanged | PointRestarted | SteadyProgress | BudgetReached | CiLook | SequentialLook
            | SearchStopped | SearchAnswered)
