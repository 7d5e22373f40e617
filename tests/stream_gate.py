"""A gate's save of one hw_queue benchmark, shared by the slow tests that read it (tests/conftest.py:
``saved_stream_gate``): the gate that records how its runs started (tests/gate/test_fork_server.py) and the
baseline a slowed compare is judged against (tests/timing/test_slowdown.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# One benchmark of the stream-concurrency file, saved as baseline "x" by a gate of two fresh runs (a check run,
# then two lean runs, each forked from the gate's server: the default start): tens of seconds on 2 cores.
STREAM_GATE = ["benchmarks/hw_queue/test_stream_concurrency.py", "-k", "streams1 and not streams16"]


def saved_stream_gate(folder: Path) -> dict:
    from aorta.timing.slowdown import UNITS_ENV

    env = {k: v for k, v in os.environ.items() if k != UNITS_ENV}  # the gate calibrates its own slowdown
    env["AORTA_RUN_START"] = "fork"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *STREAM_GATE, "--aorta-runs=2"]
    cmd += ["--aorta-save-baseline", "x", "--aorta-baseline-dir", str(folder / "bl")]
    cmd += ["--aorta-runs-dir", str(folder / "runs")]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    return {"code": done.returncode, "output": done.stdout + done.stderr, "folder": folder}
