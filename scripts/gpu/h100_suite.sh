#!/usr/bin/env bash
# One-GPU proof run (issues 2, 3, 7): every hardware-queue benchmark at --aorta-streams=1,4,16,64 (split in two
# processes so a slow compile cannot lose the rest), stream_concurrency at 64/128 in both issue orders,
# a bare matmul beside large_gemm_only, the back-to-back correctness check, telemetry via nvidia-smi.
# Everything lands in $OUT/bundle.tgz; a short table is printed last.
set -uo pipefail
OUT=${OUT:-/tmp/aorta-out}; W=$OUT/work; mkdir -p "$W"
export PYTHONPATH=$PWD
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
stamp() { date +%s; }
t0=$(stamp)
timeout 400 python3 -m pytest benchmarks/hw_queue -m "not compile" --aorta-streams=1,4,16,64 \
    --benchmark-json="$W/sweep_main.json" -p no:cacheprovider -q -rs > "$W/sweep_main.log" 2>&1
echo "sweep (not compile) rc=$? wall=$(( $(stamp) - t0 ))s"
t1=$(stamp)
timeout 150 python3 -m pytest benchmarks/hw_queue -m compile --aorta-streams=1,4,16,64 \
    --benchmark-json="$W/sweep_compile.json" -p no:cacheprovider -q -rs > "$W/sweep_compile.log" 2>&1
echo "sweep (compile) rc=$? wall=$(( $(stamp) - t1 ))s"
t2=$(stamp)
timeout 90 python3 -m pytest benchmarks/hw_queue -k stream_concurrency --aorta-streams=64,128 --aorta-issue-order=breadth,depth \
    --benchmark-json="$W/conc.json" -p no:cacheprovider -q > "$W/conc.log" 2>&1
echo "concurrency 64/128 rc=$? wall=$(( $(stamp) - t2 ))s"
python3 scripts/gpu/bare_matmul.py | tee "$W/bare.json"
timeout 60 python3 -m pytest benchmarks/hw_queue -k "large_gemm and bf16" --aorta-streams=1 --aorta-telemetry-source=nvidia-smi \
    --benchmark-json="$W/telemetry_smi.json" -p no:cacheprovider -q > "$W/telemetry_smi.log" 2>&1
echo "telemetry via nvidia-smi rc=$?"
timeout 90 python3 scripts/gpu/issue3a_repeat_check.py --size full --streams 4,16 --steps 3 > "$W/repeat_check.log" 2>&1
echo "repeat check rc=$?"; tail -8 "$W/repeat_check.log"
grep -hE "passed|failed|FAILED|Error" "$W"/sweep_*.log "$W/conc.log" | grep -v "^E " | tail -12
python3 - "$W" <<'PY'
import json, sys, os
w = sys.argv[1]
for name in ("sweep_main.json", "telemetry_smi.json"):
    p = os.path.join(w, name)
    if not os.path.exists(p):
        continue
    d = json.load(open(p))
    b = next(b for b in d["benchmarks"] if "telemetry" in b["extra_info"])
    t = b["extra_info"]["telemetry"]
    print(name, b["name"], "source", t.get("source"), "samples", t.get("samples"),
          {k: v.get("median") for k, v in (t.get("figures") or {}).items()}, "throttled", t.get("throttled_rounds"))
m = json.load(open(os.path.join(w, "sweep_main.json")))["machine_info"]["aorta"]
print("machine:", {k: m.get(k) for k in ("gpu_name", "gpu_arch", "driver", "torch", "cuda", "nccl")})
PY
python3 scripts/gpu/summarize.py "$W/sweep_main.json" "$W/sweep_compile.json" "$W/conc.json" > "$W/table.txt" 2>&1
(cd "$OUT" && tar czf bundle.tgz work)
cat "$W/table.txt" | cut -c1-105
