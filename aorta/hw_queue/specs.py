"""Every hardware-queue workload's spec, as pure data: ``aorta list`` and option parsing read these without torch.

A ``WorkloadSpec`` names the workload, its category and priority, the stream counts it runs on, its
headline metric, and the parameters it takes with their types (``params``). The workload classes in
``aorta.hw_queue.workloads`` (which import torch) each point at their entry of ``SPECS``; ``Workload.__init__``
checks the parameters it is given against ``params`` (``check_params``), so a misspelled or
wrongly typed parameter is an error naming the allowed ones, never silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union, get_args, get_origin

PRIORITIES = ("p0", "p1", "p2", "p3")
CATEGORIES = ("compute", "scheduling", "training", "inference", "pipeline", "latency", "memory", "compile")
SIZE_NAMES = ("smoke", "full")  # a workload module's own SIZES maps each name to its shapes
ISSUE_ORDERS = ("breadth", "depth")
DTYPE_NAMES = ("bf16", "fp32", "fp16")


@dataclass(frozen=True, kw_only=True)
class WorkloadSpec:
    name: str
    category: str
    priority: str
    description: str
    metric: str  # name of the workload's own headline metric
    unit: str
    higher_is_better: bool
    min_streams: int = 1
    max_streams: int = 1024
    recommended_streams: tuple[int, ...] = (1, 4, 16)
    dtypes: tuple[str, ...] = ("bf16", "fp32")
    # name -> type of every workload-specific parameter (int, float, str, bool, dict, tuple[int, ...],
    # tuple[int, int], Sequence[float]); a parameter given as None takes the workload's default.
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"{self.name}: category {self.category!r} not in {CATEGORIES}")
        if self.priority not in PRIORITIES:
            raise ValueError(f"{self.name}: priority {self.priority!r} not in {PRIORITIES}")
        if not 1 <= self.min_streams <= self.max_streams:
            raise ValueError(
                f"{self.name}: need 1 <= min_streams <= max_streams, got "
                f"{self.min_streams}..{self.max_streams}"
            )
        for d in self.dtypes:
            if d not in DTYPE_NAMES:
                raise ValueError(f"{self.name}: dtype {d!r} not in {sorted(DTYPE_NAMES)}")
        for name, kind in self.params.items():
            if type_name(kind) == "?":
                raise ValueError(
                    f"{self.name}: parameter {name!r} has a type check_params cannot check: {kind!r}"
                )

    def stream_skip_reason(self, n: int) -> str | None:
        """Why ``n`` streams cannot run this workload, or ``None`` if they can."""
        if n < self.min_streams:
            return f"{self.name} needs at least {self.min_streams} streams (asked for {n})"
        if n > self.max_streams:
            return f"{self.name} supports at most {self.max_streams} streams (asked for {n})"
        return None

    def check_params(self, given: Mapping[str, Any]) -> dict[str, Any]:
        """``given`` as a dict once every name is declared in ``params`` and every value has its type.

        Raises ``TypeError`` naming the workload, the bad parameter and the allowed ones.
        """
        allowed = ", ".join(self.params) or "none"
        for name, value in given.items():
            if name not in self.params:
                raise TypeError(f"{self.name}: unknown parameter {name!r} (allowed: {allowed})")
            kind = self.params[name]
            if value is not None and not is_instance(value, kind):
                raise TypeError(
                    f"{self.name}: parameter {name!r} must be {type_name(kind)}, got {value!r} "
                    f"({type(value).__name__})"
                )
        return dict(given)


def ints(*names: str) -> dict[str, type]:
    """``{name: int}`` for each name: the integer sizes a workload's size table lets one override."""
    return dict.fromkeys(names, int)


def is_instance(value: Any, kind: Any) -> bool:
    """``isinstance`` for the few parameter types specs use; ints count as floats, bools as neither."""
    origin, args = get_origin(kind), get_args(kind)
    if origin is Union:
        return any(is_instance(value, k) for k in args)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(is_instance(v, args[0]) for v in value)
        return len(value) == len(args) and all(is_instance(v, k) for v, k in zip(value, args))
    if origin is Sequence:
        return (
            isinstance(value, Sequence)
            and not isinstance(value, str)
            and all(is_instance(v, args[0]) for v in value)
        )
    if isinstance(kind, type):
        return isinstance(value, kind)
    return False


def type_name(kind: Any) -> str:
    """How a parameter type reads in an error message: ``int``, ``tuple[int, int, int]``; ``?`` if unsupported."""
    origin, args = get_origin(kind), get_args(kind)
    if origin is tuple and args:
        return f"tuple[{', '.join('...' if a is Ellipsis else type_name(a) for a in args)}]"
    if origin is Sequence and args:
        return f"Sequence[{type_name(args[0])}]"
    if origin is Union:
        return " | ".join(type_name(a) for a in args)
    if origin is None and isinstance(kind, type) and kind in (int, float, str, bool, dict, type(None)):
        return kind.__name__
    return "?"


# Registry order: the order ``aorta list`` prints and ``aorta.hw_queue.workloads.REGISTRY`` keeps.
SPECS: dict[str, WorkloadSpec] = {
    spec.name: spec
    for spec in (
        WorkloadSpec(
            name="large_gemm_only",
            category="compute",
            priority="p0",
            description="one large GEMM per stream (bf16 tensor cores or fp32); TFLOP/s, the compute-bound reference",
            metric="tflops",
            unit="TFLOP/s",
            higher_is_better=True,
            max_streams=128,
            recommended_streams=(1, 4, 16),
            params={"shape": tuple[int, int, int]},  # (m, n, k)
        ),
        WorkloadSpec(
            name="tiny_kernel_stress",
            category="scheduling",
            priority="p0",
            description="many 1-element kernels spread over N streams, eager or CUDA-graph replay; µs per launch",
            metric="us_per_launch",
            unit="us",
            higher_is_better=False,
            max_streams=1024,
            recommended_streams=(1, 4, 16, 64),
            dtypes=("fp32",),
            params={"mode": str, "total_kernels": int},
        ),
        WorkloadSpec(
            name="hetero_kernels",
            category="latency",
            priority="p0",
            description="large GEMMs on half the streams beside tiny kernels on the rest; tiny-kernel latency and GEMM TFLOP/s",
            metric="tiny_us_per_kernel",
            unit="us",
            higher_is_better=False,
            min_streams=2,
            max_streams=256,
            recommended_streams=(2, 4, 16),
            params={"with_gemms": bool},
        ),
        WorkloadSpec(
            name="stream_concurrency",
            category="scheduling",
            priority="p0",
            description="long one-block spin kernels, two per stream; effective concurrency against stream count",
            metric="concurrency",
            unit="x",
            higher_is_better=True,
            max_streams=1024,
            recommended_streams=(1, 8, 16, 32, 64, 128),
            dtypes=("fp32",),
            params={"kernel_ms": float},
        ),
        WorkloadSpec(
            name="moe",
            category="training",
            priority="p1",
            description="top-2 of 64 experts: gate routes tokens (uneven counts), experts on parallel streams, "
            "weighted combine; tokens/s",
            metric="tokens_per_s",
            unit="tokens/s",
            higher_is_better=True,
            max_streams=64,
            recommended_streams=(1, 4, 16, 64),  # 64 experts, one per stream at most
            params={"shape": tuple[int, int, int]},  # (tokens, d_model, d_ff)
        ),
        WorkloadSpec(
            name="fsdp_tp",
            category="training",
            priority="p1",
            description="layer compute beside next-layer all-gather and previous-layer reduce-scatter/all-reduce "
            "on comm streams (one process: same-size d2d copies, labelled); samples/s, overlap",
            metric="samples_per_s",
            unit="samples/s",
            higher_is_better=True,
            min_streams=2,
            max_streams=32,
            recommended_streams=(2, 4, 16),  # 1 compute + 31 comm streams
            params={"shape": tuple[int, int, int]},  # (layers, hidden, batch)
        ),
        WorkloadSpec(
            name="activation_ckpt",
            category="training",
            priority="p2",
            description="torch.utils.checkpoint recomputation of one chunk beside another chunk's gradient "
            "computation on parallel streams; samples/s",
            metric="samples_per_s",
            unit="samples/s",
            higher_is_better=True,
            max_streams=16,
            recommended_streams=(1, 4, 16),  # 16 chunks, one per stream at most
            params={"shape": tuple[int, int, int, int]},  # (blocks, rows, d_model, d_ff)
        ),
        WorkloadSpec(
            name="grad_accum",
            category="training",
            priority="p2",
            description="micro-batch backward beside the previous micro-batch's gradient-bucket reductions "
            "on side streams; samples/s, reduce overlap",
            metric="samples_per_s",
            unit="samples/s",
            higher_is_better=True,
            max_streams=17,
            recommended_streams=(1, 2, 4, 16),  # compute + one stream per layer's bucket (16)
            params={"shape": tuple[int, int, int]},  # (micro_batches, micro_batch, hidden)
        ),
        WorkloadSpec(
            name="speculative_decode",
            category="inference",
            priority="p1",
            description="draft model decodes K tokens (KV cache) while the target verifies the previous window; "
            "acceptance from argmax agreement; tokens/s, per-token p50/p99",
            metric="tokens_per_s",
            unit="tokens/s",
            higher_is_better=True,
            max_streams=16,
            recommended_streams=(1, 2, 4, 16),  # 8 sequence groups, 2 streams each
            params=ints(
                "vocab",
                "d_model",
                "d_ff",
                "heads",
                "layers",
                "draft_layers",
                "k",
                "windows",
                "batch",
                "prompt",
            ),
        ),
        WorkloadSpec(
            name="continuous_batch",
            category="inference",
            priority="p1",
            description="prefill of arriving requests on one stream beside KV-cache decode steps of 16 groups "
            "on the others; requests join mid-step; tokens/s, decode-step p99",
            metric="tokens_per_s",
            unit="tokens/s",
            higher_is_better=True,
            max_streams=17,
            recommended_streams=(1, 2, 4, 17),  # prefill + 16 decode groups
            params=ints(
                "vocab",
                "d_model",
                "d_ff",
                "heads",
                "layers",
                "batch",
                "iterations",
                "prompt_min",
                "prompt_max",
                "arrival_prompt",
            ),
        ),
        WorkloadSpec(
            name="rag_pipeline",
            category="inference",
            priority="p2",
            description="embed -> retrieve (top-k) -> rerank -> generate, stages pipelined across query "
            "batches on rotating streams; queries/s",
            metric="queries_per_s",
            unit="queries/s",
            higher_is_better=True,
            max_streams=64,
            recommended_streams=(1, 4, 16),
            params=ints("Q", "B", "T", "D", "N", "V", "k", "r", "S"),
        ),
        WorkloadSpec(
            name="graph_subgraphs",
            category="compile",
            priority="p2",
            description="independent MLP subgraphs on separate streams, eager or captured as one "
            "multi-stream CUDA/HIP graph; samples/s",
            metric="samples_per_s",
            unit="samples/s",
            higher_is_better=True,
            max_streams=64,
            recommended_streams=(1, 4, 16),
            params={"mode": str, **ints("G", "B", "D", "L")},
        ),
        WorkloadSpec(
            name="async_dataload",
            category="pipeline",
            priority="p2",
            description="pinned host-to-device copies, preprocessing and a small CNN on separate streams, "
            "double-buffered; images/s and copy-compute overlap",
            metric="images_per_s",
            unit="images/s",
            higher_is_better=True,
            max_streams=64,
            recommended_streams=(1, 3, 6, 12),
            params={**ints("NB", "B", "H", "classes"), "C": tuple[int, ...]},
        ),
        WorkloadSpec(
            name="zero_offload",
            category="training",
            priority="p2",
            description="gradient offload to pinned host memory and parameter prefetch back on copy streams "
            "beside forward/backward compute; copy GB/s and copy-compute overlap",
            # The headline comes from the timed rounds; copy GB/s and the overlap need kernel timestamps (GPU only).
            metric="tokens_per_s",
            unit="tokens/s",
            higher_is_better=True,
            max_streams=64,
            recommended_streams=(1, 3, 5, 9),
            params=ints("T", "D", "L"),
        ),
        WorkloadSpec(
            name="torch_compile",
            category="compile",
            priority="p3",
            description="torch.compile'd MLP block regions on several streams; steady-state samples/s "
            "with compile time reported apart",
            metric="samples_per_s",
            unit="samples/s",
            higher_is_better=True,
            max_streams=64,
            recommended_streams=(1, 4, 16),
            params={"backend": str, **ints("R", "B", "D")},
        ),
        WorkloadSpec(
            name="copy_compute_overlap",
            category="memory",
            priority="p1",
            description="GEMMs beside H2D/D2H/D2D copies on high-priority streams; time with and without "
            "overlap, the saving, and whether the copy engines ran beside compute",
            metric="iteration_ms",
            unit="ms",
            higher_is_better=False,
            max_streams=64,
            recommended_streams=(1, 2, 4, 16),
            params={"mode": str, "work_streams": int, "copy_mb": float, "gemm_side": int},
        ),
        WorkloadSpec(
            name="stream_dependency",
            category="latency",
            priority="p1",
            description="tiny kernels waiting on other streams' events (a chain, fan-out/fan-in), eager or graph, "
            "against the same kernels without; added µs per dependent kernel",
            metric="added_us_per_dependent_kernel",
            unit="us",
            higher_is_better=False,
            max_streams=64,
            recommended_streams=(1, 2, 4, 8, 16, 32),
            dtypes=("fp32",),
            params={
                "pattern": str,
                "mode": str,
                "dependencies": str,
                "extra_hops": int,
                **ints("kernels", "levels"),
            },
        ),
    )
}


def get_spec(name: str) -> WorkloadSpec:
    try:
        return SPECS[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; valid names: {', '.join(sorted(SPECS))}") from None
