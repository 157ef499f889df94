"""The least identity storbench needs on a cluster for pvc targets in one namespace, as Kubernetes objects
(`storbench k8s rbac` prints them). Pure.

In the namespace (a Role): fio pods made, read, watched, deleted and their logs read; their config maps; the
claims (created, read, watched, grown by `expand`, deleted); VolumeSnapshots for `snapshot` / `restore`; the
`default` service account read while a new namespace gets it. Cluster-wide (a ClusterRole, each rule only what
its name says): that one namespace read (by name), the nodes listed (client N's preferred node) and their
kubelets' summaries read through the API server (`nodes/proxy` get: the per-node telemetry), the StorageClasses
read (`storageclasses` get and list: does a target's class, or the default one, bind on first consumer) and the
volume attachments listed (`volumeattachments` list: a volume detached before an attach is timed). Creating the
namespace needs `namespaces` create, which this identity does not have: the namespace is made once by an
administrator. Every name is a DNS label the caller checked.
"""

from __future__ import annotations

ACCOUNT = "storbench"
CLUSTER_ROLE = "storbench-reader"

NAMESPACED_RULES: tuple[dict[str, object], ...] = (
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get", "list", "watch", "delete"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    # list: `storbench k8s cleanup -n NS` finds what a run left (it had stopped at them, before the claims)
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get", "list", "delete"]},
    {"apiGroups": [""], "resources": ["persistentvolumeclaims"],
     "verbs": ["create", "get", "list", "watch", "patch", "delete"]},
    # the namespace's "default" account, whose making says a new namespace takes pods: no other account is read
    {"apiGroups": [""], "resources": ["serviceaccounts"], "resourceNames": ["default"], "verbs": ["get"]},
    {"apiGroups": ["snapshot.storage.k8s.io"], "resources": ["volumesnapshots"],
     "verbs": ["create", "get", "list", "watch", "delete"]},
)


def cluster_rules(namespace: str) -> list[dict[str, object]]:
    return [{"apiGroups": [""], "resources": ["namespaces"], "resourceNames": [namespace], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
            {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]},
            # volume operations on a class that binds on first consumer (`execute.volume_binding`): its mode read,
            # and the binding pod's volume seen detached before an attach is timed
            {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["get", "list"]},
            {"apiGroups": ["storage.k8s.io"], "resources": ["volumeattachments"], "verbs": ["list"]}]


def rbac_manifests(namespace: str, account: str = ACCOUNT) -> list[dict[str, object]]:
    """ServiceAccount, Role and RoleBinding in ``namespace``; the ClusterRole and its binding for the reads above."""
    labels = {"app.kubernetes.io/part-of": "storbench"}  # not managed-by: `k8s cleanup` leaves them alone
    subject = [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]
    cluster_name = f"{CLUSTER_ROLE}-{namespace}-{account}"
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": account, "namespace": namespace, "labels": labels}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": account, "namespace": namespace, "labels": labels},
         "rules": [dict(rule) for rule in NAMESPACED_RULES]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": account, "namespace": namespace, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": account},
         "subjects": subject},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": cluster_name, "labels": labels}, "rules": cluster_rules(namespace)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": cluster_name, "labels": labels},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_name},
         "subjects": subject},
    ]
