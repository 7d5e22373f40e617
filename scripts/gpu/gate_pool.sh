#!/usr/bin/env bash
# A pool of fresh-process runs for the gate's proof: one plain pytest process (or torchrun launch) after
# another (each its own launch path, allocator layout, clocks and power state: the gate's sample), the
# benchmark order varied from run to run, as many runs as fit the time budget.
# scripts/gpu/gate_pairs.py then judges A/A pairs, slowdowns and changes offline with `aorta compare`, from
# pools collected on several machines (one device call per pool).
# Knobs: AORTA_POOL_TAG (a: the pool's name, also in each file name), AORTA_POOL_MAX (8 runs at most),
# AORTA_POOL_BUDGET_S (540: no run starts that the slowest so far would carry past it),
# AORTA_POOL_SLOWDOWN (empty; e.g. 0.05: every run with --aorta-test-slowdown), AORTA_POOL_SEED0 (1: the
# first run's order seed), AORTA_POOL_SELECT (empty: the whole suite; a pytest selection without spaces,
# e.g. "-m p0" or "-k baseline"), AORTA_POOL_STREAMS (empty: the suite's default sweep).
# The FSDP suite: AORTA_POOL_SUITE=fsdp runs `torchrun --standalone --nproc_per_node AORTA_POOL_NPROC (2)
# -m pytest benchmarks/fsdp` per run (NCCL_NVLS_ENABLE=0), AORTA_POOL_BALLAST (e.g. 0.5: every run with
# --aorta-test-comm-ballast). AORTA_POOL_ENV (e.g. "CUDA_DEVICE_MAX_CONNECTIONS=1") sets variables for every
# run: such a pool is a deliberate change (kind "change"), judged like a slowdown with the difference allowed.
# Everything lands in $OUT: pool_<tag>.tgz (runs' JSON and logs, the GPU line, the pool's kind), and a
# table of the runs printed last.
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
SUITE=${AORTA_POOL_SUITE:-hw_queue}
BALLAST=${AORTA_POOL_BALLAST:-}
read -r -a RUN_ENV <<< "${AORTA_POOL_ENV:-}"
EXTRA=()
[ -n "${AORTA_POOL_STREAMS:-}" ] && EXTRA+=("--aorta-streams=$AORTA_POOL_STREAMS")
[ -n "$SLOW" ] && EXTRA+=("--aorta-test-slowdown=$SLOW")
[ -n "$BALLAST" ] && EXTRA+=("--aorta-test-comm-ballast=$BALLAST")
if [ "${#RUN_ENV[@]}" -gt 0 ]; then kind=change; elif [ -n "$SLOW$BALLAST" ]; then kind=slowdown; else kind=aa; fi
echo "$kind ${AORTA_POOL_ENV:-}" > "$POOL/kind.txt"
case "$SUITE" in
  hw_queue) LAUNCH=(python3 -m pytest benchmarks/hw_queue --ignore=benchmarks/hw_queue/test_kernel_timeline_known_answer.py) ;;
  fsdp) export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the lent machines
        LAUNCH=(python3 -m aorta torchrun --standalone "--nproc_per_node=${AORTA_POOL_NPROC:-2}" -m pytest
                benchmarks/fsdp --aorta-dist-timeout=120 "--aorta-artifacts=$POOL/art") ;;
  *) echo "AORTA_POOL_SUITE=$SUITE: allowed hw_queue, fsdp" >&2; exit 2 ;;
esac
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
  env "${RUN_ENV[@]}" "${LAUNCH[@]}" "${SELECT[@]}" -p no:cacheprovider -q \
    "--benchmark-json=$POOL/$TAG-$k.json" "--aorta-order-seed=$seed" "${EXTRA[@]}" > "$POOL/$TAG-$k.log" 2>&1
  rc=$?
  rm -rf "$POOL/art"  # FSDP traces: hundreds of MB; the figures are in the JSON
  wall=$(( $(date +%s) - t0 ))
  [ "$wall" -gt "$slowest" ] && slowest=$wall
  echo "$TAG-$k seed=$seed exit=$rc wall_s=$wall $(tail -1 "$POOL/$TAG-$k.log")" | tee -a "$POOL/runs.txt"
  [ "$rc" -eq 0 ] || { echo "pool $TAG: run $k failed (exit $rc), stopping"; break; }
done
tar czf "$OUT/pool_$TAG.tgz" -C "$OUT" "pool_$TAG"
PYTHONPATH=$PWD python3 scripts/gpu/gate_pairs.py phases "$POOL"
