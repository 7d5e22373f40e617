"""FSDP scenarios sample each rank's GPU while its steps are timed: every rank's summary is kept, and the
record's ``telemetry`` is the most throttled rank's (aorta/fsdp/rank_telemetry.py), which the gate's
``throttle`` cause reads. No step is ever dropped: a step is one unit across ranks."""

import time

from aorta.fsdp import rank_telemetry
from aorta.fsdp.rank_result import RankResult
from aorta.telemetry.plugin import observer
from aorta.telemetry.sample import Limits, Sample
from aorta.timing.loop import RoundTiming, TimedRun


def worst_rank_telemetry(ranks: list[dict]):
    """The ranks' results as they arrive on rank 0 (dicts), through the one boundary."""
    return rank_telemetry.worst_rank_telemetry([RankResult.from_dict(r) for r in ranks])


def _tel(throttled: int, rounds: int = 4) -> dict:
    return {"source": "nvml", "rounds": rounds, "throttled_rounds": throttled}


def test_the_record_takes_the_most_throttled_rank_and_the_lowest_on_a_tie():
    ranks = [
        {"rank": 0, "telemetry": _tel(0)},
        {"rank": 1, "telemetry": _tel(3)},
        {"rank": 2, "telemetry": _tel(1)},
        {"rank": 3, "telemetry": _tel(3)},
    ]
    assert worst_rank_telemetry(ranks) == ({"rank": 1, **_tel(3)}, None)
    calm = [{"rank": 1, "telemetry": _tel(0)}, {"rank": 0, "telemetry": _tel(0)}]
    assert worst_rank_telemetry(calm)[0]["rank"] == 0
    unknown = [{"rank": 0, "telemetry": _tel(0)}, {"rank": 1, "telemetry": {"source": "x", "rounds": 4}}]
    assert worst_rank_telemetry(unknown)[0]["rank"] == 0  # a count not given is no throttling
    assert (
        worst_rank_telemetry([{"rank": 0, "telemetry": _tel(0)}, {"rank": 1, "telemetry": _tel(1)}])[0][
            "rank"
        ]
        == 1
    )


def test_no_rank_with_samples_gives_the_first_reason_and_no_figures():
    ranks = [
        {"rank": 0, "telemetry": {"source": "unavailable", "reason": "nvml: not installed", "samples": 0}},
        {"rank": 1, "telemetry": None},
    ]
    assert worst_rank_telemetry(ranks) == (None, "nvml: not installed")
    assert worst_rank_telemetry([{"rank": 0}]) == (None, "no rank recorded telemetry")


class CappedSource:
    name = "fake"

    def read(self, clock):
        return Sample(t_s=clock(), sm_clock_mhz=1500.0, power_w=699.0, throttle_reasons=("sw_power_cap",))

    def limits(self):
        return Limits(sm_clock_max_mhz=1980.0, power_limit_w=700.0)

    def close(self):
        pass


def test_the_observer_summarises_the_timed_steps_and_keeps_every_one():
    observe, stop = observer(1000, CappedSource(), None)
    try:
        now = time.perf_counter()  # the sampler's first sample is taken as it starts: within one interval
        steps = [
            RoundTiming(80.0 + i, 1.0, 80.0, {}, now + 0.01 * i, now + 0.01 * i + 0.005) for i in range(3)
        ]
        run = TimedRun(steps, 1, "events", "per_round", "device_events", 250.0)
        deadline = time.monotonic() + 5  # the sampler thread takes its first sample as it starts
        while (summary := observe(run))["samples_total"] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop()
    assert summary["source"] == "fake" and summary["rounds"] == 3
    assert summary["throttled_rounds"] == 3 and summary["throttle_causes"] == {"sw_power_cap": 3}
    assert summary["figures"]["sm_clock_mhz"]["median"] == 1500.0


def test_without_a_source_the_observer_says_why():
    observe, stop = observer(100, None, "cpu backend: no GPU to sample")
    assert observe(None) == {
        "source": "unavailable",
        "reason": "cpu backend: no GPU to sample",
        "samples": 0,
        "throttled_rounds": None,
        "throttled": None,
    }
    stop()
