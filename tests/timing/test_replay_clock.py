"""pytest-benchmark's stats hold the timing loop's device times: the replay clock hands them over in seconds,
pytest-benchmark's unit, one round per recorded time."""

import pytest

from aorta.timing.replay_clock import ReplayClock, replay_into


class Benchmark:
    """pytest-benchmark's ``pedantic`` as far as the clock is concerned: per round, timer, target, timer."""

    def __init__(self, clock):
        self.clock, self.times_s = clock, []

    def pedantic(self, target, rounds, iterations, warmup_rounds):
        assert (iterations, warmup_rounds) == (1, 0)
        for _ in range(rounds):
            start = self.clock()
            target()
            self.times_s.append(self.clock() - start)


def test_device_ms_per_iteration_become_seconds_round_by_round():
    clock = ReplayClock()
    bench = Benchmark(clock)
    replay_into(bench, clock, [2.0, 3.5, 0.25])
    assert bench.times_s == pytest.approx([0.002, 0.0035, 0.00025])
    with pytest.raises(RuntimeError, match="ReplayClock read past its recorded rounds"):
        clock(), clock()


def test_a_negative_device_time_is_refused():
    with pytest.raises(ValueError, match="device times cannot be negative"):
        ReplayClock().load([0.001, -0.001])
