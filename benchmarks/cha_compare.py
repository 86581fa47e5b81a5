"""The unwinnability kernel against Ambrona's Chess Unwinnability Analyzer (CHA), the published
peer, on the same positions in the same run: the final position of every game of the input lost
on time, for the winner (what the scan classifies).

    python benchmarks/cha_compare.py --cha /path/to/cha [--input lichess_sample.pgn.zst]
        [--budget 20000] [--quick]

CHA is GPL-3 C++ on top of Stockfish; nothing of it is in this repository. Build it beside
(2026-12-07: D3-Chess 0adad15, Stockfish 51deae8 as its lib/stockfish/Makefile pins; the
evaluation net is not needed, an empty file of its name lets Stockfish link):

    git clone https://github.com/miguel-ambrona/D3-Chess && cd D3-Chess/lib/stockfish
    git clone https://github.com/official-stockfish/Stockfish && (cd Stockfish && git checkout 51deae8)
    sed -i '/^OBJS/i SRCS += stockfish.cpp' Stockfish/src/Makefile && cp stockfish.* Stockfish/src/
    cd Stockfish/src && touch $(grep -o 'nn-[a-z0-9]*.nnue' evaluate.h | head -1)
    make -j2 all ARCH=x86-64 && g++ -shared -o libstockfish.so -fPIC *.o && cd ../../../../src
    g++ -O3 -o cha util.cpp semistatic.cpp dynamic.cpp cha.cpp main.cpp -I$SF -L$SF -lstockfish \\
        -Wl,-rpath,$SF -lpthread      # SF=../lib/stockfish/Stockfish/src

CHA's full mode (the default) answers winnable with a helpmate, unwinnable, or undetermined (at
its limit of 500,000 nodes); `--quick` runs its quick mode instead, which only ever answers
unwinnable or undetermined (its "undetermined" are, in its own words, "guessed to be winnable"):
the mode behind the "about 3 us a position" figure. Times: CHA's own per-position clock (it
prints microseconds per position) and this kernel's process time over the batch, one core each
(run the script under `taskset -c N`). Every certificate of this kernel is replayed in
python-chess; a disagreement on a proved answer would be a bug in one of them and is printed.
(CHA's printed helpmates are not replayed: 941 of lichess_sample's do not start at the position
given, e.g. for `8/8/8/8/8/5p2/6qk/4K3 w - - 0 1 black` it prints `f3f2 d1c1 f2f1q#`, a line
for Black to move: moves it plays before its search are left out.)
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_unwinnable import DATA
from input_text import read_text


def timeout_positions(text: bytes):
    """(bb, st, ct, side, fens) of the final positions of the games lost on time, the winner's side."""
    from analyzer.api import analyze_bytes
    from analyzer.kinds.chess.position import to_board

    res = analyze_bytes(text, source="b", editions=("fide_2018",), keep_facts=True)
    term = res.games.column("termination").to_pylist()
    result = res.games.column("result").to_pylist()
    f = res.facts
    sel = [
        i
        for i, (t, r) in enumerate(zip(term, result))
        if t == "Time forfeit" and r in ("1-0", "0-1") and f["final_st"][i, 0] >= 0
    ]
    side = np.array([0 if result[i] == "1-0" else 1 for i in sel], np.int8)
    bb, st, ct = f["final_bb"][sel].copy(), f["final_st"][sel].copy(), f["final_ct"][sel].copy()
    fens = [to_board(bb[k], st[k], ct[k]).fen() for k in range(len(sel))]
    return bb, st, ct, side, fens


def run_kernel(bb, st, ct, side, budget):
    from analyzer.kinds.chess import _unwinnable as unw

    n = len(side)
    idx = np.arange(n, dtype=np.int64)
    verdict = np.empty(n, np.int8)
    proof = np.empty(n, np.int8)
    nodes = np.empty(n, np.int64)
    off = np.empty(n + 1, np.int64)
    moves = np.empty(128 * n + 4096, np.int32)
    args = (bb, st, ct, idx, side, budget, verdict, proof, nodes, off, moves)
    unw.classify_batch(bb[:2], st[:2], ct[:2], idx[:2], side[:2], 100, verdict, proof, nodes, off, moves)  # compile
    t0 = time.process_time()
    total = unw.classify_batch(*args)
    cpu = time.process_time() - t0
    assert total <= len(moves)
    answers = [unw.VERDICTS[v] for v in verdict.tolist()]
    lines = [moves[off[i] : off[i + 1]].tolist() for i in range(n)]
    return answers, lines, nodes, cpu


def run_cha(cha: str, fens, side, quick: bool):
    """CHA's answer, nodes, microseconds and helpmate (UCI) per position, and its summary line.
    Quick mode prints only the unwinnable ones: the others are undetermined, at its mean time."""
    queries = [f"{fen} {'white' if s == 0 else 'black'}" for fen, s in zip(fens, side.tolist())]
    cmd = [cha] + (["-quick"] if quick else [])
    out = subprocess.run(cmd, input="\n".join(queries) + "\n", capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        m = re.match(r"(winnable|unwinnable|undetermined)(.*?) nodes (\d+) time (\d+) \((.*)\)$", line)
        if m:
            found[m.group(5)] = (m.group(1), int(m.group(3)), int(m.group(4)), m.group(2).strip().rstrip("#").split())
    summary = out.splitlines()[-1]
    mean = float(re.search(r"avg: ([0-9.]+) us", summary).group(1))
    rows = [found.get(q, ("undetermined", 0, mean, [])) for q in queries]
    return rows, summary


def uci_of(m: int, board) -> str:
    import chess

    frm, to, promo = m & 63, (m >> 6) & 63, (m >> 12) & 7
    if (m >> 15) & 3 == 2 and not board.chess960:
        to = (frm & 56) + (6 if to > frm else 2)
    return chess.Move(frm, to, promo or None).uci()


def replays(fen: str, side: int, ucis: list[str]) -> bool:
    import chess

    b = chess.Board(fen)
    for u in ucis:
        mv = chess.Move.from_uci(u)
        if mv not in b.legal_moves:
            return False
        b.push(mv)
    return b.is_checkmate() and b.turn != (side == 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cha", required=True, help="a built CHA binary (see the module's docstring)")
    ap.add_argument("--input", default=os.path.join(DATA, "lichess_sample.pgn.zst"))
    ap.add_argument("--budget", type=int, default=20_000, help="this kernel's nodes per position")
    ap.add_argument("--quick", action="store_true", help="CHA's quick mode (unwinnable or undetermined)")
    args = ap.parse_args()
    os.environ.setdefault("ANALYZER_KERNELS", "jit")
    bb, st, ct, side, fens = timeout_positions(read_text(args.input))
    n = len(fens)
    print(f"input {os.path.basename(args.input)}: {n:,} final positions of games lost on time, the winner")
    print(f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    answers, lines, nodes, cpu = run_kernel(bb, st, ct, side, args.budget)
    cha, summary = run_cha(args.cha, fens, side, args.quick)
    cha_us = np.array([r[2] for r in cha], np.float64)
    cha_nodes = np.array([r[1] for r in cha], np.float64)
    import chess

    ours_len = [len(x) for x, a in zip(lines, answers) if a == "winnable"]
    cha_len = [len(r[3]) for r in cha if r[0] == "winnable"]
    print("\n| | this kernel | CHA |")
    print("|---|---:|---:|")
    print(f"| mode | budget {args.budget:,} nodes | {'quick' if args.quick else 'full (limit 500,000 nodes)'} |")
    print(f"| us per position, mean | {cpu / n * 1e6:.1f} | {cha_us.mean():.1f} |")
    print(f"| us per position, median | - | {np.median(cha_us):.0f} |")
    print(f"| nodes per position, mean | {nodes.mean():.0f} | {cha_nodes.mean():.0f} |")
    ca, cc = collections.Counter(answers), collections.Counter(r[0] for r in cha)
    for k in ("winnable", "unwinnable", "unknown"):
        kc = "undetermined" if k == "unknown" else k
        print(f"| {k} | {ca.get(k, 0):,} | {cc.get(kc, 0):,} |")
    if ours_len and cha_len:
        print(
            f"| certificate plies, mean (median) | {np.mean(ours_len):.1f} ({np.median(ours_len):.0f}) | "
            f"{np.mean(cha_len):.1f} ({np.median(cha_len):.0f}) |"
        )
    print(f"\nCHA: {summary}")
    bad = 0
    both_unknown = 0
    only_cha = []
    for i in range(n):
        a, r = answers[i], cha[i][0]
        if a == "winnable":
            board = chess.Board(fens[i])
            if not replays(fens[i], int(side[i]), [uci_of(m, board) for m in lines[i]]):
                print("  our certificate does not replay:", fens[i])
                bad += 1
        if {a, r} == {"winnable", "unwinnable"}:
            print(f"  DISAGREE: ours {a}, CHA {r}: {fens[i]}")
            bad += 1
        if a == "unknown" and r == "undetermined":
            both_unknown += 1
        if a == "unknown" and r != "undetermined":
            only_cha.append(i)
    print(f"our certificates replayed, disagreements on proved answers: {bad} problem(s)")
    print(f"unknown here, answered by CHA: {len(only_cha)}; unknown for both: {both_unknown}")
    if only_cha:
        us, nn = cha_us[only_cha], cha_nodes[only_cha]
        print(f"  CHA's time on those: {us.sum() / 1000:.0f} ms, median {np.median(us):.0f} us", end="")
        print(f", nodes median {np.median(nn):.0f}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
