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

    def __post_init__(self) -> None:
        if self.warmup_rounds < 0:
            raise ValueError(f"warmup_rounds must be >= 0, got {self.warmup_rounds}")
        if self.rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {self.rounds}")
        if self.sync_mode not in SYNC_MODES:
            raise ValueError(f"sync_mode must be one of {SYNC_MODES}, got {self.sync_mode!r}")
        if self.iterations_per_round is not None and self.iterations_per_round < 1:
            raise ValueError(f"iterations_per_round must be >= 1, got {self.iterations_per_round}")


def choose_iterations(probe_ms: float, *, floor_ms: float = EVENT_FLOOR_MS, target_ms: float = 0.5,
                      max_iterations: int = 10_000) -> int:
    """K = 1 when one iteration is above the event floor, else enough iterations to reach ``target_ms``."""
    if probe_ms >= floor_ms:
        return 1
    if probe_ms <= 0.0:
        return max_iterations
    return max(1, min(max_iterations, math.ceil(target_ms / probe_ms)))


class RoundRecorder:
    """Handed to the step. ``with rec.use(i):`` issues work on stream ``i``.

    A stream's interval opens with an event recorded on it just before its first launch of the round
    and closes with an event recorded after every launch of the round, at the join. Nothing is
    recorded between launches on purpose: an end event waits for its stream's work, and streams share
    a few hardware queues (CUDA_DEVICE_MAX_CONNECTIONS, default 8; GPU_MAX_HW_QUEUES on ROCm), so an
    event issued between other streams' launches would serialize every stream sharing its queue
    (measured on an H100: 64 streams read 8x concurrency with per-kernel events, 61x without).
    ``with rec.on(i):`` records a closed segment instead, for work whose gaps matter more than that.
    """

    def __init__(self, device, streams: Sequence, record_intervals: bool = True):
        self.device = device
        self.streams = list(streams)
        self.origin = device.current_stream()
        self._record = record_intervals
        self._marks: list[tuple[int, object, object]] = []
        self._open: dict[int, object] = {}

    @property
    def n_streams(self) -> int:
        return len(self.streams)

    def stream(self, i: int):
        return self.streams[i]

    def use(self, i: int):
        """Make stream ``i`` current; its interval opens here on first use in the round."""
        if self._record and i not in self._open:
            self._open[i] = self._event_on(i)
        return self.device.use(self.streams[i])

    @contextlib.contextmanager
    def on(self, i: int) -> Iterator[object]:
        """Run the block on stream ``i`` as one closed segment (begin event, work, end event)."""
        begin = self._event_on(i) if self._record else None
        with self.device.use(self.streams[i]):
            yield self.streams[i]
        if self._record:
            self._marks.append((i, begin, self._event_on(i)))

    def wait(self, waiter: int, waitee: int) -> None:
        """Stream ``waiter`` waits for the work enqueued so far on stream ``waitee``."""
        if waiter != waitee and self.streams[waiter] is not self.streams[waitee]:
            self.device.wait_stream(self.streams[waiter], self.streams[waitee])

    def _event_on(self, i: int):
        event = self.device.event()
        event.record(self.streams[i])
        return event

    def _take_marks(self) -> list[tuple[int, object, object]]:
        for i, begin in self._open.items():  # close every open interval after all launches
            self._marks.append((i, begin, self._event_on(i)))
        self._open = {}
        marks, self._marks = self._marks, []
        return marks


@dataclass
class RoundTiming:
    device_ms: float  # start event -> end event, all streams joined, K iterations
    host_enqueue_ms: float
    host_wall_ms: float | None  # enqueue + synchronize (per_round mode only)
    stream_intervals_ms: dict[int, list[tuple[float, float]]] = field(default_factory=dict)
    # Absolute host-clock times (seconds, the loop's ``host_clock``) bracketing when the round could have
    # run on the device: enqueue start -> its synchronize (per_round) or the final synchronize (end_only).
    # Telemetry samples taken on the same clock are matched to rounds through them.
    host_start_s: float | None = None
    host_end_s: float | None = None


@dataclass
class TimedRun:
    rounds: list[RoundTiming]
    iterations_per_round: int
    method: str  # events / events_k_batched / graph_replay
    sync_mode: str
    clock: str  # device_events or host_clock
    host_total_ms: float

    @property
    def device_ms(self) -> list[float]:
        return [r.device_ms for r in self.rounds]

    @property
    def per_iteration_ms(self) -> list[float]:
        return [r.device_ms / self.iterations_per_round for r in self.rounds]


StepFn = Callable[[RoundRecorder], None]


def _enqueue_round(device, origin, streams, step: StepFn, rec: RoundRecorder, k: int, hold_cycles: int = 0):
    if hold_cycles:
        device.spin(hold_cycles)  # on the origin stream, before the start event: not timed
    start = device.event()
    start.record(origin)
    for s in streams:  # fork: nothing on a stream starts before the round does
        device.wait_event(s, start)
    for _ in range(k):
        step(rec)
    marks = rec._take_marks()  # close the streams' intervals after every launch of the round
    for s in streams:  # join: the end event waits for every stream
        device.wait_stream(origin, s)
    end = device.event()
    end.record(origin)
    return start, end, marks


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


def _read_round(start, end, marks, host_enqueue_ms: float, host_wall_ms: float | None,
                host_span_s: tuple[float, float] | None = None) -> RoundTiming:
    intervals: dict[int, list[tuple[float, float]]] = {}
    for i, begin, stop in marks:
        intervals.setdefault(i, []).append((start.elapsed_time(begin), start.elapsed_time(stop)))
    t_start, t_end = host_span_s if host_span_s is not None else (None, None)
    return RoundTiming(start.elapsed_time(end), host_enqueue_ms, host_wall_ms, intervals, t_start, t_end)


def time_rounds(device, streams: Sequence, step: StepFn, plan: TimingPlan, *,
                host_clock: Callable[[], float] = time.perf_counter, record_intervals: bool = True) -> TimedRun:
    """Warm up, pick K if asked, then time ``plan.rounds`` rounds. Raw per-round times are returned."""
    origin = device.current_stream()
    rec = RoundRecorder(device, streams, record_intervals=record_intervals)

    for _ in range(plan.warmup_rounds):
        _enqueue_round(device, origin, streams, step, rec, 1, plan.hold_cycles)
    device.synchronize()  # warm-up work must not spill into the probe or the first timed round

    k = plan.iterations_per_round
    if k is None:
        start, end, _ = _enqueue_round(device, origin, streams, step, rec, 1, plan.hold_cycles)
        device.synchronize()  # the probe's events are read now
        k = choose_iterations(start.elapsed_time(end), floor_ms=plan.floor_ms,
                              target_ms=plan.target_round_ms, max_iterations=plan.max_iterations)

    timings: list[RoundTiming] = []
    pending = []
    with _gc_paused():  # a collection mid-round would land in host-bound rounds (eager launches)
        t_begin = host_clock()
        _timed_rounds(device, origin, streams, step, rec, k, plan, host_clock, timings, pending)
        host_total_ms = (host_clock() - t_begin) * 1e3

    if plan.graph:
        method = "graph_replay"
    else:
        method = "events" if k == 1 else "events_k_batched"
    return TimedRun(timings, k, method, plan.sync_mode,
                    "device_events" if device.is_gpu else "host_clock", host_total_ms)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _timed_rounds(device, origin, streams, step: StepFn, rec: RoundRecorder, k: int, plan: TimingPlan,
                  host_clock: Callable[[], float], timings: list[RoundTiming], pending: list) -> None:
    for _ in range(plan.rounds):
        t0 = host_clock()
        start, end, marks = _enqueue_round(device, origin, streams, step, rec, k, plan.hold_cycles)
        t1 = host_clock()
        if plan.sync_mode == "per_round":
            device.synchronize()  # per_round: this round's events are complete and host wall is real
            t2 = host_clock()
            timings.append(_read_round(start, end, marks, (t1 - t0) * 1e3, (t2 - t0) * 1e3, (t0, t2)))
        else:
            pending.append((start, end, marks, (t1 - t0) * 1e3, t0))
    if pending:
        device.synchronize()  # end_only: one synchronize, then every round's events are read
        t_sync = host_clock()
        timings.extend(_read_round(s, e, m, enq, None, (t0, t_sync)) for s, e, m, enq, t0 in pending)
