"""Throttle rule, sample-to-round matching, the per-benchmark summary, the sampler thread, the sources."""

import threading
import time
from dataclasses import replace
from types import SimpleNamespace

import pytest

from aorta.telemetry.plugin import (
    TELEMETRY_STATE,
    AllRoundsThrottled,
    Monitor,
    TelemetryOptions,
    TelemetryState,
)
from aorta.telemetry.round_policy import KERNEL_PASS
from aorta.telemetry.sample import Limits, Sample
from aorta.telemetry.sampler import MAX_CONSECUTIVE_ERRORS, Sampler
from aorta.telemetry.sources import NvidiaSmiSource, RocmSmiSource, open_source
from aorta.telemetry.summary import classify_rounds, samples_for_round, summarize
from aorta.telemetry.throttle import throttle_cause
from aorta.timing.loop import RoundTiming, TimedRun

MAX_MHZ = 1980.0


def s(t, mhz=1900.0, reasons=(), **kw):
    return Sample(t_s=t, sm_clock_mhz=mhz, throttle_reasons=reasons, **kw)


def test_throttle_rule():
    assert throttle_cause(s(0), MAX_MHZ) is None
    assert throttle_cause(s(0, reasons=("sw_power_cap",)), MAX_MHZ) == "sw_power_cap"
    assert throttle_cause(s(0, reasons=("applications_clocks_setting",)), MAX_MHZ) is None
    # under 75% of 1980 = 1485 MHz while working: throttled
    assert throttle_cause(s(0, mhz=1400.0), MAX_MHZ) == "sm_clock_below_75pct_of_max"
    assert throttle_cause(s(0, mhz=1490.0), MAX_MHZ) is None
    # an idle GPU lowers its clock: that alone is not throttling
    assert throttle_cause(s(0, mhz=345.0, reasons=("gpu_idle",)), MAX_MHZ) is None
    # no maximum known: only reasons count
    assert throttle_cause(s(0, mhz=100.0, reasons=None), None) is None


def test_round_takes_samples_inside_it_else_the_nearest_within_one_interval():
    samples = [s(0.0), s(0.1), s(0.2), s(0.3)]
    assert [x.t_s for x in samples_for_round(samples, 0.05, 0.25, 0.1)] == [0.1, 0.2]
    assert [x.t_s for x in samples_for_round(samples, 0.11, 0.12, 0.1)] == [0.1]  # 0.01 before vs 0.08 after
    assert [x.t_s for x in samples_for_round(samples, 0.5, 0.6, 0.1)] == []  # 0.2 away from the last
    assert samples_for_round([], 0.0, 1.0, 0.1) == []


def test_classify_rounds_flags_throttled_and_unmatched():
    samples = [s(0.0), s(0.1, reasons=("hw_slowdown",)), s(0.2, mhz=1000.0)]
    spans = [(0.0, 0.02), (0.09, 0.11), (0.19, 0.21), (5.0, 5.1), (None, None)]
    assert classify_rounds(samples, spans, 0.1, MAX_MHZ) == [
        None,
        "hw_slowdown",
        "sm_clock_below_75pct_of_max",
        False,
        False,
    ]


def test_summary_figures_over_the_timed_rounds_only():
    setup_idle = s(0.0, mhz=300.0, reasons=("gpu_idle",), power_w=60.0)
    timed = [
        s(1.0, power_w=690.0, temperature_c=60.0),
        s(1.1, mhz=1700.0, reasons=("sw_power_cap",), power_w=700.0, temperature_c=62.0),
        s(1.2, power_w=695.0, temperature_c=64.0),
    ]
    spans = [(1.0, 1.05), (1.08, 1.12), (1.15, 1.2)]
    summary, causes = summarize(
        [setup_idle, *timed],
        source="nvml",
        interval_ms=100,
        limits=Limits(sm_clock_max_mhz=MAX_MHZ, power_limit_w=700.0),
        spans_s=spans,
    )
    assert causes == [None, "sw_power_cap", None]
    assert summary["samples"] == 3 and summary["samples_total"] == 4
    assert summary["figures"]["sm_clock_mhz"] == {"min": 1700.0, "median": 1900.0, "max": 1900.0}
    assert summary["figures"]["power_w"] == {"min": 690.0, "median": 695.0, "max": 700.0}
    assert summary["figures"]["temperature_c"]["median"] == 62.0
    assert summary["throttled_rounds"] == 1 and summary["throttled_round_indices"] == [1]
    assert summary["throttle_causes"] == {"sw_power_cap": 1}
    assert summary["throttle_reasons_seen"] == {"sw_power_cap": 1}
    assert summary["limits"]["power_limit_w"] == 700.0
    assert summary["unavailable"]["gpu_util_pct"]  # no utilization in these samples: said so


def test_summary_without_reasons_or_max_clock_says_which_rules_are_off():
    summary, _ = summarize(
        [s(0.0, reasons=None)], source="rocm-smi", interval_ms=500, limits=Limits(), spans_s=[(0.0, 0.1)]
    )
    assert "throttle_reasons" in summary["unavailable"] and "sm_clock_max_mhz" in summary["unavailable"]


class ScriptedSource:
    name = "scripted"

    def __init__(self, samples_fn=None, fail=False):
        self.reads = 0
        self._fn = samples_fn or (lambda t: s(t))
        self._fail = fail
        self.closed = False

    def read(self, clock):
        self.reads += 1
        if self._fail:
            raise RuntimeError("device gone")
        return self._fn(clock())

    def limits(self):
        return Limits(sm_clock_max_mhz=MAX_MHZ)

    def close(self):
        self.closed = True


def test_sampler_reads_in_a_thread_and_stops():
    src = ScriptedSource()
    sampler = Sampler(src, 0.005).start()
    deadline = time.monotonic() + 5
    while len(sampler.samples()) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    samples = sampler.stop()
    assert len(samples) >= 3
    assert [x.t_s for x in samples] == sorted(x.t_s for x in samples)
    assert not any(t.name == "aorta-telemetry" for t in threading.enumerate())


def test_sampler_gives_up_after_repeated_failures_without_raising():
    sampler = Sampler(ScriptedSource(fail=True), 0.001).start()
    deadline = time.monotonic() + 5
    while sampler.gave_up is None and time.monotonic() < deadline:
        time.sleep(0.005)
    sampler.stop()
    assert sampler.errors == MAX_CONSECUTIVE_ERRORS
    assert "device gone" in sampler.gave_up


def test_sampler_rejects_a_non_positive_interval():
    with pytest.raises(ValueError, match="interval"):
        Sampler(ScriptedSource(), 0)


def _run(spans):
    rounds = [RoundTiming(1.0 + i, 0.1, 1.0, {}, a, b) for i, (a, b) in enumerate(spans)]
    return TimedRun(rounds, 1, "events", "per_round", "device_events", 10.0)


class FakeSampler:
    def __init__(self, samples):
        self._samples = samples
        self.errors, self.first_error, self.gave_up = 0, None, None

    def samples(self):
        return list(self._samples)


def _monitor(samples, drop):
    request = SimpleNamespace(
        node=SimpleNamespace(name="test_x[streams4]"),
        config=SimpleNamespace(stash={TELEMETRY_STATE: TelemetryState()}),
    )
    m = Monitor(request, None, None, TelemetryOptions(interval_ms=100, drop_throttled=drop, source="auto"))
    m._source, m.sampler = ScriptedSource(), FakeSampler(samples)
    return m, request.config.stash[TELEMETRY_STATE]


def _more(spans, first_ms=10.0):
    """``more(n)`` as the runner gives it: n new rounds at ``spans`` (device ms 10, 11, ...), calls counted."""
    calls = []

    def more(n):
        calls.append(n)
        run = _run(spans[:n])
        return replace(run, rounds=[replace(r, device_ms=first_ms + i) for i, r in enumerate(run.rounds)])

    return more, calls


SPANS = [(0.0, 0.01), (0.1, 0.11), (0.2, 0.21)]  # rounds of 1, 2 and 3 ms
LATER = [(0.3, 0.31), (0.4, 0.41)]  # where replacement rounds fall


def test_a_round_throttled_by_heat_is_dropped_and_replaced_by_a_new_round():
    samples = [s(0.0), s(0.1, reasons=("hw_thermal_slowdown",)), s(0.2), s(0.3)]
    monitor, state = _monitor(samples, drop=False)
    more, calls = _more(LATER)
    run, extra = monitor.review(_run(SPANS), more)
    assert calls == [1] and [r.device_ms for r in run.rounds] == [1.0, 3.0, 10.0]
    assert extra["throttle_handling"] == {
        "policy": "replaced",
        "what": "throttled rounds dropped and replaced by as many new rounds, none of them throttled",
        "rounds_throttled": 1,
        "rounds_dropped": 1,
        "rounds_added": 1,
        "rounds_kept": 3,
        "kernel_pass": KERNEL_PASS,
    }
    assert extra["telemetry"]["dropped_round_indices"] == [1]
    assert state.throttled == [
        "test_x[streams4]: 1/3 rounds throttled: hw_thermal_slowdown (1); replaced (3 rounds kept, 1 added)"
    ]


def test_rounds_at_the_power_limit_are_kept_and_labelled_unless_asked_to_drop():
    samples = [s(0.0, reasons=("sw_power_cap",)), s(0.1), s(0.2, reasons=("sw_power_cap",)), s(0.3), s(0.4)]
    monitor, _ = _monitor(samples, drop=False)
    more, calls = _more(LATER)
    run, extra = monitor.review(_run(SPANS), more)
    assert calls == [] and [r.device_ms for r in run.rounds] == [1.0, 2.0, 3.0]
    handled = extra["throttle_handling"]
    assert (handled["policy"], handled["rounds_throttled"], handled["rounds_kept"]) == (
        "kept_power_limited",
        2,
        3,
    )
    assert "dropped_rounds" not in extra["telemetry"]

    monitor, _ = _monitor(samples, drop=True)  # --aorta-drop-throttled: the power limit too
    more, calls = _more(LATER)
    run, extra = monitor.review(_run(SPANS), more)
    assert calls == [2] and [r.device_ms for r in run.rounds] == [2.0, 10.0, 11.0]
    assert extra["throttle_handling"]["policy"] == "replaced"
    assert extra["telemetry"]["dropped_rounds"] == 2


def test_a_replacement_throttled_again_is_dropped_too_and_the_record_says_fewer_rounds():
    samples = [s(0.0), s(0.1, reasons=("hw_slowdown",)), s(0.2), s(0.3, reasons=("hw_slowdown",))]
    monitor, _ = _monitor(samples, drop=False)
    run, extra = monitor.review(_run(SPANS), _more(LATER)[0])
    assert [r.device_ms for r in run.rounds] == [1.0, 3.0]
    assert extra["throttle_handling"]["policy"] == "dropped"
    assert extra["throttle_handling"]["rounds_kept"] == 2


def test_when_every_round_and_replacement_is_throttled_the_first_rounds_are_kept_and_said_so():
    hot = ("sw_thermal_slowdown",)
    samples = [s(t, reasons=hot) for t in (0.0, 0.1, 0.2, 0.3, 0.4)] + [s(0.5, reasons=hot)]
    monitor, _ = _monitor(samples, drop=False)
    run, extra = monitor.review(_run(SPANS), _more([(0.3, 0.31), (0.4, 0.41), (0.5, 0.51)])[0])
    assert [r.device_ms for r in run.rounds] == [1.0, 2.0, 3.0]
    assert extra["throttle_handling"]["policy"] == "kept_throttled"
    assert extra["throttle_handling"]["what"].startswith("every round and every replacement was throttled")


def test_monitor_says_why_when_every_round_would_be_dropped():
    """The monitor reports what it saw; failing the test is the hw_queue fixture's decision."""
    samples = [s(t, reasons=("sw_power_cap",)) for t in (0.0, 0.1, 0.3, 0.4)]  # replacements capped too
    monitor, _ = _monitor(samples, drop=True)
    with pytest.raises(AllRoundsThrottled, match="all 2 timed rounds .* throttled") as info:
        monitor.review(_run([(0.0, 0.01), (0.1, 0.11)]), _more(LATER)[0])
    assert (info.value.n_rounds, info.value.causes) == (2, {"sw_power_cap": 2})


def test_monitor_without_a_source_records_unavailable_with_the_reason():
    request = SimpleNamespace(
        node=SimpleNamespace(name="t"), config=SimpleNamespace(stash={TELEMETRY_STATE: TelemetryState()})
    )
    m = Monitor(
        request,
        None,
        "nvml: not installed",
        TelemetryOptions(interval_ms=100, drop_throttled=False, source="auto"),
    )
    run, extra = m.review(_run([(0.0, 1.0)]))
    assert extra["telemetry"]["source"] == "unavailable"
    assert extra["unavailable"]["telemetry"] == "nvml: not installed"


def test_command_line_sources_with_a_recorded_runner():
    def nvsmi(cmd):
        assert cmd[:1] == ["nvidia-smi"] and cmd[-2:] == ["-i", "00000000:19:00.0"]
        if "clocks_event_reasons.active" in cmd[1]:  # an old driver rejects the new field name
            raise RuntimeError('Field "clocks_event_reasons.active" is not a valid field to query.')
        if "clocks.max.sm" in cmd[1]:
            return "1980, 2619, 700.00\n"
        return "1755, 2619, 698.54, 67, 100, 38, 0x0000000000000004\n"

    src = NvidiaSmiSource(0, "00000000:19:00.0", runner=nvsmi)
    sample = src.read(time.perf_counter)
    assert sample.throttle_reasons == ("sw_power_cap",) and sample.power_w == 698.54
    assert src.limits().sm_clock_max_mhz == 1980

    def rocm(cmd):
        return '{"card1": {"sclk clock speed:": "(2096Mhz)", "GPU use (%)": "99"}}'

    sample = RocmSmiSource(1, runner=rocm).read(time.perf_counter)
    assert (sample.sm_clock_mhz, sample.gpu_util_pct) == (2096, 99)
    with pytest.raises(RuntimeError, match="no card0"):
        RocmSmiSource(0, runner=rocm)


def test_open_source_says_why_nothing_could_be_opened(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    source, reason = open_source("cpu", 0)
    assert source is None and "no GPU" in reason
    source, reason = open_source("rocm", 0, prefer="rocm-smi")
    assert source is None and "rocm-smi not found on PATH" in reason
