"""Watching processes and files from a test: is a pid still running, wait for a file a process writes, wait
for a process to go (Linux ``/proc``)."""

from __future__ import annotations

import time
from pathlib import Path


def alive(pid: int) -> bool:
    """Running, not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


def wait_for(path: Path, timeout_s: float = 10.0, *, text: bool = True) -> str:
    """The text a process wrote into ``path``, once there is some (``text=False``: once the file is there)."""
    deadline = time.monotonic() + timeout_s
    while not path.exists() or (text and not path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.02)
    return path.read_text().strip()


def gone_within(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)
