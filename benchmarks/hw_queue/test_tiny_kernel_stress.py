import pytest

from aorta.workloads.tiny_kernel import TinyKernelStress

pytestmark = [pytest.mark.p0, pytest.mark.scheduling]


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_tiny_kernel_stress(hw_queue, benchmark, aorta_device, streams, issue_order, mode):
    if mode == "graph" and not aorta_device.supports_graphs():
        pytest.skip("CUDA/HIP graphs need a GPU")
    result = hw_queue(TinyKernelStress, streams, mode=mode, issue_order=issue_order)
    if streams > 1:
        # The one-stream figure beside it: the same total kernel count on a single stream.
        one = hw_queue(TinyKernelStress, 1, mode=mode, record=False)
        one_us = one.extra_info["metrics"]["us_per_launch"]
        many_us = result.extra_info["metrics"]["us_per_launch"]["value"]
        benchmark.extra_info["metrics"]["one_stream_us_per_launch"] = one_us
        benchmark.extra_info["metrics"]["speedup_vs_one_stream"] = {
            "value": one_us["value"] / many_us, "unit": "x", "higher_is_better": True}
