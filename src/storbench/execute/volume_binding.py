"""A claim whose StorageClass binds on its first consumer (shell; `volumeBindingMode: WaitForFirstConsumer`, the
default class of most managed clusters): no volume is provisioned until a pod that uses the claim is scheduled, so
a volume operation that waited for such a claim to be Bound before making its pod waited until its deadline.

`VolumeBinding` reads a claim's class (once per class and repetition) to know, and waits for what an operation
needs once a pod has bound the claim: that pod gone, and the volume detached from its node (no VolumeAttachment
names it), so an attach timed afterwards is a whole attach, as on a class that binds at once. Reading the class
needs `storageclasses get`, and the detach `volumeattachments list` (cluster-wide, `storbench k8s rbac`); a
class that cannot be read is taken to bind at once (as before), and the claim's timeout then says why it may not
have bound.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from storbench.errors import UserError

LATE = "WaitForFirstConsumer"
POLL_S = 0.25  # a deletion is polled: a watch by name would need its version first
DETACH_POLL_S = 1.0  # every volume attachment of the cluster is listed: not too often
FORBIDDEN = (401, 403)
PASSING = (429, 500, 502, 503, 504)  # an API server busy or between leaders: asked again until the deadline
DEFAULT_CLASS = ("storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class")
MISSING = 404
UNREAD_HINT = ("its StorageClass could not be read: if it binds on first consumer (WaitForFirstConsumer), grant "
               "storageclasses get and list, and volumeattachments list (storbench k8s rbac prints them)")


class VolumeBinding:
    """The binding mode of claims' classes and the waits a late-bound claim needs, for one repetition."""

    def __init__(self, core: Any, storage: Any, namespace: str, request_timeout_s: float) -> None:
        self.core, self.storage, self.namespace = core, storage, namespace  # storage: a StorageV1Api
        self.request_timeout_s = request_timeout_s
        self.modes: dict[str | None, str] = {}  # class name (None: the cluster's default) -> its volumeBindingMode
        self.unread: set[str | None] = set()  # classes that could not be read (forbidden): taken to bind at once
        self.lock = threading.Lock()

    def binds_late(self, class_name: str | None) -> bool:
        """Whether a claim of the class named (None: the cluster's default class, the one annotated so, the newest
        of several, as the API server picks it) binds only once a pod that uses it is scheduled. Read once per
        class, before any timed request: an operation asks it before its clock starts."""
        from kubernetes.client.exceptions import ApiException  # lazy: 0.24 s, for pvc targets only

        with self.lock:
            known = self.modes.get(class_name)
        if known is None:
            try:
                known = self._mode(class_name)
            except ApiException as error:
                if error.status not in FORBIDDEN:
                    raise
                known = "Immediate"  # as before this was known; a claim that never binds says what to grant
                with self.lock:
                    self.unread.add(class_name)
            with self.lock:
                self.modes[class_name] = known
        return known == LATE

    def unread_class(self, class_name: str | None) -> bool:
        with self.lock:
            return class_name in self.unread

    def _mode(self, class_name: str | None) -> str:
        if class_name is not None:
            found = self.storage.read_storage_class(class_name, _request_timeout=self.request_timeout_s)
            return str(found.volume_binding_mode or "Immediate")
        defaults = [item for item in self.storage.list_storage_class(_request_timeout=self.request_timeout_s).items
                    if any((item.metadata.annotations or {}).get(key) == "true" for key in DEFAULT_CLASS)]
        if not defaults:
            return "Immediate"  # no default class: a claim without one binds to a matching volume, a pod or not
        newest = max(defaults, key=lambda item: (str(item.metadata.creation_timestamp or ""), item.metadata.name))
        return str(newest.volume_binding_mode or "Immediate")

    def wait_gone(self, name: str, deadline_s: float) -> bool:
        """Wait until the pod ``name`` (asked to be deleted) is gone; False at the deadline."""
        from kubernetes.client.exceptions import ApiException  # lazy: 0.24 s, for pvc targets only

        while time.time() < deadline_s:
            try:
                self.core.read_namespaced_pod(name, self.namespace, _request_timeout=self.request_timeout_s)
            except ApiException as error:
                if error.status == MISSING:
                    return True
                raise
            time.sleep(POLL_S)
        return False

    def wait_detached(self, claim: str, deadline_s: float) -> bool:
        """Wait until no node holds the claim's volume (no VolumeAttachment names its PersistentVolume); False at
        the deadline. A driver that attaches nothing has none to wait for."""
        from kubernetes.client.exceptions import ApiException  # lazy: 0.24 s, for pvc targets only

        made = self.core.read_namespaced_persistent_volume_claim(claim, self.namespace,
                                                                 _request_timeout=self.request_timeout_s)
        volume = getattr(getattr(made, "spec", None), "volume_name", None)
        while time.time() < deadline_s:
            try:
                listed = self.storage.list_volume_attachment(_request_timeout=self.request_timeout_s)
            except ApiException as error:
                if error.status in FORBIDDEN:  # the hint in the message: a client's error is its message alone
                    raise UserError(f"claim {claim}'s volume may still be attached to the node of the pod that bound "
                                    "it, and volume attachments cannot be listed: an attach timed now could be a "
                                    "mount alone; grant volumeattachments list (storbench k8s rbac)") from None
                if error.status not in PASSING:
                    raise
            else:
                if not any(holds(item, volume) for item in listed.items or ()):
                    return True
            time.sleep(DETACH_POLL_S)
        return False


def holds(attachment: Any, volume: str | None) -> bool:
    """Whether a VolumeAttachment names the PersistentVolume ``volume``."""
    source = getattr(getattr(attachment, "spec", None), "source", None)
    return volume is not None and getattr(source, "persistent_volume_name", None) == volume


# reading the API's objects (typed by the client, or plain mappings for custom objects)

def version(obj: Any) -> str | None:
    if isinstance(obj, dict):
        version = obj.get("metadata", {}).get("resourceVersion")
        return str(version) if version else None
    return getattr(getattr(obj, "metadata", None), "resource_version", None)


def phase(obj: Any) -> str:
    return getattr(getattr(obj, "status", None), "phase", None) or ""


def bound(claim: Any) -> bool:
    return phase(claim) == "Bound"


def capacity_bytes(claim: Any) -> int:
    from kubernetes.utils import parse_quantity  # lazy: 0.24 s, for pvc targets only

    capacity = (getattr(claim.status, "capacity", None) or {}).get("storage")
    try:
        return int(parse_quantity(capacity)) if capacity else 0  # type: ignore[no-untyped-call]
    except ValueError:
        return 0


def condition_types(claim: Any) -> list[str]:
    return [str(getattr(condition, "type", "")) for condition in getattr(claim.status, "conditions", None) or ()]


def snapshot_ready(snapshot: Any) -> bool:
    status = snapshot.get("status") if isinstance(snapshot, dict) else None
    return bool(status and status.get("readyToUse"))
