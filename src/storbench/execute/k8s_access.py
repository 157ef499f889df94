"""Reaching the operator's Kubernetes cluster (shell): the API client from the kubeconfig and context the command
line names (never a plan's), and `storbench k8s cleanup`, which deletes what storbench labelled."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from types import SimpleNamespace

from storbench.errors import UserError
from storbench.execute.k8s_manifests import MANAGED_BY
from storbench.execute.k8s_operations import SNAPSHOT_GROUP, SNAPSHOT_PLURAL, SNAPSHOT_VERSION

SELECTOR = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items())


@dataclass(frozen=True)
class ClusterAccess:
    """The cluster the operator names on the command line (`--kubeconfig`, `--context`, as kubectl takes them);
    None: the k8s lab's, else $KUBECONFIG or ~/.kube/config and its current context. Never a plan's."""

    kubeconfig: str | None = None
    context: str | None = None


DEFAULT_CLUSTER = ClusterAccess()

def core_api(kubeconfig: str | None, context: str | None = None, *, retries: bool = True) -> object:
    """The Kubernetes core API through ``kubeconfig`` (None: the default one) and ``context`` (None: its
    current one); ``retries``: urllib3's own retries of a request (off for readings that are taken again anyway:
    each would wait, and warn, three times for a node that does not answer)."""
    from kubernetes import client, config  # lazy: 0.24 s, for pvc targets only

    settings = client.Configuration()
    if not retries:
        settings.retries = False
    try:
        api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, context=context, client_configuration=settings)
    except Exception as error:
        where = f"kubeconfig {kubeconfig or '(default)'}" + (f", context {context}" if context else "")
        raise UserError(f"cannot load {where}: {error}",
                        hint="pass --kubeconfig/--context, set $KUBECONFIG, or run `storbench lab k8s up`") from None
    return client.CoreV1Api(api_client)



def cleanup(kubeconfig: str | None, context: str | None = None, namespace: str | None = None,
            custom: object | None = None) -> list[str]:
    """Delete everything labelled app.kubernetes.io/managed-by=storbench — pods, config maps, volume snapshots,
    claims, and the namespaces storbench made — in every namespace, or in ``namespace`` alone (what an identity
    without cluster-wide reads can clean: `storbench k8s rbac`'s); returns what was deleted."""
    from kubernetes.client.exceptions import ApiException  # lazy: start-up time, the client loads only here

    core = core_api(kubeconfig, context)
    if custom is None:
        from kubernetes import client  # lazy: as above

        custom = client.CustomObjectsApi(core.api_client)  # type: ignore[attr-defined]
    if namespace is not None:
        try:
            namespaces = [core.read_namespace(namespace)]  # type: ignore[attr-defined]
        except ApiException as error:
            if error.status == 404:
                return []
            namespaces = [SimpleNamespace(metadata=SimpleNamespace(name=namespace, labels=None))]  # may not read it
    else:
        try:
            namespaces = core.list_namespace().items  # type: ignore[attr-defined]
        except ApiException as error:
            raise UserError(f"kubernetes: cannot list namespaces: {error.reason}",
                            hint="clean one namespace with -n NAMESPACE (an identity without cluster-wide reads, as "
                            "`storbench k8s rbac` makes, can)") from None
    deleted = []
    for found in namespaces:
        name = found.metadata.name
        try:  # before their claims: a snapshot taken of a claim holds its content (and its bill)
            snapshots = custom.list_namespaced_custom_object(  # type: ignore[attr-defined]
                SNAPSHOT_GROUP, SNAPSHOT_VERSION, name, SNAPSHOT_PLURAL, label_selector=SELECTOR)["items"]
        except ApiException:  # no snapshot API on this cluster, or no right to list them
            snapshots = []
        for item in snapshots:
            with contextlib.suppress(Exception):
                custom.delete_namespaced_custom_object(  # type: ignore[attr-defined]
                    SNAPSHOT_GROUP, SNAPSHOT_VERSION, name, SNAPSHOT_PLURAL, item["metadata"]["name"])
                deleted.append(f"volumesnapshot {name}/{item['metadata']['name']}")
        for kind, lister, deleter in (
                ("pod", core.list_namespaced_pod, core.delete_namespaced_pod),  # type: ignore[attr-defined]
                ("configmap", core.list_namespaced_config_map,  # type: ignore[attr-defined]
                 core.delete_namespaced_config_map),  # type: ignore[attr-defined]
                ("persistentvolumeclaim", core.list_namespaced_persistent_volume_claim,  # type: ignore[attr-defined]
                 core.delete_namespaced_persistent_volume_claim)):  # type: ignore[attr-defined]
            try:
                items = lister(name, label_selector=SELECTOR).items
            except ApiException as error:
                raise UserError(f"kubernetes: cannot list {kind}s in {name}: {error.reason}",
                                hint="grant the rules `storbench k8s rbac` prints") from None
            for item in items:
                with contextlib.suppress(Exception):
                    deleter(item.metadata.name, name)
                    deleted.append(f"{kind} {name}/{item.metadata.name}")
        if (found.metadata.labels or {}).get("app.kubernetes.io/managed-by") == "storbench":
            with contextlib.suppress(Exception):
                core.delete_namespace(name)  # type: ignore[attr-defined]
                deleted.append(f"namespace {name}")
    return deleted
