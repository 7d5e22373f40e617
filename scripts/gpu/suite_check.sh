#!/usr/bin/env bash
# The hardware-queue suite on this machine's GPU(s), checked and summarized:
#   1. the benchmarks (AORTA_MARKERS: a -m expression, AORTA_KEYWORDS: a -k expression; default all) at
#      AORTA_STREAMS (default 1,4,16,64), in two processes
#      (compile workloads apart, so a slow torch.compile cannot cost the rest);
#   2. stream_concurrency at 64 and 128 streams in both issue orders (distinct streams, queue fit);
#   3. a bare 8192^3 bf16 matmul through the same timing loop (reference for large_gemm_only);
#   4. the multi-step correctness check (scripts/gpu/multistep_check.py);
#   5. with two or more GPUs, fsdp_tp over real NCCL/RCCL collectives (scripts/gpu/fsdp_tp_collectives.py).
# Logs and JSON under $OUT (default artifacts/suite_check), then one table of every benchmark
# (scripts/gpu/summarize.py). Exit status: 0 when every step passed, else 1.
# Examples:
#   scripts/gpu/suite_check.sh                                    # everything, one GPU: about 10 minutes on an H100
#   AORTA_MARKERS=p0 scripts/gpu/suite_check.sh                  # the P0 benchmarks
#   AORTA_MARKERS="training or inference" AORTA_STREAMS=1,4,16 scripts/gpu/suite_check.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/suite_check}
mkdir -p "$OUT"
export OUT PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
PY=${PYTHON:-python3}
STREAMS=${AORTA_STREAMS:-1,4,16,64}
MARKERS=${AORTA_MARKERS:-}
SELECT=()
[ -n "${AORTA_KEYWORDS:-}" ] && SELECT=(-k "$AORTA_KEYWORDS")
PYTEST=("$PY" -m pytest benchmarks/hw_queue -p no:cacheprovider -q -rs)
failed=0

"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'hip', torch.version.hip,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU')" | tee "$OUT/env.txt"

step() {  # step NAME CMD...: run, log in $OUT/NAME.log, one line with exit code and wall time
  local name=$1; shift
  local t0; t0=$(date +%s)
  "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $(( $(date +%s) - t0 )) s (log: $OUT/$name.log)"
  [ "$rc" -eq 0 ] || [ "$rc" -eq 5 ] || failed=1  # 5: nothing selected in this part
  return 0
}

step sweep timeout 420 "${PYTEST[@]}" "${SELECT[@]}" -m "${MARKERS:+($MARKERS) and }not compile" "--streams=$STREAMS" \
    --benchmark-json="$OUT/sweep.json"
step sweep_compile timeout 180 "${PYTEST[@]}" "${SELECT[@]}" -m "${MARKERS:+($MARKERS) and }compile" "--streams=$STREAMS" \
    --benchmark-json="$OUT/sweep_compile.json"
step concurrency timeout 90 "${PYTEST[@]}" -k stream_concurrency --streams=64,128 --issue-order=breadth,depth \
    --benchmark-json="$OUT/concurrency.json"
step bare_matmul "$PY" scripts/gpu/bare_matmul.py
cat "$OUT/bare_matmul.log"
step multistep_check timeout 120 "$PY" scripts/gpu/multistep_check.py --size full --streams 4,16 --steps 3
tail -12 "$OUT/multistep_check.log"
ngpu=$("$PY" -c "import torch; print(torch.cuda.device_count())" 2>/dev/null || echo 0)
if [ "$ngpu" -ge 2 ]; then
  step fsdp_tp_collectives timeout 120 "$PY" -m torch.distributed.run --standalone --nproc_per_node 2 \
      scripts/gpu/fsdp_tp_collectives.py
  grep -E "streams=|Error" "$OUT/fsdp_tp_collectives.log" | head -8
fi

grep -hE "FAILED|ERROR" "$OUT"/sweep*.log "$OUT/concurrency.log" | head -20
jsons=()
for f in sweep sweep_compile concurrency; do [ -s "$OUT/$f.json" ] && jsons+=("$OUT/$f.json"); done
[ "${#jsons[@]}" -gt 0 ] && "$PY" scripts/gpu/summarize.py "${jsons[@]}" | tee "$OUT/table.txt"
exit "$failed"
