import pytest

from aorta.workloads.hetero import HeteroKernels

pytestmark = [pytest.mark.p0, pytest.mark.latency]


def test_hetero_kernels(hw_queue, benchmark, streams, issue_order):
    # Tiny kernels alone first (GEMM streams idle), then beside the GEMMs: the recorded run.
    alone = hw_queue(HeteroKernels, streams, with_gemms=False, issue_order=issue_order, record=False)
    mixed = hw_queue(HeteroKernels, streams, with_gemms=True, issue_order=issue_order)
    if "tiny_us_per_kernel" not in mixed.extra_info["metrics"]:  # kernel timestamps only (GPU)
        reason = mixed.extra_info["unavailable"]["interval_metrics"]
        benchmark.extra_info["unavailable"].update(tiny_us_per_kernel_alone=reason, convoy_slowdown=reason)
        return
    alone_us = alone.extra_info["metrics"]["tiny_us_per_kernel"]
    mixed_us = mixed.extra_info["metrics"]["tiny_us_per_kernel"]["value"]
    benchmark.extra_info["metrics"]["tiny_us_per_kernel_alone"] = alone_us
    benchmark.extra_info["metrics"]["convoy_slowdown"] = {
        "value": mixed_us / alone_us["value"], "unit": "x", "higher_is_better": False}
