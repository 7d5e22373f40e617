"""One rule for ``ProfilerStep#N`` (aorta/timeline/profiler_steps.py), the same in every reader: the FSDP
split from a trace file and from ``prof.events()``, and ``aorta trace merge``.

The readers used to differ; each case below pins how that was resolved:

- Kineto's GPU-side copy (cat ``gpu_user_annotation``) is no step: the FSDP reader dropped every category
  holding "gpu", the merge only that one, case-sensitively; now that one, in any case.
- a step N twice on the host: the FSDP readers gave a range per event (one step more than marked), the merge
  the first; now the first in the trace.
- an event of that name that is not complete (``"i"``, ``"B"``/``"E"``) is no step (as before in both).
- a complete event without a ``ts``: the FSDP reader raised KeyError, the merge skipped it; now skipped.
- ``prof.events()``: the in-memory reader took every event of that name; now only host (CPU) events, the
  first per N.
"""

from pathlib import Path
from types import SimpleNamespace

from torch.autograd import DeviceType

from aorta.fsdp.profiling import step_ranges_from_events
from aorta.report import trace_merge
from aorta.timeline.profiler_steps import is_host_step, profiler_steps, step_number, step_ranges


def _ev(name, ts, dur, cat="user_annotation", ph="X"):
    return {"ph": ph, "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur}


TRACE = {
    "traceEvents": [
        _ev("ProfilerStep#1", 500.0, 80.0, cat="gpu_user_annotation"),  # the GPU's copy of step 1: not a step
        _ev("ProfilerStep#2", 600.0, 80.0, cat="GPU_User_Annotation"),  # any case
        _ev("ProfilerStep#1", 0.0, 100.0),
        _ev("ProfilerStep#2", 100.0, 100.0, cat="cpu_op"),  # older torch files host steps under cpu_op
        _ev("ProfilerStep#2", 150.0, 10.0),  # step 2 again: the first one is step 2
        _ev("ProfilerStep#3", 200.0, 0.0, ph="i"),  # an instant is no range
        _ev("ProfilerStep#3", 200.0, 0.0, ph="B"),
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "dur": 5.0},  # no ts: skipped
        _ev("ProfilerStep#5x", 300.0, 10.0),  # not the name
        _ev("aten::mm", 10.0, 5.0, cat="cpu_op"),
    ]
}


def test_a_step_is_a_host_complete_event_named_profilerstep_n_the_first_per_n():
    assert step_number("ProfilerStep#12") == 12 and step_number("ProfilerStep#") is None
    assert [is_host_step(e) for e in TRACE["traceEvents"]] == [False, False, True, True, True] + [False] * 5
    steps = profiler_steps(TRACE)
    assert list(steps) == [1, 2] and steps[2]["ts"] == 100.0
    assert step_ranges(TRACE) == step_ranges(TRACE["traceEvents"]) == [(0.0, 100.0), (100.0, 200.0)]


def test_trace_merge_reads_the_same_steps():
    t = trace_merge.RankTrace(0, Path("rank0.pt.trace.json"), TRACE)
    figures = trace_merge.rank_figures(t)
    assert figures["steps"] == 2 and figures["step_ms"] == 0.1  # 100 µs each, the duplicate left out
    refs, rule = trace_merge.reference_points_us(
        [t, trace_merge.RankTrace(1, Path("r1.json"), TRACE)], "first-step"
    )
    assert refs == {0: 0.0, 1: 0.0} and rule.startswith("first-step: start of ProfilerStep#1 ")


def test_the_in_memory_reader_takes_host_events_by_the_same_name_rule():
    def event(name, start, end, device=DeviceType.CPU):
        return SimpleNamespace(
            name=name, device_type=device, time_range=SimpleNamespace(start=start, end=end)
        )

    prof = SimpleNamespace(
        events=lambda: [
            event("ProfilerStep#1", 500.0, 580.0, DeviceType.CUDA),  # the GPU's copy
            event("ProfilerStep#2", 100.0, 200.0),
            event("ProfilerStep#1", 0.0, 100.0),
            event("ProfilerStep#2", 150.0, 160.0),  # step 2 again
            event("ProfilerStep#5x", 300.0, 310.0),
        ]
    )  # no prof.profiler: the trace's start is 0
    assert step_ranges_from_events(prof) == [(0.0, 100.0), (100.0, 200.0)]
