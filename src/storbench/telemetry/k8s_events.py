"""Kubernetes' own events about storbench's pods through a fault (pure; issue 32's "from the storage itself"): what
the cluster said happened to them (Killing, Scheduled, Pulled, Created, Started, FailedMount, ...), kept as a
small CSV log with the repetition (beside fio's timeline logs), read back, and read against the fault.

The scheduler's events carry microseconds; the kubelet's only whole seconds (``lastTimestamp``): an event's time
can be up to a second early."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass

from storbench.safe_text import safe_text

LOG_NAME = "k8s_events.csv"  # its name among the repetition's logs
_HEADER = ["t_ms", "pod", "reason", "message"]
MAX_EVENTS = 500  # a repetition's events kept at the most
MAX_MESSAGE = 200  # characters of an event's message kept


@dataclass(frozen=True)
class PodEvent:
    t_ms: int  # epoch ms
    pod: str
    reason: str
    message: str = ""


def render_log(events: Sequence[PodEvent]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_HEADER)
    for event in sorted(events, key=lambda e: e.t_ms)[:MAX_EVENTS]:
        writer.writerow([event.t_ms, event.pod, event.reason, event.message[:MAX_MESSAGE]])
    return out.getvalue()


def parse_log(text: str) -> list[PodEvent]:
    """The events of a log ``render_log`` wrote (rows that do not read are skipped); text made safe to show."""
    events = []
    for row in list(csv.reader(io.StringIO(text)))[1:]:
        if len(row) == 4 and row[0].isdigit():
            events.append(PodEvent(int(row[0]), safe_text(row[1]), safe_text(row[2]), safe_text(row[3])))
    return events


def after_fault(events: Sequence[PodEvent], fault_ms: int, slack_ms: int = 1000) -> list[tuple[float, PodEvent]]:
    """(seconds after the fault, event) of the events from the fault on, in time order: each pod's first of each
    reason (a kubelet's time is whole seconds, so ``slack_ms`` before the fault counts too)."""
    seen: set[tuple[str, str]] = set()
    found = []
    for event in sorted(events, key=lambda e: e.t_ms):
        if event.t_ms < fault_ms - slack_ms or (event.pod, event.reason) in seen:
            continue
        seen.add((event.pod, event.reason))
        found.append((max(0.0, (event.t_ms - fault_ms) / 1000), event))
    return found
