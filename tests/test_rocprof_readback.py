"""``scripts/rocprof_capture.sh`` reads rocprofv3's kernel traces back after the run (issue 37): a stand-in
rocprofv3 writes the rocprofiler-sdk sample ``kernel_trace.csv`` (../shared/amd_traces/rocprofv3, skipped where
absent) where the real one would (``<run dir>/<host>/<pid>_kernel_trace.csv``); the run folder then holds
``queues.json`` with the 4 hardware queues, and the run's own exit code is kept."""

import json
import sys
from pathlib import Path

import amd_traces
import pytest
from test_scripts import bare_path, run

SAMPLE = amd_traces.folder() / "rocprofv3" / "kernel_trace.csv"


@pytest.mark.slow  # a capture run and a Python process: seconds
def test_the_capture_reads_its_kernel_traces_back_into_queues_json(tmp_path):
    if not SAMPLE.is_file():
        pytest.skip(
            f"{SAMPLE} is absent: the rocprofv3 samples live beside the checkout (../shared/amd_traces)"
        )
    fake = (  # rocprofv3 [options] -d DIR -- command: write the sample where rocprofv3 would, exit as a run did
        'while [ "$1" != "-d" ]; do shift; done; mkdir -p "$2/host1"; '
        f'cat {SAMPLE} > "$2/host1/4242_kernel_trace.csv"; exit 3'
    )
    done = run(
        "rocprof_capture.sh",
        "-k",
        "gemm",
        path=bare_path(tmp_path, rocprofv3=fake),
        ROCPROF_OUTPUT_DIR=str(tmp_path / "out"),
        PYTHON=sys.executable,
        PYTHONPATH=str(Path(__file__).resolve().parents[1]),
    )
    assert done.returncode == 3, done.stderr  # the profiled run's code, not the read-back's
    (run_dir,) = (tmp_path / "out").iterdir()
    (rank,) = json.loads((run_dir / "queues.json").read_text())["ranks"]
    assert [(q["queue"], q["kernels"]) for q in rank["hardware_queues"]] == [(1, 4), (2, 2), (3, 2), (4, 1)]
    assert "hardware queues used: 4" in done.stdout
