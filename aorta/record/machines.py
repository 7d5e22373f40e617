"""The machine a run was measured on, as its record names it (pure: no torch): its block, a label for
people, which machine (``machine_id``) and which kind (``machine_key``: the folder its baselines live in and
the history's machine model)."""

from __future__ import annotations

import re
from collections.abc import Mapping


def aorta_machine(run: Mapping) -> dict:
    """aorta's own machine block of a run (backend, GPU model and count, versions, env)."""
    return dict((run.get("machine_info") or {}).get("aorta") or {})


def machine_label(run: Mapping) -> str:
    """``2x NVIDIA H100 80GB HBM3 (cuda)``; ``cpu`` on a machine without a GPU."""
    m = aorta_machine(run)
    if m.get("backend") in (None, "cpu"):
        return "cpu"
    return f"{m.get('gpu_count', '?')}x {m.get('gpu_name', 'unknown GPU')} ({m.get('backend')})"


def machine_id(run: Mapping) -> str:
    """Which machine a run was measured on, as far as its record tells: the GPU's UUID (the lent machines
    of one kind share a host name), else the host name, else ``""`` (unknown)."""
    m = aorta_machine(run)
    host = m.get("host")
    hostname = host.get("hostname") if isinstance(host, Mapping) else None
    return str(m.get("gpu_uuid") or hostname or (run.get("machine_info") or {}).get("node") or "")


def machine_key(run: Mapping) -> str:
    """The kind of machine: GPU model and count (``nvidia-h100-80gb-hbm3-x8``), ``cpu`` without a GPU."""
    m = aorta_machine(run)
    if m.get("backend") in (None, "cpu"):
        return "cpu"
    slug = re.sub(r"[^a-z0-9]+", "-", str(m.get("gpu_name") or "unknown-gpu").lower()).strip("-")
    return f"{slug}-x{m.get('gpu_count', 1)}"
