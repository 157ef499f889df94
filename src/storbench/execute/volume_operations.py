"""Kubernetes volume operations run and timed through the API (shell; issue 33): one operation per client, the
clients' in parallel, each from its request to the state a user waits for, seen on a watch of that object (not
polled: the moment the API server tells it). Everything an operation made is deleted after the repetition, also
one that ends early (Ctrl-C, a client past its deadline): the clients are told to stop, make nothing more, and what
they asked for is deleted once their requests have returned. The operations, their objects and their measurements:
`execute.k8s_operations`."""

from __future__ import annotations

import contextlib
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from storbench.errors import UserError
from storbench.execute.k8s_manifests import pvc_of
from storbench.execute.k8s_operations import (
    BIND_COMMAND,
    CHECK_SCRIPT,
    FIRST_IO_COMMAND,
    SEED_SCRIPT,
    SNAPSHOT_GROUP,
    SNAPSHOT_PLURAL,
    SNAPSHOT_VERSION,
    TOKEN_VARIABLE,
    OperationNames,
    OperationResult,
    claim_from,
    expand_done,
    expanded_bytes,
    first_io_done_s,
    operation_measurement,
    operation_text,
    pod_on_claim,
    snapshot_manifest,
    source_claim,
)
from storbench.execute.volume_binding import (
    UNREAD_HINT,
    VolumeBinding,
    bound,
    capacity_bytes,
    condition_types,
    phase,
    snapshot_ready,
    version,
)
from storbench.execute.volume_leftovers import Leftovers
from storbench.model import Case, RepetitionOutcome, Status
from storbench.shell import interrupts_held

Done = Callable[[Any], bool]
ENDING = "the repetition was ending"
CONFLICT = 409  # the API's answer to a create whose name is taken
REQUEST_TIMEOUT_S = 20.0  # a create request given up after this: none outlives an ending repetition's wait
STOP_WAIT_S = 30.0  # how long an ending repetition waits for its clients' requests to make an object to return


class VolumeOperations:
    """One repetition of a volume-operation case: ``run()`` gives its outcome."""

    def __init__(self, core: Any, namespace: str, run_label: str, default_class: str | None, case: Case,
                 rep_index: int, timeout_s: float, binding: VolumeBinding, custom: Any = None) -> None:
        from kubernetes import client  # lazy: 0.24 s, for pvc targets only

        self.core = core
        self.custom = custom or client.CustomObjectsApi(core.api_client)
        self.binding = binding  # the executor's, which knows the classes' binding modes from earlier repetitions
        self.namespace, self.run_label, self.default_class = namespace, run_label, default_class
        self.case, self.rep_index, self.timeout_s = case, rep_index, timeout_s
        self.target = pvc_of(case)
        self.storage_class = self.target.storage_class or default_class  # None: the cluster's default
        # this repetition's objects: a killed session's cleared before, this one's waited for after
        self.leftovers = Leftovers(core, self.custom, namespace, run_label,
                                   OperationNames.prefix(case, run_label, rep_index), REQUEST_TIMEOUT_S)
        self.made: list[tuple[str, str]] = []  # (kind, name) asked for, deleted after the repetition in reverse
        self.texts: dict[int, list[dict[str, object]]] = {}
        self.lock = threading.Condition()
        self.stopping = threading.Event()  # the repetition is ending: no client makes anything more
        self.asking = 0  # requests to make an object sent and not yet returned
        # every client's timed request starts at once, each one's preparation done (its source claim, its seeded
        # data): without it clients whose seed pods took longer had timed theirs seconds apart, one after another,
        # and "N at once" (the point's ops/s summed over clients) was N operations in turn
        # (a client's preparation is up to three waits of timeout_s each: a claim bound, a seed pod, a snapshot)
        self.together = threading.Barrier(case.clients, timeout=timeout_s * 3 + 120)
        self.started: set[int] = set()  # clients past the barrier

    # ---------------------------------------------------------------------------------------------------------
    def run(self) -> RepetitionOutcome:
        started = time.time()
        if stale := self.leftovers.removed(self.timeout_s):  # a killed session's, in this repetition: its names
            return RepetitionOutcome(status=Status.FAILED, started_at_s=started, finished_at_s=time.time(),
                                     job_text="", command=("kubernetes-api",), fio_version="", raw_output="",
                                     stderr_tail="", error=f"{stale[0][0]} {stale[0][1]}, left by an earlier "
                                     f"session in this repetition, not gone within {self.timeout_s:g}s: every "
                                     "create would meet it (storbench k8s cleanup)")

        results: dict[int, OperationResult] = {}
        threads = [threading.Thread(target=self._client, args=(client, results), name=f"storbench-op-{client}",
                                    daemon=True) for client in range(1, self.case.clients + 1)]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(self.timeout_s * 3 + 120)  # each client keeps to its own deadlines
        finally:
            # interrupted, or a client past every deadline: no new object from here; a request already sent is
            # waited for (a client then stops at its next one), so what it makes is on the list before the deletion
            with interrupts_held():  # a Ctrl-C meanwhile waits for the deletion
                self.stopping.set()
                self.together.abort()  # a client still waiting at the start waits no more
                with self.lock:
                    self.lock.wait_for(lambda: self.asking == 0, STOP_WAIT_S)
                with self.lock:
                    made = list(self.made)
                self.leftovers.delete_all(made)
                self.leftovers.removed(STOP_WAIT_S)  # gone before the next case's operations begin
        finished = time.time()
        ordered = [results.get(client) or OperationResult(client, self.case.workload.rw, started, None,
                                                          error="did not finish")
                   for client in range(1, self.case.clients + 1)]
        # a client refused once the repetition was ending comes after the one whose failure ended it
        failed = sorted((r for r in ordered if r.done_s is None or r.checked is False),
                        key=lambda r: r.error.endswith(ENDING))
        job_text = "\n".join(operation_text(self.case, OperationNames.of(self.case, self.run_label, self.rep_index,
                                                                         r.client), self.texts.get(r.client, []))
                             for r in ordered)
        raw = "\n".join(json.dumps(r.to_json(), sort_keys=True) for r in ordered) + "\n"
        clients = tuple(operation_measurement(r, f"{self.case.workload.rw}.{r.client}"
                                                 + (f"@{r.node}" if r.node else ""))
                        for r in ordered if r not in failed)
        if failed:
            timed_out = all("within" in r.error for r in failed)
            first = failed[0]
            why = first.error or "the data read back differs from what was written"
            return RepetitionOutcome(
                status=Status.TIMEOUT if timed_out else Status.FAILED, started_at_s=started, finished_at_s=finished,
                job_text=job_text, command=("kubernetes-api",), fio_version="", raw_output=raw, stderr_tail="",
                error=f"{len(failed)} of {len(ordered)} {self.case.workload.rw} operation(s) failed: client "
                      f"{first.client}: {why}", clients=clients)
        return RepetitionOutcome(status=Status.OK, started_at_s=started, finished_at_s=finished, job_text=job_text,
                                 command=("kubernetes-api",), fio_version="", raw_output=raw, stderr_tail="",
                                 clients=clients)

    def _client(self, client: int, results: dict[int, OperationResult]) -> None:
        names = OperationNames.of(self.case, self.run_label, self.rep_index, client)
        operation = self.case.workload.rw
        requested = time.time()
        try:
            try:
                result = getattr(self, f"_{operation}")(client, names)
            finally:
                if client not in self.started:  # failed before its timed request: the others stop waiting for it
                    self.together.abort()
        except UserError as failure:  # ours (`_Failed`), or a wait's that says what to grant
            result = OperationResult(client, operation, getattr(failure, "requested_s", None) or requested, None,
                                     error=str(failure))
        except Exception as error:  # an API error: this client's operation failed, the others go on
            reason = getattr(error, "reason", None) or str(error).splitlines()[0][:200]
            result = OperationResult(client, operation, requested, None, error=f"{type(error).__name__}: {reason}")
        with self.lock:
            results[client] = result

    # ---------------------------------------------------------------------------------------------------------
    # the operations: what each needs is made before its clock starts

    def _provision(self, client: int, names: OperationNames) -> OperationResult:
        late = self._late()  # known before the clock starts (a pod asked for at once: its scheduling is timed too)
        requested = self._create_claim(client, source_claim(self.target, names.made, self.run_label,
                                                            self.default_class), timed=True)
        if late:
            self._create_pod(client, self._binder(names.pod, names.made))
        done = self._wait_claim(names.made, bound, "Bound", requested)
        return OperationResult(client, "provision", requested, done)

    def _attach(self, client: int, names: OperationNames) -> OperationResult:
        self._bound_source(client, names, detached=True)
        requested = self._create_pod(client, pod_on_claim(names.pod, names.source, self.target, self.run_label,
                                                          list(FIRST_IO_COMMAND)), timed=True)
        log, node = self._pod_output(names.pod, requested)
        done = first_io_done_s(log)
        if done is None:
            raise _Failed(f"pod {names.pod} gave no fio report: {log.strip()[-200:]}", requested)
        if done < requested:  # fio's end is the node's clock: behind this machine's, it had read as 1 ns
            raise _Failed(f"node {node or '?'}'s clock is {requested - done:.2f} s behind this machine's: the attach's "
                          "end (fio's timestamp in the pod) came before its request (sync the clocks, chrony)",
                          requested)
        return OperationResult(client, "attach", requested, done, node=node)

    def _snapshot(self, client: int, names: OperationNames) -> OperationResult:
        self._seeded(client, names)
        requested = self._create_snapshot(client, names)
        done = self._wait_snapshot(names.snapshot, requested)
        return OperationResult(client, "snapshot", requested, done)

    def _restore(self, client: int, names: OperationNames) -> OperationResult:
        token = self._seeded(client, names)
        self._wait_snapshot(names.snapshot, self._create_snapshot(client, names))
        return self._made_from(client, names, "VolumeSnapshot", names.snapshot, token, "restore")

    def _clone(self, client: int, names: OperationNames) -> OperationResult:
        token = self._seeded(client, names)
        return self._made_from(client, names, "PersistentVolumeClaim", names.source, token, "clone")

    def _expand(self, client: int, names: OperationNames) -> OperationResult:
        self._bound_source(client, names)
        made = self.core.read_namespaced_persistent_volume_claim(names.source, self.namespace,
                                                                  _request_timeout=REQUEST_TIMEOUT_S)
        wanted = expanded_bytes(self.target, capacity_bytes(made))
        patch = {"spec": {"resources": {"requests": {"storage": str(wanted)}}}}
        self._note(client, {"patch": names.source, "timed": True, **patch})
        self._start_together(client)
        requested = time.time()
        self.core.patch_namespaced_persistent_volume_claim(names.source, self.namespace, patch,
                                                           _request_timeout=REQUEST_TIMEOUT_S)
        done = self._wait_claim(names.source, lambda claim: expand_done(capacity_bytes(claim), wanted,
                                                                        condition_types(claim)),
                                f"its capacity at {wanted} bytes", requested)
        return OperationResult(client, "expand", requested, done)

    # ---------------------------------------------------------------------------------------------------------
    def _seeded(self, client: int, names: OperationNames) -> str:
        """A source claim with a token written on it (by a pod that then ends): what restore and clone check."""
        token = secrets.token_hex(16)
        self._create_claim(client, source_claim(self.target, names.source, self.run_label, self.default_class))
        if not self._late():  # else the seed pod binds it
            self._wait_claim(names.source, bound, "Bound", time.time())
        seed = pod_on_claim(f"{names.pod}-seed", names.source, self.target, self.run_label,
                            ["/bin/sh", "-c", SEED_SCRIPT], {TOKEN_VARIABLE: token})
        self._pod_output(f"{names.pod}-seed", self._create_pod(client, seed))
        self.leftovers.delete("pod", f"{names.pod}-seed")  # the source is free again (ReadWriteOnce)
        return token

    def _made_from(self, client: int, names: OperationNames, kind: str, source: str, token: str,
                   operation: str) -> OperationResult:
        manifest = claim_from(self.target, names.made, self.run_label, self.default_class, kind=kind, source=source)
        late = self._late()  # then the check pod, made at once, is what has it provisioned
        requested = self._create_claim(client, manifest, timed=True)
        check = pod_on_claim(f"{names.pod}-check", names.made, self.target, self.run_label,
                             ["/bin/sh", "-c", CHECK_SCRIPT])
        checking = self._create_pod(client, check) if late else None
        done = self._wait_claim(names.made, bound, "Bound", requested)
        checking = checking or self._create_pod(client, check)
        log, node = self._pod_output(f"{names.pod}-check", checking)
        return OperationResult(client, operation, requested, done, node=node, checked=log.strip() == token)

    def _late(self) -> bool:
        return self.binding.binds_late(self.storage_class)

    def _binder(self, pod: str, claim: str) -> dict[str, object]:
        return pod_on_claim(f"{pod}-bind", claim, self.target, self.run_label, list(BIND_COMMAND))

    def _bound_source(self, client: int, names: OperationNames, *, detached: bool = False) -> None:
        """The source claim made and Bound; on a class that binds on first consumer by a pod that ends and is gone
        (and, for an attach, whose node no longer holds the volume: the attach timed next is a whole one)."""
        self._create_claim(client, source_claim(self.target, names.source, self.run_label, self.default_class))
        if self._late():
            binder = self._binder(names.pod, names.source)
            name = str(binder["metadata"]["name"])  # type: ignore[index]
            self._pod_output(name, self._create_pod(client, binder))
            self.leftovers.delete("pod", name)
            deadline = self._deadline(time.time())
            if not (self.binding.wait_gone(name, deadline)
                    and (not detached or self.binding.wait_detached(names.source, deadline))):
                raise _Failed(f"pod {name}, which bound claim {names.source}, not gone with the volume detached "
                              f"within {self.timeout_s:g}s (runtime)")
        self._wait_claim(names.source, bound, "Bound", time.time())

    def _start_together(self, client: int) -> None:
        """Wait for every client's preparation (``together``); a client whose preparation failed breaks it."""
        try:
            self.together.wait()
        except threading.BrokenBarrierError:
            raise _Failed(f"another client's preparation failed or took too long: {ENDING}") from None
        self.started.add(client)

    def _create_claim(self, client: int, manifest: dict[str, object], *, timed: bool = False) -> float:
        self._note(client, manifest, timed)
        if timed:
            self._start_together(client)
        with self._asking("claim", str(manifest["metadata"]["name"])):  # type: ignore[index]
            requested = time.time()
            self.core.create_namespaced_persistent_volume_claim(self.namespace, manifest,
                                                             _request_timeout=REQUEST_TIMEOUT_S)
        return requested

    def _create_pod(self, client: int, manifest: dict[str, object], *, timed: bool = False) -> float:
        self._note(client, manifest, timed)
        if timed:
            self._start_together(client)
        with self._asking("pod", str(manifest["metadata"]["name"])):  # type: ignore[index]
            requested = time.time()
            self.core.create_namespaced_pod(self.namespace, manifest, _request_timeout=REQUEST_TIMEOUT_S)
        return requested

    def _create_snapshot(self, client: int, names: OperationNames) -> float:
        manifest = snapshot_manifest(names.snapshot, names.source, self.run_label)
        self._note(client, manifest, self.case.workload.rw == "snapshot")
        if self.case.workload.rw == "snapshot":
            self._start_together(client)
        with self._asking("snapshot", names.snapshot):
            requested = time.time()
            self.custom.create_namespaced_custom_object(SNAPSHOT_GROUP, SNAPSHOT_VERSION, self.namespace,
                                                        SNAPSHOT_PLURAL, manifest, _request_timeout=REQUEST_TIMEOUT_S)
        return requested

    def _note(self, client: int, manifest: dict[str, object], timed: bool = False) -> None:
        with self.lock:
            self.texts.setdefault(client, []).append({**manifest, "timed": True} if timed else manifest)

    @contextlib.contextmanager
    def _asking(self, kind: str, name: str) -> Iterator[None]:
        """Around a request that makes an object: on the list to delete before it is sent, counted while it is
        under way (an ending repetition waits for it to return before deleting); refused once the repetition is
        ending."""
        with self.lock:
            if self.stopping.is_set():
                raise _Failed(f"{kind} {name} not made: {ENDING}")
            self.made.append((kind, name))
            self.asking += 1
        try:
            yield
        except Exception as error:
            if getattr(error, "status", None) == CONFLICT:  # already there, and not made by this request: not ours
                with self.lock:
                    self.made.remove((kind, name))
            raise
        finally:
            with self.lock:
                self.asking -= 1
                self.lock.notify_all()

    # ---------------------------------------------------------------------------------------------------------
    # waits: a watch on the one object, from the version read first (nothing in between is missed)

    def _deadline(self, requested: float) -> float:
        return requested + self.timeout_s

    def _watch(self, read: Callable[[], Any], listing: Callable[..., Any], args: tuple[object, ...], name: str,
               done: Done, what: str, requested: float) -> float:
        from kubernetes import watch  # lazy: 0.24 s, for pvc targets only

        deadline = self._deadline(requested)
        current = read()
        if done(current):
            return time.time()
        seen_version = version(current)
        while time.time() < deadline:
            stream = watch.Watch()  # type: ignore[no-untyped-call]
            try:
                events = stream.stream(  # type: ignore[no-untyped-call]
                    listing, *args, field_selector=f"metadata.name={name}", resource_version=seen_version,
                    timeout_seconds=(left := max(1, int(deadline - time.time()) + 1)),
                    _request_timeout=left + REQUEST_TIMEOUT_S)  # a stream the server stopped answering: given up
                for event in events:
                    seen = event["object"]
                    seen_version = version(seen) or seen_version
                    if event["type"] != "DELETED" and done(seen):
                        return time.time()
                    if time.time() > deadline:
                        break
            except Exception:  # an expired version or a dropped stream: read it again, go on watching
                current = read()
                if done(current):
                    return time.time()
                seen_version = version(current)
            finally:
                stream.stop()  # type: ignore[no-untyped-call]
        raise _Failed(f"{name} not {what} within {self.timeout_s:g}s (runtime)", requested)

    def _wait_claim(self, name: str, done: Done, what: str, requested: float) -> float:
        try:
            return self._watch(lambda: self.core.read_namespaced_persistent_volume_claim(
                name, self.namespace, _request_timeout=REQUEST_TIMEOUT_S),
                               self.core.list_namespaced_persistent_volume_claim, (self.namespace,), name, done,
                               what, requested)
        except _Failed as failure:
            if what == "Bound" and self.binding.unread_class(self.storage_class):
                raise _Failed(f"{failure}; {UNREAD_HINT}", failure.requested_s) from None
            raise

    def _wait_snapshot(self, name: str, requested: float) -> float:
        def read() -> Any:
            return self.custom.get_namespaced_custom_object(SNAPSHOT_GROUP, SNAPSHOT_VERSION, self.namespace,
                                                            SNAPSHOT_PLURAL, name, _request_timeout=REQUEST_TIMEOUT_S)

        return self._watch(read, self.custom.list_namespaced_custom_object,
                           (SNAPSHOT_GROUP, SNAPSHOT_VERSION, self.namespace, SNAPSHOT_PLURAL), name,
                           snapshot_ready, "ready to use", requested)

    def _pod_output(self, name: str, requested: float) -> tuple[str, str]:
        """Wait for a pod to end; its log and node. A pod that fails, or does not end in time, fails the
        operation."""
        def read() -> Any:
            return self.core.read_namespaced_pod(name, self.namespace, _request_timeout=REQUEST_TIMEOUT_S)

        self._watch(read, self.core.list_namespaced_pod, (self.namespace,), name,
                    lambda pod: phase(pod) in ("Succeeded", "Failed"), "ended", requested)
        pod = read()
        log = self.core.read_namespaced_pod_log(name, self.namespace, _request_timeout=REQUEST_TIMEOUT_S)
        if phase(pod) != "Succeeded":
            raise _Failed(f"pod {name} {phase(pod)}: {str(log).strip()[-200:]}", requested)
        return str(log), pod.spec.node_name or ""


class _Failed(UserError):
    def __init__(self, message: str, requested_s: float | None = None) -> None:
        super().__init__(message)
        self.requested_s = requested_s

    def __str__(self) -> str:
        return self.message
