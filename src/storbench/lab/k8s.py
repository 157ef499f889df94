"""A real Kubernetes cluster on this machine (shell): etcd, kube-apiserver, kube-controller-manager and
kube-scheduler on the lab's bridge, and N nodes, each a kubelet with its own containerd in a network namespace of
its own; locally built images, a dynamic host-path StorageClass and local block volumes.

`up` is a no-op when the lab answers; `down` removes every pod, daemon, mount, network namespace (with the
iptables rules in its nodes' namespaces) and bridge it made, restores the sysctls the kubelet changes, and deletes
the lab directory.

The lab directory is root's and 0700 (lab.labdir); etcd answers only TLS clients with a certificate from the
lab's CA (k8s_conf.etcd_command). `down` kills the daemons it recorded when it started them, and the containerd
shims that serve this lab's containerd sockets (`lab.k8s_host.shims`): never a process picked by its command line
alone. What the lab does to the machine outside its daemons (loop devices, sysctls, namespaces,
mounts) is `lab.k8s_host`'s.
"""

from __future__ import annotations

import json
import os
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import yaml

from storbench.errors import UserError
from storbench.lab.base import status_line
from storbench.lab.k8s_api import AdminApi
from storbench.lab.k8s_conf import (
    APISERVER_PORT,
    CSI_BINARIES,
    CSI_DRIVER,
    CSI_STORAGE_CLASS,
    ETCD_CLIENT_PORT,
    NODE_ADDRESS,
    NODE_TAINT_OUT_OF_SERVICE,
    PAUSE_IMAGE,
    STORAGE_CLASS,
    LabNode,
    block_pv_manifest,
    block_storage_class_manifest,
    certificate_extensions,
    cni_config,
    containerd_config,
    csi_commands,
    csi_manifests,
    csi_node_command,
    daemon_commands,
    inner_batch,
    kubeconfig,
    kubelet_config,
    lab_nodes,
    network_batch,
    node_commands,
    openssl_commands,
    storage_class_manifest,
)
from storbench.lab.k8s_host import (
    claim_hostpath_root,
    delete_network,
    detach_loop_devices,
    kill_cluster,
    kill_containers,
    kill_shims,
    loop_device,
    remove_lab_hostpath_volumes,
    restore_host_state,
    save_host_state,
    shims,
    signal_containers,
    unix_socket_answers,
    unmount_all,
)
from storbench.lab.k8s_images import pause_image
from storbench.lab.k8s_registry import pull_everywhere, serve_fio_image
from storbench.lab.lab_claim import claims_lab, frees_lab, frees_names, owns_names
from storbench.lab.labdir import LabRoot, default_lab_dir, every_step, kill_daemons, port_open, require_tools
from storbench.lab.process import kill_all
from storbench.shell import attempt, run
from storbench.trusted_files import trusted_program

DEFAULT_LAB_DIR = default_lab_dir()

KUBERNETES_VERSION = "1.33.13"
# a failed node's kubelet cannot reach the API server (iptables in its namespace) from the moment it fails
API_DROP = ("-p", "tcp", "-d", NODE_ADDRESS, "--dport", str(APISERVER_PORT), "-j", "DROP")
FIO_REPORT_S = 5.0  # how long a failing node's fio gets to stop and print what it did
LOG_DRAIN_S = 1.0  # then how long the API server's log streams get to pass on its last lines


def binaries_dir() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "storbench" / f"kubernetes-v{KUBERNETES_VERSION}"


def csi_dir() -> Path:
    """The newest build of scripts/build-csi.sh (the driver and Kubernetes' CSI sidecars)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return (cache / "storbench" / "csi").resolve()


@dataclass(frozen=True)
class K8sLabInfo:
    root: str
    kubeconfig: str
    server: str
    storage_class: str
    fio_image: str
    nodes: int = 1
    csi: bool = False  # the lab's CSI driver and its StorageClass (CSI_STORAGE_CLASS)

    @property
    def lab_nodes(self) -> tuple[LabNode, ...]:
        return lab_nodes(self.nodes)


class K8sLab(LabRoot):
    def __init__(self, root: Path | None = None) -> None:
        super().__init__(root, DEFAULT_LAB_DIR / "k8s")
        self.pki = self.root / "pki"
        self.api = AdminApi(self.pki)

    def info(self) -> K8sLabInfo | None:
        if not self.dir.exists():
            return None
        try:
            return K8sLabInfo(**json.loads(self.state.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def running(self) -> bool:
        return self.info() is not None and self.api.ready()

    def status(self) -> str:
        return status_line("k8s", self.root, self.info(), self.api.ready, lambda info: (
            f"{_nodes_words(info.lab_nodes)}, Kubernetes {KUBERNETES_VERSION}; KUBECONFIG={info.kubeconfig}; "
            f"StorageClass {info.storage_class}"
            f"{f' and {CSI_STORAGE_CLASS} (CSI: {CSI_DRIVER})' if info.csi else ''}; image {info.fio_image}"))

    # ---- up ---------------------------------------------------------------------------------------------------

    @claims_lab
    @owns_names("k8s")
    def up(self, fio_binary: str, *, nodes: int = 1, block_volumes: int = 3,
           block_size_bytes: int = 512 * 1024**2, csi: bool = False) -> K8sLabInfo:
        current = self.info()
        if current is not None and (current.nodes, current.csi) == (nodes, csi) and self.running():
            self.heal(current)  # a kept lab a killed run left with a node failed or tainted: whole first
            return current
        self.down()
        binaries = binaries_dir()
        for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"):
            _check_built(binaries / name, "scripts/build-kubernetes.sh (about 10 min once; cached)")
        for name in CSI_BINARIES if csi else ():
            _check_built(csi_dir() / name, "scripts/build-csi.sh (about 8 min once; cached)")
        require_tools("k8s", ("etcd", "containerd", "runc", "ctr", "openssl", "ip", "nsenter", "skopeo",
                              "docker-registry", "htpasswd", "busybox"),
                      hint="run sudo storbench setup --k8s")
        members = lab_nodes(nodes)
        before = claim_hostpath_root()  # refused here when it is not root's own; made now when missing
        self.dir.ensure()
        self._hostpath_before.write_text(json.dumps({"made_root": before is None, "names": before or []}))
        for directory in ("pki", "log", "etcd", "images"):
            (self.root / directory).mkdir(parents=True, exist_ok=True)
        for node in members:
            for directory in ("containerd", "cni", "kubelet", "kubelet-pki", "pod-logs", "cni-addresses"):
                (Path(node.dir(str(self.root))) / directory).mkdir(parents=True, exist_ok=True)
        try:
            save_host_state(self.root)
            self._certificates(members)
            self._configs(members)
            self._network(members)
            commands = daemon_commands(str(self.root), str(binaries))
            self._start("etcd", commands["etcd"])
            self._wait(lambda: port_open("127.0.0.1", ETCD_CLIENT_PORT), "etcd", 30)
            self._start("kube-apiserver", commands["kube-apiserver"])
            self._wait(self.api.ready, "kube-apiserver", 90)
            self._start("kube-controller-manager", commands["kube-controller-manager"])
            self._start("kube-scheduler", commands["kube-scheduler"])
            images = self._build_images()
            fio_image = serve_fio_image(self.root, self.dir, fio_binary, members)
            if csi:
                self._start_csi()
            for node in members:
                self.start_node(node, str(binaries), images, csi=csi)
            for node in members:
                self._wait(partial(self.api.node_ready, node.name), f"node {node.name} Ready", 120)
                if csi:
                    self._wait(partial(self.api.csi_registered, node.name), f"CSI driver on {node.name}", 60)
            pull_everywhere(self.api, self._wait, fio_image, members, self.root)
            self.api.apply(storage_class_manifest(), "/apis/storage.k8s.io/v1/storageclasses")
            self.api.apply(block_storage_class_manifest(), "/apis/storage.k8s.io/v1/storageclasses")
            for index in range(1, block_volumes + 1):
                device = loop_device(self.root, index, block_size_bytes)
                self.api.apply(block_pv_manifest(f"storbench-block-{index}", device, block_size_bytes,
                                              members[(index - 1) % len(members)]),
                            "/api/v1/persistentvolumes")
        except BaseException:
            self.down()
            raise
        info = K8sLabInfo(root=str(self.root), kubeconfig=str(self.root / "admin.kubeconfig"),
                          server=f"https://{NODE_ADDRESS}:{APISERVER_PORT}", storage_class=STORAGE_CLASS,
                          fio_image=fio_image, nodes=nodes, csi=csi)
        self.state.write_text(json.dumps(info.__dict__))
        return info

    def start_node(self, node: LabNode, binaries: str, images: list[Path] | None = None, *, csi: bool) -> None:
        """A node's containerd (its images imported when given), the CSI driver's node plugin (with ``csi``) and
        kubelet, in its namespace."""
        commands = node_commands(str(self.root), binaries, node)
        if csi:
            registry = Path(node.dir(str(self.root))) / "kubelet" / "plugins_registry"
            registry.mkdir(parents=True, exist_ok=True)
            (Path(node.dir(str(self.root))) / "csi").mkdir(exist_ok=True)
            self._start(f"csi-node-{node.index}", csi_node_command(str(self.root), str(csi_dir()), node))
        self._socket(node).unlink(missing_ok=True)  # a killed containerd's: the kubelet must find the new one
        self._start(f"containerd-{node.index}", commands[f"containerd-{node.index}"])
        self._wait(lambda: unix_socket_answers(self._socket(node)), f"containerd of {node.name}", 30)
        for path in images or []:
            run(["ctr", "-a", str(self._socket(node)), "-n", "k8s.io", "images", "import", "--snapshotter", "native",
                 str(path)], timeout_s=120)
        self._start(f"kubelet-{node.index}", commands[f"kubelet-{node.index}"])

    def _start_csi(self) -> None:
        """The snapshot CRDs, the CSI driver's objects, its controller and Kubernetes' sidecars."""
        crds = sorted((csi_dir() / "crd").glob("*.yaml"))
        for path in crds:
            self.api.apply(yaml.safe_load(path.read_text()), "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        self._wait(self.api.snapshots_served, "the VolumeSnapshot API", 30)
        for collection, manifest in csi_manifests():
            self.api.apply(manifest, collection)
        (self.root / "csi" / "state").mkdir(parents=True, exist_ok=True)
        for name, argv in csi_commands(str(self.root), str(csi_dir())).items():
            self._start(name, argv)

    def _socket(self, node: LabNode) -> Path:
        return Path(node.dir(str(self.root))) / "containerd" / "containerd.sock"

    def _certificates(self, nodes: tuple[LabNode, ...]) -> None:
        for name, text in certificate_extensions(nodes).items():
            (self.pki / name).write_text(text)
        for command in openssl_commands(str(self.pki), nodes):
            run(command, timeout_s=60)

    def _configs(self, nodes: tuple[LabNode, ...]) -> None:
        server = f"https://{NODE_ADDRESS}:{APISERVER_PORT}"
        ca = str(self.pki / "ca.crt")
        for name, cert, user in (("admin", "admin", "storbench-admin"),
                                 ("controller-manager", "controller-manager", "system:kube-controller-manager"),
                                 ("scheduler", "scheduler", "system:kube-scheduler")):
            (self.root / f"{name}.kubeconfig").write_text(
                kubeconfig(server, ca, str(self.pki / f"{cert}.crt"), str(self.pki / f"{cert}.key"), user))
        for node in nodes:
            node_dir = node.dir(str(self.root))
            client = f"kubelet-client-{node.index}"
            Path(f"{node_dir}/kubelet.kubeconfig").write_text(kubeconfig(
                server, ca, str(self.pki / f"{client}.crt"), str(self.pki / f"{client}.key"),
                f"system:node:{node.name}"))
            Path(f"{node_dir}/containerd/config.toml").write_text(containerd_config(node_dir))
            Path(f"{node_dir}/cni/10-storbench.conflist").write_text(cni_config(node, node_dir))
            Path(f"{node_dir}/kubelet-config.json").write_text(kubelet_config(
                node, node_dir, ca, str(self.pki / f"kubelet-{node.index}.crt"),
                str(self.pki / f"kubelet-{node.index}.key")))

    def _network(self, nodes: tuple[LabNode, ...]) -> None:
        delete_network(self.root)
        run(["ip", "-batch", "-"], input_text=network_batch(nodes), timeout_s=30)
        for node in nodes:
            run(["ip", "-n", node.namespace, "-batch", "-"], input_text=inner_batch(node), timeout_s=30)

    def _start(self, name: str, argv: list[str]) -> None:
        self.dir.start(name, argv, self.root / "log" / f"{name}.log")

    def _wait(self, ready: Callable[[], bool], what: str, timeout_s: float) -> None:
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if ready():
                return
            time.sleep(0.5)
        logs = sorted((self.root / "log").glob("*.log"), key=lambda p: p.stat().st_mtime)
        tail = logs[-1].read_text(errors="replace").strip().splitlines()[-2:] if logs else []
        raise UserError(f"k8s lab: {what} not ready within {timeout_s:g}s",
                        hint=f"see {self.root / 'log'}: {' | '.join(tail)[:300]}")

    def _build_images(self) -> list[Path]:
        """The pause image as an archive every node's containerd imports (the sandbox of every pod)."""
        path = self.root / "images" / "pause.tar"
        path.write_bytes(pause_image(PAUSE_IMAGE))
        return [path]

    # -----------------------------------------------------------------------------------------------------------
    # a node's failure (issue 33): powered off, and back

    def node(self, index: int) -> LabNode:
        info = self.info()
        if info is None:
            raise UserError("k8s lab: not up", hint="storbench lab k8s up")
        if not 1 <= index <= info.nodes:
            raise UserError(f"k8s lab: node.{index}: the lab has {info.nodes} node(s)")
        return LabNode(index)

    def fail_node(self, node: LabNode) -> str:
        """The node loses power, as the API server sees it: first its kubelet can no longer reach the API server
        (it cannot report what follows); its containers get SIGTERM, so each fio stops its I/O at once and prints
        what it did up to now, which the API server still streams from the kubelet; then its containers,
        kubelet, containerd and CSI node plugin are killed and its link is cut. Marked failed before the first step:
        a failure that stopped half way is restored as a whole one (`node_failed`)."""
        self._powered_off(node).touch()
        run([*node.enter(), "iptables", "-w", "-I", "OUTPUT", *API_DROP], timeout_s=30)
        stopped = signal_containers(self._socket(node), "SIGTERM", wait_s=FIO_REPORT_S)
        time.sleep(LOG_DRAIN_S)  # the pods' last lines reach the API server's log streams
        self._stop_node(node)
        run(["ip", "link", "set", node.host_veth, "down"], timeout_s=30)
        return f"{node.name} powered off ({stopped} container(s) stopped, kubelet and containerd killed, link cut)"

    def _stop_node(self, node: LabNode) -> None:
        """The node's containers, kubelet, containerd, CSI node plugin and shims killed (none running: nothing)."""
        kill_containers(self._socket(node))
        names = {f"kubelet-{node.index}", f"containerd-{node.index}", f"csi-node-{node.index}"}
        kill_daemons([d for d in self.dir.daemons() if d.name in names])
        kill_all(shims(str(self._socket(node))))

    def _powered_off(self, node: LabNode) -> Path:
        return Path(node.dir(str(self.root))) / "powered-off"  # the node's failure, from its first step to its end

    def heal(self, info: K8sLabInfo) -> list[str]:
        """Every failed node powered on again and Ready, then every out-of-service taint removed: what each said."""
        return [*(self.restore_node(n) for n in info.lab_nodes if self.node_failed(n)),
                *(self.taint_out_of_service(n, on=False) for n in info.lab_nodes if self.tainted_out_of_service(n))]

    def restore_node(self, node: LabNode) -> str:
        """Power back: its link up, its containerd, kubelet (and CSI node plugin) started again; what the node held
        (images, pod directories) is still there, as on a disk. What a failure that stopped half way left running
        is stopped first; the node counts as failed until it is Ready."""
        self._stop_node(node)
        run(["ip", "link", "set", node.host_veth, "up"], timeout_s=30)
        attempt([*node.enter(), "iptables", "-w", "-D", "OUTPUT", *API_DROP])
        self.start_node(node, str(binaries_dir()), csi=(info := self.info()) is not None and info.csi)
        self._wait(lambda: self.api.node_ready(node.name), f"node {node.name} Ready", 120)
        self._powered_off(node).unlink(missing_ok=True)
        return f"{node.name} powered on and Ready"

    def taint_out_of_service(self, node: LabNode, *, on: bool) -> str:
        """Kubernetes' out-of-service taint on the node, or off it: with it, the pods on a NotReady node are deleted
        at once and their volumes detached without the 6-minute wait."""
        self.api.out_of_service(node.name, on=on)
        return f"{node.name} {'tainted' if on else 'untainted'} {NODE_TAINT_OUT_OF_SERVICE}"

    def tainted_out_of_service(self, node: LabNode) -> bool:
        return any(t.get("key") == NODE_TAINT_OUT_OF_SERVICE for t in self.api.taints(node.name))

    def node_failed(self, node: LabNode) -> bool:
        """Whether the node failed and was not restored: marked so, or its link down."""
        if self._powered_off(node).exists():
            return True
        links = run(["ip", "-o", "link", "show", node.host_veth], timeout_s=30)
        return "state DOWN" in links or ",UP" not in links.split(">")[0]

    # -----------------------------------------------------------------------------------------------------------
    # down

    @property
    def _hostpath_before(self) -> Path:
        return self.root / "hostpath-before.json"

    def _hostpath_volumes(self) -> list[str]:
        """The host paths of the PersistentVolumes of the lab's host-path StorageClass, while its API server
        answers ([] when it does not)."""
        try:
            listed = self.api.request("/api/v1/persistentvolumes")
        except (OSError, ValueError, ssl.SSLError):
            return []
        items = listed.get("items", []) if isinstance(listed, dict) else []
        return [str(path) for item in items if isinstance(item, dict)
                if (spec := item.get("spec", {})).get("storageClassName") == STORAGE_CLASS
                and isinstance(path := (spec.get("hostPath") or {}).get("path"), str)]

    @frees_lab
    @frees_names("k8s")
    def down(self) -> None:
        if not self.dir.exists():
            return
        of_volumes: list[str] = []
        sockets = sorted(self.root.glob("nodes/*/containerd/containerd.sock"))
        daemons = self.dir.daemons()
        # every step whatever another raises (a network left had kept the host's sysctls changed); the directory,
        # which finds what is left, goes only when all went
        every_step(lambda: of_volumes.extend(self._hostpath_volumes() if daemons else []),
                   *(partial(kill_containers, address) for address in sockets), partial(kill_cluster, daemons),
                   *(partial(kill_shims, address) for address in sockets),
                   partial(unmount_all, self.root), partial(detach_loop_devices, self.root),
                   partial(delete_network, self.root), partial(restore_host_state, self.root),
                   lambda: remove_lab_hostpath_volumes(self._hostpath_before, of_volumes))
        self.dir.remove()

def _check_built(path: Path, build: str) -> None:
    if not path.exists():
        raise UserError(f"k8s lab: {path} is missing", hint=f"run {build}")
    trusted_program(path, f"k8s lab: {path.name}", hint=f"build it as root: rm -r {path.parent}, then run {build}")


def _nodes_words(nodes: tuple[LabNode, ...]) -> str:
    if len(nodes) == 1:
        return f"node {nodes[0].name} ({nodes[0].address})"
    return f"{len(nodes)} nodes ({', '.join(f'{n.name} {n.address}' for n in nodes)})"


