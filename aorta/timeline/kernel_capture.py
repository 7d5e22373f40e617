"""The profiler around some rounds: the device's own kernel timestamps (GPU code; the parse is in
aorta/timeline/kernel_timeline.py).

The kernel timeline reads three things: device ops (kernels, copies, memsets), the runtime calls that
launched them, and aorta's ``record_function`` ranges. The profiler is entered so that it records only
those: CPU and CUDA activities (CUPTI on NVIDIA, roctracer on AMD), with host ranges from the user scope
alone (``RecordScope.USER_SCOPE``). ``torch.profiler.profile`` records every aten op as well, and on an H100
those made up most of the default suite's 1 GB of trace. A profiled eager round also paid the profiler's
callback on every op. Where this build's private entry points differ, the capture falls back to
``torch.profiler.profile``; ``cost["user_scope_only"]`` says which was used. ``AORTA_PROFILER_RECORDING=full``
asks for ``torch.profiler.profile`` outright: a build (a ROCm one, say) whose user-scope recording holds no
device kernel says so in the reason, and this is the way around it. Either way the Chrome trace is
exported to a temporary file and loaded, and ``kernel_timeline.parse_rounds`` reads it.

Reading ``kineto_results.events()`` in place of the export was measured and not kept: over the default suite
it took 25 s against 21 s, and its busy shares differed from the exported trace's by up to 2% in rounds of
2 µs kernels (docs/measurements.md, "Reading the profiler").
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any, Literal

from aorta.timeline import kernel_timeline

RECORDING_ENV = "AORTA_PROFILER_RECORDING"
RECORDINGS = ("user_scope", "full")


def recording_from_env(environ: dict | None = None) -> str:
    """``AORTA_PROFILER_RECORDING``: ``user_scope`` (the default, also when unset or empty) or ``full``;
    anything else is refused with the variable, the value and what is allowed (checked when pytest starts)."""
    value = (os.environ if environ is None else environ).get(RECORDING_ENV, "").strip() or RECORDINGS[0]
    if value not in RECORDINGS:
        raise ValueError(f"{RECORDING_ENV}={value!r}: allowed values are {', '.join(RECORDINGS)}")
    return value


class KernelCapture:
    """Context manager over the launches to profile; afterwards ``trace()`` gives the Chrome-trace document,
    or ``None`` with ``reason``. ``cost`` holds what the profiler cost the host (``*_s``: stopping it,
    exporting and loading the trace), the trace's size (``trace_mb``) and its event count (``trace_events``)."""

    def __init__(self, device, recording: str | None = None):
        recording = recording or recording_from_env()
        if recording not in RECORDINGS:
            raise ValueError(f"recording must be one of {RECORDINGS}, got {recording!r}")
        self.device = device
        self.reason: str | None = None
        self.cost: dict[str, float] = {}
        self._user_scope_only = recording == "user_scope"
        self._session: Any = None
        self._trace: dict | None = None

    def __enter__(self) -> KernelCapture:
        if not self.device.is_gpu:
            self.reason = kernel_timeline.NO_KERNELS_ON_CPU
            return self
        if self._user_scope_only:
            try:
                self._session = _UserScopeSession()
            except (ImportError, AttributeError, TypeError, RuntimeError):
                self._session = None  # this build's entry points differ: every activity, as torch.profiler
        if self._session is None:
            self._session = _FullSession()
        self.cost["user_scope_only"] = float(isinstance(self._session, _UserScopeSession))
        return self

    def __exit__(self, *exc) -> Literal[False]:
        if self._session is None:
            return False
        self.device.synchronize()  # every captured kernel has ended before the profiler stops
        t0 = time.perf_counter()
        self._session.stop(*exc)
        self.cost["profiler_stop_s"] = round(time.perf_counter() - t0, 4)
        self.cost["profiler_detach_s"] = round(self.device.settle_profiler(), 4)
        if exc[0] is not None:
            return False
        try:
            trace = self._read()
        except Exception as err:  # Kineto's export has crashed on some ROCm builds: say so, invent nothing
            self.reason = f"the profiler's trace could not be exported or read: {err}"
            return False
        self.reason = no_device_ops_reason(trace, isinstance(self._session, _UserScopeSession))
        self._trace = None if self.reason else trace
        return False

    def _read(self) -> dict:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "rounds.pt.trace.json")
            t0 = time.perf_counter()
            self._session.export(path)
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


def no_device_ops_reason(trace: dict, user_scope_only: bool) -> str | None:
    """Why a trace with launches holds no device op at all (the recording missed them), or None."""
    events = kernel_timeline.trace_events(trace)
    cats = {str(ev.get("cat", "")).lower() for ev in events}
    if cats & set(kernel_timeline.DEVICE_CATEGORIES) or not cats & set(kernel_timeline.LAUNCH_CATEGORIES):
        return None
    if user_scope_only:
        return (
            "the profiler recorded launches but no device kernel with host ranges from the user scope alone "
            f"on this build: run with {RECORDING_ENV}=full to record as torch.profiler does"
        )
    return "the profiler recorded launches but no device kernel"


class _UserScopeSession:
    """Kineto over the CPU and device activities, host ranges from ``record_function`` only."""

    def __init__(self) -> None:
        import torch.autograd.profiler as autograd_profiler
        from torch._C._autograd import _disable_profiler, _enable_profiler, _prepare_profiler
        from torch._C._profiler import ProfilerActivity, RecordScope

        # use_kineto: without it a CUDA profile is the legacy fallback, which records no device kernel
        template = autograd_profiler.profile(use_device="cuda", use_kineto=True)
        activities = template.kineto_activities
        if ProfilerActivity.CUDA not in activities:  # HIP too on ROCm
            raise RuntimeError("the profiler offers no device activity on this build")
        try:
            config = template.config(create_trace_id=True)
        except TypeError:  # builds before trace ids
            config = template.config()
        self._disable = _disable_profiler
        self._stopped = getattr(autograd_profiler, "_run_on_profiler_stop", lambda: None)
        _prepare_profiler(config, activities)
        getattr(autograd_profiler, "_run_on_profiler_start", lambda: None)()
        _enable_profiler(config, activities, {RecordScope.USER_SCOPE})  # type: ignore[call-arg]  # stub lags
        self._result: Any = None

    def stop(self, *exc) -> None:
        self._result = self._disable()
        self._stopped()

    def export(self, path: str) -> None:
        self._result.save(path)


class _FullSession:
    """``torch.profiler.profile`` over the CPU and device activities: every aten op too."""

    def __init__(self) -> None:
        from torch.profiler import ProfilerActivity, profile

        self._prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])  # HIP too on ROCm
        self._prof.__enter__()

    def stop(self, *exc) -> None:
        self._prof.__exit__(*exc)

    def export(self, path: str) -> None:
        self._prof.export_chrome_trace(path)
