#!/usr/bin/env bash
# Proof of the run-level gate on one GPU (H100 / H200): the sample is the run.
#   1. a baseline of AORTA_PROOF_BASE_RUNS fresh-process runs (--aorta-runs: the noise profile is measured
#      from them), unless AORTA_PROOF_BASELINE_FROM names a baselines folder saved by an earlier call
#      (carried over: the compare then runs on another machine than the one that saved it);
#   2. AORTA_PROOF_AA A/A compares, each with the gate-grade defaults (3 fresh runs, up to 2 confirmation
#      runs of suspects): no SLOWER allowed, exit 0;
#   3. one compare per slowdown in AORTA_PROOF_SLOWDOWNS (--aorta-test-slowdown: calibrated real device work):
#      SLOWER expected on the gateable device-time figures.
# Then scripts/gpu/gate_proof.py prints the tables (verdicts, catch rates, MDE per benchmark, time).
# Knobs: AORTA_PROOF_SELECT (-m p0), AORTA_PROOF_STREAMS (1,16), AORTA_PROOF_BASE_RUNS (5), AORTA_PROOF_AA (1),
# AORTA_PROOF_SLOWDOWNS (0.05), AORTA_PROOF_TAG (a), AORTA_PROOF_BASELINE_FROM. Everything lands in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/gate_proof}
mkdir -p "$OUT"
read -r -a SELECT <<< "${AORTA_PROOF_SELECT:--m p0}"
STREAMS=${AORTA_PROOF_STREAMS:-1,16}
BASE_RUNS=${AORTA_PROOF_BASE_RUNS:-5}
AA=${AORTA_PROOF_AA:-1}
SLOWDOWNS=${AORTA_PROOF_SLOWDOWNS:-0.05}
TAG=${AORTA_PROOF_TAG:-a}
BDIR="$OUT/baselines"
if [ -n "${AORTA_PROOF_BASELINE_FROM:-}" ]; then
  rm -rf "$BDIR" && cp -r "$AORTA_PROOF_BASELINE_FROM" "$BDIR" || exit 2
  BASE_RUNS=0
fi
CMD=(python3 -m pytest benchmarks/hw_queue "${SELECT[@]}" --ignore=benchmarks/hw_queue/test_kernel_timeline_known_answer.py "--aorta-streams=$STREAMS"
     -p no:cacheprovider -q "--aorta-baseline-dir=$BDIR")

# shellcheck source=SCRIPTDIR/gate_step.sh
. scripts/gpu/gate_step.sh  # the repository root is the working directory here

nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,temperature.gpu --format=csv,noheader 2>/dev/null \
  | tee "$OUT/gpu_$TAG.txt"
if [ "$BASE_RUNS" -gt 0 ]; then
  step "baseline_$TAG" --aorta-save-baseline=proof --aorta-replace-baseline "--aorta-runs=$BASE_RUNS"
fi
for i in $(seq 1 "$AA"); do
  step "aa_${TAG}$i" --aorta-compare=proof "--aorta-verdict-json=$OUT/aa_${TAG}$i.verdict.json"
done
for s in $SLOWDOWNS; do
  step "slow_${TAG}_$s" --aorta-compare=proof "--aorta-test-slowdown=$s" "--aorta-verdict-json=$OUT/slow_${TAG}_$s.verdict.json"
done
# Few files come back from a lent machine: the runs' JSON and logs and the baselines travel as one archive.
tar czf "$OUT/proof_$TAG.tgz" -C "$OUT" baselines -C "$PWD/.aorta" runs 2>/dev/null
rm -rf .aorta/runs
PYTHONPATH=$PWD python3 scripts/gpu/gate_proof.py "$OUT"
