"""The timing loop's logic with a scripted clock: no GPU needed."""

import pytest

from aorta.timing import TimingPlan, choose_iterations, time_rounds


class ScriptedEvent:
    def __init__(self, clock):
        self.clock, self.t = clock, None

    def record(self, stream=None):
        self.t = self.clock.next_event()

    def elapsed_time(self, end):
        return end.t - self.t


class ScriptedDevice:
    """Events read times (ms) from a script; streams are labels; counts synchronizes."""

    is_gpu = False

    def __init__(self, event_times):
        self.times = list(event_times)
        self.syncs = 0
        self.spins = []

    def next_event(self):
        return self.times.pop(0)

    def event(self):
        return ScriptedEvent(self)

    def current_stream(self):
        return "origin"

    def use(self, stream):
        import contextlib

        return contextlib.nullcontext()

    def wait_event(self, stream, event):
        pass

    def wait_stream(self, a, b):
        pass

    def synchronize(self):
        self.syncs += 1

    def spin(self, cycles):
        self.spins.append((cycles, len(self.times)))  # how many event times were still unread


def two_stream_step(rec):
    with rec.on(0):
        pass
    with rec.on(1):
        pass


def test_round_time_comes_from_the_start_and_end_events():
    # warm-up round, then two timed rounds; each: start event, end event (nothing between launches)
    dev = ScriptedDevice([0, 1] + [10, 15] + [20, 24])
    run = time_rounds(
        dev, ["s0", "s1"], two_stream_step, TimingPlan(warmup_rounds=1, rounds=2, iterations_per_round=1)
    )
    assert run.device_ms == [15 - 10, 24 - 20]
    assert all(r.stream_intervals_ms == {} and r.kernels is None for r in run.rounds)
    assert run.kernel_reason == "CPU backend: the profiler records no device kernel timestamps"
    assert run.method == "events" and run.clock == "host_clock"
    assert dev.syncs == 1 + 2  # after warm-up, then once per round (per_round)


class OrderedDevice(ScriptedDevice):
    """Logs what the loop enqueues, in order: events recorded, streams forked and joined, the step's blocks."""

    def __init__(self, event_times):
        super().__init__(event_times)
        self.log = []

    def event(self):
        dev, ev = self, ScriptedEvent(self)
        record = ev.record

        def logged(stream=None):
            dev.log.append(f"event on {stream}")
            record(stream)

        ev.record = logged
        return ev

    def wait_event(self, stream, event):
        self.log.append(f"{stream} waits for the start")

    def wait_stream(self, a, b):
        self.log.append(f"{a} waits for {b}")

    def use(self, stream):
        self.log.append(f"work on {stream}")
        return super().use(stream)


def test_a_round_forks_every_stream_from_its_start_event_and_its_end_event_waits_for_every_stream():
    # docs/hw_queue.md: a round's time is from a start event that every stream waits for to an end event recorded
    # after the origin stream has waited for every stream: work on a side stream is inside the round
    dev = OrderedDevice([0, 5])
    time_rounds(
        dev, ["s0", "s1"], two_stream_step, TimingPlan(warmup_rounds=0, rounds=1, iterations_per_round=1)
    )
    assert dev.log == [
        "event on origin",
        "s0 waits for the start",
        "s1 waits for the start",
        "work on s0",
        "work on s1",
        "origin waits for s0",
        "origin waits for s1",
        "event on origin",
    ]


def test_end_only_synchronizes_once_and_still_reads_every_round():
    dev = ScriptedDevice([0, 2] + [2, 5])
    run = time_rounds(
        dev,
        ["s0", "s1"],
        two_stream_step,
        TimingPlan(warmup_rounds=0, rounds=2, sync_mode="end_only", iterations_per_round=1),
    )
    assert run.device_ms == [2, 3]
    assert dev.syncs == 1 + 1  # after (empty) warm-up, then one at the end
    assert all(r.host_wall_ms is None for r in run.rounds)


def test_host_wall_is_kept_beside_device_time():
    host = iter([0.0, 1.0, 1.001, 1.003, 9.0])  # begin, t0, t1, t2, total
    dev = ScriptedDevice([0, 2])
    run = time_rounds(
        dev,
        ["a", "b"],
        two_stream_step,
        TimingPlan(warmup_rounds=0, rounds=1, iterations_per_round=1),
        host_clock=lambda: next(host),
    )
    r = run.rounds[0]
    assert r.device_ms == 2
    assert r.host_enqueue_ms == pytest.approx(1.0)
    assert r.host_wall_ms == pytest.approx(3.0)


class ProfiledDevice(ScriptedDevice):
    """A scripted 'GPU' whose profiler hands back a prepared trace and which logs the labelled ranges."""

    is_gpu = True

    def __init__(self, event_times, trace):
        super().__init__(event_times)
        self.trace, self.marks = trace, []

    def mark(self, name):
        import contextlib

        self.marks.append(name)
        return contextlib.nullcontext()


class PreparedCapture:
    """Stands in for the profiler capture the loop builds (``KernelCapture(device)``): the device's trace."""

    reason = None
    cost = {"trace_export_s": 0.5}

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def trace(self):
        return self.device.trace


@pytest.fixture
def prepared_capture(monkeypatch):
    from aorta.timing import loop

    monkeypatch.setattr(loop, "KernelCapture", PreparedCapture)


@pytest.mark.usefixtures("prepared_capture")
def test_the_kernel_pass_labels_rounds_and_blocks_and_attaches_each_round_s_kernels():
    from test_kernel_timeline import kernel, launch, rng

    trace = {
        "traceEvents": [
            rng("aorta.round.0", 0, 10),
            rng("aorta.s0", 1, 2),
            launch(1, 2),
            rng("aorta.s1:copy", 4, 2),
            launch(2, 5),
            kernel(1, 7, 100, 1000),
            kernel(2, 8, 600, 1000),
        ]
    }
    dev = ProfiledDevice([0, 1] + [0, 2] + [10, 12], trace)  # warm-up, profiler's first round, timed round
    run = time_rounds(
        dev,
        ["s0", "s1"],
        lambda rec: [rec.use(0).__enter__(), rec.on(1, label="copy").__enter__()],
        TimingPlan(warmup_rounds=1, rounds=1, iterations_per_round=1),
    )
    # warm-up and the profiler's first round are unlabelled; the timed round and its blocks are
    blocks = ["aorta.s0", "aorta.s1:copy"]
    assert dev.marks == blocks + blocks + ["aorta.round.0"] + blocks
    (r,) = run.rounds
    assert r.device_ms == 2 and run.kernel_reason is None
    assert r.stream_intervals_ms == {0: [(0.0, 1.0)], 1: [(0.5, 1.5)]}
    assert r.label_intervals_ms == {"copy": [(0.5, 1.5)]}
    # what the profiler cost the host is kept: the capture's own figures, the rounds and the parse beside them
    assert run.profiler_cost["trace_export_s"] == 0.5
    assert {"profiled_rounds_s", "trace_parse_s"} <= set(run.profiler_cost)


@pytest.mark.usefixtures("prepared_capture")
def test_kernel_pass_without_kernels_says_why():
    dev = ProfiledDevice([0, 1, 0, 2], {"traceEvents": []})
    run = time_rounds(
        dev, [], lambda rec: None, TimingPlan(warmup_rounds=0, rounds=1, iterations_per_round=1)
    )
    assert run.kernel_reason == "the profiler recorded no device kernels inside the timed rounds"
    assert run.rounds[0].kernels is None


def test_probe_under_the_floor_batches_k_iterations():
    # probe round: one iteration reads 0.005 ms -> K = ceil(0.5 / 0.005) = 100 iterations per round
    probe = [0.0, 0.005]
    dev = ScriptedDevice(probe + [0.0, 0.6])
    calls = []
    run = time_rounds(dev, [], lambda rec: calls.append(1), TimingPlan(warmup_rounds=0, rounds=1))
    assert run.iterations_per_round == 100
    assert run.method == "events_k_batched"
    assert len(calls) == 1 + 100
    assert run.per_iteration_ms == [pytest.approx(0.6 / 100)]


def test_launch_hold_runs_before_each_start_event_and_is_not_timed():
    dev = ScriptedDevice([0, 4] + [10, 13])  # warm-up round, then one timed round: start, end
    run = time_rounds(
        dev,
        [],
        lambda rec: None,
        TimingPlan(warmup_rounds=1, rounds=1, iterations_per_round=1, hold_cycles=7),
    )
    assert dev.spins == [(7, 4), (7, 2)]  # one hold per round, each before that round's start event
    assert run.device_ms == [13 - 10]


def test_round_barrier_runs_after_the_hold_and_before_each_start_event():
    # a round across ranks: each rank's hold ends at its own time; the barrier (a collective) follows it on the
    # origin stream, and the start event follows the barrier, so every rank's round starts together
    dev = ScriptedDevice([0, 4] + [10, 13] + [20, 22])
    order = []
    dev.spin = lambda cycles: order.append(("hold", len(dev.times)))
    run = time_rounds(
        dev,
        [],
        lambda rec: order.append(("step", len(dev.times))),
        TimingPlan(
            warmup_rounds=1,
            rounds=2,
            iterations_per_round=1,
            hold_cycles=7,
            round_barrier=lambda: order.append(("barrier", len(dev.times))),
        ),
    )
    # per round: hold, barrier, then the start event (one time read), then the step
    assert order == [
        ("hold", 6), ("barrier", 6), ("step", 5),
        ("hold", 4), ("barrier", 4), ("step", 3),
        ("hold", 2), ("barrier", 2), ("step", 1),
    ]  # fmt: skip
    assert run.device_ms == [13 - 10, 22 - 20]


def test_k_is_rounded_up_so_a_batched_round_reaches_its_target():
    # 0.5 ms / 0.015 ms = 33.3 iterations: 34 make a 0.51 ms round; 33 would fall short at 0.495 ms
    assert choose_iterations(0.015, target_ms=0.5) == 34
    assert choose_iterations(0.0199, target_ms=0.5) == 26  # just under the 20 µs event floor


def test_choose_iterations():
    assert choose_iterations(0.5) == 1
    assert choose_iterations(0.001, target_ms=0.5) == 500
    assert choose_iterations(0.0, max_iterations=7) == 7


def test_no_events_when_intervals_are_off():
    dev = ScriptedDevice([0, 5])
    run = time_rounds(
        dev,
        ["s0"],
        lambda rec: rec.use(0).__enter__(),
        TimingPlan(warmup_rounds=0, rounds=1, iterations_per_round=1),
        record_intervals=False,
    )
    assert run.rounds[0].stream_intervals_ms == {} and run.device_ms == [5]


@pytest.mark.parametrize(
    "bad", [dict(rounds=0), dict(warmup_rounds=-1), dict(sync_mode="sometimes"), dict(iterations_per_round=0)]
)
def test_plan_rejects_bad_values(bad):
    kwargs = dict(warmup_rounds=0, rounds=1) | bad
    with pytest.raises(ValueError):
        TimingPlan(**kwargs)


def test_garbage_collection_is_paused_in_timed_rounds_and_restored_after():
    import gc

    seen = []
    dev = ScriptedDevice([0, 1, 2, 3, 4, 5])  # warm-up round, then two timed rounds: start, end each
    time_rounds(
        dev,
        [],
        lambda rec: seen.append(gc.isenabled()),
        TimingPlan(warmup_rounds=1, rounds=2, iterations_per_round=1),
    )
    assert seen == [True, False, False]
    assert gc.isenabled()


def test_a_hold_grows_with_the_iterations_of_the_round():
    # K = 3 iterations per round: the hold covers 3 steps' launches (5 + 3 x 2 cycles); warm-up rounds hold 1
    dev = ScriptedDevice([0, 4] + [10, 13])
    time_rounds(
        dev,
        [],
        lambda rec: None,
        TimingPlan(
            warmup_rounds=1, rounds=1, iterations_per_round=3, hold_cycles=5, hold_cycles_per_iteration=2
        ),
    )
    assert dev.spins == [(5 + 2, 4), (5 + 3 * 2, 2)]
    with pytest.raises(ValueError, match="hold cycles must be >= 0"):
        TimingPlan(warmup_rounds=0, rounds=1, hold_cycles_per_iteration=-1)


def test_a_hold_sized_from_the_host_follows_the_first_rounds_enqueue_time_and_does_not_grow(monkeypatch):
    # 1000 cycles per ms of enqueue time: the first warm-up round (no host-sized hold in front of it) takes
    # 2 ms to enqueue; every later round holds 2 x 1000 cycles per iteration, even when the host then blocks
    # behind the hold (a round with more launches than the queue takes) and enqueues far slower.
    clock = iter([0.0, 0.002] + [1.0 + i for i in range(20)])
    monkeypatch.setattr("aorta.timing.loop.time.perf_counter", lambda: next(clock))
    dev = ScriptedDevice([0, 4, 0, 4] + [10, 13, 20, 23])  # two warm-up rounds, two timed rounds
    time_rounds(
        dev,
        [],
        lambda rec: None,
        TimingPlan(
            warmup_rounds=2, rounds=2, iterations_per_round=3, hold_cycles=5, hold_cycles_per_enqueue_ms=1000
        ),
        host_clock=lambda: 0.0,
    )
    holds = [cycles for cycles, _ in dev.spins]
    assert holds == [5, 5 + 2000, 5 + 3 * 2000, 5 + 3 * 2000]
