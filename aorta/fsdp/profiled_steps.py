"""Split a profiled window's kernels into its steps (pure: no torch).

``torch.profiler`` marks each step it records with a host range ``ProfilerStep#N`` (from one
``prof.step()`` to the next). The benchmark synchronizes the device at the end of every step, inside that
range, so each step's kernels start inside its range: a kernel belongs to the step whose range holds its
start. Kineto puts host ranges and device kernels on one timeline, so the two can be compared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from aorta import overlap
from aorta.fsdp import trace_analysis as ta
from aorta.fsdp.collective_match import comm_kernels
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


def step_figures(
    kernels: Sequence[KernelEvent], ranges: Sequence[tuple[float, float]], steps: int, world_size: int
) -> tuple[list[dict] | None, dict | None, str | None]:
    """One rank's profiled window, step by step: (``trace_analysis.analyze`` of each step's kernels, the
    comm kernels / compute intervals / windows that rank 0 matches across ranks, or the reason for none).
    The active steps are the last ``steps`` ranges the profiler marked."""
    mine = list(ranges)[-steps:]
    if len(mine) != steps:
        return (
            None,
            None,
            (
                f"the profiler marked {len(mine)} step ranges (ProfilerStep#N) for {steps} profiled steps: "
                "kernels cannot be given to steps"
            ),
        )
    by_step, _ = split_by_step(kernels, mine)
    per_step = [ta.analyze(ks, steps=1, n_ranks=world_size).as_dict() for ks in by_step]
    timeline = {
        "comm": comm_kernels(by_step),
        "compute_us": [
            overlap.union((k.ts_us, k.end_us) for k in ks if k.kind == ta.COMPUTE) for ks in by_step
        ],
        "window_us": [span_us(ks) for ks in by_step],
    }
    return per_step, timeline, None
