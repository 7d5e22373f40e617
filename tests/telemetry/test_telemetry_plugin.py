"""Telemetry from the outside: options, what a benchmark records, throttled rounds, machine_info."""

import json

pytest_plugins = ["pytester"]

BENCH = """
from aorta.hw_queue.workloads.large_gemm_only import LargeGemmOnly

def test_gemm(hw_queue, streams):
    hw_queue(LargeGemmOnly, streams, dtype="fp32")
"""

FAKE_SOURCE = """
import pytest
from aorta.telemetry.sample import Limits, Sample


class Fake:
    name = "fake"
    def read(self, clock):
        return Sample(t_s=clock(), sm_clock_mhz=1900.0, power_w=650.0, temperature_c=60.0,
                      throttle_reasons={reasons!r})
    def limits(self):
        return Limits(sm_clock_max_mhz=1980.0, power_limit_w=700.0)
    def close(self):
        pass

@pytest.fixture(scope="session")
def aorta_telemetry_source():
    yield Fake(), None
"""

# The fake source is read once when the sampler starts; with a 1 s interval that first sample is within
# one interval of every (millisecond-long) round, so the matching is deterministic on a busy CI machine.
ARGS = (
    "--aorta-streams=1",
    "--aorta-rounds=3",
    "--aorta-warmup=0",
    "--aorta-size=smoke",
    "-p",
    "no:cacheprovider",
)


def _run(pytester, *extra, reasons=None):
    if reasons is not None:
        pytester.makeconftest(FAKE_SOURCE.format(reasons=reasons))
    pytester.makepyfile(test_bench=BENCH)
    out = pytester.path / "run.json"
    result = pytester.runpytest(*ARGS, f"--benchmark-json={out}", *extra)
    data = json.loads(out.read_text()) if out.exists() and out.stat().st_size else None
    return result, data


def test_cpu_run_records_telemetry_as_unavailable_with_the_reason(pytester):
    result, data = _run(pytester)
    result.assert_outcomes(passed=1)
    extra = data["benchmarks"][0]["extra_info"]
    assert extra["telemetry"]["source"] == "unavailable"
    assert "no GPU" in extra["unavailable"]["telemetry"]
    host = data["machine_info"]["aorta"]["host"]
    assert host["hostname"] and host["kernel"] and host["cpu_model"]


def test_samples_are_summarized_per_benchmark_and_an_unthrottled_gpu_keeps_every_round(pytester):
    result, data = _run(pytester, "--aorta-telemetry-interval-ms=1000", "--aorta-drop-throttled", reasons=())
    result.assert_outcomes(passed=1)
    extra = data["benchmarks"][0]["extra_info"]
    tel = extra["telemetry"]
    assert tel["source"] == "fake" and tel["samples_total"] >= 1
    assert tel["rounds"] == 3 and tel["throttled_rounds"] == 0 and tel["dropped_rounds"] == 0
    assert tel["figures"]["power_w"]["median"] == 650.0
    assert tel["limits"]["sm_clock_max_mhz"] == 1980.0
    assert len(extra["device_ms_per_iteration"]) == 3


def test_throttled_rounds_are_flagged_replaced_where_transient_and_reported(pytester):
    result, data = _run(pytester, "--aorta-telemetry-interval-ms=1000", reasons=("hw_slowdown",))
    result.assert_outcomes(passed=1)
    extra = data["benchmarks"][0]["extra_info"]
    tel = extra["telemetry"]
    assert tel["throttled"] is True and tel["throttled_rounds"] == 3
    # the GPU stayed slowed through the replacements too: the first rounds are kept, and said so
    assert extra["throttle_handling"]["policy"] == "kept_throttled"
    assert extra["throttle_handling"]["rounds_added"] == 3 and len(extra["device_ms_per_iteration"]) == 3
    result.stdout.fnmatch_lines(
        [
            "*GPU throttled during benchmarks*",
            "test_gemm[[]streams1[]]: 3/3 rounds throttled: hw_slowdown (3); kept_throttled (3 rounds kept, 3 added)",
        ]
    )


def test_rounds_at_the_power_limit_are_kept_and_labelled(pytester):
    result, data = _run(pytester, "--aorta-telemetry-interval-ms=1000", reasons=("sw_power_cap",))
    result.assert_outcomes(passed=1)
    extra = data["benchmarks"][0]["extra_info"]
    assert extra["throttle_handling"]["policy"] == "kept_power_limited"
    assert extra["throttle_handling"]["rounds_added"] == 0 and len(extra["device_ms_per_iteration"]) == 3
    assert extra["throttle_handling"]["figures_timed_rounds"] == ["device_ms", "tflops"]
    assert extra["reading_notes"] == [
        "power-limited: sw_power_cap in 3 of 3 timed rounds; the clock follows the power draw, so device time "
        "moves with it from run to run"
    ]


def test_drop_throttled_fails_when_every_round_was_throttled(pytester):
    result, _ = _run(
        pytester, "--aorta-telemetry-interval-ms=1000", "--aorta-drop-throttled", reasons=("sw_power_cap",)
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*--aorta-drop-throttled: all 3 timed rounds were taken while the GPU was "
            "throttled*nothing is recorded*"
        ]
    )


def test_bad_telemetry_options_are_usage_errors(pytester):
    result = pytester.runpytest("--aorta-telemetry-interval-ms=fast")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--aorta-telemetry-interval-ms='fast': not an integer*"])
    result = pytester.runpytest("--aorta-telemetry-interval-ms=0", "--aorta-drop-throttled")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--aorta-drop-throttled needs telemetry*"])
    result = pytester.runpytest("--aorta-telemetry-source=dcgm")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--aorta-telemetry-source='dcgm': allowed values are auto, nvml*"])
