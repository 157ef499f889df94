"""Run a case as fio pods on PersistentVolumeClaims through the Kubernetes API (shell).

Per repetition: a ConfigMap with each client's job file, one pod per client (spread over the nodes) that waits
for a common start time, fio's JSON read back from the pods' logs, then pods and ConfigMaps deleted. Claims
(one per client for ReadWriteOnce, one shared for ReadWriteMany) live for the run; the namespace too when
storbench created it. Everything carries the label app.kubernetes.io/managed-by=storbench and storbench/run.

storbench deletes only what it made: the pods, config maps, claims and namespace it created in this run, an
earlier attempt of the same run included (a session killed before it removed them). A claim that already exists is
used, and deleted at the end, only when it carries this run's labels; any other claim of the same name is refused,
never written to or deleted. A namespace that exists is removed only when it carries this run's labels.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from storbench.errors import UserError
from storbench.execute.base import PLAIN_FIO, FioSetup, client_jobs, stored_job_text
from storbench.execute.k8s_access import ClusterAccess, core_api
from storbench.execute.k8s_manifests import (
    RUN_LABEL,
    RUNTIME_VARIABLE,
    NodeView,
    PodPlan,
    claim_manifest,
    claim_names,
    laying_out,
    made_again,
    made_for_run,
    measured_end_at,
    placement,
    pod_plans,
    pvc_of,
    run_labels,
    with_image,
)
from storbench.execute.k8s_pods import RepetitionPods
from storbench.execute.kubelet_stats import KubeletSampler
from storbench.execute.node_images import NodeImages
from storbench.execute.pod_results import PodResult, bound_elsewhere, cannot_start, judge_pods, layout_problem
from storbench.execute.volume_binding import VolumeBinding
from storbench.execute.volume_operations import REQUEST_TIMEOUT_S, VolumeOperations
from storbench.fio.jobfile import JobBinding, continued_job
from storbench.model import Case, PvcTarget, RepetitionOutcome, is_volume_operation
from storbench.shell import interrupts_held
from storbench.telemetry.series import TelemetrySource

POLL_S = 0.25
POD_SECURITY_ENFORCE = "pod-security.kubernetes.io/enforce"  # a namespace's Pod Security admission level
NAMESPACE_READY_S = 30.0  # how long a namespace storbench made gets to take pods
MIN_CONTINUED_S = 2.0  # a client's pod deleted with less of the measured section left is not made again
LIST_TIMEOUT_S = 10.0  # a poll of the run's pods: given up (and taken again) after this
MAX_INCARNATIONS = 4  # at most this many pods a client per repetition (its first and those made again)
NEVER_RAN_S = 5.0  # a pod made again still pending this long after the measured section: it never ran in it
STALE_GONE_S = 60.0  # a pod or config map a dead session of the run left, deleted: how long it may take to go
CREATE_ATTEMPTS = 3  # a create answered 429 or 5xx (a busy API server, a webhook's timeout) is asked this often
LOST_S = 5.0  # a pod whose script printed its end and that the API shows running this long after: lost with its node


class KubernetesExecutor:
    name = "kubernetes"

    def __init__(self, kubeconfig: str | None, namespace: str, run_label: str,
                 default_storage_class: str | None = None, *, context: str | None = None,
                 default_image: str | None = None, pod_security: str = "restricted") -> None:
        self.core = core_api(kubeconfig, context)
        self.cluster = ClusterAccess(kubeconfig, context)
        self._readings_api: object | None = None  # the kubelets' reader: no retries (`telemetry`)
        self._binding: VolumeBinding | None = None  # volume operations' classes (`execute.volume_binding`)
        self._images = NodeImages(self.core, namespace, run_label, REQUEST_TIMEOUT_S)
        self.default_storage_class = default_storage_class
        self.default_image = default_image  # the lab's fio image, for targets that name none
        self.namespace = namespace
        self.pod_security = pod_security  # the level a namespace storbench makes enforces
        self.run_label = run_label
        self.created_namespace = False
        self.claims: set[str] = set()  # this run's claims (created, or found with its labels): deleted at close

    def ensure_namespace(self) -> None:
        from kubernetes.client.exceptions import ApiException  # lazy: 0.24 s, for pvc targets only

        core = self.core
        try:
            found = core.read_namespace(self.namespace)  # type: ignore[attr-defined]
            # made by an earlier attempt of this run (killed before it removed it): this run's to remove
            self.created_namespace = made_for_run(found.metadata.labels, self.run_label)
            return
        except ApiException as error:
            if error.status != 404:
                raise UserError(f"kubernetes: cannot read namespace {self.namespace}: {error.reason}") from None
        try:
            core.create_namespace({"apiVersion": "v1", "kind": "Namespace",  # type: ignore[attr-defined]
                                   "metadata": {"name": self.namespace, "labels": {
                                       **run_labels(self.run_label), POD_SECURITY_ENFORCE: self.pod_security}}})
        except ApiException as error:
            if error.status != 409:  # 409: made meanwhile by someone else, so not storbench's to delete
                raise UserError(f"kubernetes: cannot create namespace {self.namespace}: {error.reason}",
                                hint="storbench k8s rbac prints what storbench needs") from None
            return
        self.created_namespace = True
        # a new namespace takes no pod until its controller has made the "default" service account (403 before)
        deadline = time.time() + NAMESPACE_READY_S
        while time.time() < deadline:
            try:
                core.read_namespaced_service_account("default", self.namespace)  # type: ignore[attr-defined]
                return
            except ApiException:
                time.sleep(0.2)

    def ensure_claims(self, case: Case) -> None:
        from kubernetes.client.exceptions import ApiException  # lazy: 0.24 s, for pvc targets only

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
                                    hint="check the StorageClass, and the rules `storbench k8s rbac` prints") from None
                self._adopt_claim(name)
            self.claims.add(name)

    def _adopt_claim(self, name: str) -> None:
        """A claim of this name exists: use it (and delete it at close) only if storbench made it for this run."""
        from kubernetes.client.exceptions import ApiException  # lazy: 0.24 s, for pvc targets only

        try:
            claim = self.core.read_namespaced_persistent_volume_claim(name, self.namespace)  # type: ignore[attr-defined]
        except ApiException as error:
            raise UserError(f"kubernetes: claim {self.namespace}/{name} exists but cannot be read: {error.reason}",
                            hint="storbench k8s rbac prints what storbench needs") from None
        if not made_for_run(claim.metadata.labels, self.run_label):
            raise UserError(f"kubernetes: claim {self.namespace}/{name} already exists and is not storbench's for "
                            f"this run (no label {RUN_LABEL}={self.run_label}); storbench will not write to it or "
                            "delete it", hint="rename the target, set another namespace, or remove the claim")

    def job_texts(self, case: Case, binding: JobBinding, rep_index: int) -> tuple[str, ...]:
        if is_volume_operation(case.workload.rw):  # no fio job: the operation's manifests are kept as its text
            return ()
        return client_jobs(case, binding, rep_index)

    def telemetry(self, case: Case, interval_s: float) -> TelemetrySource | None:
        """The cluster's nodes, each kubelet's summary (`execute.kubelet_stats`): so a verdict names the busy
        node."""
        if self._readings_api is None:  # made once: a kubeconfig load and a connection pool, not one a repetition
            self._readings_api = core_api(self.cluster.kubeconfig, self.cluster.context, retries=False)
        return KubeletSampler(self._readings_api, interval_s)

    def start_delay_s(self, case: Case) -> float:
        """fio starts in the pods this long after `run_case` is called (they wait for a common start)."""
        return pvc_of(case).start_budget_s

    def lay_out(self, case: Case, job_texts: Sequence[str], timeout_s: float, fio: FioSetup = PLAIN_FIO) -> str:
        """Each client's layout job (`fio.layout.layout_job`) in a pod of its own on its claim, all at
        once, each on the node its repetition's pod prefers: a pod's fio would lay its files out after the common
        start, across the faults' times. The claims keep the files for the repetitions after."""
        case = with_image(case, self.default_image)
        self.ensure_namespace()
        self.ensure_claims(case)
        target = pvc_of(case)
        plans = [laying_out(plan) for plan in pod_plans(case, self.run_label, 0, self.placement(target, case.clients))]
        laid = list(job_texts)
        started = time.time()
        created: list[tuple[str, str]] = []
        pods = RepetitionPods(self, target, f"{case.case_id}-{self.run_label}-layout", created)
        results: list[PodResult] = []
        try:
            for plan, job_text in zip(plans, laid, strict=True):
                pods.create(plan, job_text, math.floor(started))
            results = self._wait(pods, plans, laid, started, deadline=started + target.start_budget_s + timeout_s,
                                 budget_s=target.start_budget_s)
        except UserError as error:  # a pod or config map that cannot be made: the repetition lays out itself
            return error.message
        finally:
            with interrupts_held():
                pods.stop_following()
                self._delete(created)
        return layout_problem(case, results)

    def run_case(self, case: Case, job_texts: Sequence[str], rep_index: int, timeout_s: float,
                 fio: FioSetup = PLAIN_FIO) -> RepetitionOutcome:
        """One pod per client, all starting at a common time; the watchdog counts from then. The pods' image
        brings its own fio (``fio`` is not used; each pod reports its version). A client's pod deleted while it
        runs (a fault, or anyone) is made again at once on the same claim, as a controller would, and runs the
        rest of the measured section."""
        case = with_image(case, self.default_image)
        self.ensure_namespace()
        if is_volume_operation(case.workload.rw):
            if case.workload.rw == "attach":  # the image on every node first: an attach's time has no pull in it
                self._images.warm(pvc_of(case), case.workload.runtime_s)
            if self._binding is None:  # one for the run: each class's binding mode read once
                from kubernetes import client  # lazy: 0.24 s, for pvc targets only

                self._binding = VolumeBinding(self.core, client.StorageV1Api(self.core.api_client),  # type: ignore[attr-defined]
                                              self.namespace, REQUEST_TIMEOUT_S)
            return VolumeOperations(self.core, self.namespace, self.run_label, self.default_storage_class, case,
                                    rep_index, case.workload.runtime_s, self._binding).run()
        self.ensure_claims(case)
        target = pvc_of(case)
        plans = pod_plans(case, self.run_label, rep_index, self.placement(target, case.clients))
        start_budget = target.start_budget_s
        started = time.time()
        start_at = math.ceil(started + start_budget)
        repetition_label = f"{case.case_id}-{self.run_label}-r{rep_index}"
        results: list[PodResult] = []
        created: list[tuple[str, str]] = []  # (kind, name) made for this repetition, deleted after it
        pods = RepetitionPods(self, target, repetition_label, created)
        measured_end = measured_end_at(case, start_at)
        try:
            for plan, job_text in zip(plans, job_texts, strict=True):
                pods.create(plan, job_text, start_at)
            results = self._wait(pods, plans, job_texts, measured_end,
                                 deadline=started + start_budget + timeout_s, budget_s=start_budget)
        finally:
            with interrupts_held():  # the pods deleted, whatever is pressed meanwhile
                pods.stop_following()
                self._delete(created)
        finished = time.time()
        return judge_pods(case, results, len(plans), job_text=stored_job_text(job_texts, pods.made_again),
                          started_at_s=started, finished_at_s=finished, timeout_s=start_budget + timeout_s,
                          measured_end_s=measured_end)

    def placement(self, target: PvcTarget, clients: int) -> tuple[str, ...]:
        """The node each client's pod prefers (`k8s_manifests.placement`); none when the nodes cannot be listed
        (a user's cluster may not let storbench read them)."""
        from kubernetes.client.exceptions import ApiException  # lazy: start-up time, the client loads only here

        try:
            listed = self.core.list_node().items  # type: ignore[attr-defined]
        except ApiException:
            return ()
        return placement([NodeView(node.metadata.name, node.metadata.labels or {}, bool(node.spec.unschedulable),
                                   tuple((taint.key, taint.effect) for taint in node.spec.taints or ()))
                          for node in listed], dict(target.node_selector), clients)

    def _create(self, kind: str, name: str, created: list[tuple[str, str]], creator: Callable[..., object],
                manifest: dict[str, object]) -> None:
        from kubernetes.client.exceptions import ApiException  # lazy: 0.24 s, for pvc targets only

        for attempt in range(CREATE_ATTEMPTS):
            try:
                creator(self.namespace, manifest)
                break
            except ApiException as error:  # 429, or the server's own trouble (a webhook's timeout): asked again
                if (error.status == 429 or (error.status or 0) >= 500) and attempt + 1 < CREATE_ATTEMPTS:
                    time.sleep(2.0 ** attempt)
                    continue
                if error.status == 409 and self._this_runs(kind, name):
                    if attempt > 0:
                        break  # the answer lost, the object stored: the create asked again meets its own
                    if self._removed(kind, name):  # left by this run's session that died mid-repetition (kill -9),
                        continue  # now resumed: its old job or pod, removed, made anew
                already = " (one of that name exists and is not storbench's to replace)" if error.status == 409 else ""
                raise UserError(f"kubernetes: cannot create {kind} {self.namespace}/{name}: {error.reason}{already}",
                                hint="check the RBAC rules (`storbench k8s rbac`), or run `storbench k8s cleanup`"
                                ) from None
        created.append((kind, name))

    def _removed(self, kind: str, name: str) -> bool:
        """Delete the pod or config map ``name`` (this run's) and wait until it is gone, within STALE_GONE_S."""
        from kubernetes.client.exceptions import ApiException  # lazy: 0.24 s, for pvc targets only

        self._delete([(kind, name)])
        reader = self.core.read_namespaced_pod if kind == "pod" else self.core.read_namespaced_config_map  # type: ignore[attr-defined]
        deadline = time.monotonic() + STALE_GONE_S
        while time.monotonic() < deadline:
            try:
                reader(name, self.namespace)
            except ApiException as error:
                if error.status == 404:  # gone (a 403 or a server's trouble says nothing of it)
                    return True
            time.sleep(0.5)
        return False

    def _this_runs(self, kind: str, name: str) -> bool:
        """Whether the pod or config map ``name`` carries this run's label (it may be read: `k8s rbac`'s get)."""
        with contextlib.suppress(Exception):  # unreadable: not known to be this run's
            reader = self.core.read_namespaced_pod if kind == "pod" else self.core.read_namespaced_config_map  # type: ignore[attr-defined]
            return bool((reader(name, self.namespace).metadata.labels or {}).get(RUN_LABEL) == self.run_label)
        return False

    def _wait(self, pods: RepetitionPods, plans: Sequence[PodPlan], job_texts: Sequence[str], measured_end_s: float,
              deadline: float, budget_s: float) -> list[PodResult]:
        """Until every client's newest pod has ended (or the deadline): a pod deleted before it ended is made again
        with the rest of its job while enough of the measured section is left."""
        current = {plan.client: plan for plan in plans}  # the pod running each client's job now
        runs: dict[int, list[PodPlan]] = {plan.client: [plan] for plan in plans}
        gone: set[str] = set()  # pods deleted while they ran
        stuck: dict[str, str] = {}  # pods that can never be scheduled, and why
        first_seen: dict[str, float] = {}  # when each pod was first listed
        cannot: set[str] = set()  # of those, pods that will not start (an image, a config, no node within budget)
        never_ran: set[str] = set()  # pods made again that had not started when the measured section ended
        lost_since: dict[str, float] = {}  # pods whose fio ended that the API still shows running: their node failed
        nodes: dict[str, str] = {}
        phases: dict[str, str] = {}
        while True:
            listed = self._pods_listed()
            if listed is None:  # the API did not answer this time: asked again, within the repetition's deadline
                if time.time() > deadline:
                    break
                time.sleep(POLL_S)
                continue
            by_name = {p.metadata.name: p for p in listed}
            for name, pod in by_name.items():
                nodes[name] = pod.spec.node_name or nodes.get(name, "")
                phases[name] = pod.status.phase
                if (why := bound_elsewhere(pod)) is not None:
                    stuck[name] = why
                # each pod's start budget from when it was first seen (a pod made again mid-run gets its own)
                elif (why := cannot_start(pod, time.time() - first_seen.setdefault(name, time.time()) > budget_s)
                      ) is not None:
                    stuck[name] = why
                    cannot.add(name)
            for plan in current.values():
                follower = pods.followers.get(plan.name)
                if (follower is not None and follower.said_end.is_set() and plan.name not in gone
                        and phases.get(plan.name) in ("Running", "Pending")):
                    lost_since.setdefault(plan.name, time.time())
            lost = {name for name, since in lost_since.items() if time.time() - since >= LOST_S}
            if time.time() > measured_end_s + NEVER_RAN_S:  # e.g. its volume still attached to a failed node
                never_ran.update(plan.name for client, plan in current.items()
                                 if plan is not runs[client][0] and phases.get(plan.name) == "Pending")
            for client, plan in list(current.items()):
                pod = by_name.get(plan.name)
                ended = pod is not None and pod.status.phase in ("Succeeded", "Failed")
                deleted = pod is None or getattr(pod.metadata, "deletion_timestamp", None) is not None
                if plan.name in gone or ended or not deleted:
                    continue
                gone.add(plan.name)
                text = continued_job(job_texts[client - 1], RUNTIME_VARIABLE)
                if (text is None or len(runs[client]) >= MAX_INCARNATIONS
                        or measured_end_s - time.time() < MIN_CONTINUED_S):
                    continue
                again = made_again(runs[client][0], len(runs[client]) + 1)
                pods.create(again, text, 0, end_at=math.ceil(measured_end_s))
                runs[client].append(again)
                current[client] = again
            over = time.time() > measured_end_s + NEVER_RAN_S  # a lost pod is done once nothing can replace it
            done = all(plan.name in gone or plan.name in stuck or plan.name in never_ran or (over and plan.name in lost)
                       or phases.get(plan.name) in ("Succeeded", "Failed") for plan in current.values())
            if done or time.time() > deadline:
                break
            time.sleep(POLL_S)
        results = []
        for client in sorted(runs):
            for plan in runs[client]:
                name = plan.name
                phase = ("Deleted" if name in gone else "CannotStart" if name in cannot
                         else "Unschedulable" if name in stuck
                         else "NeverStarted" if name in never_ran else "Lost" if name in lost
                         else phases.get(name, "Missing"))
                log = (pods.log_of(name, ended=phase in ("Succeeded", "Failed", "Deleted", "Lost"),
                                   again=phase in ("Succeeded", "Failed"))
                       if name not in stuck and name not in never_ran else "")
                if phase not in ("Succeeded", "Failed", "Deleted", "Unschedulable", "CannotStart", "NeverStarted",
                                 "Lost"):
                    phase = f"{phase} (watchdog)"
                # a pod lost with its node ended by a fault, as a deleted one: its I/O until then counts
                results.append(PodResult(pod=name, node=nodes.get(name, ""), phase=phase, log=log, client=client,
                                         deleted=name in gone or name in lost, why=stuck.get(name, ""),
                                         never_ran=name in never_ran and name not in stuck))
        return results

    def _pods_listed(self) -> list[Any] | None:
        """This run's pods, or None when the API did not answer within LIST_TIMEOUT_S or answered that it could
        not now (429 too many requests, a 5xx): a poll taken again, not the end of the run (it had raised, the
        repetition unstored, on one busy moment of a real cluster's API server)."""
        from kubernetes.client.exceptions import ApiException  # lazy: start-up time, the client loads only here
        from urllib3.exceptions import HTTPError  # lazy: as the client it comes with

        try:
            return list(self.core.list_namespaced_pod(  # type: ignore[attr-defined]
                self.namespace, label_selector=f"storbench/run={self.run_label}",
                _request_timeout=LIST_TIMEOUT_S).items)
        except ApiException as error:
            if error.status == 429 or (error.status or 0) >= 500:
                return None
            raise UserError(f"kubernetes: cannot list the run's pods in {self.namespace}: {error.reason}",
                            hint="grant the rules `storbench k8s rbac` prints") from None
        except (HTTPError, OSError):  # no answer in time, a connection dropped
            return None

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
        """Delete this run's claims, made by this executor or found with the run's labels (and the namespace if it
        made it, or found it with them)."""
        for name in sorted(self.claims):
            with contextlib.suppress(Exception):
                self.core.delete_namespaced_persistent_volume_claim(name, self.namespace)  # type: ignore[attr-defined]
        if self.created_namespace:
            with contextlib.suppress(Exception):
                self.core.delete_namespace(self.namespace)  # type: ignore[attr-defined]
        self.claims.clear()
        self.created_namespace = False

