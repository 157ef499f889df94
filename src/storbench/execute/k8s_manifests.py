"""Kubernetes objects for fio pods on PersistentVolumeClaims. Pure: plain dicts from typed inputs.

No plan value reaches a shell command: the pod's script is a constant; the job file travels in a ConfigMap and
the start time in an environment variable (a number). The pods are unprivileged: no privilege escalation, no
capabilities, no service-account token. fio needs none of them: a Block-mode claim reaches the container as a device
node through `volumeDevices` (allowed by the runtime's device rules, owned by the container's root), a Filesystem
claim as a mounted directory.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from storbench.fio.jobfile import TIMELINE_LOG, JobBinding, timeline_logs
from storbench.model import DEFAULT_FIO_IMAGE, Case, PvcTarget

MANAGED_BY = {"app.kubernetes.io/managed-by": "storbench"}
RUN_LABEL = "storbench/run"
# fio on a volume device or a mounted claim needs no capability (it runs as the container's root, which owns both);
# a block device's cache flush (BLKFLSBUF, buffered I/O only) is refused without CAP_SYS_ADMIN: fio warns and goes on.
CONTAINER_SECURITY: dict[str, object] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
FIO_USER = 65532  # the fio image's unprivileged user (`lab.k8s_images.fio_layer`); any image runs as it
# Kubernetes' restricted Pod Security Standard: not root, the runtime's seccomp profile; the claim given to the
# pod's group where its driver applies fsGroup (only on a mismatch: a claim reused by the next repetition is
# not walked again)
POD_SECURITY: dict[str, dict[str, object]] = {
    "restricted": {"runAsNonRoot": True, "runAsUser": FIO_USER, "runAsGroup": FIO_USER, "fsGroup": FIO_USER,
                   "fsGroupChangePolicy": "OnRootMismatch", "seccompProfile": {"type": "RuntimeDefault"}},
    "baseline": {},
}
JOB_DIR = "/storbench/jobs"
DATA_DIR = "/data"
BLOCK_DEVICE = "/dev/storbench"
JSON_MARKER = "STORBENCH-FIO-JSON"
START_MARKER = "STORBENCH-START"
LOG_MARKER = "STORBENCH-LOG"
EXIT_MARKER = "STORBENCH-EXIT"
UNWRITABLE_MARKER = "STORBENCH-UNWRITABLE"  # the claim (or device) fio's user cannot write
CLIENT_LABEL = "storbench/client"  # a pod's client number (1..), kept by the pod made again after a deletion
TERMINATION_GRACE_S = 5  # a deleted pod's fio gets SIGTERM: time to end its jobs and print its results
RUNTIME_VARIABLE = "STORBENCH_RUNTIME"  # a pod made again: its job's runtime, the seconds to END_AT (at least 1)

# Waits for START_AT (epoch seconds), checks that fio's user can write its claim (opens the device read-write, or
# makes a file in the directory: ACLs and read-only mounts count, not only mode bits), prints the moment fio
# starts, runs fio in /tmp with its JSON to a file (fio may print warnings to stdout in block mode), then prints
# the JSON after a marker line that gives its size in bytes (a log read that came short is told from a whole one),
# and each timeline log after a line naming it. A SIGTERM (the pod deleted) is passed
# on to fio, which ends its jobs and writes its results and logs as at a normal end: a deleted pod still reports
# what it did until then. A pod made again after a deletion has END_AT (epoch seconds): its job's runtime is the
# time left until then, at least a second.
POD_SCRIPT = (
    'while [ "$(date +%s)" -lt "$START_AT" ]; do sleep 0.05; done; '
    f'if [ -e {BLOCK_DEVICE} ]; then d={BLOCK_DEVICE}; ( exec 3<>"$d" ) 2>/dev/null; '
    f'else d={DATA_DIR}; ( : > "$d/.storbench-w" ) 2>/dev/null && rm -f "$d/.storbench-w"; fi '
    f'|| {{ echo "{UNWRITABLE_MARKER} $d"; exit 3; }}; '
    f'echo "{START_MARKER} $(date +%s)"; cd /tmp; '
    f'if [ -n "$END_AT" ]; then {RUNTIME_VARIABLE}=$((END_AT - $(date +%s))); '
    f'[ "${RUNTIME_VARIABLE}" -ge 1 ] || {RUNTIME_VARIABLE}=1; export {RUNTIME_VARIABLE}; fi; '
    "trap 'kill -TERM \"$fio\" 2>/dev/null' TERM; "
    f'fio --output-format=json+ --output=/tmp/fio.json {JOB_DIR}/job.fio & fio=$!; '
    'wait "$fio"; rc=$?; while kill -0 "$fio" 2>/dev/null; do wait "$fio"; rc=$?; done; '
    f'echo "{JSON_MARKER} $(wc -c < /tmp/fio.json)"; cat /tmp/fio.json; echo; '
    f'for f in {TIMELINE_LOG}_iops.*.log {TIMELINE_LOG}_clat.*.log; do '
    f'[ -f "$f" ] && echo "{LOG_MARKER} $f" && cat "$f"; done; '
    f'echo "{EXIT_MARKER} $rc"; exit $rc'
)


@dataclass(frozen=True)
class PodPlan:
    name: str
    claim: str
    config_map: str
    client: int = 1  # the client's number, from 1
    node: str = ""  # the node the pod prefers (`placement`); "" the scheduler's choice


@dataclass(frozen=True)
class NodeView:
    """What placement reads of a Node: its name, labels, whether it is cordoned, its taints as (key, effect)."""

    name: str
    labels: Mapping[str, str]
    unschedulable: bool = False
    taints: tuple[tuple[str, str], ...] = ()


# Taints Kubernetes puts on a node for a while (not ready, unreachable, out of service...): the node still counts
# for placement, so that client N keeps its node across repetitions while a failed one comes back.
TRANSIENT_TAINT = "node.kubernetes.io/"


def _natural(name: str) -> tuple[object, ...]:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"([0-9]+)", name))


def placement(nodes: Sequence[NodeView], node_selector: Mapping[str, str], clients: int) -> tuple[str, ...]:
    """The node each client prefers, client 1 first: when the nodes a pod may run on (its node selector's, not
    cordoned, no taint a fio pod does not tolerate — a control plane's) are at least as many as the clients, client
    N prefers the N-th of them in natural order of names, so that "client 1" is the same pod place in every
    repetition (a node failure's figures per client stay one client's); otherwise none (the scheduler spreads)."""
    usable = usable_nodes(nodes, node_selector)
    return tuple(usable[:clients]) if clients <= len(usable) else ()


def usable_nodes(nodes: Sequence[NodeView], node_selector: Mapping[str, str]) -> list[str]:
    """The nodes a pod of this node selector may run on, in natural order of names."""
    return sorted((node.name for node in nodes
                   if all(node.labels.get(key) == value for key, value in node_selector.items())
                   and not node.unschedulable
                   and not any(effect in ("NoSchedule", "NoExecute") and not key.startswith(TRANSIENT_TAINT)
                               for key, effect in node.taints)), key=_natural)


def claim_base(target_name: str) -> str:
    """The name a pvc target's claims start with: ``sb-`` and the target's name as Kubernetes takes it (lower
    case, ``_`` as ``-``, at most 50 characters, ending in a letter or digit). Two targets whose bases are one are
    refused by the plan check (they would share claims)."""
    return f"sb-{target_name.lower().replace('_', '-')}"[:50].rstrip("-.")


def claim_names(target: PvcTarget, clients: int) -> list[str]:
    """ReadWriteOnce: one claim per client; ReadWriteMany: one claim for all."""
    return target_claim_names(target.name, target.access_mode, clients)


def target_claim_names(target_name: str, access_mode: str, clients: int) -> list[str]:
    """The claims of a target named ``target_name`` for ``clients`` clients (`claim_names`), from the plan's own
    values: the plan check compares two targets' names with it."""
    base = claim_base(target_name)
    if access_mode == "ReadWriteMany":
        return [base] * clients
    return [f"{base}-{index}" for index in range(1, clients + 1)]


# Kubernetes' DNS subdomain (RFC 1123), the form a PersistentVolumeClaim's name takes
DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


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
                 repetition_label: str, *, end_at_s: int | None = None) -> dict[str, object]:
    """One client's fio pod: it waits for ``start_at_s`` (epoch seconds), then runs the job in its config map on
    the claim (a pod made again after a deletion: until ``end_at_s``)."""
    block = target.volume_mode == "Block"
    container: dict[str, object] = {
        "name": "fio", "image": target.container_image, "imagePullPolicy": target.image_pull_policy or "IfNotPresent",
        "command": ["/bin/sh", "-c", POD_SCRIPT],
        "env": [{"name": "START_AT", "value": str(start_at_s)},
                *([{"name": "END_AT", "value": str(end_at_s)}] if end_at_s is not None else [])],
        "volumeMounts": [{"name": "jobs", "mountPath": JOB_DIR, "readOnly": True}],
        "securityContext": dict(CONTAINER_SECURITY),
    }
    if block:
        container["volumeDevices"] = [{"name": "data", "devicePath": BLOCK_DEVICE}]
    else:
        container["volumeMounts"] = [*container["volumeMounts"], {"name": "data", "mountPath": DATA_DIR}]  # type: ignore[misc]
    labels = {**run_labels(run_label), "storbench/repetition": repetition_label, CLIENT_LABEL: str(plan.client)}
    spec: dict[str, object] = {
        "restartPolicy": "Never", "terminationGracePeriodSeconds": TERMINATION_GRACE_S, "containers": [container],
        # fio talks to nothing: no API token for the namespace's service account, no service variables
        "automountServiceAccountToken": False, "enableServiceLinks": False,
        "securityContext": dict(POD_SECURITY[target.pod_security]),
        "volumes": [{"name": "jobs", "configMap": {"name": plan.config_map}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": plan.claim}}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                       "whenUnsatisfiable": "ScheduleAnyway",
                                       "labelSelector": {"matchLabels": {"storbench/repetition": repetition_label}}}],
    }
    if target.node_selector:
        spec["nodeSelector"] = dict(target.node_selector)
    if plan.node:  # preferred, not required: a pod made again after its node failed goes elsewhere
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": {"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [plan.node]}]}}]}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": plan.name, "labels": labels}, "spec": spec}


def pvc_of(case: Case) -> PvcTarget:
    """The case's target, which runs in pods only if it is a pvc target."""
    if not isinstance(case.target, PvcTarget):
        raise TypeError(f"target '{case.target.name}' ({case.target.kind}) does not run in pods")
    return case.target


def with_image(case: Case, image: str | None) -> Case:
    """``case`` with its pods on ``image`` (a lab's fio image, where the lab's registry serves it) when its target
    asks for the default image (`DEFAULT_FIO_IMAGE`); unchanged otherwise. The stored case keeps what the plan
    said."""
    target = case.target
    if image is None or not isinstance(target, PvcTarget) or target.container_image != DEFAULT_FIO_IMAGE:
        return case
    return replace(case, target=replace(target, container_image=image))


def pod_plans(case: Case, run_label: str, rep_index: int, nodes: Sequence[str] = ()) -> list[PodPlan]:
    """One pod per client; with ``nodes`` (`placement`), client N prefers the N-th."""
    claims = claim_names(pvc_of(case), case.clients)
    # the config map named by its repetition as the pod is: one a crashed or failed repetition left (a delete that
    # did not go through) had made the next repetition's create answer 409, and the run stop
    return [PodPlan(name=f"sb-{case.case_id}-{run_label}-r{rep_index}-c{index}",
                    claim=claims[index - 1], config_map=f"sb-{case.case_id}-{run_label}-r{rep_index}-c{index}",
                    client=index,
                    node=nodes[index - 1] if len(nodes) >= case.clients else "")
            for index in range(1, case.clients + 1)]


def made_again(plan: PodPlan, incarnation: int) -> PodPlan:
    """The pod (and its config map, with the rest of the job) made for a client whose pod was deleted mid-run, its
    ``incarnation``-th (2, 3, ...): same claim, same client, same preferred node (one that failed is tainted by then:
    the scheduler places the pod elsewhere)."""
    return replace(plan, name=f"{plan.name}-{incarnation}", config_map=f"{plan.config_map}-{incarnation}")


def laying_out(plan: PodPlan) -> PodPlan:
    """The pod (and its config map) that lays a client's files out on its claim before its case's first repetition
    with faults: same claim, same client, same preferred node."""
    return replace(plan, name=f"{plan.name}-layout", config_map=f"{plan.config_map}-layout")


@dataclass(frozen=True)
class PodLog:
    """What a pod's log says: when fio started (epoch s), fio's JSON text, fio's exit status, its timeline logs."""

    started_s: float | None
    json_text: str
    exit_status: int | None
    logs: tuple[tuple[str, str], ...] = ()  # (file name, text), names as `fio.jobfile.timeline_logs` accepts
    unwritable: str = ""  # the claim's path or device fio's user could not write (fio not started)
    json_bytes: int | None = None  # the size of fio's JSON file as the pod gave it (None: not given)
    json_bytes_read: int = 0  # how much of it the log held

    @property
    def json_cut(self) -> bool:
        """The log holds less of fio's JSON than the pod said it wrote: the log read came short, not fio."""
        return self.json_bytes is not None and self.json_bytes_read < self.json_bytes

    @property
    def whole(self) -> bool:
        """The log holds the script's last line and all of fio's JSON: nothing more to read."""
        return self.exit_status is not None and not self.json_cut


def split_pod_log(log: str) -> PodLog:
    """A pod's log read after its markers.

    Warnings fio writes before the document are left out: without CAP_SYS_ADMIN it cannot flush a block device's
    cache and says "fio: cache invalidation of /dev/storbench failed: Permission denied" (buffered I/O only). A log
    section whose name is not a timeline log's is left out."""
    started: float | None = None
    exit_status: int | None = None
    unwritable = ""
    json_lines: list[str] = []
    logs: dict[str, list[str]] = {}
    section: list[str] | None = None  # the lines of the section being read: fio's JSON, or a log
    json_bytes: int | None = None
    for line in log.splitlines():
        if line.startswith(START_MARKER + " "):
            started = _number(line)
        elif line.startswith(UNWRITABLE_MARKER + " "):
            unwritable = line[len(UNWRITABLE_MARKER) + 1:].strip()
        elif _json_marker(line):
            section = json_lines
            declared = line[len(JSON_MARKER):].strip()
            json_bytes = int(declared) if declared.isascii() and declared.isdigit() else None
        elif line.startswith(LOG_MARKER + " "):
            name = line[len(LOG_MARKER) + 1:].strip()
            section = logs.setdefault(name, []) if timeline_logs([name]) else None
        elif line.startswith(EXIT_MARKER + " "):
            section = None
            status = _number(line)
            exit_status = int(status) if status is not None and status == int(status) else None
        elif section is json_lines and (json_lines or line.startswith("{")):
            json_lines.append(line)  # from the document's first line: fio writes its warnings to the same file
        elif section is not None and section is not json_lines:
            section.append(line)
    return PodLog(started, "\n".join(json_lines), exit_status,
                  tuple((name, "\n".join(lines) + "\n") for name, lines in logs.items()), unwritable, json_bytes,
                  _json_bytes_read(log))


def _json_marker(line: str) -> bool:
    """The line before fio's JSON: the marker, with the file's size after it (or alone: the script before it)."""
    return line == JSON_MARKER or line.startswith(JSON_MARKER + " ")


def _json_bytes_read(log: str) -> int:
    """Bytes of the log's JSON section, from its marker line to the next marker (fio's warnings before the document
    included: the file holds them), each line with its newline. Lines are cut at newlines only, as the pod printed
    them (``splitlines`` also cuts at \\r, \\x85 or \\u2028, whose bytes a count by its lines would miss)."""
    read, inside = 0, False
    for line in log.split("\n"):
        if _json_marker(line):
            read, inside = 0, True
        elif inside and line.startswith((LOG_MARKER + " ", EXIT_MARKER + " ")):
            break
        elif inside:
            read += len(line.encode()) + 1
    return read


def without_logs(log: str) -> str:
    """A pod's log as the repetition's raw output keeps it: the timeline logs' rows left out (they are kept as the
    repetition's logs), their marker lines kept."""
    kept, in_log = [], False
    for line in log.splitlines():
        if line.startswith((LOG_MARKER + " ", EXIT_MARKER + " ", JSON_MARKER, START_MARKER + " ")):
            in_log = line.startswith(LOG_MARKER + " ")
            kept.append(line)
        elif not in_log:
            kept.append(line)
    return "\n".join(kept) + ("\n" if log.endswith("\n") else "")


def _number(line: str) -> float | None:
    """The number after a marker; None if there is none."""
    try:
        value = float(line.split()[1])
    except (IndexError, ValueError):
        return None
    return value if value == value and abs(value) != float("inf") else None


def pod_job_binding(target: PvcTarget) -> JobBinding:
    """How the volume appears in the pods' job files: a file on the mounted claim, or the raw device."""
    if target.volume_mode == "Block":
        return JobBinding(options=(("filename", BLOCK_DEVICE),))
    return JobBinding(options=(("directory", DATA_DIR), ("filename_format", "storbench.$jobnum.$filenum")))


def measured_end_at(case: Case, start_at_s: float) -> float:
    """When the pods' measured section ends: fio waits its startdelay after their common start, then its ramp, then
    runs its runtime (the delay had been left out: the telemetry window, a cut-short client's stall and a pod made
    again's end were that much early)."""
    w = case.workload
    return start_at_s + w.start_delay_s[1] + w.ramp_s + w.runtime_s
