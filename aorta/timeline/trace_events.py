"""Profiler Chrome traces: the one loader, and the one table of kernel names (pure: no torch).

Used by the FSDP trace analysis, the hardware-queue kernel timeline, ``aorta trace merge`` and the report.

Kernel names (NCCL / RCCL, as the profiler writes them):

- NCCL 2.19+ names each kernel by collective: ``ncclDevKernel_AllGather_RING_LL(...)``,
  ``ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(...)``, ``ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)``;
  older NCCL: ``ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)``.
- RCCL (ROCm) launches a generic kernel for most collectives: ``ncclDevKernel_Generic(...)``,
  ``ncclDevKernel_Generic_1(...)``; some builds name ``rcclGenericKernel`` / ``mscclKernel_*``. The name does
  not say which collective: the profiler's ``args["Collective name"]`` does (``allreduce``, ``broadcast``,
  ``_allgather_base`` ...), where recorded. Kineto copies those args from the collective's host op, so a
  kernel launched before the profiled window has none (recorded on an MI300X with RCCL 2.22.3: 5 of 17).

Launches and memory work (NVIDIA and AMD side by side in ``VENDOR_NAMES`` below):

- a kernel's launch is the host runtime (or driver) call with the same ``args.correlation``;
- CUPTI records memsets and device copies as ``gpu_memset`` / ``gpu_memcpy``; ROCm 7's rocprofiler-sdk
  records the runtime's fill and copy kernels (``__amd_rocclr_fillBufferAligned.kd``, launched by
  ``hipMemsetAsync``) as kernels. Those are memory work (kind ``memory``), not compute.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from aorta.timeline import begin_end
from aorta.timeline.begin_end import BeginEnd
from aorta.timeline.trace_check import DEVICE_CATEGORIES as DEVICE_CATEGORIES  # re-exported: one home
from aorta.timeline.trace_check import READ_ARGS, EventChecker, TraceEventError, is_read
from aorta.timeline.trace_json import EVENTS_KEY, TraceJSONError, read_trace_json
from aorta.timeline.trace_source import DAMAGED_GZIP, Source, damaged_gzip, open_source
from aorta.timeline.trace_source import TraceFileError as TraceFileError  # re-exported: one home

COMM_KINDS = ("all_gather", "reduce_scatter", "all_reduce", "broadcast", "reduce", "all_to_all", "other_comm")
COMPUTE = "compute"
MEMORY = "memory"  # the runtime's memset / copy kernels: device work, neither compute nor communication

# Every vendor-dependent string, NVIDIA and AMD side by side (as HTA's hta/common/types.py keeps them).
VENDOR_NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    # collective kernels, by a substring of their name (case-insensitive)
    "comm_kernel": {"nvidia": ("nccl",), "amd": ("rccl", "msccl", "nccl")},
    # Chrome-trace categories of the host calls that launch device work (linked by args.correlation)
    "launch_category": {"nvidia": ("cuda_runtime", "cuda_driver"), "amd": ("cuda_runtime", "cuda_driver")},
    # kernels that are the runtime's memsets and copies, by name prefix (CUPTI records those as gpu_memset /
    # gpu_memcpy, never as kernels; ROCm 7 records rocclr's blit kernels as kernels)
    "memory_kernel_prefix": {"nvidia": (), "amd": ("__amd_rocclr_",)},
}
COMM_KERNEL = re.compile(
    "|".join(sorted({n for v in VENDOR_NAMES["comm_kernel"].values() for n in v})), re.IGNORECASE
)
LAUNCH_CATEGORIES = tuple(sorted({c for v in VENDOR_NAMES["launch_category"].values() for c in v}))
MEMORY_KERNEL_PREFIXES = tuple(p for v in VENDOR_NAMES["memory_kernel_prefix"].values() for p in v)
# Chrome-trace categories: kernels; device work in general (copies and memsets occupy the GPU too:
# DEVICE_CATEGORIES, from aorta/timeline/trace_check.py).
KERNEL_CATEGORIES = ("kernel",)
# set by load_trace: how many duplicated events it dropped ({"events": all, "device_ops": kernels, copies, memsets})
DUPLICATES_KEY = "aortaDuplicatesDropped"
# Matched in order on the name lower-cased with '_' removed (all-reduce and reduce-scatter before reduce):
# NCCL kernel names (``ncclDevKernel_Broadcast_RING_LL``) and PyTorch's collective names in the profiler's
# args (``allreduce``, ``broadcast``, ``_allgather_base``, ``reduce_scatter_tensor_coalesced``, ``alltoall_base``).
_KIND_PATTERNS = (
    ("all_gather", ("allgather",)),
    ("reduce_scatter", ("reducescatter",)),
    ("all_reduce", ("allreduce",)),
    ("broadcast", ("broadcast",)),
    ("all_to_all", ("alltoall",)),
    ("reduce", ("reduce",)),
)


def _kind_from_text(text: str) -> str | None:
    flat = text.lower().replace("_", "")
    for kind, needles in _KIND_PATTERNS:
        if any(n in flat for n in needles):
            return kind
    return None


def is_memory_kernel(name: str) -> bool:
    """A kernel that is the runtime's memset or copy (ROCm 7: ``__amd_rocclr_fillBufferAligned.kd``)."""
    return name.startswith(MEMORY_KERNEL_PREFIXES)


def classify_kernel(name: str, collective_name: str | None = None) -> str:
    """``compute``, ``memory`` or one of ``COMM_KINDS`` for a device kernel's name (and its profiler
    collective arg): once per name (a trace of millions of kernels holds a few thousand names)."""
    if collective_name is not None and not isinstance(collective_name, str):
        # an arg that is no string (a list or number in a damaged trace): read as DeviceOp reads it, str() of
        # it where it is not empty (it raised AttributeError from .lower(), or TypeError from the cache)
        collective_name = str(collective_name) if collective_name else None
    return _classify_once(name, collective_name)


@functools.lru_cache(maxsize=1 << 16)
def _classify_once(name: str, collective_name: str | None) -> str:
    return _classify(name, collective_name)


def _classify(name: str, collective_name: str | None = None) -> str:
    if not (COMM_KERNEL.search(name) or collective_name):
        return MEMORY if is_memory_kernel(name) else COMPUTE
    # The kernel name's own collective wins (NCCL); a generic RCCL kernel takes the profiler's arg.
    head = name.split("(", 1)[0]
    return (
        _kind_from_text(head)
        or (_kind_from_text(collective_name) if collective_name else None)
        or "other_comm"
    )


def str_category(event: Mapping) -> str:
    """An event's ``cat``, lower-cased ("" where absent)."""
    return str(event.get("cat", "")).lower()


def is_kernel(event: dict) -> bool:
    return str(event.get("cat", "")).lower() in KERNEL_CATEGORIES


def is_comm_kernel(event: dict) -> bool:
    return (
        is_kernel(event)
        and classify_kernel(str(event.get("name", "")), (event.get("args") or {}).get("Collective name"))
        in COMM_KINDS
    )


def load_trace(path: str | Path, *, only_read: bool = False) -> dict:
    """One Chrome trace (``.json`` or gzipped, a file or a pipe) as ``{"traceEvents": [...], ...}``, its
    events checked and duplicates dropped (aorta/timeline/trace_check.py; the count under
    ``DUPLICATES_KEY``); ``TraceFileError`` naming the file (and the event's index) when it cannot be read, is
    not a trace or holds a malformed event. ``only_read``: keep only the events some figure is read from
    (``trace_check.is_read``): every event is still checked, but a large trace is not held whole."""
    with open_source(path) as source:
        return read_source(source, only_read=only_read)


def stream_source(
    source: Source, take: Callable[[int, object], bool], end: Callable[[dict], object] = lambda doc: None
) -> dict:
    """The trace's JSON read from ``source`` with ``take(index, event)`` given every event
    (aorta/timeline/trace_json.py), then ``end(doc)``; whatever goes wrong is ``TraceFileError`` naming the
    file (and the event)."""
    p = source.path
    try:
        doc = read_trace_json(source.stream, take)
        end(doc)
    except (TraceJSONError, UnicodeDecodeError) as exc:
        raise TraceFileError(f"{p}: not a Chrome trace JSON file ({exc})") from None
    except TraceEventError as exc:
        raise TraceFileError(f"{p}: {exc}") from None
    except DAMAGED_GZIP as exc:
        raise TraceFileError(damaged_gzip(p, exc)) from None
    except OSError as exc:
        raise TraceFileError(f"{p}: cannot read trace: {exc}") from None
    if not isinstance(doc.get(EVENTS_KEY), list):
        raise TraceFileError(f"{p}: not a Chrome trace (no 'traceEvents' list)")
    return doc


def read_source(source: Source, *, only_read: bool = False) -> dict:
    """``load_trace`` of a file already opened (its format told from its first bytes: one pass, so a pipe
    reads)."""
    checker = EventChecker(READ_ARGS if only_read else None)

    def finish(index: int, ev: object) -> bool:
        return checker.take(index, ev) and (not only_read or is_read(ev))  # type: ignore[arg-type]

    pairs = BeginEnd(finish)  # "B" / "E" pairs read as the "X" they stand for (aorta/timeline/begin_end.py)

    def take(index: int, ev: object) -> bool:
        if isinstance(ev, dict) and ev.get("ph") in ("B", "E"):
            return pairs.take(index, ev)
        return finish(index, ev)

    doc = stream_source(
        source, take, lambda doc: pairs.never_ended(lambda ev: ev.get("ph") == "X" and is_read(ev))
    )
    if pairs.used:
        doc[EVENTS_KEY] = begin_end.kept(doc[EVENTS_KEY])
    doc[DUPLICATES_KEY] = checker.dropped
    return doc
