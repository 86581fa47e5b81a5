"""An input's whole text in memory, read as the scan reads it (analyzer.io.sources: zstd across
frames, gzip, bz2; text in another encoding transcoded to UTF-8). Shared by the benchmarks that
load a sample whole."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_text(path: str) -> bytes:
    from analyzer.io import sources

    info = sources.inspect(path)
    with sources.open_stream(path, info.compression, info.size, info.encoding) as fh:
        return fh.read()
