"""continuous_batch: prefill of arriving requests on one stream beside decode steps that read a real KV
cache on the others; tokens/s and decode-step p99.

The running batch is split into 16 decode groups; group ``g`` decodes on stream ``1 + g % (n - 1)``
(everything on stream 0 when n = 1). Each group starts a step with requests of different prompt
lengths already in its KV cache and runs D decode iterations: embed the current tokens, write the new
key/value at each sequence's own position (``index_copy_`` at flat indices fixed in ``setup``), attend
over the cache with a per-sequence length mask, pick the next token. Meanwhile one new request per
group arrives: stream 0 prefills its prompt into a free cache slot, and the group's decode stream
waits for that prefill's event before the iteration at which the request joins the batch (continuous
batching: the batch grows mid-step, without draining it).

Every step starts from the same state (the same prompts, the same cache positions rewritten), so
steps are repeatable and the one-stream check can compare them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from aorta import stats
from aorta.hw_queue.parts import decoder
from aorta.hw_queue.parts.segments import SegmentPlan
from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec
from aorta.hw_queue.workload import Metric, Workload
from aorta.record.metric import percentile_metrics

GROUPS = SPECS["continuous_batch"].max_streams - 1  # 16 decode groups beside the prefill stream
# prompt_min/max: active requests' lengths; arrival_prompt: a new request's prompt length.
SIZES = {
    "full": dict(
        vocab=32000,
        d_model=1024,
        d_ff=4096,
        heads=8,
        layers=2,
        batch=32,  # H100, one stream, bf16: GPU busy 0.906 at 32, 0.870 at 8 (scripts/gpu/size_probe.py)
        iterations=4,
        prompt_min=256,
        prompt_max=768,
        arrival_prompt=512,
    ),
    "smoke": dict(
        vocab=64,
        d_model=32,
        d_ff=64,
        heads=2,
        layers=1,
        batch=2,
        iterations=2,
        prompt_min=4,
        prompt_max=8,
        arrival_prompt=6,
    ),
}


class ContinuousBatch(Workload):
    spec = SPECS["continuous_batch"]

    def setup(self) -> None:
        cfg = self.sized(SIZES)
        self.cfg = cfg
        if cfg["iterations"] < 2:
            raise ValueError(f"continuous_batch: iterations must be >= 2 (got {cfg['iterations']})")
        dev = self.device.torch_device
        gen = self.generator()
        rng = random.Random(self.seed)
        self.model = decoder.make_decoder(
            self,
            gen,
            vocab=cfg["vocab"],
            d_model=cfg["d_model"],
            d_ff=cfg["d_ff"],
            layers=cfg["layers"],
            heads=cfg["heads"],
        )
        B, D, J, Pa = cfg["batch"], cfg["d_model"], cfg["iterations"], cfg["arrival_prompt"]
        slots = B + 1  # slot B takes the arriving request
        self.t_max = max(cfg["prompt_max"], Pa + 1) + J
        lt = lambda *v: torch.tensor(v, device=dev, dtype=torch.long)  # noqa: E731
        self.groups = []
        for g in range(GROUPS):
            lengths = [rng.randint(cfg["prompt_min"], cfg["prompt_max"]) for _ in range(B)]
            join = 1 + g % (J - 1)  # decode iteration at which the arrival joins
            prompts = torch.randint(0, cfg["vocab"], (slots, self.t_max), generator=gen, device=dev)
            kv = [
                (
                    torch.zeros(slots, self.t_max, D, device=dev, dtype=self.dtype),
                    torch.zeros(slots, self.t_max, D, device=dev, dtype=self.dtype),
                )
                for _ in range(cfg["layers"])
            ]
            grp = {
                "lengths": lengths,
                "join": join,
                "prompts": prompts,
                "kv": kv,
                "first": prompts[torch.arange(B, device=dev), lt(*[n - 1 for n in lengths])],  # (B,)
                "cur": torch.empty(slots, device=dev, dtype=torch.long),
                "generated": torch.empty(slots, J + 1, device=dev, dtype=torch.long),
                "iters": [],
            }
            # Per decode iteration: batch size, flat cache index of each sequence's new position, the
            # attended length and the mask of valid keys (all host-known: no sync in a step).
            for j in range(J):
                pos = [n - 1 + j for n in lengths] + ([Pa + j - join] if j >= join else [])
                span = max(pos) + 1
                mask = torch.arange(span, device=dev).unsqueeze(0) <= lt(*pos).unsqueeze(1)  # (b, S)
                grp["iters"].append(
                    {
                        "b": len(pos),
                        "span": span,
                        "flat": lt(*[s * self.t_max + p for s, p in enumerate(pos)]),
                        "mask": mask.view(len(pos), 1, 1, span),
                    }
                )
            grp["arrival_mask"] = (
                torch.arange(Pa, device=dev).unsqueeze(0) <= torch.arange(Pa, device=dev).unsqueeze(1)
            ).view(1, 1, Pa, Pa)
            self.groups.append(grp)
            # Untimed: the active requests' prompts (all but their last token) into the cache.
            self._prefill_active(grp, max(lengths) - 1)
        self.plan: SegmentPlan[tuple[str, int, int]] = SegmentPlan()

    def _prefill_active(self, grp: dict, length: int) -> None:
        """The active requests' prompt positions [0, length) into their cache rows, one causal pass for all of
        them (set-up, untimed). A shorter prompt's rows past its own length then hold keys that no decode
        attends (each decode's mask stops at its sequence's position, and the position it writes comes first),
        so the cache reads as one pass per prompt would leave it. One pass, one shape: a pass per prompt gave
        128 shapes and 8-14 s of first-call library set-up in bf16 on an H100."""
        B = self.cfg["batch"]
        x = decoder.embed(self.model, grp["prompts"][:B, :length])  # (B, length, D)
        mask = torch.ones(length, length, device=x.device, dtype=torch.bool).tril().view(1, 1, length, length)
        for (kc, vc), lw in zip(grp["kv"], self.model.layers):

            def write(k, v, kc=kc, vc=vc):
                kc[:B, :length].copy_(k)
                vc[:B, :length].copy_(v)

            x = decoder.layer(x, lw, self.model.heads, write, kc[:B, :length], vc[:B, :length], mask)

    def _prefill(self, grp: dict) -> torch.Tensor:
        """The arriving request's prompt through the model into its cache slot; x (1, arrival_prompt, D)."""
        slot, length = self.cfg["batch"], self.cfg["arrival_prompt"]
        x = decoder.embed(self.model, grp["prompts"][slot, :length]).unsqueeze(0)
        mask = grp["arrival_mask"]  # built once in setup: no allocation in a step
        for (kc, vc), lw in zip(grp["kv"], self.model.layers):

            def write(k, v, kc=kc, vc=vc):
                kc[slot, :length].copy_(k[0])
                vc[slot, :length].copy_(v[0])

            x = decoder.layer(
                x,
                lw,
                self.model.heads,
                write,
                kc[slot : slot + 1, :length],
                vc[slot : slot + 1, :length],
                mask,
            )
        return x

    def _prefill_arrival(self, grp: dict) -> None:
        B = self.cfg["batch"]
        x = self._prefill(grp)
        tok = decoder.next_tokens(x[:, -1:], self.model)[0]  # (1,) first generated token
        grp["cur"][B:].copy_(tok)
        grp["generated"][B:, 0].copy_(tok)

    def _decode(self, grp: dict, j: int) -> None:
        it, B, D = grp["iters"][j], self.cfg["batch"], self.cfg["d_model"]
        b, span = it["b"], it["span"]
        x = decoder.embed(self.model, grp["cur"][:b]).unsqueeze(1)  # (b, 1, D)
        for (kc, vc), lw in zip(grp["kv"], self.model.layers):

            def write(k, v, kc=kc, vc=vc):
                kc.view(-1, D).index_copy_(0, it["flat"], k.reshape(b, D))
                vc.view(-1, D).index_copy_(0, it["flat"], v.reshape(b, D))

            x = decoder.layer(x, lw, self.model.heads, write, kc[:b, :span], vc[:b, :span], it["mask"])
        nxt = decoder.next_tokens(x, self.model)[:, 0]  # (b,)
        grp["cur"][:b].copy_(nxt)
        grp["generated"][:B, j].copy_(nxt[:B])
        if b > B:
            grp["generated"][B, j - grp["join"] + 1].copy_(nxt[B])

    def _decode_stream(self, g: int) -> int:
        return 1 + g % (self.n_streams - 1) if self.n_streams > 1 else 0

    def step(self, rec) -> None:
        plan: SegmentPlan[tuple[str, int, int]] = SegmentPlan()
        for s in range(1, self.n_streams):
            rec.wait(0, s)  # prefill rewrites arrival slots the last step's decodes read
        for g, grp in enumerate(self.groups):
            s = self._decode_stream(g)
            with rec.on(s):
                grp["cur"][: self.cfg["batch"]].copy_(grp["first"])
            plan.add(s, ("reset", g, 0))
        prefilled: dict[int, object] = {}
        for j in range(self.cfg["iterations"]):
            for g, grp in enumerate(self.groups):
                if grp["join"] == j + 1:  # prefill now, beside decode iteration j; joins at j + 1
                    with rec.on(0):
                        self._prefill_arrival(grp)
                    plan.add(0, ("prefill", g, j))
                    prefilled[g] = self.device.record_event(rec.stream(0))
            for g, grp in enumerate(self.groups):
                s = self._decode_stream(g)
                if grp["join"] == j:
                    # the request's cache rows and first token come from its prefill on stream 0
                    self.device.wait_event(rec.stream(s), prefilled[g])
                with rec.on(s):
                    self._decode(grp, j)
                plan.add(s, ("decode", g, j))
        self.plan = plan

    def expected_work(self) -> WorkSpec:
        # Prefill on stream 0 (GEMMs), 16 decode groups over the streams: every stream decodes (any op: a decode
        # step's small matmuls may run as GEMV kernels).
        return WorkSpec({0: StreamWork(gemm=1), **dict.fromkeys(range(1, self.n_streams), StreamWork(ops=1))})

    def result(self):
        B, J = self.cfg["batch"], self.cfg["iterations"]
        out = []
        for grp in self.groups:
            out.append(grp["generated"][:B, :J])
            out.append(grp["generated"][B, : J - grp["join"] + 1])
            # the arrival's cache rows cross from the prefill stream to the decode stream
            out.extend(c[B, : self.cfg["arrival_prompt"]] for kv in grp["kv"] for c in kv)
        return out

    # -- figures -------------------------------------------------------------------------------------
    def tokens_per_step(self) -> int:
        """Generated tokens: one per sequence per decode iteration, plus each arrival's first token."""
        return sum(it["b"] for grp in self.groups for it in grp["iters"]) + len(self.groups)

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        rate = [self.tokens_per_step() / (ms * 1e-3) for ms in per_iteration_ms]
        return [Metric("tokens_per_s", stats.median(rate), "tokens/s", True, tuple(rate))]

    def decode_step_ms(self, intervals) -> list[float]:
        return [
            end - start
            for _, label, (start, end) in self.plan.label_intervals(intervals)
            if label[0] == "decode"
        ]

    def extra_metrics(self, run) -> tuple[list[Metric], dict[str, str]]:
        return percentile_metrics(
            "decode_step", [self.decode_step_ms(r.block_spans_ms) for r in run.rounds], (99, 50)
        )

    def info(self) -> dict:
        lengths = [n for grp in self.groups for n in grp["lengths"]]
        return {
            **self.cfg,
            "groups": GROUPS,
            "decode_streams": max(self.n_streams - 1, 1),
            "prefill_stream": 0,
            "arrivals_per_step": GROUPS,
            "context_min": min(lengths),
            "context_max": max(lengths),
            "generated_tokens_per_step": self.tokens_per_step(),
            "prefill_tokens_per_step": GROUPS * self.cfg["arrival_prompt"],
        }

    def size_label(self) -> str:
        c = SIZES[self.size]
        return (
            f"{GROUPS} groups x {c['batch']} requests, contexts {c['prompt_min']}-{c['prompt_max']}, "
            f"d_model {c['d_model']}, {c['layers']} layers, {self.dtype_name}"
        )
