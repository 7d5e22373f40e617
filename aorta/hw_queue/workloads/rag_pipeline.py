"""rag_pipeline: embed -> retrieve -> rerank -> generate, pipelined across query batches (queries/s).

Each step serves ``Q`` query batches of ``B`` queries. Stage ``s`` of batch ``q`` runs on stream
``(q + s) % n`` and waits (event) for stage ``s - 1`` of the same batch, so with breadth-first
(wavefront) issue batch ``q``'s embedding runs while batch ``q - 3``'s decoder steps run. The four
stages:

- embed:    token embeddings (B, T, D) -> 2-layer MLP -> mean over T -> L2-normalised query (B, D)
- retrieve: similarity with the document matrix (B, D) @ (D, N) -> top-k documents (B, k)
- rerank:   MLP over [query, document] pairs (B, k, 2D) -> score -> top-r -> softmax-weighted context (B, D)
- generate: S greedy decoder steps from the context: h = tanh((E[tok] + h) @ Wg), tok = argmax(h @ Wout)

Every tensor passed between stages lives in a per-batch buffer made in ``setup``; the next step's
embed of batch ``q`` waits for this step's last stage of ``q`` (write-after-read on those buffers).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from aorta.hw_queue.parts.stage_intervals import (
    CPU_SERIAL_REASON,
    StageLog,
    busy_ms_per_round,
    label_overlap,
)
from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec, every_stream
from aorta.hw_queue.workload import Metric, Workload
from aorta.stats import median

STAGES = ("embed", "retrieve", "rerank", "generate")

# batches Q, batch B, tokens T, width D, documents N, vocab V, top-k, top-r, decoder steps S.
# Full: retrieval reads a 128 MiB bf16 document matrix (~50 us on an H100), decode is a chain of
# small launch-bound kernels, a batch is a few hundred us: 16 batches are a few ms at one stream.
SIZES = {
    # B=32 queries per batch: on an H100 at one stream GPU busy 0.904 (0.897 at B=8; scripts/gpu/size_probe.py)
    "full": dict(Q=16, B=32, T=128, D=1024, N=65536, V=32000, k=32, r=8, S=8),
    "smoke": dict(Q=4, B=2, T=8, D=32, N=256, V=64, k=8, r=4, S=3),
}


class RagPipeline(Workload):
    spec = SPECS["rag_pipeline"]

    def setup(self) -> None:
        cfg = self.sized(SIZES)
        cfg["Q"] = max(cfg["Q"], self.n_streams)  # at least one batch per stream: every stream gets work
        self.cfg = cfg
        Q, B, T, D, N, V, S = (cfg[x] for x in ("Q", "B", "T", "D", "N", "V", "S"))
        dev = self.device.torch_device
        gen = self.generator()
        self.tokens = torch.randint(0, V, (Q, B, T), generator=gen, device=dev)  # (Q, B, T)
        self.tok_emb = self.randn(V, D, gen=gen)  # (V, D)
        self.we1 = self.randn(D, 4 * D, gen=gen, scale=D**-0.5)
        self.we2 = self.randn(4 * D, D, gen=gen, scale=(4 * D) ** -0.5)
        self.docs = F.normalize(self.randn(N, D, gen=gen).float(), dim=-1).to(self.dtype)  # (N, D)
        self.docs_t = self.docs.T.contiguous()  # (D, N): a plain GEMM layout (transposed bf16 is slow on CPU)
        self.wr1 = self.randn(2 * D, D, gen=gen, scale=(2 * D) ** -0.5)
        self.wr2 = self.randn(D, 1, gen=gen, scale=D**-0.5)
        self.wg = self.randn(D, D, gen=gen, scale=D**-0.5)
        self.wout = self.randn(D, V, gen=gen, scale=D**-0.5)
        self.bos = torch.zeros(B, dtype=torch.long, device=dev)
        # Buffers passed between stages, one slice per batch.
        self.query = self.randn(Q, B, D, gen=gen).zero_()  # (Q, B, D)
        self.cand = torch.zeros(Q, B, cfg["k"], dtype=torch.long, device=dev)  # (Q, B, k) document ids
        self.context = self.query.clone()  # (Q, B, D)
        self.out_tokens = torch.zeros(Q, B, S, dtype=torch.long, device=dev)  # (Q, B, S)
        self.out_hidden = self.query.clone()  # (Q, B, D)
        self.done: list[object | None] = [None] * Q  # event after each batch's last stage, previous step
        self.log = StageLog()

    # ------------------------------------------------------------------ stages
    def _embed(self, q: int) -> None:
        x = self.tok_emb[self.tokens[q]]  # (B, T, D)
        h = F.gelu(x @ self.we1) @ self.we2  # (B, T, D)
        self.query[q].copy_(F.normalize(h.float().mean(dim=1), dim=-1))

    def _retrieve(self, q: int) -> None:
        scores = self.query[q] @ self.docs_t  # (B, N)
        self.cand[q].copy_(scores.topk(self.cfg["k"], dim=-1).indices)

    def _rerank(self, q: int) -> None:
        B, k, D = self.cfg["B"], self.cfg["k"], self.cfg["D"]
        cand = self.docs[self.cand[q]]  # (B, k, D)
        pairs = torch.cat([self.query[q].unsqueeze(1).expand(B, k, D), cand], dim=-1)  # (B, k, 2D)
        scores = (F.gelu(pairs @ self.wr1) @ self.wr2).squeeze(-1)  # (B, k)
        top = scores.float().topk(self.cfg["r"], dim=-1)  # (B, r)
        weights = torch.softmax(top.values, dim=-1).to(self.dtype)  # (B, r)
        picked = cand.gather(1, top.indices.unsqueeze(-1).expand(-1, -1, D))  # (B, r, D)
        self.context[q].copy_((weights.unsqueeze(-1) * picked).sum(dim=1))

    def _generate(self, q: int) -> None:
        h = self.context[q]  # (B, D)
        tok = self.bos
        for t in range(self.cfg["S"]):
            h = torch.tanh((self.tok_emb[tok] + h) @ self.wg)  # (B, D)
            tok = (h @ self.wout).argmax(dim=-1)  # (B,) greedy
            self.out_tokens[q, :, t].copy_(tok)
        self.out_hidden[q].copy_(h)

    # ------------------------------------------------------------------ step
    def _issue_order(self) -> list[tuple[int, int]]:
        """(batch, stage) pairs: a wavefront (breadth) or batch after batch (depth)."""
        Q, n_stages = self.cfg["Q"], len(STAGES)
        if self.issue_order == "depth":
            return [(q, s) for q in range(Q) for s in range(n_stages)]
        return [(t - s, s) for t in range(Q + n_stages - 1) for s in range(n_stages) if 0 <= t - s < Q]

    def step(self, rec) -> None:
        self.log.begin_step()
        run = (self._embed, self._retrieve, self._rerank, self._generate)
        prev: dict[int, object] = {}
        for q, s in self._issue_order():
            i = (q + s) % self.n_streams
            stream = rec.stream(i)
            # Waits come before rec.on so the stream's interval holds work, not waiting.
            if s == 0 and self.done[q] is not None:
                # This step overwrites batch q's buffers: the last step's stages must have read them.
                self.device.wait_event(stream, self.done[q])
            elif s > 0:
                self.device.wait_event(stream, prev[q])  # stage s reads what stage s - 1 wrote
            with self.log.on(rec, i, STAGES[s]):
                run[s](q)
            prev[q] = self.device.record_event(stream)
            if s == len(STAGES) - 1:
                self.done[q] = prev[q]

    def expected_work(self) -> WorkSpec:
        # Stage s of batch q on stream (q + s) % n: every stream runs stages.
        return every_stream(self.n_streams, StreamWork(ops=1))

    def result(self):
        return {"tokens": self.out_tokens, "hidden": self.out_hidden, "candidates": self.cand}

    # ------------------------------------------------------------------ figures
    def queries_per_iteration(self) -> int:
        return self.cfg["Q"] * self.cfg["B"]

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        qps = [self.queries_per_iteration() / (ms * 1e-3) for ms in per_iteration_ms]
        return [Metric("queries_per_s", median(qps), "queries/s", True, tuple(qps))]

    def extra_metrics(self, run) -> tuple[list[Metric], dict[str, str]]:
        labelled = [r.label_intervals_ms for r in run.rounds]
        out: list[Metric] = []
        k = run.iterations_per_round
        for stage in STAGES:
            busy = [b / k for b in busy_ms_per_round(labelled, [stage])]
            out.append(Metric(f"{stage}_busy_ms", median(busy), "ms", False, tuple(busy)))
        if not self.device.is_gpu:
            return out, {"embed_generate_overlap_ratio": CPU_SERIAL_REASON}
        ov = label_overlap(labelled, ["generate"], ["embed"])
        if ov["overlap_ratio"] is None:
            return out, {"embed_generate_overlap_ratio": "no embedding intervals recorded"}
        out.append(
            Metric(
                "embed_generate_overlap_ratio",
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
            "query_batches": c["Q"],
            "queries_per_batch": c["B"],
            "query_tokens": c["T"],
            "width": c["D"],
            "documents": c["N"],
            "vocab": c["V"],
            "top_k": c["k"],
            "rerank_top": c["r"],
            "decode_steps": c["S"],
            "stages": list(STAGES),
            "stream_of_stage": "stage s of batch q on stream (q + s) % n",
            "embed_generate_overlap": "share of embedding time during which some batch's generation ran",
        }

    def size_label(self) -> str:
        c = getattr(self, "cfg", SIZES[self.size])
        return f"{c['Q']} batches x {c['B']} queries, {c['N']} docs x {c['D']} {self.dtype_name}"
