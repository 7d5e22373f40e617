"""speculative_decode: a draft model generates K tokens with its KV cache while the target model verifies
the previous window; acceptance from the actual tokens; tokens/s and per-token p50/p99.

Self-speculative (LayerSkip-style) decoding: the draft is the target's first layer plus the shared
head, the target has all layers. Sequences come in groups; group ``g`` drafts on stream ``2g % n`` and
verifies on stream ``(2g + 1) % n``. Per group, a step runs W windows: the draft decodes K tokens one
at a time (each reads and extends the draft KV cache), and the target verifies window ``w - 1`` in one
forward over K positions (extending its own KV cache, causal mask inside the window) while the draft
produces window ``w``. A window's accepted count is the length of the run of leading positions where
the target's argmax equals the draft's token; it emits accepted + 1 tokens (the target supplies the
next one), as in standard speculative decoding.

No host sync in a step means no branching on acceptance: the draft never rolls back, so after a
rejection the next window is verified against the draft's own continuation. Acceptance is therefore
a measured property of these two models on these tokens, read from the device after timing.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from aorta import stats
from aorta.hw_queue.parts import decoder
from aorta.hw_queue.parts.segments import SegmentPlan
from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec, every_stream
from aorta.hw_queue.workload import Metric, Workload
from aorta.record.metric import percentile_metrics

GROUPS = (
    SPECS["speculative_decode"].max_streams // 2
)  # 8 independent sequence groups: 2 streams each, so up to 16 streams
# vocab, d_model, d_ff, heads, target layers, draft layers, K, windows, sequences per group, prompt
SIZES = {
    "full": dict(
        vocab=32000,
        d_model=1024,
        d_ff=4096,
        heads=8,
        layers=4,
        draft_layers=1,
        k=4,
        windows=4,
        batch=8,
        prompt=128,
    ),
    "smoke": dict(
        vocab=64, d_model=32, d_ff=64, heads=2, layers=2, draft_layers=1, k=3, windows=2, batch=2, prompt=6
    ),
}


class SpeculativeDecode(Workload):
    spec = SPECS["speculative_decode"]

    def setup(self) -> None:
        cfg = self.sized(SIZES)
        self.cfg = cfg
        dev = self.device.torch_device
        gen = self.generator()
        self.model = decoder.make_decoder(
            self,
            gen,
            vocab=cfg["vocab"],
            d_model=cfg["d_model"],
            d_ff=cfg["d_ff"],
            layers=cfg["layers"],
            heads=cfg["heads"],
            branch_scale=0.25,
        )
        B, P, K, W, D = cfg["batch"], cfg["prompt"], cfg["k"], cfg["windows"], cfg["d_model"]
        self.total = P + W * K  # positions held per sequence
        cache = lambda: torch.zeros(B, self.total, D, device=dev, dtype=self.dtype)  # noqa: E731
        self.tokens, self.draft_kv, self.target_kv, self.target_pred, self.accepted = [], [], [], [], []
        for _ in range(GROUPS):
            tok = torch.empty(B, self.total, device=dev, dtype=torch.long)
            tok[:, :P] = torch.randint(0, cfg["vocab"], (B, P), generator=gen, device=dev)
            self.tokens.append(tok)
            self.draft_kv.append([(cache(), cache()) for _ in range(cfg["draft_layers"])])
            self.target_kv.append([(cache(), cache()) for _ in range(cfg["layers"])])
            self.target_pred.append(torch.empty(B, W * K, device=dev, dtype=torch.long))
            self.accepted.append(torch.empty(B, W, device=dev, dtype=torch.long))
        # Prefill (once, untimed): prompt positions 0..P-2 into both caches; position P-1 is the first input.
        for g in range(GROUPS):
            self._forward(g, self.target_kv[g], 0, P - 1, self._causal_mask(0, P - 1))
            self._forward(g, self.draft_kv[g], 0, P - 1, self._causal_mask(0, P - 1))
        # Verify masks: window w reads positions 0 .. p0+K-1; query i sees keys j <= p0 + i.
        self.masks = [self._causal_mask(self._p0(w), K) for w in range(W)]
        self.plan: SegmentPlan[tuple[str, int, int]] = SegmentPlan()
        self._host_accepted: list[torch.Tensor] | None = None

    def _p0(self, w: int) -> int:
        return self.cfg["prompt"] - 1 + w * self.cfg["k"]

    def _causal_mask(self, start: int, length: int) -> torch.Tensor:
        """(1, 1, length, start + length) bool: query i (position start + i) sees keys j <= start + i."""
        q = torch.arange(length, device=self.device.torch_device).unsqueeze(1) + start
        kpos = torch.arange(start + length, device=self.device.torch_device).unsqueeze(0)
        return (kpos <= q).view(1, 1, length, start + length)

    def _forward(self, g: int, kv: list, start: int, length: int, mask) -> torch.Tensor:
        """Run the layers that own ``kv`` over positions [start, start + length); returns x (B, T, D)."""
        x = decoder.embed(self.model, self.tokens[g][:, start : start + length])  # (B, T, D)
        end = start + length
        for (kc, vc), lw in zip(kv, self.model.layers):

            def write(k, v, kc=kc, vc=vc):
                kc[:, start:end].copy_(k)
                vc[:, start:end].copy_(v)

            x = decoder.layer(x, lw, self.model.heads, write, kc[:, :end], vc[:, :end], mask)
        return x

    def _draft_window(self, g: int, w: int) -> None:
        p0, K = self._p0(w), self.cfg["k"]
        for p in range(p0, p0 + K):  # one token at a time; mask None: a new token sees every cached one
            x = self._forward(g, self.draft_kv[g], p, 1, None)
            self.tokens[g][:, p + 1].copy_(decoder.next_tokens(x, self.model)[:, 0])

    def _verify_window(self, g: int, w: int) -> None:
        p0, K = self._p0(w), self.cfg["k"]
        x = self._forward(g, self.target_kv[g], p0, K, self.masks[w])
        pred = decoder.next_tokens(x, self.model)  # (B, K): target's token for positions p0+1 .. p0+K
        self.target_pred[g][:, w * K : (w + 1) * K].copy_(pred)
        match = pred == self.tokens[g][:, p0 + 1 : p0 + K + 1]
        torch.sum(torch.cumprod(match.long(), dim=1), dim=1, out=self.accepted[g][:, w])

    def _streams(self, g: int) -> tuple[int, int]:
        n = self.n_streams
        return (2 * g) % n, (2 * g + 1) % n

    def step(self, rec) -> None:
        plan: SegmentPlan[tuple[str, int, int]] = SegmentPlan()
        W = self.cfg["windows"]
        for g in range(GROUPS):
            d, t = self._streams(g)
            rec.wait(d, t)  # the draft overwrites tokens the last step's verifications read
        for w in range(W + 1):
            # Verifications of window w-1 are issued before the drafts of window w: a stream wait taken
            # after them would also wait for window w's drafts and serialize the pipeline.
            if w >= 1:
                for g in range(GROUPS):
                    d, t = self._streams(g)
                    rec.wait(t, d)  # verify reads the draft's tokens of window w-1
                    with rec.on(t):
                        self._verify_window(g, w - 1)
                    plan.add(t, ("verify", g, w - 1))
            if w < W:
                for g in range(GROUPS):
                    d, _ = self._streams(g)
                    with rec.on(d):
                        self._draft_window(g, w)
                    plan.add(d, ("draft", g, w))
        self.plan = plan

    def expected_work(self) -> WorkSpec:
        # Group g drafts on stream 2g % n and verifies on (2g + 1) % n: every stream decodes (any op: a decode
        # step's small matmuls may run as GEMV kernels).
        return every_stream(self.n_streams, StreamWork(ops=1))

    def result(self):
        P = self.cfg["prompt"]
        return {
            "draft_tokens": [t[:, P:] for t in self.tokens],
            "target_pred": self.target_pred,
            "accepted": self.accepted,
        }

    # -- figures -------------------------------------------------------------------------------------
    def _accepted_host(self) -> list[torch.Tensor]:
        """Accepted counts per group (B, W), read after timing (every step computes the same ones)."""
        if self._host_accepted is None:
            self._host_accepted = [a.cpu() for a in self.accepted]
        return self._host_accepted

    def emitted_tokens_per_step(self) -> int:
        return int(sum(int(a.sum()) + a.numel() for a in self._accepted_host()))

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        emitted = self.emitted_tokens_per_step()
        rate = [emitted / (ms * 1e-3) for ms in per_iteration_ms]
        return [Metric("tokens_per_s", stats.median(rate), "tokens/s", True, tuple(rate))]

    def per_token_ms(self, intervals) -> list[float]:
        """Per-token latency samples of one round: window time / tokens it emitted, per sequence.

        A window's time runs from the end of the group's previous verification (or the start of its
        first draft segment) to the end of its verification.
        """
        spans: dict[tuple, list[float]] = {}
        for it, (kind, g, w), (start, end) in self.plan.label_intervals(intervals):
            spans[(it, kind, g, w)] = [start, end]
        out: list[float] = []
        acc = self._accepted_host()
        iterations = {key[0] for key in spans}
        for it in iterations:
            for g in range(GROUPS):
                prev = spans[(it, "draft", g, 0)][0]
                for w in range(self.cfg["windows"]):
                    end = spans[(it, "verify", g, w)][1]
                    out.extend((end - prev) / (int(a) + 1) for a in acc[g][:, w])
                    prev = end
        return out

    def extra_metrics(self, run) -> tuple[list[Metric], dict[str, str]]:
        return percentile_metrics(
            "per_token", [self.per_token_ms(r.block_spans_ms) for r in run.rounds], (50, 99)
        )

    def info(self) -> dict:
        c = self.cfg
        drafted = GROUPS * c["batch"] * c["windows"] * c["k"]
        out = {
            **c,
            "groups": GROUPS,
            "drafted_tokens_per_step": drafted,
            "draft": f"first {c['draft_layers']} of {c['layers']} target layers + shared head",
            "rollback": "none (no host sync in a step); acceptance measured on the draft's continuation",
        }
        if self._host_accepted is not None:
            acc = sum(int(a.sum()) for a in self._host_accepted)
            out.update(
                accepted_tokens_per_step=acc,
                acceptance_rate=acc / drafted,
                emitted_tokens_per_step=self.emitted_tokens_per_step(),
            )
        return out

    def size_label(self) -> str:
        c = SIZES[self.size]
        return (
            f"{GROUPS} groups x {c['batch']} sequences, d_model {c['d_model']}, {c['layers']} layers, "
            f"vocab {c['vocab']}, K={c['k']}, {self.dtype_name}"
        )
