"""The plan schema: pydantic models of a plan file, with their field validators and the Size, Duration
and Sweep value types. Pure: declares data, reads nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar, Union

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)

from storbench.units import MAX_SIZE_BYTES, parse_duration_s, parse_size_bytes

MAX_COUNT = MAX_SIZE_BYTES  # any other number a plan gives: a signed 64-bit integer (SQLite, fio)
PID_MAX = 2**22  # the kernel's PID_MAX_LIMIT

# Characters a plan value may carry into a fio job file. Newlines, '$' (fio expands environment
# variables), ';' and '#' (comments), '[' ']' (sections), quotes and backslashes are refused.
SAFE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
SAFE_PATH_RE = re.compile(r"^[A-Za-z0-9_./+@%,=~ -]+$")
FIO_OPTION_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")

# Options storbench writes itself: set them under `workload` or on the target instead.
MANAGED_FIO_OPTIONS: dict[str, str] = {
    "rw": "workload.rw",
    "readwrite": "workload.rw",
    "bs": "workload.bs",
    "blocksize": "workload.bs",
    "iodepth": "workload.iodepth",
    "numjobs": "workload.numjobs",
    "runtime": "workload.runtime",
    "timeout": "workload.runtime",
    "ramp_time": "workload.ramp",
    "direct": "workload.direct",
    "buffered": "workload.direct",
    "ioengine": "workload.ioengine",
    "rwmixread": "workload.rwmixread",
    "rwmixwrite": "workload.rwmixread",
    "size": "the target's size (or workload.size)",
    "filesize": "the target's size (or workload.size)",
    "filename": "the target",
    "directory": "the target",
    "filename_format": "the target",
    "time_based": "workload.runtime (runs are time based)",
    "name": "the plan",
    "group_reporting": "nothing: storbench merges jobs itself",
    "clat_percentiles": "nothing: storbench always keeps latency bins",
    "lat_percentiles": "nothing: storbench always keeps latency bins",
    "percentile_list": "nothing: storbench computes percentiles from the bins",
    "output": "nothing: storbench keeps fio's output",
    "output_format": "nothing: storbench keeps fio's output",
}
def _size(value: object) -> int:
    return parse_size_bytes(value)


def _duration(value: object) -> float:
    return parse_duration_s(value)


Size = Annotated[int, BeforeValidator(_size)]
Duration = Annotated[float, BeforeValidator(_duration)]
T = TypeVar("T")


def _as_list(value: object) -> object:
    return value if isinstance(value, list) else [value]


def _no_duplicates(values: list[T]) -> list[T]:
    seen: list[T] = []
    for value in values:
        if value in seen:
            raise ValueError(f"{value!r} is listed twice")
        seen.append(value)
    if not values:
        raise ValueError("an empty list sweeps nothing: give at least one value")
    return values


def _sweep(value: object) -> object:
    return _as_list(value)


# A value or a list of values (a sweep axis). Lists must be non-empty and without duplicates.
Sweep = Annotated[list[T], BeforeValidator(_sweep)]

RwPattern = Literal[
    "read", "write", "randread", "randwrite", "rw", "readwrite", "randrw",
    "trim", "randtrim", "trimwrite", "randtrimwrite",
    "create", "stat", "delete", "metadata",
    "put", "get", "delete_object", "getput",
]  # fmt: skip
FioScalar = Union[str, int, float, bool]  # noqa: UP007  (pydantic needs the runtime object)


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


def _rate(value: object) -> int:
    """A throughput as people write it: ``125MiB/s`` or ``125MiB`` (bytes per second)."""
    if isinstance(value, str) and value.strip().endswith("/s"):
        value = value.strip()[:-2]
    return parse_size_bytes(value)


Rate = Annotated[int, BeforeValidator(_rate)]

CPU_LIST_PATTERN = r"^[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?)*$"  # 1, 0-3, 0,2-3


def _cpu_list_text(value: object) -> object:
    """A CPU list as YAML may give it: `1` is a number there."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


_LINK_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(?:bit|bps|b)(?:/s)?\s*$", re.IGNORECASE)


def link_rate_bits(value: object) -> int:
    """A link rate as network people write it: ``1Gbit``, ``100Mbit``, ``10gbps`` (bits per second, powers of
    1000)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a link rate like 1Gbit")
    if isinstance(value, int):
        number, unit = float(value), ""
    else:
        match = _LINK_RE.match(str(value))
        if not match:
            raise ValueError(f"{value!r} is not a link rate like 100Mbit or 10Gbit")
        number, unit = float(match.group(1)), match.group(2).lower()
    bits = int(number * {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}[unit])
    if not 10**6 <= bits <= 400 * 10**9:
        raise ValueError(f"{value!r}: a link rate from 1Mbit to 400Gbit")
    return bits


LinkRate = Annotated[int, BeforeValidator(link_rate_bits)]


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
            if bs <= 0:
                raise ValueError("the workload's block size must be larger than 0")
        if self.bs is not None and self.bs <= 0:
            raise ValueError("bs must be larger than 0")
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
    path: str = Field(description="Directory for the test files; its last component is created if missing (its "
                      "parent must exist). Relative to the current directory.")
    size: Size = Field(description="Size of each fio job's file (fio `size`), e.g. 256MiB.")
    expect_fs: str | None = Field(None, description="The filesystem path must be on, e.g. `ceph`, `nfs`, `xfs`: "
                                  "refused when it is on another (an unmounted mount point).")
    expect: ExpectConfig | None = EXPECT_FIELD
    precondition: PreconditionConfig | None = PRECONDITION_FIELD

    @field_validator("expect_fs")
    @classmethod
    def _fs_name(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"^[a-z0-9][a-z0-9._-]{0,31}$", value):
            raise ValueError(f"expect_fs {value!r} is not a filesystem type name (e.g. ceph, nfs, ext4, xfs)")
        return value

    @field_validator("path")
    @classmethod
    def _safe_path(cls, value: str) -> str:
        if not SAFE_PATH_RE.fullmatch(value):
            raise ValueError(
                f"path {value!r} has characters storbench will not pass to fio "
                "(allowed: letters, digits, space and _ . / + @ % , = ~ -)"
            )
        return value

    @field_validator("size")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("size must be larger than 0")
        return value


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
        if not value.startswith("/dev/") or not SAFE_PATH_RE.fullmatch(value) or " " in value:
            raise ValueError(f"device {value!r} must be a /dev/ path of letters, digits and _ . / -")
        return value


class RbdTargetConfig(StrictModel):
    """A Ceph RBD image, driven through librbd by fio's rbd engine (no kernel client needed)."""

    kind: Literal["rbd"] = Field(description="`rbd`")
    pool: str = Field("rbd", description="The pool; a Ceph lab creates it with its `pool_size`.")
    image: str = Field("storbench", description="The image; created with `size` if missing. On fio servers "
                       "(`hosts`, `lab.hosts`) each client N gets its own image `<image>-cN`.")
    size: Size = Field(description="Image size (and fio's `size`), e.g. 1GiB.")
    client: str = Field("admin", description="cephx client name, without 'client.'.")
    destructive: bool = Field(False, description="Allow writes to an existing image storbench did not create "
                              "(destroying its data); images storbench creates are marked and always writable.")
    conf: str | None = Field(None, description="ceph.conf of the cluster; default: the plan's Ceph lab, or "
                             "/etc/ceph/ceph.conf without a lab. Real fio servers use their own "
                             "/etc/ceph/ceph.conf and keyring.")
    expect: ExpectConfig | None = EXPECT_FIELD
    precondition: PreconditionConfig | None = PRECONDITION_FIELD

    @field_validator("pool", "image", "client")
    @classmethod
    def _names(cls, value: str) -> str:
        if not SAFE_NAME_RE.fullmatch(value):
            raise ValueError(f"{value!r} must be letters, digits, '_', '.' or '-'")
        return value

    @field_validator("conf")
    @classmethod
    def _conf(cls, value: str | None) -> str | None:
        if value is not None and not SAFE_PATH_RE.fullmatch(value):
            raise ValueError(f"conf {value!r} has characters storbench will not pass on")
        return value


class NfsTargetConfig(StrictModel):
    """An NFS export driven by fio's nfs engine (libnfs, NFSv3; no kernel client or mount needed). A
    kernel-mounted NFS directory is simply a `path` target."""

    kind: Literal["nfs"] = Field(description="`nfs`")
    url: str | None = Field(None, description="nfs://server/export; default: the plan's NFS lab.")
    size: Size = Field(description="Size of each fio job's file, laid out before the first case.")
    expect: ExpectConfig | None = EXPECT_FIELD
    precondition: PreconditionConfig | None = PRECONDITION_FIELD

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"^nfs://[A-Za-z0-9.:\[\]-]+(/[A-Za-z0-9_.,/+@%=~-]*)?$", value):
            raise ValueError(f"{value!r} is not an nfs://server/export URL storbench can pass on")
        return value


class CephfsTargetConfig(StrictModel):
    """A directory on CephFS: the plan's Ceph lab mounts it with ceph-fuse (lab.ceph.cephfs: true), or give
    `path` for a CephFS you mounted yourself."""

    kind: Literal["cephfs"] = Field(description="`cephfs`")
    path: str | None = Field(None, description="A directory on a mounted CephFS; default: the lab's mount.")
    size: Size = Field(description="Size of each fio job's file (fio `size`).")
    expect: ExpectConfig | None = EXPECT_FIELD
    precondition: PreconditionConfig | None = PRECONDITION_FIELD

    @field_validator("path")
    @classmethod
    def _safe_path(cls, value: str | None) -> str | None:
        if value is not None and not SAFE_PATH_RE.fullmatch(value):
            raise ValueError(f"path {value!r} has characters storbench will not pass to fio")
        return value


BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


class S3TargetConfig(StrictModel):
    """An S3 bucket, driven by fio's http engine in S3 mode (the fio storbench builds with libcurl): the plan's
    Ceph lab's radosgw (`lab.ceph.rgw: true`; storbench makes an S3 user and the bucket) or any S3 service. Keys
    come from the operator, never from a plan: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or `storbench run
    --s3-credentials-file`, and go only to an endpoint the operator allows (`--s3-endpoint`); they reach fio
    through its environment and are never stored. This run's objects (`storbench.<run token>.*`) are removed
    after the run."""

    kind: Literal["s3"] = Field(description="`s3`")
    endpoint: str | None = Field(None, description="http(s)://host[:port]; default: the plan's Ceph lab's radosgw.")
    bucket: str | None = Field(None, description="An existing bucket; default on the lab: `storbench`, made for "
                               "the run.")
    region: str = Field("us-east-1", description="The region requests are signed for.")
    expect: ExpectConfig | None = EXPECT_FIELD

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?/?$", value):
            raise ValueError(f"{value!r} is not an http(s)://host[:port] endpoint")
        return value

    @field_validator("bucket")
    @classmethod
    def _bucket(cls, value: str | None) -> str | None:
        if value is not None and not BUCKET_RE.fullmatch(value):
            raise ValueError(f"{value!r} is not an S3 bucket name (3-63 lowercase letters, digits, '.', '-')")
        return value

    @field_validator("region")
    @classmethod
    def _region(cls, value: str) -> str:
        if not re.fullmatch(r"^[A-Za-z0-9_-]{1,40}$", value):
            raise ValueError(f"{value!r} is not a region name")
        return value

    @model_validator(mode="before")
    @classmethod
    def _no_credentials(cls, data: Any) -> Any:
        named = [key for key in ("credentials_file", "profile") if isinstance(data, dict) and key in data]
        if named:
            raise ValueError(f"{named[0]} is not a plan setting: S3 keys come from the operator, not the plan "
                             "(storbench run --s3-credentials-file FILE [--s3-profile NAME], or AWS_ACCESS_KEY_ID "
                             "and AWS_SECRET_ACCESS_KEY)")
        return data


DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
IMAGE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-/:@]{0,254}$")
LABEL_KEY_RE = re.compile(r"^([a-z0-9.\-]{1,253}/)?[A-Za-z0-9]([A-Za-z0-9._\-]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE_RE = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9._\-]{0,61}[A-Za-z0-9])?)?$")


class PvcTargetConfig(StrictModel):
    """PersistentVolumeClaims of a Kubernetes StorageClass, measured from fio pods (`clients` of them, spread
    over the nodes). Everything storbench creates is labelled and removed after the run (`storbench k8s
    cleanup` for leftovers)."""

    kind: Literal["pvc"] = Field(description="`pvc`")
    storage_class: str | None = Field(None, description="StorageClass of the claims; default: the k8s lab's "
                                      "(host-path; with volume_mode Block, its local block volumes).")
    size: Size = Field(description="Size of each claim, and of fio's file on it (Filesystem mode).")
    access_mode: Literal["ReadWriteOnce", "ReadWriteMany"] = Field(
        "ReadWriteOnce", description="ReadWriteOnce: a claim per pod; ReadWriteMany: one claim all pods share.")
    volume_mode: Literal["Filesystem", "Block"] = Field("Filesystem", description="Filesystem (a file on the "
                                                        "mounted volume) or Block (the raw device; needs "
                                                        "destructive: true).")
    destructive: bool = Field(False, description="Allow writes to a Block-mode volume.")
    namespace: str = Field("storbench", description="Namespace for the pods, claims and config maps; created "
                           "(and removed) if missing.")
    image: str = Field("storbench.local/fio:local", description="Image with fio (the same version as this "
                       "machine's) and a POSIX sh; the default is the one the k8s lab builds.")
    image_pull_policy: Literal["Never", "IfNotPresent", "Always"] = Field("IfNotPresent", description="")
    node_selector: dict[str, str] = Field(default_factory=dict, description="Pods run only on nodes with "
                                          "these labels.")
    kubeconfig: str | None = Field(None, description="Not taken from a plan: a kubeconfig can run programs "
                                   "(`exec`, `auth-provider`) and read files as root. storbench uses the k8s "
                                   "lab's, else $KUBECONFIG or ~/.kube/config.")
    start_budget: Duration = Field(30.0, description="How long pods get to start before all begin fio at once.")
    expect: ExpectConfig | None = EXPECT_FIELD

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not DNS_LABEL_RE.fullmatch(value):
            raise ValueError("namespace must be a DNS label: lowercase letters, digits and '-'")
        return value

    @field_validator("storage_class")
    @classmethod
    def _storage_class(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$", value):
            raise ValueError("storage_class must be a DNS subdomain name")
        return value

    @field_validator("image")
    @classmethod
    def _image(cls, value: str) -> str:
        if not IMAGE_RE.fullmatch(value):
            raise ValueError(f"image {value!r} is not an image reference")
        return value

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


class WorkloadConfig(StrictModel):
    """fio settings. Any list is a sweep axis; the plan runs the cartesian product."""

    rw: Sweep[RwPattern] = Field(description="I/O pattern(s): randread, randwrite, randrw, read, write, ...; or "
                                 "metadata operations on files: create, stat, delete; or object operations on an "
                                 "s3 target: put, get, delete_object, getput (GETs and PUTs mixed, rwmixread of "
                                 "them GETs).")
    rwmixread: Sweep[Annotated[int, Field(ge=0, le=100)]] = Field(
        [50], description="Percent reads for mixed patterns (rw, randrw); ignored for the others."
    )
    bs: Sweep[Size] = Field([4096], description="Block size(s), e.g. 4k, 64k, 1m.")
    iodepth: Sweep[Annotated[int, Field(ge=1, le=65536)]] = Field([1], description="Queue depth(s).")
    numjobs: Sweep[Annotated[int, Field(ge=1, le=4096)]] = Field([1], description="Parallel fio jobs.")
    runtime: Sweep[Duration] = Field([5.0], description="Measured time of each repetition, e.g. 5s.")
    ramp: Sweep[Duration] = Field([0.0], description="Warm-up before measuring (fio ramp_time).")
    direct: Sweep[bool] = Field([True], description="O_DIRECT: bypass the page cache.")
    ioengine: Sweep[str] = Field(["libaio"], description="fio ioengine, e.g. libaio, io_uring, psync.")
    size: Size | None = Field(None, description="Override the target's per-job file size.")
    files: Sweep[Annotated[int, Field(ge=1, le=1_000_000)]] = Field(
        [4000], description="Metadata operations (rw: create, stat, delete): files per job, each operated on once "
        "per repetition.")
    file_size: Sweep[Size] = Field(
        [4096], description="Metadata operations: the size of each file stat and delete find laid out (create "
        "makes empty files).")
    dirs: Sweep[Annotated[int, Field(ge=1, le=4096)]] = Field(
        [1], description="Metadata operations: directories the jobs' files are spread over, job by job (fio's "
        "directory list: job N works in directory N mod dirs); 1: every job in one shared directory, numjobs: "
        "each job in its own. At most numjobs.")
    objects: Sweep[Annotated[int, Field(ge=1, le=1_000_000)]] = Field(
        [64], description="Object operations (s3 targets): objects per job, each of size bs (put overwrites them "
        "in turn for runtime; get and delete_object find them PUT just before, unmeasured).")
    fio: dict[str, FioScalar | list[FioScalar]] = Field(
        default_factory=dict,
        description="Any other fio option, passed through (lists sweep); checked against this fio's options.",
    )

    @field_validator("rw", "rwmixread", "bs", "iodepth", "numjobs", "runtime", "ramp", "direct", "ioengine", "files",
                     "file_size", "dirs", "objects")
    @classmethod
    def _distinct(cls, values: list[T]) -> list[T]:
        return _no_duplicates(values)

    @field_validator("runtime")
    @classmethod
    def _runtime_positive(cls, values: list[float]) -> list[float]:
        for value in values:
            if value < 1:
                raise ValueError(f"runtime {value:g}s is too short: fio measures in whole seconds (use >= 1s)")
            if value != int(value):
                raise ValueError(f"runtime {value:g}s: use whole seconds")
        return values

    @field_validator("ramp")
    @classmethod
    def _ramp_whole(cls, values: list[float]) -> list[float]:
        for value in values:
            if value != int(value):
                raise ValueError(f"ramp {value:g}s: use whole seconds")
        return values

    @field_validator("bs")
    @classmethod
    def _bs_positive(cls, values: list[int]) -> list[int]:
        for value in values:
            if value <= 0 or value % 512:
                raise ValueError(f"block size {value} is not a positive multiple of 512 bytes")
        return values

    @field_validator("size")
    @classmethod
    def _size_positive(cls, value: int | None) -> int | None:
        if value is not None and value <= 0:
            raise ValueError("size must be larger than 0")
        return value

    @field_validator("ioengine")
    @classmethod
    def _engine_name(cls, values: list[str]) -> list[str]:
        for value in values:
            if not FIO_OPTION_NAME_RE.fullmatch(value):
                raise ValueError(f"ioengine {value!r} is not an engine name (e.g. libaio, io_uring, psync)")
        return values


def fio_value_text(value: FioScalar) -> str:
    """A plan value as fio job text: booleans become 1/0."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


class CephLabConfig(StrictModel):
    """A real Ceph cluster on this machine (`storbench lab ceph`). Lists sweep: each combination is brought
    up, measured and torn down; its parameters are stored with every result."""

    osds: Sweep[Annotated[int, Field(ge=1, le=16)]] = Field([3], description="Number of OSDs.")
    osd_size: Sweep[Size] = Field([2 * 1024**3], description="Size of each OSD's sparse file (or memstore).")
    objectstore: Sweep[Literal["bluestore", "memstore"]] = Field(["bluestore"], description="bluestore (on "
                                                                 "sparse files) or memstore.")
    pool_size: Sweep[Annotated[int, Field(ge=1, le=16)]] = Field([3], description="Replica count of the "
                                                                 "pools the rbd targets use.")
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
    osd_cpus: Sweep[Annotated[float, Field(gt=0, le=256)]] | None = Field(
        None, description="A CPU quota per OSD daemon in cores, e.g. `[0.5, 1, 2]` (a cgroup each; changed on the "
        "running cluster, no restart).")
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
        from storbench.errors import did_you_mean
        from storbench.lab.ceph_options import CEPH_OPTIONS, NAME_RE, OWN_KEYS, option_value

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
                                        "(needs the kernel's netem).")

    @field_validator("link")
    @classmethod
    def _distinct_links(cls, values: list[int] | None) -> list[int] | None:
        return None if values is None else _no_duplicates(values)


class K8sLabConfig(StrictModel):
    """A single-node Kubernetes cluster on this machine (`storbench lab k8s`; binaries from
    scripts/build-kubernetes.sh): a dynamic host-path StorageClass, and local block volumes on loop devices for
    volume_mode Block."""

    block_volumes: int = Field(3, ge=0, le=16, description="Local block PersistentVolumes (loop devices).")
    block_size: Size = Field(512 * 1024**2, description="Size of each block volume.")


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
        out = []
        for server in value:
            match = re.fullmatch(r"^(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9][A-Za-z0-9.\-]{0,252})(?::([0-9]{1,5}))?$", server)
            if not match or (match.group(2) and not 0 < int(match.group(2)) < 65536):
                raise ValueError(f"server {server!r} must be host, host:port or [v6]:port")
            out.append(f"{match.group(1)},{match.group(2) or 8765}")
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
    k8s: K8sLabConfig | None = Field(None, description="A single-node Kubernetes cluster for pvc targets.")
    volume: VolumeLabConfig | None = Field(None, description="A paced block device (a provisioned volume).")


DEFAULT_PROCESSES = ("fio", "ceph-osd", "ceph-mon", "ceph-mgr", "ceph-mds", "ceph-fuse", "radosgw",
                     "ganesha.nfsd")
METRIC_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
PROCESS_NAME_RE = re.compile(r"^[^/\x00-\x1f]{1,15}$")


class PrometheusConfig(StrictModel):
    """A Prometheus server with node_exporter targets (the storage nodes): queried over each repetition's
    measured window once it ends."""

    url: str = Field(description="Base URL of the Prometheus server, e.g. http://prometheus:9090.")
    rate_window: Duration = Field(60.0, description="Window of `rate()` in the built-in queries ($rate): at "
                                  "least 4 scrape intervals.")
    step: Duration = Field(1.0, description="Resolution of the range queries.")
    queries: dict[str, str] = Field(default_factory=dict, description="More queries, name -> PromQL (may use "
                                    "$rate); a name of a built-in query replaces it.")
    builtin_queries: bool = Field(True, description="Run the built-in node_exporter queries (CPU busy, disk "
                                  "utilisation and queue, network bytes, memory).")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.fullmatch(r"^https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~/\-]*)?$", value):
            raise ValueError("url must be http(s)://host[:port][/path]")
        return value

    @field_validator("queries")
    @classmethod
    def _queries(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not METRIC_NAME_RE.fullmatch(name):
                raise ValueError(f"query name {name!r} must be lowercase letters, digits and '_'")
        return value


class TelemetryConfig(StrictModel):
    """What is sampled beside every repetition (see docs/methodology.md, "Telemetry")."""

    enabled: bool = Field(True, description="Sample host CPU, processes, devices, network and memory.")
    interval: Duration = Field(1.0, description="Sampling interval (0.2s .. 60s).")
    processes: list[str] = Field(list(DEFAULT_PROCESSES), description="Process names (as in /proc/PID/comm) "
                                 "whose CPU is measured, all processes of a name together, in cores.")
    pids: list[Annotated[int, Field(ge=1, le=PID_MAX)]] = Field(default_factory=list, description="Process ids "
                                                                "to measure as well.")
    ceph_admin_sockets: list[str] | None = Field(None, description="Glob patterns of Ceph OSD admin sockets "
                                                 "whose counters are read; default: the Ceph lab's, else "
                                                 "/var/run/ceph/*.asok for rbd and cephfs targets.")
    prometheus: PrometheusConfig | None = Field(None, description="Storage nodes' figures from Prometheus.")
    client_ceiling: bool = Field(False, description="Before a case's first repetition, measure what this "
                                 "client alone can drive: the same job on fio's null engine (a few seconds).")

    @field_validator("interval")
    @classmethod
    def _interval(cls, value: float) -> float:
        if not 0.2 <= value <= 60:
            raise ValueError("interval must be between 0.2s and 60s")
        return value

    @field_validator("processes")
    @classmethod
    def _processes(cls, value: list[str]) -> list[str]:
        for name in value:
            if not PROCESS_NAME_RE.fullmatch(name):
                raise ValueError(f"process name {name!r} must be 1-15 characters without '/' (as in "
                                 "/proc/PID/comm)")
        return value


UNTIL_CI_RE = re.compile(r"ci\s*<=\s*([0-9]{1,2}(?:\.[0-9]{1,3})?)\s*%")
# `until: "ci <= N%"`: the interval judged (and shown for the run) is the t interval at this level, and no look comes
# before this many rounds. Stopping at the first look whose plain 95 % interval is narrow enough picks samples
# whose spread happens to be small, and that interval then covers 88-95 % of true means (90 % at min 3); these
# two keep it at 95 % (94.8-97.6 % at CV 5-25 %, N = 5 or 10: docs/methodology.md, bench/ci_stop.py).
CI_STOP_CONFIDENCE = 0.975
CI_STOP_MIN_ROUNDS = 4


class RepeatConfig(StrictModel):
    """Repetitions that stop when the answer is known: balanced rounds (every case once, the order alternating
    round by round), at least `min` and at most `max` of them. The stopping rule stays valid however often it
    looks (docs/methodology.md)."""

    min: int = Field(3, ge=2, le=1000, description="Rounds before the first look.")
    max: int = Field(ge=2, le=1000, description="Rounds at most.")
    until: str = Field(description="`decided`: every metric of the plan's `compare` is decided (higher, lower, or "
                       "equivalent within its margin); `ci <= 5%`: every point's IOPS interval is within ±5 % of "
                       f"its mean (the t interval at {100 * CI_STOP_CONFIDENCE:g} %, which covers 95 % after such "
                       f"a stop, and at least {CI_STOP_MIN_ROUNDS} rounds: a lower `min` is raised).")

    @field_validator("until")
    @classmethod
    def _until(cls, value: str) -> str:
        if value != "decided" and not UNTIL_CI_RE.fullmatch(value.strip()):
            raise ValueError(f"until {value!r} must be 'decided' or like 'ci <= 5%'")
        return value

    @property
    def ci_pct(self) -> float | None:
        """The interval target of `until: ci <= N%`, else None."""
        match = UNTIL_CI_RE.fullmatch(self.until.strip())
        return float(match.group(1)) if match else None

    @property
    def least(self) -> int:
        """The rounds before the first look: `min`, for `until: ci` at least CI_STOP_MIN_ROUNDS (and at most
        `max`): below it the interval after a stop covers less than it says."""
        if self.ci_pct is None:
            return self.min
        return min(max(self.min, CI_STOP_MIN_ROUNDS), self.max)


def _fraction(value: object) -> object:
    if isinstance(value, str) and value.strip().endswith("%"):
        return float(value.strip()[:-1]) / 100
    return value


class SteadyStateConfig(StrictModel):
    """Measure each point round by round until it is steady, the SNIA way (docs/methodology.md): over the last
    `window` rounds, max - min within `range` of their mean and the fitted line's excursion within `slope` of it.
    Then `confirm` rounds more: the point's figures (means, intervals) come from them, since the window, chosen for
    its small spread, would give too narrow an interval. One that never gets steady is marked "not steady"."""

    metric: Literal["iops", "bw_bytes", "lat_mean_ns"] = Field("iops", description="The figure tracked round by "
                                                               "round.")
    window: int = Field(5, ge=3, le=100, description="Rounds in the measurement window.")
    range: Annotated[float, BeforeValidator(_fraction), Field(gt=0, lt=1)] = Field(
        0.20, description="Largest max - min within the window, as a share of its mean, e.g. 20%.")
    slope: Annotated[float, BeforeValidator(_fraction), Field(gt=0, lt=1)] = Field(
        0.10, description="Largest excursion of the least-squares line over the window, as a share of its mean.")
    max_rounds: int = Field(25, ge=3, le=1000, description="Rounds at most until steady; a point not steady by then is "
                            "marked so.")
    confirm: int = Field(5, ge=0, le=100, description="Rounds measured after the steady window, whose figures and "
                         "interval the point reports; 0: the window's mean, with no interval.")


class SearchConfig(StrictModel):
    """Find the saturation point without running the whole load grid (docs/methodology.md): the load axis runs
    over a grid from `range` (powers of two and the 1.5x steps between them), and storbench measures only the
    values that bracket the highest IOPS meeting `slo` and the knee, each with the plan's `repeat`."""

    axis: Literal["iodepth", "numjobs", "clients"] = Field("iodepth", description="The load axis searched.")
    range: tuple[Annotated[int, Field(ge=1, le=4096)], Annotated[int, Field(ge=1, le=4096)]] = Field(
        description="Lowest and highest load, e.g. [1, 256].")
    slo: str = Field(description="The latency objective, e.g. `p99<=10ms` (mean, p50, p95, p99, p99.9).")
    tolerance: Annotated[float, BeforeValidator(_fraction), Field(ge=0, lt=1)] = Field(
        0.05, description="Stop narrowing a bracket once its ends' IOPS differ by less than this, e.g. 5%.")

    @field_validator("range")
    @classmethod
    def _range(cls, value: tuple[int, int]) -> tuple[int, int]:
        if value[0] >= value[1]:
            raise ValueError(f"range {list(value)} must be [low, high] with low below high")
        return value

    @field_validator("slo")
    @classmethod
    def _slo(cls, value: str) -> str:
        from storbench.stats.knee import parse_slo

        parse_slo(value)  # ValueError with the reason
        return value


class CompareConfig(StrictModel):
    """The comparison a plan is run to answer, for `repeat: {until: decided}`."""

    baseline: str = Field(description="Selector of the baseline side, as in `storbench compare`, e.g. pool_size=2.")
    candidate: str = Field(description="Selector of the candidate side, e.g. pool_size=3.")
    metrics: list[Literal["iops", "bw_bytes", "lat_mean_ns", "lat_p95_ns", "lat_p99_ns"]] = Field(
        ["iops"], description="Metrics that must be decided.")
    margin: Annotated[float, BeforeValidator(_fraction), Field(gt=0, lt=1)] | None = Field(
        None, description="Equivalence margin, e.g. 5%: a change inside ±margin is decided as equivalent.")


class PlanConfig(StrictModel):
    """A storbench plan: targets x workload sweep, repeated."""

    name: str = Field(description="Name of the plan; `--resume` continues the latest run of this name.")
    description: str = Field("", description="Free text, kept with the results.")
    targets: dict[str, TargetConfig] = Field(description="Named targets; every case runs on each of them.")
    workload: WorkloadConfig = Field(description="What fio does: rw, bs, iodepth, numjobs, runtime, ... "
                                     "(see docs/plan-reference.md).")
    repeat: Annotated[
        Annotated[Annotated[int, Field(ge=1, le=1000)], Tag("count")] | Annotated[RepeatConfig, Tag("rounds")],
        Discriminator(lambda value: "rounds" if isinstance(value, Mapping) else "count"),
    ] = Field(
        3, description="Repetitions per case (the statistical sample unit), or `{min, max, until}` to stop when the "
        "answer is known.")
    compare: CompareConfig | None = Field(None, description="The comparison the plan answers (for `repeat: {until: "
                                          "decided}`).")
    steady_state: SteadyStateConfig | None = Field(
        None, description="Measure each point round by round (its repetitions, back to back) until it is steady, "
        "e.g. `{metric: iops, window: 5, range: 20%, slope: 10%, max_rounds: 25, confirm: 5}`; replaces "
        "`repeat`.")
    search: SearchConfig | None = Field(
        None, description="Measure only the load values that find the best IOPS within a latency objective and "
        "the knee, e.g. `{axis: iodepth, range: [1, 256], slo: p99<=10ms}` (see `search`).")
    order: Literal["interleaved", "sequential", "shuffled"] = Field(
        "interleaved",
        description="Order of repetitions: interleaved (all cases once, then again in reverse order: A B B A), "
        "sequential (each case's repetitions back to back), or shuffled (random, with `seed`).",
    )
    seed: int = Field(0, ge=-MAX_COUNT - 1, le=MAX_COUNT,
                      description="Seed for `order: shuffled`; recorded with the run.")
    exclude: list[dict[str, FioScalar | list[FioScalar]]] = Field(
        default_factory=list,
        description="Rules removing points from the sweep: a point is dropped when it matches every key of a rule.",
    )
    timeout_grace: Duration = Field(
        60.0,
        description="The watchdog kills fio when a repetition takes longer than ramp + runtime + this.",
    )
    tags: list[str] = Field(default_factory=list, description="Labels stored with the run, for selecting it later.")
    keep_files: bool = Field(False, description="Leave the test files in path and cephfs directories after the "
                             "run (default: removed when the run ends, fails or is interrupted; a later run lays "
                             "them out again).")
    lab: LabConfig | None = Field(None, description="Test beds to bring up for the run (see `lab`).")
    clients: Sweep[Annotated[int, Field(ge=1, le=4096)]] = Field(
        [1], description="fio clients running each case at once, one per server (needs `hosts` or "
        "`lab.hosts` beyond 1). A list sweeps.")
    hosts: HostsConfig | None = Field(None, description="fio servers that run the cases as clients.")
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig,
                                       description="Samplers beside every repetition, and the client ceiling.")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not SAFE_NAME_RE.fullmatch(value):
            raise ValueError("name must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit")
        return value

    @field_validator("targets")
    @classmethod
    def _targets(cls, value: dict[str, object]) -> dict[str, object]:
        if not value:
            raise ValueError("a plan needs at least one target")
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        for tag in value:
            if not SAFE_NAME_RE.fullmatch(tag):
                raise ValueError(f"tag {tag!r} must be letters, digits, '_', '.' or '-'")
        return value


def run_order(config: PlanConfig) -> str:
    """The order repetitions run in: a steady-state plan runs each point's rounds back to back, a search each
    point's repetitions before it chooses the next."""
    return "sequential" if config.steady_state is not None or config.search is not None else config.order


def repeat_bounds(config: PlanConfig) -> tuple[int, int]:
    """(least, most) repetitions per case (for `until: ci`, the least raised to CI_STOP_MIN_ROUNDS)."""
    if config.steady_state is not None:  # the window, then its confirmation rounds
        steady = config.steady_state
        return steady.window + steady.confirm, steady.max_rounds + steady.confirm
    if isinstance(config.repeat, RepeatConfig):
        return config.repeat.least, config.repeat.max
    return config.repeat, config.repeat
