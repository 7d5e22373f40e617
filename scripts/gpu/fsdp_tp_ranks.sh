#!/usr/bin/env bash
# fsdp_tp under torchrun: do the ranks time the same round? Runs the benchmark (bf16, STREAMS) at each world
# size in SIZES, REPEAT fresh launches each, from this checkout or, with BEFORE=path, also from another tree
# (a `git archive` of an earlier commit) alternating with it; then prints, per launch and stream count, every
# rank's median round (ms), the spread (largest over smallest rank) and samples/s (rank 0's record).
#
#   NCCL_NVLS_ENABLE=0 OUT=/tmp/tp scripts/gpu/fsdp_tp_ranks.sh
#   BEFORE=.before SIZES="2 4" REPEAT=2 OUT=/tmp/tp scripts/gpu/fsdp_tp_ranks.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$(pwd)/reports/gpu-fsdp-tp-ranks}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
SIZES=${SIZES:-2 4}
REPEAT=${REPEAT:-2}
STREAMS=${STREAMS:-2,4,8,16}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0} OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
trees=("after=$(pwd)")
[ -n "${BEFORE:-}" ] && trees=("before=$(cd "$BEFORE" && pwd)" "${trees[@]}")
for i in $(seq 1 "$REPEAT"); do
  for n in $SIZES; do
    for t in "${trees[@]}"; do
      name=${t%%=*} tree=${t#*=}
      (cd "$tree" && PYTHONPATH="$tree" timeout 120 "$PY" -m torch.distributed.run --standalone --nproc_per_node "$n" \
        -m pytest benchmarks/hw_queue/test_fsdp_tp.py -k bf16 -p no:cacheprovider -p no:randomly \
        --aorta-streams "$STREAMS" --aorta-dist-timeout 60 --benchmark-json="$OUT/${name}_r${i}_w${n}.json") \
        > "$OUT/${name}_r${i}_w${n}.log" 2>&1
      echo "${name} launch ${i} world ${n}: exit $?"
    done
  done
done
"$PY" - "$OUT" <<'PYEOF'
import json, statistics, sys
from pathlib import Path
print(f"{'run':<16} {'benchmark':<30} {'rank medians ms':<36} {'spread':>7} {'samples/s':>10}")
for p in sorted(Path(sys.argv[1]).glob("*.json")):
    for b in json.loads(p.read_text())["benchmarks"]:
        e = b["extra_info"]
        meds = [statistics.median(r["device_ms_per_iteration"]) for r in e.get("per_rank", [])]
        rate = ((e.get("metrics") or {}).get("samples_per_s") or {}).get("value")
        spread = max(meds) / min(meds) if meds else float("nan")
        print(f"{p.stem:<16} {b['name']:<30} {' '.join(f'{m:.2f}' for m in meds):<36} {spread:>7.2f} {rate:>10.4g}")
PYEOF
