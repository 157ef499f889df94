"""The Kubernetes lab as a lab kind (lab.registry; shell): up for the whole run when the plan has `lab.k8s`, its
`storbench lab k8s` command, and its fault: a client's fio pod deleted mid-run (the executor makes it again)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from storbench.errors import UserError
from storbench.events import LabHealed, LabUp, RunEvent
from storbench.execute.fio_binary import find_fio
from storbench.execute.k8s_access import SELECTOR, core_api
from storbench.execute.k8s_manifests import CLIENT_LABEL, pvc_of
from storbench.faults import FaultOffer, FaultStep, find_offer
from storbench.lab.base import CliOption, LabCommand, LabKindBase, RunLab, Say, StateWatch, timed_run_lab
from storbench.lab.k8s import K8sLab, K8sLabInfo
from storbench.lab.k8s_conf import CSI_STORAGE_CLASS, MAX_NODES
from storbench.lab.k8s_watch import EventWatch
from storbench.model import Case, LabPoint

if TYPE_CHECKING:
    from storbench.config import LoadedPlan
    from storbench.fio.options import FioCapabilities


def _command_options() -> tuple[CliOption, ...]:
    return (CliOption(("--nodes",), {"type": int, "default": 1, "choices": range(1, MAX_NODES + 1),
                                     "metavar": "N", "help": f"nodes (kubelets), 1 to {MAX_NODES} (default 1)"}),
            CliOption(("--csi",), {"action": "store_true", "help": "also the CSI driver and Kubernetes' CSI "
                                   "sidecars (scripts/build-csi.sh first): StorageClass storbench-csi"}))


def _command_up(lab: K8sLab, args: argparse.Namespace, say: Say) -> None:
    started = time.time()
    info = lab.up(find_fio(), nodes=args.nodes, csi=args.csi)
    say(f"k8s lab: up in {time.time() - started:.0f}s with {info.nodes} node(s); KUBECONFIG={info.kubeconfig}")
    say(f"StorageClass {info.storage_class} (host-path, dynamic)"
        f"{f' and {CSI_STORAGE_CLASS} (CSI)' if info.csi else ''}; fio image {info.fio_image}")


def _command_down(lab: K8sLab, say: Say) -> None:
    lab.down()
    say(f"k8s lab: down; pods, daemons, mounts, bridges and {lab.root} removed")


def delete_client_pod(kubeconfig: str, namespace: str, client: int) -> str:
    """Delete the running fio pod of client ``client`` (storbench's, by its labels) as `kubectl delete pod` does:
    SIGTERM, then its grace period. What was deleted, on which node."""
    core = core_api(kubeconfig)
    listed = core.list_namespaced_pod(  # type: ignore[attr-defined]
        namespace, label_selector=f"{SELECTOR},{CLIENT_LABEL}={client}").items
    running = [pod for pod in listed
               if pod.metadata.deletion_timestamp is None and pod.status.phase in ("Pending", "Running")]
    if not running:
        raise UserError(f"k8s lab: no running fio pod of client {client} in namespace {namespace}")
    for pod in running:
        core.delete_namespaced_pod(pod.metadata.name, namespace)  # type: ignore[attr-defined]
    return ", ".join(f"{pod.metadata.name} on {pod.spec.node_name or '?'}" for pod in running)


class K8sKind(LabKindBase):
    """The Kubernetes lab: up for the whole run when the plan has `lab.k8s` (its pods are the run's clients)."""

    name = "k8s"
    command: LabCommand[K8sLab] = LabCommand(
        help="a Kubernetes cluster on this machine (scripts/build-kubernetes.sh first)",
        open=K8sLab, up=_command_up, down=_command_down, options=_command_options)

    faults: tuple[FaultOffer, ...] = (
        FaultOffer("k8s", "delete", r"client\.[0-9]+", "", "delete the client's fio pod (SIGTERM, then its grace "
                   "period): storbench makes it again at once on the same claim, as a controller would, and the new "
                   "pod runs the rest of the measured section; the client's blackout is the time to its first I/O"),
        FaultOffer("k8s", "fail", r"node\.[0-9]+", "power it on again", "power a node off (its pods stop, its "
                   "kubelet and runtime die, its link is cut): its pods are made again elsewhere once Kubernetes "
                   "deletes them (see lab.k8s.out_of_service_after); back on after the repetition"),
        FaultOffer("k8s", "taint", r"node\.[0-9]+", "remove the taint", "give a node Kubernetes' out-of-service "
                   "taint (node.kubernetes.io/out-of-service=nodeshutdown:NoExecute): its pods are deleted and, "
                   "once it is NotReady, their volumes detached at once"),
    )

    def fault_targets(self, loaded: LoadedPlan) -> dict[str, range]:
        k8s = loaded.config.lab.k8s if loaded.config.lab else None
        return {"node": range(1, k8s.nodes + 1), "client": range(1, min(loaded.config.clients) + 1)} if k8s else {}

    def for_run(self, loaded: LoadedPlan, caps: FioCapabilities) -> RunLab[K8sLabInfo] | None:
        lab_config = loaded.config.lab.k8s if loaded.config.lab else None
        if lab_config is None:
            return None
        lab = K8sLab()
        return timed_run_lab(
            lambda: lab.up(caps.binary, nodes=lab_config.nodes, block_volumes=lab_config.block_volumes,
                           block_size_bytes=lab_config.block_size, csi=lab_config.csi),
            lab.down, lambda info, seconds: LabUp("k8s", f"KUBECONFIG={info.kubeconfig}", seconds))

    def watch(self, case: Case, running: Mapping[LabPoint, object]) -> StateWatch | None:
        """Kubernetes' events about the pods of a pvc case on the lab, through each repetition with faults."""
        try:
            target = pvc_of(case)
        except TypeError:
            return None
        info = K8sLab().info()
        return EventWatch(info.kubeconfig, target.namespace) if info is not None else None

    def timed_faults(self, case: Case, steps: Sequence[FaultStep]) -> tuple[FaultStep, ...]:
        """With lab.k8s.out_of_service_after: each `fail node.N` followed by `taint node.N` that long after (within
        the measured section, and while the node is still failed: a node restored before then is healthy, and a
        taint on it had evicted its pods, a second fault), undone with it."""
        after = case.lab.k8s.out_of_service_after_s if case.lab.k8s is not None else None
        if after is None:
            return ()
        end_s = case.workload.runtime_s
        return tuple(FaultStep(step.at_s + after, "taint", step.target, step.restore_after_s - after
                               if step.restore_after_s is not None else None)
                     for step in steps if step.action == "fail" and step.at_s + after < end_s
                     and (step.restore_after_s is None or step.restore_after_s > after))

    def fault(self, step: FaultStep, case: Case, running: Mapping[LabPoint, object], *, restore: bool) -> str:
        if find_offer(step, self.faults) is None:
            return super().fault(step, case, running, restore=restore)
        lab = K8sLab()
        if step.action in ("fail", "taint"):
            node = lab.node(int(step.target.partition(".")[2]))
            if step.action == "taint":
                return f"k8s lab: {lab.taint_out_of_service(node, on=not restore)}"
            return f"k8s lab: {lab.restore_node(node) if restore else lab.fail_node(node)}"
        info = lab.info()
        if info is None:
            raise UserError("k8s lab: not up", hint="storbench lab k8s up")
        try:
            target = pvc_of(case)
        except TypeError as error:
            raise UserError(f"k8s lab: {error}: only a pvc target's pods can be deleted") from None
        client = int(step.target.partition(".")[2])
        if not 1 <= client <= case.clients:
            raise UserError(f"k8s lab: {step.target}: this case has {case.clients} client(s)")
        return f"k8s lab: pod {delete_client_pod(info.kubeconfig, target.namespace, client)} deleted"


    def settle(self, case: Case, running: Mapping[LabPoint, object]) -> RunEvent | None:
        """After a repetition with faults: every failed node powered on again and Ready, every out-of-service
        taint removed."""
        lab = K8sLab()
        info = lab.info()
        if info is None or case.lab.k8s is None:
            return None
        started = time.time()
        return LabHealed("k8s", time.time() - started) if lab.heal(info) else None


KIND = K8sKind()
