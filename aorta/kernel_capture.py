"""The profiler around some rounds: the device's own kernel timestamps (GPU code; the parse is in
aorta/kernel_timeline.py).

Two ways to read them, the first where the build allows it:

- ``kineto_events`` (the default): the profiler records only what the timeline needs. Host ranges come from
  ``record_function`` alone (``RecordScope.USER_SCOPE``), not from every aten op, and CUPTI (NVIDIA) or
  roctracer (AMD) gives the launches and the device ops. Its events are read straight from the profiler's
  result (``_KinetoEvent``), with no Chrome trace written, loaded or walked. On an H100 the full default suite's
  trace was 620 MB of JSON, mostly aten-op events, and stopping, exporting, loading and walking it took 34 of
  the kernel pass's 47 host seconds (docs/measurements.md).
- ``chrome_trace`` (the fallback, where the private entry points differ): ``torch.profiler.profile`` over
  every activity, its Chrome trace exported and loaded.

Both hand ``kernel_timeline.parse_rounds`` the same trace-event form, so one parser reads either.
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
READER_ENV = "AORTA_PROFILER_READER"  # force one reader (a build whose lean path misreads); unset: the first
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
        if self._want in (None, KINETO_EVENTS):
            try:
                self._session = _UserScopeSession()
                self.reader = KINETO_EVENTS
            except (ImportError, AttributeError, TypeError, RuntimeError) as err:
                if self._want == KINETO_EVENTS:
                    raise
                self.fallback = f"{KINETO_EVENTS} unavailable on this build ({err}): read the Chrome trace"
        if self._session is None:
            self._session = _ChromeTraceSession()
            self.reader = CHROME_TRACE
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


class _UserScopeSession:
    """Kineto with CPU and device activities, host ranges from ``record_function`` only; events read in place."""

    def __init__(self) -> None:
        import torch
        import torch.autograd.profiler as autograd_profiler
        from torch._C._autograd import _disable_profiler, _enable_profiler, _KinetoEvent, _prepare_profiler
        from torch._C._profiler import RecordScope

        missing = [m for m in EVENT_ACCESSORS if not hasattr(_KinetoEvent, m)]
        if missing:
            raise AttributeError(f"the profiler's events lack {', '.join(missing)}")

        # CPU + CUDA (HIP on ROCm) activities where there is a GPU; the CPU's alone elsewhere (tests)
        template = autograd_profiler.profile(use_device="cuda" if torch.cuda.is_available() else None)
        try:
            config = template.config(create_trace_id=True)
        except TypeError:  # builds before trace ids
            config = template.config()
        activities = template.kineto_activities
        self._disable = _disable_profiler
        _prepare_profiler(config, activities)
        _enable_profiler(config, activities, {RecordScope.USER_SCOPE})  # type: ignore[call-arg]  # stub lags
        self._result: Any = None

    def stop(self, *exc) -> None:
        self._result = self._disable()

    def read(self, cost: dict[str, float]) -> dict:
        t0 = time.perf_counter()
        events = kernel_timeline.trace_from_profiler_events(self._result.events())
        cost["trace_read_s"] = round(time.perf_counter() - t0, 4)
        cost["trace_events"] = len(events["traceEvents"])
        return events


class _ChromeTraceSession:
    """``torch.profiler.profile`` over every activity; its Chrome trace exported to a temporary file and loaded."""

    def __init__(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        self._prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])  # HIP too on ROCm
        self._prof.__enter__()

    def stop(self, *exc) -> None:
        self._prof.__exit__(*exc)

    def read(self, cost: dict[str, float]) -> dict:
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
