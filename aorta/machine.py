"""What is recorded about the machine and software stack with every run (pytest-benchmark machine_info)."""

from __future__ import annotations

from aorta.device import Device, driver_version


def machine_info(device: Device) -> dict:
    props = device.properties()
    sw = device.software()
    return {
        "backend": device.backend,
        "gpu_name": props.name if device.is_gpu else None,
        "gpu_arch": props.arch if device.is_gpu else None,
        "gpu_count": props.device_count if device.is_gpu else 0,
        "compute_units": props.compute_units,
        "l2_cache_bytes": props.l2_cache_bytes,
        "total_memory_bytes": props.total_memory_bytes,
        "driver": driver_version(device.backend),
        **sw,
        "hardware_queues": device.hardware_queue_setting(),
        "env": Device.scheduling_env(),
    }
