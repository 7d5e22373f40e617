"""A Kineto trace read as a stream into columns (aorta/fsdp/trace_stream.py) is the trace read whole (issue 64
item 4): on every real trace of ../shared/amd_traces and tests/data, the ops, their launches and links, the steps,
the launches without a kernel and the repeats dropped are those of the whole document read by the dict-based
readers (``load_trace``, ``launch_links``, ``parse_chrome_trace``), and every step's compute / comm / copy busy
and overlap is the one overlap.py computes from those ops. And its memory is bounded: a trace four times as long
costs a few tens of bytes per added event (the columns), not the kilobyte a held event cost."""

from __future__ import annotations

import importlib.util
import tracemalloc
from pathlib import Path

import amd_traces
import pytest
from run_once import once

from aorta.fsdp import trace_analysis as ta
from aorta.fsdp.profiled_steps import split_by_step
from aorta.fsdp.trace_file import read_kineto_trace
from aorta.report import trace_figures
from aorta.timeline import overlap
from aorta.timeline.launch_links import launch_links, unanswered
from aorta.timeline.profiler_steps import profiler_steps
from aorta.timeline.trace_events import DEVICE_CATEGORIES, DUPLICATES_KEY, load_trace

ROOT = Path(__file__).resolve().parents[2]
# (the trace: a real one's name or a tests/data path, as written or without host ops: tests/amd_traces.py)
TRACES = [
    *(
        p
        for name in sorted(p.name for p in amd_traces.folder().glob("*.json*"))
        for p in amd_traces.tiers(name, id=name[:40])
    ),
    *(
        pytest.param(p, amd_traces.AS_WRITTEN, id=p.name[:40])
        for p in sorted((ROOT / "tests" / "data").glob("*.json"))
        if "traceEvents" in p.read_text()[:1_000_000]
    ),
]


@pytest.fixture
def path(amd_trace, trace, events) -> Path:
    return amd_trace(trace, events) if isinstance(trace, str) else trace


def whole(path: Path) -> dict:
    """The trace read whole: every kept event a dict, linked by the dict-based readers."""
    doc = load_trace(path, only_read=True)
    events = doc["traceEvents"]
    links = launch_links(events)
    answered = {links.link(ev)[0] for ev in events if str(ev.get("cat", "")).lower() in DEVICE_CATEGORIES}
    steps = profiler_steps(events)
    return {
        "ops": ta.parse_chrome_trace(events, links),
        "steps": [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0.0))) for e in steps.values()],
        "missing": [call.ts_us for call in unanswered(links, answered)],
        "launch_calls": len(links.one_kernel_calls),
        "dropped": doc[DUPLICATES_KEY],
    }


@pytest.fixture
def read_whole(pytestconfig, tmp_path_factory):
    """``whole(path)``, read once per session for both tests below, however many xdist workers run them
    (tests/run_once.py: the real traces take a second each); they only read it."""
    return lambda path: once(
        pytestconfig, tmp_path_factory, f"whole-{path.parent.name}-{path.name}", lambda _: whole(path)
    )


@pytest.mark.parametrize(("trace", "events"), TRACES)
def test_a_streamed_read_is_the_whole_read(path, read_whole):
    if not path.is_file():
        pytest.skip(amd_traces.absent(path))
    ref, streamed = read_whole(path), read_kineto_trace(path)
    assert list(streamed.ops) == ref["ops"]  # every field: times, ns, launch, link, correlation, device ...
    assert streamed.step_ranges == ref["steps"]
    assert streamed.missing_launches_us == ref["missing"]
    assert streamed.launch_calls == ref["launch_calls"]
    assert (streamed.duplicate_events_dropped, streamed.duplicates_dropped) == (
        ref["dropped"]["events"],
        ref["dropped"]["device_ops"],
    )


def _ns(k) -> tuple:
    if k.start_ns is not None and k.dur_ns is not None:
        return (k.start_ns, k.start_ns + k.dur_ns)
    return (k.start_us * 1e3, k.end_us * 1e3)  # a trace in float µs finer than the ns


def _by_overlap_py(ops) -> list[float]:
    """compute, comm and copy busy and overlapped (ms) of some ops, with overlap.py on the profiler's ns."""
    compute = [_ns(k) for k in ops if k.kind == "compute"]
    copy = [_ns(k) for k in ops if k.kind == "memory"]
    comm = [_ns(k) for k in ops if k.kind not in ("compute", "memory")]
    both = overlap.overlapped_ms(compute, comm)
    return [
        overlap.length_ms(compute) / 1e6,
        overlap.length_ms(comm) / 1e6,
        overlap.length_ms(copy) / 1e6,
        both / 1e6,
    ]


@pytest.mark.parametrize(("trace", "events"), TRACES)
def test_every_steps_figures_are_overlap_pys_on_the_whole_reads_ops(path, read_whole):
    if not path.is_file():
        pytest.skip(amd_traces.absent(path))
    ref = read_whole(path)
    ranks = trace_figures.figures([path])["ranks"]
    devices = sorted({k.device for k in ref["ops"]}, key=str)
    assert [r.get("device") for r in ranks] == devices  # one timeline per GPU
    for rank, device in zip(ranks, devices):
        ops = [k for k in ref["ops"] if k.device == device]
        missing = ref["missing"] if device == devices[0] else []
        split = split_by_step(ops, ref["steps"], missing).by_step if ref["steps"] else [ops]
        per_step = [list(ks) for ks in split if ks]
        got = [
            v
            for s in rank["steps"]
            for v in (s["compute_busy_ms"], s["comm_busy_ms"], s["copy_busy_ms"], s["overlapped_ms"])
        ]
        want = [v for ks in per_step[len(per_step) - len(rank["steps"]) :] for v in _by_overlap_py(ks)]
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12)  # the same ns; float sums of the pieces


def _generator():
    spec = importlib.util.spec_from_file_location(
        "synthetic_kineto_trace", ROOT / "scripts" / "synthetic_kineto_trace.py"
    )
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _peak_bytes(path: Path) -> int:
    tracemalloc.start()
    try:
        trace_figures.figures([path])
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_grows_by_the_columns_alone_not_a_held_event(tmp_path):
    """N and 4N events of the same shape (steps of 200 launches): the peak grows by under 150 bytes per added
    event (the columns: about 50 measured), where a held event dict cost about 640."""
    gen = _generator()
    tiny, small, large = tmp_path / "tiny.json", tmp_path / "n.json", tmp_path / "4n.json"
    gen.write(tiny, 400, kernels_per_step=200)
    n_small = gen.write(small, 6_000, kernels_per_step=200)
    n_large = gen.write(large, 24_000, kernels_per_step=200)
    _peak_bytes(tiny)  # imports, caches: paid before either is measured
    grown = _peak_bytes(large) - _peak_bytes(small)
    print(f"{grown / (n_large - n_small):.0f} bytes per added event")
    assert grown / (n_large - n_small) < 150, f"{grown / (n_large - n_small):.0f} bytes per added event"
