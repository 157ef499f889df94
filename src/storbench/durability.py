"""Did the storage keep every write it acknowledged? (pure; issue 32's "nothing acknowledged lost").

A checking writer fills each block with `block_content(writer, index, generation)`: every 512-byte sector carries a
stamp (magic, writer, block index, generation, sector number) and a CRC-32 of the sector, the rest a pattern of
the same four numbers, so a sector read back says exactly which write put it there — or that no write of ours
did. The writer keeps, outside the storage under test, a `Journal` per block: the newest generation the storage
acknowledged and the generations issued but not acknowledged when the fault came (in flight). After recovery
every block is read back and `classify` says what it holds against that:

- **ok**: its newest acknowledged generation; or, if a write to it was in flight, that one: old or new, or sector
  by sector a mix of the two (a device writes a sector whole, not a block: a write that never returned may have
  landed in part, and no acknowledged write is lost by it); or, never written, its initial content (all zeros:
  the volume as the writer found it, or as the plan's precondition left it unwritten by us);
- **lost**: acknowledged at least once, but it reads as never written;
- **stale**: a whole, valid older generation than the newest acknowledged one (an older but valid block: fio's
  verify passes it unless the write sequence is checked);
- **torn**: every sector valid, but from different generations that no write in flight explains (an acknowledged
  write landed in part);
- **corrupt**: anything else: a sector that no write of ours produced, a block index not its own (a misdirected
  write), a generation never issued.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

SECTOR_BYTES = 512
MAGIC = b"SBv1"
_STAMP = struct.Struct("<4sIQQI")  # magic, writer, block index, generation, sector number
_CRC = struct.Struct("<I")
STAMP_BYTES = _STAMP.size + _CRC.size


def writer_id(*parts: object) -> int:
    """A checking writer's number (1 to 2^32 - 1) from what names its repetition: the run, the session and the
    repetition's place in it. A number that restarted at 1 in each session was the same in a resumed session, where
    a block whose zeroing and new write were both lost then read as this repetition's, ok."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "little") % 0xFFFF_FFFF + 1


class Finding(StrEnum):
    OK = "ok"
    LOST = "lost"
    STALE = "stale"
    TORN = "torn"
    CORRUPT = "corrupt"


@dataclass(frozen=True)
class Journal:
    """What the writer knows about one block: the newest generation acknowledged (None: never), and the
    generations issued but not acknowledged when the run stopped writing."""

    acknowledged: int | None = None
    in_flight: frozenset[int] = field(default_factory=frozenset)


def _pattern(writer: int, index: int, generation: int, sector: int, length: int) -> bytes:
    seed = struct.pack("<IQQI", writer, index, generation, sector)
    out = bytearray()
    counter = 0
    while len(out) < length:
        out += zlib.crc32(seed + counter.to_bytes(4, "little")).to_bytes(4, "little")
        counter += 1
    return bytes(out[:length])


def sector_content(writer: int, index: int, generation: int, sector: int) -> bytes:
    """One 512-byte sector of a block written by ``writer`` at ``generation`` (generations start at 1)."""
    stamp = _STAMP.pack(MAGIC, writer, index, generation, sector)
    body = stamp + _pattern(writer, index, generation, sector, SECTOR_BYTES - STAMP_BYTES)
    return body + _CRC.pack(zlib.crc32(body))


def block_content(writer: int, index: int, generation: int, block_bytes: int) -> bytes:
    """A whole block: ``block_bytes`` (a multiple of 512) of sectors, each stamped."""
    if block_bytes <= 0 or block_bytes % SECTOR_BYTES:
        raise ValueError(f"block size {block_bytes} is not a positive multiple of {SECTOR_BYTES}")
    return b"".join(sector_content(writer, index, generation, s) for s in range(block_bytes // SECTOR_BYTES))


def read_sector(data: bytes) -> tuple[int, int, int, int] | None:
    """(writer, block index, generation, sector number) of a sector our writer produced; None otherwise."""
    if len(data) != SECTOR_BYTES:
        return None
    body, (crc,) = data[:-_CRC.size], _CRC.unpack(data[-_CRC.size:])
    if zlib.crc32(body) != crc:
        return None
    magic, writer, index, generation, sector = _STAMP.unpack(body[:_STAMP.size])
    if magic != MAGIC or body[_STAMP.size:] != _pattern(writer, index, generation, sector,
                                                        SECTOR_BYTES - STAMP_BYTES):
        return None
    return writer, index, generation, sector


def classify(writer: int, index: int, data: bytes | None, journal: Journal) -> Finding:
    """What block ``index`` holds, read back as ``data`` (None: the storage would not read it), against what the
    writer was told: an acknowledged write the storage cannot give back is lost."""
    if data is None:
        return Finding.OK if journal.acknowledged is None else Finding.LOST
    if not any(data):
        return Finding.OK if journal.acknowledged is None else Finding.LOST
    newest = journal.acknowledged or 0
    # what each sector may hold: the acknowledged write (never written: its zeros), or a write in flight after it
    expected = {newest} | {g for g in journal.in_flight if g > newest}
    generations = set()
    for number, start in enumerate(range(0, len(data), SECTOR_BYTES)):
        sector = data[start:start + SECTOR_BYTES]
        if not any(sector):  # not yet reached by the write in flight; or, acknowledged, part of it lost (torn)
            generations.add(0)
            continue
        found = read_sector(sector)
        if found is None or found[0] != writer or found[1] != index or found[3] != number:
            return Finding.CORRUPT
        generations.add(found[2])
    if any(g > newest and g not in journal.in_flight for g in generations):
        return Finding.CORRUPT  # a generation this writer never issued for it
    if generations <= expected:
        return Finding.OK
    return Finding.TORN if len(generations) > 1 else Finding.STALE


@dataclass(frozen=True)
class Verification:
    """The counts over every block read back, and the first bad offsets of each finding (bytes)."""

    blocks: int
    block_bytes: int
    counts: tuple[tuple[Finding, int], ...]
    first_bad: tuple[tuple[Finding, tuple[int, ...]], ...]

    def count(self, finding: Finding) -> int:
        return dict(self.counts).get(finding, 0)


FIRST_BAD = 5  # offsets kept per finding


def verify(writer: int, block_bytes: int, blocks: Iterable[tuple[int, bytes | None]],
           journals: Mapping[int, Journal]) -> Verification:
    """Every (block index, data read back) classified against its journal (a block not in ``journals`` was never
    written by us)."""
    counts: Counter[Finding] = Counter()
    first: dict[Finding, list[int]] = {}
    total = 0
    for index, data in blocks:
        total += 1
        finding = classify(writer, index, data, journals.get(index, Journal()))
        counts[finding] += 1
        if finding is not Finding.OK and len(first.setdefault(finding, [])) < FIRST_BAD:
            first[finding].append(index * block_bytes)
    return Verification(total, block_bytes, tuple((f, counts[f]) for f in Finding if counts[f]),
                        tuple((f, tuple(offsets)) for f, offsets in first.items()))
