"""What every target kind hands the run: a prepared target (how it appears in job files, what is recorded about
it), and the name format of storbench's test files."""

from __future__ import annotations

from dataclasses import dataclass

from storbench.execute.regions import FileRegion, RbdRegion, Region
from storbench.fio.jobfile import JobBinding
from storbench.model import TargetSpec

FILENAME_FORMAT = "storbench.$jobnum.$filenum"
CHECK_FILE = "storbench.check"  # the checking writer's file in a target's directory (`check_writes`)


@dataclass(frozen=True)
class FileCheckPlace:
    """Where `check_writes` may write beside fio: a file of its own (made and removed by the writer) or a device
    from ``offset_bytes`` on (past fio's region)."""

    path: str
    offset_bytes: int = 0
    own_file: bool = False
    object_bytes: int | None = None  # a file on CephFS: its objects' size (`FileRegion`)

    def region(self) -> Region:
        return FileRegion(self.path, self.offset_bytes, self.own_file, object_bytes=self.object_bytes)


@dataclass(frozen=True)
class RbdCheckPlace:
    """`check_writes` on Ceph: an image of the writer's own in the target's pool, through librbd."""

    conf: str
    client: str
    pool: str
    image: str

    def region(self) -> Region:
        return RbdRegion(self.conf, self.client, self.pool, self.image)


CheckPlace = FileCheckPlace | RbdCheckPlace


@dataclass(frozen=True)
class PreparedTarget:
    """A checked target: how it appears in job files, and what we record about it."""

    spec: TargetSpec
    binding: JobBinding
    details: tuple[tuple[str, str], ...]
    laid_out: tuple[str, ...] = ()  # test files storbench laid out where no directory is ours (an NFS export)
    check_place: CheckPlace | None = None  # where `check_writes` may write (None: nowhere on this kind)
