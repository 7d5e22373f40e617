"""Where the real AMD traces are read from, for every test that reads them (they are not copied into the
project): the folder ``AORTA_AMD_TRACES`` names, else ``shared/amd_traces`` beside this checkout (the checkout
and ``shared/`` in one folder, wherever that is). A test that needs a trace skips where it is absent, and
the skip says which folder was looked in and how to point at another; the session's header says the same
once (tests/conftest.py)."""

from __future__ import annotations

import os
from pathlib import Path

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
