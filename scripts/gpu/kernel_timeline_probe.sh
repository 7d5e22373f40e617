#!/bin/bash
# One GPU call: record the test traces, run the kernel-timeline known answers, a short suite, a table last.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
[ -z "${SUITE_ONLY:-}" ] && timeout 90 python3 scripts/gpu/kernel_timeline_probe.py "$OUT" 2>&1 | tee "$OUT/probe.txt"
[ -z "${SUITE_ONLY:-}" ] && timeout 150 python3 -m pytest benchmarks/hw_queue/test_kernel_timeline_known_answer.py -q -s -p no:cacheprovider \
  --benchmark-disable 2>&1 | tail -25 | tee "$OUT/known.txt"
timeout 330 python3 -m pytest benchmarks/hw_queue --aorta-size=smoke --streams=4,16 --rounds=5 --warmup=1 -q -p no:cacheprovider \
  -k "not known_answer and not torch_compile" --benchmark-json="$OUT/suite.json" 2>&1 | tail -60 > "$OUT/suite.txt"
python3 - "$OUT/suite.json" <<'PY' | tee "$OUT/table.txt"
import json, sys
d = json.load(open(sys.argv[1]))
for b in d["benchmarks"]:
    e = b["extra_info"]
    print(f'{b["name"][:48]:48} dev={e["device_ms_per_iteration"][0]:.3f}ms enq={e.get("host_enqueue_ms_per_iteration") or 0:.3f}ms '
          f'conc={e.get("effective_concurrency")} busy={e.get("gpu_busy_share")} distinct={e.get("distinct_streams")} '
          f'ratio={(e.get("kernel_pass") or {}).get("ratio_to_timed")} notes={e.get("reading_notes")}')
PY
tail -30 "$OUT/suite.txt"
