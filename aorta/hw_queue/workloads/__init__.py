"""The registry of hardware-queue workloads: name -> class."""

from __future__ import annotations

from aorta.hw_queue.workload import Workload
from aorta.hw_queue.workloads.activation_ckpt import ActivationCkpt
from aorta.hw_queue.workloads.async_dataload import AsyncDataload
from aorta.hw_queue.workloads.continuous_batch import ContinuousBatch
from aorta.hw_queue.workloads.copy_compute_overlap import CopyComputeOverlap
from aorta.hw_queue.workloads.fsdp_tp import FsdpTp
from aorta.hw_queue.workloads.grad_accum import GradAccum
from aorta.hw_queue.workloads.graph_subgraphs import GraphSubgraphs
from aorta.hw_queue.workloads.hetero_kernels import HeteroKernels
from aorta.hw_queue.workloads.large_gemm_only import LargeGemmOnly
from aorta.hw_queue.workloads.moe import Moe
from aorta.hw_queue.workloads.rag_pipeline import RagPipeline
from aorta.hw_queue.workloads.speculative_decode import SpeculativeDecode
from aorta.hw_queue.workloads.stream_concurrency import StreamConcurrency
from aorta.hw_queue.workloads.stream_dependency import StreamDependency
from aorta.hw_queue.workloads.tiny_kernel_stress import TinyKernelStress
from aorta.hw_queue.workloads.torch_compile import TorchCompile
from aorta.hw_queue.workloads.zero_offload import ZeroOffload

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
