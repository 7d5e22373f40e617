"""torch_compile: a torch.compile'd transformer MLP block run as regions on several streams.

``R`` regions (micro-batches of ``B`` rows) each call the same compiled block
``x + W2 gelu(W1 layer_norm(x))`` on their own input; region ``r`` runs on stream ``r % n``. The
compiled code launches on whatever stream is current, so the regions overlap as eager ops would.

Compilation happens in ``setup``: the first call (tracing + compilation + one run) is timed with the
host clock and reported as ``compile_s``, apart from the steady-state device time the timing loop
measures afterwards. Dynamo's in-memory cache is reset first so each stream count compiles afresh;
Inductor's on-disk caches (FX graph, Triton kernels) may still be warm, which ``info`` records. The
compiled output is checked against the eager block before anything is timed.

Backend: ``inductor`` at full size; ``aot_eager`` (AOTAutograd tracing, eager kernels, no code
generation) at smoke size, because Inductor needs a C++ compiler and ~20 s on a CPU; ``backend=``
overrides either. Where compilation fails (no compiler, unsupported Python), the workload is
unavailable and the benchmark skips with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec, every_stream
from aorta.hw_queue.workload import Metric, Workload, WorkloadCheckError, WorkloadUnavailable
from aorta.stats import median

# regions R, rows per region B, width D. Full: each region's two GEMMs are 1024x2048x8192
# (~69 GFLOP, ~0.1 ms on an H100): 16 regions fill a round of ~2 ms.
SIZES = {"full": dict(R=16, B=1024, D=2048), "smoke": dict(R=4, B=4, D=16)}
DEFAULT_BACKEND = {"full": "inductor", "smoke": "aot_eager"}
EAGER_TOLERANCE = {torch.bfloat16: (5e-2, 5e-2), torch.float16: (5e-2, 5e-2), torch.float32: (1e-3, 1e-3)}


def mlp_block(x, ln_w, w1, w2):
    """Pre-norm transformer MLP with residual: (B, D) -> (B, D)."""
    y = F.layer_norm(x, (x.shape[-1],), weight=ln_w)
    return x + F.gelu(y @ w1) @ w2


class TorchCompile(Workload):
    spec = SPECS["torch_compile"]

    def setup(self) -> None:
        cfg = self.sized(SIZES)
        cfg["R"] = max(cfg["R"], self.n_streams)  # one region per stream at least
        self.cfg = cfg
        self.backend = self.params.get("backend") or DEFAULT_BACKEND[self.size]
        R, B, D = cfg["R"], cfg["B"], cfg["D"]
        gen = self.generator()
        self.x = [self.randn(B, D, gen=gen) for _ in range(R)]  # (B, D) per region
        self.ln_w = 1.0 + self.randn(D, gen=gen, scale=0.1)
        self.w1 = self.randn(D, 4 * D, gen=gen, scale=D**-0.5)
        self.w2 = self.randn(4 * D, D, gen=gen, scale=(4 * D) ** -0.5)
        self.out = self.randn(R, B, D, gen=gen).zero_()  # (R, B, D)
        self.compiled, self.compile_s = self._compile()
        self._check_against_eager()

    def _compile(self):
        try:
            import torch._dynamo

            torch._dynamo.reset()  # compile afresh for this stream count, not from the last test's cache
            compiled = torch.compile(mlp_block, backend=self.backend, dynamic=False)
            t0 = time.perf_counter()
            compiled(self.x[0], self.ln_w, self.w1, self.w2)
            self.device.synchronize()  # compile_s covers the first call's device work too
            return compiled, time.perf_counter() - t0
        except Exception as exc:
            if self.device.is_out_of_memory(exc):
                raise
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            raise WorkloadUnavailable(
                f"torch.compile(backend={self.backend!r}) unavailable here: {type(exc).__name__}: {first}"
            ) from exc

    def _check_against_eager(self) -> None:
        got = self.compiled(self.x[0], self.ln_w, self.w1, self.w2).float()
        want = mlp_block(self.x[0], self.ln_w, self.w1, self.w2).float()
        rtol, atol = EAGER_TOLERANCE[self.dtype]
        if not torch.allclose(got, want, rtol=rtol, atol=atol):
            raise WorkloadCheckError(
                f"torch.compile({self.backend}) output differs from eager: max abs diff "
                f"{(got - want).abs().max().item():.3g} (rtol={rtol}, atol={atol})"
            )

    def step(self, rec) -> None:
        R, n = self.cfg["R"], self.n_streams
        order = [r for i in range(n) for r in range(i, R, n)] if self.issue_order == "depth" else range(R)
        for r in order:
            with rec.on(r % n):
                self.out[r].copy_(self.compiled(self.x[r], self.ln_w, self.w1, self.w2))

    def expected_work(self) -> WorkSpec:
        # Regions r on stream r % n (at least one per stream), each the compiled block: fused kernels, so any op.
        return every_stream(self.n_streams, StreamWork(ops=1))

    def result(self):
        return self.out

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        samples = self.cfg["R"] * self.cfg["B"]
        rate = [samples / (ms * 1e-3) for ms in per_iteration_ms]
        return [
            Metric("samples_per_s", median(rate), "samples/s", True, tuple(rate)),
            Metric("steady_state_ms", median(per_iteration_ms), "ms", False, tuple(per_iteration_ms)),
            Metric(
                "compile_s",
                self.compile_s,
                "s",
                False,
                source="host clock: torch.compile's first call, once per run (one value per run: judged as the "
                "run's figure against the between-run noise)",
            ),
        ]

    def info(self) -> dict:
        c = self.cfg
        info = {
            "regions": c["R"],
            "rows_per_region": c["B"],
            "width": c["D"],
            "backend": self.backend,
            "compile_s": self.compile_s,
            "compile_s_means": "host time of the first call: tracing + compilation + one run",
            "dynamo_cache": "reset before compiling",
            "stream_of_region": "region r on stream r % n",
        }
        if self.backend != "inductor":
            info["backend_reason"] = (
                "smoke size: aot_eager traces and partitions the graph but runs eager "
                "kernels (Inductor needs a C++ compiler and ~20 s per compile on a CPU)"
            )
        try:
            import torch._inductor.config as inductor_config

            info["inductor_fx_graph_cache"] = bool(inductor_config.fx_graph_cache)
        except Exception:  # an old torch without the flag: nothing to record
            pass
        return info

    def size_label(self) -> str:
        c = getattr(self, "cfg", SIZES[self.size])
        return f"{c['R']} regions x {c['B']} rows x {c['D']} {self.dtype_name}"
