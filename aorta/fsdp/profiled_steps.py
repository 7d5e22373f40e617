"""Split a profiled window's kernels into its steps (pure: no torch).

``torch.profiler`` marks each step it records with a host range ``ProfilerStep#N`` (from one
``prof.step()`` to the next). The benchmark synchronizes the device at the end of every step, inside that
range, so each step's kernels start inside its range: a kernel belongs to the step whose range holds its
start. Kineto puts host ranges and device kernels on one timeline, so the two can be compared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from aorta.fsdp.trace_analysis import KernelEvent

STEP_NAME = re.compile(r"^ProfilerStep#(\d+)$")


def step_ranges_from_trace(trace: Mapping) -> list[tuple[float, float]]:
    """The ``ProfilerStep#N`` host ranges (µs) of a Chrome trace, in step order."""
    events: Iterable[dict] = trace.get("traceEvents", []) if isinstance(trace, Mapping) else trace
    found = []
    for ev in events:
        m = STEP_NAME.match(str(ev.get("name", "")))
        if m and ev.get("ph") == "X" and "gpu" not in str(ev.get("cat", "")).lower():
            found.append((int(m.group(1)), float(ev["ts"]), float(ev["ts"]) + float(ev.get("dur", 0.0))))
    return [(s, e) for _, s, e in sorted(found)]


def split_by_step(
    kernels: Sequence[KernelEvent], ranges: Sequence[tuple[float, float]]
) -> tuple[list[list[KernelEvent]], int]:
    """(kernels of each step, how many kernels started in no step's range)."""
    steps: list[list[KernelEvent]] = [[] for _ in ranges]
    outside = 0
    for k in kernels:
        for i, (start, end) in enumerate(ranges):
            if start <= k.ts_us < end:
                steps[i].append(k)
                break
        else:
            outside += 1
    return steps, outside


def span_us(kernels: Sequence[KernelEvent]) -> tuple[float, float]:
    """First start to last end of a step's kernels (its window on the device); (0, 0) for none."""
    if not kernels:
        return (0.0, 0.0)
    return (min(k.ts_us for k in kernels), max(k.end_us for k in kernels))
