"""Spin kernels of a chosen length: calibrated through the one timing loop on this device."""

from __future__ import annotations

from aorta.stats import median
from aorta.timing import TimingPlan, time_rounds

PROBE_CYCLES = {"gpu": 2_000_000, "cpu": 200_000}  # GPU clock cycles, or ns of busy-wait on the CPU


def spin_alone_ms(device, cycles: int) -> float:
    """Median device time of one spin kernel of ``cycles``, alone on the device."""
    run = time_rounds(
        device,
        [],
        lambda rec: device.spin(cycles),
        TimingPlan(warmup_rounds=1, rounds=3, iterations_per_round=1),
        record_intervals=False,
    )
    return median(run.device_ms)


def cycles_for_ms(device, target_ms: float) -> int:
    """Spin cycles that take about ``target_ms`` on this device (linear in cycles)."""
    probe = PROBE_CYCLES["gpu" if device.is_gpu else "cpu"]
    return max(1, int(probe / spin_alone_ms(device, probe) * target_ms))
