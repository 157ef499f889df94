"""What a case runs on: targets as a tagged union on ``kind``, and what a target was sold as. Pure.

What of a target makes a case's identity (`case_ids.target_identity`) each kind declares: ``identity_first``, the
keys of the first release it sets (path, device, destructive) with the field each takes its value from, and
``identity_later``, fields added since, counted only when set (so ids of existing cases never change)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

__all__ = [
    "DEFAULT_FIO_IMAGE", "BlockTarget", "CephfsTarget", "Expectation",
    "ImportedTarget", "NfsTarget", "PathTarget", "PvcTarget", "RbdTarget",
    "S3Target", "TargetSpec",
]

# A pvc target's image when its plan names none: on the k8s lab, the fio image the lab's registry serves.
DEFAULT_FIO_IMAGE = "storbench.local/fio:local"


@dataclass(frozen=True)
class PathTarget:
    """A directory on any mounted filesystem; each fio job gets a file of ``size_bytes``."""

    name: str
    path: str
    size_bytes: int
    expect_fs: str | None = None  # refuse the directory unless it lands on this filesystem (ceph, nfs, ext4, ...)
    kind: ClassVar[Literal["path"]] = "path"
    identity_first: ClassVar[tuple[tuple[str, str], ...]] = (("path", "path"),)
    identity_later: ClassVar[tuple[str, ...]] = ("expect_fs",)


@dataclass(frozen=True)
class BlockTarget:
    """A raw block device; written only with ``destructive``. ``size_bytes``: only the first bytes (None: all).
    ``device`` None: the volume lab"s (storbench"s own loop device, which may be written)."""

    name: str
    device: str | None
    size_bytes: int | None = None
    destructive: bool = False
    kind: ClassVar[Literal["block"]] = "block"
    identity_first: ClassVar[tuple[tuple[str, str], ...]] = (("device", "device"), ("destructive", "destructive"))
    identity_later: ClassVar[tuple[str, ...]] = ()


@dataclass(frozen=True)
class _SizedTarget:
    """What the kinds measured on a working set of a fixed size have first: the target"s name and that size (of
    each fio job"s file, the image, or each claim)."""

    name: str
    size_bytes: int


@dataclass(frozen=True)
class RbdTarget(_SizedTarget):
    """A Ceph RBD image through fio"s rbd engine. ``conf`` None: the plan"s Ceph lab, or /etc/ceph/ceph.conf."""

    pool: str
    image: str
    client: str
    conf: str | None = None
    destructive: bool = False  # write an existing image storbench did not create
    kind: ClassVar[Literal["rbd"]] = "rbd"
    identity_first: ClassVar[tuple[tuple[str, str], ...]] = (("destructive", "destructive"),)
    identity_later: ClassVar[tuple[str, ...]] = ("pool", "image", "client", "conf")


@dataclass(frozen=True)
class CephfsTarget(_SizedTarget):
    """A directory on CephFS: ``path`` of a CephFS mounted by the user, or None for the Ceph lab"s mount."""

    path: str | None = None
    kind: ClassVar[Literal["cephfs"]] = "cephfs"
    identity_first: ClassVar[tuple[tuple[str, str], ...]] = (("path", "path"),)
    identity_later: ClassVar[tuple[str, ...]] = ()


@dataclass(frozen=True)
class NfsTarget(_SizedTarget):
    """An NFS export through fio"s nfs engine (libnfs): ``url`` nfs://server/export, or None for the NFS lab."""

    url: str | None = None
    kind: ClassVar[Literal["nfs"]] = "nfs"
    identity_first: ClassVar[tuple[tuple[str, str], ...]] = (("path", "url"),)
    identity_later: ClassVar[tuple[str, ...]] = ()


@dataclass(frozen=True)
class PvcTarget(_SizedTarget):
    """PersistentVolumeClaims of a StorageClass measured from fio pods."""

    storage_class: str | None  # None: the k8s lab"s
    access_mode: str
    volume_mode: str
    namespace: str
    container_image: str
    image_pull_policy: str
    node_selector: tuple[tuple[str, str], ...]
    destructive: bool
    start_budget_s: float
    # how the fio pods run (restricted: as FIO_USER, Kubernetes' restricted Pod Security Standard; baseline: as the
    # image's root without capabilities); not in a case's identity: it changes who runs fio, not what it measures
    pod_security: Literal["restricted", "baseline"] = "restricted"
    kind: ClassVar[Literal["pvc"]] = "pvc"
    identity_first: ClassVar[tuple[tuple[str, str], ...]] = (("destructive", "destructive"),)
    identity_later: ClassVar[tuple[str, ...]] = (
        "storage_class", "access_mode", "volume_mode", "namespace", "container_image", "image_pull_policy",
        "node_selector", "start_budget_s")


@dataclass(frozen=True)
class ImportedTarget:
    """Where imported fio results were measured, as far as their job text says (a directory or a file)."""

    name: str
    location: str | None = None
    kind: ClassVar[Literal["imported"]] = "imported"
    identity_first: ClassVar[tuple[tuple[str, str], ...]] = (("path", "location"),)
    identity_later: ClassVar[tuple[str, ...]] = ()

    @property
    def size_bytes(self) -> int | None:
        return None


@dataclass(frozen=True)
class S3Target:
    """An S3 bucket through fio"s http engine: ``endpoint`` None for the Ceph lab"s radosgw (its bucket
    ``storbench`` made by storbench). Keys come from the operator at run time (the command line or the environment)
    and are never part of the target."""

    name: str
    endpoint: str | None
    bucket: str | None
    region: str
    kind: ClassVar[Literal["s3"]] = "s3"
    identity_first: ClassVar[tuple[tuple[str, str], ...]] = (("path", "endpoint"),)
    identity_later: ClassVar[tuple[str, ...]] = ("bucket", "region")

    @property
    def size_bytes(self) -> int | None:
        return None


TargetSpec = (PathTarget | BlockTarget | RbdTarget | CephfsTarget | NfsTarget | PvcTarget | S3Target
              | ImportedTarget)


@dataclass(frozen=True)
class Expectation:
    """What a target was sold or provisioned as (its plan"s `expect`): results are shown as a share of it."""

    iops: float | None = None
    bw_bytes_per_s: int | None = None
