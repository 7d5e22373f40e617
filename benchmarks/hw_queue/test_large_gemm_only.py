import pytest

from aorta.stats import median
from aorta.workloads.large_gemm import LargeGemmOnly, bare_matmul_tflops

pytestmark = [pytest.mark.p0, pytest.mark.compute]


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_large_gemm_only(hw_queue, benchmark, aorta_device, timing_plan, streams, dtype):
    result = hw_queue(LargeGemmOnly, streams, dtype=dtype)
    # Beside it, the same GEMM as one bare torch.matmul, timed right after in this process.
    info = result.extra_info["workload_info"]
    bare = bare_matmul_tflops(aorta_device, (info["m"], info["n"], info["k"]), LargeGemmOnly.dtype_of(dtype),
                              timing_plan)
    tflops = result.extra_info["metrics"]["tflops"]["value"]
    metrics = benchmark.extra_info["metrics"]
    metrics["bare_matmul_tflops"] = {"value": median(bare), "unit": "TFLOP/s", "higher_is_better": True,
                                     "samples": bare}
    metrics["ratio_to_bare_matmul"] = {"value": tflops / median(bare), "unit": "x", "higher_is_better": True}
