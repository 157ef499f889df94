"""A private ceph.conf for a one-machine lab cluster. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from storbench.model import CephLabPoint

GiB = 1024**3
MIN_OSD_MEMORY_TARGET = 896 * 1024 * 1024

# Ports apart from Ceph's defaults, so a lab never collides with a real cluster on the same machine.
MON_V2_PORT = 13300
MON_V1_PORT = 16789
OSD_PORT_MIN = 16800
OSD_PORT_MAX = 17300


@dataclass(frozen=True)
class CephLabSpec:
    """What to build. Every field is a lab parameter that plans may sweep."""

    osds: int
    osd_size_bytes: int
    objectstore: str  # bluestore or memstore
    pools: tuple[tuple[str, int], ...]  # (name, replica size)
    cache_size_bytes: int | None = None  # BlueStore cache, autotune off (Debian's ceph-osd ignores memory target)
    osd_memory_target_bytes: int | None = None
    pg_num: int = 32
    cephfs: bool = False


LOOPBACK = "127.0.0.1"


def mon_address(address: str = LOOPBACK) -> str:
    return f"[v2:{address}:{MON_V2_PORT},v1:{address}:{MON_V1_PORT}]"


def render_ceph_conf(spec: CephLabSpec, fsid: str, root: str, address: str = LOOPBACK) -> str:
    """ceph.conf for the lab in directory ``root``, its daemons on ``address`` (loopback, or the hosts lab's
    bridge so that fio servers in network namespaces reach them).

    Admin socket, pid and log file settings live in the daemon sections only: clients (fio's rbd engine,
    the ceph CLI) would otherwise collide on one admin socket.
    """
    default_size = max((size for _, size in spec.pools), default=min(3, spec.osds))
    lines = [
        "[global]",
        f"fsid = {fsid}",
        f"mon host = {mon_address(address)}",
        "mon initial members = a",
        "auth cluster required = cephx",
        "auth service required = cephx",
        "auth client required = cephx",
        f"keyring = {root}/ceph.client.admin.keyring",
        "osd crush chooseleaf type = 0",
        f"osd pool default size = {default_size}",
        "osd pool default min size = 1",
        f"osd pool default pg num = {spec.pg_num}",
        f"osd pool default pgp num = {spec.pg_num}",
        "mon allow pool size one = true",
        "mon allow pool delete = true",
        "mon warn on pool no redundancy = false",
        "auth allow insecure global id reclaim = false",
        "mon warn on insecure global id reclaim allowed = false",
        "mon data avail warn = 2",
        "mon data avail crit = 1",
        "paxos propose interval = 0.1",
        "ms bind ipv4 = true",
        "ms bind ipv6 = false",
        f"ms bind port min = {OSD_PORT_MIN}",
        f"ms bind port max = {OSD_PORT_MAX}",
        f"run dir = {root}/run",
        f"public addr = {address}",
        f"cluster addr = {address}",
        "",
        "[mon]",
        f"mon data = {root}/mon.$id",
        f"admin socket = {root}/run/$cluster-$name.asok",
        f"log file = {root}/log/$name.log",
        "",
        "[mgr]",
        f"mgr data = {root}/mgr.$id",
        f"keyring = {root}/mgr.$id/keyring",
        f"admin socket = {root}/run/$cluster-$name.asok",
        f"log file = {root}/log/$name.log",
        "",
        "[osd]",
        f"osd data = {root}/osd.$id",
        f"keyring = {root}/osd.$id/keyring",
        f"admin socket = {root}/run/$cluster-$name.asok",
        f"log file = {root}/log/$name.log",
        f"osd objectstore = {spec.objectstore}",
        "osd op num shards = 1",
        "osd op num threads per shard = 2",
    ]
    if spec.objectstore == "bluestore":
        lines += [
            "bluestore block create = true",
            f"bluestore block size = {spec.osd_size_bytes}",
            "bluestore fsck on mount = false",
        ]
        if spec.cache_size_bytes is not None:
            lines += ["bluestore cache autotune = false", f"bluestore cache size = {spec.cache_size_bytes}",
                      "bluestore cache meta ratio = 0.4", "bluestore cache kv ratio = 0.2"]
    else:
        lines.append(f"memstore device bytes = {spec.osd_size_bytes}")
    target = spec.osd_memory_target_bytes or MIN_OSD_MEMORY_TARGET
    lines.append(f"osd memory target = {max(target, MIN_OSD_MEMORY_TARGET)}")
    lines += [
        "",
        "[mds]",
        f"mds data = {root}/mds.$id",
        f"keyring = {root}/mds.$id/keyring",
        f"admin socket = {root}/run/$cluster-$name.asok",
        f"log file = {root}/log/$name.log",
        "",
    ]
    return "\n".join(lines)


def ceph_spec_for(point: CephLabPoint, pools: tuple[tuple[str, int], ...]) -> CephLabSpec:
    """The cluster one point of a plan's lab sweep asks for, with ``pools`` as (name, replica size)."""
    return CephLabSpec(
        osds=point.osds,
        osd_size_bytes=point.osd_size_bytes,
        objectstore=point.objectstore,
        cache_size_bytes=point.cache_size_bytes,
        osd_memory_target_bytes=point.osd_memory_target_bytes,
        pools=tuple(sorted(set(pools))),
        cephfs=point.cephfs,
    )
