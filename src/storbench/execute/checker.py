"""The checking writer (shell): writes stamped blocks (`durability.block_content`) to a region of the storage
(`execute.regions`: a file, a device range, an RBD image) for a while, keeping in its own memory — outside the
storage under test — which generation of each block the storage acknowledged and which were in flight; then reads
every block back and classifies it (`durability.verify`).

Each of ``depth`` threads owns the blocks whose index is its number modulo ``depth``, so writes to one block never
overlap and its journal is exact, and writes each of its blocks once, in a shuffled order, before it writes any
again: a write is then read back unless the region ran out of blocks and its block was written again (a write a
later one replaced cannot be checked: bench/write_check_power.py). A write that fails (an I/O error during a
fault) stays "in flight": its outcome is unknown, so old or new are both right afterwards.
"""

from __future__ import annotations

import errno
import mmap
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from storbench.beside import Beside, bounded
from storbench.config.faults import READ_BACK_S
from storbench.durability import Finding, Journal, Verification, block_content, verify
from storbench.execute.regions import Region
from storbench.model.fault_record import WriteCheck


@dataclass(frozen=True)
class WriteRecord:
    journals: dict[int, Journal]
    writes: int  # acknowledged
    errors: int  # failed (kept in flight)


def write_blocks(region: Region, *, writer: int, block_bytes: int, blocks: int, seconds: float, depth: int = 4,
                 seed: int = 0, stop: Callable[[], bool] = lambda: False, after: WriteRecord | None = None,
                 iops: float | None = None) -> WriteRecord:
    """Writes of stamped blocks to the first ``blocks`` blocks of the open ``region`` for ``seconds`` (or until
    ``stop()``), ``depth`` at a time (``iops`` in all at the most), each block once in a shuffled order before any
    again; returns what was acknowledged and what was in flight, per block (going on from the record ``after`` of an
    earlier stretch, when given)."""
    journals: dict[int, Journal] = dict(after.journals) if after else {}
    lock = threading.Lock()
    counts = {"writes": 0, "errors": 0}
    deadline = time.monotonic() + seconds

    def worker(number: int) -> None:
        rng = random.Random(seed * 1000 + number)
        mine = list(range(number, blocks, depth))
        if not mine:
            return
        order: list[int] = []
        buffer = mmap.mmap(-1, block_bytes)  # page-aligned, as O_DIRECT wants
        pause = depth / iops if iops else 0.0
        try:
            while time.monotonic() < deadline and not stop():
                if pause:
                    time.sleep(pause)
                if not order:  # a new pass over its blocks
                    order = rng.sample(mine, len(mine))
                index = order.pop()
                with lock:
                    journal = journals.get(index, Journal())
                    generation = max([journal.acknowledged or 0, *journal.in_flight]) + 1
                    journals[index] = replace(journal, in_flight=journal.in_flight | {generation})
                buffer[:] = block_content(writer, index, generation, block_bytes)
                try:
                    region.write(buffer, index * block_bytes)
                    ok = True
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
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    earlier = (after.writes, after.errors) if after else (0, 0)
    return WriteRecord(journals, earlier[0] + counts["writes"], earlier[1] + counts["errors"])


def read_blocks(region: Region, block_bytes: int, blocks: int) -> Iterator[tuple[int, bytes | None]]:
    """Every block of the first ``blocks`` of the open ``region``, read back; None for a block the storage says it
    cannot read (EIO: an acknowledged write there is lost, and the others are read on). Any other error (a timeout,
    a client cut off) is not the block's: raised, as is EIO on every block (no read-back at all)."""
    buffer = mmap.mmap(-1, block_bytes)
    first: OSError | None = None
    read = 0
    try:
        for index in range(blocks):
            try:
                region.read(buffer, index * block_bytes)
            except OSError as exc:
                if exc.errno != errno.EIO:
                    raise
                first = first or exc
                yield index, None
                continue
            read += 1
            yield index, bytes(buffer)
        if read == 0 and first is not None:
            raise first
    finally:
        buffer.close()


def check(region: Region, record: WriteRecord, *, writer: int, block_bytes: int, blocks: int) -> Verification:
    """Read every block back and classify it against what the writer was told."""
    return verify(writer, block_bytes, read_blocks(region, block_bytes, blocks), record.journals)


WRITES_RETURN_S = 60.0  # after the repetition, how long the writer's writes in flight get to return
RELEASE_S = 60.0  # how long closing and removing the writer's file or image may take


class CheckingWriter(Beside):
    """`check_writes` around one repetition: ``with CheckingWriter(...) as writer:`` writes stamped blocks beside
    fio until the block ends; ``result()``, called once the faults are undone and the lab settled, reads every
    block back, says what it found and removes what it made. A writer that cannot start (no room past fio's
    region, a file or image it may not make) writes nothing and its result says why."""

    thread_name = "storbench-check-writes"

    def __init__(self, region: Region, *, blocks: int, block_bytes: int, depth: int, iops: float,
                 writer: int) -> None:
        super().__init__()
        self.region = region
        self.blocks, self.block_bytes, self.depth, self.iops, self.writer = blocks, block_bytes, depth, iops, writer
        self.error = ""
        self._record: WriteRecord | None = None
        self._stuck = False

    def work(self) -> None:
        try:
            self._record = write_blocks(self.region, writer=self.writer, block_bytes=self.block_bytes,
                                        blocks=self.blocks, seconds=float("inf"), depth=self.depth,
                                        stop=self.stopping.is_set, iops=self.iops)
        except OSError as exc:
            self.error = f"writing: {exc.strerror or exc}"

    def __enter__(self) -> CheckingWriter:
        try:
            self.region.prepare(self.blocks * self.block_bytes)
            self.region.open()
        except OSError as exc:
            self.error = str(exc.strerror or exc)
            return self
        self.start_beside()
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.stop_beside(WRITES_RETURN_S):
            self._stuck = True
            self.error = (f"its writes had not returned {WRITES_RETURN_S:g} s after the repetition ended (the "
                          "storage stopped taking writes): nothing read back")

    def result(self) -> WriteCheck:
        """Every block read back and classified (`durability.verify`), within ``READ_BACK_S``; then what the
        writer made removed (not when its writes or reads are stuck: a call that does not return cannot be
        undone, and the lab's teardown removes it)."""
        found = WriteCheck(self.blocks, self.block_bytes, 0, 0, error=self.error)
        if self._stuck:
            return found
        record = self._record
        if record is None and not self.error:  # its thread ended without a record (not an I/O error)
            return replace(found, error="the writer stopped before it had written anything it could read back")
        try:
            if record is not None and not self.error:
                done, verification = bounded(lambda: check(self.region, record, writer=self.writer,
                                                           block_bytes=self.block_bytes, blocks=self.blocks),
                                             READ_BACK_S)
                if not done or verification is None:
                    return replace(found, error=f"reading back took more than {READ_BACK_S:g} s (the storage "
                                   "stopped answering reads)")
                found = write_check(verification, record)
        except OSError as exc:
            found = replace(found, error=f"reading back: {exc.strerror or exc}")
        bounded(self._release, RELEASE_S)
        return found

    def abandon(self, why: str = "the repetition did not end") -> WriteCheck:
        """The repetition did not end (interrupted, or the lab's settling failed): nothing is read back, and what
        the writer made is removed (unless its calls are stuck: the lab's teardown removes it then). Returns the
        check as stored: not read back, and ``why`` (a repetition saved with none had dropped out of the "k of n
        not checked" count, and the point read "0 of N lost (each read back)")."""
        if not self._stuck:
            bounded(self._release, RELEASE_S)
        record = self._record
        return WriteCheck(self.blocks, self.block_bytes, record.writes if record is not None else 0,
                          record.errors if record is not None else 0, error=f"not read back: {why}")

    def _release(self) -> None:
        self.region.close()
        self.region.discard()


def write_check(verification: Verification, record: WriteRecord) -> WriteCheck:
    """What was checked, as the model stores it: the acknowledged writes read back are each block's last one,
    where no write to it failed after it (an earlier write to a block, replaced, is not)."""
    first = {finding: offsets for finding, offsets in verification.first_bad}
    # a block whose later write failed may hold that write, which hides the acknowledged one: not counted
    read_back = sum(1 for journal in record.journals.values()
                    if journal.acknowledged is not None and not journal.in_flight)
    return WriteCheck(verification.blocks, verification.block_bytes, record.writes, record.errors,
                      lost=verification.count(Finding.LOST), stale=verification.count(Finding.STALE),
                      torn=verification.count(Finding.TORN), corrupt=verification.count(Finding.CORRUPT),
                      first_bad=tuple((str(f), first[f]) for f in Finding if f in first), read_back=read_back)
