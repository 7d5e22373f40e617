"""Test double for the kernel-timestamp pass: a profiler trace built from known intervals.

A GPU run's interval figures come from ``torch.profiler`` kernel timestamps, which a CPU machine cannot
record. To check each figure's arithmetic on CPU, a test writes down the blocks it wants (stream index,
label, one kernel's start and end in ms), ``synthetic_trace`` turns them into the Chrome-trace events the
profiler would emit (round and block ranges, launches, kernels joined by correlation id), and
``traced_run`` parses that trace through the timing loop's own path (``kernel_timeline.parse_rounds``
via ``loop._attach_kernels``) into the ``TimedRun`` a workload's ``extra_metrics`` reads. Nothing here is
in ``aorta/``: the library never invents an interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aorta.timeline import kernel_timeline
from aorta.timing.loop import RoundTiming, TimedRun, _attach_kernels

# (stream index, label or None, kernel start ms, kernel end ms), in the order the step issued them
BlockSpec = tuple[int, "str | None", float, float]

ROUND_GAP_US = 1e6  # rounds lie 1 s apart on both clocks
HOST_STEP_US = 10.0  # each block's host range and launch, one after another


def synthetic_trace(rounds: Sequence[Sequence[BlockSpec]], *, device_stream=lambda i: 7 + i) -> dict:
    """Chrome-trace events for ``rounds``: one ``aorta.round.<n>`` range per round, one ``aorta.s<i>[:label]``
    range per block holding one launch, whose kernel runs at the given ms (from the round's origin) on
    device stream ``device_stream(i)``. A block given as ``(i, label, None, None)`` launches nothing."""
    events: list[dict] = []
    corr = 100
    for n, blocks in enumerate(rounds):
        host0 = n * ROUND_GAP_US
        events.append(_range(kernel_timeline.round_label(n), host0, HOST_STEP_US * (len(blocks) + 1)))
        for j, (i, label, start_ms, end_ms) in enumerate(blocks):
            t = host0 + HOST_STEP_US * j + 1.0
            events.append(_range(kernel_timeline.block_label(i, label), t, HOST_STEP_US - 2.0))
            if start_ms is None:
                continue
            corr += 1
            events.append(
                {
                    "ph": "X",
                    "cat": "cuda_runtime",
                    "name": "cudaLaunchKernel",
                    "pid": 1,
                    "tid": 1,
                    "ts": t + 1.0,
                    "dur": 2.0,
                    "args": {"correlation": corr},
                }
            )
            events.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": f"k_s{i}_{label}",
                    "pid": 0,
                    "tid": 7 + i,
                    "ts": host0 + start_ms * 1e3,
                    "dur": (end_ms - start_ms) * 1e3,
                    "args": {"stream": device_stream(i), "correlation": corr},
                }
            )
    return {"traceEvents": events}


def _range(name: str, ts: float, dur: float) -> dict:
    return {
        "ph": "X",
        "cat": "user_annotation",
        "name": name,
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "dur": dur,
        "args": {},
    }


@dataclass
class _Capture:
    doc: dict
    reason: str | None = None

    def trace(self) -> dict:
        return self.doc


def traced_run(
    rounds: Sequence[Sequence[BlockSpec]],
    iterations_per_round: int = 1,
    device_ms: Sequence[float] | None = None,
) -> TimedRun:
    """The kernel-timestamp pass a GPU would have returned for ``rounds`` (device time per round given or 1 ms)."""
    ms = list(device_ms) if device_ms is not None else [1.0] * len(rounds)
    timings = [RoundTiming(ms[n], 0.1, None) for n in range(len(rounds))]
    reason = _attach_kernels(timings, _Capture(synthetic_trace(rounds)))
    assert reason is None, reason
    return TimedRun(timings, iterations_per_round, "events", "per_round", "device_events", sum(ms))


def blocks_from_plan(plan, span_of) -> list[BlockSpec]:
    """One round's blocks from a workload's ``SegmentPlan``: the ``j``-th block on stream ``i`` holds the
    ``j``-th label issued there, its kernel at ``span_of(i, label)``."""
    return [(i, None, *span_of(i, label)) for i in plan.stream_indices() for label in plan.labels(i)]


class PretendGpu:
    """The workload's device as a GPU would answer ``is_gpu`` (its overlap figures are GPU-only); every other
    attribute is the real (CPU) device's."""

    is_gpu = True

    def __init__(self, device):
        self._device = device

    def __getattr__(self, name):
        return getattr(self._device, name)
