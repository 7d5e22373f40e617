"""``--aorta-mode``: eager, or the whole round queued on the GPU before it starts (aorta/hw_queue/run_mode.py)."""

from __future__ import annotations

import pytest
import torch
from kernel_trace_double import PretendGpu

from aorta.device import Device
from aorta.hw_queue import run_mode, runner
from aorta.hw_queue.workload import WorkloadCheckError
from aorta.hw_queue.workloads.copy_compute_overlap import CopyComputeOverlap
from aorta.hw_queue.workloads.hetero_kernels import HeteroKernels
from aorta.hw_queue.workloads.large_gemm_only import LargeGemmOnly
from aorta.hw_queue.workloads.tiny_kernel_stress import TinyKernelStress
from aorta.timing import TimingPlan

PLAN = TimingPlan(warmup_rounds=0, rounds=2, iterations_per_round=1)


@pytest.fixture(scope="module")
def cpu():
    torch.set_num_threads(1)
    return Device.open("cpu")


def test_gpu_mode_on_cpu_runs_eager_and_says_why(cpu):
    w = LargeGemmOnly(cpu, 2, size="smoke")
    res = runner.run_workload(cpu, w, cpu.streams(2), PLAN, mode="gpu")
    assert res.extra_info["mode"] == "eager" and res.extra_info["launch_hold_cycles_per_iteration"] == 0
    assert "CPU backend" in res.extra_info["unavailable"]["mode_gpu"]
    eager = runner.run_workload(cpu, LargeGemmOnly(cpu, 2, size="smoke"), cpu.streams(2), PLAN)
    assert eager.extra_info["mode"] == "eager" and "mode_gpu" not in eager.extra_info["unavailable"]


def test_an_unknown_mode_is_refused(cpu):
    with pytest.raises(ValueError, match="mode must be one of"):
        runner.run_workload(cpu, LargeGemmOnly(cpu, 1, size="smoke"), cpu.streams(1), PLAN, mode="graph")


def _replay(rec):  # stands in for a captured graph's replay step
    pass


def test_gpu_mode_replays_a_graph_of_the_round_where_it_can_be_captured(cpu):
    w = LargeGemmOnly(cpu, 2, size="smoke")
    chosen = run_mode.choose(PretendGpu(cpu), w, cpu.streams(2), PLAN, "gpu", lambda: _replay)
    assert chosen.step is _replay and chosen.streams == [] and chosen.plan.graph
    assert chosen.info == {"mode": "gpu", "gpu_mode": "graph_replay"} and chosen.unavailable is None
    assert not chosen.labelled_pass  # large_gemm_only reads no stage figures


def test_a_graph_replay_of_a_workload_with_stage_figures_adds_a_labelled_pass(cpu):
    w = CopyComputeOverlap(cpu, 2, size="smoke")
    chosen = run_mode.choose(PretendGpu(cpu), w, cpu.streams(2), PLAN, "gpu", lambda: _replay)
    assert chosen.info["gpu_mode"] == "graph_replay" and chosen.labelled_pass


def test_a_failed_capture_falls_back_to_a_hold_sized_from_the_host_and_says_why(cpu, monkeypatch):
    monkeypatch.setattr(run_mode, "cycles_for_ms", lambda device, ms: int(ms * 1000))

    def capture():
        raise RuntimeError("operation not permitted when stream is capturing")

    w = LargeGemmOnly(cpu, 2, size="smoke")
    chosen = run_mode.choose(PretendGpu(cpu), w, cpu.streams(2), PLAN, "gpu", capture)
    assert chosen.info["gpu_mode"] == "launch_hold" and chosen.step == w.step and len(chosen.streams) == 2
    assert (
        "graph capture failed: RuntimeError: operation not permitted"
        in chosen.info["graph_replay_unavailable"]
    )
    # the hold: 0.2 ms per round plus 1.5 x the host's enqueue time of one iteration in the round before
    assert chosen.plan.hold_cycles == 200 and chosen.plan.hold_cycles_per_enqueue_ms == 1500
    assert chosen.plan.hold_for(3, enqueue_ms_per_iteration=2.0) == 200 + 3 * 2 * 1500


def test_a_workload_with_its_own_hold_keeps_it_and_gets_the_hold_that_follows_the_host_on_top(
    cpu, monkeypatch
):
    # hetero_kernels sizes its hold once at set-up; under the profiler its launches cost the host more and
    # started late behind that hold alone (an H100 kernel pass read GPU busy 0.22 at 4 streams)
    monkeypatch.setattr(run_mode, "cycles_for_ms", lambda device, ms: int(ms * 1000))
    w = HeteroKernels(cpu, 4, size="smoke")
    w.hold_cycles = 5000  # as its set-up would size it
    chosen = run_mode.choose(PretendGpu(cpu), w, cpu.streams(4), PLAN, "gpu", lambda: None)
    assert chosen.info["gpu_mode"] == "launch_hold" and chosen.step == w.step
    assert chosen.plan.hold_for(1, enqueue_ms_per_iteration=2.0) == 5000 + 2 * 1500
    eager = run_mode.choose(PretendGpu(cpu), w, cpu.streams(4), PLAN, "eager", lambda: None)
    assert eager.plan.hold_for(1, enqueue_ms_per_iteration=2.0) == 5000  # eager: its own hold only


def test_a_workload_whose_ranks_meet_in_collectives_starts_every_round_behind_its_barrier(cpu, monkeypatch):
    monkeypatch.setattr(run_mode, "cycles_for_ms", lambda device, ms: int(ms * 1000))
    w = LargeGemmOnly(cpu, 2, size="smoke")
    assert (
        run_mode.choose(PretendGpu(cpu), w, cpu.streams(2), PLAN, "gpu", lambda: _replay).plan.round_barrier
        is None
    )

    def barrier():
        pass

    monkeypatch.setattr(w, "round_barrier", lambda: barrier)
    monkeypatch.setattr(w, "graph_unavailable_reason", lambda: "real collectives across ranks")
    for mode in ("gpu", "eager"):
        chosen = run_mode.choose(PretendGpu(cpu), w, cpu.streams(2), PLAN, mode, lambda: _replay)
        assert chosen.plan.round_barrier is barrier


def test_a_workload_that_measures_the_host_on_purpose_stays_eager_and_says_why(cpu):
    w = TinyKernelStress(cpu, 2, size="smoke", mode="eager")
    w.mode = "eager"  # as its setup sets it
    chosen = run_mode.choose(PretendGpu(cpu), w, cpu.streams(2), PLAN, "gpu", lambda: _replay)
    assert chosen.info == {"mode": "eager"} and "measures the host's launch path" in chosen.unavailable


def test_gpu_mode_of_a_graph_workload_is_its_replay(cpu):
    w = TinyKernelStress(cpu, 2, size="smoke", mode="graph")
    w.mode = "graph"  # as its setup sets it (graph capture itself needs a GPU)
    chosen = run_mode.choose(PretendGpu(cpu), w, cpu.streams(2), PLAN, "gpu", lambda: _replay)
    assert chosen.info == {"mode": "gpu", "gpu_mode": "graph_replay"} and chosen.step is _replay


def test_the_option_reaches_extra_info(pytester):
    pytester.makepyfile(
        test_gemm="""
        from aorta.hw_queue.workloads.large_gemm_only import LargeGemmOnly

        def test_gemm(hw_queue, streams, benchmark):
            hw_queue(LargeGemmOnly, streams)
            info = benchmark.extra_info
            assert info["mode"] == "eager" and "CPU backend" in info["unavailable"]["mode_gpu"]
    """
    )
    result = pytester.runpytest(
        "--streams=2",
        "--rounds=2",
        "--warmup=0",
        "--aorta-device=cpu",
        "--aorta-mode=gpu",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=1)
    bad = pytester.runpytest("--aorta-mode=graph", "-p", "no:cacheprovider")
    assert bad.ret == 4


class _Stream:
    def __init__(self):
        self.waited = []

    def wait_event(self, event):
        self.waited.append(event)


def test_inside_a_graph_capture_only_events_recorded_in_the_capture_are_waited_on(cpu):
    # A step that waits on an event its previous call recorded (a buffer's last reader) cannot be captured
    # as is: a capture may not depend on work outside it. Every replay follows the origin stream's earlier
    # work and every round joins all streams, so the wait is dropped inside the capture, and only there.
    before, s = cpu.record_event(cpu.current_stream()), _Stream()
    cpu.wait_event(s, before)
    assert s.waited == [before]
    cpu._captured_events = []  # as capture_graph sets it while capturing
    try:
        inside = cpu.record_event(cpu.current_stream())
        cpu.wait_event(s, before)
        cpu.wait_event(s, inside)
    finally:
        cpu._captured_events = None
    assert s.waited == [before, inside]


def test_after_a_graph_capture_an_event_recorded_inside_it_is_not_waited_on(cpu):
    # The labelled pass beside a graph replay runs the step eagerly after the capture: the step's kept events
    # (e.g. a buffer's last reader) were recorded inside the capture and exist only in the graph. CUDA
    # rejects a wait on one ("invalid argument"); the replay before has ended joined into the origin stream,
    # and the eager round forks every stream from there, so the wait is dropped. Fresh events are waited on.
    s = _Stream()
    cpu._captured_events = []
    try:
        inside = cpu.record_event(cpu.current_stream())
    finally:
        cpu._captured_events = None
    cpu.wait_event(s, inside)
    after = cpu.record_event(cpu.current_stream())
    cpu.wait_event(s, after)
    assert s.waited == [after]


def test_a_workload_with_its_own_launch_hold_runs_eager_on_cpu_and_says_so(cpu):
    """Issue 24, case 16: hetero_kernels on the CPU was labelled mode gpu (launch hold); CPU runs are eager."""
    w = HeteroKernels(cpu, 4, size="smoke")
    res = runner.run_workload(cpu, w, cpu.streams(4), PLAN, mode="gpu")
    assert res.extra_info["mode"] == "eager" and "gpu_mode" not in res.extra_info
    assert "CPU backend" in res.extra_info["unavailable"]["mode_gpu"]


class _CaptureDouble:
    """The CPU device with ``capture_graph`` as a GPU's: the replay re-runs what was captured, or (``lost``)
    a capture that missed the work replays nothing."""

    def __init__(self, device, lost: bool):
        self._device, self._lost = device, lost

    def capture_graph(self, fn):
        fn()  # the capture's own run
        return (lambda: None) if self._lost else fn

    def __getattr__(self, name):
        return getattr(self._device, name)


@pytest.mark.parametrize("lost", [False, True])
def test_a_graph_replay_is_checked_against_the_one_stream_result_before_it_is_timed(cpu, lost):
    w = LargeGemmOnly(cpu, 2, size="smoke")
    w.setup()
    streams = cpu.streams(2)
    reference, written = runner.check_against_one_stream(cpu, w, streams)
    device = _CaptureDouble(cpu, lost)
    if not lost:
        step = runner._graph_step(device, w, streams, reference, written)
        step(None)  # the replay step the timing loop runs
        return
    with pytest.raises(WorkloadCheckError, match="graph replay result"):  # the poisoned outputs stay
        runner._graph_step(device, w, streams, reference, written)
