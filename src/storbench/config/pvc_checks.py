"""The plan's rules for pvc targets: the names of their Kubernetes claims, their pods' security level. Pure: each
raises ``UserError``."""

from __future__ import annotations

from storbench.config.schema import PlanConfig
from storbench.config.source import PlanSource
from storbench.config.targets import PvcTargetConfig
from storbench.errors import UserError
from storbench.execute.k8s_manifests import DNS_SUBDOMAIN_RE, claim_base, target_claim_names
from storbench.lab.k8s_conf import CSI_STORAGE_CLASS as LAB_CSI_STORAGE_CLASS
from storbench.lab.k8s_conf import STORAGE_CLASS as LAB_STORAGE_CLASS


def check_claim_names(claimed: dict[tuple[str, str], str], name: str, target: PvcTargetConfig, clients: int,
                      source: PlanSource) -> None:
    """Every claim name the target takes (for up to ``clients`` clients) is a Kubernetes name and no other target's
    (``sb-fast-1`` is target fast's first ReadWriteOnce claim and target fast-1's ReadWriteMany claim): a claim two
    targets share in one namespace would have the second measure the first's volume. ``claimed`` gathers the
    (namespace, name) pairs target by target: in two namespaces one name is two claims."""
    base = claim_base(name)
    for claim in dict.fromkeys(target_claim_names(name, target.access_mode, clients)):
        if not DNS_SUBDOMAIN_RE.match(claim):
            raise UserError(f"target '{name}' gives Kubernetes claims the name {claim!r}, which Kubernetes refuses",
                            where=source.where(("targets", name)),
                            hint="rename the target: letters, digits and '-', with no '.' next to '-' or '.'")
        other = claimed.setdefault((target.namespace, claim), name)
        if other != name:  # one claim name for two targets: the second would use the first's volumes
            raise UserError(f"targets '{other}' and '{name}' would share the Kubernetes claim {claim} in namespace "
                            f"{target.namespace} (target "
                            f"'{name}' names its claims {base}{'' if target.access_mode == 'ReadWriteMany' else '-N'}"
                            "): Kubernetes names are lower case, with '-' for '_', at most 50 characters",
                            where=source.where(("targets", name)), hint=f"rename target '{name}'")


def check_pod_security(config: PlanConfig, source: PlanSource, name: str, target: PvcTargetConfig) -> None:
    """A restricted pod runs fio as an unprivileged user: the k8s lab's host-path class makes root-only directories
    (Kubernetes' host-path provisioner applies no fsGroup); targets in one namespace storbench may create share one
    Pod Security level (the namespace enforces it)."""
    k8s = config.lab.k8s if config.lab else None
    pods = any(rw not in ("provision", "expand") for rw in config.workload.rw)  # those two make no pod
    if (k8s is not None and pods and target.pod_security == "restricted" and target.volume_mode == "Filesystem"
            and target.storage_class in (None, LAB_STORAGE_CLASS)):
        raise UserError(f"target '{name}' runs fio as an unprivileged user (pod_security: restricted), and the k8s "
                        f"lab's {LAB_STORAGE_CLASS} class makes directories only root may write",
                        where=source.where(("targets", name)),
                        hint=f"set lab.k8s.csi: true and storage_class: {LAB_CSI_STORAGE_CLASS} (its volumes are "
                        "writable by every user), or pod_security: baseline (fio as the image's root, no capabilities)")
    for other_name, other in config.targets.items():
        if other_name == name:
            break
        if (isinstance(other, PvcTargetConfig) and other.namespace == target.namespace
                and other.pod_security != target.pod_security):
            raise UserError(f"targets '{other_name}' and '{name}' share namespace {target.namespace} with pod_security "
                            f"{other.pod_security} and {target.pod_security}", where=source.where(("targets", name)),
                            hint="give one of them a namespace of its own, or the same pod_security (a namespace "
                            "storbench makes enforces one level)")
