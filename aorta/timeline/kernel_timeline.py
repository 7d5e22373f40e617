"""Rounds on the GPU's own timeline: profiler kernel timestamps -> per-round figures (pure: no torch).

Input is a ``torch.profiler`` Chrome trace (CUPTI on NVIDIA, roctracer on AMD; the same format). Three
kinds of trace event are read:

- device work: ``cat`` ``kernel``, ``gpu_memcpy`` or ``gpu_memset`` (copies and memsets occupy the GPU
  too), with ``ts`` / ``dur`` in µs and ``args.stream`` (the runtime's stream id) and ``args.correlation``;
- launches: ``cat`` ``cuda_runtime`` / ``cuda_driver`` (``cudaLaunchKernel``, ``hipLaunchKernel``,
  ``cudaGraphLaunch``, ``cuLaunchKernel`` ...) with the same ``args.correlation`` and the host thread
  (``pid``, ``tid``) and time (``ts``) of the call;
- labelled host ranges: ``cat`` ``user_annotation`` (``torch.profiler.record_function``), named
  ``aorta.round.<n>`` around each timed round's launches and ``aorta.s<i>`` / ``aorta.s<i>:<label>``
  around the launches a workload issues on its stream ``i`` (``RoundRecorder.use`` / ``on``).

A device op belongs to the round and block whose host range holds its launch call on the same thread
(the innermost block where blocks nest). Ops of no round (warm-up, the untimed hold kernel) are left out.

Per round (docs/hw_queue_figures.md, "Kernel timestamps"), with the round's span from its first op's start to its last op's end:
per-stream busy = union of the stream's ops; effective concurrency = Σ busy / span; GPU busy share =
|union of all ops| / span (low: the device waited for the host); streams with work = device streams that
received ops. Event spans are never used: an event completes when its stream is free, not when its
kernels get the GPU, so event spans count queueing as busy time.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from aorta import stats
from aorta.timeline import overlap
from aorta.timeline.device_identity import kineto_device, kineto_stream
from aorta.timeline.device_op import DeviceOp
from aorta.timeline.trace_events import DEVICE_CATEGORIES, LAUNCH_CATEGORIES
from aorta.timeline.trace_json import ns_of

RANGE_CATEGORY = "user_annotation"
ROUND_PREFIX = "aorta.round."
BLOCK_PREFIX = "aorta.s"
NO_KERNELS_ON_CPU = "CPU backend: the profiler records no device kernel timestamps"
HOST_BOUND_SHARE = 0.70  # a round whose GPU idles >= 30% of its span is read as host-bound

_BLOCK_NAME = re.compile(r"^aorta\.s(\d+)(?::(.*))?$")
_ROUND_NAME = re.compile(r"^aorta\.round\.(\d+)$")

Interval = tuple[float, float]


def round_label(n: int) -> str:
    return f"{ROUND_PREFIX}{n}"


def block_label(stream_index: int, label: str | None = None) -> str:
    return f"{BLOCK_PREFIX}{stream_index}" + (f":{label}" if label else "")


@dataclass
class Block:
    """The ops launched inside one ``aorta.s<i>[:label]`` range, in the round's issue order."""

    stream_index: int
    label: str | None
    ops: list[DeviceOp] = field(default_factory=list)


@dataclass
class KernelRound:
    """One timed round's device ops (those launched inside its ``aorta.round.<n>`` range)."""

    index: int
    ops: list[DeviceOp] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)

    @functools.cached_property
    def origin_us(self) -> float:
        """The round's first op start (read once the round is parsed: every figure is measured from it)."""
        return min(op.start_us for op in self.ops) if self.ops else 0.0

    def _ms(self, ops: Iterable[DeviceOp]) -> list[Interval]:
        t0 = self.origin_us
        return [((op.start_us - t0) / 1e3, (op.end_us - t0) / 1e3) for op in ops]

    @property
    def span_ms(self) -> float:
        return overlap.span_ms(self._ms(self.ops))

    def device_stream_intervals_ms(self) -> dict[int | str, list[Interval]]:
        """Ops by the runtime's stream id, ms from the round's first op (every op, labelled or not)."""
        out: dict[int | str, list[Interval]] = {}
        for op, iv in zip(self.ops, self._ms(self.ops)):
            out.setdefault(op.stream, []).append(iv)
        return out

    def stream_intervals_ms(self, label: str | None = None) -> dict[int, list[Interval]]:
        """Ops by the workload's stream index (from the blocks), ms from the round's first op; only the
        blocks labelled ``label`` when one is given."""
        out: dict[int, list[Interval]] = {}
        for b in self.blocks:
            if label is None or b.label == label:
                out.setdefault(b.stream_index, []).extend(self._ms(b.ops))
        return out

    def label_intervals_ms(self) -> dict[str, list[Interval]]:
        """Ops by block label (``rec.on(i, label=...)``), every stream together."""
        out: dict[str, list[Interval]] = {}
        for b in self.blocks:
            if b.label is not None:
                out.setdefault(b.label, []).extend(self._ms(b.ops))
        return out

    def block_spans_ms(self) -> dict[int, list[Interval | None]]:
        """Per stream index, one (first op start, last op end) per block in issue order; ``None`` for a
        block that launched no device work."""
        out: dict[int, list[Interval | None]] = {}
        for b in self.blocks:
            ivs = self._ms(b.ops)
            out.setdefault(b.stream_index, []).append(
                (min(s for s, _ in ivs), max(e for _, e in ivs)) if ivs else None
            )
        return out


def round_figures(rnd: KernelRound) -> dict:
    """Figures of one round from its ops: span, per-stream busy, Σ busy / span, GPU busy share."""
    by_stream = rnd.device_stream_intervals_ms()
    span = rnd.span_ms
    busy = overlap.per_stream_busy_ms(by_stream)
    all_ops = [iv for ivs in by_stream.values() for iv in ivs]
    union_ms = overlap.length_ms(all_ops)
    return {
        "span_ms": span,
        "per_stream_busy_ms": busy,
        "gpu_busy_ms": union_ms,
        "effective_concurrency": sum(busy.values()) / span if span > 0 else None,
        "gpu_busy_share": union_ms / span if span > 0 else None,
        "streams_with_work": len(by_stream),
    }


def summarize(rounds: Sequence[KernelRound], iterations_per_round: int = 1) -> dict:
    """Medians over rounds. Busy and span are per iteration (÷ K); concurrency and busy share are ratios."""
    if iterations_per_round < 1:
        raise ValueError(f"iterations_per_round must be >= 1, got {iterations_per_round}")
    k = iterations_per_round
    figs = [round_figures(r) for r in rounds if r.ops]
    if not figs:
        return {"rounds_with_kernels": 0}
    streams = sorted({s for f in figs for s in f["per_stream_busy_ms"]}, key=str)
    conc = [f["effective_concurrency"] for f in figs if f["effective_concurrency"] is not None]
    share = [f["gpu_busy_share"] for f in figs if f["gpu_busy_share"] is not None]
    return {
        "rounds_with_kernels": len(figs),
        "device_stream_ids": streams,
        "per_stream_busy_ms": [
            stats.median([f["per_stream_busy_ms"].get(s, 0.0) / k for f in figs]) for s in streams
        ],
        "kernel_span_ms_per_iteration": stats.median([f["span_ms"] / k for f in figs]),
        "gpu_busy_ms_per_iteration": stats.median([f["gpu_busy_ms"] / k for f in figs]),
        "effective_concurrency": stats.median(conc) if conc else None,
        "effective_concurrency_samples": conc,
        "gpu_busy_share": stats.median(share) if share else None,
        "gpu_busy_share_samples": share,
        "streams_with_work": len(streams),
    }


def host_bound_note(
    gpu_busy_share: float | None, threshold: float = HOST_BOUND_SHARE, *, graph_replay: bool = False
) -> str | None:
    """The reading note for a round in which the GPU idled for ``1 - threshold`` of the span or more. In a
    graph replay the host launches nothing inside the round: the gaps are the GPU's own."""
    if gpu_busy_share is None or gpu_busy_share >= threshold:
        return None
    if graph_replay:
        return (
            f"GPU idle: busy {gpu_busy_share:.0%} of a replayed graph's round; no host launch is inside it, so "
            "the gaps are the GPU's own (dependencies, dispatch between short kernels)"
        )
    return (
        f"host-bound: GPU busy {gpu_busy_share:.0%} of the round; the host's launch path is what is measured"
    )


HOST_PACED_SHARE = 0.9  # a round the host took >= 90% of its device time to enqueue is paced by the host


def host_paced_note(
    enqueue_ms: float | None, device_ms: float | None, threshold: float = HOST_PACED_SHARE
) -> str | None:
    """The reading note for timed rounds the host paced: launches issued as the round ran (no launch hold,
    no graph: the caller asks only for those) whose enqueue took ``threshold`` of the device time or more,
    so the GPU waited on each launch. Read from the timed rounds themselves, so every run has it, with or
    without a kernel pass (a gate's lean run of eager tiny kernels: host 49.5 ms to enqueue a 49.5 ms
    iteration on an H200)."""
    if enqueue_ms is None or not device_ms or device_ms <= 0 or enqueue_ms < threshold * device_ms:
        return None
    return (
        f"host-bound: the host took {enqueue_ms:.3g} ms to enqueue each {device_ms:.3g} ms iteration; the "
        "device time is the host's launch pace (CPU, driver, runtime), which moves between processes"
    )


# --------------------------------------------------------------------------- parsing
@dataclass(frozen=True)
class _Range:
    start_us: float
    end_us: float
    name: str


class _Ranges:
    """One thread's ranges of one family, for 'which range holds time t' (innermost where nested)."""

    def __init__(self, ranges: Iterable[_Range]):
        self.items = sorted(ranges, key=lambda r: (r.start_us, -r.end_us))
        self.starts = [r.start_us for r in self.items]
        self.max_end: list[float] = []
        for r in self.items:
            self.max_end.append(max(r.end_us, self.max_end[-1]) if self.max_end else r.end_us)

    def holding(self, t: float) -> tuple[int, _Range] | None:
        j = bisect.bisect_right(self.starts, t) - 1
        while j >= 0 and self.max_end[j] >= t:  # walk back only while some earlier range reaches t
            if self.items[j].end_us >= t:
                return j, self.items[j]
            j -= 1
        return None


def trace_events(trace: Mapping | Sequence) -> Sequence[Mapping]:
    """The event list of a Chrome trace document (or the list itself)."""
    return trace.get("traceEvents", []) if isinstance(trace, Mapping) else trace


def parse_rounds(trace: Mapping | Sequence) -> list[KernelRound]:
    """The ``aorta.round.<n>`` rounds of a Chrome trace with their device ops and blocks, by round number."""
    rounds_by_thread: dict[tuple, list[_Range]] = {}
    blocks_by_thread: dict[tuple, list[_Range]] = {}
    launches: dict[int, tuple[tuple, float]] = {}
    device: list[tuple[int | None, DeviceOp]] = []
    for ev in trace_events(trace):
        if ev.get("ph") != "X":
            continue
        cat = str(ev.get("cat", "")).lower()
        args = ev.get("args") or {}
        if cat == RANGE_CATEGORY:
            name = str(ev.get("name", ""))
            thread = (ev.get("pid"), ev.get("tid"))
            rng = _Range(float(ev["ts"]), float(ev["ts"]) + float(ev.get("dur", 0.0)), name)
            if _ROUND_NAME.match(name):
                rounds_by_thread.setdefault(thread, []).append(rng)
            elif _BLOCK_NAME.match(name):
                blocks_by_thread.setdefault(thread, []).append(rng)
        elif cat in LAUNCH_CATEGORIES and "correlation" in args:
            launches[int(args["correlation"])] = ((ev.get("pid"), ev.get("tid")), float(ev["ts"]))
        elif cat in DEVICE_CATEGORIES:
            op = DeviceOp(
                str(ev.get("name", "")),
                kineto_stream(ev),
                float(ev["ts"]),
                float(ev.get("dur", 0.0)),
                cat,
                launch_dims(args.get("grid")),
                launch_dims(args.get("block")),
                start_ns=(start_ns := ns_of(ev["ts"])),
                dur_ns=ns_of(ev.get("dur", 0)) if start_ns is not None else None,
                device=kineto_device(ev),
            )
            corr = args.get("correlation")
            device.append((int(corr) if corr is not None else None, op))

    round_index = {t: _Ranges(rs) for t, rs in rounds_by_thread.items()}
    block_index = {t: _Ranges(bs) for t, bs in blocks_by_thread.items()}
    rounds: dict[int, KernelRound] = {}
    blocks: dict[tuple, Block] = {}  # (thread, block position) -> Block, filled in launch order
    block_round: dict[tuple, int] = {}
    for thread_rounds in round_index.values():  # every round, even one that launched nothing
        for r in thread_rounds.items:
            n = int(_ROUND_NAME.match(r.name).group(1))  # type: ignore[union-attr]
            rounds.setdefault(n, KernelRound(n))
    for thread, bs in block_index.items():  # every block inside a round, in issue order
        rs = round_index.get(thread)
        for j, b in enumerate(bs.items):
            held = rs.holding(b.start_us) if rs else None
            if held is None:
                continue
            n = int(_ROUND_NAME.match(held[1].name).group(1))  # type: ignore[union-attr]
            m = _BLOCK_NAME.match(b.name)
            blocks[(thread, j)] = Block(int(m.group(1)), m.group(2))  # type: ignore[union-attr]
            block_round[(thread, j)] = n
    for key in sorted(blocks, key=lambda key: (block_round[key], block_index[key[0]].items[key[1]].start_us)):
        rounds[block_round[key]].blocks.append(blocks[key])

    for corr, op in device:
        launch = launches.get(corr) if corr is not None else None
        if launch is None:
            continue
        thread, t = launch
        held = round_index[thread].holding(t) if thread in round_index else None
        if held is None:
            continue
        rnd = rounds[int(_ROUND_NAME.match(held[1].name).group(1))]  # type: ignore[union-attr]
        rnd.ops.append(op)
        inner = block_index[thread].holding(t) if thread in block_index else None
        if inner is not None and (thread, inner[0]) in blocks:
            blocks[(thread, inner[0])].ops.append(op)
    for rnd in rounds.values():
        rnd.ops.sort(key=lambda op: (op.start_us, op.end_us))
        for blk in rnd.blocks:
            blk.ops.sort(key=lambda op: (op.start_us, op.end_us))
    return [rounds[n] for n in sorted(rounds)]


def launch_dims(value) -> tuple[int, ...] | None:
    """A launch's ``grid`` / ``block`` arg (``[x, y, z]``) as a tuple, or None where absent or malformed."""
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) for v in value):
        return tuple(value)
    return None


def trim_trace(trace: Mapping | Sequence) -> dict:
    """Only the events and fields ``parse_rounds`` reads (to store small recorded traces for tests)."""
    keep = []
    for ev in trace_events(trace):
        cat = str(ev.get("cat", "")).lower()
        if ev.get("ph") != "X":
            continue
        args = ev.get("args") or {}
        if cat == RANGE_CATEGORY and (
            _ROUND_NAME.match(str(ev.get("name"))) or _BLOCK_NAME.match(str(ev.get("name")))
        ):
            small_args: dict = {}
        elif cat in LAUNCH_CATEGORIES and "correlation" in args:
            small_args = {"correlation": args["correlation"]}
        elif cat in DEVICE_CATEGORIES:
            small_args = {k: args[k] for k in ("stream", "correlation", "grid", "block") if k in args}
        else:
            continue
        keep.append(
            {
                "ph": "X",
                "cat": ev.get("cat"),
                "name": ev.get("name"),
                "pid": ev.get("pid"),
                "tid": ev.get("tid"),
                "ts": ev.get("ts"),
                "dur": ev.get("dur", 0),
                "args": small_args,
            }
        )
    return {"traceEvents": keep}
