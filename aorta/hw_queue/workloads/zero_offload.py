"""zero_offload: ZeRO-Offload's traffic beside compute: parameter prefetch in, gradient offload out.

The master weights and gradients live in page-locked host memory (ZeRO-Offload keeps the optimizer on
the CPU). One training step over ``L`` linear+ReLU layers, (T, D) activations:

- forward:  layer ``l`` waits for its weight, fetched host -> device on the prefetch streams in chunks
            (all layers are requested at once, so later layers arrive while earlier ones compute);
- backward: layer ``l``'s weight gradient (D, D) is computed, then copied device -> host in chunks on
            the offload streams while layer ``l - 1``'s backward runs.

Stream roles: stream 0 computes; the others alternate prefetch (odd) and offload (even); with two
streams both copy directions share stream 1, with one stream everything is serial. Each layer's
weight and gradient are split into as many chunks as their role has streams, so every stream copies.
Cross-step order: the next step's prefetch into a layer's weight waits until this step's backward has
read it, and the next backward into a gradient buffer waits until its offload has finished.

Copy GB/s = bytes moved / copy busy time (union of the copy intervals), and the share of copy time
hidden behind compute.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from aorta.hw_queue.parts.stage_intervals import (
    CPU_SERIAL_REASON,
    StageLog,
    busy_ms_per_round,
    label_overlap,
    rate_samples,
)
from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec
from aorta.hw_queue.workload import Metric, Workload
from aorta.stats import median

# tokens T, width D, layers L. Full: a (2048, 2048) bf16 layer is 8 MiB each way (~0.2 ms over PCIe
# Gen5), its forward on 8192 tokens ~0.1 ms and backward twice that: copies dominate, as they do in
# ZeRO-Offload; 8 layers move 128 MiB per step.
SIZES = {"full": dict(T=8192, D=2048, L=8), "smoke": dict(T=16, D=32, L=3)}


def copy_roles(n: int) -> dict[str, list[int]]:
    """Stream indices per role (see the module docstring)."""
    if n == 1:
        return {"compute": [0], "prefetch": [0], "offload": [0]}
    if n == 2:
        return {"compute": [0], "prefetch": [1], "offload": [1]}
    return {"compute": [0], "prefetch": list(range(1, n, 2)), "offload": list(range(2, n, 2))}


class ZeroOffload(Workload):
    spec = SPECS["zero_offload"]

    def setup(self) -> None:
        cfg = self.sized(SIZES)
        self.cfg = cfg
        T, D, L = cfg["T"], cfg["D"], cfg["L"]
        dev = self.device.torch_device
        gen = self.generator()
        self.roles = copy_roles(self.n_streams)
        n_pre, n_off = len(self.roles["prefetch"]), len(self.roles["offload"])
        if D * D < max(n_pre, n_off):
            raise ValueError(
                f"zero_offload: {D}x{D} weights cannot be split over {max(n_pre, n_off)} streams"
            )
        # Host side (page-locked on a GPU): the weights the optimizer updated, and the gradients it will read.
        self.host_w = [
            self.device.host_tensor(self.randn(D, D, gen=gen, scale=D**-0.5).cpu()) for _ in range(L)
        ]
        self.host_g = [self.device.host_tensor(torch.zeros(D, D, dtype=self.dtype)) for _ in range(L)]
        self.x = self.randn(T, D, gen=gen)  # (T, D) input micro-batch
        self.grad_out = self.randn(T, D, gen=gen, scale=T**-0.5)  # (T, D) dLoss/dOutput
        self.w = [torch.empty(D, D, dtype=self.dtype, device=dev) for _ in range(L)]
        self.g = [torch.empty(D, D, dtype=self.dtype, device=dev) for _ in range(L)]
        self.h = [torch.empty(T, D, dtype=self.dtype, device=dev) for _ in range(L)]  # layer outputs
        self.mask = [torch.empty(T, D, dtype=torch.bool, device=dev) for _ in range(L)]  # ReLU active
        self.w_chunks = [
            (h.view(-1).tensor_split(n_pre), d.view(-1).tensor_split(n_pre))
            for h, d in zip(self.host_w, self.w)
        ]
        self.g_chunks = [
            (d.view(-1).tensor_split(n_off), h.view(-1).tensor_split(n_off))
            for d, h in zip(self.g, self.host_g)
        ]
        self.w_free: list[object | None] = [None] * L  # backward of layer l (last reader of w[l]) done
        self.g_free: list[list] = [[] for _ in range(L)]  # offload of g[l] (its reader) done, per chunk
        self.log = StageLog()

    def _prefetch(self, rec, layer: int) -> list:
        done = []
        for c, (src, dst) in enumerate(zip(*self.w_chunks[layer])):
            i = self.roles["prefetch"][c]
            if self.w_free[layer] is not None:
                self.device.wait_event(rec.stream(i), self.w_free[layer])  # last step's backward read w[l]
            with self.log.on(rec, i, "prefetch"):
                dst.copy_(src, non_blocking=True)  # pinned host -> device
            done.append(self.device.record_event(rec.stream(i)))
        return done

    def _offload(self, rec, layer: int, ready) -> None:
        done = []
        for c, (src, dst) in enumerate(zip(*self.g_chunks[layer])):
            i = self.roles["offload"][c]
            self.device.wait_event(rec.stream(i), ready)  # the gradient has been computed
            with self.log.on(rec, i, "offload"):
                dst.copy_(src, non_blocking=True)  # device -> pinned host
            done.append(self.device.record_event(rec.stream(i)))
        self.g_free[layer] = done

    def step(self, rec) -> None:
        self.log.begin_step()
        L = self.cfg["L"]
        m = self.roles["compute"][0]
        compute = rec.stream(m)
        fetched = [self._prefetch(rec, layer) for layer in range(L)]  # all requests up front
        h = self.x
        for layer in range(L):  # forward
            for ev in fetched[layer]:
                self.device.wait_event(compute, ev)  # the layer's weight has arrived
            with self.log.on(rec, m, "forward"):
                pre = h @ self.w[layer]  # (T, D)
                self.mask[layer].copy_(pre > 0)
                self.h[layer].copy_(torch.relu(pre))
            h = self.h[layer]
        grad = self.grad_out  # (T, D)
        for layer in reversed(range(L)):  # backward
            for ev in self.g_free[layer]:
                self.device.wait_event(compute, ev)  # last step's offload of g[l] has read it
            inp = self.x if layer == 0 else self.h[layer - 1]
            with self.log.on(rec, m, "backward"):
                grad = grad * self.mask[layer]  # through the ReLU
                torch.matmul(inp.T, grad, out=self.g[layer])  # dW = x^T g: (D, D)
                if layer > 0:  # the input needs no gradient
                    grad = grad @ self.w[layer].T  # dx: (T, D)
            self.w_free[layer] = self.device.record_event(compute)
            self._offload(rec, layer, self.w_free[layer])

    def expected_work(self) -> WorkSpec:
        # Compute on stream 0 (GEMMs), prefetch on odd streams, offload on even ones: every stream copies or computes.
        return WorkSpec({0: StreamWork(gemm=1), **dict.fromkeys(range(1, self.n_streams), StreamWork(ops=1))})

    def result(self):
        return self.host_g

    # ------------------------------------------------------------------ figures
    def copy_bytes_per_iteration(self) -> int:
        D, L = self.cfg["D"], self.cfg["L"]
        return 2 * L * D * D * self.host_w[0].element_size()  # every weight in, every gradient out

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        tokens = [self.cfg["T"] / (ms * 1e-3) for ms in per_iteration_ms]
        return [Metric("tokens_per_s", median(tokens), "tokens/s", True, tuple(tokens))]

    def extra_metrics(self, run) -> tuple[list[Metric], dict[str, str]]:
        labelled = [r.label_intervals_ms for r in run.rounds]
        k = run.iterations_per_round
        half = self.copy_bytes_per_iteration() * k / 2
        out: list[Metric] = []
        for name, labels, nbytes in (
            ("copy", ["prefetch", "offload"], 2 * half),
            ("h2d", ["prefetch"], half),
            ("d2h", ["offload"], half),
        ):
            busy = busy_ms_per_round(labelled, labels)
            gbps = rate_samples([nbytes] * len(busy), busy, 1e-9)
            if gbps:
                out.append(Metric(f"{name}_gbps", median(gbps), "GB/s", True, tuple(gbps)))
        compute_busy = [b / k for b in busy_ms_per_round(labelled, ["forward", "backward"])]
        out.append(Metric("compute_busy_ms", median(compute_busy), "ms", False, tuple(compute_busy)))
        if not self.device.is_gpu:
            return out, {"copy_compute_overlap_ratio": CPU_SERIAL_REASON}
        ov = label_overlap(labelled, ["forward", "backward"], ["prefetch", "offload"])
        out.append(
            Metric(
                "copy_compute_overlap_ratio",
                ov["overlap_ratio"],
                "ratio",
                True,
                tuple(ov["overlap_ratio_samples"]),
            )
        )
        return out, {}

    def info(self) -> dict:
        c = self.cfg
        return {
            "tokens": c["T"],
            "width": c["D"],
            "layers": c["L"],
            "pinned_host": self.device.is_gpu,
            "copy_bytes_per_iteration": self.copy_bytes_per_iteration(),
            "role_streams": self.roles,
            "copy_gbps": "bytes moved (weights in + gradients out) / union of copy intervals",
            "copy_compute_overlap": "share of copy time during which forward/backward ran",
        }

    def size_label(self) -> str:
        c = getattr(self, "cfg", SIZES[self.size])
        return f"{c['L']} layers {c['D']}x{c['D']}, {c['T']} tokens {self.dtype_name}"
