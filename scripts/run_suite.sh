#!/usr/bin/env bash
# The main job: the hardware-queue suite on whatever device is here (GPU if torch sees one, else CPU
# smoke sizes), ending with the results table and the JSON path. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
mkdir -p reports
out="reports/hw_queue-$(date +%Y%m%d-%H%M%S).json"
"$PY" -m pytest benchmarks/hw_queue --benchmark-json="$out" "$@"
