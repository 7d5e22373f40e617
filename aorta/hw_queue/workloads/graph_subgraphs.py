"""graph_subgraphs: independent MLP subgraphs on separate streams, eager or as one multi-stream graph.

A multi-branch model (towers of a recommender, heads of a multi-task model): ``G`` subgraphs, each an
``L``-layer MLP block stack over its own batch with its own weights, no data shared between them.
Subgraph ``g`` runs on stream ``g % n``. The kernels are small (a few us each) so eager issue is
bound by the ~9 us host cost per launch (docs/reference_floors.md); ``mode="graph"`` captures the whole
multi-stream iteration as one CUDA/HIP graph (the runner forks every stream from the capture stream
and joins them back, which become graph edges) and replays it, removing that host cost. samples/s.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch.nn.functional as F

from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec, every_stream
from aorta.hw_queue.workload import Metric, Workload, WorkloadUnavailable
from aorta.stats import median

MODES = ("eager", "graph")
KERNELS_PER_LAYER = 5  # matmul, gelu, matmul, add, layer_norm

# subgraphs G, batch B, width D, layers L. Full: each GEMM is 256x512x2048 (~0.5 GFLOP, a few us on
# an H100), 16 subgraphs x 4 layers ~ 330 launches: launch-bound in eager mode, as the pattern is.
# Full size: B=2048 rows per subgraph, so a replayed graph keeps the GPU busy (H100, one stream: GPU busy
# share 0.935 at B=2048 against 0.868 at B=256, where the dispatch gaps between short kernels showed;
# scripts/gpu/size_probe.py).
SIZES = {"full": dict(G=16, B=2048, D=512, L=4), "smoke": dict(G=4, B=4, D=16, L=2)}


class GraphSubgraphs(Workload):
    spec = SPECS["graph_subgraphs"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.mode = self.params.get("mode") or "eager"
        if self.mode not in MODES:
            raise ValueError(f"graph_subgraphs: mode must be one of {MODES}, got {self.mode!r}")

    def setup(self) -> None:
        if self.mode == "graph" and not self.device.supports_graphs():
            raise WorkloadUnavailable("CUDA/HIP graphs need a GPU")
        cfg = self.sized(SIZES)
        cfg["G"] = max(cfg["G"], self.n_streams)  # one subgraph per stream at least
        self.cfg = cfg
        G, B, D, L = cfg["G"], cfg["B"], cfg["D"], cfg["L"]
        gen = self.generator()
        self.x = [self.randn(B, D, gen=gen) for _ in range(G)]  # (B, D) per subgraph
        # Per subgraph and layer: up-projection (D, 4D), down-projection (4D, D), LayerNorm weight (D,).
        self.w_up = [[self.randn(D, 4 * D, gen=gen, scale=D**-0.5) for _ in range(L)] for _ in range(G)]
        self.w_down = [
            [self.randn(4 * D, D, gen=gen, scale=(4 * D) ** -0.5) for _ in range(L)] for _ in range(G)
        ]
        self.ln_w = [[1.0 + self.randn(D, gen=gen, scale=0.1) for _ in range(L)] for _ in range(G)]
        self.out = self.randn(G, B, D, gen=gen).zero_()  # (G, B, D)

    def _subgraph(self, g: int) -> None:
        h = self.x[g]  # (B, D)
        for layer in range(self.cfg["L"]):
            y = F.gelu(h @ self.w_up[g][layer]) @ self.w_down[g][layer]  # (B, D)
            h = F.layer_norm(h + y, (self.cfg["D"],), weight=self.ln_w[g][layer])
        self.out[g].copy_(h)

    def step(self, rec) -> None:
        G, n = self.cfg["G"], self.n_streams
        if self.issue_order == "depth":
            order = [g for i in range(n) for g in range(i, G, n)]  # each stream's subgraphs back to back
        else:
            order = list(range(G))  # round-robin over streams
        for g in order:
            with rec.on(g % n):
                self._subgraph(g)

    def expected_work(self) -> WorkSpec:
        # At least one subgraph per stream (G >= n), each L layers of two GEMMs.
        return every_stream(self.n_streams, StreamWork(gemm=2 * self.cfg["L"]))

    def result(self):
        return self.out

    def uses_graph(self) -> bool:
        return self.mode == "graph"

    def gpu_mode_unavailable_reason(self) -> str | None:
        if self.mode == "eager":
            return (
                "the eager variant is issued by the host on purpose, the side of the eager-vs-graph comparison "
                "that pays the ~9 us per launch; its graph variant is the same subgraphs replayed"
            )
        return None

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        samples = self.cfg["G"] * self.cfg["B"]
        rate = [samples / (ms * 1e-3) for ms in per_iteration_ms]
        return [Metric("samples_per_s", median(rate), "samples/s", True, tuple(rate))]

    def info(self) -> dict:
        c = self.cfg
        return {
            "mode": self.mode,
            "subgraphs": c["G"],
            "batch": c["B"],
            "width": c["D"],
            "layers": c["L"],
            "kernels_per_iteration": c["G"] * (c["L"] * KERNELS_PER_LAYER + 1),
            "stream_of_subgraph": "subgraph g on stream g % n",
        }

    def size_label(self) -> str:
        c = getattr(self, "cfg", SIZES[self.size])
        return (
            f"{c['G']} subgraphs x {c['L']} layers, batch {c['B']} x {c['D']} {self.dtype_name} ({self.mode})"
        )
