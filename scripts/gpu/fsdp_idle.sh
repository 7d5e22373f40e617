#!/usr/bin/env bash
# Is the FSDP step GPU-bound at the default size? Runs three scenarios at the default batch and at a larger
# one (AORTA_BIG_BATCH, default 32) and prints step time, GPU idle share and overlap for each.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/fsdp_idle}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
NPROC=${NPROC:-2}
SELECT=${AORTA_SELECT:-baseline or explicit_prefetch or no_reshard}
for batch in 8 "${AORTA_BIG_BATCH:-32}"; do
  timeout 280 python3 -m torch.distributed.run --standalone --nproc_per_node "$NPROC" -m pytest benchmarks/fsdp \
    -p no:cacheprovider -q -k "$SELECT" --aorta-override "dataset.batch_size=$batch" \
    --benchmark-json="$OUT/batch$batch.json" --aorta-artifacts="$OUT/artifacts_$batch" > "$OUT/batch$batch.log" 2>&1
  echo "batch $batch: exit $?"
done
python3 - "$OUT" <<'PY'
import glob, json, sys
from aorta.record.table import format_table
rows = []
for path in sorted(glob.glob(f"{sys.argv[1]}/batch*.json")):
    for b in json.load(open(path))["benchmarks"]:
        e, m = b["extra_info"], b["extra_info"]["metrics"]
        if "scenario" not in e:
            continue
        v = lambda k: m[k]["value"] if k in m else None
        rows.append([path.rsplit("/", 1)[1][:-5], e["scenario"]["id"], v("step_ms"), v("compute_busy_ms_worst_rank"), v("comm_busy_ms_worst_rank"),
                     v("idle_ms_worst_rank"), v("gpu_idle_share_rank0"), v("overlap_ratio_worst_rank"), v("exposed_comm_ms_worst_rank"),
                     v("samples_per_s"), v("all_gather_busbw_gbps_worst_rank")])
for line in format_table(["run", "scenario", "step ms", "compute", "comm", "idle", "idle share", "overlap",
                          "exposed", "samples/s", "AG busbw"], rows):
    print(line)
PY
