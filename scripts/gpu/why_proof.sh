#!/usr/bin/env bash
# Proof that every moved verdict says why (docs/gate.md, "Why a verdict moved"), on one GPU (H100 / H200):
#   1. a baseline of AORTA_WHY_BASE_RUNS fresh-process runs of the GEMM benchmarks on the default stack;
#   2. the same with TF32 forced on for fp32 GEMMs (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, named as an intended
#      setting): cuBLAS picks TF32 kernels, so the fp32 benchmark is FASTER with kernel_selection naming the
#      old and new kernel (and environment naming the variable);
#   3. the same with cuBLASLt preferred (TORCH_BLAS_PREFER_CUBLASLT=1): wherever Lt picks another kernel, its
#      verdict names it (where it picks the same one, no kernel_selection may be named);
#   4. the calibrated slowdown (--aorta-test-slowdown): SLOWER, its diff lists the spin kernel as new, and no
#      kernel_selection is named.
# scripts/gpu/why_proof.py prints each moved benchmark's causes and checks 2 and 4. Everything lands in $OUT.
# Knobs: AORTA_WHY_SELECT (-k large_gemm_only), AORTA_WHY_STREAMS (1), AORTA_WHY_BASE_RUNS (3),
# AORTA_WHY_RUNS (2: fresh runs per compare, no confirmation runs), AORTA_WHY_SLOWDOWN (0.05),
# AORTA_WHY_CUBLASLT (1; 0 leaves step 3 out).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/why_proof}
mkdir -p "$OUT"
read -r -a SELECT <<< "${AORTA_WHY_SELECT:--k large_gemm_only}"
STREAMS=${AORTA_WHY_STREAMS:-1}
BASE_RUNS=${AORTA_WHY_BASE_RUNS:-3}
RUNS=${AORTA_WHY_RUNS:-2}
SLOWDOWN=${AORTA_WHY_SLOWDOWN:-0.05}
BDIR="$OUT/baselines"
CMD=(python3 -m pytest benchmarks/hw_queue "${SELECT[@]}" "--aorta-streams=$STREAMS" -p no:cacheprovider -q
     "--aorta-baseline-dir=$BDIR")

# shellcheck source=SCRIPTDIR/gate_step.sh
. scripts/gpu/gate_step.sh  # the repository root is the working directory here

unset TORCH_ALLOW_TF32_CUBLAS_OVERRIDE TORCH_BLAS_PREFER_CUBLASLT
step baseline --aorta-save-baseline=why --aorta-replace-baseline "--aorta-runs=$BASE_RUNS"
COMPARE=(--aorta-compare=why "--aorta-runs=$RUNS" --aorta-confirm=0)
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 step tf32 "${COMPARE[@]}" \
  --aorta-allow-env-diff=TORCH_ALLOW_TF32_CUBLAS_OVERRIDE "--aorta-verdict-json=$OUT/tf32.verdict.json"
if [ "${AORTA_WHY_CUBLASLT:-1}" = 1 ]; then
  TORCH_BLAS_PREFER_CUBLASLT=1 step cublaslt "${COMPARE[@]}" \
    --aorta-allow-env-diff=TORCH_BLAS_PREFER_CUBLASLT "--aorta-verdict-json=$OUT/cublaslt.verdict.json"
fi
step slowdown "${COMPARE[@]}" "--aorta-test-slowdown=$SLOWDOWN" "--aorta-verdict-json=$OUT/slowdown.verdict.json"
rm -rf .aorta/runs
PYTHONPATH=$PWD python3 scripts/gpu/why_proof.py "$OUT"
