"""The `targets` section: one model per target kind, a tagged union on `kind` (``TargetConfig``), and what a
target may carry besides (`expect`, `precondition`). Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Discriminator, Field, Tag, field_validator, model_validator

from storbench.config.values import (
    MAX_COUNT,
    SAFE_NAME_RE,
    SAFE_PATH_RE,
    Duration,
    Rate,
    Size,
    StrictModel,
    matching,
    path_length_problem,
)
from storbench.model import (
    DEFAULT_FIO_IMAGE,
    BlockTarget,
    CephfsTarget,
    NfsTarget,
    PathTarget,
    PvcTarget,
    RbdTarget,
    S3Target,
)
from storbench.units import parse_size_bytes

__all__ = [
    "DNS_LABEL_RE", "IMAGE_RE", "LABEL_KEY_RE", "LABEL_VALUE_RE", "TARGET_KINDS", "BlockTargetConfig",
    "CephfsTargetConfig", "ExpectConfig", "NfsTargetConfig", "PathTargetConfig", "PreconditionConfig",
    "PvcTargetConfig", "RbdTargetConfig", "S3TargetConfig", "TargetConfig",
]


class ExpectConfig(StrictModel):
    """What a target was sold or provisioned as; figures and tables show results as a share of it, and a
    capped verdict near it says so. storbench keeps no table of providers' limits: you state them."""

    iops: Annotated[float, Field(gt=0, le=MAX_COUNT)] | None = Field(
        None, description="Expected IOPS (all directions).")
    bw: Rate | None = Field(None, description="Expected throughput, e.g. `125MiB/s`.")


def _times(value: object) -> object:
    """`2x` -> 2."""
    if isinstance(value, str) and value.strip().lower().endswith("x"):
        return value.strip()[:-1]
    return value


class PreconditionConfig(StrictModel):
    """Written to a target before its first measurement, once its lab is up (again on every fresh cluster):
    a sequential fill of its working set `fill` times (`{fill: 2x, bs: 128k, rw: write}`), or a workload for a
    time (`{workload: randwrite 4k, for: 10m}`). Stored with the run; writes, so a raw device needs
    `destructive: true`."""

    fill: Annotated[int, BeforeValidator(_times), Field(ge=1, le=10)] | None = Field(
        None, description="Write the whole working set this many times, e.g. 2x.")
    workload: str | None = Field(None, description="Pattern and block size, e.g. `randwrite 4k` (or set rw, bs).")
    rw: Literal["write", "randwrite"] | None = Field(None, description="write (default for fill) or randwrite "
                                                     "(default for `for`).")
    bs: Size | None = Field(None, description="Block size (default 128k for fill, 4k for `for`).")
    iodepth: int = Field(16, ge=1, le=4096, description="Outstanding I/Os per job.")
    duration: Duration | None = Field(None, alias="for", description="Run the workload this long, e.g. 10m.")

    @model_validator(mode="after")
    def _one_kind(self) -> PreconditionConfig:
        if (self.fill is None) == (self.duration is None):
            raise ValueError("set either fill (e.g. 2x) or for (e.g. 10m)")
        if self.workload is not None:
            if self.rw is not None or self.bs is not None:
                raise ValueError("set workload or rw and bs, not both")
            parts = self.workload.split()
            if len(parts) != 2 or parts[0] not in ("write", "randwrite"):
                raise ValueError(f"workload {self.workload!r} must be like 'randwrite 4k' (write or randwrite)")
            try:
                bs = parse_size_bytes(parts[1])
            except ValueError as exc:
                raise ValueError(f"workload {self.workload!r}: {exc}") from None
            if bs <= 0 or bs % 512:
                raise ValueError(f"the workload's block size {bs} is not a positive multiple of 512 bytes (it "
                                 "writes with the cases' O_DIRECT)")
        if self.bs is not None and (self.bs <= 0 or self.bs % 512):
            raise ValueError(f"bs {self.bs} is not a positive multiple of 512 bytes (the precondition writes "
                             "with the cases' O_DIRECT)")
        return self

    @property
    def pattern(self) -> str:
        if self.workload is not None:
            return self.workload.split()[0]
        return self.rw or ("write" if self.fill is not None else "randwrite")

    @property
    def bs_bytes(self) -> int:
        if self.workload is not None:
            return parse_size_bytes(self.workload.split()[1])
        return self.bs or (128 * 1024 if self.fill is not None else 4096)


PRECONDITION_FIELD = Field(None, description="Written before the target's first measurement: `{fill: 2x}` or "
                           "`{workload: randwrite 4k, for: 10m}` (see `precondition`).")


EXPECT_FIELD = Field(None, description="What the storage was sold as, e.g. `{iops: 3000, bw: 125MiB/s}`: shown "
                     "as % of expected.")


class PathTargetConfig(StrictModel):
    """A directory on any mounted filesystem (local disk, CephFS or NFS mount)."""

    kind: Literal["path"] = Field(description="`path`")
    path: Annotated[str, matching(SAFE_PATH_RE, "path {value!r} has characters storbench will not pass to fio "
                                  "(allowed: letters, digits, _ . / + @ % , = ~ - and a space, but not at "
                                  "either end: fio would strip it)", path=True)] = Field(
        description="Directory for the test files; its last component is created if missing (its parent must "
        "exist). Relative to the current directory.")
    size: Size = Field(description="Size of each fio job's file (fio `size`), e.g. 256MiB.")
    expect_fs: Annotated[str, matching(r"^[a-z0-9][a-z0-9._-]{0,31}$", "expect_fs {value!r} is not a filesystem "
                                       "type name (e.g. ceph, nfs, ext4, xfs)")] | None = Field(
        None, description="The filesystem path must be on, e.g. `ceph`, `nfs`, `xfs`: refused when it is on another "
        "(an unmounted mount point).")
    expect: ExpectConfig | None = EXPECT_FIELD
    precondition: PreconditionConfig | None = PRECONDITION_FIELD

    @field_validator("size")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("size must be larger than 0")
        return value

    def spec(self, name: str) -> PathTarget:
        return PathTarget(name=name, path=self.path, size_bytes=self.size, expect_fs=self.expect_fs)


class BlockTargetConfig(StrictModel):
    """A raw block device. Writing destroys its data: refused unless ``destructive: true``."""

    kind: Literal["block"] = Field(description="`block`")
    device: str | None = Field(None, description="The device node, e.g. /dev/nvme0n1; none: the volume lab's "
                               "device (`lab.volume`).")
    destructive: bool = Field(False, description="Allow write and trim workloads, destroying the data.")
    size: Size | None = Field(None, description="Limit I/O to the first SIZE bytes (default: whole device).")
    expect: ExpectConfig | None = EXPECT_FIELD
    precondition: PreconditionConfig | None = PRECONDITION_FIELD

    @field_validator("device")
    @classmethod
    def _safe_device(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if (problem := path_length_problem(value)) is not None:
            raise ValueError(problem)
        if not value.startswith("/dev/") or not SAFE_PATH_RE.fullmatch(value) or " " in value:
            raise ValueError(f"device {value!r} must be a /dev/ path of letters, digits and _ . / -")
        if any(part in (".", "..") for part in value.split("/")):  # /dev/../home/x is no device in /dev
            raise ValueError(f"device {value!r} must name a device in /dev, without '.' or '..'")
        return value

    def spec(self, name: str) -> BlockTarget:
        return BlockTarget(name=name, device=self.device, size_bytes=self.size, destructive=self.destructive)


# A Ceph pool, image or client name.
CephName = Annotated[str, matching(SAFE_NAME_RE, "{value!r} must be letters, digits, '_', '.' or '-'")]


class RbdTargetConfig(StrictModel):
    """A Ceph RBD image, driven through librbd by fio's rbd engine (no kernel client needed)."""

    kind: Literal["rbd"] = Field(description="`rbd`")
    pool: CephName = Field("rbd", description="The pool; a Ceph lab creates it with its `pool_size`.")
    image: CephName = Field("storbench", description="The image; created with `size` if missing. On fio "
                            "servers (`hosts`, `lab.hosts`) each client N gets its own image `<image>-cN`.")
    size: Size = Field(description="Image size (and fio's `size`), e.g. 1GiB.")
    client: CephName = Field("admin", description="cephx client name, without 'client.'.")
    destructive: bool = Field(False, description="Allow writes to an existing image storbench did not create "
                              "(destroying its data); images storbench creates are marked and always writable.")
    conf: Annotated[str, matching(SAFE_PATH_RE, "conf {value!r} has characters storbench will not "
                                  "pass on", path=True)] | None = Field(
        None, description="ceph.conf of the cluster; default: the plan's Ceph lab, or /etc/ceph/ceph.conf without a "
        "lab. Real fio servers use their own /etc/ceph/ceph.conf and keyring.")
    expect: ExpectConfig | None = EXPECT_FIELD
    precondition: PreconditionConfig | None = PRECONDITION_FIELD

    def spec(self, name: str) -> RbdTarget:
        return RbdTarget(name=name, size_bytes=self.size, pool=self.pool, image=self.image, client=self.client,
                         conf=self.conf, destructive=self.destructive)


class NfsTargetConfig(StrictModel):
    """An NFS export driven by fio's nfs engine (libnfs, NFSv3; no kernel client or mount needed). A
    kernel-mounted NFS directory is simply a `path` target."""

    kind: Literal["nfs"] = Field(description="`nfs`")
    url: Annotated[str, matching(r"^nfs://[A-Za-z0-9.:-]+(/[A-Za-z0-9_.,/+@%=~-]*)?$", "{value!r} is not an "
                                 "nfs://server/export URL storbench can pass on (a host name or an IPv4 address: "
                                 "an IPv6 address in brackets cannot be written into fio's job)")] | None = Field(
        None, description="nfs://server/export; default: the plan's NFS lab.")
    size: Size = Field(description="Size of each fio job's file, laid out before the first case.")
    expect: ExpectConfig | None = EXPECT_FIELD
    precondition: PreconditionConfig | None = PRECONDITION_FIELD

    def spec(self, name: str) -> NfsTarget:
        return NfsTarget(name=name, url=self.url, size_bytes=self.size)


class CephfsTargetConfig(StrictModel):
    """A directory on CephFS: the plan's Ceph lab mounts it with ceph-fuse (lab.ceph.cephfs: true), or give
    `path` for a CephFS you mounted yourself."""

    kind: Literal["cephfs"] = Field(description="`cephfs`")
    path: Annotated[str, matching(SAFE_PATH_RE, "path {value!r} has characters storbench will not pass "
                                  "to fio (or a space at either end)", path=True)] | None = Field(
        None, description="A directory on a mounted CephFS; default: the lab's mount.")
    size: Size = Field(description="Size of each fio job's file (fio `size`).")
    expect: ExpectConfig | None = EXPECT_FIELD
    precondition: PreconditionConfig | None = PRECONDITION_FIELD

    def spec(self, name: str) -> CephfsTarget:
        return CephfsTarget(name=name, path=self.path, size_bytes=self.size)


BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
REGION_RE = re.compile(r"^[a-z0-9-]{1,40}$")  # as S3 signs it (the binding refuses others too)
PORT_RE = "(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"  # 1-65535


class S3TargetConfig(StrictModel):
    """An S3 bucket, driven by fio's http engine in S3 mode (the fio storbench builds with libcurl): the plan's
    Ceph lab's radosgw (`lab.ceph.rgw: true`; storbench makes an S3 user and the bucket) or any S3 service. Keys
    come from the operator, never from a plan: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or `storbench run
    --s3-credentials-file`, and go only to an endpoint the operator allows (`--s3-endpoint`); they reach fio
    through its environment and are never stored. This run's objects (`storbench.<run token>.*`) are removed
    after the run."""

    kind: Literal["s3"] = Field(description="`s3`")
    endpoint: Annotated[str, matching(rf"^https?://[A-Za-z0-9.-]+(:{PORT_RE})?/?$", "{value!r} is not an "
                                      "http(s)://host[:port] endpoint (a port from 1 to 65535)")] | None = Field(
        None, description="http(s)://host[:port]; default: the plan's Ceph lab's radosgw.")
    bucket: Annotated[str, matching(BUCKET_RE, "{value!r} is not an S3 bucket name (3-63 lowercase letters, digits, "
                                    "'.', '-')")] | None = Field(
        None, description="An existing bucket; default on the lab: `storbench`, made for the run.")
    region: Annotated[str, matching(REGION_RE, "{value!r} is not a region name (lowercase letters, digits, "
                                    "'-')")] = Field(
        "us-east-1", description="The region requests are signed for.")
    expect: ExpectConfig | None = EXPECT_FIELD

    @model_validator(mode="before")
    @classmethod
    def _no_credentials(cls, data: Any) -> Any:
        named = [key for key in ("credentials_file", "profile") if isinstance(data, dict) and key in data]
        if named:
            raise ValueError(f"{named[0]} is not a plan setting: S3 keys come from the operator, not the plan "
                             "(storbench run --s3-credentials-file FILE [--s3-profile NAME], or AWS_ACCESS_KEY_ID "
                             "and AWS_SECRET_ACCESS_KEY)")
        return data

    def spec(self, name: str) -> S3Target:
        return S3Target(name=name, endpoint=self.endpoint, bucket=self.bucket, region=self.region)




DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
IMAGE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-/:@]{0,254}$")
LABEL_KEY_RE = re.compile(r"^([a-z0-9.\-]{1,253}/)?[A-Za-z0-9]([A-Za-z0-9._\-]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE_RE = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9._\-]{0,61}[A-Za-z0-9])?)?$")


class PvcTargetConfig(StrictModel):
    """PersistentVolumeClaims of a Kubernetes StorageClass, measured from fio pods (`clients` of them, spread
    over the nodes). Everything storbench creates is labelled and removed after the run (`storbench k8s
    cleanup` for leftovers)."""

    kind: Literal["pvc"] = Field(description="`pvc`")
    storage_class: Annotated[str, matching(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", "storage_class must be a DNS "
                                           "subdomain name")] | None = Field(
        None, description="StorageClass of the claims; default: the k8s lab's (host-path; with volume_mode Block, "
        "its local block volumes).")
    size: Size = Field(description="Size of each claim, and of fio's file on it (Filesystem mode).")
    access_mode: Literal["ReadWriteOnce", "ReadWriteMany"] = Field(
        "ReadWriteOnce", description="ReadWriteOnce: a claim per pod; ReadWriteMany: one claim all pods share.")
    volume_mode: Literal["Filesystem", "Block"] = Field("Filesystem", description="Filesystem (a file on the "
                                                        "mounted volume) or Block (the raw device; needs "
                                                        "destructive: true).")
    destructive: bool = Field(False, description="Allow writes to a Block-mode volume.")
    namespace: Annotated[str, matching(DNS_LABEL_RE, "namespace must be a DNS label: lowercase letters, digits and "
                                       "'-'")] = Field(
        "storbench", description="Namespace for the pods, claims and config maps; created (and removed) if missing.")
    image: Annotated[str, matching(IMAGE_RE, "image {value!r} is not an image reference")] = Field(
        DEFAULT_FIO_IMAGE, description="Image with fio (the same version as this machine's) and a POSIX sh: "
        "`storbench image push REGISTRY/storbench/fio` puts one in your registry. The default is the k8s lab's "
        "(its own registry serves it); any other runs only if the operator allows it (`run --image REF`): an "
        "image runs any program in the cluster.")
    image_pull_policy: Literal["Never", "IfNotPresent", "Always"] = Field("IfNotPresent", description="")
    node_selector: dict[str, str] = Field(default_factory=dict, description="Pods run only on nodes with "
                                          "these labels.")
    kubeconfig: str | None = Field(None, description="Not taken from a plan: a kubeconfig can run programs "
                                   "(`exec`, `auth-provider`) and read files as root. storbench uses the k8s "
                                   "lab's (the plan's lab.k8s), else the command line's --kubeconfig and "
                                   "--context, else $KUBECONFIG or ~/.kube/config.")
    start_budget: Duration = Field(30.0, description="How long pods get to start before all begin fio at once.")
    pod_security: Literal["restricted", "baseline"] = Field(
        "restricted", description="restricted: fio runs as user 65532 with the pod's fsGroup, admitted where "
        "Kubernetes' restricted Pod Security Standard is enforced (the StorageClass must apply fsGroup; a Block "
        "claim needs a runtime that gives devices the pod's user, as containerd's "
        "device_ownership_from_security_context does); baseline: fio as the image's root, without capabilities.")
    expect: ExpectConfig | None = EXPECT_FIELD

    @field_validator("node_selector")
    @classmethod
    def _selector(cls, value: dict[str, str]) -> dict[str, str]:
        for key, label in value.items():
            if not LABEL_KEY_RE.fullmatch(key) or not LABEL_VALUE_RE.fullmatch(label):
                raise ValueError(f"node_selector {key}={label} is not a valid label")
        return value

    @field_validator("kubeconfig")
    @classmethod
    def _kubeconfig(cls, value: str | None) -> str | None:
        # A plan may come from someone else and storbench runs as root: a kubeconfig it names could run any
        # program (a user's exec/auth-provider plugin) or send any file (tokenFile) to a server it chooses.
        if value is not None:
            raise ValueError("kubeconfig is not taken from a plan (its exec plugins and key files would be used "
                             "as root): set $KUBECONFIG instead, or use lab: {k8s: {}}")
        return value

    def spec(self, name: str) -> PvcTarget:
        return PvcTarget(name=name, size_bytes=self.size, destructive=self.destructive,
                         storage_class=self.storage_class, access_mode=self.access_mode,
                         volume_mode=self.volume_mode, namespace=self.namespace, container_image=self.image,
                         image_pull_policy=self.image_pull_policy,
                         node_selector=tuple(sorted(self.node_selector.items())), start_budget_s=self.start_budget,
                         pod_security=self.pod_security)



def _target_tag(value: object) -> str | None:
    if isinstance(value, Mapping):
        kind = value.get("kind")
        return kind if isinstance(kind, str) else None
    return None


TargetConfig = Annotated[
    Annotated[PathTargetConfig, Tag("path")] | Annotated[BlockTargetConfig, Tag("block")]
    | Annotated[RbdTargetConfig, Tag("rbd")] | Annotated[NfsTargetConfig, Tag("nfs")]
    | Annotated[CephfsTargetConfig, Tag("cephfs")] | Annotated[PvcTargetConfig, Tag("pvc")]
    | Annotated[S3TargetConfig, Tag("s3")],
    Discriminator(
        _target_tag,
        custom_error_type="target_kind",
        custom_error_message="unknown target kind",
    ),
]
TARGET_KINDS: dict[str, type[BaseModel]] = {
    "path": PathTargetConfig, "block": BlockTargetConfig, "rbd": RbdTargetConfig, "nfs": NfsTargetConfig,
    "cephfs": CephfsTargetConfig, "pvc": PvcTargetConfig, "s3": S3TargetConfig,
}
