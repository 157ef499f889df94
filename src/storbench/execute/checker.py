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

from storbench.durability import Journal, Verification, block_content, verify


@dataclass(frozen=True)
class WriteRecord:
    journals: dict[int, Journal]
    writes: int  # acknowledged
    errors: int  # failed (kept in flight)


def _open(path: str, flags: int, direct: bool) -> int:
    return os.open(path, flags | (os.O_DIRECT if direct else 0))


def write_blocks(path: str, *, writer: int, block_bytes: int, blocks: int, seconds: float, depth: int = 4,
                 direct: bool = True, sync: bool = False, seed: int = 0,
                 stop: Callable[[], bool] = lambda: False, after: WriteRecord | None = None) -> WriteRecord:
    """Random writes of stamped blocks to the first ``blocks`` blocks of ``path`` for ``seconds`` (or until
    ``stop()``), ``depth`` at a time; returns what was acknowledged and what was in flight, per block (going on
    from the record ``after`` of an earlier stretch, when given)."""
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
        try:
            while time.monotonic() < deadline and not stop():
                index = rng.choice(mine)
                with lock:
                    journal = journals.get(index, Journal())
                    generation = max([journal.acknowledged or 0, *journal.in_flight]) + 1
                    journals[index] = replace(journal, in_flight=journal.in_flight | {generation})
                buffer[:] = block_content(writer, index, generation, block_bytes)
                try:
                    written = os.pwritev(fd, [buffer], index * block_bytes)
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


def read_blocks(path: str, block_bytes: int, blocks: int, direct: bool = True) -> Iterator[tuple[int, bytes]]:
    """Every block of the first ``blocks``, read back (a short read is padded with zeros: never written)."""
    fd = _open(path, os.O_RDONLY, direct)
    buffer = mmap.mmap(-1, block_bytes)
    try:
        for index in range(blocks):
            buffer[:] = bytes(block_bytes)
            with contextlib.suppress(OSError):
                os.preadv(fd, [buffer], index * block_bytes)
            yield index, bytes(buffer)
    finally:
        buffer.close()
        os.close(fd)


def check(path: str, record: WriteRecord, *, writer: int, block_bytes: int, blocks: int,
          direct: bool = True) -> Verification:
    """Read every block back and classify it against what the writer was told."""
    return verify(writer, block_bytes, read_blocks(path, block_bytes, blocks, direct), record.journals)
