#!/usr/bin/env bash
# Proof on two GPUs that a communication setting's verdict says why, and that a sweep flags a knob that did
# nothing (issue 27, parts 2 and 4), within 600 s:
#   1. pools of the FSDP baseline scenario (scripts/gpu/gate_pool.sh, fresh torchrun launches): an A/A pool
#      of AORTA_WHYC_BASE_RUNS (3) runs, then AORTA_WHYC_RUNS (2) runs with AORTA_WHYC_CHANGE
#      (NCCL_MAX_NCHANNELS=2: fewer channels, smaller collective grids); gate_pairs.py judges the change
#      against the A/A pool through `aorta compare` and prints every figure and each cause
#      (collective_config: the grids changed; peer_wait where the exposed wait grew);
#   2. `aorta sweep` of the same scenario over NCCL_MAX_NCHANNELS=2,8 and a misspelt variable
#      (NCCL_PROTOCOL=LL,Simple; NCCL reads NCCL_PROTO) with NCCL_DEBUG=INFO: the sweep's knob check says
#      NCCL_MAX_NCHANNELS took effect and flags NCCL_PROTOCOL "no evidence the knob took effect".
# Under $OUT: pool_*.tgz, judge.log, sweep.log, knobs.json, sweep.tgz (cells' JSON and logs), and the
# tables printed last.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/why_comm_proof}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the lent machines
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
NPROC=${NPROC:-2}
CHANGE=${AORTA_WHYC_CHANGE:-NCCL_MAX_NCHANNELS=2}
start=$(date +%s)
pool() {  # pool TAG MAX BUDGET_S [ENV]
  AORTA_POOL_SUITE=fsdp AORTA_POOL_SELECT="-k baseline" AORTA_POOL_NPROC=$NPROC AORTA_POOL_TAG=$1 \
    AORTA_POOL_MAX=$2 AORTA_POOL_BUDGET_S=$3 AORTA_POOL_ENV=${4:-} OUT=$OUT bash scripts/gpu/gate_pool.sh \
    > "$OUT/pool_$1.log" 2>&1
  echo "== pool $1 (${4:-A/A}): $(grep -c exit=0 "$OUT/pool_$1/runs.txt" 2>/dev/null || echo 0) runs ok," \
    "$(( $(date +%s) - start )) s"
}
pool wa "${AORTA_WHYC_BASE_RUNS:-3}" 170
pool wn "${AORTA_WHYC_RUNS:-2}" 120 "$CHANGE"
PYTHONPATH=$PWD python3 scripts/gpu/gate_pairs.py judge "$OUT/judged" "$OUT/pool_wa" "$OUT/pool_wn" \
  --base-runs "${AORTA_WHYC_BASE_RUNS:-3}" --cand-runs "${AORTA_WHYC_RUNS:-2}" > "$OUT/judge.log" 2>&1
cp "$OUT"/judged/*.verdict.json "$OUT/" 2>/dev/null
rm -rf "$OUT/judged" "$OUT/pool_wa" "$OUT/pool_wn"

left=$(( 580 - ($(date +%s) - start) ))
echo "== sweep: ${left} s left"
CMD=(python3 -m torch.distributed.run --standalone --nproc_per_node "$NPROC" -m pytest benchmarks/fsdp -k baseline
     -p no:cacheprovider -q --aorta-dist-timeout 60 --aorta-override training.warmup_steps=2
     --aorta-override training.steps=6 --aorta-override profiling.active=6
     --aorta-override profiling.reference=false)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/why_comm.XXXXXX") || exit 2
NCCL_DEBUG=INFO timeout -s TERM "$(( left > 20 ? left - 10 : 10 ))" python3 -m aorta sweep \
  --grid "NCCL_MAX_NCHANNELS=2,8" --grid "NCCL_PROTOCOL=LL,Simple" --output "$WORK/sweep" --label knobs \
  --cell-timeout 70 -- "${CMD[@]}" > "$OUT/sweep.log" 2>&1
echo "== sweep exit $? at $(( $(date +%s) - start )) s"
cp "$WORK/sweep/knobs.json" "$OUT/" 2>/dev/null
tar czf "$OUT/sweep.tgz" -C "$WORK" sweep 2>/dev/null
rm -rf "$WORK"

echo "== the change judged against the A/A pool"
grep -v "^ *$" "$OUT/judge.log" | tail -25
echo "== the sweep's knob check"
sed -n '/did each setting take effect/,$p' "$OUT/sweep.log" | head -30
