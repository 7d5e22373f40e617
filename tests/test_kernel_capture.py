"""The profiler's own events, read in place (aorta/kernel_capture.py), give the rounds the Chrome trace gives."""

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from aorta import kernel_capture
from aorta import kernel_timeline as kt

DATA = Path(__file__).parent / "data"


class ProfilerEvent:
    """What ``torch._C._autograd._KinetoEvent`` answers, built from one Chrome-trace event (times in ns)."""

    def __init__(self, ev: dict):
        self.ev = ev

    def activity_type(self):
        return self.ev["cat"]

    def name(self):
        return self.ev["name"]

    def start_ns(self):
        return int(round(self.ev["ts"] * 1000))

    def duration_ns(self):
        return int(round((self.ev["ts"] + self.ev.get("dur", 0)) * 1000)) - self.start_ns()

    def device_type(self):
        return SimpleNamespace(name="CUDA" if self.ev["cat"] in DEVICE else "CPU")

    def correlation_id(self):
        return int((self.ev.get("args") or {}).get("correlation", 0))

    def device_index(self):
        return self.ev.get("pid", 0)

    def device_resource_id(self):  # a device op's stream; a host event's OS thread
        args = self.ev.get("args") or {}
        return args["stream"] if self.ev["cat"] in DEVICE else self.ev["tid"]


class OlderProfilerEvent(ProfilerEvent):
    """A build before ``activity_type()`` (torch 2.11): the kind is read from the device type and the name."""

    activity_type = None  # type: ignore[assignment]


DEVICE = ("kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation")


def _rounds_as_figures(trace):
    return [
        (r.index, kt.round_figures(r), r.label_intervals_ms(), [b.stream_index for b in r.blocks])
        for r in kt.parse_rounds(trace)
    ]


@pytest.mark.parametrize("event_class", [ProfilerEvent, OlderProfilerEvent])
@pytest.mark.parametrize(
    "name",
    ["kernels_4streams_cuda.json", "kernels_async_dataload_cuda.json", "kernels_rocm_handwritten.json"],
)
def test_profiler_events_read_in_place_give_the_chrome_trace_s_rounds(name, event_class):
    trace = json.loads((DATA / name).read_text())
    events = [event_class(e) for e in kt.trace_events(trace) if e.get("ph") == "X"]
    from_events = kt.trace_from_profiler_events(events)
    direct, read = _rounds_as_figures(trace), _rounds_as_figures(from_events)
    assert len(read) == len(direct) > 0
    for (i, f, labels, blocks), (j, g, labels2, blocks2) in zip(direct, read):
        assert (i, blocks, f["streams_with_work"]) == (j, blocks2, g["streams_with_work"])
        for key in ("span_ms", "effective_concurrency", "gpu_busy_share"):
            assert g[key] == pytest.approx(f[key], rel=1e-3)  # the fake rounds µs to whole ns
        assert {k: len(v) for k, v in labels.items()} == {k: len(v) for k, v in labels2.items()}


@pytest.mark.parametrize("event_class", [ProfilerEvent, OlderProfilerEvent])
def test_events_the_timeline_does_not_read_are_left_out(event_class):
    launch = {
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "ts": 2,
        "args": {"correlation": 4},
        "tid": 7,
    }
    events = [
        event_class(
            {"cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 1, "tid": 7, "args": {"correlation": 4}}
        ),
        event_class({"cat": "user_annotation", "name": "Torch-Compiled Region", "ts": 1, "dur": 1, "tid": 7}),
        event_class({"cat": "user_annotation", "name": "aorta.round.3", "ts": 1, "dur": 9, "tid": 7}),
        event_class(launch),
        event_class(
            {"cat": "gpu_user_annotation", "name": "aorta.round.3", "ts": 5, "dur": 2, "args": {"stream": 13}}
        ),
        event_class(
            {"cat": "kernel", "name": "k", "ts": 5, "dur": 2, "args": {"stream": 13, "correlation": 4}}
        ),
    ]
    kept = kt.trace_from_profiler_events(events)["traceEvents"]
    assert [e["name"] for e in kept] == ["aorta.round.3", "cudaLaunchKernel", "k"]
    (rnd,) = kt.parse_rounds({"traceEvents": kept})
    assert rnd.index == 3 and [op.stream for op in rnd.ops] == [13]
    assert rnd.ops[0].end_us - rnd.ops[0].start_us == pytest.approx(2.0)


class WithoutActivityType:
    """A real profiler event seen as a build before ``activity_type()`` sees it."""

    def __init__(self, ev):
        self._ev = ev

    def __getattr__(self, name):
        if name == "activity_type":
            raise AttributeError(name)
        return getattr(self._ev, name)


@pytest.mark.parametrize("older_build", [False, True])
def test_the_profiler_s_own_events_give_the_labelled_ranges_and_no_aten_op(older_build):
    """On any build: ranges read from ``kineto_results.events()``; the aten ops inside them are left out."""
    from torch.profiler import ProfilerActivity, profile

    x = torch.ones(8)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with torch.profiler.record_function(kt.round_label(0)):
            with torch.profiler.record_function(kt.block_label(1, "copy")):
                (x * 2 + 1).sum()
    events = prof.profiler.kineto_results.events()
    assert any(ev.name().startswith("aten::") for ev in events)  # recorded, and not read
    if older_build:
        events = [WithoutActivityType(ev) for ev in events]
    trace = kt.trace_from_profiler_events(events)
    assert [e["name"] for e in trace["traceEvents"]] == ["aorta.round.0", "aorta.s1:copy"]
    (outer, inner) = trace["traceEvents"]
    assert outer["tid"] == inner["tid"]  # one host thread: launches inside are filed under the block
    assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
    (rnd,) = kt.parse_rounds(trace)
    assert rnd.index == 0 and [(b.stream_index, b.label) for b in rnd.blocks] == [(1, "copy")]


def test_an_unknown_reader_is_refused():
    with pytest.raises(ValueError, match="profiler reader must be one of"):
        kernel_capture.KernelCapture(object(), reader="perfetto")


def test_on_cpu_the_capture_says_why_there_are_no_kernels():
    from aorta.device import Device

    with Device.open("cpu").kernel_capture() as cap:
        pass
    assert cap.trace() is None and cap.reason == kt.NO_KERNELS_ON_CPU and cap.reader is None


def test_the_reader_can_be_forced_and_a_wrong_name_is_refused_with_what_is_allowed():
    assert kernel_capture.reader_from_env({}) is None
    assert kernel_capture.reader_from_env({"AORTA_PROFILER_READER": "chrome_trace"}) == "chrome_trace"
    with pytest.raises(ValueError, match=r"AORTA_PROFILER_READER='json' .* kineto_events, chrome_trace"):
        kernel_capture.reader_from_env({"AORTA_PROFILER_READER": "json"})
