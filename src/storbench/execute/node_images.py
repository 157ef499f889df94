"""The fio image started once on every node an attach may be timed on, before it is (shell). An attach is timed
from its pod's request to its first I/O: on a node that had never run the image, that time included the image's
pull (seconds to minutes from a remote registry), in the first repetition only, and the point's mean with it.

Once per run, image and node: a pod that runs `true` with the image, placed on the node by name (no scheduler),
waited for and deleted; a node is tried once a run, whether its pod ran or not (an image that cannot be pulled
there, a pod refused), so no repetition waits for it again. Nodes that cannot be listed (an identity without
`nodes` list) are not warmed, as placement then has no nodes either; nor are nodes the node controller marked
unreachable or not ready.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from typing import Any

from storbench.execute.k8s_manifests import NodeView, usable_nodes
from storbench.execute.k8s_operations import warm_pod
from storbench.model import PvcTarget

POLL_S = 0.5
NOT_THERE = ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")  # no pod of ours would start there
CANNOT_PULL = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")


class NodeImages:
    """Which (node, image) pairs have run a pod in this run."""

    def __init__(self, core: Any, namespace: str, run_label: str, request_timeout_s: float) -> None:
        self.core, self.namespace, self.run_label = core, namespace, run_label
        self.request_timeout_s = request_timeout_s
        self.warmed: set[tuple[str, str]] = set()  # tried: ran, or could not

    def warm(self, target: PvcTarget, within_s: float) -> list[str]:
        """Start the target's image on every node its pods may run on where it has not run yet; the nodes where it
        did not within ``within_s`` (their attach will say why, if it fails)."""
        from kubernetes.client.exceptions import ApiException  # lazy: 0.24 s, for pvc targets only

        try:
            listed = self.core.list_node(_request_timeout=self.request_timeout_s).items
        except Exception:  # refused, or no answer in time: nothing warmed, as placement would have no nodes either
            return []
        views = [NodeView(node.metadata.name, node.metadata.labels or {}, bool(node.spec.unschedulable),
                          tuple((taint.key, taint.effect) for taint in node.spec.taints or ())) for node in listed]
        nodes = usable_nodes([view for view in views if not any(key in NOT_THERE for key, _ in view.taints)],
                             dict(target.node_selector))
        image = target.container_image
        todo = [node for node in nodes if (node, image) not in self.warmed]
        self.warmed |= {(node, image) for node in todo}  # tried once a run, whatever comes of it
        pods: dict[str, str] = {}
        try:
            for node in todo:
                name = f"sb-{self.run_label}-warm-{secrets.token_hex(4)}"
                try:
                    self.core.create_namespaced_pod(self.namespace, warm_pod(name, node, target, self.run_label),
                                                    _request_timeout=self.request_timeout_s)
                except ApiException:  # refused: that node's attach pulls the image, as before
                    continue
                pods[node] = name
            ended = self._ended(pods, time.time() + within_s)
        finally:
            for name in pods.values():
                with contextlib.suppress(Exception):
                    self.core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=0,
                                                    _request_timeout=self.request_timeout_s)
        return [node for node in todo if node not in ended]

    def _ended(self, pods: dict[str, str], deadline_s: float) -> set[str]:
        """The nodes whose pod has run (Succeeded), polled until every pod has ended, cannot pull its image, or
        the deadline."""
        done: set[str] = set()
        waiting = dict(pods)
        while waiting and time.time() < deadline_s:
            for node, name in list(waiting.items()):
                with contextlib.suppress(Exception):  # a read that failed: asked again
                    status = self.core.read_namespaced_pod(name, self.namespace,
                                                           _request_timeout=self.request_timeout_s).status
                    waits = [getattr(getattr(c.state, "waiting", None), "reason", None)
                             for c in getattr(status, "container_statuses", None) or ()]
                    if status.phase in ("Succeeded", "Failed") or any(w in CANNOT_PULL for w in waits):
                        del waiting[node]
                        if status.phase == "Succeeded":
                            done.add(node)
            if waiting:
                time.sleep(POLL_S)
        return done
