"""A case's stable id (pure): a plan's target as the model's TargetSpec, and the identities of a target, a workload and
a case hashed into the id that every stored result keeps.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from storbench.config import TargetConfig
from storbench.model import (
    NO_LAB,
    OPTIONAL_WORKLOAD_FIELDS,
    BlockTarget,
    CephfsTarget,
    ImportedTarget,
    LabPoint,
    NfsTarget,
    PathTarget,
    PvcTarget,
    RbdTarget,
    S3Target,
    TargetSpec,
    WorkloadPoint,
)


def target_spec(name: str, config: TargetConfig) -> TargetSpec:
    """A plan's target as the typed target of its kind."""
    if config.kind == "s3":
        return S3Target(name=name, endpoint=config.endpoint, bucket=config.bucket, region=config.region)
    if config.kind == "path":
        return PathTarget(name=name, path=config.path, size_bytes=config.size, expect_fs=config.expect_fs)
    if config.kind == "nfs":
        return NfsTarget(name=name, url=config.url, size_bytes=config.size)
    if config.kind == "cephfs":
        return CephfsTarget(name=name, path=config.path, size_bytes=config.size)
    if config.kind == "pvc":
        return PvcTarget(name=name, size_bytes=config.size, destructive=config.destructive,
                         storage_class=config.storage_class, access_mode=config.access_mode,
                         volume_mode=config.volume_mode, namespace=config.namespace, container_image=config.image,
                         image_pull_policy=config.image_pull_policy,
                         node_selector=tuple(sorted(config.node_selector.items())), start_budget_s=config.start_budget)
    if config.kind == "rbd":
        return RbdTarget(name=name, size_bytes=config.size, pool=config.pool, image=config.image, client=config.client,
                         conf=config.conf, destructive=config.destructive)
    return BlockTarget(name=name, device=config.device, size_bytes=config.size, destructive=config.destructive)


def target_identity(target: TargetSpec) -> dict[str, object]:
    """What of a target makes a case's identity, in the shape ids have always been computed from: the fields
    of the first release (path, device, size_bytes, destructive; an NFS url and an import's location count as
    its path), and fields added later only when set, so ids of existing cases never change."""
    identity: dict[str, object] = {"name": target.name, "kind": target.kind, "path": None, "device": None,
                                   "size_bytes": target.size_bytes, "destructive": False}
    later: dict[str, object] = {}
    if isinstance(target, PathTarget | CephfsTarget):
        identity["path"] = target.path
        if isinstance(target, PathTarget):
            later = {"expect_fs": target.expect_fs}
    elif isinstance(target, NfsTarget):
        identity["path"] = target.url
    elif isinstance(target, ImportedTarget):
        identity["path"] = target.location
    elif isinstance(target, BlockTarget):
        identity.update(device=target.device, destructive=target.destructive)
    elif isinstance(target, S3Target):
        identity["path"] = target.endpoint
        later = {"bucket": target.bucket, "region": target.region}
    elif isinstance(target, RbdTarget):
        identity["destructive"] = target.destructive
        later = {"pool": target.pool, "image": target.image, "client": target.client, "conf": target.conf}
    else:
        identity["destructive"] = target.destructive
        later = {"storage_class": target.storage_class, "access_mode": target.access_mode,
                 "volume_mode": target.volume_mode, "namespace": target.namespace,
                 "container_image": target.container_image, "image_pull_policy": target.image_pull_policy,
                 "node_selector": target.node_selector, "start_budget_s": target.start_budget_s}
    identity.update({k: v for k, v in later.items() if v not in (None, (), [])})
    return identity


def workload_identity(workload: WorkloadPoint) -> dict[str, object]:
    """The workload's fields as a case id hashes them: fields added later are left out while unset."""
    fields = asdict(workload)
    for name in OPTIONAL_WORKLOAD_FIELDS:
        if fields[name] is None:
            del fields[name]
    return fields


def case_id_for(target: TargetSpec, workload: WorkloadPoint, clients: int = 1, lab: LabPoint = NO_LAB) -> str:
    """A stable id from the case's definition: same definition, same id, on any machine (pinned by
    tests/test_case_ids.py)."""
    canonical = json.dumps(
        {"target": target_identity(target), "workload": workload_identity(workload), "clients": clients,
         "lab": list(lab.pairs())},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]
