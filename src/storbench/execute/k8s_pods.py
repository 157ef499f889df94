"""The pods and config maps of one repetition of a pvc target (shell): made through the executor (each recorded for
deletion), their logs followed and read back whole (`execute.kubernetes`)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any, Protocol

from storbench.execute.k8s_manifests import EXIT_MARKER, PodPlan, config_map_manifest, pod_manifest, split_pod_log
from storbench.execute.pod_logs import FOLLOW_END_S, LogFollower

LOG_READ_TIMEOUT_S = 10.0  # a pod's log read at the end of a repetition
LOG_READS = 6  # reads of an ended pod's log, 1, 2, ... 5 s apart (15 s in all), until one holds its last line


class PodMaker(Protocol):
    """What the pods need of their executor (`execute.kubernetes.KubernetesExecutor`)."""

    core: Any
    namespace: str
    run_label: str

    def _create(self, kind: str, name: str, created: list[tuple[str, str]], creator: Callable[..., object],
                manifest: dict[str, object]) -> None: ...


class RepetitionPods:
    """The pods and config maps of one repetition: made (recorded for deletion), their logs followed."""

    def __init__(self, executor: PodMaker, target: object, repetition_label: str,
                 created: list[tuple[str, str]]) -> None:
        self.executor, self.target, self.repetition_label, self.created = executor, target, repetition_label, created
        self.followers: dict[str, LogFollower] = {}
        self.made_again: list[tuple[int, str]] = []  # (client, job text) of each pod made again mid-run

    def create(self, plan: PodPlan, job_text: str, start_at: int, end_at: int | None = None) -> None:
        """The pod of ``plan`` with its job; one with ``end_at`` is a client's pod made again mid-run, which runs
        until then (its job is stored with the repetition's)."""
        ex = self.executor
        ex._create("configmap", plan.config_map, self.created, ex.core.create_namespaced_config_map,
                   config_map_manifest(plan.config_map, job_text, ex.run_label))
        ex._create("pod", plan.name, self.created, ex.core.create_namespaced_pod,
                   pod_manifest(plan, self.target, start_at, ex.run_label, self.repetition_label,  # type: ignore[arg-type]
                                end_at_s=end_at))
        if end_at is not None:
            self.made_again.append((plan.client, job_text))
        self.followers[plan.name] = LogFollower(ex.core, plan.name, ex.namespace,
                                                end_marker=f"{EXIT_MARKER} ".encode())

    def log_of(self, name: str, *, ended: bool, again: bool = True) -> str:
        """What the pod printed: its follower's text once its container has ended (a deleted pod's too), or the
        log read now if that is longer (a pod still running when the watchdog fired, a follower cut short or left
        hanging by a node that failed, a stream that ended with its container before its last lines came).
        ``again``: read an ended pod's log again until it is whole (not for a deleted pod or one lost with its
        node: a read of theirs fails the same each time, 404 or the timeout)."""
        follower = self.followers.get(name)
        followed, followed_whole = "", False
        if follower is not None:
            whole = follower.ended.wait(FOLLOW_END_S if ended else 0)
            followed = follower.text
            followed_whole = bool(followed) and split_pod_log(followed).whole
            if whole and followed_whole:
                return followed  # to the script's last line, fio's JSON all there: nothing more
        now, now_whole = "", False
        # a pod that ended: its log read again (up to LOG_READS times, waiting longer each time) until it holds the
        # script's last line and as much of fio's JSON as the pod said it wrote; a read that failed or came short
        # under load had left the follower's cut text (fio's JSON cut mid-way), and three reads a second apart once
        # came short too (the node's log written late)
        reads = LOG_READS if ended and again else 1
        for attempt in range(reads):
            with contextlib.suppress(Exception):  # a deleted pod's is gone: 404; a failed node's does not answer
                read = self.executor.core.read_namespaced_pod_log(
                    name, self.executor.namespace, _request_timeout=LOG_READ_TIMEOUT_S)
                now = read if len(str(read)) > len(now) else now
            now_whole = split_pod_log(now).whole
            if now_whole or attempt + 1 == reads:
                break
            time.sleep(1.0 + attempt)
        if now_whole and not followed_whole:
            return now
        return followed if len(followed) >= len(now) else now

    def stop_following(self) -> None:
        for follower in self.followers.values():
            follower.stop()
