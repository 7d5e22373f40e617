"""``--aorta-mode``: eager, or the whole round queued on the GPU before it starts (runner._gpu_mode)."""

from __future__ import annotations

import pytest
import torch
from kernel_trace_double import PretendGpu

from aorta import runner
from aorta.device import Device
from aorta.timing import TimingPlan
from aorta.workloads.large_gemm import LargeGemmOnly
from aorta.workloads.tiny_kernel import TinyKernelStress

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


def test_gpu_mode_holds_every_launch_behind_a_kernel_sized_from_the_enqueue_time(cpu, monkeypatch):
    # the hold: 1.5 x the measured host enqueue time of one step per iteration, plus 0.2 ms per round
    asked = []
    monkeypatch.setattr(runner, "cycles_for_ms", lambda device, ms: asked.append(ms) or int(ms * 1000))
    w = LargeGemmOnly(cpu, 2, size="smoke")
    w.setup()
    plan, done, reason = runner._gpu_mode(PretendGpu(cpu), w, cpu.streams(2), PLAN)
    assert reason is None and done["gpu_mode"] == "launch_hold"
    enqueue_ms = done["hold_enqueue_ms_per_iteration"]
    assert enqueue_ms > 0 and asked == [pytest.approx(1.5 * enqueue_ms), 0.2]
    assert plan.hold_cycles == 200 and plan.hold_cycles_per_iteration == int(1.5 * enqueue_ms * 1000)


def test_gpu_mode_of_a_graph_workload_is_its_replay(cpu):
    w = TinyKernelStress(cpu, 2, size="smoke", mode="graph")
    w.mode = "graph"  # as its setup sets it (graph capture itself needs a GPU)
    plan, done, reason = runner._gpu_mode(PretendGpu(cpu), w, cpu.streams(2), PLAN)
    assert reason is None and done == {"gpu_mode": "graph_replay"} and plan == PLAN


def test_the_option_reaches_extra_info(pytester):
    pytester.makepyfile(
        test_gemm="""
        from aorta.workloads.large_gemm import LargeGemmOnly

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
