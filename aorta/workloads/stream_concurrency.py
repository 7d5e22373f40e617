"""stream_concurrency: the scheduler's own test. Long one-block kernels (~10 ms) on K streams.

Two kernels per stream. Concurrency = kernels x (one kernel's time alone) / round time: 1 = serial,
K = every stream ran in parallel. GPU_FACTS.md: 64 really distinct streams, breadth-first, reach ~59
on an H100; the torch stream pool alone stops at 32; depth-first issue shows the hardware queues'
false dependencies (fits 2K / (K/c + 1) for c = CUDA_DEVICE_MAX_CONNECTIONS).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from aorta.stats import median
from aorta.timing import TimingPlan, time_rounds
from aorta.workloads.base import Metric, Workload, WorkloadSpec

KERNEL_MS = {"full": 10.0, "smoke": 0.2}
KERNELS_PER_STREAM = 2
PROBE_CYCLES = {"gpu": 2_000_000, "cpu": 200_000}  # GPU clock cycles, or ns of busy-wait on the CPU


class StreamConcurrency(Workload):
    spec = WorkloadSpec(
        name="stream_concurrency", category="scheduling", priority="p0",
        description="long one-block spin kernels, two per stream; effective concurrency against stream count",
        metric="concurrency", unit="x", higher_is_better=True, max_streams=1024,
        recommended_streams=(1, 8, 16, 32, 64, 128), dtypes=("fp32",),
    )

    def setup(self) -> None:
        self.kernel_ms_target = self.params.get("kernel_ms") or KERNEL_MS[self.size]
        self.cycles = self._calibrate_cycles()
        self.kernel_alone_ms = self._time_alone(self.cycles)
        self.out = torch.empty(self.n_streams, device=self.device.torch_device)  # (K,): stream i writes i + 1

    def _time_alone(self, cycles: int) -> float:
        run = time_rounds(self.device, [], lambda rec: self.device.spin(cycles),
                          TimingPlan(warmup_rounds=1, rounds=3, iterations_per_round=1), record_intervals=False)
        return median(run.device_ms)

    def _calibrate_cycles(self) -> int:
        probe = PROBE_CYCLES["gpu" if self.device.is_gpu else "cpu"]
        per_ms = probe / self._time_alone(probe)
        return max(1, int(per_ms * self.kernel_ms_target))

    def step(self, rec) -> None:
        # Every stream is opened before any launch and closed after all of them: an event issued
        # between launches would wait in a shared hardware queue and serialize the streams behind it.
        n = self.n_streams
        for i in range(n):
            rec.begin(i)
        if self.issue_order == "breadth":
            for _ in range(KERNELS_PER_STREAM):
                for i in range(n):
                    with rec.use(i):
                        self.device.spin(self.cycles)
            for i in range(n):
                with rec.use(i):
                    self.out[i:i + 1].fill_(float(i + 1))  # proves stream i ran its work
        else:
            for i in range(n):
                with rec.use(i):
                    for _ in range(KERNELS_PER_STREAM):
                        self.device.spin(self.cycles)
                    self.out[i:i + 1].fill_(float(i + 1))
        for i in range(n):
            rec.end(i)

    def result(self):
        return self.out

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        work_ms = KERNELS_PER_STREAM * self.n_streams * self.kernel_alone_ms
        conc = [work_ms / ms for ms in per_iteration_ms]
        return [Metric("concurrency", median(conc), "x", True, tuple(conc))]

    def info(self) -> dict:
        return {"kernel_alone_ms": self.kernel_alone_ms, "spin_cycles": self.cycles,
                "kernels_per_stream": KERNELS_PER_STREAM,
                "hardware_queues": self.device.hardware_queue_setting()}
