#!/usr/bin/env bash
# GPU run of the six issue-3a workloads (moe, fsdp_tp, activation_ckpt, grad_accum, speculative_decode,
# continuous_batch): the benchmarks at --aorta-streams=1,4,16, a back-to-back multi-step correctness check,
# and (with >= 2 GPUs) fsdp_tp over real NCCL collectives. Logs and JSON under $OUT; a table at the end.
set -uo pipefail
OUT=${OUT:-$(mktemp -d)}
export OUT PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" NCCL_NVLS_ENABLE=0
K="moe or fsdp_tp or activation_ckpt or grad_accum or speculative_decode or continuous_batch"

echo "== repeat check (3 steps back to back vs one-stream reference)"
python3 scripts/gpu/issue3a_repeat_check.py --size full --streams 4,16 --steps 3 2>&1 | tee "$OUT/repeat_check.log"
rc_check=${PIPESTATUS[0]}

echo "== benchmarks"
t0=$(date +%s.%N)
python3 -m pytest benchmarks/hw_queue -k "$K" --aorta-streams=1,4,16 -p no:cacheprovider -q -rs \
  --benchmark-json="$OUT/issue3a.json" > "$OUT/bench.log" 2>&1
rc_bench=$?
t1=$(date +%s.%N)
tail -n 25 "$OUT/bench.log"

rc_dist=0
ngpu=$(python3 -c "import torch; print(torch.cuda.device_count())")
if [ "$ngpu" -ge 2 ]; then
  echo "== fsdp_tp with real collectives (torchrun, 2 GPUs)"
  torchrun --nproc_per_node 2 scripts/gpu/fsdp_tp_collectives.py > "$OUT/fsdp_tp_collectives.log" 2>&1
  rc_dist=$?
  grep -E "streams=|Error|error" "$OUT/fsdp_tp_collectives.log" | head -20
fi

python3 - "$OUT/issue3a.json" "$(python3 -c "print(f'{$t1 - $t0:.1f}')")" <<'PY'
import json, statistics, sys
data = json.load(open(sys.argv[1]))
extra_keys = ("comm_overlap_ratio", "reduce_overlap_ratio", "per_token_p99_ms", "decode_step_p99_ms")
print(f"{'workload':20s} {'dtype':5s} {'str':>3s} {'dist':>4s} {'headline':>22s} {'med ms':>8s} {'conc':>6s}  extra")
for b in sorted(data["benchmarks"], key=lambda b: (b["extra_info"]["workload"], b["extra_info"]["dtype"],
                                                    b["extra_info"]["streams_requested"])):
    e = b["extra_info"]
    h = e["metrics"][e["headline_metric"]]
    more = " ".join(f"{k}={e['metrics'][k]['value']:.3g}" for k in extra_keys if k in e["metrics"])
    info = e["workload_info"]
    if "comm" in info:
        more += f" comm={info['comm']}"
    if "acceptance_rate" in info:
        more += f" accept={info['acceptance_rate']:.2f}"
    conc = e.get("effective_concurrency")
    print(f"{e['workload']:20s} {e['dtype']:5s} {e['streams_requested']:>3d} {str(e['distinct_streams']):>4s} "
          f"{h['value']:>12.4g} {h['unit']:>9s} {statistics.median(e['device_ms_per_iteration']):8.2f} "
          f"{conc if conc is None else round(conc, 2)!s:>6s}  {more}")
print(f"benchmark wall time: {sys.argv[2]} s")
PY
echo "exit codes: repeat_check=$rc_check benchmarks=$rc_bench fsdp_collectives=$rc_dist"
[ $rc_check -eq 0 ] && [ $rc_bench -eq 0 ] && [ $rc_dist -eq 0 ]
