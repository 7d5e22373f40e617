"""The profiler around some rounds: the device's own kernel timestamps (GPU code; the parse is in
aorta/kernel_timeline.py).

``torch.profiler.profile`` records the rounds (CPU and CUDA activities: CUPTI on NVIDIA, roctracer on AMD);
its Chrome trace is exported to a temporary file and loaded, and ``kernel_timeline.parse_rounds`` reads it.

Two lighter ways were measured on an H100 with torch 2.11 and not taken (docs/measurements.md, "Reading
the profiler"): entering the profiler through ``_enable_profiler`` with host ranges from ``record_function``
alone recorded the launches but no device kernel; reading ``kineto_results.events()`` in place of the
export took longer over the default suite (25 s against 21 s) and its busy shares differed from the
exported trace's by up to 2% in rounds of 2 µs kernels.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any, Literal

from aorta import kernel_timeline


class KernelCapture:
    """Context manager over the launches to profile; afterwards ``trace()`` gives the Chrome-trace document,
    or ``None`` with ``reason``. ``cost`` holds what the profiler cost the host (``*_s``: stopping it,
    exporting and loading the trace), the trace's size (``trace_mb``) and its event count (``trace_events``)."""

    def __init__(self, device):
        self.device = device
        self.reason: str | None = None
        self.cost: dict[str, float] = {}
        self._prof: Any = None
        self._trace: dict | None = None

    def __enter__(self) -> KernelCapture:
        if not self.device.is_gpu:
            self.reason = kernel_timeline.NO_KERNELS_ON_CPU
            return self
        from torch.profiler import ProfilerActivity, profile

        self._prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])  # HIP too on ROCm
        self._prof.__enter__()
        return self

    def __exit__(self, *exc) -> Literal[False]:
        if self._prof is None:
            return False
        self.device.synchronize()  # every captured kernel has ended before the profiler stops
        t0 = time.perf_counter()
        self._prof.__exit__(*exc)
        self.cost["profiler_stop_s"] = round(time.perf_counter() - t0, 4)
        if exc[0] is not None:
            return False
        try:
            self._trace = self._read()
        except Exception as err:  # Kineto's export has crashed on some ROCm builds: say so, invent nothing
            self.reason = f"the profiler's trace could not be exported or read: {err}"
        return False

    def _read(self) -> dict:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "rounds.pt.trace.json")
            t0 = time.perf_counter()
            self._prof.export_chrome_trace(path)
            t1 = time.perf_counter()
            with open(path, encoding="utf-8") as fh:
                trace = json.load(fh)
            self.cost["trace_export_s"] = round(t1 - t0, 4)
            self.cost["trace_load_s"] = round(time.perf_counter() - t1, 4)
            self.cost["trace_mb"] = round(os.path.getsize(path) / 1e6, 2)
            self.cost["trace_events"] = len(kernel_timeline.trace_events(trace))
        return trace

    def trace(self) -> dict | None:
        return self._trace
