"""`storbench lab ceph|nfs|volume|hosts|k8s up|down|status` (real one-machine test beds) and `storbench k8s cleanup`."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from storbench.cli.common import _console
from storbench.errors import UserError
from storbench.units import format_bytes


def _plan_default(name: str) -> int | str:
    """A Ceph lab setting's default: the plan schema's (`lab.ceph`), the one place defaults live."""
    from storbench.config import CephLabConfig

    default = CephLabConfig.model_fields[name].default
    value = default[0] if isinstance(default, list) else default
    assert isinstance(value, int | str)
    return value

def cmd_lab_ceph(args: argparse.Namespace) -> int:
    from storbench.lab.ceph import RGW_USER, CephLab, rgw_endpoint
    from storbench.lab.ceph_conf import ceph_spec_for
    from storbench.model import CephLabPoint
    from storbench.units import parse_size_bytes

    lab = CephLab(Path(args.dir) if args.dir else None)
    out = _console()
    if args.action == "status":
        out.print(lab.status(), markup=False)
        return 0
    if args.action == "down":
        lab.down()
        out.print(f"ceph lab: down; {lab.root} removed", markup=False)
        for beside in CephLab.side_by_side(lab.root):  # clusters a side-by-side run left behind
            if beside.root.exists():
                beside.down()
                out.print(f"ceph lab: down; {beside.root} removed", markup=False)
        return 0
    pools = []
    for item in args.pool or [f"rbd:{_plan_default('pool_size')}"]:
        name, _, size = item.partition(":")
        if not name or not size.isdigit():
            raise UserError(f"--pool {item!r} is not NAME:SIZE", hint="e.g. --pool rbd2:2 --pool rbd3:3")
        pools.append((name, int(size)))
    try:
        point = CephLabPoint(
            osds=args.osds, osd_size_bytes=parse_size_bytes(args.osd_size), objectstore=args.objectstore,
            pool_size=0, cache_size_bytes=parse_size_bytes(args.cache_size) if args.cache_size else None,
            osd_memory_target_bytes=parse_size_bytes(args.osd_memory_target) if args.osd_memory_target else None,
            cephfs=args.cephfs, rgw=args.rgw)
        spec = ceph_spec_for(point, tuple(pools))
    except ValueError as exc:
        raise UserError(str(exc), hint="sizes look like 2GiB, 512MiB") from None
    if any(size > spec.osds for _, size in spec.pools):
        raise UserError(f"a pool of size {max(s for _, s in spec.pools)} needs as many OSDs, --osds is {spec.osds}")
    out.print(f"ceph lab: bringing up {spec.osds} OSDs ({spec.objectstore}) in {lab.root} ...", markup=False)
    info = lab.up(spec)
    out.print(f"ceph lab: up; conf {info.conf}", markup=False)
    out.print("pools: " + ", ".join(f"{n} (size {s})" for n, s in spec.pools), markup=False)
    if info.cephfs_mount:
        out.print(f"cephfs: mounted at {info.cephfs_mount}", markup=False)
    if info.spec.rgw:
        out.print(f"s3: radosgw at {rgw_endpoint(info)} (keys: radosgw-admin -c {info.conf} user info --uid "
                  f"{RGW_USER})", markup=False)
    out.print(f"try: CEPH_CONF={info.conf} ceph -s", markup=False)
    return 0


def cmd_lab_nfs(args: argparse.Namespace) -> int:
    from storbench.lab.nfs import NfsLab

    lab = NfsLab(Path(args.dir) if args.dir else None)
    out = _console()
    if args.action == "status":
        out.print(lab.status(), markup=False)
    elif args.action == "down":
        lab.down()
        out.print(f"nfs lab: down; namespace, veth pair and {lab.root} removed", markup=False)
    else:
        info = lab.up()
        out.print(f"nfs lab: up; {info.url} exports {info.export} (nfs-ganesha, VFS; NFSv3 and v4)", markup=False)
        out.print(f"plan target: {{kind: nfs, url: {info.url}, size: 256MiB}}", markup=False)
    return 0


def cmd_lab_volume(args: argparse.Namespace) -> int:
    from storbench.lab.volume import VolumeLab, VolumeSpec, caps_text
    from storbench.units import parse_size_bytes

    lab = VolumeLab(Path(args.dir) if args.dir else None)
    out = _console()
    if args.action == "status":
        out.print(lab.status(), markup=False)
    elif args.action == "down":
        left_alone = lab.down()  # a recorded device that now reads someone else's file: said instead
        out.print(left_alone or f"volume lab: down; loop device, pacer and {lab.root} removed", markup=False)
    else:
        try:
            bw = parse_size_bytes(args.bw.removesuffix("/s")) if args.bw else None
            spec = VolumeSpec(parse_size_bytes(args.size), args.iops, bw)
        except ValueError as exc:
            raise UserError(str(exc), hint="sizes look like 1GiB; bandwidth like 100MiB/s") from None
        info, left_alone = lab.up(spec)
        if left_alone:
            out.print(left_alone, markup=False)
        out.print(f"volume lab: up; {caps_text(info.spec, info.device)} (each I/O waits its turn, evenly)",
                  markup=False)
        out.print(f"plan target: {{kind: block, device: {info.device}, destructive: true}} (storbench's own device; "
                  "or a plan's lab: {volume: ...} brings one up itself)", markup=False)
    return 0


def cmd_lab_hosts(args: argparse.Namespace) -> int:
    from storbench.execute.fio_binary import find_fio
    from storbench.lab.hosts import HostsLab

    lab = HostsLab(Path(args.dir) if args.dir else None)
    out = _console()
    if args.action == "status":
        out.print(lab.status(), markup=False)
    elif args.action == "down":
        lab.down()
        out.print(f"hosts lab: down; namespaces, bridge and {lab.root} removed", markup=False)
    else:
        info = lab.up(args.count, find_fio())
        out.print(f"hosts lab: up; {info.count} fio servers: {info.servers[0]} .. {info.servers[-1]}", markup=False)
        out.print(f"plan: hosts: {{servers: [{', '.join(s.replace(',', ':') for s in info.servers[:3])}"
                  f"{', ...' if info.count > 3 else ''}]}}  (or lab: {{hosts: {{count: {info.count}}}}})",
                  markup=False)
    return 0


def cmd_lab_k8s(args: argparse.Namespace) -> int:
    from storbench.execute.fio_binary import find_fio
    from storbench.lab.k8s import K8sLab

    lab = K8sLab(Path(args.dir) if args.dir else None)
    out = _console()
    if args.action == "status":
        out.print(lab.status(), markup=False)
    elif args.action == "down":
        lab.down()
        out.print(f"k8s lab: down; pods, daemons, mounts, bridges and {lab.root} removed", markup=False)
    else:
        started = time.time()
        info = lab.up(find_fio())
        out.print(f"k8s lab: up in {time.time() - started:.0f}s; KUBECONFIG={info.kubeconfig}", markup=False)
        out.print(f"StorageClass {info.storage_class} (host-path, dynamic); fio image {info.fio_image}", markup=False)
    return 0


def cmd_k8s_cleanup(args: argparse.Namespace) -> int:
    from storbench.execute.kubernetes import cleanup

    kubeconfig = args.kubeconfig
    if kubeconfig is None:
        from storbench.lab.k8s import K8sLab

        info = K8sLab().info()
        kubeconfig = info.kubeconfig if info is not None and not os.environ.get("KUBECONFIG") else None
    deleted = cleanup(kubeconfig)
    out = _console()
    for line in deleted:
        out.print(f"deleted {line}", markup=False)
    out.print(f"k8s cleanup: {len(deleted)} objects labelled app.kubernetes.io/managed-by=storbench deleted",
              markup=False)
    return 0


def _name_the_labs(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                   lab_sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The top-level help's line for `lab`, from the labs the parser has: every lab, none forgotten."""
    labs = "|".join(lab_sub.choices)
    for action in sub._choices_actions:
        if action.dest == "lab":
            action.help = f"real one-machine test beds: `storbench lab {labs} up|down|status`"


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("lab", help="real one-machine test beds")  # the labs named below, once all are added
    lab_sub = p.add_subparsers(dest="lab_kind", metavar="LAB", required=True)
    ceph = lab_sub.add_parser("ceph", help="a Ceph cluster (mon, mgr, OSDs) from Debian's packages on this machine")
    ceph.add_argument("action", choices=("up", "down", "status"))
    osds, osd_size, objectstore = (_plan_default(name) for name in ("osds", "osd_size", "objectstore"))
    ceph.add_argument("--osds", type=int, default=osds, help=f"number of OSDs (default {osds})")
    ceph.add_argument("--osd-size", default=format_bytes(int(osd_size)),
                      help=f"size of each OSD (default {format_bytes(int(osd_size))}, sparse file)")
    ceph.add_argument("--objectstore", choices=("bluestore", "memstore"), default=objectstore)
    ceph.add_argument("--pool", action="append", metavar="NAME:SIZE", help="a pool and its replica size "
                      "(repeatable; default rbd:3)")
    ceph.add_argument("--cache-size", default=None, help="BlueStore cache per OSD, autotune off (e.g. 256MiB)")
    ceph.add_argument("--osd-memory-target", default=None, help="osd_memory_target (>= 896MiB)")
    ceph.add_argument("--cephfs", action="store_true", help="also run an MDS and mount CephFS with ceph-fuse")
    ceph.add_argument("--rgw", action="store_true", help="also run radosgw, serving S3")
    ceph.add_argument("--dir", default=None, help="lab directory, kept 0700 (default $STORBENCH_LAB_DIR/ceph or "
                      "/var/lib/storbench/lab/ceph)")
    ceph.set_defaults(func=cmd_lab_ceph)
    nfs = lab_sub.add_parser("nfs", help="an NFS server (nfs-ganesha, VFS backend) in a network namespace")
    nfs.add_argument("action", choices=("up", "down", "status"))
    nfs.add_argument("--dir", default=None, help="lab directory, kept 0700 (default $STORBENCH_LAB_DIR/nfs or "
                     "/var/lib/storbench/lab/nfs)")
    nfs.set_defaults(func=cmd_lab_nfs)
    volume = lab_sub.add_parser("volume", help="a provisioned volume: a loop device paced at an IOPS or bandwidth cap")
    volume.add_argument("action", choices=("up", "down", "status"))
    volume.add_argument("--size", default="1GiB", help="device size (default 1GiB, sparse file)")
    volume.add_argument("--iops", type=int, default=None, help="IOPS cap, reads and writes together")
    volume.add_argument("--bw", default=None, help="bandwidth cap, reads and writes together (e.g. 100MiB/s)")
    volume.add_argument("--dir", default=None, help="lab directory, kept 0700 (default $STORBENCH_LAB_DIR/volume "
                        "or /var/lib/storbench/lab/volume)")
    volume.set_defaults(func=cmd_lab_volume)
    hosts = lab_sub.add_parser("hosts", help="client hosts: fio servers in network namespaces on a private bridge")
    hosts.add_argument("action", choices=("up", "down", "status"))
    hosts.add_argument("--count", type=int, default=8, choices=range(1, 251), metavar="N",
                       help="how many hosts (1-250, default 8)")
    hosts.add_argument("--dir", default=None, help="lab directory, kept 0700 (default $STORBENCH_LAB_DIR/hosts or "
                       "/var/lib/storbench/lab/hosts)")
    hosts.set_defaults(func=cmd_lab_hosts)
    k8s = lab_sub.add_parser("k8s", help="a single-node Kubernetes cluster (scripts/build-kubernetes.sh first)")
    k8s.add_argument("action", choices=("up", "down", "status"))
    k8s.add_argument("--dir", default=None, help="lab directory, kept 0700 (default $STORBENCH_LAB_DIR/k8s or "
                     "/var/lib/storbench/lab/k8s)")
    k8s.set_defaults(func=cmd_lab_k8s)
    _name_the_labs(sub, lab_sub)

    p = sub.add_parser("k8s", help="Kubernetes housekeeping")
    k8s_sub = p.add_subparsers(dest="k8s_command", required=True)
    clean = k8s_sub.add_parser("cleanup", help="delete every pod, claim, config map and namespace storbench made")
    clean.add_argument("--kubeconfig", default=None, help="default: $KUBECONFIG, the k8s lab's, ~/.kube/config")
    clean.set_defaults(func=cmd_k8s_cleanup)
