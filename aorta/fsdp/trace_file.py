"""One profiler trace file read for its figures: device work, steps and what the trace lacks (pure: no torch).

What ``aorta trace figures`` reads of a Kineto Chrome trace (``torch.profiler``'s ``*.pt.trace.json``, gzipped or
not), read as a stream into columns (aorta/fsdp/trace_stream.py, with the rules of the dict-based readers it
equals: ``trace_analysis.parse_chrome_trace``, aorta/timeline/launch_links.py): the device work (kernels, copies,
memsets, each linked to its launch by correlation id or flow event) as an op table (aorta/timeline/op_table.py),
the profiler's host steps and their GPU-side copies (``ProfilerStep#N``, aorta/timeline/profiler_steps.py), the
one-kernel launch calls that no device event answers and the duplicated events dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from aorta.fsdp.trace_stream import KinetoStream, Read
from aorta.timeline.device_op import DeviceOp
from aorta.timeline.profiler_steps import GPU_COPY_CATEGORY, profiler_steps, step_number
from aorta.timeline.trace_events import stream_source
from aorta.timeline.trace_source import Source, TraceFileError, open_source


@dataclass
class DeviceTrace:
    """A trace's device work and steps, as the figures read them."""

    path: Path
    ops: Sequence[DeviceOp]  # an OpTable (aorta/timeline/op_table.py) as the readers give them
    step_ranges: list[tuple[float, float]]  # host ProfilerStep ranges (µs), in step order
    # the profiler's GPU-side copy of each host step (same order), None where the trace has none
    gpu_step_ranges: list[tuple[float, float] | None] = field(default_factory=list)
    missing_launches_us: list[float] = field(default_factory=list)  # launch calls no device op answers
    duplicates_dropped: int = 0  # duplicated device ops (kernels, copies, memsets) the loader dropped
    duplicate_events_dropped: int = 0  # every duplicated event dropped (flow events too)
    rank: int | None = None  # distributedInfo.rank, where the profiler wrote it
    world_size: int | None = None  # distributedInfo.world_size, where the profiler wrote it
    source: str = "kineto"  # which reader: kineto, rocprofv3-csv, rocpd
    api_calls: dict[str, int] = field(default_factory=dict)  # RCCL / HIP API calls by name (rocprofv3)
    records: dict[str, int] = field(default_factory=dict)  # rows read per record kind (rocprofv3)
    not_read: list[str] = field(default_factory=list)  # files of the output that hold no trace record
    step_numbers: list[int] = field(default_factory=list)  # N of each ProfilerStep#N range, in step order
    process: int | None = None  # the process's pid, where one output holds several (rocprofv3's host folder)
    reader_note: str | None = None  # what the reader left out or dropped, and why (rocprofv3)
    launch_calls: int = 0  # host calls that launch one kernel (hipLaunchKernel ...), answered or not
    device: int | str | None = None  # the GPU of this timeline, where the process ran on several (per_device)
    host_pid: int | None = (
        None  # the pid of the process whose launches a Kineto trace holds (the most common)
    )
    merged_rank: int | None = None  # the rank of a trace ``aorta trace merge`` wrote that this one is


def _gpu_step_ranges(events: list[dict], host: dict[int, tuple[float, float]]) -> list:
    gpu: dict[int, tuple[float, float]] = {}
    for ev in events:
        if ev.get("ph") == "X" and str(ev.get("cat", "")).lower() == GPU_COPY_CATEGORY:
            n = step_number(ev.get("name", ""))
            if n is not None:
                gpu.setdefault(n, (float(ev["ts"]), float(ev["ts"]) + float(ev.get("dur", 0.0))))
    return [gpu.get(n) for n in sorted(host)]


def _int_field(info: object, key: str) -> int | None:
    value = info.get(key) if isinstance(info, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_kineto_trace(path: str | Path | Source) -> DeviceTrace:
    """A Kineto Chrome trace of one process (``read_kineto_traces``); ``TraceFileError`` naming the file where
    it is a merge of several ranks."""
    traces = read_kineto_traces(path)
    if len(traces) > 1:
        raise TraceFileError(
            f"{traces[0].path}: a merged trace of {len(traces)} ranks (aorta trace merge): read each as a rank"
        )
    return traces[0]


def read_kineto_traces(path: str | Path | Source) -> list[DeviceTrace]:
    """A Kineto Chrome trace (a path, or a file already opened by aorta/timeline/trace_source.py): one
    ``DeviceTrace`` for a profiler's trace, one per rank for a trace ``aorta trace merge`` wrote (each rank's
    events apart, so its launches link only its own kernels: aorta/timeline/device_identity.py). Read as a stream
    into columns (aorta/fsdp/trace_stream.py): no event is held. ``TraceFileError`` naming the file (and event)
    where it cannot be read."""
    if not isinstance(path, Source):
        with open_source(path) as source:
            return read_kineto_traces(source)
    stream, done = KinetoStream(), dict[str, tuple]()
    doc = stream_source(path, stream.take, lambda doc: done.update(read=stream.finish(doc)))
    reads, dropped = done["read"]
    info = doc.get("distributedInfo")
    out = []
    for read, rank_info in reads:
        if rank_info is None:
            out.append(
                _device_trace(path.path, read, _int_field(info, "rank"), _int_field(info, "world_size"))
            )
            continue
        world = _int_field(rank_info.get("distributedInfo"), "world_size") or len(reads)
        rank = rank_info["rank"]
        out.append(replace(_device_trace(path.path, read, rank, world), merged_rank=rank))
    # counted over the file: said once, with its first rank
    out[0] = replace(
        out[0], duplicates_dropped=dropped["device_ops"], duplicate_events_dropped=dropped["events"]
    )
    return out


def _device_trace(p: Path, read: Read, rank: int | None, world_size: int | None) -> DeviceTrace:
    steps = profiler_steps(read.steps)
    ranges = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0.0))) for e in steps.values()]
    return DeviceTrace(
        path=p,
        ops=read.ops,
        step_ranges=ranges,
        gpu_step_ranges=_gpu_step_ranges(read.steps, dict(zip(steps, ranges))),
        missing_launches_us=read.missing_launches_us,
        step_numbers=list(steps),
        launch_calls=read.launch_calls,
        rank=rank,
        host_pid=read.host_pid,
        world_size=world_size,
    )
