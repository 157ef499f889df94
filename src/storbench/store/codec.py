"""Compact, lossless encodings for what the store keeps as blobs. Pure."""

from __future__ import annotations

import json
import zlib

from storbench.model import LatencyHistogram


def compress_text(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8"), 6)


def decompress_text(blob: bytes | None) -> str:
    return zlib.decompress(blob).decode("utf-8") if blob else ""


def encode_histogram(histogram: LatencyHistogram | None) -> bytes | None:
    if histogram is None:
        return None
    return zlib.compress(json.dumps([list(pair) for pair in histogram.bins], separators=(",", ":")).encode())


def decode_histogram(blob: bytes | None) -> LatencyHistogram | None:
    if blob is None:
        return None
    pairs = json.loads(zlib.decompress(blob))
    return LatencyHistogram.from_arrays([int(v) for v, _ in pairs], [int(c) for _, c in pairs])
