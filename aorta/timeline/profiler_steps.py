"""The profiler's steps: the host ranges ``ProfilerStep#N`` that ``torch.profiler`` marks (pure: no torch).

``prof.step()`` closes one step's range and opens the next, on the host thread that calls it. Kineto also
copies each step onto the GPU's timeline (``cat`` ``gpu_user_annotation``, spanning that step's device
work): the same name, other times. Every reader of steps takes the one rule here: the FSDP per-step split
(from a trace file, or from ``prof.events()`` where no trace is written: aorta/fsdp/profiling.py) and
``aorta trace merge``'s first-step alignment and step times (aorta/report/trace_merge.py).

A step is a host-side complete event named ``ProfilerStep#N``:

- complete: ``ph`` ``"X"`` with a numeric ``ts`` (``dur`` 0 where absent); an instant (``"i"``) or a
  begin/end pair (``"B"`` / ``"E"``) of that name is not one;
- host-side: not Kineto's GPU-side copy (``cat`` ``gpu_user_annotation``, in any case), whose times are the
  device's and would give every step twice;
- one per N: where a trace holds step N twice on the host, the first in the trace is step N.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from aorta.timeline.kernel_timeline import trace_events

STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")
GPU_COPY_CATEGORY = "gpu_user_annotation"  # Kineto's copy of a host range on the GPU's timeline


def step_number(name: object) -> int | None:
    """N of a range named ``ProfilerStep#N``, else None (the name rule alone; ``is_host_step`` for events)."""
    m = STEP_NAME.match(str(name))
    return int(m.group(1)) if m else None


def is_host_step(event: object) -> bool:
    """A Chrome trace event that is a profiler step: a host-side complete ``ProfilerStep#N`` event."""
    return (
        isinstance(event, Mapping)
        and event.get("ph") == "X"
        and isinstance(event.get("ts"), (int, float))
        and str(event.get("cat", "")).lower() != GPU_COPY_CATEGORY
        and step_number(event.get("name", "")) is not None
    )


def profiler_steps(trace: Mapping | Sequence) -> dict[int, Mapping]:
    """The host ``ProfilerStep#N`` events of a Chrome trace (or its event list) by N, in step order; the
    first in the trace where N comes twice."""
    found: dict[int, Mapping] = {}
    for ev in trace_events(trace):
        if is_host_step(ev):
            found.setdefault(step_number(ev["name"]), ev)  # type: ignore[arg-type]
    return dict(sorted(found.items()))


def step_ranges(trace: Mapping | Sequence) -> list[tuple[float, float]]:
    """The host ranges (µs, start and end) of a Chrome trace's profiler steps, in step order."""
    return [
        (float(ev["ts"]), float(ev["ts"]) + float(ev.get("dur", 0.0)))
        for ev in profiler_steps(trace).values()
    ]
