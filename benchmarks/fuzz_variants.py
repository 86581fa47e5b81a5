"""Mutation fuzzing of the variant replay (not in the default tests).

Cuts random pieces of variant games (tests/fixtures/variants/*.pgn and any FILE given), mutates
bytes (SAN letters, drops, digits, brackets, truncation), sometimes swaps the [Variant] tag or adds
a [FEN], and runs `analyze_bytes` on each piece with editions fide_2018 + lichess. Any exception
(or, under NUMBA_BOUNDSCHECK=1, an out-of-bounds index) fails the run. Kernels must never raise.

Usage::

    NUMBA_BOUNDSCHECK=1 NUMBA_CACHE_DIR=/tmp/bc-cache python benchmarks/fuzz_variants.py --seconds 600 [FILE.pgn ...]
"""

from __future__ import annotations

import argparse
import glob
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from analyzer.api import analyze_bytes  # noqa: E402

ALPHABET = b'abcdefghNBRQKOP@x+#=-0123456789 \n{}()[]"%!?.*'
VARIANTS = [b"Atomic", b"Crazyhouse", b"Horde", b"Antichess", b"Racing Kings", b"Three-check", b"King of the Hill"]
FENS = [
    b"8/8/8/8/8/8/8/8 w - - 0 1",
    b"k7/8/8/8/8/8/8/7K w - - 0 1",
    b"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR[QQQQ] w KQkq - 0 1",
    b"nonsense",
]


def mutate(rng: random.Random, base: bytes) -> bytes | None:
    s = rng.randrange(0, max(1, len(base) - 3000))
    chunk = bytearray(base[s : s + rng.randrange(500, 3000)])
    i = chunk.find(b"[Event")
    if i < 0:
        return None
    chunk = chunk[i:]
    for _ in range(rng.randrange(1, 8)):
        if not chunk:
            break
        op = rng.randrange(4)
        j = rng.randrange(len(chunk))
        if op == 0:
            chunk[j] = rng.choice(ALPHABET)
        elif op == 1:
            del chunk[j : j + rng.randrange(1, 6)]
        elif op == 2:
            chunk[j:j] = bytes(rng.choice(ALPHABET) for _ in range(rng.randrange(1, 4)))
        else:
            chunk = chunk[:j]
    if rng.random() < 0.2:
        chunk = chunk.replace(b'[Variant "', b'[Variant "' + rng.choice(VARIANTS) + b'"]\n[X "', 1)
    if rng.random() < 0.1:
        chunk = chunk.replace(b"[Event", b'[FEN "' + rng.choice(FENS) + b'"]\n[Event', 1)
    return bytes(chunk)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    paths = (
        sorted(
            f
            for f in glob.glob(os.path.join(HERE, "..", "tests", "fixtures", "variants", "*.pgn"))
            if not f.endswith("chess960.pgn")
        )
        + args.files
    )
    texts = []
    for p in paths:
        with open(p, "rb") as fh:
            texts.append(fh.read())
    rng = random.Random(args.seed)
    n = games = 0
    t0 = time.time()
    while time.time() - t0 < args.seconds:
        case = mutate(rng, rng.choice(texts))
        if case is None:
            continue
        res = analyze_bytes(case, editions=("fide_2018", "lichess"))
        n += 1
        games += res.n_games
    print(f"inputs {n}, games {games}, no exception")
    return 0


if __name__ == "__main__":
    sys.exit(main())
