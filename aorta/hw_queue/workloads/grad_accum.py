"""grad_accum: micro-batch backward on the compute stream while the previous micro-batch's gradient
buckets are reduced into the accumulators on side streams; samples/s and reduce-compute overlap.

A stack of ``relu(x @ W + b)`` layers trains on M micro-batches before an optimizer step. Micro-batch
``m`` writes its gradients into one of two buffer sets (``m % 2``); once its backward is enqueued,
each bucket (one layer's dW and db) is reduced into the running accumulators on side stream
``1 + l % (n - 1)``: a real reduction (``acc += g``; the first micro-batch copies), here within one
process, as DDP/FSDP do locally before or instead of the network. Micro-batch ``m + 1``'s backward
then runs beside those reductions; before micro-batch ``m + 2`` overwrites a gradient buffer, the
compute stream waits for the event recorded after that bucket's reduction (an event, not the whole
side stream, so it does not also wait for ``m + 1``'s reductions). With one stream everything runs
in order on it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from aorta.hw_queue.parts import relu_mlp
from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec
from aorta.hw_queue.workload import Metric, Workload
from aorta.stats import median
from aorta.timeline.group_overlap import group_overlap

LAYERS = SPECS["grad_accum"].max_streams - 1  # 16: one gradient bucket (and side stream) per layer
# (micro-batches, micro-batch size, hidden). Full bf16: 16 layers x 3 GEMMs of 2*1024*4096^2 FLOP per
# micro-batch, ~10 ms a step on an H100; fp32 (no TF32) uses a smaller hidden and micro-batch.
SIZES = {
    ("full", "bf16"): (4, 1024, 4096),
    ("full", "fp32"): (4, 512, 2048),
    ("smoke", "bf16"): (3, 8, 32),
    ("smoke", "fp32"): (3, 8, 32),
}


class GradAccum(Workload):
    spec = SPECS["grad_accum"]

    def setup(self) -> None:
        shape: tuple[int, int, int] = self.params.get("shape") or SIZES[(self.size, self.dtype_name)]
        self.micro_batches, self.micro_batch, self.hidden = shape
        M, B, D = self.micro_batches, self.micro_batch, self.hidden
        gen = self.generator()
        self.w = [self.randn(D, D, gen=gen, scale=(2.0 / D) ** 0.5) for _ in range(LAYERS)]  # (D, D)
        self.b = [self.randn(D, gen=gen, scale=0.1) for _ in range(LAYERS)]
        self.x = [self.randn(B, D, gen=gen) for _ in range(M)]  # (B, D) per micro-batch
        empty = lambda *s: torch.empty(*s, device=self.device.torch_device, dtype=self.dtype)  # noqa: E731
        self.h = [empty(B, D) for _ in range(LAYERS)]
        self.a = [empty(B, D) for _ in range(LAYERS)]
        self.dh, self.da = empty(B, D), [empty(B, D) for _ in range(LAYERS)]
        self.dw = [[empty(D, D) for _ in range(LAYERS)] for _ in range(2)]  # double-buffered per parity
        self.db = [[empty(D) for _ in range(LAYERS)] for _ in range(2)]
        self.acc_w = [empty(D, D) for _ in range(LAYERS)]
        self.acc_b = [empty(D) for _ in range(LAYERS)]

    def _bucket_stream(self, layer: int) -> int:
        return 1 + layer % (self.n_streams - 1) if self.n_streams > 1 else 0

    def step(self, rec) -> None:
        reduced: dict[tuple[int, int], object] = {}  # (parity, layer) -> event after its reduction
        for m in range(self.micro_batches):
            p = m % 2
            with rec.on(0):
                for layer in range(LAYERS):
                    x = self.x[m] if layer == 0 else self.a[layer - 1]
                    relu_mlp.forward(x, self.w[layer], self.b[layer], self.h[layer], self.a[layer])
            for layer in reversed(range(LAYERS)):
                done = reduced.pop((p, layer), None)
                if done is not None:
                    # micro-batch m-2's reduction of this bucket must have read it before it is overwritten
                    self.device.wait_event(rec.stream(0), done)
                x = self.x[m] if layer == 0 else self.a[layer - 1]
                da = self.a[-1] if layer == LAYERS - 1 else self.da[layer]  # loss 0.5 * ||a_L||^2
                with rec.on(0):
                    relu_mlp.backward(
                        da,
                        x,
                        self.w[layer],
                        self.h[layer],
                        self.dh,
                        self.dw[p][layer],
                        self.db[p][layer],
                        self.da[layer - 1] if layer > 0 else None,
                    )
            for layer in range(LAYERS):
                s = self._bucket_stream(layer)
                rec.wait(s, 0)  # the bucket's gradients were written by the backward just enqueued
                with rec.on(s):
                    if m == 0:
                        self.acc_w[layer].copy_(self.dw[p][layer])
                        self.acc_b[layer].copy_(self.db[p][layer])
                    else:
                        self.acc_w[layer].add_(self.dw[p][layer])
                        self.acc_b[layer].add_(self.db[p][layer])
                reduced[(p, layer)] = self.device.record_event(rec.stream(s))
        for s in range(1, self.n_streams):
            rec.wait(0, s)  # the optimizer step (and the next step's backward) needs every bucket reduced

    def expected_work(self) -> WorkSpec:
        # Micro-batch forward/backward (GEMMs) on stream 0; gradient buckets summed on every side stream.
        return WorkSpec({0: StreamWork(gemm=1), **dict.fromkeys(range(1, self.n_streams), StreamWork(ops=1))})

    def result(self):
        # dw/db (compute -> reduce streams, both parities written every step) are included so that a
        # reduction that reads a bucket before its backward wrote it fails the one-stream check.
        return {"acc_w": self.acc_w, "acc_b": self.acc_b, "dw": self.dw, "db": self.db}

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        samples = self.micro_batches * self.micro_batch
        rate = [samples / (ms * 1e-3) for ms in per_iteration_ms]
        return [Metric("samples_per_s", median(rate), "samples/s", True, tuple(rate))]

    def unavailable(self) -> dict[str, str]:
        if self.n_streams == 1:
            reason = "one stream: the reductions run in order on the compute stream"
            return {"reduce_overlap_ratio": reason, "exposed_reduce_ms": reason}
        return {}

    def extra_metrics(self, run) -> tuple[list[Metric], dict[str, str]]:
        if self.n_streams == 1:
            return [], self.unavailable()
        ov = group_overlap(
            [r.stream_intervals_ms for r in run.rounds],
            [0],
            list(range(1, self.n_streams)),
            run.iterations_per_round,
        )
        if ov["overlap_ratio"] is None:
            reason = "no reduction intervals recorded (graph replay)"
            return [], {"reduce_overlap_ratio": reason, "exposed_reduce_ms": reason}
        return [
            Metric(
                "reduce_overlap_ratio", ov["overlap_ratio"], "ratio", True, tuple(ov["overlap_ratio_samples"])
            ),
            Metric("exposed_reduce_ms", ov["exposed_ms"], "ms", False, tuple(ov["exposed_ms_samples"])),
        ], {}

    def info(self) -> dict:
        elem = torch.finfo(self.dtype).bits // 8
        return {
            "layers": LAYERS,
            "buckets": LAYERS,
            "micro_batches": self.micro_batches,
            "micro_batch": self.micro_batch,
            "hidden": self.hidden,
            "reduce_streams": max(self.n_streams - 1, 0),
            "bucket_bytes": (self.hidden * self.hidden + self.hidden) * elem,
            "reduction": "in-process sum into accumulators in the model dtype (acc += grad), no network",
            "gemm_flops_per_step": self.micro_batches
            * LAYERS
            * relu_mlp.flops(self.micro_batch, self.hidden, self.hidden),
        }

    def size_label(self) -> str:
        M, B, D = self.params.get("shape") or SIZES[(self.size, self.dtype_name)]
        return f"{M} micro-batches of {B}, {LAYERS} layers of hidden {D}, {self.dtype_name}"
