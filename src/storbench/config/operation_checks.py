"""Plan checks of the operations that are not block or file I/O (pure): object operations on s3 targets,
metadata operations on file targets, Kubernetes volume operations on pvc targets."""

from __future__ import annotations

from storbench.config.schema import PlanConfig
from storbench.config.source import PlanSource
from storbench.config.targets import (
    CephfsTargetConfig,
    NfsTargetConfig,
    PathTargetConfig,
    PvcTargetConfig,
    S3TargetConfig,
)
from storbench.errors import UserError
from storbench.model import is_metadata, is_object, is_volume_operation

OBJECT_FIO_OPTIONS = frozenset({"http_mode", "http_host", "http_s3_key", "http_s3_keyid", "http_s3_region",
                                "https", "http_user", "http_pass", "filename", "filename_format", "size", "nrfiles"})


# pass-through options that move or resize fio's requests: objects are named <prefix>_<offset>_<size>, so the
# measured GETs and DELETEs would go to objects the unmeasured PUT never wrote
OBJECT_SHAPE_OPTIONS = frozenset({"offset", "offset_increment", "offset_align", "bsrange", "bssplit", "ba",
                                  "blockalign", "bs_unaligned", "io_size", "io_limit"})
MAX_RUN_OBJECTS = 1_000_000  # objects one run may name (they are listed and deleted one by one after it)


def _check_objects(config: PlanConfig, source: PlanSource) -> None:
    """Object operations (put, get, delete_object, getput) go to s3 targets, and s3 targets take nothing else."""
    ops = [rw for rw in config.workload.rw if is_object(rw)]
    others = [rw for rw in config.workload.rw if not is_object(rw)]
    s3 = [name for name, target in config.targets.items() if isinstance(target, S3TargetConfig)]
    if not ops and not s3:
        return
    where = source.where(("workload", "rw"))
    if ops and len(s3) < len(config.targets):
        name = next(n for n in config.targets if n not in s3)
        raise UserError(f"rw: {ops[0]} on target '{name}' ({config.targets[name].kind}): object operations go to "
                        "s3 targets", where=where, hint="use an s3 target for them, in a plan of their own")
    if s3 and config.hosts is not None:
        raise UserError(f"target '{s3[0]}' (s3) on the plan's fio servers: its S3 keys would go to them in the job "
                        "text (fio's client expands them before sending, over an unauthenticated, unencrypted "
                        "protocol)", where=source.where(("hosts",)),
                        hint="measure S3 from this machine, or from many clients with lab.hosts")
    if s3 and others:
        raise UserError(f"rw: {others[0]} on target '{s3[0]}' (s3): an s3 target takes object operations "
                        "(put, get, delete_object, getput)", where=where,
                        hint="measure block or file workloads in a plan of their own")
    _local_and_own_options(config, source, ops[0], OBJECT_FIO_OPTIONS, "object",
                           "use the target's endpoint, bucket and region, and workload.objects and bs")
    moved = sorted(OBJECT_SHAPE_OPTIONS & set(config.workload.fio))
    if moved:
        raise UserError(f"not with rw: {ops[0]}: fio names each object by its offset and size: "
                        "GETs and DELETEs would go to objects never written (fio's http engine counts HTTP 404 as "
                        "done) and PUTs would write objects of other sizes than bs",
                        where=source.where(("workload", "fio", moved[0])),
                        hint="set the objects' size with bs and their number with workload.objects")
    w, search = config.workload, config.search
    most = {"numjobs": max(w.numjobs), "clients": max(config.clients)}
    if search is not None and search.axis in most:  # the search may go up to its range's end
        most[search.axis] = max(most[search.axis], search.range[1])
    count = len(w.bs) * max(w.objects) * most["numjobs"] * most["clients"]
    if count > MAX_RUN_OBJECTS:
        raise UserError(f"the run's object operations name up to {count:,} objects (bs values x objects x numjobs "
                        f"x clients{', the search at its range' if search is not None and search.axis in most else ''})"
                        f", more than the {MAX_RUN_OBJECTS:,} storbench removes after a run",
                        where=source.where(("workload", "objects")), hint="fewer objects or jobs")


def _local_and_own_options(config: PlanConfig, source: PlanSource, rw: str, own: frozenset[str], what: str,
                           hint: str) -> None:
    """The fio options storbench sets for metadata and object operations (``own``) are not the plan's. Metadata
    operations run on this machine or its namespace hosts (lab.hosts), whose files storbench can remove; on
    real servers the file set would stay behind."""
    if config.hosts is not None and what == "metadata":
        raise UserError(f"rw: {rw} on real fio servers would leave its file set on them",
                        where=source.where(("workload", "rw")),
                        hint="run metadata workloads here or on namespace hosts (lab: {hosts: {count: N}}); "
                        "numjobs sets the concurrency")
    clash = sorted(own & set(config.workload.fio))
    if clash:
        raise UserError(f"workload.fio.{clash[0]} is set by storbench for rw: {rw}",
                        where=source.where(("workload", "fio", clash[0])), hint=hint)


METADATA_FIO_OPTIONS = frozenset({"nrfiles", "filesize", "openfiles", "fallocate", "create_on_open", "unlink",
                                  "file_service_type"})
# pass-through options that break "one operation a file": several requests a file (block sizes in a range or a
# split, offsets), a second pass over the files (io_size, io_limit, number_ios: a create then opens an existing
# file), or the up-front layout back in the metadata cycle's create phase (create_serialize)
METADATA_SHAPE_OPTIONS = frozenset({"bsrange", "bssplit", "ba", "blockalign", "bs_unaligned", "offset",
                                    "offset_increment", "offset_align", "io_size", "io_limit", "number_ios",
                                    "create_serialize"})


def _check_volume_operations(config: PlanConfig, source: PlanSource) -> None:
    """Kubernetes volume operations (provision, attach, snapshot, restore, clone, expand) go to pvc targets with
    Filesystem claims (restore and clone check the data on a mounted claim), without faults."""
    ops = [rw for rw in config.workload.rw if is_volume_operation(rw)]
    if not ops:
        return
    where = source.where(("workload", "rw"))
    for name, target in config.targets.items():
        if not isinstance(target, PvcTargetConfig):
            raise UserError(f"rw: {ops[0]} on target '{name}' ({target.kind}): volume operations go to pvc "
                            "targets", where=where, hint="use a pvc target (its StorageClass) for them")
        if target.volume_mode == "Block":
            raise UserError(f"rw: {ops[0]} on target '{name}': volume operations use Filesystem claims (their "
                            "data is written and checked through a mount)", where=source.where(
                                ("targets", name, "volume_mode")), hint="drop volume_mode: Block")
    if config.faults:
        raise UserError(f"rw: {ops[0]} with faults: an operation is timed whole, not on a timeline",
                        where=source.where(("faults",)), hint="time the operations in a plan of their own")


def _check_metadata(config: PlanConfig, source: PlanSource) -> None:
    """Metadata operations (rw: create, stat, delete) work on files in a local directory storbench owns."""
    ops = [rw for rw in config.workload.rw if is_metadata(rw)]
    if not ops:
        return
    where = source.where(("workload", "rw"))
    for name, target in config.targets.items():
        if isinstance(target, NfsTargetConfig) and max(config.workload.dirs) > 1:
            raise UserError(f"rw: {ops[0]} on target '{name}': dirs is not supported on nfs targets yet",
                            where=source.where(("workload", "dirs")),
                            hint="drop dirs, or mount the export and give it as kind: path")
        if not isinstance(target, PathTargetConfig | CephfsTargetConfig | NfsTargetConfig):
            raise UserError(f"rw: {ops[0]} on target '{name}' ({target.kind}): metadata operations work on files "
                            "in a directory", where=where, hint="use a path, cephfs or nfs target for them")
    _local_and_own_options(config, source, ops[0], METADATA_FIO_OPTIONS, "metadata",
                           "use workload.files and workload.file_size, or run the metadata workloads in a plan "
                           "of their own")
    shaped = sorted(METADATA_SHAPE_OPTIONS & set(config.workload.fio))
    if shaped:
        raise UserError(f"not with rw: {ops[0]}: a metadata operation is one request a file, and "
                        f"workload.fio.{shaped[0]} would make several a file or a second pass over them (a create "
                        "then opens a file that exists): the operations a second would count them",
                        where=source.where(("workload", "fio", shaped[0])),
                        hint="set the files with workload.files and file_size, or run block I/O in a plan of its own")


def _check_trim(config: PlanConfig, source: PlanSource) -> None:
    """fio trims (discards) a block device or an RBD image; on a file it fails every repetition (error 25, ENOTTY:
    the discard ioctl is a block device's)."""
    def excluded(name: str, rw: str) -> bool:  # a rule of only target and rw that drops every such case
        return any(set(rule) <= {"target", "rw"} and all(
            given in (value if isinstance(value, list) else [value]) for key, given in (("target", name), ("rw", rw))
            if (value := rule.get(key)) is not None) for rule in config.exclude)

    for name, target in config.targets.items():
        files = isinstance(target, PathTargetConfig | CephfsTargetConfig | NfsTargetConfig) or (
            isinstance(target, PvcTargetConfig) and target.volume_mode == "Filesystem")
        trims = [rw for rw in config.workload.rw if "trim" in rw and not excluded(name, rw)]
        if trims and files:
            raise UserError(f"rw: {trims[0]} on target '{name}' ({target.kind}): fio trims a block device or an "
                            "RBD image, not a file", where=source.where(("workload", "rw")),
                            hint="use a block or rbd target (or a pvc with volume_mode: Block) for trims")
