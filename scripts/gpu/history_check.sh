#!/usr/bin/env bash
# Issue 40 on a GPU: real runs kept in the history by pytest, shown by `aorta history show` and on the page.
#   1. one plain run of the P0 set with --aorta-history;
#   2. a gate baseline of 2 fresh runs, each kept by its child process;
#   3. a compare of 2 fresh runs against the history's runs of this stack (--aorta-compare history:STACK),
#      whose verdicts are kept with those runs;
#   then `aorta history show` (device time of large_gemm_only) and `aorta history page`. About 5-6 minutes on
#   an H100. Writes under $OUT (default artifacts/history_check).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/history_check}
mkdir -p "$OUT"
export PYTHONPATH=$PWD
H="$OUT/history.db"
step() { local n=$1; shift; echo "+ $*"; "$@" > "$OUT/step$n.log" 2>&1; local rc=$?; tail -6 "$OUT/step$n.log"; echo "step $n: exit $rc"; }
PYTEST=(python3 -m pytest benchmarks/hw_queue -m p0 -p no:cacheprovider -q "--aorta-history=$H")
STACK=$(python3 -m aorta stack)
echo "stack: $STACK"
step 1 "${PYTEST[@]}"
step 2 "${PYTEST[@]}" --aorta-save-baseline=h40 --aorta-runs=2 "--aorta-baseline-dir=$OUT/baselines"
step 3 "${PYTEST[@]}" "--aorta-compare=history:$STACK" --aorta-runs=2 --aorta-confirm=0 "--aorta-verdict-json=$OUT/verdict.json"
python3 -m aorta history --history "$H" show -k large_gemm --figure device_ms > "$OUT/show.txt" 2>&1
echo "show: exit $?"
python3 -m aorta history --history "$H" page "$OUT/history.html" -k large_gemm
echo "page: exit $?"
head -30 "$OUT/show.txt"
