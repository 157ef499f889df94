"""Kubernetes objects for fio pods on PersistentVolumeClaims. Pure: plain dicts from typed inputs.

No plan value reaches a shell command: the pod's script is a constant; the job file travels in a ConfigMap and
the start time in an environment variable (a number). The pods are unprivileged: no privilege escalation, no
capabilities, no service-account token. fio needs none of them: a Block-mode claim reaches the container as a device
node through `volumeDevices` (allowed by the runtime's device rules, owned by the container's root), a Filesystem
claim as a mounted directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from storbench.fio.jobfile import JobBinding
from storbench.model import Case, PvcTarget

MANAGED_BY = {"app.kubernetes.io/managed-by": "storbench"}
RUN_LABEL = "storbench/run"
# fio on a volume device or a mounted claim needs no capability (it runs as the container's root, which owns both);
# a block device's cache flush (BLKFLSBUF, buffered I/O only) is refused without CAP_SYS_ADMIN: fio warns and goes on.
CONTAINER_SECURITY: dict[str, object] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
JOB_DIR = "/storbench/jobs"
DATA_DIR = "/data"
BLOCK_DEVICE = "/dev/storbench"
JSON_MARKER = "STORBENCH-FIO-JSON"
START_MARKER = "STORBENCH-START"
EXIT_MARKER = "STORBENCH-EXIT"

# Waits for START_AT (epoch seconds), prints the moment fio starts, runs fio with its JSON to a file (fio may
# print warnings to stdout in block mode), then prints the JSON after a marker line.
POD_SCRIPT = (
    'while [ "$(date +%s)" -lt "$START_AT" ]; do sleep 0.05; done; '
    f'echo "{START_MARKER} $(date +%s)"; '
    f'fio --output-format=json+ --output=/tmp/fio.json {JOB_DIR}/job.fio; rc=$?; '
    f'echo "{JSON_MARKER}"; cat /tmp/fio.json; echo; echo "{EXIT_MARKER} $rc"; exit $rc'
)


@dataclass(frozen=True)
class PodPlan:
    name: str
    claim: str
    config_map: str


def claim_names(target: PvcTarget, clients: int) -> list[str]:
    """ReadWriteOnce: one claim per client; ReadWriteMany: one claim for all."""
    base = f"sb-{target.name.lower().replace('_', '-')}"[:50]
    if target.access_mode == "ReadWriteMany":
        return [base] * clients
    return [f"{base}-{index}" for index in range(1, clients + 1)]


def run_labels(run_label: str) -> dict[str, str]:
    """The labels on everything storbench creates in a run."""
    return {**MANAGED_BY, RUN_LABEL: run_label}


def made_for_run(labels: Mapping[str, str] | None, run_label: str) -> bool:
    """Does an object found in the cluster carry storbench's labels for this run (so storbench may use it)?"""
    found = labels or {}
    return all(found.get(key) == value for key, value in run_labels(run_label).items())


def claim_manifest(name: str, target: PvcTarget, run_label: str,
                   default_storage_class: str | None = None) -> dict[str, object]:
    spec: dict[str, object] = {
        "accessModes": [target.access_mode or "ReadWriteOnce"],
        "volumeMode": target.volume_mode or "Filesystem",
        "resources": {"requests": {"storage": str(target.size_bytes)}},
    }
    storage_class = target.storage_class or default_storage_class
    if storage_class:
        spec["storageClassName"] = storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "labels": run_labels(run_label)}, "spec": spec}


def config_map_manifest(name: str, job_text: str, run_label: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": run_labels(run_label)},
            "data": {"job.fio": job_text}}


def pod_manifest(plan: PodPlan, target: PvcTarget, start_at_s: int, run_label: str,
                 repetition_label: str) -> dict[str, object]:
    block = target.volume_mode == "Block"
    container: dict[str, object] = {
        "name": "fio", "image": target.container_image, "imagePullPolicy": target.image_pull_policy or "IfNotPresent",
        "command": ["/bin/sh", "-c", POD_SCRIPT], "env": [{"name": "START_AT", "value": str(start_at_s)}],
        "volumeMounts": [{"name": "jobs", "mountPath": JOB_DIR, "readOnly": True}],
        "securityContext": dict(CONTAINER_SECURITY),
    }
    if block:
        container["volumeDevices"] = [{"name": "data", "devicePath": BLOCK_DEVICE}]
    else:
        container["volumeMounts"] = [*container["volumeMounts"], {"name": "data", "mountPath": DATA_DIR}]  # type: ignore[misc]
    labels = {**run_labels(run_label), "storbench/repetition": repetition_label}
    spec: dict[str, object] = {
        "restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [container],
        # fio talks to nothing: no API token for the namespace's service account, no service variables
        "automountServiceAccountToken": False, "enableServiceLinks": False,
        "volumes": [{"name": "jobs", "configMap": {"name": plan.config_map}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": plan.claim}}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                       "whenUnsatisfiable": "ScheduleAnyway",
                                       "labelSelector": {"matchLabels": {"storbench/repetition": repetition_label}}}],
    }
    if target.node_selector:
        spec["nodeSelector"] = dict(target.node_selector)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": plan.name, "labels": labels}, "spec": spec}


def pvc_of(case: Case) -> PvcTarget:
    """The case's target, which runs in pods only if it is a pvc target."""
    if not isinstance(case.target, PvcTarget):
        raise TypeError(f"target '{case.target.name}' ({case.target.kind}) does not run in pods")
    return case.target


def pod_plans(case: Case, run_label: str, rep_index: int) -> list[PodPlan]:
    claims = claim_names(pvc_of(case), case.clients)
    return [PodPlan(name=f"sb-{case.case_id}-{run_label}-r{rep_index}-c{index}",
                    claim=claims[index - 1], config_map=f"sb-{case.case_id}-{run_label}-c{index}")
            for index in range(1, case.clients + 1)]


def split_pod_log(log: str) -> tuple[float | None, str, int | None]:
    """(epoch when fio started, fio's JSON text, fio's exit status) from a pod's log.

    Warnings fio writes before the document are left out: without CAP_SYS_ADMIN it cannot flush a block device's
    cache and says "fio: cache invalidation of /dev/storbench failed: Permission denied" (buffered I/O only)."""
    started: float | None = None
    exit_status: int | None = None
    json_lines: list[str] = []
    in_json = False
    for line in log.splitlines():
        if line.startswith(START_MARKER + " "):
            try:
                started = float(line.split()[1])
            except (IndexError, ValueError):
                started = None
        elif line == JSON_MARKER:
            in_json = True
        elif line.startswith(EXIT_MARKER + " "):
            in_json = False
            try:
                exit_status = int(line.split()[1])
            except (IndexError, ValueError):
                exit_status = None
        elif in_json and (json_lines or line.startswith("{")):
            json_lines.append(line)  # from the document's first line: fio writes its warnings to the same file
    return started, "\n".join(json_lines), exit_status


def pod_job_binding(target: PvcTarget) -> JobBinding:
    """How the volume appears in the pods' job files: a file on the mounted claim, or the raw device."""
    if target.volume_mode == "Block":
        return JobBinding(options=(("filename", BLOCK_DEVICE),))
    return JobBinding(options=(("directory", DATA_DIR), ("filename_format", "storbench.$jobnum.$filenum")))
