"""The `workload` section: what fio does; any list is a sweep axis. Pure."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator

from storbench.config.values import (
    FIO_OPTION_NAME_RE,
    MANAGED_FIO_OPTIONS,
    Duration,
    FioScalar,
    RwPattern,
    Size,
    StrictModel,
    Sweep,
    T,
    _no_duplicates,
)

__all__ = ["WorkloadConfig", "fio_value_text", "workload_key_hint"]


class WorkloadConfig(StrictModel):
    """fio settings. Any list is a sweep axis; the plan runs the cartesian product."""

    rw: Sweep[RwPattern] = Field(description="I/O pattern(s): randread, randwrite, randrw, read, write, ...; or "
                                 "metadata operations on files: create, stat, delete (or metadata: the three as "
                                 "phases over one file set, as mdtest runs them); or object operations on an "
                                 "s3 target: put, get, delete_object, getput (GETs and PUTs mixed, rwmixread of "
                                 "them GETs); or Kubernetes volume operations on a pvc target: provision, attach, "
                                 "snapshot, restore, clone, expand (one per client, each timed from its request "
                                 "to what a user waits for; runtime is the longest one may take; bs, iodepth, "
                                 "numjobs, ramp, direct and ioengine do not apply to them).")
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
        [4096], description="Metadata operations: the size of each file stat finds laid out, and of the files the "
        "metadata cycle makes for its stat and delete (create makes empty files; delete alone removes files fio "
        "lays out empty, as its job writes: neither case is swept by it).")
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

    @field_validator("runtime", "ramp")
    @classmethod
    def _whole_seconds(cls, values: list[float], info: ValidationInfo) -> list[float]:
        for value in values:
            if info.field_name == "runtime" and value < 1:
                raise ValueError(f"runtime {value:g}s is too short: fio measures in whole seconds (use >= 1s)")
            if value != int(value):
                raise ValueError(f"{info.field_name} {value:g}s: use whole seconds")
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

    @field_validator("ioengine")  # after _distinct (not `matching` on the type): an engine listed twice is told so
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


# what people write for a workload key, from fio's option names and tables (difflib's guess had turned `blocksize`
# into `size`: a 64 KiB file at the default block size)
_WORKLOAD_SYNONYMS = {"block_size": "bs", "bsize": "bs", "ramptime": "ramp", "qd": "iodepth", "queue_depth": "iodepth",
                      "jobs": "numjobs", "engine": "ioengine", "pattern": "rw"}


def workload_key_hint(parent: tuple[str | int, ...], key: str) -> str:
    """The workload key meant by an unknown key under `workload` (fio's name for it, or a table's), or at the top
    of a plan by one of `workload`'s own keys; '' when none is."""
    meant = MANAGED_FIO_OPTIONS.get(key, "").removeprefix("workload.") or _WORKLOAD_SYNONYMS.get(key, "")
    if parent == ("workload",) and meant in WorkloadConfig.model_fields:
        return f"did you mean '{meant}'? ({key} is workload.{meant} here)"
    if parent == () and (key in WorkloadConfig.model_fields or meant in WorkloadConfig.model_fields):
        return f"it belongs under workload: workload.{key if key in WorkloadConfig.model_fields else meant}"
    return ""
