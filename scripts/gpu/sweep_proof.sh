#!/usr/bin/env bash
# Issue 16's proof on two GPUs: a 2x2 grid (NCCL_NTHREADS=256,512 x NCCL_MAX_NCHANNELS=4,16) of the FSDP
# `baseline` scenario, swept twice as two "stacks" (default, and TORCH_NCCL_HIGH_PRIORITY=1), then
# `aorta report --sweep A --sweep B`, and a per-cell table printed last.
# Runs from a bare checkout (python3 -m aorta, python3 -m torch.distributed.run ... -m pytest). Writes five
# files under $OUT: log.txt (everything printed), report.html (the self-contained page), summary.json (the
# report's numbers), table.txt (the closing table) and sweeps.tar.gz (both sweep folders with every cell's
# benchmark JSON, per-rank JSONL and log, and the report folder with its heatmaps).
# Budget: each stack's sweep is cut at AORTA_SWEEP_BUDGET_S (165 s; a cut sweep stops its running cell and
# records it), each cell at AORTA_CELL_TIMEOUT_S (70 s): the script ends within 6 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/sweep_proof}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
NPROC=${NPROC:-2}
BUDGET_S=${AORTA_SWEEP_BUDGET_S:-165}
CELL_TIMEOUT_S=${AORTA_CELL_TIMEOUT_S:-70}
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the lent machines
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-4}
unset TORCH_NCCL_HIGH_PRIORITY  # the first stack runs with the default
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sweep_proof.XXXXXX") || exit 2
exec > >(tee "$OUT/log.txt") 2>&1
start=$(date +%s)

{ nvidia-smi -L 2>/dev/null || rocm-smi --showproductname 2>/dev/null || true
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'hip', torch.version.hip, 'nccl', torch.cuda.nccl.version() if torch.cuda.is_available() else None)"
}

GRID=(--grid "NCCL_NTHREADS=256,512" --grid "NCCL_MAX_NCHANNELS=4,16")
# The baseline scenario at the default size, 6 timed and 6 profiled steps, two warm-up steps and no
# compute-only reference replica, to fit 8 cells (a cell took about 35 s on 2x H200).
CMD=("$PY" -m torch.distributed.run --standalone --nproc_per_node "$NPROC" -m pytest benchmarks/fsdp -k baseline
     -p no:cacheprovider -q --aorta-dist-timeout 60 --aorta-override training.warmup_steps=2
     --aorta-override training.steps=6 --aorta-override profiling.active=6
     --aorta-override profiling.reference=false)

sweep() {  # sweep LABEL [VAR=value ...]
  local label=$1; shift
  echo "== stack $label ${*:-(default environment)}: $(( $(date +%s) - start )) s"
  env "$@" timeout -s TERM "$BUDGET_S" "$PY" -m aorta sweep "${GRID[@]}" --output "$WORK/$label" --label "$label" \
    --cell-timeout "$CELL_TIMEOUT_S" -- "${CMD[@]}"
  echo "== stack $label: aorta sweep exit $? at $(( $(date +%s) - start )) s"
}
sweep default
sweep high_priority TORCH_NCCL_HIGH_PRIORITY=1

"$PY" -m aorta report --sweep "$WORK/default" --sweep "$WORK/high_priority" --output "$WORK/report"
echo "== aorta report exit $? at $(( $(date +%s) - start )) s"
cp "$WORK/report/report.html" "$WORK/report/summary.json" "$OUT/" 2>/dev/null
tar -czf "$OUT/sweeps.tar.gz" -C "$WORK" default high_priority report 2>/dev/null
echo "== files in $OUT: $(cd "$OUT" && echo *) ($(( $(date +%s) - start )) s)"

"$PY" - "$OUT/summary.json" <<'PYEOF' | tee "$OUT/table.txt"
import json, sys
from aorta.record.table import format_table

try:
    s = json.load(open(sys.argv[1]))
except (OSError, ValueError) as exc:
    sys.exit(f"no report summary ({exc}): see log.txt")
a, b = (x["label"] for x in s["sweeps"][:2])
secs = {x["label"]: {c["id"]: c for c in x["cells"]} for x in s["sweeps"]}
rows = {}
for r in (s["comparisons"][0]["rows"] if s["comparisons"] else []):
    rows.setdefault(r["cell"], {})[r["metric"]] = r

def pair(cell, metric, fmt):
    r = rows.get(cell, {}).get(metric)
    f = lambda v: "n/a" if v is None else fmt.format(v)
    return f"{f(r['reference'])} / {f(r['candidate'])}" if r else "n/a"

table = []
for cell_id, ca in secs[a].items():
    cb = secs[b].get(cell_id, {})
    step = rows.get(cell_id, {}).get("step_ms")
    table.append([
        cell_id, f"{ca['status']} / {cb.get('status', 'missing')}",
        f"{ca['duration_s'] or 0:.0f} / {cb.get('duration_s') or 0:.0f}",
        pair(cell_id, "step_ms", "{:.2f}"),
        "n/a" if not step or step["ratio"] is None else f"{step['ratio']:.3f}",
        step["verdict"] if step else "n/a",
        pair(cell_id, "overlap_ratio_worst_rank", "{:.3f}"), pair(cell_id, "exposed_transfer_ms_worst_rank", "{:.2f}"),
        pair(cell_id, "all_gather_busbw_gbps_worst_rank", "{:.1f}"),
        pair(cell_id, "reduce_scatter_busbw_gbps_worst_rank", "{:.1f}"),
    ])
print(f"\nper cell, {a} / {b} (ratio and verdict: {b} against {a}, step time)")
for line in format_table(["cell", "status", "cell s", "step ms", "ratio", "verdict", "overlap (worst rank)", "exposed transfer ms",
                          "AG busbw GB/s", "RS busbw GB/s"], table):
    print(line)
for label, best in s["best"].items():
    for x in best:
        print(f"best in {label}: {x['configuration']} {x['metric']} {x['value']:.4g} {x['unit']} at {x['cell']}")
for label, versions in s["differences"].get("versions", {}).items():
    print(f"versions in {label}: " + ", ".join(f"{k}={v}" for k, v in versions.items()))
print("differs between the stacks: " + (", ".join(
    f"{d['name']} ({', '.join(f'{k}={v}' for k, v in d['values'].items())})" for d in s["differences"]["between"]
) or "nothing recorded"))
PYEOF
rm -rf "$WORK"
