#!/usr/bin/env bash
# A pool of fresh-process runs of the hardware-queue suite for the gate's proof on one GPU: one plain
# `pytest benchmarks/hw_queue` process after another (each its own launch path, allocator layout, clocks
# and power state: the gate's sample), the benchmark order varied from run to run, as many runs as fit
# the time budget. scripts/gpu/gate_pairs.py then judges A/A pairs and slowdowns offline with
# `aorta compare`, from pools collected on several machines (one device call per pool).
# Knobs: AORTA_POOL_TAG (a: the pool's name, also in each file name), AORTA_POOL_MAX (8 runs at most),
# AORTA_POOL_BUDGET_S (540: no run starts that the slowest so far would carry past it),
# AORTA_POOL_SLOWDOWN (empty; e.g. 0.05: every run with --aorta-test-slowdown), AORTA_POOL_SEED0 (1: the
# first run's order seed), AORTA_POOL_SELECT (empty: the default suite; e.g. "-m p0"), AORTA_POOL_STREAMS
# (empty: the suite's default sweep). Everything lands in $OUT: pool_<tag>.tgz (runs' JSON and logs),
# the GPU line, and a table of the runs printed last.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/gate_pool}
TAG=${AORTA_POOL_TAG:-a}
MAX=${AORTA_POOL_MAX:-8}
BUDGET=${AORTA_POOL_BUDGET_S:-540}
SLOW=${AORTA_POOL_SLOWDOWN:-}
SEED0=${AORTA_POOL_SEED0:-1}
read -r -a SELECT <<< "${AORTA_POOL_SELECT:-}"
POOL="$OUT/pool_$TAG"
mkdir -p "$POOL"
EXTRA=()
[ -n "${AORTA_POOL_STREAMS:-}" ] && EXTRA+=("--aorta-streams=$AORTA_POOL_STREAMS")
[ -n "$SLOW" ] && EXTRA+=("--aorta-test-slowdown=$SLOW")
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader \
  2>/dev/null | tee "$POOL/gpu.txt"
start=$(date +%s)
slowest=0
for k in $(seq 1 "$MAX"); do
  now=$(( $(date +%s) - start ))
  if [ "$k" -gt 1 ] && [ $(( now + slowest + slowest / 10 )) -gt "$BUDGET" ]; then
    echo "pool $TAG: stopping after $((k - 1)) runs: another would pass the ${BUDGET} s budget"
    break
  fi
  seed=$(( SEED0 + k - 1 ))
  t0=$(date +%s)
  python3 -m pytest benchmarks/hw_queue "${SELECT[@]}" \
    --ignore=benchmarks/hw_queue/test_kernel_timeline_known_answer.py -p no:cacheprovider -q \
    "--benchmark-json=$POOL/$TAG-$k.json" "--aorta-order-seed=$seed" "${EXTRA[@]}" > "$POOL/$TAG-$k.log" 2>&1
  rc=$?
  wall=$(( $(date +%s) - t0 ))
  [ "$wall" -gt "$slowest" ] && slowest=$wall
  echo "$TAG-$k seed=$seed exit=$rc wall_s=$wall $(tail -1 "$POOL/$TAG-$k.log")" | tee -a "$POOL/runs.txt"
  [ "$rc" -eq 0 ] || { echo "pool $TAG: run $k failed (exit $rc), stopping"; break; }
done
tar czf "$OUT/pool_$TAG.tgz" -C "$OUT" "pool_$TAG"
PYTHONPATH=$PWD python3 scripts/gpu/gate_pairs.py phases "$POOL"
