#!/usr/bin/env bash
# What the number of hardware queues does to the P0 benchmarks (one NVIDIA GPU): the P0 suite at
# AORTA_STREAMS (default 1,4,16,64) in both issue orders, once with the default CUDA_DEVICE_MAX_CONNECTIONS
# (8) and once with AORTA_CONNECTIONS (default 32), then `aorta report` and the offline gate
# (`aorta compare`) of the two, and stream_concurrency's figures side by side. Depth-first issue is where
# the queue count shows (docs/reference_floors.md: concurrency fits 2K / (K/c + 1)).
# Writes under $OUT (default artifacts/queue_connections): default.json, conn<N>.json, their logs,
# traces_default/ (per-stream timelines), report/ and compare.log.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-$PWD/artifacts/queue_connections}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
CONN=${AORTA_CONNECTIONS:-32}
P0=("$PY" -m pytest benchmarks/hw_queue -m p0 "--streams=${AORTA_STREAMS:-1,4,16,64}" "--issue-order=breadth,depth"
    -p no:cacheprovider -q)
t0=$(date +%s)
env -u CUDA_DEVICE_MAX_CONNECTIONS "${P0[@]}" --benchmark-json="$OUT/default.json" \
    --aorta-trace-dir="$OUT/traces_default" > "$OUT/default.log" 2>&1
echo "p0, default connections: exit $? after $(( $(date +%s) - t0 )) s"
t1=$(date +%s)
CUDA_DEVICE_MAX_CONNECTIONS=$CONN "${P0[@]}" --benchmark-json="$OUT/conn$CONN.json" > "$OUT/conn$CONN.log" 2>&1
echo "p0, CUDA_DEVICE_MAX_CONNECTIONS=$CONN: exit $? after $(( $(date +%s) - t1 )) s"
"$PY" -m aorta report --run "$OUT/default.json" --label default --run "$OUT/conn$CONN.json" --label "conn$CONN" \
    --reference default --candidate "conn$CONN" --output "$OUT/report" > "$OUT/report.log" 2>&1
echo "aorta report: exit $? ($OUT/report/report.html)"; tail -5 "$OUT/report.log"
"$PY" -m aorta compare --allow-env-diff CUDA_DEVICE_MAX_CONNECTIONS "$OUT/default.json" "$OUT/conn$CONN.json" > "$OUT/compare.log" 2>&1
echo "aorta compare default -> conn$CONN: exit $?"; head -40 "$OUT/compare.log" | cut -c1-160
"$PY" - "$OUT/default.json" "$OUT/conn$CONN.json" <<'PY'
import json
import sys

for path in sys.argv[1:]:
    try:
        benchmarks = json.load(open(path))["benchmarks"]
    except (OSError, ValueError, KeyError) as exc:
        print(f"{path}: no benchmark JSON ({exc})")
        continue
    for b in benchmarks:
        if b["name"].startswith("test_stream_concurrency"):
            figures = {k: round(v["value"], 3) for k, v in b["extra_info"]["metrics"].items()}
            print(path.rsplit("/", 1)[1], b["name"], figures, "ev.conc", b["extra_info"].get("effective_concurrency"))
PY
