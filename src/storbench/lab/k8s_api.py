"""The Kubernetes lab's own API client (shell): the admin client certificate over urllib, for bringing the lab up
and for its faults; the kubernetes client is the executor's."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path

from storbench.lab.k8s_conf import APISERVER_PORT, CSI_DRIVER, NODE_ADDRESS, NODE_TAINT_OUT_OF_SERVICE

CONFLICT = 409
TAINT_ATTEMPTS = 5


class AdminApi:
    def __init__(self, pki: Path) -> None:
        self.pki = pki

    def request(self, path: str, method: str = "GET", body: object | None = None, *, raw: bool = False,
                content_type: str = "application/json") -> object:
        context = ssl.create_default_context(cafile=str(self.pki / "ca.crt"))
        context.load_cert_chain(str(self.pki / "admin.crt"), str(self.pki / "admin.key"))
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"https://{NODE_ADDRESS}:{APISERVER_PORT}{path}", data=data, method=method,
                                         headers={"Content-Type": content_type})
        with urllib.request.urlopen(request, context=context, timeout=10) as answer:
            content = answer.read()
            return content.decode(errors="replace") if raw else json.loads(content or b"null")

    def apply(self, manifest: dict[str, object], collection: str) -> None:
        """Create ``manifest`` in ``collection``; one that exists already is left as it is."""
        try:
            self.request(collection, "POST", manifest)
        except urllib.error.HTTPError as error:
            if error.code != 409:  # already exists
                raise

    def ready(self) -> bool:
        try:
            answer = self.request("/readyz", raw=True)
        except (OSError, ValueError, ssl.SSLError):
            return False
        return answer == "ok"

    def node_ready(self, name: str) -> bool:
        try:
            node = self.request(f"/api/v1/nodes/{name}")
        except (OSError, ValueError):
            return False
        conditions = node.get("status", {}).get("conditions", []) if isinstance(node, dict) else []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    def snapshots_served(self) -> bool:
        try:
            listed = self.request("/apis/snapshot.storage.k8s.io/v1")
        except (OSError, ValueError):
            return False
        names = {r.get("name") for r in listed.get("resources", [])} if isinstance(listed, dict) else set()
        return {"volumesnapshots", "volumesnapshotcontents", "volumesnapshotclasses"} <= names

    def csi_registered(self, node_name: str) -> bool:
        try:
            found = self.request(f"/apis/storage.k8s.io/v1/csinodes/{node_name}")
        except (OSError, ValueError):
            return False
        drivers = (found.get("spec", {}).get("drivers") or []) if isinstance(found, dict) else []
        return any(d.get("name") == CSI_DRIVER for d in drivers)

    def taints(self, node_name: str) -> list[dict[str, str]]:
        return self._node_taints(node_name)[0]

    def _node_taints(self, node_name: str) -> tuple[list[dict[str, str]], str | None]:
        """The node's taints and the version they were read at."""
        current = self.request(f"/api/v1/nodes/{node_name}")
        spec = current.get("spec", {}) if isinstance(current, dict) else {}
        version = current.get("metadata", {}).get("resourceVersion") if isinstance(current, dict) else None
        return list(spec.get("taints") or []), version

    def out_of_service(self, node_name: str, *, on: bool) -> None:
        """Kubernetes' out-of-service taint on the node (`kubectl taint nodes NODE
        node.kubernetes.io/out-of-service=nodeshutdown:NoExecute`), or off it. The node's taint list is written at
        the version it was read at: the node controller adds its own (unreachable, not-ready) to the same list as a
        node fails, and a write over a newer list would drop one (a conflict is read again and written anew)."""
        for attempt in range(TAINT_ATTEMPTS):
            found, version = self._node_taints(node_name)
            taints = [t for t in found if t.get("key") != NODE_TAINT_OUT_OF_SERVICE]
            if on:
                taints.append({"key": NODE_TAINT_OUT_OF_SERVICE, "value": "nodeshutdown", "effect": "NoExecute"})
            try:
                self.request(f"/api/v1/nodes/{node_name}", "PATCH",
                             {"metadata": {"resourceVersion": version}, "spec": {"taints": taints}},
                             content_type="application/merge-patch+json")
                return
            except urllib.error.HTTPError as error:
                if error.code != CONFLICT or attempt + 1 == TAINT_ATTEMPTS:
                    raise
