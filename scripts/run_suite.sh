#!/usr/bin/env bash
# The main job: the hardware-queue suite on whatever device is here (GPU if torch sees one, else CPU
# smoke sizes), ending with the results table and the JSON path. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
mkdir -p reports
# Named by stack and time (e.g. reports/hw_queue-nvidia-h100-80gb-hbm3-x1-cuda13.0-torch2.11.0-20261123-101500.json),
# so runs on two stacks can be told apart in `pytest-benchmark compare` and `aorta report`.
stack=$("$PY" -m aorta stack 2>/dev/null || echo unknown-stack)
out="reports/hw_queue-${stack}-$(date +%Y%m%d-%H%M%S).json"
status=0
"$PY" -m pytest benchmarks/hw_queue --benchmark-json="$out" "$@" || status=$?
[ -f "$out" ] || echo "no benchmark JSON written (pytest exit $status)"  # pytest prints the path itself
exit "$status"
