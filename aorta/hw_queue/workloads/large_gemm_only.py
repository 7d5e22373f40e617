"""large_gemm_only: one large GEMM per stream; the compute-bound reference (TFLOP/s)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch

from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec, every_stream
from aorta.hw_queue.workload import Metric, Workload
from aorta.stats import median
from aorta.timing import time_rounds

# (M, N, K) per stream. 8192^3 bf16 is ~1.4 ms on an H100 (700-800 TFLOP/s, docs/reference_floors.md); fp32
# without TF32 runs ~52 TFLOP/s, so its size is halved to keep a 64-stream round near a second.
SIZES = {
    ("full", "bf16"): (8192, 8192, 8192),
    ("full", "fp32"): (4096, 4096, 4096),
    ("smoke", "bf16"): (96, 96, 96),
    ("smoke", "fp32"): (96, 96, 96),
}


class LargeGemmOnly(Workload):
    spec = SPECS["large_gemm_only"]

    def setup(self) -> None:
        self.shape = self.gemm_shape()
        m, n, k = self.shape
        gen = self.generator()
        # Random data, never zeros: a bf16 GEMM runs ~13% faster on zeros (docs/reference_floors.md).
        self.a = [self.randn(m, k, gen=gen) for _ in range(self.n_streams)]  # (M, K)
        self.b = [self.randn(k, n, gen=gen, scale=k**-0.5) for _ in range(self.n_streams)]  # (K, N)
        self.c = [self.a[0].new_empty(m, n) for _ in range(self.n_streams)]  # (M, N)

    def gemm_shape(self) -> tuple[int, int, int]:
        """(M, N, K): the ``shape`` parameter, else this size's."""
        return self.params.get("shape") or SIZES[(self.size, self.dtype_name)]

    def step(self, rec) -> None:
        for i in range(self.n_streams):
            with rec.use(i):
                torch.matmul(self.a[i], self.b[i], out=self.c[i])  # (M, K) @ (K, N) -> (M, N)

    def expected_work(self) -> WorkSpec:
        return every_stream(self.n_streams, StreamWork(gemm=1))  # one GEMM per stream

    def result(self):
        return self.c

    def flops_per_iteration(self) -> float:
        m, n, k = self.shape
        return 2.0 * m * n * k * self.n_streams

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        tflops = [self.flops_per_iteration() / (ms * 1e-3) / 1e12 for ms in per_iteration_ms]
        return [Metric("tflops", median(tflops), "TFLOP/s", True, tuple(tflops))]

    def measure_reference(self, plan) -> None:
        """A bare ``torch.matmul`` of the same shape, timed right before and right after the workload."""
        plan = replace(plan, hold_cycles=0, hold_cycles_per_iteration=0, graph=False)
        self.bare_tflops = getattr(self, "bare_tflops", []) + bare_matmul_tflops(
            self.device, self.shape, self.dtype, plan
        )

    def reference_metrics(self, mine, reference):
        bare = getattr(self, "bare_tflops", [])
        tflops = mine.get("tflops")
        if not bare or tflops is None:
            return [], {
                "bare_matmul_tflops": "no bare matmul timed",
                "ratio_to_bare_matmul": "no bare matmul timed",
            }
        ratio = tuple(t / median(bare) for t in tflops.samples)
        return [
            Metric(
                "bare_matmul_tflops",
                median(bare),
                "TFLOP/s",
                True,
                tuple(bare),
                source="one bare torch.matmul of the same shape, timed before and after",
            ),
            Metric(
                "ratio_to_bare_matmul",
                tflops.value / median(bare),
                "x",
                True,
                ratio,
                source="this run's TFLOP/s over the bare matmul's",
            ),
        ], {}

    def info(self) -> dict:
        m, n, k = self.shape
        return {"m": m, "n": n, "k": k, "gemms_per_iteration": self.n_streams}

    def size_label(self) -> str:
        m, n, k = self.gemm_shape()
        return f"{self.n_streams} x {self.dtype_name} GEMM {m}x{n}x{k}"


def bare_matmul_tflops(device, shape: tuple[int, int, int], dtype, plan) -> list[float]:
    """TFLOP/s per round of one bare ``torch.matmul`` on the current stream, through the same timing loop.

    The reference large_gemm_only is read against, taken in the same process right after it, so
    clocks and power state match (docs/reference_floors.md: 700-800 TFLOP/s bf16 on an H100 for 8192^3).
    """
    m, n, k = shape
    gen = torch.Generator(device=device.torch_device).manual_seed(1)
    a = torch.randn(m, k, generator=gen, device=device.torch_device).to(dtype)  # (M, K)
    b = (torch.randn(k, n, generator=gen, device=device.torch_device) * k**-0.5).to(dtype)  # (K, N)
    c = torch.empty(m, n, device=device.torch_device, dtype=dtype)  # (M, N)

    def step(rec) -> None:
        torch.matmul(a, b, out=c)

    run = time_rounds(device, [], step, plan, record_intervals=False)
    return [2.0 * m * n * k / (ms * 1e-3) / 1e12 for ms in run.per_iteration_ms]
