#!/bin/bash
# One GPU call for issue 14's remaining work: moe at smoke and full size, the kernel-timeline known answers,
# the default suite at 1 and 4 streams (smoke), and a table last. Logs under $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 40 python3 - <<'PY' 2>&1 | tee "$OUT/moe_routing.txt"
from aorta.device import Device
from aorta.workloads.moe import Moe
dev = Device.open("auto")
for size in ("smoke", "full"):
    w = Moe(dev, 4, size=size)
    try:
        w.setup(); print(size, "counts min/max", min(w.counts), max(w.counts))
    except Exception as e:
        print(size, "setup failed:", type(e).__name__, e)
PY
timeout 100 python3 -m pytest benchmarks/hw_queue/test_moe.py --streams=1,4 -q -p no:cacheprovider --tb=short \
  --rounds=5 --warmup=1 2>&1 > "$OUT/moe_full.txt"; grep -E "Error|passed|failed" "$OUT/moe_full.txt" | tail -8
[ -z "${SKIP_KNOWN:-}" ] && timeout 120 python3 -m pytest benchmarks/hw_queue/test_kernel_timeline_known_answer.py -q -s \
  -p no:cacheprovider --benchmark-disable 2>&1 | tail -15 > "$OUT/known.txt"; tail -4 "$OUT/known.txt"
timeout ${SUITE_S:-150} python3 -m pytest benchmarks/hw_queue --aorta-size=smoke --streams=1,4 --rounds=5 --warmup=1 -q \
  -p no:cacheprovider --tb=line -k "not known_answer ${SUITE_K:-and not torch_compile}" --benchmark-json="$OUT/suite.json" \
  > "$OUT/suite.txt" 2>&1; grep -E "^FAILED|^ERROR|Error:|passed|failed" "$OUT/suite.txt" | cut -c1-300 | tail -20
if [ -n "${FULL_S:-}" ]; then  # the default (full) size at FULL_STREAMS, fewer rounds
  timeout "$FULL_S" python3 -m pytest benchmarks/hw_queue --streams="${FULL_STREAMS:-4}" --rounds=3 --warmup=1 -q \
    -p no:cacheprovider --tb=line -k "not known_answer and not torch_compile" --benchmark-json="$OUT/full.json" \
    > "$OUT/full.txt" 2>&1; grep -E "^FAILED|^ERROR|Error:|passed|failed" "$OUT/full.txt" | cut -c1-300 | tail -20
fi
python3 - "$OUT"/suite.json "$OUT"/full.json <<'PY' | tee "$OUT/table.txt"
import json, os, sys
for path in sys.argv[1:]:
  if not os.path.exists(path):
    continue
  print("==", os.path.basename(path))
  for b in json.load(open(path))["benchmarks"]:
    e = b["extra_info"]
    print(f'{b["name"][:46]:46} dev={e["device_ms_per_iteration"][0]:.3f} enq={e.get("host_enqueue_ms_per_iteration") or 0:.3f} '
          f'conc={e.get("effective_concurrency") or 0:.2f} busy={e.get("gpu_busy_share") or 0:.2f} distinct={e.get("distinct_streams")} '
          f'extra={sorted(set(e["metrics"]) - {e["headline_metric"]})[:4]}')
PY
