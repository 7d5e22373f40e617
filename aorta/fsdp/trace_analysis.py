"""Device kernels from a profiler trace -> communication / compute overlap figures (pure: no torch).

Input is a list of ``DeviceOp`` (aorta/timeline/device_op.py: name, start µs, duration µs, stream, and the
collective's size where the profiler recorded it), parsed from a ``torch.profiler`` Chrome trace (``parse_chrome_trace``) or
built from ``prof.events()`` device events (``aorta.fsdp.profiling``).

Classification is by kernel name, as the kernels appear on the GPU timeline:

- NCCL 2.19+ names each kernel by collective: ``ncclDevKernel_AllGather_RING_LL(...)``,
  ``ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(...)``, ``ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)``;
  older NCCL: ``ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)``.
- RCCL (ROCm) launches a generic kernel for most collectives: ``ncclDevKernel_Generic_1(...)``,
  ``ncclDevKernel_Generic_4(...)``; some builds name ``rcclGenericKernel`` / ``mscclKernel_*``. The name does
  not say which collective ran, so the kind is taken from the kernel's profiler args
  (``"Collective name"``: ``_allgather_base``, ``allreduce``, ``reduce_scatter_tensor_coalesced`` ...) that
  Kineto attaches to communication kernels; without them (a kernel launched before the profiled window has
  none) the kernel counts as ``other_comm``, and ``analyze`` says how many had no collective.

The runtime's memset and copy kernels (ROCm 7 records ``__amd_rocclr_fillBufferAligned.kd`` as a kernel) are
``memory``: neither compute nor communication. Every other kernel that is not communication is compute. Definitions (docs/fsdp.md, "What each figure means"): comm busy and compute busy are
union lengths; overlapped = |compute ∩ comm|; exposed = comm busy − overlapped; overlap ratio =
overlapped / comm busy. busbw follows nccl-tests: algbw = bytes / time (GB = 1e9 bytes), busbw = algbw ×
2(n−1)/n for all-reduce, (n−1)/n for all-gather, reduce-scatter and all-to-all, 1 for broadcast and reduce,
with bytes the larger of the in
and out message (the full gathered or reduced buffer) and time the kernel's own duration.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aorta.timeline import interval_arrays as ia
from aorta.timeline import overlap
from aorta.timeline.device_identity import device_value, kineto_device, kineto_stream
from aorta.timeline.device_op import DeviceOp
from aorta.timeline.kernel_timeline import launch_dims
from aorta.timeline.launch_links import LaunchLinks, launch_links
from aorta.timeline.op_table import KINDS, OpTable
from aorta.timeline.trace_events import (
    COMM_KINDS,
    COMPUTE,
    DEVICE_CATEGORIES,
    MEMORY,
    load_trace,
)
from aorta.timeline.trace_json import ns_of

# c10 ScalarType names as Kineto writes them in "dtype", and the usual short spellings.
DTYPE_BYTES = {
    "float": 4,
    "float32": 4,
    "f32": 4,
    "double": 8,
    "float64": 8,
    "half": 2,
    "float16": 2,
    "f16": 2,
    "bfloat16": 2,
    "bf16": 2,
    "b16": 2,
    "int": 4,
    "int32": 4,
    "long": 8,
    "int64": 8,
    "char": 1,
    "byte": 1,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "short": 2,
    "int16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
}


# Collectives with a bandwidth figure; the first three are FSDP's (always listed, with a reason when absent).
BANDWIDTH_KINDS = ("all_gather", "reduce_scatter", "all_reduce", "broadcast", "reduce", "all_to_all")
FSDP_KINDS = BANDWIDTH_KINDS[:3]


def busbw_factor(kind: str, n_ranks: int) -> float | None:
    """nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): 2(n-1)/n for all-reduce, (n-1)/n for
    all-gather, reduce-scatter and all-to-all, 1 for broadcast and reduce; ``None`` for other kinds."""
    if n_ranks < 1:
        raise ValueError(f"n_ranks must be >= 1, got {n_ranks}")
    if kind == "all_reduce":
        return 2.0 * (n_ranks - 1) / n_ranks
    if kind in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n_ranks - 1) / n_ranks
    if kind in ("broadcast", "reduce"):
        return 1.0
    return None


def _message_bytes(args: Mapping) -> int | None:
    dtype = str(args.get("dtype", "")).lower()
    size = DTYPE_BYTES.get(dtype)
    raw = [args.get(k) for k in ("In msg nelems", "Out msg nelems")]
    nelems = [int(v) for v in raw if isinstance(v, (int, float)) and v > 0]
    if size is None or not nelems:
        return None
    return max(nelems) * size


def kernel_from_args(
    name: str,
    start_us: float,
    dur_us: float,
    stream,
    args: Mapping | None,
    launch_us: float | None = None,
    correlation: int | None = None,
    category: str = "kernel",
    link: str | None = None,
    device: int | str | None = None,
) -> DeviceOp:
    """A kernel's ``DeviceOp`` from its name, times and its profiler args (Chrome trace ``args``); ``device``
    where the caller read it from more than the args (aorta/timeline/device_identity.py)."""
    args = args or {}
    coll = args.get("Collective name")
    group = args.get("Group size")
    pg = args.get("Process Group Name")
    return DeviceOp(
        name=name,
        stream=stream,
        start_us=float(start_us),
        dur_us=float(dur_us),
        collective=str(coll) if coll else None,
        message_bytes=_message_bytes(args),
        group_size=int(group) if isinstance(group, (int, float)) and group > 0 else None,
        process_group=str(pg) if pg not in (None, "") else None,
        launch_us=launch_us,
        correlation=correlation,
        category=category,
        link=link,
        device=device if device is not None else device_value(args.get("device")),
        start_ns=(start_ns := ns_of(start_us)),
        dur_ns=ns_of(dur_us) if start_ns is not None else None,
        grid=launch_dims(args.get("grid")),
        block=launch_dims(args.get("block")),
    )


def parse_chrome_trace(
    trace: Mapping | Sequence[dict] | str | Path, links: LaunchLinks | None = None
) -> list[DeviceOp]:
    """Device work of a Chrome trace (``ph == "X"``: kernels, and copies and memsets as ``memory``), sorted by
    start; each with the host time of its launch where the trace has it, linked by correlation id or else
    by Kineto's flow events (aorta/timeline/launch_links.py; ``DeviceOp.link`` says which)."""
    data = load_trace(trace) if isinstance(trace, (str, Path)) else trace
    events: Sequence[dict] = list(data.get("traceEvents", []) if isinstance(data, Mapping) else data)
    links = links if links is not None else launch_links(events)
    out = []
    for ev in events:
        cat = str(ev.get("cat", "")).lower()
        if ev.get("ph") != "X" or cat not in DEVICE_CATEGORIES:
            continue
        args = ev.get("args") or {}
        key, launch, how = links.link(ev)
        out.append(
            kernel_from_args(
                ev["name"],
                ev["ts"],
                ev.get("dur", 0.0),
                kineto_stream(ev),
                args,
                launch.ts_us if launch else None,
                key if isinstance(key, int) else None,
                cat,
                how,
                kineto_device(ev),
            )
        )
    return sorted(out, key=lambda k: (k.start_us, k.end_us))


def _origin(kernels: Sequence[DeviceOp]) -> tuple[float, int | None]:
    """The first op's start (µs), and in ns where every op has the profiler's integer ns (rocprofv3)."""
    exact = all(k.start_ns is not None for k in kernels)
    t0_ns = min((k.start_ns for k in kernels if k.start_ns is not None), default=0) if exact else None
    return min((k.start_us for k in kernels), default=0.0), t0_ns


def _ms(
    kernels: Iterable[DeviceOp], origin: tuple[float, int | None] = (0.0, None)
) -> list[tuple[float, float]]:
    """ms from the origin: subtracted before dividing, so a trace on an absolute clock (the Unix epoch, as
    PyTorch 1.x writes; rocprofv3's ns since boot) keeps its precision: in integer ns where the profiler wrote
    them (divided first, 1.55e12 µs / 1e3 is off by up to 2e-4 µs per end: a window of 79.680 µs read
    0.0796802 ms)."""
    t0_us, t0_ns = origin
    out = []
    for k in kernels:
        if t0_ns is not None and k.start_ns is not None and k.dur_ns is not None:
            s = k.start_ns - t0_ns
            out.append((s / 1e6, (s + k.dur_ns) / 1e6))
        else:
            s_us = k.start_us - t0_us
            out.append((s_us / 1e3, (s_us + k.dur_us) / 1e3))
    return out


@dataclass
class OverlapSummary:
    """Figures of one profiled window. Times in ms over the window; ``*_per_step`` divide by ``steps``."""

    steps: int
    window_ms: float
    compute_busy_ms: float
    comm_busy_ms: float
    busy_ms_by_kind: dict[str, float]
    overlapped_ms: float
    exposed_comm_ms: float
    overlap_ratio: float | None
    kernel_count_by_kind: dict[str, int]  # compute, memory and each of COMM_KINDS
    busbw_gbps: dict[str, float | None]
    algbw_gbps: dict[str, float | None]
    unavailable: dict[str, str] = field(default_factory=dict)
    copy_busy_ms: float = 0.0  # union of memory work: copies, memsets and the runtime's fill / copy kernels
    copy_count: int = 0  # copies and memsets the profiler recorded as such (gpu_memcpy / gpu_memset)
    copy_only_ms: float = 0.0  # memory work with no compute or communication kernel beside it
    busy_ms: float | None = None  # union of all device work (compute, communication, copies)

    @property
    def idle_ms(self) -> float:
        """The window's time with no device work at all: copies and memsets are work, not idle."""
        if self.busy_ms is not None:
            return max(0.0, self.window_ms - self.busy_ms)
        return overlap.idle_ms(self.window_ms, self.compute_busy_ms, self.comm_busy_ms, self.overlapped_ms)

    @property
    def exposed_comm_ms_per_step(self) -> float:
        return self.exposed_comm_ms / self.steps

    @property
    def comm_busy_ms_per_step(self) -> float:
        return self.comm_busy_ms / self.steps

    @property
    def compute_busy_ms_per_step(self) -> float:
        return self.compute_busy_ms / self.steps

    @property
    def overlapped_ms_per_step(self) -> float:
        return self.overlapped_ms / self.steps

    def as_dict(self) -> dict:
        return {
            "steps": self.steps,
            "window_ms": self.window_ms,
            "compute_busy_ms": self.compute_busy_ms,
            "comm_busy_ms": self.comm_busy_ms,
            "copy_busy_ms": self.copy_busy_ms,
            "copy_count": self.copy_count,
            "copy_only_ms": self.copy_only_ms,
            "busy_ms_by_kind": dict(self.busy_ms_by_kind),
            "overlapped_ms": self.overlapped_ms,
            "exposed_comm_ms": self.exposed_comm_ms,
            "exposed_comm_ms_per_step": self.exposed_comm_ms_per_step,
            "idle_ms": self.idle_ms,
            "overlap_ratio": self.overlap_ratio,
            "kernel_count_by_kind": dict(self.kernel_count_by_kind),
            "busbw_gbps": dict(self.busbw_gbps),
            "algbw_gbps": dict(self.algbw_gbps),
            "unavailable": dict(self.unavailable),
        }


def bandwidth_gbps(
    kernels: Sequence[DeviceOp],
    kind: str,
    n_ranks: int | None,
    by_kind: Mapping[str, Sequence[DeviceOp]] | None = None,
) -> tuple[float | None, float | None, str | None]:
    """(algbw, busbw, reason-if-unavailable) of one collective kind: Σ bytes / Σ kernel time."""
    mine = [k for k in kernels if k.kind == kind] if by_kind is None else by_kind.get(kind, [])
    if not mine:
        return None, None, f"no {kind} kernels in the profiled window"
    sized = [k for k in mine if k.message_bytes is not None and k.dur_us > 0]
    if not sized:
        return None, None, f"{kind}: the profiler recorded no message size for its kernels"
    groups = {k.group_size for k in sized if k.group_size} or ({n_ranks} if n_ranks else set())
    if len(groups) != 1:
        return None, None, f"{kind}: group size unknown or mixed ({sorted(groups)})"
    n = groups.pop()
    algbw = (
        sum(k.message_bytes or 0 for k in sized) / (sum(k.dur_us for k in sized) * 1e-6) / 1e9
    )  # all sized (filtered above)
    factor = busbw_factor(kind, n)
    return algbw, (algbw * factor if factor is not None else None), None


def _ms_columns(ops: OpTable) -> ia.Intervals:
    """``_ms`` of a table's ops, as two arrays: the same subtraction, then division, op by op."""
    c = ops.columns
    if len(ops) == 0:
        return np.empty(0), np.empty(0)
    exact = bool(c["has_start_ns"].all())
    t0_us = c["start_us"].min()
    s_us = c["start_us"] - t0_us
    starts, ends = s_us / 1e3, (s_us + c["dur_us"]) / 1e3
    if exact:
        ns = c["has_dur_ns"]
        s_ns = c["start_ns"] - c["start_ns"].min()
        starts = np.where(ns, s_ns / 1e6, starts)
        ends = np.where(ns, (s_ns + c["dur_ns"]) / 1e6, ends)
    return starts, ends


def _bandwidth(ops: OpTable, mine: np.ndarray, kind: str, n_ranks: int | None):
    """``bandwidth_gbps`` of the ops at ``mine`` (a mask): their metadata read from the table's."""
    if not mine.any():
        return None, None, f"no {kind} kernels in the profiled window"
    metas = ops.tables.metas + [(None, None, None, None)]  # [-1]: no metadata
    rows = ops.columns["meta"][mine].tolist()
    durs = ops.columns["dur_us"][mine]
    sized = [(metas[m], d) for m, d in zip(rows, durs.tolist()) if metas[m][1] is not None and d > 0]
    if not sized:
        return None, None, f"{kind}: the profiler recorded no message size for its kernels"
    groups = {m[2] for m, _ in sized if m[2]} or ({n_ranks} if n_ranks else set())
    if len(groups) != 1:
        return None, None, f"{kind}: group size unknown or mixed ({sorted(groups)})"
    n = groups.pop()
    seconds = ia.total(np.array([d for _, d in sized])) * 1e-6
    algbw = sum(m[1] for m, _ in sized) / seconds / 1e9
    factor = busbw_factor(kind, n)
    return algbw, (algbw * factor if factor is not None else None), None


def analyze(kernels: Sequence[DeviceOp], *, steps: int, n_ranks: int | None = None) -> OverlapSummary:
    """Overlap and bandwidth figures for the kernels of ``steps`` profiled steps (a list of ops, or an
    ``OpTable``: read as columns, never an object per op)."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    ops = OpTable.of(kernels)
    kinds = ops.kind_codes()
    starts, ends = _ms_columns(ops)  # every figure is a length: measured from the first op
    code = {kind: KINDS.index(kind) for kind in KINDS}
    is_comm = kinds >= code[COMM_KINDS[0]]
    # the comm ops in COMM_KINDS order, as the list of ops per kind put them (a union sorts them anyway)
    compute_iv = (starts[kinds == code[COMPUTE]], ends[kinds == code[COMPUTE]])
    comm_iv = (starts[is_comm], ends[is_comm])
    copy_iv = (starts[kinds == code[MEMORY]], ends[kinds == code[MEMORY]])
    busy_iv = (np.concatenate([compute_iv[0], comm_iv[0], copy_iv[0]]),
               np.concatenate([compute_iv[1], comm_iv[1], copy_iv[1]]))  # fmt: skip
    comm_busy = ia.length(*comm_iv)
    both = ia.intersection(compute_iv, comm_iv)
    overlapped = ia.total(both[1] - both[0])
    unavailable: dict[str, str] = {}
    algbw: dict[str, float | None] = {}
    busbw: dict[str, float | None] = {}
    for kind in BANDWIDTH_KINDS:
        a, b, reason = _bandwidth(ops, kinds == code[kind], kind, n_ranks)
        algbw[kind], busbw[kind] = a, b
        if reason and (kind in FSDP_KINDS or (kinds == code[kind]).any()):
            unavailable[f"busbw_gbps.{kind}"] = reason
    other = kinds == code["other_comm"]
    collective = np.array([m[0] is None for m in ops.tables.metas] + [True])  # [-1]: no metadata
    unnamed = int((other & collective[ops.columns["meta"]]).sum())
    if unnamed:
        unavailable["busbw_gbps.other_comm"] = (
            f"{unnamed} of {int(is_comm.sum())} communication kernels name no collective (RCCL's generic kernel "
            "without the profiler's 'Collective name', as for a kernel launched before the profiled window): "
            "no kind, no bandwidth"
        )
    ratio = overlapped / comm_busy if comm_busy > 0.0 else None  # overlap.overlap_ratio
    if ratio is None:
        unavailable["overlap_ratio"] = "no communication kernels in the profiled window"
    is_kernel = ops.columns["category"] == 0
    copy_only = ia.difference(copy_iv, (np.concatenate([compute_iv[0], comm_iv[0]]),
                                        np.concatenate([compute_iv[1], comm_iv[1]])))  # fmt: skip
    return OverlapSummary(
        steps=steps,
        window_ms=ia.span(*busy_iv),
        compute_busy_ms=ia.length(*compute_iv),
        comm_busy_ms=comm_busy,
        busy_ms_by_kind={
            kind: ia.length(starts[kinds == code[kind]], ends[kinds == code[kind]]) for kind in COMM_KINDS
        },  # fmt: skip
        overlapped_ms=overlapped,
        exposed_comm_ms=comm_busy - overlapped,
        overlap_ratio=ratio,
        kernel_count_by_kind={kind: int((is_kernel & (kinds == code[kind])).sum()) for kind in KINDS},
        busbw_gbps=busbw,
        algbw_gbps=algbw,
        unavailable=unavailable,
        copy_busy_ms=ia.length(*copy_iv),
        copy_count=int((~is_kernel).sum()),
        copy_only_ms=ia.total(copy_only[1] - copy_only[0]),
        busy_ms=ia.length(*busy_iv),
    )


def timeline_segments(kernels: Sequence[DeviceOp]) -> dict:
    """Absolute (µs) intervals for the JSONL: compute and comm unions, their overlap, and active segments
    (each piece of the timeline with which kinds were running), so they line up with external profilers."""
    groups: dict[str, list[tuple[float, float]]] = {}
    for k in kernels:
        groups.setdefault(k.kind, []).append((k.start_us, k.end_us))
    comm = [iv for kind in COMM_KINDS for iv in groups.get(kind, [])]
    compute = groups.get(COMPUTE, [])
    return {
        "compute_us": overlap.union(compute),
        "comm_us": overlap.union(comm),
        "overlap_us": overlap.intersection(compute, comm),
        "active_segments_us": [[s, e, list(k)] for s, e, k in overlap.active_segments(groups)],
    }


def stream_busy_ms(kernels: Sequence[DeviceOp]) -> dict[str, float]:
    """Union length of each stream's kernels (ms), keyed by the stream id as a string."""
    groups: dict[str, list[tuple[float, float]]] = {}
    for k, iv in zip(kernels, _ms(kernels, _origin(kernels))):
        groups.setdefault(str(k.stream), []).append(iv)
    return {s: overlap.length_ms(ivs) for s, ivs in sorted(groups.items())}


MIN_MATCHED_SHARE = 0.5  # below this share of the reference's compute time matched by name, no figure


def compute_slowdown(
    kernels: Sequence[DeviceOp], reference: Sequence[DeviceOp]
) -> tuple[float | None, str | None]:
    """Compute kernels' time beside communication over their time in a compute-only reference.

    Kernels are matched by name; for each name both runs have, the ratio of mean durations is weighted by
    the reference's time in that name: Σ_name ref_total × (mean / ref_mean) / Σ_name ref_total. 1.0 = not
    slowed. ``(None, reason)`` when less than half of the reference's compute time finds a match (e.g.
    compiled kernels with other names).
    """

    def by_name(ks):
        out: dict[str, list[float]] = {}
        for k in ks:
            if k.kind == COMPUTE:
                out.setdefault(k.name, []).append(k.dur_us)
        return out

    mine, ref = by_name(kernels), by_name(reference)
    ref_total = sum(sum(v) for v in ref.values())
    if ref_total <= 0:
        return None, "the compute-only reference recorded no compute kernels"
    common = [n for n in ref if n in mine and sum(ref[n]) > 0]
    matched = sum(sum(ref[n]) for n in common)
    if matched < MIN_MATCHED_SHARE * ref_total:
        return None, (
            f"only {matched / ref_total:.0%} of the reference's compute time has kernels of the same "
            f"name in the scenario (needs {MIN_MATCHED_SHARE:.0%})"
        )
    weighted = sum(
        sum(ref[n]) * ((sum(mine[n]) / len(mine[n])) / (sum(ref[n]) / len(ref[n]))) for n in common
    )
    return weighted / matched, None
