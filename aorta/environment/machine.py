"""What is recorded about the machine and software stack with every run (pytest-benchmark machine_info).

GPU facts come through the device layer (``aorta.device``) and the telemetry layer
(``aorta.telemetry.inventory``): no vendor call is made here. Host facts are read from the OS.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys

from aorta.device import Device, driver_version
from aorta.environment.fingerprint import CELL_ENV_VAR
from aorta.record.redact import redact_env


def cpu_model(cpuinfo_text: str | None = None) -> str:
    """The CPU's model name from ``/proc/cpuinfo`` (``platform.processor()`` elsewhere)."""
    if cpuinfo_text is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo_text = f.read()
        except OSError:
            cpuinfo_text = ""
    for line in cpuinfo_text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "cpu model"):
            return value.strip()
    return platform.processor() or platform.machine()


def host_info() -> dict:
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
    }


def sweep_cell(environ: dict | None = None) -> dict | None:
    """The ``aorta sweep`` cell this run belongs to (``AORTA_SWEEP_CELL``, JSON), None outside a sweep."""
    raw = (os.environ if environ is None else environ).get(CELL_ENV_VAR)
    if not raw:
        return None
    try:
        cell = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {"error": f"{CELL_ENV_VAR} is not JSON: {exc}", "raw": raw[:200]}
    return (
        cell
        if isinstance(cell, dict)
        else {"error": f"{CELL_ENV_VAR} is not a JSON object", "raw": raw[:200]}
    )


def machine_info(device: Device) -> dict:
    props = device.properties()
    sw = device.software()
    info = {
        "backend": device.backend,
        "gpu_name": props.name if device.is_gpu else None,
        "gpu_arch": props.arch if device.is_gpu else None,
        "gpu_count": props.device_count if device.is_gpu else 0,
        "gpu_uuid": props.uuid if device.is_gpu else None,
        "compute_units": props.compute_units,
        "l2_cache_bytes": props.l2_cache_bytes,
        "total_memory_bytes": props.total_memory_bytes,
        "driver": driver_version(device.backend),
        **sw,
        "math_libraries": device.math_libraries(),
        "hardware_queues": device.hardware_queue_setting(),
        "env": redact_env(Device.scheduling_env()),  # no secret in a record (aorta/record/redact.py)
        "profiler_detach": device.profiler_detach,
        "host": host_info(),
    }
    cell = sweep_cell()
    if cell is not None:
        info["sweep_cell"] = cell
    if device.is_gpu:
        from aorta.telemetry.inventory import gpu_inventory

        info["gpu_index"] = device.index
        info["gpu"] = gpu_inventory(device.backend, device.index, device.pci_bus_id())
    else:
        info["gpu"] = {"unavailable": {"gpu_facts": "CPU backend: no GPU"}}
    return info
