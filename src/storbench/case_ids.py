"""A case's stable id (pure): a plan's target as the model's TargetSpec, and the identities of a target, a workload and
a case hashed into the id that every stored result keeps.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from storbench.config import TargetConfig
from storbench.model import NO_LAB, OPTIONAL_WORKLOAD_FIELDS, LabPoint, TargetSpec, WorkloadPoint


def target_spec(name: str, config: TargetConfig) -> TargetSpec:
    """A plan's target as the typed target of its kind."""
    return config.spec(name)


def target_identity(target: TargetSpec) -> dict[str, object]:
    """What of a target makes a case's identity, in the shape ids have always been computed from: the fields
    of the first release (path, device, size_bytes, destructive; an NFS url and an import's location count as
    its path), and fields added later only when set, so ids of existing cases never change."""
    identity: dict[str, object] = {"name": target.name, "kind": target.kind, "path": None, "device": None,
                                   "size_bytes": target.size_bytes, "destructive": False}
    identity.update({key: getattr(target, field) for key, field in target.identity_first})
    later = {field: getattr(target, field) for field in target.identity_later}
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
