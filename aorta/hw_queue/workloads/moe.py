"""moe: a top-k gate that really dispatches tokens to experts, experts on parallel streams, weighted combine.

One MoE layer forward (Mixtral-style SiLU experts, top-2 of 64 experts). Stream 0 runs the gate
(logits, top-k, softmax over the k picked) and the combine; expert ``e`` runs on stream ``e % n``, so
up to 64 streams each get experts. Experts receive uneven token counts: the gate has a fixed bias
that makes some experts popular, as trained routers are.

Dispatch without a host sync: the routing is decided once in ``setup`` from the seeded gate (one
host read there, never in a step), which fixes the per-expert token counts and the sort order of the
(token, slot) assignments. Every step recomputes the gate on the device (its top-k indices are part
of the checked result and equal the setup's, the inputs being fixed) and takes its combine weights
from that step's softmax. Tokens are gathered per expert with ``index_select`` into contiguous
slices of one sorted buffer, each expert's output is scaled by its gate weight in place, and the
combine gathers the k outputs of each token back (``index_select`` by the inverse permutation) and
sums them in a fixed order: deterministic, no atomics.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from aorta.hw_queue.parts.segments import SegmentPlan
from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec, every_stream
from aorta.hw_queue.workload import Metric, Workload
from aorta.stats import median
from aorta.timeline import overlap

EXPERTS = SPECS["moe"].max_streams  # 64: one expert per stream at most
TOP_K = 2
# (tokens, d_model, d_ff). Full: 2 expert GEMMs over 16384 routed rows of 2048 x 4096, ~1-2 ms on an
# H100 in bf16, 2.1 GB of expert weights (fp32: 4.3 GB, ~12 ms without TF32). Smoke: d_model >= the 64
# experts, or some expert may get no token (2048 x 16 left expert 27 empty with CUDA's generator on an H100).
SIZES = {"full": (8192, 2048, 4096), "smoke": (4096, 128, 32)}
GATE_SKEW = (
    0.3  # gate bias from +SKEW (expert 0) to -SKEW (expert 63): uneven loads; setup refuses an empty expert
)


class Moe(Workload):
    spec = SPECS["moe"]

    def setup(self) -> None:
        shape: tuple[int, int, int] = self.params.get("shape") or SIZES[self.size]
        self.tokens, self.d_model, self.d_ff = shape
        T, D, Fd, E, k = self.tokens, self.d_model, self.d_ff, EXPERTS, TOP_K
        dev = self.device.torch_device
        gen = self.generator()
        self.x = self.randn(T, D, gen=gen)  # (T, D)
        self.w_gate = self.randn(D, E, gen=gen, scale=D**-0.5)  # (D, E)
        self.gate_bias = torch.linspace(GATE_SKEW, -GATE_SKEW, E, device=dev).to(self.dtype)
        self.w1 = [self.randn(D, Fd, gen=gen, scale=D**-0.5) for _ in range(E)]  # (D, F) per expert
        self.w2 = [self.randn(Fd, D, gen=gen, scale=Fd**-0.5) for _ in range(E)]  # (F, D) per expert

        # Routing, once: sort the T*k (token, slot) assignments by expert (stable, so fixed order).
        logits = torch.addmm(self.gate_bias, self.x, self.w_gate)
        flat = logits.float().topk(k, dim=-1).indices.reshape(-1).cpu()  # (T*k,) setup-time host read
        order = torch.argsort(flat, stable=True)
        counts = torch.bincount(flat, minlength=E).tolist()
        if min(counts) == 0:
            raise ValueError(
                f"moe: size {self.size} leaves expert {counts.index(0)} without tokens; "
                f"use more tokens (got {T})"
            )
        self.counts = counts
        self.offsets = [sum(counts[:e]) for e in range(E)]
        self.order = order.to(dev)  # sorted position -> flat assignment index (t * k + slot)
        self.token_of_row = (order // k).to(dev)  # sorted position -> token
        self.inverse = torch.argsort(order).to(dev)  # flat assignment -> sorted position

        empty = lambda *s, dtype=self.dtype: torch.empty(*s, device=dev, dtype=dtype)  # noqa: E731
        self.logits = empty(T, E)
        self.top_idx = empty(T, k, dtype=torch.long)
        self.w_sorted = empty(T * k)  # gate weight of each sorted assignment
        self.x_sorted = empty(T * k, D)  # dispatched tokens, expert e in rows [off_e, off_e + count_e)
        self.h_sorted = empty(T * k, Fd)
        self.y_sorted = empty(T * k, D)
        self.gathered = empty(T * k, D)  # y_sorted back in (token, slot) order
        self.out = empty(T, D)

    def _expert_stream(self, e: int) -> int:
        return e % self.n_streams

    def _expert_order(self) -> list[int]:
        if self.issue_order == "depth":  # each stream's experts back to back
            return sorted(range(EXPERTS), key=lambda e: (self._expert_stream(e), e))
        return list(range(EXPERTS))  # breadth: expert e on stream e % n, round-robin

    def step(self, rec) -> None:
        plan: SegmentPlan[str] = SegmentPlan()
        plan.add(0, "gate")
        with rec.on(0, "gate"):
            torch.addmm(self.gate_bias, self.x, self.w_gate, out=self.logits)
            top = self.logits.float().topk(TOP_K, dim=-1)
            self.top_idx.copy_(top.indices)
            weights = torch.softmax(top.values, dim=-1).reshape(-1)  # (T*k,) renormalised over the k picked
            torch.index_select(weights.to(self.dtype), 0, self.order, out=self.w_sorted)
        for s in range(1, self.n_streams):
            rec.wait(s, 0)  # experts read w_sorted (gate) and overwrite buffers the last combine read
        for e in self._expert_order():
            lo, hi = self.offsets[e], self.offsets[e] + self.counts[e]
            with rec.on(self._expert_stream(e), "expert"):
                xs, hs, ys = self.x_sorted[lo:hi], self.h_sorted[lo:hi], self.y_sorted[lo:hi]
                torch.index_select(self.x, 0, self.token_of_row[lo:hi], out=xs)  # (count_e, D)
                torch.mm(xs, self.w1[e], out=hs)  # (count_e, F)
                F.silu(hs, inplace=True)
                torch.mm(hs, self.w2[e], out=ys)  # (count_e, D)
                ys.mul_(self.w_sorted[lo:hi].unsqueeze(1))
            plan.add(self._expert_stream(e), "expert")
        for s in range(1, self.n_streams):
            rec.wait(0, s)  # the combine reads every expert's rows of y_sorted
        plan.add(0, "combine")
        self.plan = plan
        with rec.on(0, "combine"):
            torch.index_select(self.y_sorted, 0, self.inverse, out=self.gathered)
            torch.sum(self.gathered.view(self.tokens, TOP_K, self.d_model), dim=1, out=self.out)  # (T, D)

    def expected_work(self) -> WorkSpec:
        # Gate and combine on stream 0, 64 experts round-robin (every expert has tokens: setup checks it),
        # two GEMMs each: every stream up to 64 runs at least one expert.
        return every_stream(self.n_streams, StreamWork(gemm=2))

    def result(self):
        # w_sorted (gate -> experts) and y_sorted (experts -> combine) cross streams: poisoned by the
        # one-stream check, so a stream that reads them before they are written fails it.
        return {
            "out": self.out,
            "top_idx": self.top_idx,
            "w_sorted": self.w_sorted,
            "y_sorted": self.y_sorted,
        }

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        rate = [self.tokens / (ms * 1e-3) for ms in per_iteration_ms]
        return [Metric("tokens_per_s", median(rate), "tokens/s", True, tuple(rate))]

    def extra_metrics(self, run) -> tuple[list[Metric], dict[str, str]]:
        """Expert concurrency: Σ per-stream busy of expert kernels / span of the expert kernels, per round."""
        samples = []
        for r in run.rounds:
            experts = r.kernels.stream_intervals_ms("expert") if r.kernels is not None else {}
            c = overlap.effective_concurrency(experts)
            if c is not None:
                samples.append(c)
        if not samples:
            return [], {"expert_concurrency": "no expert intervals recorded (graph replay)"}
        return [Metric("expert_concurrency", median(samples), "ratio", True, tuple(samples))], {}

    def info(self) -> dict:
        mean = sum(self.counts) / len(self.counts)
        per_stream = [
            sum(1 for e in range(EXPERTS) if self._expert_stream(e) == s) for s in range(self.n_streams)
        ]
        routed = self.tokens * TOP_K
        return {
            "tokens": self.tokens,
            "d_model": self.d_model,
            "d_ff": self.d_ff,
            "experts": EXPERTS,
            "top_k": TOP_K,
            "tokens_per_expert_min": min(self.counts),
            "tokens_per_expert_max": max(self.counts),
            "tokens_per_expert_mean": mean,
            "load_imbalance_ratio": max(self.counts) / mean,
            "experts_per_stream_min": min(per_stream),
            "experts_per_stream_max": max(per_stream),
            "expert_gemm_flops": 2 * 2.0 * routed * self.d_model * self.d_ff,
            "routing": "fixed at setup from the seeded gate; the gate is recomputed on device every step",
        }

    def size_label(self) -> str:
        T, D, Fd = self.params.get("shape") or SIZES[self.size]
        return f"{T} tokens, d_model {D}, d_ff {Fd}, {EXPERTS} experts top-{TOP_K}, {self.dtype_name}"
