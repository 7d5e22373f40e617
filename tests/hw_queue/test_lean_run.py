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
