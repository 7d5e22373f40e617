"""A gate's lean repeat run: what it repeats and what it leaves to the full run.

A lean run times the rounds and skips the one-stream check and the per-stream work check (both done in
the gate's full run). Figures the gate judges must be measured in every run, so a workload whose figures
come from the kernel timeline keeps its kernel pass; a workload with none skips it."""

from __future__ import annotations

import pytest
import torch

from aorta.device import Device
from aorta.hw_queue import runner
from aorta.hw_queue.workloads.hetero_kernels import HeteroKernels
from aorta.hw_queue.workloads.tiny_kernel_stress import TinyKernelStress
from aorta.timing import TimingPlan

PLAN = TimingPlan(warmup_rounds=0, rounds=2, iterations_per_round=1)


@pytest.fixture(scope="module")
def cpu():
    torch.set_num_threads(1)
    return Device.open("cpu")


def lean_run(cpu, cls, n=2):
    w = cls(cpu, n, size="smoke")
    return w, runner.run_workload(cpu, w, cpu.streams(n), PLAN, lean=True)


def details(result):
    return result.extra_info


def test_a_workload_with_kernel_figures_keeps_its_kernel_pass_in_a_lean_run(cpu):
    w, result = lean_run(cpu, HeteroKernels)
    assert w.has_kernel_figures()
    info = details(result)
    assert info["lean_run"] == runner.LEAN_RUN_KERNEL_PASS
    # the kernel pass ran: on CPU it says why it has no kernel timestamps, not that the run was lean
    assert info["unavailable"]["interval_metrics"] != runner.LEAN_RUN


def test_a_workload_without_kernel_figures_skips_the_kernel_pass_in_a_lean_run(cpu):
    w, result = lean_run(cpu, TinyKernelStress)
    assert not w.has_kernel_figures()
    info = details(result)
    assert info["lean_run"] == runner.LEAN_RUN
    assert info["unavailable"]["interval_metrics"] == runner.LEAN_RUN


def test_no_lean_run_repeats_the_checks_the_full_run_made(cpu):
    for cls in (HeteroKernels, TinyKernelStress):
        _, result = lean_run(cpu, cls)
        info = details(result)
        assert "check" not in info["host_phase_s"]
        assert info["stream_work"]["unavailable"] == info["lean_run"]


# --- what a lean run times less of (issue 63) ---------------------------------------------------------------

REFERENCE_BENCH = """
from aorta.hw_queue.workloads.hetero_kernels import HeteroKernels
from aorta.hw_queue.workloads.large_gemm_only import LargeGemmOnly

def test_reference_rounds(hw_queue):
    alone = hw_queue(HeteroKernels, 2, with_gemms=False, record=False)
    mixed = hw_queue(HeteroKernels, 2, with_gemms=True, reference=alone)
    gemm = hw_queue(LargeGemmOnly, 1, dtype="fp32", record=False)
    print("ROUNDS", len(alone.run.rounds), len(mixed.run.rounds), len(gemm.run.rounds))
"""


def test_a_reference_run_whose_timed_rounds_nothing_reads_times_one_round(pytester):
    """hetero_kernels' tiny kernels alone are read only through their kernel pass: one timed round (the K
    probe's plan), while the recorded run and a reference whose rounds are read keep the plan's count."""
    pytester.makepyfile(test_ref=REFERENCE_BENCH)
    result = pytester.runpytest("--aorta-rounds=4", "--aorta-warmup=0", "-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)
    assert "ROUNDS 1 4 4" in result.stdout.str()


def test_only_hetero_kernels_alone_variant_leaves_its_timed_rounds_unread(cpu):
    assert not HeteroKernels(cpu, 2, size="smoke", with_gemms=False).reference_reads_timed_rounds()
    assert HeteroKernels(cpu, 2, size="smoke").reference_reads_timed_rounds()
    assert TinyKernelStress(cpu, 1, size="smoke").reference_reads_timed_rounds()


def test_the_timed_rounds_option_leaves_the_kernel_pass_its_plan(cpu):
    """``timed_rounds`` shortens the timed step alone: the kernel pass plan still reads the plan's rounds."""
    w = HeteroKernels(cpu, 2, size="smoke", with_gemms=False)
    plan = TimingPlan(warmup_rounds=0, rounds=4, iterations_per_round=1)
    result = runner.run_workload(cpu, w, cpu.streams(2), plan, timed_rounds=1)
    assert len(result.run.rounds) == 1
    assert runner.kernel_pass_plan(plan, result.run, 2).rounds == 2
    assert result.extra_info["warmup_rounds"] == 0  # the record says how the rounds were warmed


class _Config:
    """Just what ``_resolve_options`` asks of a pytest config."""

    def __init__(self, **given):
        self.given = {"aorta_device": "cpu", **given}

    def getoption(self, name, default=None):
        return self.given.get(name, default)


@pytest.mark.parametrize(
    ("lean", "gpu", "rounds"), [(False, True, 3), (False, False, 1), (True, True, 1), (True, False, 1)]
)
def test_a_lean_run_warms_up_one_round_where_a_full_gpu_run_warms_up_three(lean, gpu, rounds):
    from aorta import plugin

    assert plugin._default_warmup(_Config(aorta_lean_run=lean), gpu) == rounds


@pytest.mark.parametrize("lean", [False, True])
def test_a_given_warmup_wins_in_a_lean_run_too(lean):
    from aorta import plugin

    assert plugin._resolve_options(_Config(aorta_lean_run=lean, aorta_warmup=2)).warmup == 2
    assert plugin._resolve_options(_Config(aorta_lean_run=lean, aorta_warmup=0)).warmup == 0
