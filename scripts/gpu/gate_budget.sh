#!/usr/bin/env bash
# Issue 55's GPU runs, the README's gate commands as given (python3 -m pytest from the repo root, budget 5m):
#   bash scripts/gpu/gate_budget.sh save NAME        # save a p0 baseline into .gpu_carry/baselines
#   bash scripts/gpu/gate_budget.sh aa NAME          # A/A compare against it
#   bash scripts/gpu/gate_budget.sh slow NAME        # the same with --aorta-test-slowdown 0.02
#   bash scripts/gpu/gate_budget.sh ab               # aorta ab --a "" --b "" --budget 6m on p0
# Logs, verdict JSON and the baseline folder come back under $OUT.
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
out=${OUT:-/tmp/out}; mkdir -p "$out"
mode=$1; name=${2:-p0base}
bd=.gpu_carry/baselines; mkdir -p "$bd"
start=$(date +%s)
case $mode in
  save) python3 -m pytest benchmarks/hw_queue -m p0 --aorta-save-baseline "$name" --aorta-runs auto --aorta-budget 5m \
          --aorta-baseline-dir "$bd" -p no:cacheprovider > "$out/$mode.log" 2>&1; rc=$? ;;
  aa) python3 -m pytest benchmarks/hw_queue -m p0 --aorta-compare "$name" --aorta-runs auto --aorta-budget 5m \
          --aorta-baseline-dir "$bd" --aorta-verdict-json "$out/verdict_$mode.json" -p no:cacheprovider > "$out/$mode.log" 2>&1; rc=$? ;;
  slow) python3 -m pytest benchmarks/hw_queue -m p0 --aorta-compare "$name" --aorta-runs auto --aorta-budget 5m \
          --aorta-test-slowdown 0.02 --aorta-baseline-dir "$bd" --aorta-verdict-json "$out/verdict_$mode.json" \
          -p no:cacheprovider > "$out/$mode.log" 2>&1; rc=$? ;;
  ab) python3 -m aorta ab --a "" --b "" --budget 6m --out "$out/ab" -- benchmarks/hw_queue -m p0 > "$out/$mode.log" 2>&1; rc=$?
      cp "$out/ab/verdict.json" "$out/verdict_ab.json" 2>/dev/null; tar czf "$out/ab_runs.tgz" -C "$out" ab; rm -rf "$out/ab" ;;
esac
echo "MODE $mode rc=$rc wall=$(( $(date +%s) - start ))s"
tar czf "$out/baselines.tgz" .gpu_carry/baselines .aorta/runs 2>/dev/null
grep -E "aorta (gate|ab): (where|  |auto|check run [0-9]|look|verdict)|^verdict|saved|pairs|runs \(the sample\)" "$out/$mode.log" | tail -14
