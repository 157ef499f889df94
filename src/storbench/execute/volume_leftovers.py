"""What a repetition of volume operations leaves in the namespace (shell): its pods, VolumeSnapshots and claims,
found by the run's label and the repetition's name prefix (`OperationNames.prefix`).

Before a repetition they are what a session killed in that repetition left (`run --resume` after kill -9): its
objects carry the same names, and every create had met 409. After one they are what it made, deleted and waited
for, so the next case's operations do not overlap the deletions (a claim's object gone; the driver's deletion of
its volume, which only a cluster-wide read of PersistentVolumes would show, is not waited for).
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from storbench.execute.k8s_manifests import RUN_LABEL
from storbench.execute.k8s_operations import SNAPSHOT_GROUP, SNAPSHOT_PLURAL, SNAPSHOT_VERSION

ORDER = ("pod", "snapshot", "claim")  # deleted in this order: a claim is held while a pod uses it
POLL_S = 0.25
ASK_AGAIN_S = 5.0


class Leftovers:
    """One repetition's objects in ``namespace``: those labelled with ``run_label`` whose names begin ``prefix``."""

    def __init__(self, core: Any, custom: Any, namespace: str, run_label: str, prefix: str,
                 request_timeout_s: float) -> None:
        self.core, self.custom, self.namespace, self.prefix = core, custom, namespace, prefix
        self.selector = f"{RUN_LABEL}={run_label}"
        self.request_timeout_s = request_timeout_s

    def found(self) -> list[tuple[str, str]]:
        """(kind, name) of the repetition's objects that exist now, in deletion order; a kind that cannot be
        listed (no snapshot API on the cluster) has none."""
        out: list[tuple[str, str]] = []
        for kind in ORDER:
            with contextlib.suppress(Exception):
                out += [(kind, name) for name in self._names(kind) if name.startswith(self.prefix)]
        return out

    def _names(self, kind: str) -> list[str]:
        timeout = {"label_selector": self.selector, "_request_timeout": self.request_timeout_s}
        if kind == "snapshot":
            listed = self.custom.list_namespaced_custom_object(SNAPSHOT_GROUP, SNAPSHOT_VERSION, self.namespace,
                                                               SNAPSHOT_PLURAL, **timeout)
            return [str(item["metadata"]["name"]) for item in listed.get("items", [])]
        lister = (self.core.list_namespaced_pod if kind == "pod"
                  else self.core.list_namespaced_persistent_volume_claim)
        return [str(item.metadata.name) for item in lister(self.namespace, **timeout).items]

    def delete(self, kind: str, name: str) -> None:
        with contextlib.suppress(Exception):  # gone already, or refused: `gone` says what stays
            if kind == "pod":
                self.core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=0,
                                                _request_timeout=self.request_timeout_s)
            elif kind == "claim":
                self.core.delete_namespaced_persistent_volume_claim(name, self.namespace,
                                                                    _request_timeout=self.request_timeout_s)
            else:
                self.custom.delete_namespaced_custom_object(SNAPSHOT_GROUP, SNAPSHOT_VERSION, self.namespace,
                                                            SNAPSHOT_PLURAL, name,
                                                            _request_timeout=self.request_timeout_s)

    def delete_all(self, made: list[tuple[str, str]]) -> None:
        """``made`` (kind, name), newest first, in deletion order (pods, then snapshots, then claims)."""
        for kind, name in sorted(dict.fromkeys(reversed(made)), key=lambda item: ORDER.index(item[0])):
            self.delete(kind, name)

    def removed(self, within_s: float) -> list[tuple[str, str]]:
        """Delete the repetition's objects and wait until none is left, within ``within_s``; what is left then.
        Each is asked again every ASK_AGAIN_S (a deletion refused by a busy server, or lost); a claim a pod holds
        goes once the pod has."""
        deadline = time.time() + within_s
        left = self.found()
        asked: dict[tuple[str, str], float] = {}
        while left and time.time() < deadline:
            for item in left:
                if time.time() - asked.get(item, -ASK_AGAIN_S) >= ASK_AGAIN_S:
                    self.delete(*item)
                    asked[item] = time.time()
            time.sleep(POLL_S)
            left = self.found()
        return left
