"""The registry of hardware-queue workloads: name -> class."""

from __future__ import annotations

from aorta.workload import Workload
from aorta.workloads.activation_ckpt import ActivationCkpt
from aorta.workloads.async_dataload import AsyncDataload
from aorta.workloads.continuous_batch import ContinuousBatch
from aorta.workloads.copy_compute_overlap import CopyComputeOverlap
from aorta.workloads.fsdp_tp import FsdpTp
from aorta.workloads.grad_accum import GradAccum
from aorta.workloads.graph_subgraphs import GraphSubgraphs
from aorta.workloads.hetero import HeteroKernels
from aorta.workloads.large_gemm import LargeGemmOnly
from aorta.workloads.moe import Moe
from aorta.workloads.rag_pipeline import RagPipeline
from aorta.workloads.speculative_decode import SpeculativeDecode
from aorta.workloads.stream_concurrency import StreamConcurrency
from aorta.workloads.stream_dependency import StreamDependency
from aorta.workloads.tiny_kernel import TinyKernelStress
from aorta.workloads.torch_compile import TorchCompile
from aorta.workloads.zero_offload import ZeroOffload

REGISTRY: dict[str, type[Workload]] = {
    cls.spec.name: cls
    for cls in (
        LargeGemmOnly,
        TinyKernelStress,
        HeteroKernels,
        StreamConcurrency,
        Moe,
        FsdpTp,
        ActivationCkpt,
        GradAccum,
        SpeculativeDecode,
        ContinuousBatch,
        RagPipeline,
        GraphSubgraphs,
        AsyncDataload,
        ZeroOffload,
        TorchCompile,
        CopyComputeOverlap,
        StreamDependency,
    )
}


def get_workload(name: str) -> type[Workload]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; valid names: {', '.join(sorted(REGISTRY))}") from None
