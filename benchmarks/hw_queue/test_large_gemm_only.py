import pytest

from aorta.hw_queue.marks import spec_marks
from aorta.hw_queue.workloads.large_gemm_only import LargeGemmOnly

pytestmark = spec_marks(LargeGemmOnly)


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_large_gemm_only(hw_queue, streams, dtype):
    # The workload times a bare torch.matmul of the same shape right before and right after its own rounds
    # (bare_matmul_tflops, ratio_to_bare_matmul), so a drift of clocks or power (H100s hit their power cap
    # on these GEMMs) falls on both.
    hw_queue(LargeGemmOnly, streams, dtype=dtype)
