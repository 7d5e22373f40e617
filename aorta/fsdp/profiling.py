"""torch.profiler over a window of training steps (wait / warmup / active) -> device kernels.

On CUDA the window's Chrome trace is written per rank to ``<artifacts>/torch_profiler/rank<r>/`` as
``<scenario>.pt.trace.json`` (TensorBoard's profiler plugin reads ``*.pt.trace.json`` files) and the
kernels are read back from that file, through the same parser the unit tests use. Chrome-trace export
is off on ROCm (Kineto's export crashes there) unless ``profiling.trace=on``; kernels are then taken from
``prof.events()`` device events. A CPU run has no device kernels: the figures are marked unavailable.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from aorta.fsdp import trace_analysis as ta
from aorta.fsdp.config import ProfilingConfig
from aorta.fsdp.trace_file import read_kineto_trace
from aorta.timeline.device_op import DeviceOp
from aorta.timeline.profiler_steps import step_number
from aorta.timeline.trace_events import LAUNCH_CATEGORIES

NO_KERNELS_ON_CPU = "CPU backend (gloo): the profiler records no device kernel timestamps"


@dataclass
class ProfiledWindow:
    steps: int
    kernels: list[DeviceOp] = field(default_factory=list)
    trace_file: str | None = None
    reason: str | None = None  # why there are no kernels, when there are none
    trace_note: str | None = None  # why no trace file was written, where none was
    step_ranges: list[tuple[float, float]] = field(default_factory=list)  # ProfilerStep#N host ranges (µs)
    # from a trace file only: the GPU-side copies of the steps, and kernel launches no device event answers
    gpu_step_ranges: list[tuple[float, float] | None] = field(default_factory=list)
    missing_launches_us: list[float] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return self.reason is None


def trace_enabled(pcfg: ProfilingConfig, backend: str) -> tuple[bool, str | None]:
    if pcfg.trace == "on":
        return True, None
    if pcfg.trace == "off":
        return False, "profiling.trace is off"
    if backend == "rocm":
        return (
            False,
            "Chrome-trace export is off on ROCm by default (Kineto crashes); profiling.trace=on forces it",
        )
    if backend == "cpu":
        return False, "CPU run: no device kernels to trace (profiling.trace=on forces a trace)"
    return True, None


def _metadata(event) -> dict:
    raw = getattr(event, "event_metadata", None)
    if raw is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            raw = getattr(event, "metadata_json", "") or ""
    if isinstance(raw, dict):
        return raw
    raw = raw.strip()
    if not raw:
        return {}
    with contextlib.suppress(ValueError):
        return json.loads(raw if raw.startswith("{") else "{" + raw + "}")
    return {}


def step_ranges_from_events(prof) -> list[tuple[float, float]]:
    """The profiler steps' host ranges in ``prof.events()`` (µs, on the kernels' timeline), in step order: the
    rule of aorta/timeline/profiler_steps.py over events in memory (a host event named ``ProfilerStep#N``, not
    Kineto's GPU-side copy; the first where N comes twice)."""
    from torch.autograd import DeviceType

    start_us = _trace_start_us(prof)
    found: dict[int, tuple[float, float]] = {}
    for e in prof.events():
        n = step_number(e.name)
        if n is not None and e.device_type == DeviceType.CPU:
            found.setdefault(n, (start_us + e.time_range.start, start_us + e.time_range.end))
    return [found[n] for n in sorted(found)]


def _trace_start_us(prof) -> float:
    with contextlib.suppress(Exception):
        return prof.profiler.kineto_results.trace_start_ns() / 1e3
    return 0.0


def kernels_from_events(prof) -> list[DeviceOp]:
    """Device kernels of ``prof.events()``; timestamps made absolute with the trace's start (µs). Each kernel
    carries the host time of its launch: the runtime call (activity ``cuda_runtime`` / ``cuda_driver``)
    whose event id is the kernel's (both are the correlation id there)."""
    from torch.autograd import DeviceType

    start_us = _trace_start_us(prof)
    events = list(prof.events())
    launches: dict[int, float] = {}
    for e in events:
        if e.device_type == DeviceType.CPU and str(getattr(e, "activity_type", "")) in LAUNCH_CATEGORIES:
            t = start_us + e.time_range.start
            launches[e.id] = min(t, launches.get(e.id, t))
    out = []
    for e in events:
        if e.device_type == DeviceType.CPU:
            continue
        activity = str(getattr(e, "activity_type", "") or "")
        if activity and activity.lower() != "kernel":
            continue
        if not activity and e.name.startswith(("Memcpy", "Memset")):
            continue
        out.append(
            ta.kernel_from_args(
                e.name,
                start_us + e.time_range.start,
                e.time_range.elapsed_us(),
                getattr(e, "device_resource_id", 0),
                _metadata(e),
                launches.get(e.id),
                e.id,
            )
        )
    return sorted(out, key=lambda k: (k.start_us, k.end_us))


def profile_steps(
    step, device, pcfg: ProfilingConfig, *, trace_path: Path | None, trace_note: str | None = None
) -> ProfiledWindow:
    """Run ``wait + warmup + active`` steps under the profiler; return the active window's kernels."""
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU]
    if device.is_gpu:
        activities.append(ProfilerActivity.CUDA)  # HIP kernels too on ROCm builds
    window = ProfiledWindow(steps=pcfg.active, trace_note=trace_note)

    def on_ready(prof) -> None:
        if trace_path is not None:
            trace_path.parent.mkdir(parents=True, exist_ok=True)
            prof.export_chrome_trace(str(trace_path))
            window.trace_file = str(trace_path)
            read = read_kineto_trace(trace_path)  # the reader `aorta trace figures` uses
            window.kernels, window.step_ranges = (
                list(read.ops),
                read.step_ranges,
            )  # a profiled window: a few steps
            window.gpu_step_ranges, window.missing_launches_us = (
                read.gpu_step_ranges,
                read.missing_launches_us,
            )
        else:
            window.kernels = kernels_from_events(prof)
            window.step_ranges = step_ranges_from_events(prof)

    with warnings.catch_warnings():  # smoke configs use warmup=0 knowingly; the warning says it may skew
        warnings.filterwarnings("ignore", message="Profiler won't be using warmup")
        sched = schedule(wait=pcfg.wait, warmup=pcfg.warmup, active=pcfg.active, repeat=1)
    with profile(activities=activities, schedule=sched, on_trace_ready=on_ready) as prof:
        for _ in range(pcfg.wait + pcfg.warmup + pcfg.active):
            step()
            device.synchronize()  # each step's kernels end inside its own profiler step
            prof.step()
    device.settle_profiler()  # CUPTI detached before the next step is timed (aorta/device/profiler_detach.py)
    if not device.is_gpu:
        window.kernels = []
        window.reason = NO_KERNELS_ON_CPU
    elif not window.kernels:
        window.reason = "the profiler returned no device kernels for the active window"
    return window
