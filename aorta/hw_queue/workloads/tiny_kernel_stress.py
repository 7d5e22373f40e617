"""tiny_kernel_stress: many tiny kernels spread over N streams; µs per launch (dispatch cost).

Floors to read the result against (docs/reference_floors.md, H100): ~9 µs host cost per eager launch, ~1.8 µs
of GPU time per tiny kernel with the queue full, ~1.0 µs per kernel replayed from a CUDA graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch

from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec, every_stream
from aorta.hw_queue.workload import Metric, Workload
from aorta.stats import median

MODES = ("eager", "graph")
TOTAL_KERNELS = {"full": 4096, "smoke": 64}


class TinyKernelStress(Workload):
    spec = SPECS["tiny_kernel_stress"]

    def setup(self) -> None:
        self.mode = self.params.get("mode") or "eager"
        if self.mode not in MODES:
            raise ValueError(f"tiny_kernel_stress mode must be one of {MODES}, got {self.mode!r}")
        total = self.params.get("total_kernels") or TOTAL_KERNELS[self.size]
        # The same total work at every stream count, so µs per launch compares across the sweep.
        self.per_stream = max(2, total // self.n_streams)
        self.total_kernels = self.per_stream * self.n_streams
        dev = self.device.torch_device
        self.base = [torch.full((1,), float(i), device=dev) for i in range(self.n_streams)]
        self.x = [torch.empty(1, device=dev) for _ in range(self.n_streams)]

    def _kernel(self, i: int, j: int) -> None:
        if j == 0:
            self.x[i].copy_(self.base[i])  # restart from a known value: every round computes the same
        else:
            self.x[i].add_(1.0)

    def step(self, rec) -> None:
        n = self.n_streams
        if self.issue_order == "breadth":
            for j in range(self.per_stream):
                for i in range(n):
                    with rec.use(i):
                        self._kernel(i, j)
        else:
            for i in range(n):
                with rec.use(i):
                    for j in range(self.per_stream):
                        self._kernel(i, j)

    def expected_work(self) -> WorkSpec:
        # The same tiny op per_stream times on every stream (the first a copy, the rest adds).
        total = self.params.get("total_kernels") or TOTAL_KERNELS[self.size]
        return every_stream(self.n_streams, StreamWork(other=max(2, total // self.n_streams)))

    def result(self):
        return self.x

    def uses_graph(self) -> bool:
        return self.mode == "graph"

    def gpu_mode_unavailable_reason(self) -> str | None:
        if self.mode == "eager":
            return (
                "the eager variant measures the host's launch path on purpose (launches issued as the round "
                "runs); its graph variant is the same kernels with the round on the GPU before it starts"
            )
        return None

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        us = [ms * 1e3 / self.total_kernels for ms in per_iteration_ms]
        per_s = [1e6 / u for u in us]
        return [
            Metric("us_per_launch", median(us), "us", False, tuple(us)),
            Metric("launches_per_s", median(per_s), "1/s", True, tuple(per_s)),
        ]

    def reference_metrics(self, mine, reference):
        """Against the same total kernel count on one stream: its µs per launch, and the speedup (one sample
        per round of this run, against the one-stream run's median)."""
        many = mine.get("us_per_launch")
        one = (reference or {}).get("us_per_launch")
        if self.n_streams == 1:
            return [], {}
        if many is None or one is None or one.value is None:
            reason = "no one-stream reference run given (the benchmark passes reference=)"
            return [], {"one_stream_us_per_launch": reason, "speedup_vs_one_stream": reason}
        speedup = tuple(one.value / u for u in many.samples)
        return [
            replace(one, name="one_stream_us_per_launch", source="one-stream reference run"),
            Metric(
                "speedup_vs_one_stream",
                one.value / many.value,
                "x",
                True,
                speedup,
                source="one-stream reference run",
            ),
        ], {}

    def info(self) -> dict:
        return {"mode": self.mode, "kernels_per_stream": self.per_stream, "total_kernels": self.total_kernels}

    def size_label(self) -> str:
        return f"{self.n_streams} streams x {getattr(self, 'per_stream', '?')} tiny kernels"
