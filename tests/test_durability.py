"""Nothing acknowledged lost (issue 32): stamped blocks read back and classified against the writer's journal."""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from storbench.durability import (
    SECTOR_BYTES,
    Finding,
    Journal,
    block_content,
    classify,
    read_sector,
    sector_content,
    verify,
)

BLOCK = 4096


@given(st.integers(0, 2**32 - 1), st.integers(0, 2**40), st.integers(1, 2**40), st.integers(0, 7))
def test_a_sector_says_which_write_put_it_there(writer: int, index: int, generation: int, sector: int) -> None:
    data = sector_content(writer, index, generation, sector)
    assert len(data) == SECTOR_BYTES and read_sector(data) == (writer, index, generation, sector)
    flipped = bytearray(data)
    flipped[100] ^= 1  # one bit anywhere: not ours any more
    assert read_sector(bytes(flipped)) is None


def test_each_finding() -> None:
    acked = Journal(acknowledged=3)
    assert classify(1, 7, block_content(1, 7, 3, BLOCK), acked) is Finding.OK
    assert classify(1, 7, bytes(BLOCK), Journal()) is Finding.OK  # never written: still its initial zeros
    assert classify(1, 7, bytes(BLOCK), acked) is Finding.LOST  # acknowledged, reads as never written
    assert classify(1, 7, block_content(1, 7, 2, BLOCK), acked) is Finding.STALE  # an older valid version
    torn = block_content(1, 7, 3, BLOCK)[:2048] + block_content(1, 7, 2, BLOCK)[2048:]
    assert classify(1, 7, torn, acked) is Finding.TORN
    # the acknowledged write's first half there, its second half zeros (never written): part of it lost, torn (it
    # had read corrupt, as if something else had written there)
    assert classify(1, 7, block_content(1, 7, 3, BLOCK)[:2048] + bytes(BLOCK - 2048), acked) is Finding.TORN
    assert classify(1, 7, block_content(1, 8, 3, BLOCK), acked) is Finding.CORRUPT  # another block's write
    assert classify(1, 7, block_content(2, 7, 3, BLOCK), acked) is Finding.CORRUPT  # another writer's
    assert classify(1, 7, block_content(1, 7, 9, BLOCK), acked) is Finding.CORRUPT  # a generation never issued
    garbage = bytearray(block_content(1, 7, 3, BLOCK))
    garbage[3000] ^= 0xFF
    assert classify(1, 7, bytes(garbage), acked) is Finding.CORRUPT
    shuffled = block_content(1, 7, 3, BLOCK)[512:1024] + block_content(1, 7, 3, BLOCK)[512:]
    assert classify(1, 7, shuffled, acked) is Finding.CORRUPT  # a sector in the wrong place


def test_a_write_in_flight_may_be_old_or_new_sector_by_sector_nothing_else() -> None:
    """A write that never returned may have landed in part (a device writes sectors whole, not blocks): old and new
    sectors of it are no acknowledged write lost. Anything older than the acknowledged write still is."""
    journal = Journal(acknowledged=3, in_flight=frozenset({4}))
    assert classify(1, 7, block_content(1, 7, 3, BLOCK), journal) is Finding.OK
    assert classify(1, 7, block_content(1, 7, 4, BLOCK), journal) is Finding.OK
    assert classify(1, 7, block_content(1, 7, 2, BLOCK), journal) is Finding.STALE
    half = block_content(1, 7, 4, BLOCK)[:512] + block_content(1, 7, 3, BLOCK)[512:]
    assert classify(1, 7, half, journal) is Finding.OK
    older = block_content(1, 7, 4, BLOCK)[:512] + block_content(1, 7, 2, BLOCK)[512:]
    assert classify(1, 7, older, journal) is Finding.TORN  # the acknowledged write 3 is not there
    first = Journal(in_flight=frozenset({1}))  # the first write to it, never acknowledged
    assert classify(1, 7, bytes(BLOCK), first) is Finding.OK and classify(1, 7, block_content(1, 7, 1, BLOCK),
                                                                           first) is Finding.OK
    landed_in_part = block_content(1, 7, 1, BLOCK)[:BLOCK // 2] + bytes(BLOCK // 2)
    assert classify(1, 7, landed_in_part, first) is Finding.OK
    assert classify(1, 7, landed_in_part, Journal(acknowledged=1)) is Finding.TORN  # acknowledged, half never landed


def test_verify_counts_and_keeps_the_first_bad_offsets() -> None:
    journals = {i: Journal(acknowledged=2) for i in range(10)}
    blocks = [(i, block_content(1, i, 2, BLOCK)) for i in range(10)]
    blocks[3] = (3, bytes(BLOCK))  # lost
    blocks[6] = (6, block_content(1, 6, 1, BLOCK))  # stale
    blocks.append((10, bytes(BLOCK)))  # never written, still zeros
    result = verify(1, BLOCK, blocks, journals)
    assert result.blocks == 11 and result.count(Finding.OK) == 9
    assert result.count(Finding.LOST) == 1 and result.count(Finding.STALE) == 1 and result.count(Finding.TORN) == 0
    assert dict(result.first_bad) == {Finding.LOST: (3 * BLOCK,), Finding.STALE: (6 * BLOCK,)}


def test_the_checking_writer_on_a_file_finds_nothing_lost_and_catches_a_lying_one(tmp_path: Path) -> None:
    """Real writes to a file: read back as written, every block ok. Then a test bed that lies: the file is swapped
    for a copy taken while the writer was running (acknowledged writes after the copy vanish): they are caught as
    lost or stale, with their offsets."""
    from storbench.execute.checker import check, write_blocks
    from storbench.execute.regions import FileRegion

    blocks, block = 256, 4096
    honest = tmp_path / "honest.img"
    honest.write_bytes(bytes(blocks * block))
    region = FileRegion(str(honest), direct=False)
    region.open()
    record = write_blocks(region, writer=7, block_bytes=block, blocks=blocks, seconds=0.3, depth=4)
    assert record.writes > 100 and record.errors == 0
    result = check(region, record, writer=7, block_bytes=block, blocks=blocks)
    region.close()
    assert result.blocks == blocks and result.count(Finding.OK) == blocks, result

    lying = tmp_path / "lying.img"
    lying.write_bytes(bytes(blocks * block))
    region = FileRegion(str(lying), direct=False)
    region.open()
    first = write_blocks(region, writer=7, block_bytes=block, blocks=blocks, seconds=0.15, depth=4)
    copy = lying.read_bytes()  # what the storage will "recover" to
    record = write_blocks(region, writer=7, block_bytes=block, blocks=blocks, seconds=0.15, depth=4, seed=1,
                          after=first)
    assert record.writes > first.writes
    lying.write_bytes(copy)  # the storage "recovered" to an older copy of itself
    result = check(region, record, writer=7, block_bytes=block, blocks=blocks)
    region.close()
    bad = result.count(Finding.LOST) + result.count(Finding.STALE)
    assert bad > 0 and result.count(Finding.CORRUPT) == 0, result
    assert all(offset % block == 0 for _, offsets in result.first_bad for offset in offsets)


def test_the_writer_writes_each_block_once_before_any_again_so_every_write_is_read_back(tmp_path: Path) -> None:
    """Each thread visits its blocks in a shuffled order, each once before any again: with more blocks than writes
    no block is written twice, so each acknowledged write is its block's last and is read back (a block written
    again hides an earlier write's loss: bench/write_check_power.py). With fewer, every block of a thread is one
    pass ahead of the others at most."""
    from storbench.execute.checker import check, write_blocks, write_check
    from storbench.execute.regions import FileRegion

    block = 4096
    # the unthrottled pass wrote 191 blocks in 0.3 s beside a busy suite on a 2-core VM (CI, 2026-12-03): 16 blocks
    # are many passes at any such speed, where 64 had asked for more than 4 x 64 writes of it
    for blocks, iops, seconds in ((512, 400.0, 0.3), (16, None, 0.3)):
        data = tmp_path / f"{blocks}.img"
        data.write_bytes(bytes(blocks * block))
        region = FileRegion(str(data), direct=False)
        region.open()
        record = write_blocks(region, writer=3, block_bytes=block, blocks=blocks, seconds=seconds, depth=4, iops=iops)
        found = write_check(check(region, record, writer=3, block_bytes=block, blocks=blocks), record)
        region.close()
        generations = {index: journal.acknowledged or 0 for index, journal in record.journals.items()}
        assert not found.bad and record.errors == 0, found
        if blocks > record.writes:  # the region outlasts the writes: none written twice, all read back
            assert record.writes > 20 and set(generations.values()) == {1}, generations
            assert found.read_back == found.acknowledged == record.writes
        else:  # passes over each thread's blocks: written n or n + 1 times, never n + 2
            assert record.writes > 3 * blocks, record.writes  # passes: n + 1 at most, for n of 3 or more
            for thread in range(4):
                mine = [generations.get(i, 0) for i in range(thread, blocks, 4)]
                assert max(mine) - min(mine) <= 1, (thread, mine)
            assert found.read_back == blocks < found.acknowledged


def test_a_block_that_cannot_be_read_back_is_no_lost_write(tmp_path: Path) -> None:
    """Storage that fails reads after a fault (EIO, ESTALE on NFS): the check says it could not read back (no
    evidence either way), never that acknowledged writes were lost."""
    from storbench.execute.checker import CheckingWriter
    from storbench.execute.regions import FileRegion

    data = tmp_path / "check.img"
    data.write_bytes(bytes(64 * 4096))
    region = FileRegion(str(data), direct=False)
    with CheckingWriter(region, blocks=64, block_bytes=4096, depth=2, iops=2000, writer=1) as writer:
        time.sleep(0.2)
    region.close()
    region.path = str(tmp_path)  # reading it now fails (EISDIR), as a read from failed storage does
    found = writer.result()
    assert found.error.startswith("reading back: "), found
    assert found.lost == 0, found


def test_a_writer_whose_writes_never_return_says_so_and_does_not_hang_the_run() -> None:
    """Storage that stops taking writes (a full Ceph pool pauses them without an error): the repetition's end
    does not wait for ever on the checking writer; its result says nothing was read back, and why."""
    import mmap
    import threading
    import time

    from storbench.execute import checker
    from storbench.execute.checker import CheckingWriter

    release = threading.Event()

    class Stalled:
        def prepare(self, size_bytes: int) -> None: ...
        def open(self) -> None: ...
        def write(self, buffer: mmap.mmap, offset: int) -> None:
            release.wait()  # a write that does not return
        def read(self, buffer: mmap.mmap, offset: int) -> None: ...
        def close(self) -> None: ...
        def discard(self) -> None: ...

    old = checker.WRITES_RETURN_S
    checker.WRITES_RETURN_S = 0.2
    started = time.monotonic()
    try:
        with CheckingWriter(Stalled(), blocks=16, block_bytes=4096, depth=2, iops=1000, writer=1) as writer:
            time.sleep(0.1)
        found = writer.result()
    finally:
        checker.WRITES_RETURN_S = old
        release.set()
    assert time.monotonic() - started < 5
    assert found.acknowledged == 0 and "had not returned" in found.error and "nothing read back" in found.error


def test_a_check_abandoned_when_the_lab_did_not_settle_counts_as_not_checked(tmp_path: Path) -> None:
    """A lab that did not settle after its faults (or lost a daemon): the repetition is saved, its writes never read
    back. It had been saved with no write check at all, so the point read "0 of N lost (each read back)" over the
    others with no "1 of 3 not checked"."""
    from storbench.execute.checker import CheckingWriter
    from storbench.execute.regions import FileRegion
    from storbench.model import Case, PathTarget, Status, StoredRepetition, WorkloadPoint
    from storbench.stats.write_checks import point_write_checks

    data = tmp_path / "check.img"
    data.write_bytes(bytes(64 * 4096))
    checks = []
    for _ in range(3):
        with CheckingWriter(FileRegion(str(data), direct=False), blocks=64, block_bytes=4096, depth=2, iops=2000,
                            writer=1) as writer:
            time.sleep(0.1)
        checks.append(writer.result() if len(checks) < 2 else writer.abandon("the lab did not settle after its "
                                                                             "faults"))
    assert checks[2].error == "not read back: the lab did not settle after its faults" and checks[2].acknowledged > 0
    case = Case("c", PathTarget("t", path=str(tmp_path), size_bytes=1 << 20),
                WorkloadPoint("randwrite", 4096, 1, 1, 1.0, 0.0, True, "libaio"))
    reps = [StoredRepetition(repetition_id=i + 1, run_id=1, case=case, rep_index=i, status=Status.OK, started_at_s=0.0,
                             finished_at_s=1.0, fio_version="fio-3.33", error="", clients=(), write_check=check)
            for i, check in enumerate(checks)]
    (point,) = point_write_checks(reps)
    assert point.checked == 2 and point.unchecked == 1 and point.errors == (checks[2].error,), point


def test_a_writers_number_is_its_runs_sessions_and_places_so_a_resumed_session_never_reads_an_earlier_ones_block(
        ) -> None:
    """The writer had been the repetition's place in its session (1, 2, ...): a resumed session's first writer was
    the killed session's first, and a block whose zeroing and new write were both lost read back as ok."""
    from storbench.durability import Finding, Journal, block_content, classify, writer_id

    killed, resumed = writer_id(7, "a1b2", 0), writer_id(7, "c3d4", 0)
    assert killed != resumed and writer_id(7, "a1b2", 0) == killed and writer_id(7, "a1b2", 1) != killed
    assert all(1 <= writer_id(run, "s", place) < 2**32 for run in range(50) for place in range(50))
    earlier = block_content(killed, 3, 2, 4096)  # what the killed session's repetition left on block 3
    assert classify(killed, 3, earlier, Journal(acknowledged=2)) == Finding.OK
    assert classify(resumed, 3, earlier, Journal(acknowledged=2)) != Finding.OK  # never this writer's, ok


def test_a_block_the_storage_will_not_read_is_lost_and_the_others_are_read_on() -> None:
    """An EIO on one block had ended the whole read-back: the repetition read "not checked", and a storage that
    answered EIO for acknowledged blocks after it settled was no evidence either way. Only a storage that reads
    nothing at all is not checked."""
    import errno
    import mmap

    import pytest

    from storbench.durability import Finding, Journal, block_content, verify
    from storbench.execute.checker import read_blocks

    class Region:
        def __init__(self, failing: set[int]) -> None:
            self.failing = failing

        def read(self, buffer: mmap.mmap, offset: int) -> None:
            index = offset // 4096
            if index in self.failing:
                raise OSError(errno.EIO, "Input/output error")
            buffer[:] = block_content(9, index, 1, 4096) if index < 4 else bytes(4096)  # 4 and 5 never written

    journals = {i: Journal(acknowledged=1) for i in range(4)}  # blocks 0-3 written, 4-5 never
    found = verify(9, 4096, read_blocks(Region({1, 5}), 4096, 6), journals)  # type: ignore[arg-type]
    assert found.count(Finding.LOST) == 1 and found.count(Finding.OK) == 5  # block 5 held nothing of ours
    assert dict(found.first_bad)[Finding.LOST] == (4096,)
    with pytest.raises(OSError, match="Input/output error"):
        verify(9, 4096, read_blocks(Region(set(range(6))), 4096, 6), journals)  # type: ignore[arg-type]

    class CutOff(Region):  # a client the cluster cut off partway: not the blocks' loss, no read-back
        def read(self, buffer: mmap.mmap, offset: int) -> None:
            if offset >= 2 * 4096:
                raise OSError(errno.ESHUTDOWN, "Cannot send after transport endpoint shutdown")
            super().read(buffer, offset)

    with pytest.raises(OSError, match="transport endpoint"):
        verify(9, 4096, read_blocks(CutOff(set()), 4096, 6), journals)  # type: ignore[arg-type]
