"""Begin/end ("B"/"E") event pairs read as the complete events they are (issue 64).

Before: only "X" events were read: a trace whose steps and kernels were written as pairs read no step and
no kernel ("the trace holds no device work"), or a step of pairs was a window of the whole trace.
"""

from __future__ import annotations

import json

import pytest

from aorta.report import trace_figures
from aorta.report.errors import ReportInputError


def _events(pairs: bool) -> list[dict]:
    """ProfilerStep#1 and #2, each launching one kernel; as "X" events, or as "B"/"E" pairs."""
    out = []
    for n, t0 in ((1, 1000.0), (2, 2000.0)):
        spans = [
            ({"cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 5, "tid": 1}, t0, 500.0, {}),
            ({"cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 1}, t0 + 10, 2.0,
             {"correlation": n}),
            ({"cat": "kernel", "name": "gemm", "pid": 0, "tid": 7}, t0 + 100.125, 40.25,
             {"device": 0, "stream": 7, "correlation": n}),
        ]  # fmt: skip
        for base, ts, dur, args in spans:
            if pairs:
                out.append({**base, "ph": "B", "ts": ts, "args": args})
                out.append({"ph": "E", "pid": base["pid"], "tid": base["tid"], "ts": ts + dur})
            else:
                out.append({**base, "ph": "X", "ts": ts, "dur": dur, "args": args})
    if pairs:  # "E"s come in time order: nested spans on one thread close innermost first
        out.sort(key=lambda e: (e["ts"], e["ph"] == "B"))
    return out


def _figures(tmp_path, events, name="t.json") -> dict:
    path = tmp_path / name
    path.write_text(json.dumps({"traceEvents": events}))
    return trace_figures.figures([path])


def test_begin_end_pairs_give_the_figures_of_the_complete_events(tmp_path):
    pairs, complete = (
        _figures(tmp_path, _events(True), "p.json"),
        _figures(tmp_path, _events(False), "x.json"),
    )
    (a,), (b,) = pairs["ranks"], complete["ranks"]
    assert a["kernels"] == 2 and a["profiler_steps"] == 2
    assert a["steps"] == b["steps"]


def test_a_pair_written_twice_is_one_event_and_an_end_with_no_begin_is_no_span(tmp_path):
    events = _events(True)
    kernel_b = next(i for i, e in enumerate(events) if e.get("cat") == "kernel")
    kernel_e = next(i for i, e in enumerate(events) if e["ph"] == "E" and e["pid"] == 0)
    events[kernel_e + 1 : kernel_e + 1] = [dict(events[kernel_b]), dict(events[kernel_e])]
    events.insert(0, {"ph": "E", "pid": 9, "tid": 9, "ts": 1.0})
    (entry,) = _figures(tmp_path, events)["ranks"]
    assert entry["kernels"] == 2 and entry["duplicates_dropped"]["device_ops"] == 1


def test_a_begin_that_never_ends_is_refused_naming_it(tmp_path):
    events = [e for e in _events(True) if not (e["ph"] == "E" and e["pid"] == 0)]
    with pytest.raises(ReportInputError, match=r"event \d+ \('B' 'gemm' on pid 0 tid 7\) never ends"):
        _figures(tmp_path, events)
