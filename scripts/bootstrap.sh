#!/usr/bin/env bash
# Install aorta and what it needs, without ever replacing a torch that is already installed
# (GPU users bring their CUDA or ROCm build). Safe to run twice.
#   scripts/bootstrap.sh          # aorta + runtime dependencies
#   scripts/bootstrap.sh dev      # + the test tools
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_MIN=2.11  # pyproject.toml's torch>=2.11: an older torch would make pip replace it, so stop first
if "$PY" -c "import torch" 2>/dev/null; then
    have=$("$PY" -c 'import torch; print(torch.__version__)')
    if ! "$PY" -c "import sys, torch; v = tuple(int(x) for x in torch.__version__.split('+')[0].split('.')[:2]); sys.exit(v < (2, 11))"; then
        echo "bootstrap: error: the installed torch $have is older than aorta's torch>=$TORCH_MIN; install a" \
             "torch>=$TORCH_MIN build for your GPU (CUDA or ROCm) first; bootstrap never replaces torch" >&2
        exit 2
    fi
    echo "bootstrap: keeping the installed torch $have"
else
    echo "bootstrap: no torch found, installing torch==2.13.0"
    "$PY" -m pip install --quiet "torch==2.13.0"
fi
extra=""
[ "${1:-}" = "dev" ] && extra="[dev]"
# torch is already satisfied here, so pip leaves it alone.
"$PY" -m pip install --quiet -e ".${extra}"
# dev: a headless browser for the report's rendering test (tests/report/test_report_browser.py). Best effort:
# without root or apt-get, or if the install fails, the bootstrap still succeeds and that test skips.
if [ "${1:-}" = "dev" ] && ! command -v chromium >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
        echo "bootstrap: installing chromium with apt-get (for the report's browser test)"
        { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
            && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; } \
            >/dev/null 2>&1 || echo "bootstrap: could not install chromium; the browser test will skip"
    else
        echo "bootstrap: no chromium and no root apt-get to install it; the browser test will skip"
    fi
fi
