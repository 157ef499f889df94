"""Run a case as fio pods on PersistentVolumeClaims through the Kubernetes API (shell).

Per repetition: a ConfigMap with each client's job file, one pod per client (spread over the nodes) that waits
for a common start time, fio's JSON read back from the pods' logs, then pods and ConfigMaps deleted. Claims
(one per client for ReadWriteOnce, one shared for ReadWriteMany) live for the run; the namespace too when
storbench created it. Everything carries the label app.kubernetes.io/managed-by=storbench and storbench/run.

storbench deletes only what it made: the pods, config maps, claims and namespace it created in this run. A claim
that already exists is used only when it carries this run's labels (an earlier attempt of the same run); any other
claim of the same name is refused, never written to or deleted.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from storbench.errors import UserError
from storbench.execute.base import PLAIN_FIO, FioSetup, client_jobs, stored_job_text
from storbench.execute.k8s_manifests import (
    MANAGED_BY,
    RUN_LABEL,
    claim_manifest,
    claim_names,
    config_map_manifest,
    made_for_run,
    pod_manifest,
    pod_plans,
    pvc_of,
    split_pod_log,
)
from storbench.fio.jobfile import JobBinding
from storbench.fio.outcome import client_fault
from storbench.fio.parse import client_measurement, parse_fio_json
from storbench.model import Case, ClientMeasurement, RepetitionOutcome, Status

POLL_S = 0.5
SELECTOR = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items())


@dataclass(frozen=True)
class PodResult:
    pod: str
    node: str
    phase: str
    log: str


def _client(kubeconfig: str | None) -> object:
    from kubernetes import client, config

    try:
        api_client = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    except Exception as error:
        raise UserError(f"cannot load kubeconfig {kubeconfig or '(default)'}: {error}",
                        hint="pass kubeconfig: in the pvc target, set $KUBECONFIG, or run `storbench lab k8s up`") \
            from None
    return client.CoreV1Api(api_client)


class KubernetesExecutor:
    name = "kubernetes"

    def __init__(self, kubeconfig: str | None, namespace: str, run_label: str,
                 default_storage_class: str | None = None) -> None:
        self.core = _client(kubeconfig)
        self.default_storage_class = default_storage_class
        self.namespace = namespace
        self.run_label = run_label
        self.created_namespace = False
        self.claims: set[str] = set()  # claims this run may use (created, or found with this run's labels)
        self.created_claims: set[str] = set()  # claims created by this executor: deleted at close

    def ensure_namespace(self) -> None:
        from kubernetes.client.exceptions import ApiException

        core = self.core
        try:
            core.read_namespace(self.namespace)  # type: ignore[attr-defined]
            return
        except ApiException as error:
            if error.status != 404:
                raise UserError(f"kubernetes: cannot read namespace {self.namespace}: {error.reason}") from None
        try:
            core.create_namespace({"apiVersion": "v1", "kind": "Namespace",  # type: ignore[attr-defined]
                                   "metadata": {"name": self.namespace, "labels": dict(MANAGED_BY)}})
        except ApiException as error:
            if error.status != 409:  # 409: made meanwhile by someone else, so not storbench's to delete
                raise UserError(f"kubernetes: cannot create namespace {self.namespace}: {error.reason}",
                                hint="check the RBAC rules in the README") from None
            return
        self.created_namespace = True

    def ensure_claims(self, case: Case) -> None:
        from kubernetes.client.exceptions import ApiException

        target = pvc_of(case)
        for name in dict.fromkeys(claim_names(target, case.clients)):
            if name in self.claims:
                continue
            try:
                self.core.create_namespaced_persistent_volume_claim(  # type: ignore[attr-defined]
                    self.namespace, claim_manifest(name, target, self.run_label, self.default_storage_class))
            except ApiException as error:
                if error.status != 409:
                    raise UserError(f"kubernetes: cannot create claim {name}: {error.reason}",
                                    hint="check the StorageClass and the RBAC rules in the README") from None
                self._adopt_claim(name)
            else:
                self.created_claims.add(name)
            self.claims.add(name)

    def _adopt_claim(self, name: str) -> None:
        """A claim of this name exists: use it only if storbench made it for this run."""
        from kubernetes.client.exceptions import ApiException

        try:
            claim = self.core.read_namespaced_persistent_volume_claim(name, self.namespace)  # type: ignore[attr-defined]
        except ApiException as error:
            raise UserError(f"kubernetes: claim {self.namespace}/{name} exists but cannot be read: {error.reason}",
                            hint="check the RBAC rules in the README") from None
        if not made_for_run(claim.metadata.labels, self.run_label):
            raise UserError(f"kubernetes: claim {self.namespace}/{name} already exists and is not storbench's for "
                            f"this run (no label {RUN_LABEL}={self.run_label}); storbench will not write to it or "
                            "delete it", hint="rename the target, set another namespace, or remove the claim")

    def job_texts(self, case: Case, binding: JobBinding, rep_index: int) -> tuple[str, ...]:
        return client_jobs(case, binding, rep_index)

    def run_case(self, case: Case, job_texts: Sequence[str], rep_index: int, timeout_s: float,
                 fio: FioSetup = PLAIN_FIO) -> RepetitionOutcome:
        """One pod per client, all starting at a common time; the watchdog counts from then. The pods' image
        brings its own fio (``fio`` is not used; each pod reports its version)."""
        self.ensure_namespace()
        self.ensure_claims(case)
        plans = pod_plans(case, self.run_label, rep_index)
        target = pvc_of(case)
        start_budget = target.start_budget_s
        start_at = int(time.time() + start_budget)
        repetition_label = f"{case.case_id}-{self.run_label}-r{rep_index}"
        started = time.time()
        results: list[PodResult] = []
        created: list[tuple[str, str]] = []  # (kind, name) made for this repetition, deleted after it
        try:
            for plan, job_text in zip(plans, job_texts, strict=True):
                self._create("configmap", plan.config_map, created, self.core.create_namespaced_config_map,  # type: ignore[attr-defined]
                             config_map_manifest(plan.config_map, job_text, self.run_label))
                self._create("pod", plan.name, created, self.core.create_namespaced_pod,  # type: ignore[attr-defined]
                             pod_manifest(plan, target, start_at, self.run_label, repetition_label))
            results = self._wait(plans, deadline=started + start_budget + timeout_s)
        finally:
            self._delete(created)
        finished = time.time()
        return judge_pods(case, results, len(plans), job_text=stored_job_text(job_texts), started_at_s=started,
                          finished_at_s=finished, timeout_s=start_budget + timeout_s)

    def _create(self, kind: str, name: str, created: list[tuple[str, str]], creator: Callable[..., object],
                manifest: dict[str, object]) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            creator(self.namespace, manifest)
        except ApiException as error:
            already = " (one of that name exists and is not storbench's to replace)" if error.status == 409 else ""
            raise UserError(f"kubernetes: cannot create {kind} {self.namespace}/{name}: {error.reason}{already}",
                            hint="check the RBAC rules in the README, or run `storbench k8s cleanup`") from None
        created.append((kind, name))

    def _wait(self, plans: Sequence[object], deadline: float) -> list[PodResult]:
        names = [p.name for p in plans]  # type: ignore[attr-defined]
        while True:
            pods = self.core.list_namespaced_pod(  # type: ignore[attr-defined]
                self.namespace, label_selector=f"storbench/run={self.run_label}").items
            by_name = {p.metadata.name: p for p in pods if p.metadata.name in names}
            done = all(name in by_name and by_name[name].status.phase in ("Succeeded", "Failed") for name in names)
            if done or time.time() > deadline:
                break
            time.sleep(POLL_S)
        results = []
        for name in names:
            pod = by_name.get(name)
            phase = pod.status.phase if pod is not None else "Missing"
            node = (pod.spec.node_name or "") if pod is not None else ""
            log = ""
            if pod is not None and phase in ("Succeeded", "Failed", "Running"):
                with contextlib.suppress(Exception):
                    log = self.core.read_namespaced_pod_log(name, self.namespace)  # type: ignore[attr-defined]
            if phase not in ("Succeeded", "Failed"):
                phase = f"{phase} (watchdog)"
            results.append(PodResult(pod=name, node=node, phase=phase, log=log))
        return results

    def _delete(self, created: Sequence[tuple[str, str]]) -> None:
        """Delete the pods and config maps this repetition created (and nothing else)."""
        for kind, name in reversed(created):
            with contextlib.suppress(Exception):
                if kind == "pod":
                    self.core.delete_namespaced_pod(name, self.namespace,  # type: ignore[attr-defined]
                                                    grace_period_seconds=0)
                else:
                    self.core.delete_namespaced_config_map(name, self.namespace)  # type: ignore[attr-defined]

    def close(self) -> None:
        """Delete the claims this executor created (and the namespace if it created it)."""
        for name in sorted(self.created_claims):
            with contextlib.suppress(Exception):
                self.core.delete_namespaced_persistent_volume_claim(name, self.namespace)  # type: ignore[attr-defined]
        if self.created_namespace:
            with contextlib.suppress(Exception):
                self.core.delete_namespace(self.namespace)  # type: ignore[attr-defined]
        self.claims.clear()
        self.created_claims.clear()
        self.created_namespace = False


def judge_pods(case: Case, results: Sequence[PodResult], expected: int, *, job_text: str, started_at_s: float,
               finished_at_s: float, timeout_s: float) -> RepetitionOutcome:
    """Pods' logs -> one client measurement per pod; any missing, failed or silent pod fails the repetition."""
    clients: list[ClientMeasurement] = []
    ends_s: list[float] = []
    versions: list[str] = []
    error = ""
    for result in results:
        _began, json_text, exit_status = split_pod_log(result.log)
        label = f"{result.pod}@{result.node}" if result.node else result.pod
        if not json_text.strip():
            error = error or f"pod {result.pod} ({result.phase}) returned no fio output"
            continue
        try:
            output = parse_fio_json(json_text)
        except ValueError as exc:
            error = error or f"pod {result.pod}: fio output unreadable: {exc}"
            continue
        measurement = client_measurement(output, label)
        clients.append(measurement)
        versions.append(output.fio_version)
        if output.timestamp_ms > 0:
            ends_s.append(output.timestamp_ms / 1000.0)
        fault = client_fault(measurement, case.workload.rw)
        if exit_status not in (0, None) or result.phase != "Succeeded":
            error = error or f"pod {result.pod} {result.phase}, fio exit status {exit_status}"
        elif fault:
            error = error or fault.describe(f"pod {result.pod}", f" in pod {result.pod}")
    if len(results) < expected and not error:
        error = f"{expected - len(results)} pods missing"
    timed_out = any("watchdog" in r.phase for r in results)
    status = Status.TIMEOUT if timed_out else Status.FAILED if error else Status.OK
    if timed_out:
        error = f"watchdog: pods did not finish within {timeout_s:g}s ({error or 'still running'})"
    return RepetitionOutcome(
        status=status, started_at_s=started_at_s, finished_at_s=finished_at_s, job_text=job_text,
        command=("kubernetes", *[r.pod for r in results]), fio_version=versions[0] if versions else "",
        raw_output="\n".join(f"### pod {r.pod} on {r.node} ({r.phase})\n{r.log}" for r in results), stderr_tail="",
        error=error, clients=tuple(clients),
        # time-based jobs all run ramp + runtime: the spread of their end times (fio's timestamp_ms, on each
        # node's clock) is the spread of their starts, to the millisecond (the pods' shell clock has seconds)
        start_skew_s=(max(ends_s) - min(ends_s)) if len(ends_s) >= 2 else None)


def cleanup(kubeconfig: str | None) -> list[str]:
    """Delete everything labelled app.kubernetes.io/managed-by=storbench; returns what was deleted."""
    core = _client(kubeconfig)
    deleted = []
    for namespace in core.list_namespace().items:  # type: ignore[attr-defined]
        name = namespace.metadata.name
        for kind, lister, deleter in (
                ("pod", core.list_namespaced_pod, core.delete_namespaced_pod),  # type: ignore[attr-defined]
                ("configmap", core.list_namespaced_config_map,  # type: ignore[attr-defined]
                 core.delete_namespaced_config_map),  # type: ignore[attr-defined]
                ("persistentvolumeclaim", core.list_namespaced_persistent_volume_claim,  # type: ignore[attr-defined]
                 core.delete_namespaced_persistent_volume_claim)):  # type: ignore[attr-defined]
            for item in lister(name, label_selector=SELECTOR).items:
                with contextlib.suppress(Exception):
                    deleter(item.metadata.name, name)
                    deleted.append(f"{kind} {name}/{item.metadata.name}")
        if (namespace.metadata.labels or {}).get("app.kubernetes.io/managed-by") == "storbench":
            with contextlib.suppress(Exception):
                core.delete_namespace(name)  # type: ignore[attr-defined]
                deleted.append(f"namespace {name}")
    return deleted
