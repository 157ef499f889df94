"""What fio does and what it moves: the directions and statuses, fio's rw patterns (block I/O, metadata
operations on files, S3 object operations) and the directions each moves data in. Pure."""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "FILL_JOB", "METADATA_PHASES", "METADATA_RW", "MIXED_RW", "NFS_METADATA_ENGINE", "OBJECT_REQUESTS", "OBJECT_RW",
    "PHASE_AS_TRIM", "RW_DIRECTIONS", "VOLUME_OPERATIONS", "Direction", "Status", "counts_operations", "deletes_after",
    "is_metadata", "is_object", "is_size_based", "is_volume_operation", "moves_data", "operation_of", "rate_name",
    "rw_writes",
]


class Direction(StrEnum):
    READ = "read"
    WRITE = "write"
    TRIM = "trim"


class Status(StrEnum):
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"


# fio rw patterns and the directions they move data in.
RW_DIRECTIONS: dict[str, tuple[Direction, ...]] = {
    "read": (Direction.READ,),
    "randread": (Direction.READ,),
    "write": (Direction.WRITE,),
    "randwrite": (Direction.WRITE,),
    "rw": (Direction.READ, Direction.WRITE),
    "readwrite": (Direction.READ, Direction.WRITE),
    "randrw": (Direction.READ, Direction.WRITE),
    "trim": (Direction.TRIM,),
    "randtrim": (Direction.TRIM,),
    "trimwrite": (Direction.TRIM, Direction.WRITE),
    "randtrimwrite": (Direction.TRIM, Direction.WRITE),
    # metadata operations, one file each (fio's filecreate, filestat and filedelete engines): creating and deleting
    # files are accounted as writes, stat as reads
    "create": (Direction.WRITE,),
    "stat": (Direction.READ,),
    "delete": (Direction.WRITE,),
    # the three in sequence over one file set, the way mdtest runs its phases: create (write), stat (read), delete
    # (accounted as trim, so each phase keeps its own figures)
    "metadata": (Direction.WRITE, Direction.READ, Direction.TRIM),
    # object operations on S3, one whole object of bs each (fio's http engine in S3 mode): PUT writes, GET reads,
    # DELETE is fio's trim; getput mixes GETs (rwmixread of them) and PUTs
    "put": (Direction.WRITE,),
    "get": (Direction.READ,),
    "delete_object": (Direction.TRIM,),
    "getput": (Direction.READ, Direction.WRITE),
    # Kubernetes volume operations on pvc targets, one per client, each timed from its request to what a user waits
    # for (`execute.k8s_operations`); counted as writes: each changes the cluster's state
    **{operation: (Direction.WRITE,) for operation in ("provision", "attach", "snapshot", "restore", "clone",
                                                       "expand")},
}
MIXED_RW = frozenset({"rw", "readwrite", "randrw", "getput"})
# Kubernetes volume operations and the state each is timed to.
VOLUME_OPERATIONS: dict[str, str] = {
    "provision": "its claim Bound", "attach": "a pod's first I/O on its claim done", "snapshot":
    "its VolumeSnapshot ready to use", "restore": "the claim made from a snapshot Bound (its data then checked)",
    "clone": "the claim made from another Bound (its data then checked)",
    "expand": "its claim's capacity at twice its size"}
# Object operation -> fio rw with the http engine.
OBJECT_RW: dict[str, str] = {"put": "write", "get": "read", "delete_object": "trim", "getput": "randrw"}
# The unmeasured job section that PUTs the objects a get, getput or delete_object job then works on (fio's http
# engine names objects by job clone, offset and size, so the same geometry finds them); parsing leaves it out.
FILL_JOB = "storbench-fill"
# Metadata operation -> (fio engine, fio rw): each I/O of such a job is one operation on one file.
METADATA_RW: dict[str, tuple[str, str]] = {"create": ("filecreate", "write"), "stat": ("filestat", "read"),
                                           "delete": ("filedelete", "write"), "metadata": ("filecreate", "write")}
# The phases of rw: metadata, each a stonewalled job section named "<case id>.<phase>" on the same files; the
# delete phase's operations are counted as trims (PHASE_AS_TRIM) so that they stay apart from the creates.
METADATA_PHASES = ("create", "stat", "delete")
PHASE_AS_TRIM = ".delete"


# The metadata engine for NFS exports over libnfs (scripts/fio-engines/storbench_nfsmeta.c, a fio external engine).
NFS_METADATA_ENGINE = "storbench_nfsmeta"


def is_metadata(rw: str) -> bool:
    """True for the file operations (create, stat, delete) rather than block I/O."""
    return rw in METADATA_RW


def deletes_after(rw: str, ioengine: str) -> bool:
    """True for the metadata operations whose job removes its files after its measured section and before fio exits
    (fio's ``unlink``: create, and stat through storbench's NFS engine): fio's end is not the measured section's."""
    return rw == "create" or (rw == "stat" and ioengine == NFS_METADATA_ENGINE)


def is_object(rw: str) -> bool:
    """True for the S3 object operations (put, get, delete_object, getput)."""
    return rw in OBJECT_RW


def is_size_based(rw: str) -> bool:
    """True for the operations done once per file or object, whose runtime only caps them: the metadata
    operations and S3 deletes (an object deleted is gone). Every other job is time based."""
    return is_metadata(rw) or rw == "delete_object"


# Object operations by the direction fio accounts them in.
OBJECT_REQUESTS = {"read": "GET", "write": "PUT", "trim": "DELETE"}


def is_volume_operation(rw: str) -> bool:
    """True for the Kubernetes volume operations (provision, attach, snapshot, restore, clone, expand)."""
    return rw in VOLUME_OPERATIONS


def moves_data(rw: str) -> bool:
    """False where an operation moves no data (a file created, stat'ed or deleted, an object deleted, a volume
    operation): its "bandwidth" would be operations x a size, which means nothing, and is not given."""
    return not (is_metadata(rw) or rw == "delete_object" or is_volume_operation(rw))


def counts_operations(rw: str) -> bool:
    """True when the point's rate counts operations (a file created, stat'ed or deleted, an object request, a volume
    operation) rather than I/Os: ops/s, not IOPS."""
    return is_metadata(rw) or is_object(rw) or is_volume_operation(rw)


def operation_of(rw: str, direction: str) -> str:
    """What one of a point's operations is: the direction for block I/O (read, write, trim), the file operation
    for metadata (create, stat, delete; the phases of rw: metadata by the direction fio counts them in), the S3
    request for objects (PUT, GET, DELETE)."""
    if is_object(rw):
        return OBJECT_REQUESTS.get(direction, direction)
    if rw == "metadata":  # its phases: create, stat, delete
        return {"write": "create", "read": "stat", "trim": "delete"}.get(direction, direction)
    if is_metadata(rw) or is_volume_operation(rw):
        return rw
    return direction


def rate_name(rw: str, direction: str) -> str:
    """A rate as a reader names it: ``read IOPS`` for block I/O, ``creates/s`` for files created, ``GET
    requests/s`` for object requests."""
    operation = operation_of(rw, direction)
    if is_object(rw):
        return f"{operation} requests/s"
    if is_metadata(rw) or is_volume_operation(rw):
        return f"{operation}s/s"
    return f"{operation} IOPS"


def rw_writes(rw: str) -> bool:
    """True when the pattern modifies data (writes or trims)."""
    return any(d in (Direction.WRITE, Direction.TRIM) for d in RW_DIRECTIONS[rw])
