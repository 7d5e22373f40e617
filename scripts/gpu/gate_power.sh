#!/usr/bin/env bash
# Proof of the gate with power (issue 36) on lent GPUs; one part per device call, everything under $OUT.
#   AORTA_POWER_PART=save   one H100: a p0 baseline with --aorta-runs auto (budget AORTA_POWER_SAVE, 150s),
#                           then an A/A compare and a --aorta-test-slowdown 0.02 compare, auto (AORTA_POWER_CMP, 120s)
#   AORTA_POWER_PART=other  another H100 with that baseline carried (AORTA_POWER_BASELINE_FROM): an A/A compare
#                           (the candidate on another machine than the one-machine baseline), a 10% slowdown,
#                           then aorta ab A = B and B with TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1
#   AORTA_POWER_PART=fsdp   two GPUs: aorta ab under torchrun, B with NCCL_MAX_NCHANNELS=4
# scripts/gpu/gate_power.py OUT prints the table (exit codes, judged and gateable counts, MDE shares, run walls).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/gate_power}
W=${AORTA_POWER_WORK:-/tmp/gate_power}  # every file of the part; $OUT gets one archive and the table (8 files come back)
mkdir -p "$OUT" "$W"
PART=${AORTA_POWER_PART:-save}
SAVE=${AORTA_POWER_SAVE:-150s}
CMP=${AORTA_POWER_CMP:-120s}
AB=${AORTA_POWER_AB:-90s}
BDIR="$W/baselines"
P0=(benchmarks/hw_queue -m p0 --ignore=benchmarks/hw_queue/test_kernel_timeline_known_answer.py -p no:cacheprovider -q)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,uuid,driver_version --format=csv,noheader 2>/dev/null | tee "$W/gpu_$PART.txt"

step() {  # NAME CMD...: run, keep its log and exit code
  local name=$1; shift
  local t0=$SECONDS
  "$@" >"$W/$name.log" 2>&1
  local code=$?
  echo "$name exit=$code wall_s=$((SECONDS - t0))" | tee -a "$W/steps.txt"
}
gate() {  # NAME ARGS...: a p0 pytest gate
  local name=$1; shift
  step "$name" python3 -m pytest "${P0[@]}" "--aorta-baseline-dir=$BDIR" "--aorta-verdict-json=$W/$name.verdict.json" "$@"
}
case $PART in
  save)
    gate save --aorta-save-baseline=p0 --aorta-replace-baseline --aorta-runs=auto "--aorta-budget=$SAVE"
    gate aa_same --aorta-compare=p0 --aorta-runs=auto "--aorta-budget=$CMP"
    gate slow2 --aorta-compare=p0 --aorta-runs=auto "--aorta-budget=$CMP" --aorta-test-slowdown=0.02
    ;;
  other)
    rm -rf "$BDIR" && cp -r "${AORTA_POWER_BASELINE_FROM:?}" "$BDIR" || exit 2
    gate aa_other --aorta-compare=p0 --aorta-runs=auto "--aorta-budget=$CMP"
    gate slow10_other --aorta-compare=p0 --aorta-runs=auto "--aorta-budget=$CMP" --aorta-test-slowdown=0.10
    step ab_same python3 -m aorta ab --a "" --b "" --budget "$AB" --out "$W/ab_same" --verdict-json "$W/ab_same.verdict.json" -- "${P0[@]}"
    step ab_tf32 python3 -m aorta ab --a "" --b "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1" --budget "$AB" --out "$W/ab_tf32" \
      --verdict-json "$W/ab_tf32.verdict.json" -- "${P0[@]}" -k large_gemm
    ;;
  fsdp)
    step ab_fsdp python3 -m aorta ab --a "" --b "NCCL_MAX_NCHANNELS=4" --runs "${AORTA_POWER_PAIRS:-2}" --out "$W/ab_fsdp" \
      --verdict-json "$W/ab_fsdp.verdict.json" -- torchrun --standalone --nproc_per_node 2 -m pytest benchmarks/fsdp \
      -k "${AORTA_POWER_FSDP_K:-baseline}" -p no:cacheprovider -q
    ;;
  *) echo "AORTA_POWER_PART=$PART: expected save, other or fsdp" >&2; exit 2 ;;
esac
cp -r .aorta/runs "$W/runs" 2>/dev/null
tar czf "$OUT/power_$PART.tgz" -C "$W" .
PYTHONPATH=$PWD python3 scripts/gpu/gate_power.py "$W" | tee "$OUT/table_$PART.txt"
