#!/usr/bin/env bash
# One-GPU run for issues 2, 6 and 7: the P0 suite in both issue orders with the default hardware-queue
# setting and with CUDA_DEVICE_MAX_CONNECTIONS=32, a report comparing the two, the offline gate on them,
# and whether telemetry sampling disturbs tiny-kernel timing. Everything in $OUT/bundle.tgz.
set -uo pipefail
OUT=${OUT:-/tmp/aorta-out}; W=$OUT/work; mkdir -p "$W"
export PYTHONPATH=$PWD
P0=(python3 -m pytest benchmarks/hw_queue -m p0 --aorta-streams=1,4,16,64 --aorta-issue-order=breadth,depth -p no:cacheprovider -q)
t0=$(date +%s)
"${P0[@]}" --benchmark-json="$W/default.json" --aorta-trace-dir="$W/traces_default" > "$W/default.log" 2>&1
echo "p0 default rc=$? wall=$(( $(date +%s) - t0 ))s"
t1=$(date +%s)
CUDA_DEVICE_MAX_CONNECTIONS=32 "${P0[@]}" --benchmark-json="$W/conn32.json" > "$W/conn32.log" 2>&1
echo "p0 CUDA_DEVICE_MAX_CONNECTIONS=32 rc=$? wall=$(( $(date +%s) - t1 ))s"
for iv in 0 100; do
  python3 -m pytest benchmarks/hw_queue -k "tiny_kernel and eager" --aorta-streams=1 --aorta-telemetry-interval-ms=$iv \
      --benchmark-json="$W/tiny_telemetry_$iv.json" -p no:cacheprovider -q > "$W/tiny_telemetry_$iv.log" 2>&1
  echo "tiny eager telemetry interval ${iv} ms rc=$?"
done
python3 -m aorta report --run "$W/default.json" --label default --run "$W/conn32.json" --label conn32 \
    --reference default --candidate conn32 --output "$W/report" > "$W/report.log" 2>&1
echo "report rc=$?"; tail -5 "$W/report.log"
python3 -m aorta compare "$W/default.json" "$W/conn32.json" > "$W/compare.log" 2>&1
echo "aorta compare default -> conn32 rc=$?"; head -40 "$W/compare.log" | cut -c1-160
python3 - "$W" <<'PY'
import json, os, sys
w = sys.argv[1]
for iv in (0, 100):
    b = json.load(open(os.path.join(w, f"tiny_telemetry_{iv}.json")))["benchmarks"][0]
    print(f"tiny eager 1 stream, telemetry {iv} ms: {b['extra_info']['metrics']['us_per_launch']['value']:.2f} us/launch")
for label in ("default", "conn32"):
    for b in json.load(open(os.path.join(w, f"{label}.json")))["benchmarks"]:
        e = b["extra_info"]; m = e["metrics"]
        if b["name"].startswith(("test_stream_concurrency", "test_large_gemm_only[streams1-bf16")):
            extra = {k: round(v["value"], 3) for k, v in m.items()}
            print(label, b["name"], extra, "ev.conc", e.get("effective_concurrency"))
PY
(cd "$OUT" && tar czf bundle.tgz work)
