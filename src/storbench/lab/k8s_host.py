"""What the Kubernetes lab does to this machine outside its own daemons (shell): the loop devices of its local
volumes, the sysctls the kubelet changes (saved at `up`, put back at `down`), the node namespaces
and links, the mounts under its directory, and a node's containers and containerd shims (signalled, killed). Used by
`lab.k8s.K8sLab` to bring a lab up, fail a node and tear it all down."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

from storbench.errors import UserError
from storbench.execute.supervisor import process_dirs
from storbench.lab.k8s_conf import BRIDGE, HOSTPATH_ROOT, POD_BRIDGE, hostpath_leftovers, lab_pod_namespaces, shim_of
from storbench.lab.labdir import Daemon, kill_daemons
from storbench.lab.process import alive, kill_all
from storbench.shell import attempt, run

# Sysctls the kubelet sets on start (protectKernelDefaults: false); `down` puts the old values back.
KUBELET_SYSCTLS = ("vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
                   "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward")


def loop_device(root: Path, index: int, size_bytes: int) -> str:
    backing = root / "block" / f"volume-{index}.img"
    backing.parent.mkdir(parents=True, exist_ok=True)
    with open(backing, "wb") as handle:
        handle.truncate(size_bytes)
    return run(["losetup", "--find", "--show", str(backing)], timeout_s=30).strip()


def detach_loop_devices(root: Path) -> None:
    """Detach the lab's loop devices (backed by files in its directory) and, first, the loop devices the
    kubelet put over them to map a Block volume into a pod (backed by their device node): a node killed with
    its pods never unmapped them, and they would hold the lab's open."""
    if not shutil.which("losetup"):
        return
    with contextlib.suppress(UserError):
        listed = [line.split(None, 3) for line in run(
            ["losetup", "--list", "--noheadings", "--output", "NAME,BACK-MAJ:MIN,BACK-INO,BACK-FILE"],
            timeout_s=30).splitlines()]
        ours = [fields[0] for fields in listed if len(fields) == 4 and fields[3].startswith(str(root) + "/")]
        nodes = set()
        for name in ours:
            with contextlib.suppress(OSError):
                found = os.stat(name)
                nodes.add((f"{os.major(found.st_dev)}:{os.minor(found.st_dev)}", str(found.st_ino)))
        over = [fields[0] for fields in listed if len(fields) >= 3 and (fields[1], fields[2]) in nodes]
        for name in (*over, *ours):
            attempt(["losetup", "--detach", name])


def save_host_state(root: Path) -> None:
    """What `restore_host_state` puts back at `down`: the sysctls the kubelets change (they are the machine's:
    a namespace has none of its own), and the CNI namespaces there before (`lab_pod_namespaces`). The lab makes no
    iptables chain in the machine's own namespace (its kubelets and their pods' CNI run in the nodes'), so it saves
    none and deletes none: a chain there is somebody else's."""
    saved = {}
    for name in KUBELET_SYSCTLS:
        with contextlib.suppress(OSError):
            saved[name] = Path(f"/proc/sys/{name}").read_text().strip()
    (root / "host-state.json").write_text(json.dumps({"sysctls": saved, "netns": _cni_names()}))


def _saved_state(root: Path) -> dict[str, Any]:
    """What `save_host_state` wrote at `up` ({} when there is none, or it is not ours to read)."""
    try:
        state = json.loads((root / "host-state.json").read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def restore_host_state(root: Path) -> None:
    for name, value in _saved_state(root).get("sysctls", {}).items():
        with contextlib.suppress(OSError):
            Path(f"/proc/sys/{name}").write_text(value)


def signal_containers(address: Path, signal_name: str, *, wait_s: float) -> int:
    """Send a signal to every running container of a node's containerd; wait until they have stopped (or
    ``wait_s``). How many were signalled."""
    listed = run(["ctr", "-a", str(address), "-n", "k8s.io", "tasks", "ls"], timeout_s=30).splitlines()[1:]
    running = [line.split()[0] for line in listed if line.split()[-1:] == ["RUNNING"]]
    for task in running:
        attempt(["ctr", "-a", str(address), "-n", "k8s.io", "tasks", "kill", "-s", signal_name, task])
    deadline = time.time() + wait_s
    while time.time() < deadline:
        listed = run(["ctr", "-a", str(address), "-n", "k8s.io", "tasks", "ls"], timeout_s=30).splitlines()[1:]
        if not any(line.split()[0] in running and line.split()[-1] == "RUNNING" for line in listed):
            break
        time.sleep(0.1)
    return len(running)


def kill_containers(address: Path) -> None:
    """SIGKILL every container a node's containerd runs (while it answers)."""
    if not address.exists() or not shutil.which("ctr"):
        return
    with contextlib.suppress(UserError):
        tasks = run(["ctr", "-a", str(address), "-n", "k8s.io", "tasks", "ls", "-q"], timeout_s=30).split()
        for task in tasks:
            with contextlib.suppress(UserError):
                run(["ctr", "-a", str(address), "-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", task],
                    timeout_s=30)


def kill_shims(address: Path) -> None:
    """SIGKILL the shims of a node's containerd (`shims`)."""
    kill_all(shims(str(address)))


def kill_cluster(daemons: list[Daemon]) -> None:
    """Stop a cluster's daemons in the order that leaves nothing restarting another: the kubelets, the control
    plane, then the rest (containerd, etcd)."""
    kill_daemons([d for d in daemons if d.name.startswith("kubelet")])
    for name in ("kube-scheduler", "kube-controller-manager", "kube-apiserver"):
        kill_daemons([d for d in daemons if d.name == name])
    kill_daemons(daemons)


def unmount_all(root: Path) -> None:
    for _ in range(3):
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()
                  if line.split()[1].startswith(str(root) + "/")]
        if not mounts:
            return
        for mount in sorted(mounts, key=len, reverse=True):
            attempt(["umount", "-l", mount])


def _netns(pattern: str) -> list[str]:
    """The named network namespaces on this machine whose names match ``pattern`` (a glob)."""
    netns = Path("/var/run/netns")
    return sorted(path.name for path in netns.glob(pattern)) if netns.exists() else []


def _cni_names() -> list[str]:
    """The CNI network namespaces on this machine (containerd names them cni-...)."""
    return _netns("cni-*")


def cni_namespaces() -> dict[str, list[str]]:
    """The CNI network namespaces on this machine and each one's IPv4 addresses, loopback left out."""
    found: dict[str, list[str]] = {}
    for name in _cni_names() if shutil.which("ip") else []:
        try:
            listed = subprocess.run(["ip", "-n", name, "-o", "-4", "addr", "show"], capture_output=True, text=True,
                                    check=False, timeout=30, start_new_session=True).stdout
        except subprocess.TimeoutExpired:  # not read: not known as the lab's, so left alone
            continue
        found[name] = [address for address in re.findall(r" inet ([0-9.]+)/", listed)
                       if not address.startswith("127.")]
    return found


def delete_network(root: Path) -> None:
    """The lab's node namespaces, links and bridges, and its pods' network namespaces (`lab_pod_namespaces`:
    another runtime's pods on this machine are left alone)."""
    before_up = _saved_state(root).get("netns")
    known = frozenset(before_up) if isinstance(before_up, list) else None  # no record: only the lab's addresses
    for name in (*lab_pod_namespaces(cni_namespaces(), known), *_netns("sbk8s-node-*")):
        attempt(["ip", "netns", "delete", name])
    links = run(["ip", "-o", "link", "show"], timeout_s=30) if shutil.which("ip") else ""
    # a node's link goes with its namespace, but only once the kernel has torn that down (later, on its own
    # time): deleted here, with its peer, at once
    veths = sorted(set(re.findall(r" (sbk8s-v[0-9]+)@", links)))
    for link in (*veths, POD_BRIDGE, BRIDGE):
        if f" {link}:" in links or f" {link}@" in links:
            attempt(["ip", "link", "delete", link])


def shims(socket_path: str) -> list[int]:
    """The shims of this lab's containerd (they daemonise away from it, so they were never recorded). The
    socket lives in the lab's 0700 directory; only root runs a root-owned shim, and the executable is read
    from /proc/PID/exe, which a process cannot choose by naming itself."""
    euid = os.geteuid()
    found = []
    for entry in process_dirs():
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            exe_name = os.path.basename(os.readlink(entry / "exe"))
            uid = entry.stat().st_uid
        except OSError:
            continue
        if shim_of(argv, exe_name, uid, socket_path, euid) and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def unix_socket_answers(path: Path) -> bool:
    """Whether something accepts connections on the unix socket at ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def hostpath_root_names() -> list[str] | None:
    """The names under HOSTPATH_ROOT (None: not there). Refused when it is not root's own directory (a symbolic
    link, another owner, or writable by others without the sticky bit): a local user who made it first would own
    the parent of every volume the lab's provisioner makes there."""
    try:
        found = os.lstat(HOSTPATH_ROOT)
    except FileNotFoundError:
        return None
    if (not stat.S_ISDIR(found.st_mode) or found.st_uid != 0
            or (found.st_mode & 0o022 and not found.st_mode & stat.S_ISVTX)):
        raise UserError(f"k8s lab: {HOSTPATH_ROOT} is not root's own directory; the lab's host-path volumes would be "
                        "made in it", hint=f"look at what made it, then remove it (rm -r {HOSTPATH_ROOT})")
    return sorted(os.listdir(HOSTPATH_ROOT))


def claim_hostpath_root() -> list[str] | None:
    """The names under HOSTPATH_ROOT before the lab (None: the lab makes it now, root's, 0755). Made at `up`, not
    left to the controller manager's first volume: a local user who made it in between would own the parent of
    every volume (and could swap one for a link before the kubelet mounts it)."""
    before = hostpath_root_names()
    if before is not None:
        return before
    try:
        os.mkdir(HOSTPATH_ROOT, 0o755)
    except FileExistsError:  # made meanwhile: whose it is decides
        return hostpath_root_names() or []
    os.chmod(HOSTPATH_ROOT, 0o755)  # whatever the umask
    return None


def remove_hostpath_volumes(names: list[str], *, made_root: bool) -> None:
    """Remove the lab's volumes ``names`` under HOSTPATH_ROOT (each a directory of root's, never through a link),
    and the directory itself when the lab made it and it is empty then."""
    for name in names:
        path = os.path.join(HOSTPATH_ROOT, name)
        with contextlib.suppress(FileNotFoundError):
            found = os.lstat(path)
            if stat.S_ISDIR(found.st_mode) and found.st_uid == 0:
                shutil.rmtree(path)
    if made_root:
        with contextlib.suppress(OSError):  # not empty (someone else's), or gone
            os.rmdir(HOSTPATH_ROOT)


def remove_lab_hostpath_volumes(record: Path, of_volumes: list[str]) -> None:
    """The volumes the lab's provisioner made under HOSTPATH_ROOT, outside the lab's directory: those its API server
    listed (``of_volumes``), and those that appeared there since `up` (``record``: what was there then; a claim
    deleted while the controller was stopped)."""
    try:
        recorded = json.loads(record.read_text())
    except (OSError, ValueError):
        recorded = None
    try:
        now = hostpath_root_names()
    except UserError:  # not root's own now: nothing in it is touched
        return
    if now is None:
        return
    before = recorded["names"] if isinstance(recorded, dict) else now  # unknown: only what the API listed
    remove_hostpath_volumes(hostpath_leftovers(before, now, of_volumes),
                            made_root=isinstance(recorded, dict) and bool(recorded.get("made_root")))
