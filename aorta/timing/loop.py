"""The one timing loop every benchmark goes through.

A round forks all its streams from a start event recorded on the origin stream, runs the workload's
step ``iterations_per_round`` times, joins every stream back into the origin stream and records the
end event there: the round's device time is start -> end with all streams joined. Inside the step,
``RoundRecorder.on(i)`` brackets work on stream ``i`` with a begin/end event pair, which gives the
per-stream intervals (ms from the round's start) used for busy time and effective concurrency.

Sync modes: ``per_round`` synchronizes after each round (host wall time per round is then real);
``end_only`` enqueues every round and synchronizes once; events are still read per round.

Work shorter than the event floor (~20 us per round: an event pair around one tiny kernel reads
12-15 us, docs/reference_floors.md) is timed as K iterations per round; ``choose_iterations`` picks K from a probe.
"""

from __future__ import annotations

import contextlib
import gc
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from aorta.record.bench import HOST_CLOCK
from aorta.timeline import kernel_timeline
from aorta.timeline.kernel_capture import KernelCapture

SYNC_MODES = ("per_round", "end_only")
METHODS = ("events", "events_k_batched", "graph_replay")
EVENT_FLOOR_MS = 0.020


@dataclass(frozen=True, kw_only=True)
class TimingPlan:
    warmup_rounds: int
    rounds: int
    sync_mode: str = "per_round"
    iterations_per_round: int | None = None  # None: probe, and batch K iterations if under the floor
    floor_ms: float = EVENT_FLOOR_MS
    target_round_ms: float = 0.5  # what a K-batched round aims for
    max_iterations: int = 10_000
    graph: bool = False  # the step replays a captured graph (the result says so)
    # Spin this many cycles on the origin stream before each round's start event: the host enqueues the
    # round while the device spins, so its launches start from a full queue instead of being staggered
    # by the host's ~9 us per eager launch. Outside the timed span (the start event follows it).
    hold_cycles: int = 0
    # Added to the hold once per iteration of the round (K iterations enqueue K times the launches): the
    # runner's GPU mode sizes it from the host's measured enqueue time of one step.
    hold_cycles_per_iteration: int = 0
    # Hold sized from the host: cycles per ms of host enqueue time of one iteration, measured in the round
    # before (a warm-up round first). Under the profiler each launch costs the host more, and a hold sized
    # for unprofiled launches would end before the round is queued: sized this way it follows the pass.
    hold_cycles_per_enqueue_ms: float = 0.0
    # Enqueued on the origin stream after the hold and before each round's start event: for a round whose
    # ranks meet in collectives, a collective every rank's round waits for, so the ranks' start events fire
    # together. Each rank's hold ends at its own time; without it the rank that starts first times its wait
    # for the others (fsdp_tp at 4 ranks read 8.8 to 25.1 ms a round by rank, issue 26).
    round_barrier: Callable[[], None] | None = None

    def __post_init__(self) -> None:
        if self.warmup_rounds < 0:
            raise ValueError(f"warmup_rounds must be >= 0, got {self.warmup_rounds}")
        if self.rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {self.rounds}")
        if self.sync_mode not in SYNC_MODES:
            raise ValueError(f"sync_mode must be one of {SYNC_MODES}, got {self.sync_mode!r}")
        if self.iterations_per_round is not None and self.iterations_per_round < 1:
            raise ValueError(f"iterations_per_round must be >= 1, got {self.iterations_per_round}")
        if self.hold_cycles < 0 or self.hold_cycles_per_iteration < 0 or self.hold_cycles_per_enqueue_ms < 0:
            raise ValueError(
                f"hold cycles must be >= 0, got {self.hold_cycles} + "
                f"{self.hold_cycles_per_iteration} per iteration"
            )

    def hold_for(self, k: int, enqueue_ms_per_iteration: float = 0.0) -> int:
        """Spin cycles before a round of ``k`` iterations, the host having taken ``enqueue_ms_per_iteration``
        to enqueue one iteration of the round before."""
        per_iteration = (
            self.hold_cycles_per_iteration + self.hold_cycles_per_enqueue_ms * enqueue_ms_per_iteration
        )
        return self.hold_cycles + int(k * per_iteration)


def choose_iterations(
    probe_ms: float, *, floor_ms: float = EVENT_FLOOR_MS, target_ms: float = 0.5, max_iterations: int = 10_000
) -> int:
    """K = 1 when one iteration is above the event floor, else enough iterations to reach ``target_ms``."""
    if probe_ms >= floor_ms:
        return 1
    if probe_ms <= 0.0:
        return max_iterations
    return max(1, min(max_iterations, math.ceil(target_ms / probe_ms)))


class RoundRecorder:
    """Handed to the step. ``with rec.use(i):`` / ``with rec.on(i, label=...):`` issues work on stream ``i``.

    With ``record_intervals`` (the kernel-timestamp pass), each block is also a labelled profiler range
    (``aorta.s<i>`` or ``aorta.s<i>:<label>``): the kernels launched inside it are filed under stream ``i``
    and the label (aorta/timeline/kernel_timeline.py). No event is recorded between launches: an event completes when
    its stream is free, not when its kernels get the GPU, so event spans count queueing as busy time
    (measured on an H100: 38.9 "concurrency" from event spans where the kernels gave 14.2).
    """

    def __init__(self, device, streams: Sequence, record_intervals: bool = True, launch_log=None):
        self.device = device
        self.streams = list(streams)
        self.origin = device.current_stream()
        self._record = record_intervals
        self._log = launch_log  # a LaunchLog told which stream's block is open (aorta/hw_queue/launch_log.py)

    @property
    def n_streams(self) -> int:
        return len(self.streams)

    def stream(self, i: int):
        return self.streams[i]

    def use(self, i: int):
        """Make stream ``i`` current for the block."""
        if not self._record and self._log is None:
            return self.device.use(self.streams[i])
        return self._marked(i, None)

    def on(self, i: int, label: str | None = None):
        """Run the block on stream ``i``; ``label`` names what kind of work it holds (copy, compute ...)."""
        return self._marked(i, label)

    @contextlib.contextmanager
    def _marked(self, i: int, label: str | None) -> Iterator[object]:
        with contextlib.ExitStack() as stack:
            if self._record:
                stack.enter_context(self.device.mark(kernel_timeline.block_label(i, label)))
            if self._log is not None:
                stack.enter_context(self._log.block(i))
            stack.enter_context(self.device.use(self.streams[i]))
            yield self.streams[i]

    def wait(self, waiter: int, waitee: int) -> None:
        """Stream ``waiter`` waits for the work enqueued so far on stream ``waitee``."""
        if waiter != waitee and self.streams[waiter] is not self.streams[waitee]:
            self.device.wait_stream(self.streams[waiter], self.streams[waitee])


@dataclass
class RoundTiming:
    device_ms: float  # start event -> end event, all streams joined, K iterations
    host_enqueue_ms: float
    host_wall_ms: float | None  # enqueue + synchronize (per_round mode only)
    # From the kernel-timestamp pass only (empty in timed rounds): the round's device ops by the workload's
    # stream index, ms from the round's first op; by block label; and one (first start, last end) per block.
    stream_intervals_ms: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    # Absolute host-clock times (seconds, the loop's ``host_clock``) bracketing when the round could have
    # run on the device: enqueue start -> its synchronize (per_round) or the final synchronize (end_only).
    # Telemetry samples taken on the same clock are matched to rounds through them.
    host_start_s: float | None = None
    host_end_s: float | None = None
    label_intervals_ms: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    block_spans_ms: dict[int, list[tuple[float, float] | None]] = field(default_factory=dict)
    kernels: kernel_timeline.KernelRound | None = None


@dataclass
class TimedRun:
    rounds: list[RoundTiming]
    iterations_per_round: int
    method: str  # events / events_k_batched / graph_replay
    sync_mode: str
    clock: str  # device_events or host_clock
    host_total_ms: float
    # Kernel-timestamp pass: why its rounds hold no device ops (None when they do, or when not asked).
    kernel_reason: str | None = None
    # Kernel-timestamp pass: what the profiler cost, in host seconds (``*_s``: its rounds, stopping it, the
    # trace's export, load and parse), the trace's size (``trace_mb``) and event count (``trace_events``):
    # where a slow suite spends its time (aorta/timeline/kernel_capture.py).
    profiler_cost: dict[str, float] = field(default_factory=dict)

    @property
    def device_ms(self) -> list[float]:
        return [r.device_ms for r in self.rounds]

    @property
    def per_iteration_ms(self) -> list[float]:
        return [r.device_ms / self.iterations_per_round for r in self.rounds]

    @property
    def kernel_rounds(self) -> list[kernel_timeline.KernelRound]:
        return [r.kernels for r in self.rounds if r.kernels is not None]


StepFn = Callable[[RoundRecorder], None]


def _enqueue_round(
    device,
    origin,
    streams,
    step: StepFn,
    rec: RoundRecorder,
    k: int,
    hold_cycles: int = 0,
    label: str | None = None,
    barrier: Callable[[], None] | None = None,
):
    if hold_cycles:
        device.spin(
            hold_cycles
        )  # on the origin stream, before the start event and the round's range: not timed
    if barrier is not None:
        barrier()  # after the hold, before the start event: every rank's round starts behind it
    with device.mark(label) if label is not None else contextlib.nullcontext():
        start = device.event()
        start.record(origin)
        for s in streams:  # fork: nothing on a stream starts before the round does
            device.wait_event(s, start)
        for _ in range(k):
            step(rec)
        for s in streams:  # join: the end event waits for every stream
            device.wait_stream(origin, s)
        end = device.event()
        end.record(origin)
    return start, end


def run_forked(device, streams: Sequence, body: Callable[[], None]) -> None:
    """Enqueue ``body`` with every stream forked from the current stream and joined back into it.

    Untimed; used for the correctness check and inside graph capture (where it becomes graph edges).
    """
    origin = device.current_stream()
    for s in streams:
        device.wait_stream(s, origin)  # fork: inputs were written on the origin stream
    body()
    for s in streams:
        device.wait_stream(origin, s)  # join: the caller's next read sees every stream's writes


def _read_round(
    start,
    end,
    host_enqueue_ms: float,
    host_wall_ms: float | None,
    host_span_s: tuple[float, float] | None = None,
) -> RoundTiming:
    t_start, t_end = host_span_s if host_span_s is not None else (None, None)
    return RoundTiming(start.elapsed_time(end), host_enqueue_ms, host_wall_ms, {}, t_start, t_end)


def time_rounds(
    device,
    streams: Sequence,
    step: StepFn,
    plan: TimingPlan,
    *,
    host_clock: Callable[[], float] = time.perf_counter,
    record_intervals: bool = True,
) -> TimedRun:
    """Warm up, pick K if asked, then time ``plan.rounds`` rounds. Raw per-round times are returned.

    ``record_intervals``: run the timed rounds under the profiler (``KernelCapture(device)``), each round and
    each stream block in a labelled range, and attach every round's device ops (kernel timestamps) to it.
    Only where the device gives kernel timestamps (a GPU); elsewhere ``kernel_reason`` says why not.
    """
    origin = device.current_stream()
    profiled = record_intervals and device.is_gpu
    rec = RoundRecorder(device, streams, record_intervals=profiled)
    barrier = plan.round_barrier

    pace = _HostPace()
    for _ in range(plan.warmup_rounds):
        with pace.round(1):
            _enqueue_round(
                device, origin, streams, step, rec, 1, plan.hold_for(1, pace.ms_per_iteration), None, barrier
            )
    device.synchronize()  # warm-up work must not spill into the probe or the first timed round

    k = plan.iterations_per_round
    if k is None:
        with pace.round(1):
            start, end = _enqueue_round(
                device, origin, streams, step, rec, 1, plan.hold_for(1, pace.ms_per_iteration), None, barrier
            )
        device.synchronize()  # the probe's events are read now
        k = choose_iterations(
            start.elapsed_time(end),
            floor_ms=plan.floor_ms,
            target_ms=plan.target_round_ms,
            max_iterations=plan.max_iterations,
        )

    timings: list[RoundTiming] = []
    kernel_reason = None
    with _gc_paused():  # a collection mid-round would land in host-bound rounds (eager launches)
        kernels = KernelCapture(device) if profiled else None
        with kernels if kernels is not None else contextlib.nullcontext():
            if profiled:  # one unlabelled round under the profiler first: its start-up cost lands there
                pace = _HostPace()  # launches cost the host more under the profiler: the hold learns anew
                with pace.round(1):
                    _enqueue_round(device, origin, streams, step, rec, 1, plan.hold_for(1), None, barrier)
                device.synchronize()  # the profiler's first round ends before the timed rounds start
            t_begin = host_clock()
            _timed_rounds(
                device, origin, streams, step, rec, k, plan, host_clock, timings, pace, labelled=profiled
            )
            host_total_ms = (host_clock() - t_begin) * 1e3
    profiler_cost: dict[str, float] = {}
    if kernels is not None:
        t_parse = time.perf_counter()
        kernel_reason = _attach_kernels(timings, kernels)
        profiler_cost = {
            "profiled_rounds_s": round(host_total_ms / 1e3, 4),
            **kernels.cost,
            "trace_parse_s": round(time.perf_counter() - t_parse, 4),
        }
    elif record_intervals:
        kernel_reason = kernel_timeline.NO_KERNELS_ON_CPU

    if plan.graph:
        method = "graph_replay"
    else:
        method = "events" if k == 1 else "events_k_batched"
    return TimedRun(
        timings,
        k,
        method,
        plan.sync_mode,
        "device_events" if device.is_gpu else HOST_CLOCK,
        host_total_ms,
        kernel_reason,
        profiler_cost,
    )


def _attach_kernels(timings: list[RoundTiming], capture) -> str | None:
    """Give each round its device ops from the captured trace; the reason when there are none."""
    trace = capture.trace()
    if trace is None:
        return capture.reason or "the profiler returned no trace"
    by_index = {r.index: r for r in kernel_timeline.parse_rounds(trace)}
    for n, timing in enumerate(timings):
        rnd = by_index.get(n)
        if rnd is None or not rnd.ops:
            continue
        timing.kernels = rnd
        timing.stream_intervals_ms = rnd.stream_intervals_ms()
        timing.label_intervals_ms = rnd.label_intervals_ms()
        timing.block_spans_ms = rnd.block_spans_ms()
    if not any(t.kernels is not None for t in timings):
        return "the profiler recorded no device kernels inside the timed rounds"
    return None


class _HostPace:
    """The host's enqueue time of one iteration, measured once per pass on a round with no hold sized from
    it (what a host-sized hold follows). Measured once, not round by round: where the round has more
    launches than the GPU's queue takes, the host blocks behind the hold, and a hold sized from that wait
    would grow without end."""

    def __init__(self) -> None:
        self.ms_per_iteration = 0.0
        self._measured = False

    @contextlib.contextmanager
    def round(self, k: int) -> Iterator[None]:
        t0 = time.perf_counter()
        yield
        if not self._measured:
            self.ms_per_iteration = (time.perf_counter() - t0) * 1e3 / k
            self._measured = True


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _timed_rounds(
    device,
    origin,
    streams,
    step: StepFn,
    rec: RoundRecorder,
    k: int,
    plan: TimingPlan,
    host_clock: Callable[[], float],
    timings: list[RoundTiming],
    pace: _HostPace,
    *,
    labelled: bool = False,
) -> None:
    pending = []
    for n in range(plan.rounds):
        label = kernel_timeline.round_label(n) if labelled else None
        hold = plan.hold_for(k, pace.ms_per_iteration)
        t0 = host_clock()
        start, end = _enqueue_round(device, origin, streams, step, rec, k, hold, label, plan.round_barrier)
        t1 = host_clock()
        if plan.sync_mode == "per_round":
            device.synchronize()  # per_round: this round's events are complete and host wall is real
            t2 = host_clock()
            timings.append(_read_round(start, end, (t1 - t0) * 1e3, (t2 - t0) * 1e3, (t0, t2)))
        else:
            pending.append((start, end, (t1 - t0) * 1e3, t0))
    if pending:
        device.synchronize()  # end_only: one synchronize, then every round's events are read
        t_sync = host_clock()
        timings.extend(_read_round(s, e, enq, None, (t0, t_sync)) for s, e, enq, t0 in pending)
