"""A bare torch.matmul timed with events through the one timing loop: the reference for large_gemm_only."""

import json
import sys

import torch

from aorta.device import Device
from aorta.stats import median
from aorta.timing import TimingPlan, time_rounds

dev = Device.open("auto")
n = 8192
g = torch.Generator(device=dev.torch_device).manual_seed(0)
a = torch.randn(n, n, generator=g, device=dev.torch_device).to(torch.bfloat16)
b = (torch.randn(n, n, generator=g, device=dev.torch_device) / n**0.5).to(torch.bfloat16)
c = torch.empty(n, n, device=dev.torch_device, dtype=torch.bfloat16)
run = time_rounds(dev, [], lambda rec: torch.matmul(a, b, out=c), TimingPlan(warmup_rounds=3, rounds=20))
ms = median(run.per_iteration_ms)
tflops = 2 * n**3 / (ms * 1e-3) / 1e12
json.dump({"bare_matmul_ms": ms, "bare_matmul_tflops": tflops}, sys.stdout)
print()
