#!/usr/bin/env bash
# Issue 3 (part b) GPU proof on one NVIDIA GPU: rag_pipeline, graph_subgraphs (eager and graph),
# async_dataload, zero_offload, torch_compile and copy_compute_overlap at --aorta-streams=1,4,16.
# Logs and JSON under $OUT; prints the summary table and the overlap figures each workload exists for.
set -uo pipefail
OUT=${OUT:-/tmp/aorta-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(0))"
FILES=""
for w in rag_pipeline graph_subgraphs async_dataload zero_offload torch_compile copy_compute_overlap; do
    FILES="$FILES benchmarks/hw_queue/test_$w.py"
done
t0=$(date +%s)
# shellcheck disable=SC2086
python3 -m pytest $FILES --aorta-streams=1,4,16 --benchmark-json="$OUT/issue3b.json" -p no:cacheprovider -q -rs \
    > "$OUT/issue3b.log" 2>&1
echo "issue3b sweep rc=$? wall=$(( $(date +%s) - t0 ))s"
python3 -m aorta list > "$OUT/list.txt" 2>&1; echo "aorta list rc=$?"
tail -4 "$OUT/issue3b.log"; grep -E "FAILED|SKIPPED|Error" "$OUT/issue3b.log" | head -20
python3 scripts/gpu/summarize.py "$OUT/issue3b.json"
python3 - "$OUT/issue3b.json" <<'PY'
import json, sys

from aorta.table import format_table

KEYS = ["embed_generate_overlap_ratio", "copy_compute_overlap_ratio", "copy_gbps", "h2d_gbps", "d2h_gbps",
        "serial_h2d_gbps", "serial_d2h_gbps", "serial_d2d_gbps", "serial_ms", "iteration_ms", "saving_ms",
        "saving_ratio", "compile_s", "steady_state_ms"]
rows = []
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    e = b["extra_info"]
    m = e["metrics"]
    info = e.get("workload_info", {})
    figs = ", ".join(f"{k}={m[k]['value']:.4g}" for k in KEYS if k in m)
    flags = {k: info[k] for k in ("mode", "backend", "copy_ran_beside_compute", "copy_stream_priority") if k in info}
    rows.append([b["name"], e["distinct_streams"], figs, flags])
for line in format_table(["benchmark", "distinct", "figures", "info"], rows):
    print(line)
PY
