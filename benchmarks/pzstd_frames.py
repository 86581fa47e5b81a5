"""A synthetic dump as Lichess publishes them (pzstd: zstd frames of FRAME_TEXT bytes of text,
each behind pzstd's 12-byte skippable header), written from a text repeated `copies` times
without holding the whole in memory. Shared by bench_sync.py and bench_hf_parquet.py."""

from __future__ import annotations

import os
import struct
import time

import zstandard

SKIPPABLE = 0x184D2A50
FRAME_TEXT = 64 << 20


def write_repeated(path: str, text: bytes, copies: int, log) -> None:
    """`text` x `copies` into `path` (through path.partial, replaced when whole)."""
    cctx = zstandard.ZstdCompressor(level=3, threads=2)
    t0 = time.time()

    def frame(out, data: bytes) -> None:
        compressed = cctx.compress(data)
        out.write(struct.pack("<III", SKIPPABLE, 4, len(compressed)) + compressed)

    with open(path + ".partial", "wb") as out:
        pending = bytearray()
        for _ in range(copies):
            pending += text
            while len(pending) >= FRAME_TEXT:
                frame(out, bytes(pending[:FRAME_TEXT]))
                del pending[:FRAME_TEXT]
        if pending:
            frame(out, bytes(pending))
    os.replace(path + ".partial", path)
    log(f"built {path}: {os.path.getsize(path) / 1e9:.2f} GB in {time.time() - t0:.0f} s")
