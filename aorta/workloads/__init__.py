"""The registry of hardware-queue workloads: name -> class."""

from __future__ import annotations

from aorta.workloads.base import Workload
from aorta.workloads.hetero import HeteroKernels
from aorta.workloads.large_gemm import LargeGemmOnly
from aorta.workloads.stream_concurrency import StreamConcurrency
from aorta.workloads.tiny_kernel import TinyKernelStress

REGISTRY: dict[str, type[Workload]] = {cls.spec.name: cls for cls in (
    LargeGemmOnly,
    TinyKernelStress,
    HeteroKernels,
    StreamConcurrency,
)}


def get_workload(name: str) -> type[Workload]:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; valid names: {', '.join(sorted(REGISTRY))}") from None
