#!/usr/bin/env bash
# Proof of stream_dependency on one GPU (issue 27, part 3); 190 s on an H100 with the eager gate:
#   1. the sweep: both patterns, eager and graph, at AORTA_DEP_STREAMS (1,2,4,8,16,32), one run; summarize.py's
#      table (headline added_us_per_dependent_kernel per benchmark) and the JSON in $OUT;
#   2. the gate on the benchmarks -k AORTA_DEP_GATE_K selects (graph: the eager variants are host-bound, their
#      device time moved 47-83% between fresh processes on an H100, never gateable) at AORTA_DEP_GATE_STREAMS
#      (4,16): a baseline of AORTA_DEP_BASE_RUNS (6) fresh-process runs, an A/A compare (3 fresh runs; no
#      SLOWER allowed: exit 0), and a compare with --aorta-extra-deps=1 (every dependency relayed through one
#      more stream and its relay kernel: SLOWER expected, exit 10).
# Each step's log, exit code and wall seconds land in $OUT (default artifacts/stream_dependency_proof).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/stream_dependency_proof}
mkdir -p "$OUT"
STREAMS=${AORTA_DEP_STREAMS:-1,2,4,8,16,32}
GATE_STREAMS=${AORTA_DEP_GATE_STREAMS:-4,16}
GATE_K=${AORTA_DEP_GATE_K:-graph}
BENCH=benchmarks/hw_queue/test_stream_dependency.py
GATE=(python3 -m pytest "$BENCH" -k "$GATE_K" "--aorta-streams=$GATE_STREAMS" -p no:cacheprovider -q
      "--aorta-baseline-dir=$OUT/baselines")

# shellcheck source=SCRIPTDIR/gate_step.sh
. scripts/gpu/gate_step.sh  # the repository root is the working directory here

nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader 2>/dev/null | tee "$OUT/gpu.txt"
step sweep python3 -m pytest "$BENCH" "--aorta-streams=$STREAMS" -p no:cacheprovider -q \
  "--benchmark-json=$OUT/sweep.json"
PYTHONPATH=$PWD python3 scripts/gpu/summarize.py "$OUT/sweep.json" | tee "$OUT/sweep_table.txt"
step baseline "${GATE[@]}" --aorta-save-baseline=dep --aorta-replace-baseline "--aorta-runs=${AORTA_DEP_BASE_RUNS:-6}"
step aa "${GATE[@]}" --aorta-compare=dep "--aorta-verdict-json=$OUT/aa.verdict.json"
step extra_dep "${GATE[@]}" --aorta-compare=dep --aorta-extra-deps=1 "--aorta-verdict-json=$OUT/extra_dep.verdict.json"
for label in aa extra_dep; do  # the verdict lines of each compare (the terminal summary's table)
  echo "== $label (exit $(cut -d' ' -f1 "$OUT/$label.rc"); A/A expects 0, extra_dep 10)"
  grep -E "test_stream_dependency.py::|SLOWER|FASTER|gateable" "$OUT/$label.log" | head -60
done
rm -rf .aorta/runs
