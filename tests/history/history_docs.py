"""Small run documents as aorta writes them (``--benchmark-json``), for the history's tests."""

from __future__ import annotations

import copy

MACHINE = {
    "backend": "cuda",
    "gpu_name": "NVIDIA H100 80GB HBM3",
    "gpu_count": 1,
    "driver": "580.159.04",
    "torch": "2.11.0+cu130",
    "cuda": "13.0",
    "hip": None,
    "nccl": "2.28.9",
    "env": {"CUDA_DEVICE_MAX_CONNECTIONS": "8"},
    "gpu": {"power_limit_w": 700.0},
}


def run_doc(
    when: str = "2026-11-26T08:00:00+00:00",
    device_ms: float = 10.0,
    *,
    machine: dict | None = None,
    benchmarks: tuple[str, ...] = ("test_a.py::test_a[streams1]",),
    host: str = "gpu-host-1",
) -> dict:
    """One run: each benchmark's five rounds around ``device_ms``, and a busbw metric."""
    rounds = [device_ms * f for f in (0.99, 1.0, 1.0, 1.01, 1.0)]
    return {
        "datetime": when,
        "version": "5.2.3",
        "commit_info": {"id": "abc123"},
        "machine_info": {
            "node": host,
            "python_version": "3.12.3",
            "aorta": copy.deepcopy(machine or MACHINE),
        },
        "benchmarks": [
            {
                "name": name.split("::")[-1],
                "fullname": name,
                "stats": {"median": device_ms / 1e3},
                "extra_info": {
                    "aorta_schema": 3,
                    "mode": "gpu",
                    "device_ms_per_iteration": rounds,
                    "metrics": {
                        "busbw_gbps": {
                            "value": 300.0,
                            "unit": "GB/s",
                            "higher_is_better": True,
                            "samples": [300.0, 301.0, 299.0],
                        }
                    },
                },
            }
            for name in benchmarks
        ],
    }


def with_stack(**changes: object) -> dict:
    """The machine block with some of its facts changed (``torch="2.12.0"``, ``env={...}``)."""
    m = copy.deepcopy(MACHINE)
    m.update(changes)
    return m
