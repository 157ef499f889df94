"""A Kubernetes test cluster on this machine: addresses, ports and every configuration file. Pure.

The control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) listens on a private bridge
address; each node is a kubelet with its own containerd in a network namespace of its own on that bridge, with
its own directories (runtime state, pods' logs, CNI addresses) under the lab's. Pods are on a CNI bridge inside
their node's namespace, without masquerade, so no traffic leaves the machine. Images are built locally: the pause
image is imported into every node's containerd, the fio image pushed to the lab's own registry (TLS, basic auth) on
the bridge, from where the nodes pull it as a cluster's nodes pull from a site's registry (its CA in containerd's
hosts.toml, its credentials in the kubelet's config.json).
"""

from __future__ import annotations

import ipaddress
import itertools
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

BRIDGE = "sbk8s0"
NODE_ADDRESS = "10.215.0.1"  # the control plane's, on the bridge
NODE_PREFIX = 24
POD_BRIDGE = "sbk8spods0"  # inside each node's namespace
MAX_NODES = 8
SERVICE_RANGE = "10.217.0.0/24"
POD_RANGE = "10.216.0.0/16"  # every node's pod subnet
SERVICE_ADDRESS = "10.217.0.1"
ETCD_CLIENT_PORT = 12379
ETCD_PEER_PORT = 12380
APISERVER_PORT = 16443
KUBELET_PORT = 20250
PAUSE_IMAGE = "storbench.local/pause:1"
REGISTRY_PORT = 15000  # the lab's registry, on NODE_ADDRESS
FIO_REPOSITORY = "storbench/fio"  # the fio image's, in the lab's registry
STORAGE_CLASS = "storbench-hostpath"
# where kube-controller-manager's host-path provisioner (the StorageClass above) makes each volume, /tmp/hostpath_pv/
# <uuid>: fixed in Kubernetes (`pkg/volume/hostpath`), outside the lab's directory, so `down` removes the lab's
HOSTPATH_ROOT = "/tmp/hostpath_pv"
CNI_BIN_DIR = "/usr/lib/cni"
NODE_TAINT_OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
CSI_DRIVER = "csi.storbench.local"
CSI_STORAGE_CLASS = "storbench-csi"
CSI_LATE_STORAGE_CLASS = "storbench-csi-wffc"  # the same driver, bound on first consumer (most clouds' default)
CSI_STORAGE_CLASSES = (CSI_STORAGE_CLASS, CSI_LATE_STORAGE_CLASS)
CSI_SNAPSHOT_CLASS = "storbench-csi-snapshots"
CSI_SIDECARS = ("csi-provisioner", "csi-attacher", "csi-snapshotter", "csi-resizer", "snapshot-controller")
CSI_BINARIES = ("storbench-csi", *CSI_SIDECARS)


def lab_pod_namespaces(found: Mapping[str, Sequence[str]], before_up: Collection[str] | None) -> list[str]:
    """Which of the CNI network namespaces ``found`` on this machine (name -> its IPv4 addresses, loopback left
    out) are the lab's pods': one holding an address of the lab's pod range, or one left empty (its pod's link
    went with its node) that was not there when the lab came up (``before_up``; None: not known, as when the lab's
    record is gone, and then no empty one is taken: another runtime's pod being set up is empty too). Another
    runtime's pods are left alone. Pure."""
    pods = ipaddress.ip_network(POD_RANGE)
    ours = []
    for name, addresses in sorted(found.items()):
        inside = any(ipaddress.ip_address(address) in pods for address in addresses)
        if inside or (not addresses and before_up is not None and name not in before_up):
            ours.append(name)
    return ours


@dataclass(frozen=True)
class LabNode:
    """One node of the lab: its name, its address on the bridge, its network namespace and the host's end of its
    link, and its pods' subnet."""

    index: int  # from 1

    @property
    def name(self) -> str:
        return f"storbench-node-{self.index}"

    @property
    def address(self) -> str:
        return f"10.215.0.{10 + self.index}"

    @property
    def namespace(self) -> str:
        return f"sbk8s-node-{self.index}"

    @property
    def host_veth(self) -> str:
        return f"sbk8s-v{self.index}"

    @property
    def pod_subnet(self) -> str:
        return f"10.216.{self.index}.0/24"  # inside POD_RANGE

    def dir(self, root: str) -> str:
        """The node's own directory under the lab's."""
        return f"{root}/nodes/{self.index}"

    def enter(self) -> list[str]:
        """The argv prefix that runs a program in the node's network namespace (its mount namespace stays the
        host's: nsenter, not `ip netns exec`, so the kubelet's mounts are seen by containerd and the pods)."""
        return ["nsenter", f"--net=/run/netns/{self.namespace}", "--"]


def lab_nodes(count: int) -> tuple[LabNode, ...]:
    if not 1 <= count <= MAX_NODES:
        raise ValueError(f"a lab has 1 to {MAX_NODES} nodes, not {count}")
    return tuple(LabNode(index) for index in range(1, count + 1))


def network_batch(nodes: tuple[LabNode, ...]) -> str:
    """`ip -batch` commands that build the bridge (the control plane's address) and every node's namespace and
    link."""
    lines = [f"link add {BRIDGE} type bridge", f"addr add {NODE_ADDRESS}/{NODE_PREFIX} dev {BRIDGE}",
             f"link set {BRIDGE} up"]
    for node in nodes:
        lines += [f"netns add {node.namespace}",
                  f"link add {node.host_veth} type veth peer name eth0 netns {node.namespace}",
                  f"link set {node.host_veth} master {BRIDGE}", f"link set {node.host_veth} up"]
    return "\n".join(lines) + "\n"


def inner_batch(node: LabNode) -> str:
    """`ip -n NAMESPACE -batch` commands configuring the node's side: its address, a route to the control plane."""
    return (f"addr add {node.address}/{NODE_PREFIX} dev eth0\nlink set eth0 up\nlink set lo up\n"
            f"route add default via {NODE_ADDRESS}\n")


def kubeconfig(server: str, ca_path: str, cert_path: str, key_path: str, user: str) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "storbench",
        "clusters": [{"name": "storbench", "cluster": {"server": server, "certificate-authority": ca_path}}],
        "users": [{"name": user, "user": {"client-certificate": cert_path, "client-key": key_path}}],
        "contexts": [{"name": "storbench", "context": {"cluster": "storbench", "user": user}}],
    }, indent=2) + "\n"


def containerd_config(node_dir: str) -> str:
    """A node's containerd 1.6 with the CRI plugin: local pause image, registries' hosts.toml in the node's
    certs.d, CNI from Debian's plugins, and restrict_oom_score_adj (root here lacks CAP_SYS_RESOURCE: without it
    runc fails every sandbox); a Block claim's device owned by the pod's user and group, as a restricted pod needs."""
    return f"""version = 2
root = "{node_dir}/containerd/root"
state = "{node_dir}/containerd/state"

[grpc]
  address = "{node_dir}/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  device_ownership_from_security_context = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{node_dir}/certs.d"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{node_dir}/cni"
"""


def cni_config(node: LabNode, node_dir: str) -> str:
    """The node's pod network: a bridge in its namespace, addresses from its own subnet, kept in its directory."""
    return json.dumps({
        "cniVersion": "0.4.0", "name": "storbench-pods",
        "plugins": [{"type": "bridge", "bridge": POD_BRIDGE, "isGateway": True, "ipMasq": False,
                     "ipam": {"type": "host-local", "subnet": node.pod_subnet, "routes": [{"dst": "0.0.0.0/0"}],
                              "dataDir": f"{node_dir}/cni-addresses"}},
                    {"type": "loopback"}],
    }, indent=2) + "\n"


def kubelet_config(node: LabNode, node_dir: str, ca_path: str, cert_path: str, key_path: str) -> str:
    """cgroupfs driver, no QoS cgroup hierarchy and no evictions: a throwaway node on a shared machine; the pods'
    logs in the node's directory."""
    return json.dumps({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": node.address, "port": KUBELET_PORT, "readOnlyPort": 0, "healthzPort": 0,
        "cgroupDriver": "cgroupfs", "cgroupsPerQOS": False, "enforceNodeAllocatable": [],
        "failSwapOn": False, "evictionHard": {"memory.available": "0%", "nodefs.available": "0%",
                                               "imagefs.available": "0%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                           "x509": {"clientCAFile": ca_path}},
        "authorization": {"mode": "AlwaysAllow"},
        "tlsCertFile": cert_path, "tlsPrivateKeyFile": key_path,
        "serializeImagePulls": False, "resolvConf": "", "clusterDomain": "cluster.local",
        "volumePluginDir": f"{node_dir}/kubelet-plugins", "makeIPTablesUtilChains": False,
        "podLogsDir": f"{node_dir}/pod-logs",
        "protectKernelDefaults": False, "localStorageCapacityIsolation": False,
    }, indent=2) + "\n"


def storage_class_manifest() -> dict[str, object]:
    """The dynamic StorageClass of kube-controller-manager's host-path provisioner."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": STORAGE_CLASS, "labels": {"app.kubernetes.io/managed-by": "storbench-lab"}},
            "provisioner": "kubernetes.io/host-path", "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate"}


def pull_pod_manifest(node: LabNode, image: str) -> dict[str, object]:
    """A pod that has ``node``'s kubelet pull ``image`` (with the node's registry credentials) and runs `fio
    --version` once: the lab's nodes hold the fio image before a plan's pods need it."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"storbench-pull-{node.index}", "namespace": "default"},
            "spec": {"nodeName": node.name, "restartPolicy": "Never", "automountServiceAccountToken": False,
                     "containers": [{"name": "pull", "image": image, "command": ["/usr/bin/fio", "--version"],
                                     "securityContext": {"allowPrivilegeEscalation": False,
                                                         "capabilities": {"drop": ["ALL"]}}}]}}


def block_storage_class_manifest() -> dict[str, object]:
    """Local block volumes (pre-made by the lab, bound when a pod needs one)."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "storbench-local-block", "labels": {"app.kubernetes.io/managed-by": "storbench-lab"}},
            "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}


def block_pv_manifest(name: str, device: str, size_bytes: int, node: LabNode) -> dict[str, object]:
    """A `local` PersistentVolume on a loop device of one node, for volumeMode: Block."""
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "storbench-lab"}},
            "spec": {"capacity": {"storage": str(size_bytes)}, "volumeMode": "Block",
                     "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
                     "storageClassName": "storbench-local-block", "local": {"path": device},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [node.name]}]}]}}}}


def openssl_commands(pki: str, nodes: tuple[LabNode, ...] = (LabNode(1),)) -> list[list[str]]:
    """A CA, the API server's serving certificate, client certificates for every component, each kubelet's
    client and serving certificates, etcd's certificate (serving clients and peers) with the API server's client
    certificate for it, and the service-account key pair, valid 30 days."""
    def signed(name: str, subject: str, extensions: str = "") -> list[list[str]]:
        commands = [["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{pki}/{name}.key",
                     "-out", f"{pki}/{name}.csr", "-subj", subject]]
        sign = ["openssl", "x509", "-req", "-in", f"{pki}/{name}.csr", "-CA", f"{pki}/ca.crt", "-CAkey",
                f"{pki}/ca.key", "-CAcreateserial", "-out", f"{pki}/{name}.crt", "-days", "30"]
        if extensions:
            sign += ["-extfile", f"{pki}/{name}.ext"]
        return [*commands, sign]

    return [
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{pki}/ca.key", "-out",
         f"{pki}/ca.crt", "-days", "30", "-subj", "/CN=storbench-lab-ca"],
        *signed("apiserver", "/CN=kube-apiserver", "ext"),
        *signed("admin", "/O=system:masters/CN=storbench-admin"),
        *signed("controller-manager", "/CN=system:kube-controller-manager"),
        *signed("scheduler", "/CN=system:kube-scheduler"),
        *signed("apiserver-kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client"),
        *(command for node in nodes for command in (
            *signed(f"kubelet-client-{node.index}", f"/O=system:nodes/CN=system:node:{node.name}"),
            *signed(f"kubelet-{node.index}", f"/CN={node.name}", "ext"))),
        *signed("etcd", "/CN=storbench-etcd", "ext"),
        *signed("apiserver-etcd-client", "/CN=kube-apiserver-etcd-client", "ext"),
        ["openssl", "genrsa", "-out", f"{pki}/sa.key", "2048"],
        ["openssl", "rsa", "-in", f"{pki}/sa.key", "-pubout", "-out", f"{pki}/sa.pub"],
    ]


def certificate_extensions(nodes: tuple[LabNode, ...] = (LabNode(1),)) -> dict[str, str]:
    """Subject alternative names of the serving certificates, and what etcd's certificates may be used for
    (file name -> extfile text)."""
    return {
        "apiserver.ext": f"subjectAltName=IP:{NODE_ADDRESS},IP:127.0.0.1,IP:{SERVICE_ADDRESS},DNS:kubernetes,"
                         "DNS:kubernetes.default,DNS:kubernetes.default.svc\n",
        **{f"kubelet-{node.index}.ext": f"subjectAltName=IP:{node.address},DNS:{node.name}\n" for node in nodes},
        "etcd.ext": "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n",
        "apiserver-etcd-client.ext": "extendedKeyUsage=clientAuth\n",
    }


def etcd_command(root: str, pki: str, client_port: int = ETCD_CLIENT_PORT,
                 peer_port: int = ETCD_PEER_PORT) -> list[str]:
    """etcd on loopback, over TLS only, for clients holding a certificate from the lab's CA (the API server's
    apiserver-etcd-client). Plain HTTP on loopback would give every local user the whole cluster state,
    secrets included, and write access to it; the peer port is locked the same way."""
    client = f"https://127.0.0.1:{client_port}"
    peer = f"https://127.0.0.1:{peer_port}"
    return ["etcd", "--name", "storbench", "--data-dir", f"{root}/etcd",
            "--listen-client-urls", client, "--advertise-client-urls", client,
            "--cert-file", f"{pki}/etcd.crt", "--key-file", f"{pki}/etcd.key",
            "--client-cert-auth", "--trusted-ca-file", f"{pki}/ca.crt",
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"storbench={peer}",
            "--peer-cert-file", f"{pki}/etcd.crt", "--peer-key-file", f"{pki}/etcd.key",
            "--peer-client-cert-auth", "--peer-trusted-ca-file", f"{pki}/ca.crt"]


def daemon_commands(root: str, binaries: str) -> dict[str, list[str]]:
    """name -> argv of every control-plane daemon, in start order."""
    pki = f"{root}/pki"
    return {
        "etcd": etcd_command(root, pki),
        "kube-apiserver": [
            f"{binaries}/kube-apiserver", f"--etcd-servers=https://127.0.0.1:{ETCD_CLIENT_PORT}",
            f"--etcd-cafile={pki}/ca.crt", f"--etcd-certfile={pki}/apiserver-etcd-client.crt",
            f"--etcd-keyfile={pki}/apiserver-etcd-client.key",
            f"--advertise-address={NODE_ADDRESS}", f"--bind-address={NODE_ADDRESS}",
            f"--secure-port={APISERVER_PORT}", f"--service-cluster-ip-range={SERVICE_RANGE}",
            f"--tls-cert-file={pki}/apiserver.crt", f"--tls-private-key-file={pki}/apiserver.key",
            f"--client-ca-file={pki}/ca.crt", f"--service-account-key-file={pki}/sa.pub",
            f"--service-account-signing-key-file={pki}/sa.key",
            "--service-account-issuer=https://kubernetes.default.svc", "--authorization-mode=Node,RBAC",
            f"--kubelet-client-certificate={pki}/apiserver-kubelet-client.crt",
            f"--kubelet-client-key={pki}/apiserver-kubelet-client.key", f"--kubelet-certificate-authority={pki}/ca.crt",
            "--kubelet-preferred-address-types=InternalIP", "--allow-privileged=true",
            "--enable-admission-plugins=NodeRestriction", "--profiling=false"],
        "kube-controller-manager": [
            f"{binaries}/kube-controller-manager", f"--kubeconfig={root}/controller-manager.kubeconfig",
            f"--service-account-private-key-file={pki}/sa.key", f"--root-ca-file={pki}/ca.crt",
            "--use-service-account-credentials=true", "--enable-hostpath-provisioner=true",
            "--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false", "--profiling=false",
            "--controllers=*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle"],
        "kube-scheduler": [f"{binaries}/kube-scheduler", f"--kubeconfig={root}/scheduler.kubeconfig",
                           "--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
                           "--profiling=false"],
    }


def node_commands(root: str, binaries: str, node: LabNode) -> dict[str, list[str]]:
    """name -> argv of a node's daemons (containerd, then the kubelet), in its network namespace."""
    node_dir = node.dir(root)
    return {
        f"containerd-{node.index}": [*node.enter(), "containerd", "--config", f"{node_dir}/containerd/config.toml"],
        f"kubelet-{node.index}": [
            *node.enter(), f"{binaries}/kubelet", f"--kubeconfig={node_dir}/kubelet.kubeconfig",
            f"--config={node_dir}/kubelet-config.json",
            f"--container-runtime-endpoint=unix://{node_dir}/containerd/containerd.sock",
            f"--node-ip={node.address}", f"--hostname-override={node.name}", f"--root-dir={node_dir}/kubelet",
            f"--cert-dir={node_dir}/kubelet-pki"],
    }


def csi_commands(root: str, csi: str) -> dict[str, list[str]]:
    """name -> argv of the CSI driver's controller and Kubernetes' sidecars and snapshot controller, on this machine
    beside the control plane (the admin kubeconfig: a throwaway lab's components need no RBAC of their own). The
    group-snapshot feature is off: its CRDs are not installed."""
    socket = f"unix://{root}/csi/controller.sock"
    kubeconfig_flag = f"--kubeconfig={root}/admin.kubeconfig"
    no_groups = "--feature-gates=CSIVolumeGroupSnapshot=false"
    return {
        "csi-controller": [f"{csi}/storbench-csi", "--mode", "controller", "--endpoint", socket,
                           "--state-dir", f"{root}/csi/state"],
        "csi-provisioner": [f"{csi}/csi-provisioner", kubeconfig_flag, f"--csi-address={socket}", "--timeout=60s"],
        "csi-attacher": [f"{csi}/csi-attacher", kubeconfig_flag, f"--csi-address={socket}"],
        "csi-snapshotter": [f"{csi}/csi-snapshotter", kubeconfig_flag, f"--csi-address={socket}", "--timeout=60s",
                            no_groups],
        "csi-resizer": [f"{csi}/csi-resizer", kubeconfig_flag, f"--csi-address={socket}"],
        "snapshot-controller": [f"{csi}/snapshot-controller", kubeconfig_flag, no_groups],
    }


def csi_node_command(root: str, csi: str, node: LabNode) -> list[str]:
    """The CSI driver's node plugin of one node, in its network namespace; it registers with that node's kubelet
    (as node-driver-registrar would) through the kubelet's plugin directory."""
    node_dir = node.dir(root)
    return [*node.enter(), f"{csi}/storbench-csi", "--mode", "node", "--endpoint", f"unix://{node_dir}/csi/csi.sock",
            "--node-id", node.name, "--state-dir", f"{root}/csi/state",
            "--registration-dir", f"{node_dir}/kubelet/plugins_registry"]


def csi_manifests() -> list[tuple[str, dict[str, object]]]:
    """(collection, object) of the CSI driver: its CSIDriver (attachRequired: Kubernetes' attach/detach
    controller tracks which node holds each volume, as for a cloud disk), two StorageClasses (bound at once, and
    bound on first consumer; expandable) and the default VolumeSnapshotClass."""
    labels = {"app.kubernetes.io/managed-by": "storbench-lab"}
    return [
        ("/apis/storage.k8s.io/v1/csidrivers", {
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": CSI_DRIVER, "labels": labels},
            "spec": {"attachRequired": True, "podInfoOnMount": False, "volumeLifecycleModes": ["Persistent"],
                     "fsGroupPolicy": "None"}}),
        *(("/apis/storage.k8s.io/v1/storageclasses", {
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "labels": labels}, "provisioner": CSI_DRIVER,
            "reclaimPolicy": "Delete", "volumeBindingMode": mode, "allowVolumeExpansion": True})
          for name, mode in ((CSI_STORAGE_CLASS, "Immediate"), (CSI_LATE_STORAGE_CLASS, "WaitForFirstConsumer"))),
        ("/apis/snapshot.storage.k8s.io/v1/volumesnapshotclasses", {
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
            "metadata": {"name": CSI_SNAPSHOT_CLASS, "labels": labels,
                         "annotations": {"snapshot.storage.kubernetes.io/is-default-class": "true"}},
            "driver": CSI_DRIVER, "deletionPolicy": "Delete"}),
    ]


def shim_of(argv: list[str], exe_name: str, owner_uid: int, socket_path: str, euid: int) -> bool:
    """Whether a process is a containerd shim of the containerd serving ``socket_path``: its executable is a
    containerd shim, it runs as us, and its `-address` argument is exactly that socket. Pure."""
    if not exe_name.startswith("containerd-shim") or owner_uid != euid:
        return False
    flags = ("-address", "--address")
    return (any(a in flags and b == socket_path for a, b in itertools.pairwise(argv))
            or any(f"{flag}={socket_path}" in argv for flag in flags))


def hostpath_leftovers(before: Collection[str], now: Collection[str], of_volumes: Collection[str]) -> list[str]:
    """The lab's volumes under HOSTPATH_ROOT to remove at `down`: the directories its volumes name (the
    PersistentVolumes of its StorageClass the API server still lists), and those that appeared since `up`
    (``before``: the names there then; ``now``: the names there at `down`), each a name directly under it."""
    listed = {path.removeprefix(HOSTPATH_ROOT + "/") for path in of_volumes if path.startswith(HOSTPATH_ROOT + "/")}
    names = (listed & set(now)) | (set(now) - set(before))
    return sorted(name for name in names if name and "/" not in name and name not in (".", ".."))
