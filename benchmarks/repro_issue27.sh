#!/bin/bash
# usage: benchmarks/repro_issue27.sh CODE_DIR WORK -- the issue-27 reproductions with the analyzer
# from CODE_DIR (a checkout of any revision), in WORK (emptied first); RESULTS.md has the
# before (99fb0f5) and after outputs. The shared data: $ANALYZER_SHARED_DATA, or /work/shared/data.
D=${ANALYZER_SHARED_DATA:-/work/shared/data}
[ $# -eq 2 ] || { echo "usage: $0 CODE_DIR WORK" >&2; exit 2; }
CODE=$(cd "$1" && pwd); W=$2; rm -rf "$W"; mkdir -p "$W"; cd "$W" || exit 2
A="env PYTHONPATH=$CODE ANALYZER_KERNELS=jit python -m analyzer"
python -c "import zstandard;t=zstandard.ZstdDecompressor().decompress(open('$D/lichess_sample.pgn.zst','rb').read(),max_output_size=1<<30);open('x4.pgn','wb').write(t)"
pzstd -q -3 -p 2 -f -o x4.pgn.zst x4.pgn && rm x4.pgn
echo "== 1. deleted part"; $A scan x4.pgn.zst --out o1 --workers 2 --progress none --json > /dev/null 2>&1
P=$(ls o1/games/source=x4/*.parquet | head -1); rm $P
$A scan x4.pgn.zst --out o1 --workers 2 --progress none --json 2>/dev/null | python -c "import json,sys; s=json.load(sys.stdin); print('exit-json games', s['games'], 'analyzed', s['games_analyzed'])"
python -c "import polars as pl; print('games rows now', pl.scan_parquet('o1/games/*/*.parquet').select(pl.len()).collect().item())"
echo "== 2. truncated part then report"; $A scan x4.pgn.zst --out o2 --workers 2 --progress none > /dev/null 2>&1
P=$(ls o2/games/source=x4/*.parquet | head -1); truncate -s $(( $(stat -c %s $P) / 2 )) $P
$A scan x4.pgn.zst --out o2 --workers 2 --progress none > /dev/null 2>&1; echo "rerun exit $?"
$A report o2 > /dev/null 2> r2.err; echo "report exit $?: $(tail -1 r2.err | cut -c1-120)"
echo "== 3/4. failed units (verdicts folder is a file), then report"; mkdir -p o3/verdicts; echo x > o3/verdicts/source=x4
$A scan x4.pgn.zst --out o3 --workers 2 --progress none --json 2>/dev/null | python -c "import json,sys; s=json.load(sys.stdin); print('games', s['games'], 'reused', s['games_reused'], 'failed', len(s['units_failed']))"
$A report o3 > /dev/null 2> r3.err; echo "report exit $?: $(tail -1 r3.err | cut -c1-160)"
echo "== 5. cut chess game"; head -c 2729760 $D/lichess_small.pgn > half.pgn
$A scan half.pgn --out o5 --progress none > /dev/null 2>&1; python -c "import polars as pl; print(pl.scan_parquet('o5/games/*/*.parquet').collect().sort('game_index').select('status','error').tail(1).rows())"
echo "== 6. SIGTERM"; cat $D/lichess_small.pgn $D/lichess_small.pgn $D/lichess_small.pgn > big.pgn
$A scan big.pgn --out o6 --workers 1 --unit-mb 0.5 --progress none > /dev/null 2> r6.err & PID=$!
while [ $(ls o6/_manifest/big/unit-*.json 2>/dev/null | wc -l) -lt 2 ]; do sleep 0.02; done; kill -TERM $PID; wait $PID; echo "exit $?, stderr: [$(cat r6.err)]"
echo "== 7. forked under --progress log"; $A scan x4.pgn.zst --out o7 --workers 2 --progress log --progress-interval 1 --json 2>/dev/null | python -c "import json,sys; print(json.load(sys.stdin)['engine_by_source'])"
echo "== 8. UTF-16"; python -c "t=open('$D/lichess_small.pgn','rb').read()[:300000].decode(); open('u16.pgn','wb').write(t.encode('utf-16'))"
$A scan u16.pgn --out o8 --progress none --json 2> r8.err | python -c "import json,sys; print(json.load(sys.stdin)['status'])"; tail -2 r8.err | cut -c1-150
