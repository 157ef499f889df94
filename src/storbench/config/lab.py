"""The `lab` section: the one-machine test beds storbench brings up (Ceph, NFS, client hosts, Kubernetes, a
paced volume), and `hosts`, the fio servers a plan drives as clients. Pure."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from storbench.config.values import (
    Duration,
    FioScalar,
    LinkRate,
    Rate,
    Size,
    StrictModel,
    Sweep,
    T,
    _cpu_list_text,
    _no_duplicates,
)
from storbench.errors import did_you_mean
from storbench.model.ceph_options import CEPH_OPTIONS, NAME_RE, OWN_KEYS, option_value
from storbench.model.lab_point import NEVER
from storbench.units import CPU_LIST_PATTERN, parse_duration_s

__all__ = [
    "CephLabConfig", "HostsConfig", "HostsLabConfig", "K8sLabConfig", "LabConfig", "NfsLabConfig", "VolumeLabConfig",
    "server_address",
]


class CephLabConfig(StrictModel):
    """A real Ceph cluster on this machine (`storbench lab ceph`). Lists sweep: each combination is brought
    up, measured and torn down; its parameters are stored with every result."""

    osds: Sweep[Annotated[int, Field(ge=1, le=16)]] = Field([3], description="Number of OSDs.")
    osd_size: Sweep[Size] = Field([2 * 1024**3], description="Size of each OSD's sparse file (or memstore).")
    objectstore: Sweep[Literal["bluestore", "memstore"]] = Field(["bluestore"], description="bluestore (on "
                                                                 "sparse files) or memstore.")
    pool_size: Sweep[Annotated[int, Field(ge=1, le=16)]] = Field([3], description="Replica count of the "
                                                                 "pools the rbd targets use; the lab's CephFS and "
                                                                 "radosgw pools keep the largest of them, or with no "
                                                                 "rbd target the one size their cases ask.")
    cache_size: Sweep[Size] | None = Field(None, description="BlueStore cache per OSD (autotune off).")
    osd_memory_target: Sweep[Size] | None = Field(None, description="osd_memory_target per OSD (>= 896MiB).")
    db_device: Sweep[Literal["none", "fast"]] | None = Field(
        None, description="Where BlueStore keeps RocksDB and its WAL: `none` on the data device, `fast` on a "
        "memory-backed device (tmpfs: the one-machine stand-in for an Optane/NVMe DB device; labelled emulated). "
        "Needs a cluster per value.")
    db_size: Size = Field(1024**3, description="Size of each OSD's DB device with `db_device: fast`.")
    osds_per_device: Sweep[Annotated[int, Field(ge=1, le=8)]] | None = Field(
        None, description="OSDs per device, e.g. `[1, 2, 4]`: `devices` loop devices of `device_size`, each split "
        "into that many slices, an OSD on each, so device count and capacity stay fixed (`osds` and `osd_size` "
        "follow from them). Needs a cluster per value.")
    devices: Annotated[int, Field(ge=1, le=8)] = Field(1, description="Devices, with `osds_per_device`.")
    device_size: Size = Field(8 * 1024**3, description="Size of each device (sparse), with `osds_per_device`.")
    osd_cpuset: Sweep[Annotated[str, BeforeValidator(_cpu_list_text), Field(pattern=CPU_LIST_PATTERN)]] | None = Field(
        None, description="The CPUs the OSD daemons are pinned to, e.g. `[\"1\", \"0-1\"]` (a cpuset each; "
        "changed on the running cluster, no restart).")
    osd_cpus: Sweep[Annotated[float, Field(ge=0.01, le=256)]] | None = Field(
        None, description="A CPU quota per OSD daemon in cores, e.g. `[0.5, 1, 2]` (a cgroup each; changed on the "
        "running cluster, no restart).")
    hosts: Annotated[int, Field(ge=1, le=16)] | None = Field(
        None, description="Emulated CRUSH hosts the OSDs are spread over (osd.N on host.(N mod hosts + 1)): the "
        "pools keep each copy on another host, and a fault on `host.N` acts on all its OSDs, as a host that "
        "crashes or hangs. None: every OSD is its own failure domain.")
    cephfs: bool = Field(False, description="Also run an MDS and mount CephFS with ceph-fuse.")
    rgw: bool = Field(False, description="Also run radosgw, serving S3 from the cluster (for `s3` targets on "
                      "the lab; an S3 user is made for the run, its keys never stored).")
    bring_up: Literal["once", "each_repetition", "side_by_side"] = Field(
        "once", description="How settings that need a cluster per value (osds, osd_size, objectstore) are run. "
        "`once`: each cluster configuration is brought up once and all its repetitions run on it, one cluster "
        "after another. `each_repetition`: a fresh cluster per value for every round, in the order A B B A, so the "
        "setting is compared over several cluster instances, paired round by round. `side_by_side`: all the "
        "clusters up at once (each on its own ports and directory, when memory allows), their repetitions "
        "alternating A B B A like pool sizes: time drift cancels, but each value is still one cluster instance.")
    config: dict[str, Sweep[FioScalar]] = Field(
        {}, description="OSD options by name, each a value or a list to sweep, e.g. `{bluestore_cache_size: "
        "[1GiB, 4GiB], osd_op_queue: wpq}`; applied to the running cluster with `ceph config set` and an OSD "
        "restart. Only the options listed under \"Ceph options\" below.")

    @field_validator("osds", "osd_size", "objectstore", "pool_size", "cache_size", "osd_memory_target", "osd_cpus",
                     "db_device", "osds_per_device", "osd_cpuset")
    @classmethod
    def _distinct(cls, values: list[T] | None) -> list[T] | None:
        return None if values is None else _no_duplicates(values)

    @field_validator("config")
    @classmethod
    def _options(cls, value: dict[str, list[FioScalar]]) -> dict[str, list[int | str]]:
        out: dict[str, list[int | str]] = {}
        for name, values in value.items():
            if name in OWN_KEYS:
                raise ValueError(f"{name} has a key of its own: use {OWN_KEYS[name]}")
            if name not in CEPH_OPTIONS:
                shown = name if NAME_RE.fullmatch(name) else repr(name)
                hint = did_you_mean(name, list(CEPH_OPTIONS)) if NAME_RE.fullmatch(name) else None
                raise ValueError(f"{shown} is not an OSD option storbench sets"
                                 + (f" ({hint})" if hint else "; see the plan reference's Ceph options"))
            out[name] = _no_duplicates([option_value(name, v) for v in values])
        return out


class NfsLabConfig(StrictModel):
    """An NFS server on this machine (`storbench lab nfs`): nfs-ganesha's VFS backend exporting a directory,
    in a network namespace of its own."""


class HostsLabConfig(StrictModel):
    """Client hosts on this machine (`storbench lab hosts`): network namespaces on a private bridge, each with
    its own address and hostname, each running `fio --server`."""

    count: int = Field(ge=1, le=250, description="How many hosts (at least the largest `clients`).")
    link: Sweep[LinkRate] | None = Field(None, description="Each host's link rate, e.g. `[1Gbit, 10Gbit]` "
                                         "(a token bucket on both ends of its veth pair; changed live, A B B A).")
    link_delay: Duration | None = Field(None, description="Added one-way delay on each host's link, e.g. `0.5ms` "
                                        "(with `link`; needs the kernel's netem).")

    @field_validator("link")
    @classmethod
    def _distinct_links(cls, values: list[int] | None) -> list[int] | None:
        return None if values is None else _no_duplicates(values)

    @model_validator(mode="after")
    def _delay_on_a_link(self) -> HostsLabConfig:
        if self.link_delay is not None and self.link is None:  # the delay rides on the link's shaping
            raise ValueError("link_delay needs link: (the delay is added to each host's shaped link); give link: "
                             "e.g. 10Gbit with it")
        return self


def _never_or_duration(value: object) -> float | str:
    """`never`, or a positive duration in seconds."""
    if isinstance(value, str) and value.strip().lower() == NEVER:
        return NEVER
    seconds = parse_duration_s(value)
    if seconds <= 0:
        raise ValueError("give a positive duration, e.g. 30s, or never")
    return seconds


NeverOrDuration = Annotated[float | str, BeforeValidator(_never_or_duration)]


class K8sLabConfig(StrictModel):
    """A Kubernetes cluster on this machine (`storbench lab k8s`; binaries from scripts/build-kubernetes.sh): a
    control plane and `nodes` kubelets, each with its own containerd in a network namespace of its own; a dynamic
    host-path StorageClass, and local block volumes on loop devices for volume_mode Block."""

    nodes: int = Field(1, ge=1, le=8, description="Nodes (kubelets), each in its own network namespace; a case's "
                       "pods are spread over them, one per node while there are enough.")
    csi: bool = Field(False, description="Also storbench's CSI driver (scripts/build-csi.sh first) behind "
                      "Kubernetes' own CSI sidecars (provisioner, attacher, snapshotter, resizer, snapshot "
                      "controller): StorageClass `storbench-csi` (and `storbench-csi-wffc`, bound on first consumer), "
                      "attachable volumes (a VolumeAttachment per node, as a cloud disk), snapshots, clones and "
                      "expansion, each volume reachable from every node.")
    out_of_service_after: Sweep[NeverOrDuration] = Field(
        ["never"], description="How long after a node fails (the `fail node.N` fault) storbench gives it "
        "Kubernetes' out-of-service taint, which deletes its pods and detaches their volumes at once; `never` leaves "
        "Kubernetes' default path (pods evicted after 5 min, attachable volumes force-detached 6 min later). A list "
        "compares them: the values alternate on one cluster, repetition by repetition.")
    block_volumes: int = Field(3, ge=0, le=16, description="Local block PersistentVolumes (loop devices).")
    block_size: Size = Field(512 * 1024**2, description="Size of each block volume.")

    @field_validator("out_of_service_after")
    @classmethod
    def _distinct(cls, values: list[float | str]) -> list[float | str]:
        return _no_duplicates(values)


def server_address(server: str) -> str:
    """A fio server as `fio --client` takes it, "host,port" (default port 8765), from host, host:port or
    [v6]:port; ValueError otherwise. The plan's `hosts.servers` and the operator's `--fio-server` alike. An IPv6
    address goes as "ip6:ADDRESS,port": fio resolves "[::1]" as a host name, and fails."""
    match = re.fullmatch(r"^(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9][A-Za-z0-9.\-]{0,252})(?::([0-9]{1,5}))?$", server)
    if not match or (match.group(2) and not 0 < int(match.group(2)) < 65536):
        raise ValueError(f"server {server!r} must be host, host:port or [v6]:port")
    host = match.group(1)
    if host.startswith("["):
        try:
            host = "ip6:" + str(ipaddress.IPv6Address(host[1:-1]))
        except ValueError:
            raise ValueError(f"server {server!r}: {host} is not an IPv6 address") from None
    return f"{host},{match.group(2) or 8765}"


def server_text(server: str) -> str:
    """A server ("host,port" or "ip6:ADDRESS,port") as a plan or `--fio-server` writes it: host:port, [v6]:port."""
    host, _, port = server.rpartition(",")
    return f"[{host.removeprefix('ip6:')}]:{port}" if host.startswith("ip6:") else f"{host}:{port}"


class HostsConfig(StrictModel):
    """fio servers to drive as clients (`fio --server` on each; see the README for a systemd unit). Targets are
    on those machines: a directory must be absolute and exist on every server; a raw device is only read."""

    servers: list[str] = Field(description="Addresses of the fio servers: host, host:port or [v6]:port "
                               "(default port 8765). The first N run a case with `clients: N`.")

    @field_validator("servers")
    @classmethod
    def _servers(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("give at least one server")
        out = [server_address(server) for server in value]
        if len(set(out)) != len(out):
            raise ValueError("a server is listed twice")
        return out


class VolumeLabConfig(StrictModel):
    """A provisioned volume on this machine (`storbench lab volume`): a loop device over a sparse file served by
    storbench's pacer, which starts reads and writes no faster than the IOPS and bandwidth caps, evenly, as a cloud
    disk at its provisioned limit answers (at the cap each I/O waits iodepth / cap). The pacer runs in user space
    (FUSE): it serves about 15,000 4k IOPS on a 2-core machine, so a higher cap is reached only where the machine
    is faster. `kind: block` targets without a device use it (and may write to it: it is storbench's own)."""

    size: Size = Field(1024**3, description="Size of the device (a sparse file).")
    iops: Annotated[int, Field(ge=1, le=1_000_000)] | None = Field(
        None, description="IOPS cap, reads and writes together.")
    bw: Rate | None = Field(None, description="Bandwidth cap, reads and writes together, e.g. `100MiB/s`.")


class LabConfig(StrictModel):
    """One-machine test beds storbench brings up itself."""

    ceph: CephLabConfig | None = Field(None, description="A Ceph cluster: mon, mgr, OSDs on this machine.")
    nfs: NfsLabConfig | None = Field(None, description="An NFS server: nfs-ganesha on this machine.")
    hosts: HostsLabConfig | None = Field(None, description="Client hosts: fio servers in network namespaces.")
    k8s: K8sLabConfig | None = Field(None, description="A Kubernetes cluster on this machine for pvc targets.")
    volume: VolumeLabConfig | None = Field(None, description="A paced block device (a provisioned volume).")
