"""Lab kinds (shell interface): what every one-machine test bed offers, so that the CLI and the run's lab sessions
ask one registry (`lab.registry.KINDS`) and never branch on a kind themselves, as the run loop does with target
kinds (`targets.registry`).

A kind brings its lab up from its typed spec and tears it down: for the whole run (``for_run``: the client hosts,
Kubernetes) or for each lab configuration of it (``wanted`` and ``bring_up``: the volume, NFS, Ceph); it says its
status (``command``: `storbench lab KIND up|down|status`); it offers the targets what they need (``SessionLabs``:
`LabEnvironment`, the admin sockets telemetry reads), the telemetry sources it adds between repetitions
(``link_rates``), the live settings it applies before each case's turn (``enter``), its health in one line for
the evidence of a repetition that failed (``health``), and the faults it can inject (``faults``: the
`faults.FaultOffer`s that ``fault`` does; none yet, the hook the failover issue fills). Its state directory,
state file and daemon records are one `lab.labdir.LabDir`; whether its daemons answer is the one port check,
`lab.labdir.port_open`.

Adding a kind touches its own module and the registry."""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar

from storbench.events import LabUp, RunEvent
from storbench.faults import FaultOffer, FaultStep

if TYPE_CHECKING:
    from storbench.checks import Checked
    from storbench.config import LoadedPlan
    from storbench.fio.options import FioCapabilities
    from storbench.model import Case, LabPoint
    from storbench.targets.registry import LabEnvironment


class LabObserver(Protocol):
    def event(self, event: RunEvent) -> None: ...


Say = Callable[[str], None]  # one line for the person at the terminal (only the CLI prints it)


class CommandLab(Protocol):
    """What `storbench lab KIND status` asks of every lab."""

    root: Path

    def status(self) -> str: ...


L = TypeVar("L", bound=CommandLab)
T = TypeVar("T")


def status_line(kind: str, root: Path, info: T | None, answering: Callable[[], bool], describe: Callable[[T], str]
                ) -> str:
    """`storbench lab KIND status` of a lab whose daemons answer or not: down when ``root`` holds no lab (no
    ``info``), not answering (`down` clears what is left), or up as ``describe(info)`` says."""
    if info is None:
        return f"{kind} lab: down ({root} holds no lab)"
    if not answering():
        return f"{kind} lab: not answering; run `storbench lab {kind} down`"
    return f"{kind} lab: up; {describe(info)}"


@dataclass(frozen=True)
class CliOption:
    """One option of `storbench lab KIND`: its flags and argparse's keywords for it."""

    flags: tuple[str, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SoftwareProbe:
    """How a lab kind's software tells its version, for the run's record (what may change between nightly runs):
    the program and its arguments, and the pattern whose first group is the version in what it prints."""

    name: str
    argv: tuple[str, ...]
    pattern: str

    def version(self, printed: str) -> str | None:
        found = re.search(self.pattern, printed)
        return found.group(1) if found else None


@dataclass(frozen=True)
class LabCommand(Generic[L]):
    """`storbench lab KIND up|down|status`: the kind's help line, its options besides the action and ``--dir``, how
    the lab is opened at a directory (None: the default one), and what `up` and `down` do. They say what happened
    through ``say``; `status` is the lab's own line."""

    help: str
    open: Callable[[Path | None], L]
    up: Callable[[L, argparse.Namespace, Say], None]
    down: Callable[[L, Say], None]
    options: Callable[[], tuple[CliOption, ...]] = lambda: ()


@dataclass(frozen=True)
class RunLab(Generic[T]):
    """A lab up for a whole run: ``up`` brings it up and returns what the run gets from it and the event that says
    so; ``down`` tears it down."""

    up: Callable[[], tuple[T, LabUp]]
    down: Callable[[], None]


def timed_run_lab(up: Callable[[], T], down: Callable[[], None], said: Callable[[T, float], LabUp]) -> RunLab[T]:
    """A lab up for a whole run whose event says how long it took, from now until ``up`` returned: ``said(what up
    returned, seconds)``."""
    started = time.time()

    def timed_up() -> tuple[T, LabUp]:
        info = up()
        return info, said(info, time.time() - started)

    return RunLab(timed_up, down)


@dataclass(frozen=True)
class LabGroup:
    """What one lab session asks of the labs: a lab configuration (``lab``) and the cases that run on it, the
    plan, what was checked before any I/O, and the fio servers the cases run on (empty: this machine)."""

    loaded: LoadedPlan
    lab: LabPoint
    cases: Sequence[Case]
    checked: Checked
    servers: tuple[str, ...]
    observer: LabObserver


# prepare(targets by name with their cases, on this environment, names suffixed with this, one per case)
Prepare = Callable[["Mapping[str, Sequence[Case]]", "LabEnvironment", str, bool], None]


@dataclass
class SessionLabs:
    """What the labs of one session have brought up so far, filled in as each kind comes up: the tear-downs (run
    in reverse), what they offer the targets prepared after them (``environment``), the targets a kind prepared
    itself (``claimed``), the running labs a case's live settings are applied to (by cluster: ``cluster_of``) and
    the admin sockets telemetry reads on each."""

    environment: LabEnvironment
    prepare: Prepare
    downs: list[Callable[[], None]] = field(default_factory=list)
    claimed: set[str] = field(default_factory=set)
    running: dict[LabPoint, object] = field(default_factory=dict)
    sockets_by_cluster: dict[LabPoint, tuple[str, ...]] = field(default_factory=dict)


class LabLost(NamedTuple):
    """What of a lab stopped with no fault asking (`LabKind.lost`), in one line, and what to do about it."""

    said: str
    hint: str


class LabKind(Protocol):
    """One kind of lab. `LabKindBase` gives every hook a default that does nothing."""

    name: str
    command: LabCommand[Any]
    faults: tuple[FaultOffer, ...]
    software: tuple[SoftwareProbe, ...]

    def for_run(self, loaded: LoadedPlan, caps: FioCapabilities) -> RunLab[Any] | None: ...

    def wanted(self, group: LabGroup) -> bool: ...

    def bring_up(self, group: LabGroup, labs: SessionLabs) -> None: ...

    def enter(self, case: Case, running: Mapping[LabPoint, object]) -> RunEvent | None: ...

    def link_rates(self, case: Case) -> dict[str, int]: ...

    def health(self, case: Case, running: Mapping[LabPoint, object]) -> str | None: ...

    def lost(self, case: Case, running: Mapping[LabPoint, object], faulted: frozenset[str] = frozenset()
             ) -> LabLost | None: ...

    def fault(self, step: FaultStep, case: Case, running: Mapping[LabPoint, object], *, restore: bool) -> str: ...

    def timed_faults(self, case: Case, steps: Sequence[FaultStep]) -> tuple[FaultStep, ...]: ...

    def settle(self, case: Case, running: Mapping[LabPoint, object]) -> RunEvent | None: ...

    def watch(self, case: Case, running: Mapping[LabPoint, object]) -> StateWatch | None: ...

    def fault_targets(self, loaded: LoadedPlan) -> dict[str, range]: ...


class StateWatch(Protocol):
    """What a lab kind watches of its own state through a repetition with faults and its settling (a Ceph
    cluster's placement groups): a context manager, then ``log()``: (name, text) kept with the repetition."""

    def __enter__(self) -> StateWatch: ...

    def __exit__(self, *exc: object) -> None: ...

    def log(self) -> tuple[str, str]: ...


class LabKindBase:
    """Defaults for a lab kind: up for no run, wanted by no lab configuration, no live settings, no telemetry, no
    health to tell, no faults."""

    faults: tuple[FaultOffer, ...] = ()  # what `fault` can do (issue 32 adds them)
    software: tuple[SoftwareProbe, ...] = ()  # the versions a run records when its plan has this lab

    def for_run(self, loaded: LoadedPlan, caps: FioCapabilities) -> RunLab[Any] | None:
        return None

    def wanted(self, group: LabGroup) -> bool:
        return False

    def bring_up(self, group: LabGroup, labs: SessionLabs) -> None:
        raise AssertionError(f"{type(self).__name__} is not brought up for a lab configuration")

    def enter(self, case: Case, running: Mapping[LabPoint, object]) -> RunEvent | None:
        return None

    def link_rates(self, case: Case) -> dict[str, int]:
        return {}

    def health(self, case: Case, running: Mapping[LabPoint, object]) -> str | None:
        return None

    def fault(self, step: FaultStep, case: Case, running: Mapping[LabPoint, object], *, restore: bool) -> str:
        """Do (or with ``restore`` undo) one of the kind's ``faults`` on the running lab ``case`` is on, and say
        what was done. No kind offers one yet."""
        raise AssertionError(f"the {type(self).__name__} offers no faults")

    def lost(self, case: Case, running: Mapping[LabPoint, object], faulted: frozenset[str] = frozenset()
             ) -> LabLost | None:
        """What of the lab ``case`` runs on stopped with no fault asking (a daemon that exited: a full device, a
        crash), in one line, and what to do about it; None when it is whole. Checked after every repetition, before
        the settling of its faults (which would start such a daemon again unsaid); ``faulted``: the targets of the
        faults done in it (``osd.1``, ``host.2``, ``server``), stopped on purpose."""
        return None

    def timed_faults(self, case: Case, steps: Sequence[FaultStep]) -> tuple[FaultStep, ...]:
        """Faults the kind adds to a plan's ``steps`` for ``case``, from its lab settings (none by default)."""
        return ()

    def settle(self, case: Case, running: Mapping[LabPoint, object]) -> RunEvent | None:
        """After a repetition with faults: make the lab ``case`` ran on whole again before the next one (every
        daemon running, the cluster healthy), and say so; None when there is nothing to heal."""
        return None

    def watch(self, case: Case, running: Mapping[LabPoint, object]) -> StateWatch | None:
        """What of the lab ``case`` runs on to watch through a repetition with faults; None: nothing."""
        return None

    def fault_targets(self, loaded: LoadedPlan) -> dict[str, range]:
        """The numbers this plan's lab has of each numbered fault target ("client" -> 1..count): a fault on
        another is refused by `plan`; a kind not here is not checked."""
        return {}


def lab_dir_help(name: str) -> str:
    """The help of every lab's ``--dir``."""
    return f"lab directory, kept 0700 (default $STORBENCH_LAB_DIR/{name} or /var/lib/storbench/lab/{name})"
