"""Target kinds (shell): for each kind, how it is checked before any I/O and how it is prepared once the labs
it needs are up. The run loop asks this registry and never branches on a kind itself."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from storbench.errors import UserError
from storbench.execute.k8s_manifests import pod_job_binding
from storbench.fio.jobfile import JobBinding, escape_fio_path
from storbench.model import (
    DEFAULT_FIO_IMAGE,
    BlockTarget,
    Case,
    CephfsTarget,
    NfsTarget,
    PathTarget,
    PvcTarget,
    RbdTarget,
    S3Target,
    TargetSpec,
    rw_writes,
)
from storbench.targets.base import FileCheckPlace, PreparedTarget
from storbench.targets.block import check_block_target
from storbench.targets.ceph import DEFAULT_CEPH_CONF, check_rbd_target, prepare_rbd_target
from storbench.targets.local import check_path_target, remote_target
from storbench.targets.nfs import check_nfs_target, prepare_nfs_target
from storbench.targets.s3 import LAB_BUCKET, NO_S3_ACCESS, S3Access, S3Service, load_credentials, prepare_s3_target


@dataclass(frozen=True)
class LabEnvironment:
    """What the labs that are up offer the targets of one lab configuration."""

    fio_binary: str
    ceph_conf: str | None = None
    volume_device: str | None = None  # the volume lab's loop device
    cephfs_mount: str | None = None
    nfs_url: str | None = None
    s3: S3Service | None = None  # the Ceph lab's radosgw, with the lab's S3 user's keys (in memory only)
    servers: tuple[str, ...] = ()  # the fio servers ("address,port") the cases run on; empty: this machine

    @property
    def on_servers(self) -> bool:
        """The cases run on fio servers (each client an RBD image of its own)."""
        return bool(self.servers)


@dataclass(frozen=True)
class CheckContext:
    """How targets are checked before any I/O. ``create``: make missing directories (a run, not a dry run).
    ``dry_run`` (`storbench plan`): read no credential and send nothing over the network. ``s3``: what the operator
    (never the plan) lets S3 targets use; ``images``: the container images it lets pvc targets run."""

    create: bool
    dry_run: bool = False
    s3: S3Access = NO_S3_ACCESS
    images: frozenset[str] = frozenset()  # container images the operator lets pvc targets run (`--image`)


# check(spec, cases, context, where) -> the prepared target, or None when it is prepared once its lab is up
Check = Callable[[TargetSpec, Sequence[Case], CheckContext, str], PreparedTarget | None]
# prepare(spec, cases, environment) -> the prepared target
Prepare = Callable[[TargetSpec, Sequence[Case], LabEnvironment], PreparedTarget]


@dataclass(frozen=True)
class TargetKind:
    check: Check
    prepare: Prepare | None = None  # None: check always prepares it
    on_servers: bool = False  # fio servers can run it (directories and devices are theirs)


T = TypeVar("T", PathTarget, BlockTarget, RbdTarget, CephfsTarget, NfsTarget, PvcTarget, S3Target)


def _as(spec: TargetSpec, kind: type[T]) -> T:
    """The target as its kind's type (the registry dispatched on ``kind``, so this cannot fail)."""
    if not isinstance(spec, kind):
        raise TypeError(f"target '{spec.name}' is {spec.kind}, not {kind.kind}")
    return spec


def _path_check(spec: TargetSpec, cases: Sequence[Case], context: CheckContext, where: str) -> PreparedTarget:
    return check_path_target(_as(spec, PathTarget), cases, create=context.create, where=where)


def _block_check(spec: TargetSpec, cases: Sequence[Case], context: CheckContext, where: str) -> PreparedTarget | None:
    """A device the user names is checked now; the volume lab's exists only once the lab is up."""
    spec = _as(spec, BlockTarget)
    if spec.device is None:
        return None
    return check_block_target(spec, cases, where=where)


def _block_prepare(spec: TargetSpec, cases: Sequence[Case], env: LabEnvironment) -> PreparedTarget:
    """The volume lab's loop device (storbench made it over a file of its own: writing to it destroys nothing)."""
    spec = _as(spec, BlockTarget)
    if env.volume_device is None:
        raise UserError(f"target '{spec.name}': no device and no volume lab", hint="give device:, or add lab.volume")
    return PreparedTarget(
        spec=replace(spec, device=env.volume_device),
        binding=JobBinding(options=(("filename", escape_fio_path(env.volume_device)),)),
        details=(("kind", "block"), ("device", env.volume_device), ("volume_lab", "yes")),
        check_place=FileCheckPlace(env.volume_device, spec.size_bytes) if spec.size_bytes else None)


def _cephfs_check(spec: TargetSpec, cases: Sequence[Case], context: CheckContext, where: str) -> PreparedTarget | None:
    """A CephFS the user mounted is a directory; the lab's is mounted only once the lab is up."""
    spec = _as(spec, CephfsTarget)
    if spec.path is not None and not any(c.lab for c in cases):
        return check_path_target(spec, cases, create=context.create, where=where)
    return None


def _cephfs_prepare(spec: TargetSpec, cases: Sequence[Case], env: LabEnvironment) -> PreparedTarget:
    spec = _as(spec, CephfsTarget)
    directory = spec.path or (f"{env.cephfs_mount}/storbench" if env.cephfs_mount else None)
    if directory is None:
        raise UserError(f"target '{spec.name}': no CephFS is mounted", hint="set lab.ceph.cephfs: true, or give path")
    return check_path_target(replace(spec, path=directory), cases, create=True, claim=True)


def _rbd_check(spec: TargetSpec, cases: Sequence[Case], context: CheckContext, where: str) -> None:
    check_rbd_target(_as(spec, RbdTarget), cases, where=where)


def _rbd_prepare(spec: TargetSpec, cases: Sequence[Case], env: LabEnvironment) -> PreparedTarget:
    spec = _as(spec, RbdTarget)
    return prepare_rbd_target(spec, spec.conf or env.ceph_conf or DEFAULT_CEPH_CONF, env.fio_binary,
                              clients=max(c.clients for c in cases) if env.on_servers else 0,
                              writes=any(rw_writes(c.workload.rw) for c in cases))


def _nfs_check(spec: TargetSpec, cases: Sequence[Case], context: CheckContext, where: str) -> None:
    check_nfs_target(_as(spec, NfsTarget), cases, where=where)


def _nfs_prepare(spec: TargetSpec, cases: Sequence[Case], env: LabEnvironment) -> PreparedTarget:
    spec = _as(spec, NfsTarget)
    url = spec.url or env.nfs_url
    if url is None:
        raise UserError(f"target '{spec.name}': no NFS url and no NFS lab", hint="give url: nfs://server/export")
    return prepare_nfs_target(spec, url, cases, servers=env.servers, client_fio=env.fio_binary)


def _s3_check(spec: TargetSpec, cases: Sequence[Case], context: CheckContext, where: str) -> PreparedTarget | None:
    """An S3 service the plan names gets the operator's keys only if the operator allows its endpoint; it is
    checked now (keys, bucket), except in a dry run. The lab's radosgw is prepared once the lab is up."""
    spec = _as(spec, S3Target)
    if spec.endpoint is None or spec.bucket is None:
        return None
    if not context.s3.allows(spec.endpoint):
        raise UserError(f"target '{spec.name}': endpoint {spec.endpoint} is not one the operator allows S3 keys to "
                        "go to", where=where, hint=f"if you trust it, run with --s3-endpoint {spec.endpoint} (or "
                        "set STORBENCH_S3_ENDPOINTS)")
    if context.dry_run:
        return None
    try:
        credentials = load_credentials(context.s3)
    except UserError as exc:
        raise UserError(f"target '{spec.name}': {exc.message}", where=where, hint=exc.hint) from None
    return prepare_s3_target(spec, S3Service(spec.endpoint, spec.region, credentials, allowed=True), spec.bucket,
                             cases, where)


def _s3_prepare(spec: TargetSpec, cases: Sequence[Case], env: LabEnvironment) -> PreparedTarget:
    spec = _as(spec, S3Target)
    if env.s3 is None:
        raise UserError(f"target '{spec.name}': no endpoint and no radosgw", hint="set lab.ceph.rgw: true")
    return prepare_s3_target(spec, env.s3, spec.bucket or LAB_BUCKET, cases)


def _pvc_check(spec: TargetSpec, cases: Sequence[Case], context: CheckContext, where: str) -> None:
    """A container image runs what it likes in the operator's cluster (with the claim, on the cluster's network,
    beside the nodes' metadata services): a plan from someone else names only storbench's own fio image, or one the
    operator allows. Claims are made by the Kubernetes executor."""
    spec = _as(spec, PvcTarget)
    if spec.container_image != DEFAULT_FIO_IMAGE and spec.container_image not in context.images:
        raise UserError(f"target '{spec.name}': image {spec.container_image} is not one the operator allows to "
                        "run in the cluster (an image runs any program, not only fio)", where=where,
                        hint=f"if you trust it, run with --image {spec.container_image} (or set STORBENCH_IMAGES)")


def _pvc_prepare(spec: TargetSpec, cases: Sequence[Case], env: LabEnvironment) -> PreparedTarget:

    spec = _as(spec, PvcTarget)
    return PreparedTarget(spec=spec, binding=pod_job_binding(spec), details=(
        ("kind", "pvc"), ("storage_class", spec.storage_class or "(lab default)"),
        ("access_mode", spec.access_mode or ""), ("volume_mode", spec.volume_mode or ""),
        ("namespace", spec.namespace or "")))


KINDS: dict[str, TargetKind] = {
    "path": TargetKind(_path_check, on_servers=True),
    "block": TargetKind(_block_check, _block_prepare, on_servers=True),
    "cephfs": TargetKind(_cephfs_check, _cephfs_prepare, on_servers=True),
    "rbd": TargetKind(_rbd_check, _rbd_prepare),
    "nfs": TargetKind(_nfs_check, _nfs_prepare),
    "pvc": TargetKind(_pvc_check, _pvc_prepare),
    "s3": TargetKind(_s3_check, _s3_prepare),
}


def _kind(spec: TargetSpec) -> TargetKind:
    kind = KINDS.get(spec.kind)
    if kind is None:
        raise UserError(f"target '{spec.name}': kind '{spec.kind}' is not supported here")
    return kind


def by_target(cases: Sequence[Case]) -> dict[str, list[Case]]:
    """Cases grouped by target name, in order of first appearance."""
    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.target.name, []).append(case)
    return groups


def check_targets(cases: Sequence[Case], *, create: bool, remote: bool = False,
                  where: Callable[[str], str] = lambda name: "", dry_run: bool = False,
                  s3: S3Access = NO_S3_ACCESS, images: frozenset[str] = frozenset()) -> dict[str, PreparedTarget]:
    """Check every target of a plan before any I/O; ``create`` makes missing directories; ``dry_run`` reads no
    credential and sends nothing; ``s3`` is what the operator lets S3 targets use, ``images`` the container images
    it lets pvc targets run.
    ``where`` turns a target name into its place in the plan file, for messages. Targets that need a lab
    (rbd, nfs, the lab's CephFS) or a cluster (pvc) are only checked here and prepared by the run once it is up.
    ``remote``: the I/O runs on other machines (the plan's fio servers), so their directories and devices are not
    looked at here."""
    prepared: dict[str, PreparedTarget] = {}
    context = CheckContext(create=create, dry_run=dry_run, s3=s3, images=images)
    for name, target_cases in by_target(cases).items():
        spec = target_cases[0].target
        kind = _kind(spec)
        if remote and isinstance(spec, PathTarget | BlockTarget | CephfsTarget):
            prepared[name] = remote_target(spec)
            continue
        if remote and isinstance(spec, NfsTarget):
            continue  # the servers run their own nfs-capable fio; laid out through them once the run starts
        found = kind.check(spec, target_cases, context, where(name))
        if found is not None:
            prepared[name] = found
    return prepared


def prepare_target(spec: TargetSpec, cases: Sequence[Case], env: LabEnvironment) -> PreparedTarget:
    """A target that could not be prepared before its lab was up, prepared now."""
    prepare = _kind(spec).prepare
    if prepare is None:
        raise AssertionError(f"target kind {spec.kind} is prepared when checked")
    return prepare(spec, cases, env)
