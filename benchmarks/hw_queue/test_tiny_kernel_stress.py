import pytest

from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.tiny_kernel_stress import TinyKernelStress

pytestmark = spec_marks(TinyKernelStress)


@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_tiny_kernel_stress(hw_queue, aorta_device, streams, issue_order, mode):
    if mode == "graph" and not aorta_device.supports_graphs():
        pytest.skip("CUDA/HIP graphs need a GPU")
    # The one-stream figure beside it: the same total kernel count on a single stream.
    one = hw_queue(TinyKernelStress, 1, mode=mode, record=False) if streams > 1 else None
    hw_queue(TinyKernelStress, streams, mode=mode, issue_order=issue_order, reference=one)
