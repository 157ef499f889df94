"""Compact, lossless encodings for what the store keeps as blobs. Pure."""

from __future__ import annotations

import json
import zlib

from storbench.model import LatencyHistogram


def compress_text(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8"), 6)


# A stored fio output inflates to at most this (140 clients' json+ is about 15 MB); more is no output of fio's.
MAX_TEXT_BYTES = 256 << 20


def decompress_text(blob: bytes | None) -> str:
    """A stored text back; ValueError for a blob storbench did not write (not zlib, or inflating past
    MAX_TEXT_BYTES)."""
    if not blob:
        return ""
    try:
        inflater = zlib.decompressobj()
        data = inflater.decompress(blob, MAX_TEXT_BYTES)
        if inflater.unconsumed_tail:
            raise ValueError(f"inflates past {MAX_TEXT_BYTES} bytes")
    except zlib.error as exc:
        raise ValueError(f"stored text unreadable: {exc}") from None
    return data.decode("utf-8", errors="replace")


def encode_histogram(histogram: LatencyHistogram | None) -> bytes | None:
    if histogram is None:
        return None
    return zlib.compress(json.dumps([list(pair) for pair in histogram.bins], separators=(",", ":")).encode())


# Stored bins inflate to at most this: fio has 1856 bins (about 60 KB as JSON); more is not storbench's data.
MAX_BINS_BYTES = 16 << 20


def decode_histogram(blob: bytes | None) -> LatencyHistogram | None:
    """Stored bins back; ValueError for a blob storbench did not write (not zlib or JSON pairs, too large,
    counts no histogram can hold)."""
    if blob is None:
        return None
    try:
        inflater = zlib.decompressobj()
        text = inflater.decompress(blob, MAX_BINS_BYTES)
        if inflater.unconsumed_tail:
            raise ValueError(f"latency bins inflate past {MAX_BINS_BYTES} bytes")
        pairs = json.loads(text)
        return LatencyHistogram.from_arrays([int(v) for v, _ in pairs], [int(c) for _, c in pairs])
    except (zlib.error, TypeError, OverflowError, ValueError) as exc:
        raise ValueError(f"stored latency bins unreadable: {exc}") from None
