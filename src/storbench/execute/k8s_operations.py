"""Kubernetes volume operations as measured workloads (issue 33; pure): what each operation makes, what it waits
for, and its timings as a client's measurement.

One operation per client per repetition, the clients' at once. Each is timed from the API request to the state a
user waits for: a claim Bound (provision, and restore and clone, whose data is then checked), a pod's first I/O on
its claim done (attach: fio's own clock), a VolumeSnapshot ready to use (snapshot), the claim's capacity at the new
size (expand). What an operation needs first (a claim, data written on it, a snapshot) is made before the clock
starts; everything is deleted after the repetition.

No plan value reaches a shell command: the pods' scripts are constants, the data they write and check a token
storbench makes, passed in an environment variable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from storbench.execute.k8s_manifests import (
    CONTAINER_SECURITY,
    DATA_DIR,
    POD_SECURITY,
    claim_manifest,
    run_labels,
)
from storbench.model import (
    Case,
    ClientMeasurement,
    Direction,
    DirectionMeasurement,
    LatencyHistogram,
    LatencySummary,
    PvcTarget,
)

SNAPSHOT_GROUP, SNAPSHOT_VERSION, SNAPSHOT_PLURAL = "snapshot.storage.k8s.io", "v1", "volumesnapshots"
CHECK_FILE = f"{DATA_DIR}/storbench-check"
TOKEN_VARIABLE = "STORBENCH_TOKEN"
# the seed pod writes the token and syncs; the check pod prints what the file holds
SEED_SCRIPT = f'echo "${TOKEN_VARIABLE}" > {CHECK_FILE} && sync'
CHECK_SCRIPT = f"cat {CHECK_FILE}"
# attach: the pod's first I/O, a 4 KiB write and its fsync on the mounted claim; fio's report carries the moment it
# ended (its timestamp_ms, this machine's clock in the lab; the cluster's nodes' clocks elsewhere)
FIRST_IO_COMMAND = ("/usr/bin/fio", "--name=first-io", f"--filename={DATA_DIR}/storbench-first-io", "--rw=write",
                    "--bs=4k", "--size=4k", "--fsync=1", "--output-format=json")
# a pod that only uses its claim, so a class that binds on first consumer provisions it (`execute.volume_binding`)
BIND_COMMAND = ("/bin/sh", "-c", "true")
EXPAND_FACTOR = 2  # expand: the claim asks for this many times its size
RESIZE_PENDING = "FileSystemResizePending"  # a claim condition: its controller part done, a node grows its file system


@dataclass(frozen=True)
class OperationNames:
    """The objects of one client's operation in one repetition."""

    source: str  # the claim an operation starts from (snapshot, restore, clone, expand, attach)
    made: str  # the claim the operation makes (provision, restore, clone)
    snapshot: str
    pod: str  # attach's pod; the seed and check pods are named after it

    @staticmethod
    def of(case: Case, run_label: str, rep_index: int, client: int) -> OperationNames:
        base = f"{OperationNames.prefix(case, run_label, rep_index)}c{client}"
        return OperationNames(source=f"{base}-src", made=f"{base}-new", snapshot=f"{base}-snap", pod=f"{base}-pod")

    @staticmethod
    def prefix(case: Case, run_label: str, rep_index: int) -> str:
        """What the names of every object of one repetition begin with."""
        return f"sb-{case.case_id}-{run_label}-r{rep_index}-"


@dataclass(frozen=True)
class OperationResult:
    """One client's operation: when it was asked for and when it was done (epoch s), where, and what failed."""

    client: int
    operation: str
    requested_s: float
    done_s: float | None  # None: not done (error says why)
    node: str = ""
    error: str = ""
    checked: bool | None = None  # restore and clone: the data read back was what was written (None: not checked)

    @property
    def seconds(self) -> float | None:
        return None if self.done_s is None else max(0.0, self.done_s - self.requested_s)

    def to_json(self) -> dict[str, object]:
        return {"client": self.client, "operation": self.operation, "requested_s": self.requested_s,
                "done_s": self.done_s, "seconds": self.seconds, "node": self.node, "error": self.error,
                "checked": self.checked}


def labels(run_label: str, repetition_label: str) -> dict[str, str]:
    return {**run_labels(run_label), "storbench/repetition": repetition_label}


def source_claim(target: PvcTarget, name: str, run_label: str, default_class: str | None) -> dict[str, object]:
    return claim_manifest(name, target, run_label, default_class)


def claim_from(target: PvcTarget, name: str, run_label: str, default_class: str | None, *, kind: str,
               source: str) -> dict[str, object]:
    """A claim made from a VolumeSnapshot (restore) or from another claim (clone)."""
    manifest = claim_manifest(name, target, run_label, default_class)
    api_group = SNAPSHOT_GROUP if kind == "VolumeSnapshot" else None
    data_source: dict[str, object] = {"kind": kind, "name": source}
    if api_group:
        data_source["apiGroup"] = api_group
    manifest["spec"] = {**manifest["spec"], "dataSource": data_source}  # type: ignore[dict-item]
    return manifest


def snapshot_manifest(name: str, claim: str, run_label: str) -> dict[str, object]:
    """A VolumeSnapshot of ``claim`` in the cluster's default VolumeSnapshotClass for its driver."""
    return {"apiVersion": f"{SNAPSHOT_GROUP}/{SNAPSHOT_VERSION}", "kind": "VolumeSnapshot",
            "metadata": {"name": name, "labels": run_labels(run_label)},
            "spec": {"source": {"persistentVolumeClaimName": claim}}}


def pod_on_claim(name: str, claim: str, target: PvcTarget, run_label: str, command: list[str],
                 env: dict[str, str] | None = None) -> dict[str, object]:
    """A pod that runs ``command`` once on the mounted claim (Filesystem claims)."""
    return _pod(name, target, run_label, command, env, claim=claim)


def warm_pod(name: str, node: str, target: PvcTarget, run_label: str) -> dict[str, object]:
    """A pod that only starts the target's image on ``node`` (no claim): an attach timed there pulls no image."""
    return _pod(name, target, run_label, list(BIND_COMMAND), node=node)


def _pod(name: str, target: PvcTarget, run_label: str, command: list[str], env: dict[str, str] | None = None, *,
         claim: str | None = None, node: str | None = None) -> dict[str, object]:
    container: dict[str, object] = {
        "name": "op", "image": target.container_image, "imagePullPolicy": target.image_pull_policy or "IfNotPresent",
        "command": command, "env": [{"name": k, "value": v} for k, v in sorted((env or {}).items())],
        "securityContext": dict(CONTAINER_SECURITY)}
    spec: dict[str, object] = {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                               "containers": [container], "automountServiceAccountToken": False,
                               "enableServiceLinks": False, "securityContext": dict(POD_SECURITY[target.pod_security])}
    if claim is not None:
        container["volumeMounts"] = [{"name": "data", "mountPath": DATA_DIR}]
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    if node is not None:
        spec["nodeName"] = node  # that node, whatever the scheduler would choose
    elif target.node_selector:
        spec["nodeSelector"] = dict(target.node_selector)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": run_labels(run_label)},
            "spec": spec}


def first_io_done_s(log: str) -> float | None:
    """When the attach pod's first I/O ended (epoch s), from fio's JSON report in its log; None if it has none."""
    start = log.find("{")
    if start < 0:
        return None
    try:
        document = json.loads(log[start:])
    except ValueError:
        return None
    stamp = document.get("timestamp_ms") if isinstance(document, dict) else None
    return stamp / 1000 if isinstance(stamp, int | float) and stamp > 0 else None


def expanded_bytes(target: PvcTarget, bound_bytes: int) -> int:
    """What an expand asks for: twice the claim's capacity once Bound (a driver rounds a 64 MiB request up to its
    own step, 1 GiB on many clouds: twice the request would ask for less than it has), at least twice the plan's
    size."""
    return max(target.size_bytes or 0, bound_bytes) * EXPAND_FACTOR


def expand_done(capacity_bytes: int, wanted_bytes: int, condition_types: Sequence[str]) -> bool:
    """An expand is done when the claim's capacity reached what was asked, or when the driver's controller part is
    done and the file system waits for a node to grow it (``FileSystemResizePending``: the capacity changes only
    once a pod mounts the claim, and none does)."""
    return capacity_bytes >= wanted_bytes or RESIZE_PENDING in condition_types


def operation_text(case: Case, names: OperationNames, manifests: list[dict[str, object]]) -> str:
    """What one client's operation asks of the cluster, kept as the repetition's job text: the manifests, in the
    order they are made (the timed one marked)."""
    return json.dumps({"operation": case.workload.rw, "client_objects": names.__dict__, "manifests": manifests},
                      indent=1, sort_keys=True)


def operation_measurement(result: OperationResult, name: str) -> ClientMeasurement:
    """One client's operation as a measurement: one operation (counted as a write: it changes the cluster's
    state), its time as the latency, exact (a histogram of one value)."""
    seconds = result.seconds or 0.0
    ns = max(1, round(seconds * 1e9))
    histogram = LatencyHistogram.from_arrays([ns], [1])
    latency = LatencySummary(samples=1, min_ns=ns, max_ns=ns, mean_ns=float(ns), stddev_ns=0.0, histogram=histogram)
    runtime_ms = max(1, round(seconds * 1000))
    direction = DirectionMeasurement(Direction.WRITE, total_ios=1, io_bytes=0, runtime_ms=runtime_ms,
                                     iops=1000 / runtime_ms, bw_bytes_per_s=0.0, clat=latency, lat=latency)
    return ClientMeasurement(client=name, jobs=1, job_errors=(0,), cpu_usr_pct=0.0, cpu_sys_pct=0.0,
                             directions=(direction,))
