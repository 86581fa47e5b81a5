"""Run an analyzer command and name its numba kernels for `perf`: at exit, write
/tmp/perf-<pid>.map (perf's map of JIT code) with every function of every kernel this process
ran, so that `perf report` shows `_replay_games`, `_comment_end`, `bishop_attacks`... instead of
bare addresses. This is how the eval-comment path was found to take ~14 % of the replay.

    perf record -e cpu-clock -F 5000 -o /tmp/perf.data \\
        python benchmarks/perf_map.py scan ../shared/data/lichess_sample.pgn.zst --out /tmp/o --force --workers 1
    perf report -i /tmp/perf.data --sort sym --stdio | head -40

`cpu-clock` samples by timer, so it works on VMs without hardware counters. Kernels load from
numba's cache as object code; the addresses of their functions are the loaded entry point of
each kernel plus the offsets in the ELF symbol table of its cached object code (functions a
kernel inlined are part of it). Needs a warm cache (a kernel compiled in this process has no
cached object file to read) and `--workers 1` (forked workers are other processes).
"""

from __future__ import annotations

import atexit
import gc
import glob
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def elf_functions(blob: bytes) -> list[tuple[str, int, int, int]]:
    """(name, value, size, section index) of the sized functions of an ELF64 little-endian object."""
    shoff = struct.unpack_from("<Q", blob, 0x28)[0]
    shentsize, shnum = struct.unpack_from("<HH", blob, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + k * shentsize) for k in range(shnum)]
    out = []
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]  # sh_link: its string table
        str_off = strtab[4]
        for k in range(sh[5] // 24):
            name_off, info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", blob, sh[4] + 24 * k)
            if info & 0xF == 2 and size:  # STT_FUNC
                end = blob.index(b"\0", str_off + name_off)
                out.append((blob[str_off + name_off : end].decode(), value, size, shndx))
    return out


def cached_objects(cache_dir: str) -> list[bytes]:
    """Every ELF object in numba's cache files (pickled as bytes, so they appear verbatim)."""
    blobs = []
    for path in glob.glob(os.path.join(cache_dir, "**", "*.nbc"), recursive=True):
        with open(path, "rb") as fh:
            data = fh.read()
        i = data.find(b"\x7fELF")
        while i >= 0:
            blobs.append(data[i:])
            i = data.find(b"\x7fELF", i + 4)
    return blobs


def write_map() -> int:
    from numba.core import config
    from numba.core.registry import CPUDispatcher

    tables = []
    for blob in cached_objects(config.CACHE_DIR):
        try:
            tables.append(elf_functions(blob))
        except (struct.error, ValueError, IndexError):
            continue
    by_name: dict[str, list] = {}
    for table in tables:
        for name, *_ in table:
            by_name.setdefault(name, []).append(table)
    syms: dict[int, tuple[int, str]] = {}
    for obj in gc.get_objects():
        if not isinstance(obj, CPUDispatcher):
            continue
        for cres in obj.overloads.values():
            main = cres.fndesc.llvm_func_name
            try:
                addr = cres.library.get_pointer_to_function(main)
            except Exception:  # noqa: BLE001 - a library without that symbol: nothing to name
                continue
            for table in by_name.get(main, []):
                entry = next(e for e in table if e[0] == main)
                base, section = addr - entry[1], entry[3]
                for name, value, size, shndx in table:
                    if shndx == section:
                        syms[base + value] = (size, name)
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as fh:
        for addr in sorted(syms):
            size, name = syms[addr]
            fh.write(f"{addr:x} {size:x} {_short(name)}\n")
    return len(syms)


def _short(name: str) -> str:
    """'_ZN8analyzer5kinds5chess7_replay13_replay_gamesB3v..' -> 'chess._replay._replay_games'."""
    if not name.startswith("_ZN"):
        return name[:120]
    parts, i = [], 3
    while i < len(name) and name[i].isdigit():
        j = i
        while name[j].isdigit():
            j += 1
        n = int(name[i:j])
        parts.append(name[j : j + n])
        i = j + n
    parts = [p for p in parts if p not in ("analyzer", "kinds", "cpython")]
    return ".".join(parts) or name[:120]


def main(argv: list[str]) -> int:
    sys.path.insert(0, ROOT)
    atexit.register(lambda: print(f"perf_map: {write_map()} kernel functions named", file=sys.stderr))
    from analyzer.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
