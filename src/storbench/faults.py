"""Faults during a repetition (pure; issue 32): the typed steps of a plan's `faults:` list, what a lab kind offers,
and the checks and timeline `storbench plan` shows.

A step happens ``at_s`` seconds into a repetition's measured section (after its ramp) and, with
``restore_after_s``, is undone that long after. Each lab kind offers its own actions (`FaultOffer`, through the
lab interface): the run loop asks the lab to do them and never branches on a kind. A plan may only name what a lab
of its own offers: faults on a user's own systems come from the command line of the person running storbench,
never from a plan (plans are untrusted, and storbench runs as root).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from storbench.errors import closest
from storbench.units import link_rate_bits


@dataclass(frozen=True)
class FaultStep:
    at_s: float  # into the measured section
    action: str  # e.g. "kill", "stop", "freeze", "restart"
    target: str  # what it acts on, in the lab's words: "osd.1", "server", "volume", "host h2"
    restore_after_s: float | None = None
    to: str | None = None  # the level an action that takes one sets, as the plan wrote it ("10Mbit", "500")

    def __str__(self) -> str:
        return f"{self.action} {self.target}" + (f" to {self.to}" if self.to is not None else "")

    @property
    def restore_at_s(self) -> float | None:
        return None if self.restore_after_s is None else self.at_s + self.restore_after_s


@dataclass(frozen=True)
class FaultOffer:
    """One action a lab kind can do: on targets matching ``targets`` (a full-match regular expression, e.g.
    ``osd\\.[0-9]+``), undone by ``restore`` ("" when it cannot be undone within a run)."""

    lab: str
    action: str
    targets: str
    restore: str
    what: str  # one line for `plan` and the docs, e.g. "SIGKILL an OSD, as a crashed host"
    takes: str = ""  # the kind of level its `to:` gives (LEVELS: "link rate", "IOPS"); "" takes none
    holds_io: bool = False  # fio's I/O waits until it is undone: without restore_after fio could not end
    acts_at_restore: bool = False  # what it does happens at its restore: without restore_after it does nothing


def _iops(value: object) -> int:
    text = str(value).strip()
    if not text.isdigit() or not 1 <= int(text) <= 10_000_000:
        raise ValueError(f"{value!r} is not an IOPS figure like 500")
    return int(text)


LEVELS: dict[str, tuple[Callable[[object], int], str]] = {  # a level's kind: how it is read, and an example
    "link rate": (link_rate_bits, "10Mbit"), "IOPS": (_iops, "500")}


def level_of(step: FaultStep, offer: FaultOffer) -> int:
    """The level ``step`` sets, read as ``offer`` takes it (ValueError if it does not read)."""
    read, _ = LEVELS[offer.takes]
    return read(step.to)


# what a fault's action did, in the past tense ("osd.1 was frozen"): the labs' own lines and the verdict say it
PAST_TENSE = {"kill": "killed", "freeze": "frozen", "stop": "stopped", "out": "marked out", "cut": "cut off",
              "crash": "crashed", "lose-writes": "made to lose writes", "delete": "deleted", "slow": "slowed",
              "throttle": "throttled",
              "fail": "powered off", "taint": "tainted out-of-service"}


def find_offer(step: FaultStep, offers: Sequence[FaultOffer]) -> FaultOffer | None:
    return next((o for o in offers if o.action == step.action and re.fullmatch(o.targets, step.target)), None)


LAST_SECOND_S = 1.0  # a fault this close to the end of the measured section cannot be read from fio's logs


def targets_text(pattern: str) -> str:
    """A fault offer's targets as a plan names them: ``osd\\.[0-9]{1,4}`` is ``osd.N``."""
    return re.sub(r"\[0-9\](?:\{[0-9,]+\}|\+)", "N", pattern).replace("\\.", ".")


def fault_problems(steps: Sequence[FaultStep], measured_s: float, offers: Sequence[FaultOffer]) -> list[str]:
    """One line per problem, with the fix: a fault no lab of the plan offers, a time outside the measured
    section, a restore that cannot be done or falls outside it, two faults on one target at once."""
    problems = []
    for number, step in enumerate(steps):  # numbered as the plan's key paths are: faults[0] is the first
        where = f"faults[{number}] ({step.action} {step.target} at {step.at_s:g}s)"
        offer = find_offer(step, offers)
        if offer is None:
            known = ", ".join(sorted({f"{o.action} {targets_text(o.targets)} ({o.lab})" for o in offers})) or "none"
            meant = closest(step.action, {o.action for o in offers})
            problems.append(f"{where}: no lab of this plan can do it" + (f" (did you mean '{meant}'?)" if meant
                                                                          and meant != step.action else "")
                            + f"; the plan's labs offer: {known}")
            continue
        if offer.takes and step.to is None:
            problems.append(f"{where}: '{step.action}' needs the level it sets; give to: (a {offer.takes}, e.g. "
                            f"{LEVELS[offer.takes][1]})")
        elif not offer.takes and step.to is not None:
            problems.append(f"{where}: '{step.action}' sets no level; drop to: {step.to}")
        elif offer.takes:
            try:
                level_of(step, offer)
            except ValueError as error:
                problems.append(f"{where}: {error}; give a {offer.takes}, e.g. to: {LEVELS[offer.takes][1]}")
        if not 0 < step.at_s < measured_s:
            problems.append(f"{where}: outside the measured section (0 to {measured_s:g}s after the ramp); "
                            "give a time inside it, leaving time before it for the level to compare with")
        elif step.at_s > measured_s - LAST_SECOND_S:  # fio's logs end up to a second early anyway
            problems.append(f"{where}: in the last second of the measured section ({measured_s:g}s), too late to "
                            "read what it did; give an earlier time, leaving time after it for the recovery")
        if offer.acts_at_restore and step.restore_after_s is None:
            problems.append(f"{where}: '{step.action}' acts at its restore (it would {offer.restore} the volume "
                            "then), so without restore_after it does nothing, and a write check would find no loss "
                            "of a fault that never happened; give restore_after")
        if offer.holds_io and step.restore_after_s is None:
            problems.append(f"{where}: '{step.action}' holds every I/O until it is undone, so fio could not end its "
                            f"repetition (its watchdog would kill it); give restore_after, a time to {offer.restore}")
        if step.restore_after_s is not None:
            if not offer.restore:
                problems.append(f"{where}: {offer.lab} cannot undo '{step.action}' within a run; drop "
                                "restore_after")
            elif step.restore_after_s <= 0:
                problems.append(f"{where}: restore_after must be after the fault (a positive duration)")
            elif (step.restore_at_s or 0) >= measured_s:
                problems.append(f"{where}: restored at {step.restore_at_s:g}s, after the measured section ends "
                                f"({measured_s:g}s); shorten restore_after or lengthen runtime")
            elif (step.restore_at_s or 0) > measured_s - LAST_SECOND_S:  # as a fault's: its stall could not be seen
                problems.append(f"{where}: restored at {step.restore_at_s:g}s, in the last second of the measured "
                                f"section ({measured_s:g}s), too late to read what the undoing did (it would read "
                                "as no stall); shorten restore_after or lengthen runtime")
    spans = sorted((s.target, s.at_s, s.restore_at_s or measured_s) for s in steps)
    for (target, start, end), (other, later, _) in itertools.pairwise(spans):
        if target == other and later < end:
            problems.append(f"faults on {target} overlap ({start:g}s to {end:g}s, then {later:g}s): one at a time "
                            "per target")
    return problems


@dataclass(frozen=True)
class TimelineEvent:
    at_s: float  # from the start of the repetition (ramp included)
    text: str


def fault_timeline(steps: Sequence[FaultStep], ramp_s: float, runtime_s: float,
                   offers: Sequence[FaultOffer], end: str = "measuring ends") -> tuple[TimelineEvent, ...]:
    """What happens when in one repetition, for `plan`: measuring starts, each fault and its undoing, the end."""
    events = [TimelineEvent(ramp_s, "measuring starts"), TimelineEvent(ramp_s + runtime_s, end)]
    for step in steps:
        offer = find_offer(step, offers)
        what = f" ({offer.what})" if offer else ""
        events.append(TimelineEvent(ramp_s + step.at_s, f"{step}{what}"))
        if step.restore_at_s is not None and offer and offer.restore:
            events.append(TimelineEvent(ramp_s + step.restore_at_s, f"{offer.restore} {step.target}"))
    return tuple(sorted(events, key=lambda e: e.at_s))
