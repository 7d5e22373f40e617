"""Known answers for the kernel-timestamp figures (GPU only): N long one-block kernels on N native streams
read concurrency N; forced one at a time they read 1; depth-first at 64 streams the kernel timeline agrees
with stream_concurrency's throughput figure (work / device time of the timed rounds)."""

from dataclasses import replace

import pytest

from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.parts.spin import cycles_for_ms
from aorta.hw_queue.runner import run_workload
from aorta.hw_queue.workloads.stream_concurrency import StreamConcurrency
from aorta.timeline.kernel_timeline import summarize
from aorta.timing import RoundRecorder, TimingPlan, run_forked, time_rounds

pytestmark = spec_marks(StreamConcurrency)
KERNEL_MS = 20.0  # long beside the host's ~9 µs per launch: N launches stagger the starts by < 1%
HOLD_MS = 25.0  # covers 16 launches under the profiler (tens of µs each) and a host hiccup of a few ms (one
# A/A run on an H100 read 13.9 for 16 kernels behind a 5 ms hold: their starts spread over 3 ms)
PLAN = TimingPlan(warmup_rounds=1, rounds=3, iterations_per_round=1)


@pytest.fixture
def gpu(aorta_device):
    if not aorta_device.is_gpu:
        pytest.skip("kernel timestamps need a GPU")
    return aorta_device


def _kernel_figures(device, n: int, one_at_a_time: bool, graph: bool = False) -> dict:
    streams = device.streams(n)
    cycles = cycles_for_ms(device, KERNEL_MS)

    def step(rec):
        for i in range(n):
            if one_at_a_time and i:
                rec.wait(i, i - 1)  # stream i starts when stream i - 1's kernel has ended
            with rec.use(i):
                device.spin(cycles)

    if graph:  # the round captured once and replayed: the kernels carry the graph's own device streams
        rec = RoundRecorder(device, streams, record_intervals=False)
        replay = device.capture_graph(lambda: run_forked(device, streams, lambda: step(rec)))
        run = time_rounds(device, [], lambda _rec: replay(), replace(PLAN, graph=True), record_intervals=True)
    else:  # launched behind an untimed hold, as GPU mode does: the kernels start together, not one launch apart
        held = replace(PLAN, hold_cycles=cycles_for_ms(device, HOLD_MS))
        run = time_rounds(device, streams, step, held, record_intervals=True)
    assert run.kernel_reason is None, run.kernel_reason
    return summarize(run.kernel_rounds, run.iterations_per_round)


@pytest.mark.parametrize("graph", [False, True], ids=["launched", "graph_replay"])
@pytest.mark.parametrize("n", [4, 16])
def test_n_independent_kernels_read_concurrency_n(gpu, n, graph):
    figs = _kernel_figures(gpu, n, one_at_a_time=False, graph=graph)
    print(
        f"{n} independent kernels ({'graph replay' if graph else 'launched'}): concurrency {figs['effective_concurrency']:.3f}, "
        f"GPU busy share {figs['gpu_busy_share']:.3f}, streams with work {figs['streams_with_work']}"
    )
    if not graph:  # a graph runs on device streams of the driver's choosing
        assert figs["streams_with_work"] == n
    assert figs["effective_concurrency"] == pytest.approx(n, rel=0.05)
    assert figs["gpu_busy_share"] == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize("graph", [False, True], ids=["launched", "graph_replay"])
@pytest.mark.parametrize("n", [4, 16])
def test_kernels_forced_one_at_a_time_read_concurrency_one(gpu, n, graph):
    figs = _kernel_figures(gpu, n, one_at_a_time=True, graph=graph)
    print(
        f"{n} kernels one at a time ({'graph replay' if graph else 'launched'}): concurrency {figs['effective_concurrency']:.3f}"
    )
    if not graph:
        assert figs["streams_with_work"] == n
    assert figs["effective_concurrency"] == pytest.approx(1.0, rel=0.05)


def test_depth_first_64_streams_kernel_timeline_agrees_with_throughput(gpu):
    w = StreamConcurrency(gpu, 64, issue_order="depth", kernel_ms=KERNEL_MS / 2)
    res = run_workload(gpu, w, w.make_streams(), PLAN)
    throughput = res.record.metrics["concurrency"].value
    timeline = res.record.get("effective_concurrency")
    print(f"depth-first 64 streams: throughput concurrency {throughput:.2f}, kernel timeline {timeline:.2f}")
    assert res.record.get("distinct_streams") == 64
    assert timeline == pytest.approx(throughput, rel=0.05)
