"""A child's last word: the exit status its pytest session ended with, written to a file a parent names
(pure: stdlib). The parent (aorta/processes/child_process.py, ``call_to_end``) reads it to tell a child that finished
but hangs at exit from one still running.

Seen on an H100 (CUDA 13.0, torch 2.11): a gate child wrote its results, printed its summary, and then sat at
exit for 9 minutes, the parent waiting, the whole budget gone (CUPTI's detach after the last kernel pass still
pending as the process tore down; aorta/device/profiler_detach.py)."""

from __future__ import annotations

import os

DONE_ENV = "AORTA_CHILD_DONE_FILE"


def write_done(exitstatus: int, environ: dict | None = None) -> None:
    """In the child, at the end of its session: its exit status into ``$AORTA_CHILD_DONE_FILE`` (rank 0 or
    a single process only)."""
    env = os.environ if environ is None else environ
    path = env.get(DONE_ENV)
    if path and env.get("RANK", "0") == "0":
        with open(path, "w") as fh:
            fh.write(f"{int(exitstatus)}\n")


def read_done(path: str) -> int | None:
    try:
        with open(path) as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return None
