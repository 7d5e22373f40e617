"""Profiler Chrome traces: the one loader, and the one table of kernel names (pure: no torch).

Used by the FSDP trace analysis, the hardware-queue kernel timeline, ``aorta trace merge`` and the report.

Kernel names (NCCL / RCCL, as the profiler writes them):

- NCCL 2.19+ names each kernel by collective: ``ncclDevKernel_AllGather_RING_LL(...)``,
  ``ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(...)``, ``ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)``;
  older NCCL: ``ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)``.
- RCCL (ROCm) launches a generic kernel for most collectives: ``ncclDevKernel_Generic_1(...)``; some
  builds name ``rcclGenericKernel`` / ``mscclKernel_*``. The name does not say which collective: the
  profiler's ``args["Collective name"]`` does, where recorded.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

COMM_KINDS = ("all_gather", "reduce_scatter", "all_reduce", "other_comm")
COMPUTE = "compute"
COMM_KERNEL = re.compile(r"nccl|rccl|msccl", re.IGNORECASE)
# Chrome-trace categories: kernels; device work in general (copies and memsets occupy the GPU too).
KERNEL_CATEGORIES = ("kernel",)
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
_KIND_PATTERNS = (  # matched on the name lower-cased with '_' removed
    ("all_gather", ("allgather",)),
    ("reduce_scatter", ("reducescatter",)),
    ("all_reduce", ("allreduce",)),
)


class TraceFileError(ValueError):
    """A trace file that cannot be read: the message names the file and what is wrong."""


def _kind_from_text(text: str) -> str | None:
    flat = text.lower().replace("_", "")
    for kind, needles in _KIND_PATTERNS:
        if any(n in flat for n in needles):
            return kind
    return None


def classify_kernel(name: str, collective_name: str | None = None) -> str:
    """``compute`` or one of ``COMM_KINDS`` for a device kernel's name (and its profiler collective arg)."""
    if not (COMM_KERNEL.search(name) or collective_name):
        return COMPUTE
    # The kernel name's own collective wins (NCCL); a generic RCCL kernel takes the profiler's arg.
    head = name.split("(", 1)[0]
    return (
        _kind_from_text(head)
        or (_kind_from_text(collective_name) if collective_name else None)
        or "other_comm"
    )


def is_kernel(event: dict) -> bool:
    return str(event.get("cat", "")).lower() in KERNEL_CATEGORIES


def is_comm_kernel(event: dict) -> bool:
    return (
        is_kernel(event)
        and classify_kernel(str(event.get("name", "")), (event.get("args") or {}).get("Collective name"))
        != COMPUTE
    )


def load_trace(path: str | Path) -> dict:
    """One Chrome trace (``.json`` or gzipped) as ``{"traceEvents": [...], ...}``; ``TraceFileError`` naming
    the file when it cannot be read or is not a trace."""
    p = Path(path)
    try:
        raw = p.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        doc = json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise TraceFileError(f"{p}: cannot read trace: {exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, EOFError, gzip.BadGzipFile) as exc:
        raise TraceFileError(f"{p}: not a Chrome trace JSON file ({exc})") from None
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceFileError(f"{p}: not a Chrome trace (no 'traceEvents' list)")
    return doc
