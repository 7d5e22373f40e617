import pytest

from aorta.stats import median
from aorta.workloads.large_gemm import SIZES, LargeGemmOnly, bare_matmul_tflops

pytestmark = [pytest.mark.p0, pytest.mark.compute]


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_large_gemm_only(hw_queue, benchmark, aorta_device, aorta_size, timing_plan, streams, dtype):
    # Beside it, the same GEMM as one bare torch.matmul timed in this process, before and after the
    # workload so a drift of clocks or power (H100s hit their power cap on these GEMMs) falls on both.
    shape, torch_dtype = SIZES[(aorta_size, dtype)], LargeGemmOnly.dtype_of(dtype)
    bare = bare_matmul_tflops(aorta_device, shape, torch_dtype, timing_plan)
    result = hw_queue(LargeGemmOnly, streams, dtype=dtype)
    bare += bare_matmul_tflops(aorta_device, shape, torch_dtype, timing_plan)
    tflops = result.extra_info["metrics"]["tflops"]["value"]
    metrics = benchmark.extra_info["metrics"]
    metrics["bare_matmul_tflops"] = {"value": median(bare), "unit": "TFLOP/s", "higher_is_better": True,
                                     "samples": bare}
    metrics["ratio_to_bare_matmul"] = {"value": tflops / median(bare), "unit": "x", "higher_is_better": True}
