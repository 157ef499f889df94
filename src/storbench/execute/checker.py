"""The checking writer (shell): writes stamped blocks (`durability.block_content`) to a file or device for a while,
keeping in its own memory — outside the storage under test — which generation of each block the storage
acknowledged and which were in flight; then reads every block back and classifies it (`durability.verify`).

Each of ``depth`` threads owns the blocks whose index is its number modulo ``depth``, so writes to one block never
overlap and its journal is exact. A write that fails (an I/O error during a fault) stays "in flight": its outcome
is unknown, so old or new are both right afterwards. With ``direct`` the file is opened O_DIRECT (buffers from
mmap are page-aligned), with ``sync`` O_DSYNC too (acknowledged = on stable storage, as the device promises it).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from storbench.durability import Finding, Journal, Verification, block_content, verify
from storbench.model.fault_record import WriteCheck


@dataclass(frozen=True)
class WriteRecord:
    journals: dict[int, Journal]
    writes: int  # acknowledged
    errors: int  # failed (kept in flight)


def _open(path: str, flags: int, direct: bool) -> int:
    return os.open(path, flags | (os.O_DIRECT if direct else 0))


def write_blocks(path: str, *, writer: int, block_bytes: int, blocks: int, seconds: float, depth: int = 4,
                 direct: bool = True, sync: bool = False, seed: int = 0,
                 stop: Callable[[], bool] = lambda: False, after: WriteRecord | None = None,
                 offset_bytes: int = 0, iops: float | None = None) -> WriteRecord:
    """Random writes of stamped blocks to the first ``blocks`` blocks of ``path`` from ``offset_bytes`` for
    ``seconds`` (or until ``stop()``), ``depth`` at a time (``iops`` in all at the most); returns what was
    acknowledged and what was in flight, per block (going on from the record ``after`` of an earlier stretch, when
    given)."""
    journals: dict[int, Journal] = dict(after.journals) if after else {}
    lock = threading.Lock()
    counts = {"writes": 0, "errors": 0}
    deadline = time.monotonic() + seconds
    fd = _open(path, os.O_WRONLY | (os.O_DSYNC if sync else 0), direct)

    def worker(number: int) -> None:
        rng = random.Random(seed * 1000 + number)
        mine = range(number, blocks, depth)
        if not mine:
            return
        buffer = mmap.mmap(-1, block_bytes)
        pause = depth / iops if iops else 0.0
        try:
            while time.monotonic() < deadline and not stop():
                if pause:
                    time.sleep(pause)
                index = rng.choice(mine)
                with lock:
                    journal = journals.get(index, Journal())
                    generation = max([journal.acknowledged or 0, *journal.in_flight]) + 1
                    journals[index] = replace(journal, in_flight=journal.in_flight | {generation})
                buffer[:] = block_content(writer, index, generation, block_bytes)
                try:
                    written = os.pwritev(fd, [buffer], offset_bytes + index * block_bytes)
                    ok = written == block_bytes
                except OSError:
                    ok = False
                with lock:
                    journal = journals[index]
                    if ok:
                        journals[index] = Journal(generation, frozenset(g for g in journal.in_flight
                                                                        if g > generation))
                        counts["writes"] += 1
                    else:
                        counts["errors"] += 1
        finally:
            buffer.close()

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(depth)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        os.close(fd)
    earlier = (after.writes, after.errors) if after else (0, 0)
    return WriteRecord(journals, earlier[0] + counts["writes"], earlier[1] + counts["errors"])


def read_blocks(path: str, block_bytes: int, blocks: int, direct: bool = True, offset_bytes: int = 0
                ) -> Iterator[tuple[int, bytes]]:
    """Every block of the first ``blocks`` from ``offset_bytes``, read back (a short read is padded with zeros:
    never written). Without ``direct`` the page cache's copy is dropped first, so the storage answers."""
    fd = _open(path, os.O_RDONLY, direct)
    if not direct:
        os.posix_fadvise(fd, offset_bytes, blocks * block_bytes, os.POSIX_FADV_DONTNEED)
    buffer = mmap.mmap(-1, block_bytes)
    try:
        for index in range(blocks):
            buffer[:] = bytes(block_bytes)
            with contextlib.suppress(OSError):
                os.preadv(fd, [buffer], offset_bytes + index * block_bytes)
            yield index, bytes(buffer)
    finally:
        buffer.close()
        os.close(fd)


def check(path: str, record: WriteRecord, *, writer: int, block_bytes: int, blocks: int,
          direct: bool = True, offset_bytes: int = 0) -> Verification:
    """Read every block back and classify it against what the writer was told."""
    return verify(writer, block_bytes, read_blocks(path, block_bytes, blocks, direct, offset_bytes), record.journals)


def _zero(path: str, offset_bytes: int, length: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_DSYNC)
    try:
        zeros = bytes(min(length, 1 << 20))
        for start in range(0, length, len(zeros)):
            os.pwrite(fd, zeros[:length - start], offset_bytes + start)
    finally:
        os.close(fd)


class CheckingWriter:
    """`check_writes` around one repetition: ``with CheckingWriter(...) as writer:`` writes stamped blocks beside
    fio until the block ends; ``result()``, called once the faults are undone and the lab settled, reads every
    block back and says what it found (removing its own file). A writer that cannot start (no room past fio's
    region, a file it may not make) writes nothing and its result says why."""

    def __init__(self, path: str, *, offset_bytes: int, own_file: bool, blocks: int, block_bytes: int, depth: int,
                 iops: float, writer: int, direct: bool = True) -> None:
        self.path, self.offset_bytes, self.own_file = path, offset_bytes, own_file
        self.blocks, self.block_bytes, self.depth, self.iops, self.writer = blocks, block_bytes, depth, iops, writer
        self.direct = direct
        self.error = ""
        self._record: WriteRecord | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _prepare(self) -> None:
        region = self.blocks * self.block_bytes
        if self.own_file:
            with contextlib.suppress(FileNotFoundError):  # a run killed before removing it: ours by its name
                os.unlink(self.path)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                os.ftruncate(fd, region)
            finally:
                os.close(fd)
        else:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                size = os.lseek(fd, 0, os.SEEK_END)
            finally:
                os.close(fd)
            if self.offset_bytes + region > size:
                raise OSError(f"{self.path} has {size} bytes: no room for {region} past fio's {self.offset_bytes}")
            _zero(self.path, self.offset_bytes, region)  # as never written: an earlier repetition's blocks gone
        try:  # O_DIRECT where the filesystem takes it (a FUSE mount may not): else buffered, the cache dropped
            os.close(_open(self.path, os.O_RDONLY, True))
        except OSError:
            self.direct = False

    def _write(self) -> None:
        try:
            self._record = write_blocks(self.path, writer=self.writer, block_bytes=self.block_bytes,
                                        blocks=self.blocks, seconds=float("inf"), depth=self.depth,
                                        direct=self.direct, sync=True, stop=self._stop.is_set,
                                        offset_bytes=self.offset_bytes, iops=self.iops)
        except OSError as exc:
            self.error = f"writing {self.path}: {exc.strerror or exc}"

    def __enter__(self) -> CheckingWriter:
        try:
            self._prepare()
        except OSError as exc:
            self.error = f"{self.path}: {exc.strerror or exc}"
            return self
        self._thread = threading.Thread(target=self._write, name="storbench-check-writes", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def result(self) -> WriteCheck:
        """Every block read back and classified (`durability.verify`)."""
        found = WriteCheck(self.blocks, self.block_bytes, 0, 0, error=self.error)
        try:
            if self._record is not None and not self.error:
                verification = check(self.path, self._record, writer=self.writer, block_bytes=self.block_bytes,
                                     blocks=self.blocks, direct=self.direct, offset_bytes=self.offset_bytes)
                found = write_check(verification, self._record)
        except OSError as exc:
            found = replace(found, error=f"reading {self.path} back: {exc.strerror or exc}")
        finally:
            if self.own_file:
                with contextlib.suppress(OSError):
                    os.unlink(self.path)
        return found


def write_check(verification: Verification, record: WriteRecord) -> WriteCheck:
    """What was checked, as the model stores it."""
    first = {finding: offsets for finding, offsets in verification.first_bad}
    return WriteCheck(verification.blocks, verification.block_bytes, record.writes, record.errors,
                      lost=verification.count(Finding.LOST), stale=verification.count(Finding.STALE),
                      torn=verification.count(Finding.TORN), corrupt=verification.count(Finding.CORRUPT),
                      first_bad=tuple((str(f), first[f]) for f in Finding if f in first))
