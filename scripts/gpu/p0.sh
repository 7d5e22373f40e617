#!/usr/bin/env bash
# Issue 2's GPU proof on one NVIDIA GPU: the P0 sweep, stream_concurrency at 64/128 both issue orders,
# and a bare matmul beside large_gemm_only. Logs and JSON under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/aorta-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
t0=$(date +%s)
python3 -m pytest benchmarks/hw_queue -m p0 --aorta-streams=1,4,16,64 --benchmark-json="$OUT/p0.json" -p no:cacheprovider -q > "$OUT/p0.log" 2>&1
echo "p0 sweep rc=$? wall=$(( $(date +%s) - t0 ))s"
t1=$(date +%s)
python3 -m pytest benchmarks/hw_queue -k stream_concurrency --aorta-streams=64,128 --aorta-issue-order=breadth,depth \
    --benchmark-json="$OUT/conc.json" -p no:cacheprovider -q > "$OUT/conc.log" 2>&1
echo "concurrency rc=$? wall=$(( $(date +%s) - t1 ))s"
python3 scripts/gpu/bare_matmul.py | tee "$OUT/bare.json"
tail -5 "$OUT/p0.log"; grep -E "FAILED|Error" "$OUT/p0.log" "$OUT/conc.log" | head -20
python3 scripts/gpu/summarize.py "$OUT/p0.json" "$OUT/conc.json"
