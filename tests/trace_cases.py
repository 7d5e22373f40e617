"""What the tests of traces as ROCm tools write them share (issue 49): where the real samples are, a pipe that
carries bytes once, and the one line ``aorta trace figures`` refuses with."""

from __future__ import annotations

import csv
import io
import os
import threading
from pathlib import Path

import amd_traces
import pytest

from aorta.cli import main

SAMPLES = amd_traces.folder() / "rocprofv3"
KINETO = amd_traces.folder() / "rocm_aorta_smci350-zts-gtu-c6-25_200691.1758927066581847260.pt.trace.json"
MI300X = amd_traces.folder() / "tracelens_mi300_resnet_act_checkpoint.json.gz"
ROCPD_SAMPLES = SAMPLES / "rocpd_from_samples.db"


def kernel_csv() -> bytes:
    """rocprofiler-sdk's kernel_trace.csv sample (skips where absent)."""
    if not (SAMPLES / "kernel_trace.csv").is_file():
        pytest.skip(amd_traces.absent(SAMPLES))
    return (SAMPLES / "kernel_trace.csv").read_bytes()


def kineto() -> bytes:
    """The MI350X Kineto trace (skips where absent)."""
    if not KINETO.is_file():
        pytest.skip(amd_traces.absent(KINETO))
    return KINETO.read_bytes()


def rows(data: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(data.decode())))


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def refused(argv: list[str], capsys) -> str:
    """The one line ``aorta trace figures`` refuses with, checked to exit 2 with no traceback."""
    assert main(["trace", "figures", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.removeprefix("aorta trace figures: error: ").rstrip("\n")


def piped(data: bytes) -> str:
    """A pipe's path (/dev/fd/N) that carries ``data`` once, as ``<(cat file)`` does in a shell."""
    r, w = os.pipe()

    def feed() -> None:
        with os.fdopen(w, "wb") as f:
            f.write(data)

    threading.Thread(target=feed, daemon=True).start()
    return f"/dev/fd/{r}"
