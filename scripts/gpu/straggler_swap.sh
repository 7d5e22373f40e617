#!/usr/bin/env bash
# Does a straggler follow its rank or its GPU? One FSDP scenario run twice under torchrun, the second time with
# the GPUs handed to the ranks in reverse order (CUDA_VISIBLE_DEVICES reversed): if the same rank arrives last
# both times, what makes it late is in that rank's software path (the harness, the process); if the late rank
# moves with the physical GPU, it is that GPU, its link or its host side (NUMA node, PCIe switch).
#   NCCL_NVLS_ENABLE=0 scripts/gpu/straggler_swap.sh                   # 2 GPUs, explicit_prefetch
#   NPROC=4 SELECT=baseline scripts/gpu/straggler_swap.sh
# Writes $OUT/swap_{forward,reverse}.json and .log; prints, per order, the GPU each rank ran on and who arrived
# last in how many steps (the record's stragglers, aorta/record/rank_breakdown.py's line).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/reports/straggler-swap}
NPROC=${NPROC:-2}
SELECT=${SELECT:-explicit_prefetch}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
mkdir -p "$OUT"
forward=$(seq -s, 0 $((NPROC - 1)))
reverse=$(seq -s, $((NPROC - 1)) -1 0)
rc=0
for order in forward reverse; do
  visible=$forward; [ "$order" = reverse ] && visible=$reverse
  CUDA_VISIBLE_DEVICES=$visible python3 -m aorta torchrun --standalone "--nproc_per_node=$NPROC" -m pytest \
    benchmarks/fsdp -k "$SELECT" -p no:cacheprovider -q --aorta-dist-timeout=120 \
    "--aorta-artifacts=$OUT/art_$order" "--benchmark-json=$OUT/swap_$order.json" > "$OUT/swap_$order.log" 2>&1 || rc=1
  rm -rf "$OUT/art_$order"
  PYTHONPATH=$PWD python3 - "$OUT/swap_$order.json" "$visible" "$order" <<'PY' || rc=1
import json, sys
from aorta.record.rank_breakdown import straggler_line
path, visible, order = sys.argv[1:]
gpus = visible.split(",")
for b in json.load(open(path))["benchmarks"]:
    line = straggler_line(b["extra_info"]) or "no straggler recorded"
    ranks = ", ".join(f"rank {r} on GPU {g}" for r, g in enumerate(gpus))
    print(f"{order} ({ranks}): {b['name']}: {line}")
PY
done
exit $rc
