#!/usr/bin/env bash
# Install aorta and what it needs, without ever replacing a torch that is already installed
# (GPU users bring their CUDA or ROCm build). Safe to run twice.
#   scripts/bootstrap.sh          # aorta + runtime dependencies
#   scripts/bootstrap.sh dev      # + the test tools
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if "$PY" -c "import torch" 2>/dev/null; then
    echo "bootstrap: keeping the installed torch $("$PY" -c 'import torch; print(torch.__version__)')"
else
    echo "bootstrap: no torch found, installing torch==2.13.0"
    "$PY" -m pip install --quiet "torch==2.13.0"
fi
extra=""
[ "${1:-}" = "dev" ] && extra="[dev]"
# torch is already satisfied here, so pip leaves it alone.
"$PY" -m pip install --quiet -e ".${extra}"
