#!/usr/bin/env bash
# Two-GPU proof run (issues 3, 4, 6, 7): the FSDP suite and its known-answer test (scripts/gpu/fsdp.sh),
# the launch script on both GPUs, fsdp_tp over real NCCL collectives, an FSDP report of the two runs,
# and a merged two-rank trace. Everything lands in $OUT/bundle.tgz; short tables are printed.
set -uo pipefail
OUT=${OUT:-/tmp/aorta-out}; W=$OUT/work; mkdir -p "$W"
export PYTHONPATH=$PWD NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
t0=$(date +%s)
OUT=$W/fsdp bash scripts/gpu/fsdp.sh 2>&1 | tail -30
echo "fsdp.sh wall=$(( $(date +%s) - t0 ))s"
t1=$(date +%s)
timeout 150 scripts/launch_cuda.sh -k "baseline or explicit_prefetch" -p no:cacheprovider -q \
    --benchmark-json="$W/launch.json" --aorta-artifacts="$W/launch_artifacts" > "$W/launch.log" 2>&1
echo "launch_cuda.sh rc=$? wall=$(( $(date +%s) - t1 ))s"; grep -E "nproc|torchrun|passed|failed" "$W/launch.log" | head -5
timeout 90 torchrun --standalone --nproc_per_node 2 scripts/gpu/fsdp_tp_collectives.py > "$W/fsdp_tp.log" 2>&1
echo "fsdp_tp collectives rc=$?"; grep -E "streams=|comm=|overlap|Error" "$W/fsdp_tp.log" | head -8
mkdir -p "$W/rep/default" "$W/rep/launcher"
cp "$W/fsdp/fsdp.json" "$W/rep/default/" && cp -r "$W/fsdp/artifacts_fsdp" "$W/rep/default/artifacts"
cp "$W/launch.json" "$W/rep/launcher/" && cp -r "$W/launch_artifacts" "$W/rep/launcher/artifacts"
python3 -m aorta report --run "$W/rep/default" --label default --run "$W/rep/launcher" --label launcher_env \
    --reference default --candidate launcher_env --output "$W/fsdp_report" > "$W/report.log" 2>&1
echo "fsdp report rc=$?"; tail -8 "$W/report.log"
traces=$(ls "$W"/fsdp/artifacts_fsdp/torch_profiler/rank*/baseline.pt.trace.json 2>/dev/null | tr '\n' ' ')
echo "traces: $traces"
# shellcheck disable=SC2086
python3 -m aorta trace merge $traces --output "$W/merged_baseline.json" > "$W/merge.log" 2>&1
echo "trace merge rc=$?"; tail -12 "$W/merge.log"
(cd "$OUT" && tar czf bundle.tgz --exclude='*.pt.trace.json' work && ls -la bundle.tgz)
