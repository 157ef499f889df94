"""What every target kind hands the run: a prepared target (how it appears in job files, what is recorded about
it), and the name format of storbench's test files."""

from __future__ import annotations

from dataclasses import dataclass

from storbench.fio.jobfile import JobBinding
from storbench.model import TargetSpec

FILENAME_FORMAT = "storbench.$jobnum.$filenum"
CHECK_FILE = "storbench.check"  # the checking writer's file in a target's directory (`check_writes`)


@dataclass(frozen=True)
class CheckPlace:
    """Where `check_writes` may write on a target's storage beside fio: a file of its own (made and removed by the
    writer) or a device from ``offset_bytes`` on (past fio's region)."""

    path: str
    offset_bytes: int = 0
    own_file: bool = False


@dataclass(frozen=True)
class PreparedTarget:
    """A checked target: how it appears in job files, and what we record about it."""

    spec: TargetSpec
    binding: JobBinding
    details: tuple[tuple[str, str], ...]
    laid_out: tuple[str, ...] = ()  # test files storbench laid out where no directory is ours (an NFS export)
    check_place: CheckPlace | None = None  # where `check_writes` may write (None: nowhere on this kind)
