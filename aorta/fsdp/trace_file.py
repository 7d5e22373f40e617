"""One profiler trace file read for its figures: device work, steps and what the trace lacks (pure: no torch).

What ``aorta trace figures`` reads of a Kineto Chrome trace (``torch.profiler``'s ``*.pt.trace.json``, gzipped or
not), with the FSDP suite's own readers: the device work (``trace_analysis.parse_chrome_trace``: kernels,
copies, memsets, each linked to its launch by correlation id or flow event), the profiler's host steps and
their GPU-side copies (``ProfilerStep#N``, aorta/timeline/profiler_steps.py), the one-kernel launch calls that
no device event answers (aorta/timeline/launch_links.py) and the duplicated events the loader dropped.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from aorta.fsdp.trace_analysis import parse_chrome_trace
from aorta.timeline.device_identity import merged_ranks
from aorta.timeline.device_op import DeviceOp
from aorta.timeline.launch_links import launch_links, unanswered
from aorta.timeline.profiler_steps import GPU_COPY_CATEGORY, profiler_steps, step_number
from aorta.timeline.trace_events import (
    DEVICE_CATEGORIES,
    DUPLICATES_KEY,
    LAUNCH_CATEGORIES,
    load_trace,
    read_source,
)
from aorta.timeline.trace_source import Source, TraceFileError


@dataclass
class DeviceTrace:
    """A trace's device work and steps, as the figures read them."""

    path: Path
    ops: list[DeviceOp]
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


def _host_pid(events: list[dict]) -> int | None:
    """The process whose runtime calls the trace holds: the pid most of its launch events carry."""
    pids = Counter(
        ev.get("pid")
        for ev in events
        if str(ev.get("cat", "")).lower() in LAUNCH_CATEGORIES and ev.get("ph") == "X"
    )
    pid = pids.most_common(1)[0][0] if pids else None
    return pid if isinstance(pid, int) and not isinstance(pid, bool) else None


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
    events apart, so its launches link only its own kernels: aorta/timeline/device_identity.py). Only the
    events some figure is read from are kept. ``TraceFileError`` naming the file (and event) where it cannot
    be read."""
    if isinstance(path, Source):
        p, doc = path.path, read_source(path, only_read=True)
    else:
        p = Path(path)
        doc = load_trace(p, only_read=True)
    ranks = merged_ranks(doc)
    out = []
    if not ranks:
        info = doc.get("distributedInfo")
        out.append(
            _device_trace(p, doc["traceEvents"], _int_field(info, "rank"), _int_field(info, "world_size"))
        )
    by_pid: dict[object, list[dict]] = {pid: [] for pid in ranks}
    for ev in doc["traceEvents"]:
        if ev.get("pid") in by_pid:
            by_pid[ev.get("pid")].append(ev)
    for pid, events in sorted(by_pid.items(), key=lambda kv: ranks[kv[0]]["rank"]):
        info = ranks[pid].get("distributedInfo")
        world = _int_field(info, "world_size") or len(ranks)
        out.append(
            replace(_device_trace(p, events, ranks[pid]["rank"], world), merged_rank=ranks[pid]["rank"])
        )
    dropped = doc[DUPLICATES_KEY]  # counted over the file: said once, with its first rank
    out[0] = replace(
        out[0], duplicates_dropped=dropped["device_ops"], duplicate_events_dropped=dropped["events"]
    )
    return out


def _device_trace(p: Path, events: list[dict], rank: int | None, world_size: int | None) -> DeviceTrace:
    links = launch_links(events)
    ops = parse_chrome_trace(events, links)
    steps = profiler_steps(events)
    ranges = [(float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0.0))) for e in steps.values()]
    answered = {links.link(ev)[0] for ev in events if str(ev.get("cat", "")).lower() in DEVICE_CATEGORIES}
    return DeviceTrace(
        path=p,
        ops=ops,
        step_ranges=ranges,
        gpu_step_ranges=_gpu_step_ranges(events, dict(zip(steps, ranges))),
        missing_launches_us=[call.ts_us for call in unanswered(links, answered)],
        step_numbers=list(steps),
        launch_calls=len(links.one_kernel_calls),
        rank=rank,
        host_pid=_host_pid(events),
        world_size=world_size,
    )
