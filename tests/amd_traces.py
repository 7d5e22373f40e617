"""Where the real AMD traces are read from, for every test that reads them (they are not copied into the
project): the folder ``AORTA_AMD_TRACES`` names, else ``shared/amd_traces`` beside this checkout (the checkout
and ``shared/`` in one folder, wherever that is). A test that needs a trace skips where it is absent, and
the skip says which folder was looked in and how to point at another; the session's header says the same
once (tests/conftest.py)."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

ENV = "AORTA_AMD_TRACES"
CHECKOUT = Path(__file__).resolve().parents[1]


def folder() -> Path:
    """The folder the real AMD traces are read from."""
    return Path(os.environ.get(ENV) or CHECKOUT.parent / "shared" / "amd_traces")


def absent(path: Path | None = None) -> str:
    """Why a real-trace test skips: the folder (or file) that is absent, and how to name another."""
    where = "named by $" + ENV if os.environ.get(ENV) else "beside the checkout (no $" + ENV + " set)"
    return (
        f"{path or folder()} is absent: the real AMD traces are read from {folder()}, {where}; "
        f"set {ENV} to the folder holding them to run this test"
    )


def header_line() -> str:
    """One line for the session header: where the traces are read from, and whether they are there."""
    d = folder()
    state = "found" if d.is_dir() else "absent: the real-trace tests skip; set " + ENV + " to their folder"
    return f"aorta: real AMD traces: {d} ({state})"


# ------------------------------------------------------------------ the two large traces, without their host ops
HOST_OPS = ("python_function", "cpu_op")
# The traces of tens of MB, most of their events host ops (42,000 of the MI300X RCCL trace's 56,000): the fast tier
# reads a copy without their host ops (the same kernels, copies, memsets, launches, flows and steps: every figure
# and every count the tests check is the same), the slow tier the trace as written.
LARGE = frozenset(
    {
        "tracelens_mi300_resnet_act_checkpoint.json.gz",
        "tracelens_mi300_ddp_resnet18_no_pool_train_resnet18.json.gz",
    }
)
AS_WRITTEN, WITHOUT_HOST_OPS = "as_written", "without_host_ops"


def is_host_op(event: dict) -> bool:
    """A Python function or a CPU op: no reader of aorta's takes a figure from one (aorta/timeline/trace_check.py,
    ``is_read``), bar a profiler step written as a CPU op (as older Kineto did), which is kept."""
    return str(event.get("cat", "")).lower() in HOST_OPS and not str(event.get("name", "")).startswith(
        "ProfilerStep#"
    )


def write_without_host_ops(path: Path, out: Path) -> Path:
    """A copy of the Kineto trace at ``path`` in the folder ``out``, under its name (gzipped if it is), without
    its host ops."""
    raw = path.read_bytes()
    gz = path.name.endswith(".gz")
    doc = json.loads(gzip.decompress(raw) if gz else raw)
    doc["traceEvents"] = [e for e in doc["traceEvents"] if not is_host_op(e)]
    text = json.dumps(doc).encode()
    copy = out / path.name
    copy.write_bytes(gzip.compress(text, compresslevel=1) if gz else text)
    return copy


def tiers(name: str, *values: object, id: str | None = None) -> list:
    """pytest params ``(name, events, *values)`` of the trace ``name``: as written; a ``LARGE`` one without its
    host ops in the fast tier, as written in the slow tier only (tests/conftest.py: ``amd_trace``)."""
    shown = id or name
    if name not in LARGE:
        return [pytest.param(name, AS_WRITTEN, *values, id=shown)]
    return [
        pytest.param(name, WITHOUT_HOST_OPS, *values, id=f"{shown}-{WITHOUT_HOST_OPS}"),
        pytest.param(name, AS_WRITTEN, *values, id=shown, marks=pytest.mark.slow),
    ]


EVENTS = [  # for a test of one LARGE trace
    pytest.param(WITHOUT_HOST_OPS, id=WITHOUT_HOST_OPS),
    pytest.param(AS_WRITTEN, id=AS_WRITTEN, marks=pytest.mark.slow),
]
