"""Kubernetes' events about storbench's pods through a repetition with faults (shell): listed once the repetition
and its settling are over, kept as the repetition's ``k8s_events.csv`` log (`telemetry.k8s_events`)."""

from __future__ import annotations

import contextlib
import time

from storbench.execute.k8s_access import core_api
from storbench.telemetry.k8s_events import LOG_NAME, MAX_EVENTS, PodEvent, render_log

POD_PREFIX = "sb-"  # storbench's pods (`execute.k8s_manifests.pod_plans`)


def _epoch_ms(event: object) -> int | None:
    """An event's time: the scheduler's microseconds, else the kubelet's whole seconds."""
    for name in ("event_time", "last_timestamp", "first_timestamp"):
        value = getattr(event, name, None)
        if value is not None and hasattr(value, "timestamp"):
            return round(float(value.timestamp()) * 1000)
    return None


class EventWatch:
    """``with EventWatch(kubeconfig, namespace):`` around a repetition; ``log()`` afterwards. A cluster it cannot
    read gives an empty log, never a failed repetition."""

    def __init__(self, kubeconfig: str, namespace: str) -> None:
        self.kubeconfig, self.namespace = kubeconfig, namespace
        self.events: list[PodEvent] = []
        self._since_ms = 0

    def __enter__(self) -> EventWatch:
        self._since_ms = round(time.time() * 1000) - 1000  # a kubelet's time is whole seconds
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            listed = core_api(self.kubeconfig).list_namespaced_event(  # type: ignore[attr-defined]
                self.namespace, limit=MAX_EVENTS * 4).items
            for event in listed:
                involved = event.involved_object
                t_ms = _epoch_ms(event)
                if (involved is None or involved.kind != "Pod" or not (involved.name or "").startswith(POD_PREFIX)
                        or t_ms is None or t_ms < self._since_ms):
                    continue
                self.events.append(PodEvent(t_ms, involved.name, event.reason or "", event.message or ""))

    def log(self) -> tuple[str, str]:
        return LOG_NAME, render_log(self.events)
