"""The timing loop stamps each round with absolute host times, so telemetry can be matched to it."""

import itertools

from aorta.device import Device
from aorta.timing import TimingPlan, time_rounds


def _scripted_clock():
    ticks = itertools.count()
    return lambda: float(next(ticks))


def test_per_round_span_is_enqueue_start_to_its_synchronize():
    run = time_rounds(
        Device("cpu"),
        [],
        lambda rec: None,
        TimingPlan(warmup_rounds=0, rounds=3, iterations_per_round=1),
        host_clock=_scripted_clock(),
    )
    # clock reads: t_begin=0, then per round t0, t1, t2
    assert [(r.host_start_s, r.host_end_s) for r in run.rounds] == [(1.0, 3.0), (4.0, 6.0), (7.0, 9.0)]
    assert [r.host_wall_ms for r in run.rounds] == [2000.0, 2000.0, 2000.0]


def test_end_only_rounds_end_at_the_final_synchronize():
    run = time_rounds(
        Device("cpu"),
        [],
        lambda rec: None,
        TimingPlan(warmup_rounds=0, rounds=2, sync_mode="end_only", iterations_per_round=1),
        host_clock=_scripted_clock(),
    )
    # t_begin=0; round 1: t0=1, t1=2; round 2: t0=3, t1=4; after the one synchronize: 5
    assert [(r.host_start_s, r.host_end_s) for r in run.rounds] == [(1.0, 5.0), (3.0, 5.0)]
