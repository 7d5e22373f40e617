import pytest

from aorta.workloads.large_gemm import LargeGemmOnly

pytestmark = [pytest.mark.p0, pytest.mark.compute]


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_large_gemm_only(hw_queue, streams, dtype):
    hw_queue(LargeGemmOnly, streams, dtype=dtype)
