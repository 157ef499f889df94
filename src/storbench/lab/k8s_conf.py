"""A single-node Kubernetes test cluster on this machine: addresses, ports and every configuration file. Pure.

etcd, kube-apiserver, kube-controller-manager, kube-scheduler and a kubelet with containerd, all listening on a
private bridge address (kubelet needs a non-loopback node IP); pods on a CNI bridge without masquerade, so no
traffic leaves the machine. Images are built locally (no registry is needed or reachable).
"""

from __future__ import annotations

import itertools
import json

NODE_NAME = "storbench-node"
BRIDGE = "sbk8s0"
NODE_ADDRESS = "10.215.0.1"
NODE_PREFIX = 24
POD_SUBNET = "10.216.0.0/24"
POD_BRIDGE = "sbk8spods0"
SERVICE_RANGE = "10.217.0.0/24"
SERVICE_ADDRESS = "10.217.0.1"
ETCD_CLIENT_PORT = 12379
ETCD_PEER_PORT = 12380
APISERVER_PORT = 16443
KUBELET_PORT = 20250
PAUSE_IMAGE = "storbench.local/pause:1"
FIO_IMAGE = "storbench.local/fio:local"
STORAGE_CLASS = "storbench-hostpath"
CNI_BIN_DIR = "/usr/lib/cni"


def kubeconfig(server: str, ca_path: str, cert_path: str, key_path: str, user: str) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "storbench",
        "clusters": [{"name": "storbench", "cluster": {"server": server, "certificate-authority": ca_path}}],
        "users": [{"name": user, "user": {"client-certificate": cert_path, "client-key": key_path}}],
        "contexts": [{"name": "storbench", "context": {"cluster": "storbench", "user": user}}],
    }, indent=2) + "\n"


def containerd_config(root: str) -> str:
    """containerd 1.6 with the CRI plugin: local pause image, CNI from Debian's plugins, and
    restrict_oom_score_adj (root here lacks CAP_SYS_RESOURCE: without it runc fails every sandbox)."""
    return f"""version = 2
root = "{root}/containerd/root"
state = "{root}/containerd/state"

[grpc]
  address = "{root}/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{PAUSE_IMAGE}"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{root}/cni"
"""


def cni_config() -> str:
    return json.dumps({
        "cniVersion": "0.4.0", "name": "storbench-pods",
        "plugins": [{"type": "bridge", "bridge": POD_BRIDGE, "isGateway": True, "ipMasq": False,
                     "ipam": {"type": "host-local", "subnet": POD_SUBNET, "routes": [{"dst": "0.0.0.0/0"}]}},
                    {"type": "loopback"}],
    }, indent=2) + "\n"


def kubelet_config(root: str, ca_path: str, cert_path: str, key_path: str) -> str:
    """cgroupfs driver, no QoS cgroup hierarchy and no evictions: a throwaway node on a shared machine."""
    return json.dumps({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "address": NODE_ADDRESS, "port": KUBELET_PORT, "readOnlyPort": 0, "healthzPort": 0,
        "cgroupDriver": "cgroupfs", "cgroupsPerQOS": False, "enforceNodeAllocatable": [],
        "failSwapOn": False, "evictionHard": {"memory.available": "0%", "nodefs.available": "0%",
                                               "imagefs.available": "0%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                           "x509": {"clientCAFile": ca_path}},
        "authorization": {"mode": "AlwaysAllow"},
        "tlsCertFile": cert_path, "tlsPrivateKeyFile": key_path,
        "serializeImagePulls": False, "resolvConf": "", "clusterDomain": "cluster.local",
        "volumePluginDir": f"{root}/kubelet-plugins", "makeIPTablesUtilChains": False,
        "protectKernelDefaults": False, "localStorageCapacityIsolation": False,
    }, indent=2) + "\n"


def storage_class_manifest() -> dict[str, object]:
    """The dynamic StorageClass of kube-controller-manager's host-path provisioner."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": STORAGE_CLASS, "labels": {"app.kubernetes.io/managed-by": "storbench-lab"}},
            "provisioner": "kubernetes.io/host-path", "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate"}


def block_storage_class_manifest() -> dict[str, object]:
    """Local block volumes (pre-made by the lab, bound when a pod needs one)."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "storbench-local-block", "labels": {"app.kubernetes.io/managed-by": "storbench-lab"}},
            "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}


def block_pv_manifest(name: str, device: str, size_bytes: int) -> dict[str, object]:
    """A `local` PersistentVolume on a loop device, for volumeMode: Block."""
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "storbench-lab"}},
            "spec": {"capacity": {"storage": str(size_bytes)}, "volumeMode": "Block",
                     "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
                     "storageClassName": "storbench-local-block", "local": {"path": device},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [NODE_NAME]}]}]}}}}


def openssl_commands(pki: str) -> list[list[str]]:
    """A CA, the API server's serving certificate, client certificates for every component, the kubelet's
    serving certificate, etcd's certificate (serving clients and peers) with the API server's client
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
        *signed("kubelet-client", f"/O=system:nodes/CN=system:node:{NODE_NAME}"),
        *signed("apiserver-kubelet-client", "/O=system:masters/CN=kube-apiserver-kubelet-client"),
        *signed("kubelet", f"/CN={NODE_NAME}", "ext"),
        *signed("etcd", "/CN=storbench-etcd", "ext"),
        *signed("apiserver-etcd-client", "/CN=kube-apiserver-etcd-client", "ext"),
        ["openssl", "genrsa", "-out", f"{pki}/sa.key", "2048"],
        ["openssl", "rsa", "-in", f"{pki}/sa.key", "-pubout", "-out", f"{pki}/sa.pub"],
    ]


def certificate_extensions() -> dict[str, str]:
    """Subject alternative names of the serving certificates, and what etcd's certificates may be used for
    (file name -> extfile text)."""
    return {
        "apiserver.ext": f"subjectAltName=IP:{NODE_ADDRESS},IP:127.0.0.1,IP:{SERVICE_ADDRESS},DNS:kubernetes,"
                         "DNS:kubernetes.default,DNS:kubernetes.default.svc\n",
        "kubelet.ext": f"subjectAltName=IP:{NODE_ADDRESS},DNS:{NODE_NAME}\n",
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
    """name -> argv of every daemon, in start order."""
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
        "containerd": ["containerd", "--config", f"{root}/containerd/config.toml"],
        "kubelet": [f"{binaries}/kubelet", f"--kubeconfig={root}/kubelet.kubeconfig",
                    f"--config={root}/kubelet-config.json",
                    f"--container-runtime-endpoint=unix://{root}/containerd/containerd.sock",
                    f"--node-ip={NODE_ADDRESS}", f"--hostname-override={NODE_NAME}", f"--root-dir={root}/kubelet",
                    f"--cert-dir={root}/kubelet-pki"],
    }


def shim_of(argv: list[str], exe_name: str, owner_uid: int, socket_path: str, euid: int) -> bool:
    """Whether a process is a containerd shim of the containerd serving ``socket_path``: its executable is a
    containerd shim, it runs as us, and its `-address` argument is exactly that socket. Pure."""
    if not exe_name.startswith("containerd-shim") or owner_uid != euid:
        return False
    flags = ("-address", "--address")
    return (any(a in flags and b == socket_path for a, b in itertools.pairwise(argv))
            or any(f"{flag}={socket_path}" in argv for flag in flags))
