"""A run's host-bound note from its own timed rounds (aorta/hw_queue/runner.py ``_host_paced_note``,
aorta/timeline/kernel_timeline.py ``host_paced_note``): every run says so, a gate's lean run too, which has no
kernel pass to measure the GPU's busy share. Eager tiny kernels on an H200: the host took 49.5 ms to enqueue
each 49.5 ms iteration; GEMMs 0.1 ms for 42 ms."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from aorta.gate.verdicts.verdict import measures_the_host
from aorta.hw_queue import runner
from aorta.timeline.kernel_timeline import host_paced_note
from aorta.timing import TimingPlan


@pytest.mark.parametrize(
    "enqueue, device, paced",
    [
        (49.49, 49.47, True),
        (45.0, 50.0, True),
        (44.9, 50.0, False),
        (0.113, 42.16, False),
        (None, 5.0, False),
    ],
)
def test_rounds_the_host_took_their_device_time_to_enqueue_are_host_bound(enqueue, device, paced):
    note = host_paced_note(enqueue, device)
    assert (note is not None) == paced
    if paced:
        assert note.startswith("host-bound:") and measures_the_host(
            note
        )  # the gate reads it as a host figure


def timed(enqueue_ms: float, device_ms: float, k: int = 2, method: str = "events", **plan) -> runner._Timed:
    rounds = [SimpleNamespace(host_enqueue_ms=enqueue_ms * k) for _ in range(5)]
    run = SimpleNamespace(rounds=rounds, iterations_per_round=k, method=method)
    return runner._Timed(
        run, None, [], TimingPlan(warmup_rounds=1, rounds=5, **plan), {}, None, [device_ms] * 5, []
    )


GPU, CPU = SimpleNamespace(is_gpu=True), SimpleNamespace(is_gpu=False)


def test_eager_rounds_on_a_gpu_say_host_bound_per_iteration():
    note = runner._host_paced_note(GPU, timed(49.5, 49.5))
    assert note and "49.5 ms to enqueue each 49.5 ms iteration" in note


@pytest.mark.parametrize(
    "device, kw",
    [
        (CPU, {}),  # the CPU backend runs each op as it is issued: true of every run, says nothing
        (GPU, {"method": "graph_replay"}),  # a replay launches nothing inside the round
        (GPU, {"hold_cycles": 1000}),  # launches queued behind a hold: the enqueue is hidden by design
        (GPU, {"hold_cycles_per_iteration": 10}),
        (GPU, {"hold_cycles_per_enqueue_ms": 2.0}),
    ],
)
def test_no_host_bound_note_where_the_enqueue_says_nothing_of_the_gpu(device, kw):
    assert runner._host_paced_note(device, timed(49.5, 49.5, **kw)) is None


def test_the_gpu_ahead_of_the_host_has_no_note():
    assert runner._host_paced_note(GPU, timed(0.1, 42.0)) is None
