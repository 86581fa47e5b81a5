#!/bin/bash
# usage: benchmarks/fresh_clone.sh [REPO [WORK]] -- the README's two commands, timed, in a fresh
# clone of REPO (default: this checkout) under WORK (default /tmp/fresh-clone, emptied first):
# a new Python 3.11 venv, empty XDG_CACHE_HOME and TMPDIR, no NUMBA_CACHE_DIR, nothing beside
# the clone (the tests that need ../shared/data skip). Logs and result.txt in WORK.
set -u
REPO=$(cd "${1:-$(dirname "$0")/..}" && pwd); R=${2:-/tmp/fresh-clone}
rm -rf "$R"; mkdir -p "$R"; cd "$R" || exit 2
git clone -q "$REPO" repo && cd repo || exit 2
export XDG_CACHE_HOME=$R/cache TMPDIR=$R/tmp; mkdir -p "$TMPDIR"; unset NUMBA_CACHE_DIR ANALYZER_SHARED_DATA
python3.11 -m venv "$R/venv" && . "$R/venv/bin/activate"
t0=$(date +%s.%N)
( pip install -e . && analyzer scan --out analyzer_out ) > "$R/cmd1.log" 2>&1; rc1=$?
t1=$(date +%s.%N)
pip install -e '.[test]' > "$R/cmd2pip.log" 2>&1; rc2a=$?
t2=$(date +%s.%N)
python -m pytest -q > "$R/cmd2test.log" 2>&1; rc2b=$?
t3=$(date +%s.%N)
back=$(grep -c "looking at multiple versions\|taking longer than usual" "$R/cmd2pip.log")
echo "command 1: exit $rc1, $(echo "$t1-$t0" | bc) s; command 2: pip exit $rc2a, $(echo "$t2-$t1" | bc) s" \
     "(backtracking lines: $back), pytest exit $rc2b, $(echo "$t3-$t2" | bc) s; command 2 in all" \
     "$(echo "$t3-$t1" | bc) s; $(tail -1 "$R/cmd2test.log")" | tee "$R/result.txt"
