"""Why large_gemm_only reads faster than a bare matmul: the same 8192^3 bf16 GEMM timed through the one
timing loop on the default stream, on one native stream, and as the workload, interleaved three times."""

import torch

from aorta.device import Device
from aorta.hw_queue.runner import run_workload
from aorta.hw_queue.workloads.large_gemm_only import LargeGemmOnly, bare_matmul_tflops
from aorta.stats import median
from aorta.timing import TimingPlan, time_rounds

dev = Device.open("auto")
plan = TimingPlan(warmup_rounds=3, rounds=20)
n = 8192
(s,) = dev.streams(1)
g = torch.Generator(device=dev.torch_device).manual_seed(1)
a = torch.randn(n, n, generator=g, device=dev.torch_device).to(torch.bfloat16)
b = (torch.randn(n, n, generator=g, device=dev.torch_device) / n**0.5).to(torch.bfloat16)
c = torch.empty(n, n, device=dev.torch_device, dtype=torch.bfloat16)


def on_stream(rec):
    with rec.use(0):
        torch.matmul(a, b, out=c)


for trial in range(3):
    default = median(bare_matmul_tflops(dev, (n, n, n), torch.bfloat16, plan))
    run = time_rounds(dev, [s], on_stream, plan)
    native = median([2 * n**3 / (ms * 1e-3) / 1e12 for ms in run.per_iteration_ms])
    wl = run_workload(dev, LargeGemmOnly(dev, 1, dtype="bf16"), [s], plan).extra_info["metrics"]["tflops"][
        "value"
    ]
    print(
        f"trial {trial}: default stream {default:.1f}  native stream {native:.1f}  workload {wl:.1f} TFLOP/s"
    )
