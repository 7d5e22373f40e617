"""activation_ckpt: ``torch.utils.checkpoint`` recomputation on one stream overlapping gradient
computation on others; samples/s.

A batch is split into 16 chunks; chunk ``c`` trains on stream ``c % n``: forward through residual MLP
blocks, each wrapped in ``torch.utils.checkpoint.checkpoint`` (non-reentrant), so only block inputs
are kept and each block's forward is recomputed inside the backward. Forward and backward of a chunk
are issued with its stream current, and autograd runs each backward node on the stream of its
forward op, so the chunk's recomputation and gradient kernels stay on that stream while other
streams' chunks run their recomputation or gradients beside it. Each stream sums its chunks'
parameter gradients into its own buffers; stream 0 then adds the per-stream sums in stream order.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec, every_stream
from aorta.hw_queue.workload import Metric, Workload
from aorta.stats import median

CHUNKS = SPECS["activation_ckpt"].max_streams  # 16: one chunk per stream at most
# (blocks, rows per chunk, d_model, d_ff). Full bf16: 16 chunks x (forward + recompute + 2x backward)
# of 4 blocks of 2 GEMMs of 2*1024*1024*4096 FLOP, ~4.4 TFLOP a step (~8 ms on an H100); fp32 (no
# TF32, ~52 TFLOP/s) does an eighth of that GEMM work.
SIZES = {
    ("full", "bf16"): (4, 1024, 1024, 4096),
    ("full", "fp32"): (4, 512, 512, 2048),
    ("smoke", "bf16"): (2, 4, 16, 32),
    ("smoke", "fp32"): (2, 4, 16, 32),
}


def _block(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """x + gelu(x @ W1) @ W2.  x (R, D), W1 (D, F), W2 (F, D)."""
    return x + F.gelu(x @ w1) @ w2


class ActivationCkpt(Workload):
    spec = SPECS["activation_ckpt"]

    def setup(self) -> None:
        shape: tuple[int, int, int, int] = self.params.get("shape") or SIZES[(self.size, self.dtype_name)]
        self.blocks, self.rows, self.d_model, self.d_ff = shape
        L, R, D, Fd = self.blocks, self.rows, self.d_model, self.d_ff
        gen = self.generator()
        self.x = [self.randn(R, D, gen=gen) for _ in range(CHUNKS)]  # (R, D) per chunk
        self.params_list: list[torch.Tensor] = []
        for _ in range(L):
            self.params_list.append(self.randn(D, Fd, gen=gen, scale=D**-0.5).requires_grad_())
            self.params_list.append(self.randn(Fd, D, gen=gen, scale=0.5 * Fd**-0.5).requires_grad_())
        # Per-stream gradient sums (written on that stream only) and the combined gradients (stream 0).
        self.stream_grads = [
            [torch.empty_like(p, requires_grad=False) for p in self.params_list]
            for _ in range(self.n_streams)
        ]
        self.grads = [torch.empty_like(p, requires_grad=False) for p in self.params_list]

    def _chunk_grads(self, c: int) -> tuple[torch.Tensor, ...]:
        h = self.x[c]
        for i in range(self.blocks):
            w1, w2 = self.params_list[2 * i], self.params_list[2 * i + 1]
            # no dropout, so no RNG state to replay (saving it would read the device generator)
            h = checkpoint(_block, h, w1, w2, use_reentrant=False, preserve_rng_state=False)
        loss = 0.5 * h.float().pow(2).mean()
        return torch.autograd.grad(loss, self.params_list)

    def step(self, rec) -> None:
        n = self.n_streams
        for s in range(1, n):
            rec.wait(s, 0)  # the last step's combine on stream 0 read this stream's gradient sums
        first = [True] * n
        with torch.enable_grad():
            for c in range(CHUNKS):
                s = c % n
                with rec.on(s):
                    grads = self._chunk_grads(c)
                    for acc, g in zip(self.stream_grads[s], grads):
                        if first[s]:
                            acc.copy_(g)
                        else:
                            acc.add_(g)
                first[s] = False
        for s in range(1, n):
            rec.wait(0, s)  # the combine reads every stream's gradient sums
        with rec.on(0):
            for i, out in enumerate(self.grads):
                out.copy_(self.stream_grads[0][i])
                for s in range(1, n):
                    out.add_(self.stream_grads[s][i])

    def expected_work(self) -> WorkSpec:
        # 16 chunks, chunk c forward and backward (GEMMs) on stream c % n: every stream trains a chunk.
        return every_stream(self.n_streams, StreamWork(gemm=1))

    def result(self):
        # stream_grads cross from each stream to stream 0's combine; included so that a combine that
        # reads them early fails the one-stream check (every stream has at least one chunk).
        return {"grads": self.grads, "stream_grads": self.stream_grads}

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        samples = CHUNKS * self.rows
        rate = [samples / (ms * 1e-3) for ms in per_iteration_ms]
        return [Metric("samples_per_s", median(rate), "samples/s", True, tuple(rate))]

    def extra_metrics(self, run) -> tuple[list[Metric], dict[str, str]]:
        return [], {
            "recompute_overlap_ratio": (
                "a chunk's recomputation and gradient kernels run inside one autograd call on one stream, so "
                "events cannot separate them; overlap between chunks shows in effective_concurrency"
            )
        }

    def info(self) -> dict:
        fwd = CHUNKS * self.blocks * 2 * (2.0 * self.rows * self.d_model * self.d_ff)
        return {
            "chunks": CHUNKS,
            "rows_per_chunk": self.rows,
            "blocks": self.blocks,
            "d_model": self.d_model,
            "d_ff": self.d_ff,
            "checkpoint": "torch.utils.checkpoint, non-reentrant, every block",
            "chunks_per_stream_max": -(-CHUNKS // self.n_streams),
            "gemm_flops_per_step": 4 * fwd,
            "recompute_gemm_flops_per_step": fwd,
        }

    def size_label(self) -> str:
        L, R, D, Fd = self.params.get("shape") or SIZES[(self.size, self.dtype_name)]
        return f"{CHUNKS} chunks of {R} rows, {L} checkpointed blocks {D}x{Fd}, {self.dtype_name}"
