"""The profiler around some rounds: the device's own kernel timestamps (GPU code; the parse is in
aorta/kernel_timeline.py).

``torch.profiler.profile`` records the rounds (CPU and CUDA activities: CUPTI on NVIDIA, roctracer on AMD).
Its events are then read one of two ways:

- ``kineto_events`` (the default): straight from the profiler's result (``kineto_results.events()``),
  keeping only the device ops, launches and labelled ranges the timeline reads. Nothing is written to disk.
- ``chrome_trace``: the Chrome trace exported to a temporary file and loaded (what the default replaced; kept
  as the fallback where a build's events lack an accessor, and to check one reader against the other).

Both hand ``kernel_timeline.parse_rounds`` the same trace-event form. A lighter recording, the profiler
entered through ``_enable_profiler`` with host ranges from ``record_function`` alone, recorded the launches
but no device kernel on torch 2.11 (scripts/gpu/profiler_modes_probe.py, H100), so it is not used.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any, Literal

from aorta import kernel_timeline

KINETO_EVENTS = "kineto_events"
CHROME_TRACE = "chrome_trace"
READERS = (KINETO_EVENTS, CHROME_TRACE)
READER_ENV = "AORTA_PROFILER_READER"  # force one reader (to check one against the other); unset: the first
NO_KERNELS_ON_CPU = kernel_timeline.NO_KERNELS_ON_CPU
# What kernel_timeline.trace_from_profiler_events calls on each event (activity_type too, where present)
EVENT_ACCESSORS = ("name", "device_type", "correlation_id", "device_resource_id", "start_ns", "duration_ns")


def reader_from_env(environ: dict | None = None) -> str | None:
    """``AORTA_PROFILER_READER``: one of ``READERS``, or unset / empty for the default; anything else is
    refused with the variable, the value and what is allowed (checked when pytest starts, before GPU work)."""
    value = (os.environ if environ is None else environ).get(READER_ENV, "").strip()
    if not value:
        return None
    if value not in READERS:
        raise ValueError(f"{READER_ENV}={value!r} is not a profiler reader: use one of {', '.join(READERS)}")
    return value


class KernelCapture:
    """Context manager over the launches to profile; afterwards ``trace()`` gives the trace events, or
    ``None`` with ``reason``. ``cost`` holds what the profiler cost the host (``*_s``) and the trace's size;
    ``reader`` says which of ``READERS`` was used."""

    def __init__(self, device, reader: str | None = None):
        if reader is not None and reader not in READERS:
            raise ValueError(f"profiler reader must be one of {READERS}, got {reader!r}")
        reader = reader or reader_from_env()
        self.device = device
        self.reason: str | None = None
        self.reader: str | None = None
        self.fallback: str | None = None  # why the preferred reader could not be used, where it could not
        self.cost: dict[str, float] = {}
        self._want = reader
        self._session: Any = None
        self._trace: dict | None = None

    def __enter__(self) -> KernelCapture:
        if not self.device.is_gpu:
            self.reason = NO_KERNELS_ON_CPU
            return self
        self.reader = self._want or KINETO_EVENTS
        missing = _missing_event_accessors()
        if self.reader == KINETO_EVENTS and missing:
            self.fallback = (
                f"the profiler's events lack {', '.join(missing)} on this build: read the Chrome trace"
            )
            self.reader = CHROME_TRACE
        self._session = _ProfilerSession(self.reader)
        return self

    def __exit__(self, *exc) -> Literal[False]:
        if self._session is None:
            return False
        self.device.synchronize()  # every captured kernel has ended before the profiler stops
        t0 = time.perf_counter()
        self._session.stop(*exc)
        self.cost["profiler_stop_s"] = round(time.perf_counter() - t0, 4)
        if exc[0] is not None:
            return False
        try:
            self._trace = self._session.read(self.cost)
        except Exception as err:  # Kineto's export has crashed on some ROCm builds: say so, invent nothing
            self.reason = f"the profiler's trace could not be read ({self.reader}): {err}"
        return False

    def trace(self) -> dict | None:
        return self._trace


def _missing_event_accessors() -> list[str]:
    try:
        from torch._C._autograd import _KinetoEvent
    except ImportError:
        return ["_KinetoEvent"]
    return [m for m in EVENT_ACCESSORS if not hasattr(_KinetoEvent, m)]


class _ProfilerSession:
    """``torch.profiler.profile`` over the CPU and device activities, read by ``reader``."""

    def __init__(self, reader: str) -> None:
        from torch.profiler import ProfilerActivity, profile

        self.reader = reader
        self._prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])  # HIP too on ROCm
        self._prof.__enter__()

    def stop(self, *exc) -> None:
        self._prof.__exit__(*exc)

    def read(self, cost: dict[str, float]) -> dict:
        if self.reader == KINETO_EVENTS:
            t0 = time.perf_counter()
            results = getattr(self._prof.profiler, "kineto_results", None)
            if results is None:
                raise RuntimeError("the profiler kept no results to read")
            trace = kernel_timeline.trace_from_profiler_events(results.events())
            cost["trace_read_s"] = round(time.perf_counter() - t0, 4)
            cost["trace_events"] = len(trace["traceEvents"])
            return trace
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "rounds.pt.trace.json")
            t0 = time.perf_counter()
            self._prof.export_chrome_trace(path)
            t1 = time.perf_counter()
            with open(path, encoding="utf-8") as fh:
                trace = json.load(fh)
            cost["trace_export_s"] = round(t1 - t0, 4)
            cost["trace_load_s"] = round(time.perf_counter() - t1, 4)
            cost["trace_mb"] = round(os.path.getsize(path) / 1e6, 2)
            cost["trace_events"] = len(kernel_timeline.trace_events(trace))
        return trace
