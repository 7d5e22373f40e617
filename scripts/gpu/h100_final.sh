#!/usr/bin/env bash
# Final one-GPU check on the code as it lands: issue 2's exact command over every hardware-queue
# benchmark, stream_concurrency at 64/128 in both issue orders, and telemetry on/off for host-bound
# tiny kernels (alternating, twice each). Everything lands in $OUT/bundle.tgz.
set -uo pipefail
OUT=${OUT:-/tmp/aorta-out}; W=$OUT/work; mkdir -p "$W"
export PYTHONPATH=$PWD
t0=$(date +%s)
timeout 420 python3 -m pytest benchmarks/hw_queue --aorta-streams=1,4,16,64 --benchmark-json="$W/out.json" \
    -p no:cacheprovider -q -rs > "$W/out.log" 2>&1
echo "pytest benchmarks/hw_queue --aorta-streams=1,4,16,64: rc=$? wall=$(( $(date +%s) - t0 ))s"; tail -3 "$W/out.log"
timeout 90 python3 -m pytest benchmarks/hw_queue -k stream_concurrency --aorta-streams=64,128 --aorta-issue-order=breadth,depth \
    --benchmark-json="$W/conc.json" -p no:cacheprovider -q > "$W/conc.log" 2>&1
echo "concurrency rc=$?"
for i in 1 2; do for iv in 0 100; do
  python3 -m pytest benchmarks/hw_queue -k "tiny_kernel and eager" --aorta-streams=1 --aorta-telemetry-interval-ms=$iv \
      --benchmark-json="$W/tiny_${iv}_$i.json" -p no:cacheprovider -q > /dev/null 2>&1
done; done
python3 - "$W" <<'PY'
import glob, json, os, sys
w = sys.argv[1]
for p in sorted(glob.glob(os.path.join(w, "tiny_*.json"))):
    b = json.load(open(p))["benchmarks"][0]
    print(os.path.basename(p), f"{b['extra_info']['metrics']['us_per_launch']['value']:.2f} us/launch")
PY
python3 scripts/gpu/summarize.py "$W/out.json" "$W/conc.json" > "$W/table.txt" 2>&1
(cd "$OUT" && tar czf bundle.tgz work)
grep -E "large_gemm_only\[streams1-bf16|stream_concurrency|tiny_kernel_stress\[streams(1|16)-|hetero" "$W/table.txt" | cut -c1-200
