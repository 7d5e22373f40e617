"""fsdp_tp: per-layer compute while the next layer's parameters are gathered and the previous layer's
gradients are reduced on communication streams; samples/s and comm-compute overlap.

One training step of a stack of ``relu(x @ W + b)`` layers, FSDP style: before layer ``l`` computes,
layer ``l+1``'s weight is gathered on a comm stream (forward, and again in backward after a reshard);
after layer ``l``'s backward, its weight gradient is reduce-scattered and its bias gradient all-reduced
on a comm stream while layer ``l-1``'s backward runs. Stream 0 computes; streams 1..n-1 take the
communication ops round-robin in issue order.

What the communication is, said in the result (``workload_info["comm"]``):
- ``collectives``: torch.distributed is initialized with world size > 1: real
  ``all_gather_into_tensor`` / ``reduce_scatter_tensor`` / ``all_reduce``. They run on the process
  group's own stream, so each is followed by ``work.wait()`` inside its segment: the segment's end
  event then completes after the transfer, not after the launch (docs/hw_queue_figures.md, "Device time").
- ``d2d_copies_single_process``: one process, so world size is 1 and a shard is the whole tensor; each
  collective is replaced by the device-to-device copy that moves the same bytes. This is not
  communication between GPUs and is never labelled as such.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType

import torch

from aorta.hw_queue.parts import relu_mlp
from aorta.hw_queue.specs import SPECS
from aorta.hw_queue.stream_work import StreamWork, WorkSpec
from aorta.hw_queue.workload import Metric, Workload
from aorta.stats import median
from aorta.timeline.group_overlap import group_overlap

# (layers, hidden, batch). Full bf16: 3 GEMMs of 2*2048*4096^2 FLOP per layer, ~5-8 ms a step on an
# H100; fp32 (no TF32, ~52 TFLOP/s) halves the hidden size to stay near 16 ms.
SIZES = {
    ("full", "bf16"): (16, 4096, 2048),
    ("full", "fp32"): (16, 2048, 2048),
    ("smoke", "bf16"): (16, 32, 8),
    ("smoke", "fp32"): (16, 32, 8),
}
MAX_STREAMS = SPECS[
    "fsdp_tp"
].max_streams  # 32: 1 compute + 31 comm streams; a step issues 4L - 1 = 63 comm ops at L = 16


def _world(environ: Mapping[str, str] | None = None) -> tuple[int, int, ModuleType | None]:
    """(world size, rank, torch.distributed module or None when running as one process).

    A process launched with ``WORLD_SIZE`` > 1 (torchrun) but no process group would time device-to-device
    copies while its launcher asked for collectives: that is refused, naming what to do."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist.get_world_size(), dist.get_rank(), dist
    env = os.environ if environ is None else environ
    launched = env.get("WORLD_SIZE", "1")
    if launched.isdigit() and int(launched) > 1:
        raise ValueError(
            f"fsdp_tp: WORLD_SIZE={launched} (torchrun) but no process group is initialized, so the "
            "collectives would be replaced by copies; run it through pytest (aorta's plugin starts the group: "
            "torchrun ... -m pytest benchmarks/hw_queue -k fsdp_tp) or call "
            "torch.distributed.init_process_group first"
        )
    return 1, 0, None


class FsdpTp(Workload):
    spec = SPECS["fsdp_tp"]

    def setup(self) -> None:
        shape: tuple[int, int, int] = self.params.get("shape") or SIZES[(self.size, self.dtype_name)]
        self.layers, self.hidden, self.batch = shape
        L, D, B = self.layers, self.hidden, self.batch
        self.world, self.rank, self._dist = _world()
        if (D * D) % self.world:
            raise ValueError(f"fsdp_tp: hidden^2 = {D * D} is not divisible by world size {self.world}")
        self.shard_numel = D * D // self.world
        gen = self.generator()
        full = [self.randn(D, D, gen=gen, scale=(2.0 / D) ** 0.5) for _ in range(L)]
        # The rank's shard of each flat weight; the gathered full weight is rebuilt into w_full each step.
        lo = self.rank * self.shard_numel
        self.w_shard = [w.reshape(-1)[lo : lo + self.shard_numel].clone() for w in full]
        self.bias = [self.randn(D, gen=gen, scale=0.1) for _ in range(L)]
        self.x = self.randn(B, D, gen=gen)  # (B, D)
        self.w_full = [torch.empty_like(w) for w in full]  # (D, D) gathered weights
        empty = lambda *s: torch.empty(*s, device=self.device.torch_device, dtype=self.dtype)  # noqa: E731
        self.h = [empty(B, D) for _ in range(L)]  # pre-activations, kept for backward
        self.a = [empty(B, D) for _ in range(L)]  # activations
        self.dh, self.da = empty(B, D), [empty(B, D) for _ in range(L)]
        self.dw = [empty(D, D) for _ in range(L)]
        self.db = [empty(D) for _ in range(L)]
        self.grad_shard = [empty(self.shard_numel) for _ in range(L)]  # reduce-scattered weight grads
        self.bias_grad = [empty(D) for _ in range(L)]  # all-reduced bias grads
        self.comm_label = "collectives" if self._dist is not None else "d2d_copies_single_process"
        self._ready_flag = torch.zeros(1, device=self.device.torch_device)  # the round barrier's operand
        if self._dist is not None:
            # all_gather_into_tensor / reduce_scatter_tensor; newer torch renames them *_single (same op)
            self._all_gather = (
                getattr(self._dist, "all_gather_single", None) or self._dist.all_gather_into_tensor
            )
            self._reduce_scatter = (
                getattr(self._dist, "reduce_scatter_single", None) or self._dist.reduce_scatter_tensor
            )

    # -- communication (one op per segment on a comm stream) ---------------------------------------
    def _comm(self, rec, kind: str, layer: int) -> None:
        n = self.n_streams
        s = 1 + self._comm_count % (n - 1) if n > 1 else 0
        self._comm_count += 1
        # The op reads what stream 0 wrote (grads) or overwrites what it read (a weight used in the last
        # layer pass), so it starts after everything stream 0 has enqueued so far.
        rec.wait(s, 0)
        with rec.on(s):
            self._run_comm(kind, layer)
        self._last_stream[(kind, layer)] = s

    def _run_comm(self, kind: str, layer: int) -> None:
        dist = self._dist
        if kind == "gather":
            out = self.w_full[layer].view(-1)
            if dist is None:
                out.copy_(self.w_shard[layer])
            else:
                # wait() on this stream: the segment's end event follows the transfer, not the launch.
                self._all_gather(out, self.w_shard[layer], async_op=True).wait()
        elif kind == "reduce_scatter":
            if dist is None:
                self.grad_shard[layer].copy_(self.dw[layer].view(-1))
            else:
                self._reduce_scatter(self.grad_shard[layer], self.dw[layer].view(-1), async_op=True).wait()
        elif kind == "all_reduce":
            self.bias_grad[layer].copy_(self.db[layer])
            if dist is not None:
                dist.all_reduce(self.bias_grad[layer], async_op=True).wait()
        else:
            raise ValueError(f"unknown comm op {kind!r}")

    def _wait_for(self, rec, kind: str, layer: int) -> None:
        rec.wait(0, self._last_stream[(kind, layer)])  # compute reads what that comm op wrote

    # -- one training step --------------------------------------------------------------------------
    def step(self, rec) -> None:
        L = self.layers
        self._comm_count = 0
        self._last_stream: dict[tuple[str, int], int] = {}
        self._comm(rec, "gather", 0)
        for layer in range(L):  # forward: gather l+1 beside layer l
            self._wait_for(rec, "gather", layer)
            if layer + 1 < L:
                self._comm(rec, "gather", layer + 1)
            x = self.x if layer == 0 else self.a[layer - 1]
            with rec.on(0):
                relu_mlp.forward(x, self.w_full[layer], self.bias[layer], self.h[layer], self.a[layer])
        for layer in reversed(range(L)):  # backward: re-gather l-1, reduce l's grads beside layer l-1
            if layer < L - 1:
                self._wait_for(rec, "gather", layer)
            if layer > 0:
                self._comm(rec, "gather", layer - 1)  # resharded after forward, gathered again
            x = self.x if layer == 0 else self.a[layer - 1]
            da = self.a[L - 1] if layer == L - 1 else self.da[layer]  # loss 0.5 * ||a_L||^2: dL/da_L = a_L
            with rec.on(0):
                relu_mlp.backward(
                    da,
                    x,
                    self.w_full[layer],
                    self.h[layer],
                    self.dh,
                    self.dw[layer],
                    self.db[layer],
                    self.da[layer - 1] if layer > 0 else None,
                )
            self._comm(rec, "reduce_scatter", layer)
            self._comm(rec, "all_reduce", layer)
        for s in range(1, self.n_streams):
            rec.wait(0, s)  # the next step's backward overwrites dW/db that these comm ops read

    def round_barrier(self) -> Callable[[], None] | None:
        # A one-element all-reduce on the origin stream after each rank's hold: it completes when the last
        # rank's hold has ended, and every rank's start event follows it. Without it each rank's round starts
        # when its own hold ends, and a rank that starts first times its wait for the others in the first
        # collective (4 ranks, 4x H200: 8.8 to 25.1 ms a round by rank for one step).
        return None if self._dist is None else self._all_ranks_ready

    def _all_ranks_ready(self) -> None:
        assert self._dist is not None  # only handed out with a process group
        self._dist.all_reduce(self._ready_flag)

    def graph_unavailable_reason(self) -> str | None:
        if self._dist is None:
            return None
        # Each rank picks its round mode on its own: a capture that failed on one rank and not another would
        # put them on different paths (one replaying a graph, one launching eagerly) with collectives
        # between them. Held launches are the same path on every rank.
        return "real collectives across ranks: held launches keep every rank on the same path"

    def expected_work(self) -> WorkSpec:
        # Layer compute (GEMMs) on stream 0; the collectives (or their copies) on every comm stream.
        return WorkSpec({0: StreamWork(gemm=1), **dict.fromkeys(range(1, self.n_streams), StreamWork(ops=1))})

    def result(self):
        # w_full (comm -> compute) and dw/db (compute -> comm) cross streams: poisoned by the one-stream
        # check, so a stream that reads them before they are written fails it.
        return {
            "out": self.a[-1],
            "grad_shard": self.grad_shard,
            "bias_grad": self.bias_grad,
            "w_full": self.w_full,
            "dw": self.dw,
            "db": self.db,
        }

    def comm_ops_per_step(self) -> int:
        return 4 * self.layers - 1

    def metrics(self, per_iteration_ms: Sequence[float]) -> list[Metric]:
        rate = [self.batch / (ms * 1e-3) for ms in per_iteration_ms]
        return [Metric("samples_per_s", median(rate), "samples/s", True, tuple(rate))]

    def unavailable(self) -> dict[str, str]:
        if self._dist is None:
            return {
                "collective_busbw_gbps": "one process: the comm ops are device-to-device copies, "
                "not collectives (run under torchrun with world size > 1)"
            }
        return {}

    def extra_metrics(self, run) -> tuple[list[Metric], dict[str, str]]:
        comm = list(range(1, self.n_streams))
        ov = group_overlap([r.stream_intervals_ms for r in run.rounds], [0], comm, run.iterations_per_round)
        if ov["overlap_ratio"] is None:
            return [], {
                "comm_overlap_ratio": "no comm intervals recorded (graph replay or a single stream)",
                "exposed_comm_ms": "no comm intervals recorded",
            }
        unavailable = self.unavailable()
        return [
            Metric(
                "comm_overlap_ratio", ov["overlap_ratio"], "ratio", True, tuple(ov["overlap_ratio_samples"])
            ),
            Metric("exposed_comm_ms", ov["exposed_ms"], "ms", False, tuple(ov["exposed_ms_samples"])),
        ], unavailable

    def info(self) -> dict:
        elem = torch.finfo(self.dtype).bits // 8
        return {
            "comm": self.comm_label,
            "world_size": self.world,
            "layers": self.layers,
            "hidden": self.hidden,
            "batch": self.batch,
            "comm_streams": self.n_streams - 1,
            "comm_ops_per_step": self.comm_ops_per_step(),
            "shard_bytes_per_layer": self.shard_numel * elem,
            "gemm_flops_per_step": self.layers * relu_mlp.flops(self.batch, self.hidden, self.hidden),
            "note": "real collectives run on the process group's internal stream; comm streams order and "
            "time them (work.wait() inside each segment)"
            if self._dist is not None
            else "world size 1: each collective is the same-size device-to-device copy",
        }

    def size_label(self) -> str:
        L, D, B = self.params.get("shape") or SIZES[(self.size, self.dtype_name)]
        return f"{L} layers, hidden {D}, batch {B}, {self.dtype_name}"
