"""What a repetition's fio pods said, judged into one outcome (`judge_pods`), and the scheduler's word for a pod
that can never run where its volume is (`bound_elsewhere`). Pure: the executor (`execute.kubernetes`) reads the
pods and their logs; this turns them into the run's model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from storbench.execute.k8s_manifests import BLOCK_DEVICE, FIO_USER, pvc_of, split_pod_log, without_logs
from storbench.fio.jobfile import MAX_LOG_CHARS
from storbench.fio.merge import client_measurement, merge_in_sequence
from storbench.fio.outcome import client_fault
from storbench.fio.parse import parse_fio_json
from storbench.model import Case, ClientMeasurement, RepetitionOutcome, Status, is_size_based


@dataclass(frozen=True)
class PodResult:
    pod: str
    node: str
    phase: str
    log: str
    client: int = 1  # the client's number, from 1
    deleted: bool = False  # deleted while it ran (a fault): a pod made again went on with its job
    why: str = ""  # why a pod never ran (it cannot be scheduled: its volume is bound to a node it cannot run on)
    never_ran: bool = False  # made again after a deletion, still pending when the measured section ended


def judge_pods(case: Case, results: Sequence[PodResult], expected: int, *, job_text: str, started_at_s: float,
               finished_at_s: float, timeout_s: float, measured_end_s: float = 0.0) -> RepetitionOutcome:
    """Pods' logs -> one client measurement per client; a missing, failed or silent pod fails the repetition,
    unless it was deleted while it ran (a fault) and a pod made again went on with its job: a client's pods one
    after the other are one client (`fio.merge.merge_in_sequence`), their timeline logs one log per client
    (``timeline_iops.1.log.client.2``: fio's name, then the client's). A client whose last pod was ended by a
    fault with nothing after it (lost with its node, or its successor never ran) did no I/O from then to the
    measured section's end (``measured_end_s``, epoch s; 0 unknown): its rates span to it."""
    clients: list[ClientMeasurement] = []
    ends_s: list[float] = []
    versions: list[str] = []
    logs: dict[str, str] = {}
    error = ""
    by_client: dict[int, list[PodResult]] = {}
    for result in results:
        by_client.setdefault(result.client, []).append(result)
    for client, pods in sorted(by_client.items()):
        parts: list[tuple[ClientMeasurement, int]] = []
        for result in pods:
            if result.never_ran:  # the client never came back within the measured section: its timeline says so
                continue
            said = split_pod_log(result.log)
            for name, text in said.logs:  # at most MAX_LOG_CHARS a log, as fio's own on this machine
                logs[f"{name}.client.{client}"] = (logs.get(f"{name}.client.{client}", "") + text)[:MAX_LOG_CHARS]
            problem = ""
            if result.why and result.phase == "CannotStart":
                problem = f"pod {result.pod} cannot start: {result.why}"
            elif result.why:
                problem = (f"pod {result.pod} cannot run anywhere: {result.why} (node-bound storage: the pod cannot "
                           "move to another node)")
            elif said.unwritable:
                problem = unwritable_problem(result.pod, said.unwritable, pvc_of(case).pod_security)
            elif not said.json_text.strip():
                problem = f"pod {result.pod} ({result.phase}) returned no fio output"
            elif said.json_cut:  # lines lost whole may leave a document that parses, short of some of its bins
                problem = (f"pod {result.pod}: fio output unreadable: its log came short ({said.json_bytes_read:,} "
                           f"of the {said.json_bytes or 0:,} bytes fio wrote): the Kubernetes API handed over a cut "
                           "log, read again until its reads ran out")
            else:
                try:
                    output = parse_fio_json(said.json_text)
                except ValueError as exc:
                    problem = f"pod {result.pod}: fio output unreadable: {exc}"
            if problem:
                error = error or ("" if result.deleted else problem)
                continue
            measurement = client_measurement(output, f"{result.pod}@{result.node}" if result.node else result.pod,
                                             size_based=is_size_based(case.workload.rw))
            parts.append((measurement, output.timestamp_ms))
            versions.append(output.fio_version)
            if result.deleted:  # ended by its deletion: its I/O until then counts, its exit does not
                continue
            fault = client_fault(measurement, case.workload.rw, case.workload.rwmixread)
            if said.exit_status not in (0, None) or result.phase != "Succeeded":
                error = error or f"pod {result.pod} {result.phase}, fio exit status {said.exit_status}"
            elif fault:
                error = error or fault.describe(f"pod {result.pod}", f" in pod {result.pod}")
        if not parts:  # none of its pods said what it did: its I/O is unknown, and the sum without it too low
            error = error or (f"client {client}: no fio output from its pod" + ("s " if len(pods) > 1 else " ")
                              + ", ".join(f"{r.pod} ({r.phase}{', deleted' if r.deleted else ''})" for r in pods))
            continue
        cut_short = pods[-1].deleted or pods[-1].never_ran
        if len(pods) == 1 and parts[0][1] > 0 and not cut_short:
            ends_s.append(parts[0][1] / 1000.0)
        clients.append(merge_in_sequence(parts, ", then ".join(m.client for m, _ in parts),
                                         until_ms=round(measured_end_s * 1000) if cut_short else 0))
    if len(by_client) < expected and not error:
        error = f"{expected - len(by_client)} pods missing"
    timed_out = any("watchdog" in r.phase for r in results)
    status = Status.TIMEOUT if timed_out else Status.FAILED if error else Status.OK
    if timed_out:
        error = f"watchdog: pods did not finish within {timeout_s:g}s ({error or 'still running'})"
    return RepetitionOutcome(
        status=status, started_at_s=started_at_s, finished_at_s=finished_at_s, job_text=job_text,
        command=("kubernetes", *[r.pod for r in results]), fio_version=versions[0] if versions else "",
        raw_output="\n".join(f"### pod {r.pod} on {r.node} ({r.phase})\n{without_logs(r.log)}" for r in results),
        stderr_tail="",
        error=error, clients=tuple(clients),
        # time-based jobs all run ramp + runtime: the spread of their end times (fio's timestamp_ms, on each
        # node's clock) is the spread of their starts, to the millisecond (the pods' shell clock has seconds);
        # a client whose pod was made again ends at its own time, so only clients with one pod count; a size-based
        # job's pods end when their share is done, which says nothing of when they started
        start_skew_s=(max(ends_s) - min(ends_s)) if len(ends_s) >= 2 and not is_size_based(case.workload.rw) else None,
        logs=tuple(sorted(logs.items())),
        # fio's own end where every client had one pod that ran through (its timestamp_ms; the latest of them): the
        # planned end had left out a layout fio did before measuring (a fresh claim's files) and ran past a
        # size-based job that ended early, so the telemetry window read the layout, or the pods' deletion
        measured_end_s=(max(ends_s) if ends_s and len(ends_s) == len(clients) else measured_end_s) or None)


def layout_problem(case: Case, results: Sequence[PodResult]) -> str:
    """Why the pods that lay a case's files out (fio's set-up alone) did not: "" when each one's fio said it ended
    cleanly, whatever the pod's phase (the API may show it running a while after its script's last line)."""
    for result in results:
        said = split_pod_log(result.log)
        if said.exit_status == 0:
            continue
        if result.why:
            return f"pod {result.pod} cannot {'start' if result.phase == 'CannotStart' else 'run'}: {result.why}"
        if said.unwritable:
            return unwritable_problem(result.pod, said.unwritable, pvc_of(case).pod_security)
        status = "unknown" if said.exit_status is None else said.exit_status
        return f"pod {result.pod} {result.phase}, fio exit status {status}"
    return ""


def unwritable_problem(pod: str, path: str, pod_security: str) -> str:
    """Why fio never started: its user could not write the claim's directory or device, and what to change."""
    if pod_security == "restricted":
        why = ("the runtime does not give the device the pod's user (containerd: "
               "device_ownership_from_security_context)" if path == BLOCK_DEVICE
               else "the claim's StorageClass does not apply the pod's fsGroup")
        return (f"pod {pod}: {path} is not writable by fio's user ({FIO_USER}, pod_security: restricted): {why}; set "
                "pod_security: baseline on the target (fio as the image's root, no capabilities)")
    return (f"pod {pod}: {path} is not writable by the image's user (pod_security: baseline): a read-only volume, or "
            "an image whose user is not root")


# what the scheduler says when a node-bound volume rules a node out (Kubernetes 1.33; earlier versions)
NODE_AFFINITY_CONFLICT = ("didn't match PersistentVolume's node affinity", "volume node affinity conflict")


# a container that waits for one of these never starts by itself (an image name that cannot be, a pull the
# policy forbids, a ConfigMap or Secret it needs missing); these two, once the start budget has passed
NEVER_STARTS = frozenset({"InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError",
                          "CreateContainerError"})
PULL_FAILING = frozenset({"ErrImagePull", "ImagePullBackOff"})


def cannot_start(pod: object, past_budget: bool) -> str | None:
    """Why a pending pod will not start within the repetition, from its container's waiting reason (an image that
    cannot be pulled, once the start budget has passed: a registry may be slow) or, past the budget, the
    scheduler's word that no node fits; None while it may yet start. Its watchdog would say only "timeout", hours
    later on a grid."""
    status = getattr(pod, "status", None)
    if getattr(status, "phase", None) != "Pending":
        return None
    for container in getattr(status, "container_statuses", None) or []:
        waiting = getattr(getattr(container, "state", None), "waiting", None)
        reason = getattr(waiting, "reason", None)
        if reason in NEVER_STARTS or (past_budget and reason in PULL_FAILING):
            return f"{reason}: {getattr(waiting, 'message', None) or 'no message'}"
    if past_budget:
        for condition in getattr(status, "conditions", None) or []:
            if condition.type == "PodScheduled" and condition.status == "False" and condition.reason == "Unschedulable":
                return f"not scheduled within its start budget: {condition.message or 'no message'}"
    return None


def bound_elsewhere(pod: object) -> str | None:
    """Why a pending pod can never be scheduled while its volume stays where it is — the scheduler's message when
    a node-bound volume (a local PersistentVolume, a zonal disk) rules out every node it could run on — or None."""
    status = getattr(pod, "status", None)
    if getattr(status, "phase", None) != "Pending":
        return None
    for condition in getattr(status, "conditions", None) or []:
        if (condition.type == "PodScheduled" and condition.status == "False" and condition.reason == "Unschedulable"
                and any(words in (condition.message or "") for words in NODE_AFFINITY_CONFLICT)):
            return str(condition.message)
    return None
