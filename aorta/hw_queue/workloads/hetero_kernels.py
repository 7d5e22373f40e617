"""hetero_kernels: large GEMMs on half the streams while tiny kernels run on the others (convoy effect).

Reports tiny-kernel latency beside the GEMMs (from the tiny streams' event intervals), GEMM TFLOP/s over
the time the GEMM streams were busy, and, when the benchmark also runs the ``alone`` variant, the
tiny-kernel latency without GEMMs and the slowdown between the two.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

import torch

from aorta.hw_queue.parts.spin import cycles_for_ms
from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec
from aorta.hw_queue.workload import Metric, Workload
from aorta.stats import median
from aorta.timeline import overlap
from aorta.timing import RoundRecorder, run_forked

GEMM_SHAPE = {"full": (8192, 8192, 8192), "smoke": (64, 64, 64)}
TINY_TOTAL = {"full": 1024, "smoke": 32}  # tiny kernels per round, split over the tiny streams


class HeteroKernels(Workload):
    spec = SPECS["hetero_kernels"]

    def setup(self) -> None:
        self.with_gemms = self.params.get("with_gemms") is not False  # default True
        self.n_gemm = self.n_streams // 2
        self.gemm_streams = list(range(self.n_gemm))
        self.tiny_streams = list(range(self.n_gemm, self.n_streams))
        self.tiny_per_stream = max(8, TINY_TOTAL[self.size] // len(self.tiny_streams))
        m, n, k = self.shape = GEMM_SHAPE[self.size]
        gen = self.generator()
        self.a = [self.randn(m, k, gen=gen) for _ in self.gemm_streams]  # (M, K)
        self.b = [self.randn(k, n, gen=gen, scale=k**-0.5) for _ in self.gemm_streams]  # (K, N)
        self.c = [self.a[0].new_empty(m, n) for _ in self.gemm_streams]  # (M, N)
        dev = self.device.torch_device
        self.base = [torch.full((1,), float(i), device=dev) for i in self.tiny_streams]
        self.x = [torch.empty(1, device=dev) for _ in self.tiny_streams]
        self.hold_cycles = cycles_for_ms(self.device, self._hold_ms())

    def _hold_ms(self) -> float:
        """Long enough for the host to enqueue a whole step behind the hold (measured, with margin)."""
        streams = self.device.streams(self.n_streams)
        rec = RoundRecorder(self.device, streams, record_intervals=False)
        t0 = time.perf_counter()
        run_forked(self.device, streams, lambda: self.step(rec))
        enqueue_ms = (time.perf_counter() - t0) * 1e3
        self.device.synchronize()  # the probe step's work is done before the real rounds
        return 1.5 * enqueue_ms + 0.2

    def launch_hold_cycles(self) -> int:
        # Launches queue behind the hold and start together: the tiny kernels' latency is then the
        # GPU's, not the host's launch rate (~9 us per eager launch).
        return self.hold_cycles

    def step(self, rec) -> None:
        if self.with_gemms:
            for g, i in enumerate(self.gemm_streams):
                with rec.use(i):
                    torch.matmul(self.a[g], self.b[g], out=self.c[g])
        if self.issue_order == "breadth":
            for j in range(self.tiny_per_stream):
                for t, i in enumerate(self.tiny_streams):
                    with rec.use(i):
                        self._tiny(t, j)
        else:
            for t, i in enumerate(self.tiny_streams):
                with rec.use(i):
                    for j in range(self.tiny_per_stream):
                        self._tiny(t, j)

    def expected_work(self) -> WorkSpec:
        # One GEMM on each GEMM stream (none in the alone variant), tiny_per_stream tiny ops on each tiny stream;
        # GEMMs run on the GEMM streams only.
        n_gemm, n_tiny = self.n_streams // 2, self.n_streams - self.n_streams // 2
        per_tiny = max(8, TINY_TOTAL[self.size] // n_tiny)
        streams = (
            {i: StreamWork(gemm=1) for i in range(n_gemm)}
            if self.params.get("with_gemms") is not False
            else {}
        )
        streams.update(dict.fromkeys(range(n_gemm, self.n_streams), StreamWork(other=per_tiny)))
        return WorkSpec(streams, placed=("gemm",))

    def _tiny(self, t: int, j: int) -> None:
        if j == 0:
            self.x[t].copy_(self.base[t])  # restart from a known value: every round computes the same
        else:
            self.x[t].add_(1.0)

    def result(self):
        return {"tiny": self.x, "gemm": self.c if self.with_gemms else []}

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        return []  # everything here needs the stream intervals: see extra_metrics

    def extra_metrics(self, run) -> tuple[list[Metric], dict[str, str]]:
        k = run.iterations_per_round
        tiny_us, gemm_tflops = [], []
        flops = 2.0 * self.shape[0] * self.shape[1] * self.shape[2] * self.n_gemm * k
        for r in run.rounds:
            busy = overlap.per_stream_busy_ms(r.stream_intervals_ms)
            per_stream = [busy.get(i, 0.0) * 1e3 / (self.tiny_per_stream * k) for i in self.tiny_streams]
            tiny_us.append(median(per_stream))
            if self.with_gemms:
                gemm_ms = overlap.length_ms(
                    [iv for i in self.gemm_streams for iv in r.stream_intervals_ms.get(i, ())]
                )
                if gemm_ms > 0:
                    gemm_tflops.append(flops / (gemm_ms * 1e-3) / 1e12)
        out = [Metric("tiny_us_per_kernel", median(tiny_us), "us", False, tuple(tiny_us))]
        if gemm_tflops:
            out.append(Metric("gemm_tflops", median(gemm_tflops), "TFLOP/s", True, tuple(gemm_tflops)))
        unavailable = {} if self.with_gemms else {"gemm_tflops": "alone variant: no GEMMs run"}
        return out, unavailable

    def reference_reads_timed_rounds(self) -> bool:
        # The alone variant's figure (tiny_us_per_kernel_alone) and the convoy slowdown read against it come
        # from its kernel pass: its timed rounds are read by nothing.
        return self.params.get("with_gemms") is not False

    def reference_metrics(self, mine, reference):
        """Against the tiny kernels alone (GEMM streams idle): their µs per kernel, and the convoy slowdown
        (one sample per round of this run, against the alone run's median)."""
        if not self.with_gemms:
            return [], {}
        mixed = mine.get("tiny_us_per_kernel")
        alone = (reference or {}).get("tiny_us_per_kernel")
        if mixed is None or alone is None or alone.value is None:
            reason = (
                "needs the tiny-kernel figure of this run and of the alone run (kernel timestamps: GPU only; "
                "the benchmark passes the alone run as reference=)"
            )
            return [], {"tiny_us_per_kernel_alone": reason, "convoy_slowdown": reason}
        convoy = tuple(u / alone.value for u in mixed.samples)
        return [
            replace(alone, name="tiny_us_per_kernel_alone", source="tiny kernels alone (reference run)"),
            Metric(
                "convoy_slowdown",
                mixed.value / alone.value,
                "x",
                False,
                convoy,
                source="tiny kernels alone (reference run)",
                from_pass=mixed.from_pass,  # one sample per profiled round of this run's kernel pass
            ),
        ], {}

    def info(self) -> dict:
        m, n, k = self.shape
        return {
            "with_gemms": self.with_gemms,
            "hold_cycles": self.hold_cycles,
            "gemm_streams": self.n_gemm,
            "tiny_streams": len(self.tiny_streams),
            "gemm_mnk": [m, n, k],
            "tiny_kernels_per_stream": self.tiny_per_stream,
        }
