"""stream_concurrency: the scheduler's own test. Long one-block kernels (~10 ms) on K streams.

Two kernels per stream. Concurrency = kernels x (one kernel's time alone) / round time: 1 = serial,
K = every stream ran in parallel. docs/reference_floors.md: 64 really distinct streams, breadth-first, reach ~59
on an H100; the torch stream pool alone stops at 32; depth-first issue shows the hardware queues'
false dependencies (fits 2K / (K/c + 1) for c = CUDA_DEVICE_MAX_CONNECTIONS).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from aorta.hw_queue.parts.spin import cycles_for_ms, spin_alone_ms
from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec
from aorta.hw_queue.workload import Metric, Workload
from aorta.stats import median

KERNEL_MS = {"full": 10.0, "smoke": 0.2}
KERNELS_PER_STREAM = 2


class StreamConcurrency(Workload):
    spec = SPECS["stream_concurrency"]

    def setup(self) -> None:
        self.kernel_ms_target = self.params.get("kernel_ms") or KERNEL_MS[self.size]
        self.cycles = cycles_for_ms(self.device, self.kernel_ms_target)
        self.kernel_alone_ms = spin_alone_ms(self.device, self.cycles)
        self.out = torch.empty(self.n_streams, device=self.device.torch_device)  # (K,): stream i writes i + 1

    def step(self, rec) -> None:
        n = self.n_streams
        if self.issue_order == "breadth":  # kernel j of every stream, then kernel j + 1
            order = [i for _ in range(KERNELS_PER_STREAM) for i in range(n)]
        else:  # both kernels of a stream back to back: shows the hardware queues' false dependencies
            order = [i for i in range(n) for _ in range(KERNELS_PER_STREAM)]
        for i in order:
            with rec.use(i):
                self.device.spin(self.cycles)
        for i in range(n):  # after every spin, so the check adds no dependency between the spins
            with rec.use(i):
                self.out[i : i + 1].fill_(float(i + 1))  # proves stream i ran its work

    def expected_work(self) -> WorkSpec:
        # Per stream: its spin kernels and the one fill that proves it ran; spins run on every stream, none elsewhere.
        per_stream = StreamWork(spin=KERNELS_PER_STREAM, other=1)
        return WorkSpec(dict.fromkeys(range(self.n_streams), per_stream), placed=("spin",))

    def graph_unavailable_reason(self) -> str | None:
        return (
            "it measures how launches in issue order (breadth or depth first) map onto the hardware queues; a "
            "graph replay lets the driver order and place them, so the round is queued behind a hold instead"
        )

    def result(self):
        return self.out

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        work_ms = KERNELS_PER_STREAM * self.n_streams * self.kernel_alone_ms
        conc = [work_ms / ms for ms in per_iteration_ms]
        return [Metric("concurrency", median(conc), "x", True, tuple(conc))]

    def info(self) -> dict:
        return {
            "kernel_alone_ms": self.kernel_alone_ms,
            "spin_cycles": self.cycles,
            "kernels_per_stream": KERNELS_PER_STREAM,
            "hardware_queues": self.device.hardware_queue_setting(),
        }
