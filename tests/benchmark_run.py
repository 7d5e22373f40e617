"""The benchmark files run as a user runs them: ``python -m pytest ARGS -p no:cacheprovider -q`` in a
subprocess, aorta's code from ``root`` on the path (the plugin from its installed entry point), and what a
failed run printed, for the assertion message."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_benchmarks(
    *args: str, root: Path, json_out: Path | None = None, env: dict | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """One pytest process over the benchmark files at ``root`` (its working directory and PYTHONPATH);
    ``json_out``: where pytest-benchmark writes its JSON; ``env``: variables set on top of this process's."""
    run_env = {**os.environ, "PYTHONPATH": str(root), **(env or {})}
    run_env.pop(
        "PYTEST_XDIST_WORKER", None
    )  # the run is no xdist worker: its benchmarks must not be disabled
    command = [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", "-q"]
    if json_out is not None:
        command.append(f"--benchmark-json={json_out}")
    return subprocess.run(command, cwd=root, env=run_env, capture_output=True, text=True, timeout=timeout)


def output_tail(proc: subprocess.CompletedProcess, chars: int = 3000) -> str:
    """The end of what the run printed, for an assertion message."""
    return proc.stdout[-chars:] + proc.stderr[-chars:]
