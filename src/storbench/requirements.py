"""What each target kind and lab needs of the machine, and the exact command that installs each piece: the table
`storbench doctor` checks (its probes are `storbench.doctor`'s). Pure: data and the lines made from the probes'
answers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

# how a piece is found: a program on PATH, a file, a fio engine of the fio a run uses, a Python module, a cgroup
# controller of this kernel, running as root, the CPU's performance counters as the kernel offers them
Probe = Literal["program", "file", "engine", "module", "cgroup", "root", "pmu"]

APT = "apt-get install -y"


@dataclass(frozen=True)
class Requirement:
    """One piece: what it is, how it is found (``probe`` of ``name``), what needs it, and what installs it."""

    what: str
    probe: Probe
    name: str
    needed_for: str
    install: str


REQUIREMENTS: tuple[Requirement, ...] = (
    Requirement("fio", "program", "fio", "every target", f"{APT} fio"),
    Requirement("fio's libaio engine", "engine", "libaio", "path and block targets (ioengine: libaio)",
                f"{APT} fio (Debian's fio has it)"),
    Requirement("fio's rbd engine", "engine", "rbd", "rbd targets", f"{APT} fio (Debian's fio has it)"),
    Requirement("fio with libnfs and libcurl (nfs and http engines)", "file", "fio-nfs",
                "nfs and s3 targets, metadata on NFS (Debian's fio has neither engine)",
                "sudo storbench setup --labs (builds it from Debian's source package; about a minute)"),
    Requirement("root", "root", "", "every lab (namespaces, loop devices, daemons)", "run storbench as root"),
    Requirement("ip (iproute2)", "program", "ip", "the hosts, NFS and Kubernetes labs", f"{APT} iproute2"),
    Requirement("nft (nftables)", "program", "nft", "the hosts lab's firewall", f"{APT} nftables"),
    Requirement("ceph-mon, -mgr, -osd", "program", "ceph-osd", "the Ceph lab",
                f"{APT} ceph-mon ceph-mgr ceph-osd ceph-common"),
    Requirement("ceph-mds and ceph-fuse", "program", "ceph-fuse", "the Ceph lab's CephFS (lab.ceph.cephfs)",
                f"{APT} ceph-mds ceph-fuse"),
    Requirement("radosgw", "program", "radosgw", "the Ceph lab's S3 (lab.ceph.rgw)", f"{APT} radosgw"),
    Requirement("perf", "program", "perf", "telemetry.cycles (CPU cycles per I/O)", f"{APT} linux-perf"),
    Requirement("CPU performance counters", "pmu", "", "telemetry.cycles (CPU cycles per I/O)",
                "a machine whose CPU offers them to this kernel (a VM needs a virtual PMU: KVM's `-cpu host`, or an "
                "instance type that has one); CPU time per I/O is measured without them"),
    Requirement("the cgroup cpu controller", "cgroup", "cpu", "lab.ceph.osd_cpus (a CPU quota per OSD)",
                "a kernel with the cgroup cpu controller (v1 or v2) mounted under /sys/fs/cgroup"),
    Requirement("nfs-ganesha", "program", "ganesha.nfsd", "the NFS lab",
                f"{APT} nfs-ganesha nfs-ganesha-vfs rpcbind"),
    Requirement("losetup", "program", "losetup", "the volume lab and the Kubernetes lab's local volumes",
                f"{APT} mount"),
    Requirement("pyfuse3", "module", "pyfuse3", "the volume lab's pacer (an even IOPS cap)",
                "sudo storbench setup --labs (fuse3 from apt, then pyfuse3 into storbench's own environment)"),
    Requirement("etcd", "program", "etcd", "the Kubernetes lab", f"{APT} etcd-server"),
    Requirement("containerd and runc", "program", "containerd", "the Kubernetes lab",
                f"{APT} containerd runc containernetworking-plugins busybox-static"),
    Requirement("skopeo", "program", "skopeo", "storbench image push, and the Kubernetes lab's registry",
                f"{APT} skopeo"),
    Requirement("docker-registry and htpasswd", "program", "docker-registry", "the Kubernetes lab's registry",
                f"{APT} docker-registry apache2-utils"),
    Requirement("psycopg", "module", "psycopg", "a PostgreSQL results store (--db postgresql://...)",
                "pip install 'psycopg[binary]>=3.1' into storbench's environment (pipx: pipx inject storbench "
                "'psycopg[binary]>=3.1')"),
    Requirement("Kubernetes v1.33 binaries", "file", "kubernetes", "the Kubernetes lab",
                "scripts/build-kubernetes.sh (from a clone; Go; about 10 minutes once)"),
    Requirement("the CSI driver and sidecars", "file", "csi", "the Kubernetes lab's storbench-csi (lab.k8s.csi)",
                "scripts/build-csi.sh (from a clone; Go; about 8 minutes once)"),
)


@dataclass(frozen=True)
class Found:
    """What a probe found: whether the piece is there, and what it says of itself ("fio-3.33 at /usr/bin/fio")."""

    present: bool
    detail: str = ""


def doctor_lines(found: Mapping[Requirement, Found]) -> list[str]:
    """One line per piece, present first: what it is, what it said, what needs it; a missing one with the command
    that installs it."""
    lines = []
    for requirement in REQUIREMENTS:
        answer = found.get(requirement, Found(False))
        detail = f" ({answer.detail})" if answer.detail else ""
        if answer.present:
            lines.append(f"ok       {requirement.what}{detail}: {requirement.needed_for}")
        else:
            lines.append(f"missing  {requirement.what}{detail}: {requirement.needed_for}; install: "
                         f"{requirement.install}")
    return lines


# What `storbench setup` installs from the machine's package sources (scripts/setup.sh calls it), by option.
SETUP_PACKAGES: Mapping[str, tuple[str, ...]] = {
    "base": ("fio", "python3", "python3-venv", "ca-certificates"),
    # the report test opens the report in Chromium; the telemetry test starts its own Prometheus pair;
    # scripts/pipx-quickstart.sh installs the wheel with pipx; the store tests start their own PostgreSQL server;
    # the cycles tests run perf (a machine without CPU counters counts its task-clock)
    "dev": ("chromium", "fonts-dejavu-core", "prometheus", "prometheus-node-exporter", "pipx", "postgresql",
            "linux-perf"),
    # the Kubernetes lab: its daemons, the fio and pause images, its registry
    "k8s": ("etcd-server", "containerd", "runc", "containernetworking-plugins", "busybox-static", "gcc", "libc6-dev",
            "iptables", "openssl", "util-linux", "mount", "iproute2", "skopeo", "docker-registry", "apache2-utils"),
    # Ceph, nfs-ganesha, the hosts lab's firewall, the volume lab's pacer (FUSE), the fio image and a registry
    "labs": ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph-mds", "ceph-fuse", "ceph-common", "radosgw", "nfs-ganesha",
             "nfs-ganesha-vfs", "rpcbind", "iproute2", "nftables", "fuse3", "libfuse3-dev", "pkg-config", "gcc",
             "python3-dev", "skopeo", "docker-registry", "apache2-utils", "busybox-static"),
    # building fio from Debian's source package with libnfs and libcurl (the nfs and http engines)
    "fio-nfs": ("build-essential", "dpkg-dev", "pkg-config", "libaio-dev", "zlib1g-dev", "libnfs-dev",
                "libcurl4-openssl-dev", "libssl-dev"),
}
# Packages whose Debian service setup stops and disables: storbench runs its own, on private addresses.
SERVICES_NOT_WANTED: Mapping[str, str] = {"docker-registry": "docker-registry"}


def setup_packages(*, dev: bool, labs: bool, k8s: bool) -> tuple[str, ...]:
    """The packages of the options asked for, each once, in order (the nfs build's with --labs)."""
    chosen = ["base", *(["dev"] if dev else []), *(["k8s"] if k8s else []), *(["labs", "fio-nfs"] if labs else [])]
    return tuple(dict.fromkeys(p for option in chosen for p in SETUP_PACKAGES[option]))
