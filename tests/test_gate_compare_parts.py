"""The gate's option parsing and its choice of benchmarks to confirm (aorta/gate/compare.py), on inputs
whose right answer differs from each near miss: a glob holding ':' or '=', an effect of exactly 0."""

import pytest

from aorta.gate.compare import Comparison, Threshold, _bench_matches, parse_threshold
from aorta.gate.verdict import SAME, SLOWER, UNSURE, Verdict


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tflops=0.05", Threshold("*", "tflops", 0.05)),
        (":tflops=5%", Threshold("*", "tflops", 0.05)),  # an empty benchmark glob is every benchmark
        ("*x=1*:device_ms=0.2", Threshold("*x=1*", "device_ms", 0.2)),  # the last '=' splits off the ratio
        ("test_a[p:q]:device_ms=0.1", Threshold("test_a[p:q]", "device_ms", 0.1)),  # the last ':' the metric
    ],
)
def test_parse_threshold_splits_at_the_last_equals_and_the_last_colon(text, expected):
    assert parse_threshold(text) == expected


def test_parse_threshold_errors_name_the_option_value_and_the_form():
    with pytest.raises(ValueError) as e:
        parse_threshold("tflops")
    assert str(e.value) == (
        "--aorta-threshold='tflops': expected [BENCHMARK_GLOB:]METRIC=RATIO, "
        "e.g. tflops=0.05 or *large_gemm*:device_ms=5%"
    )
    with pytest.raises(ValueError, match=r"^--aorta-threshold='abc': not a number"):
        parse_threshold("tflops=abc")


def test_a_benchmark_glob_matches_the_whole_name_or_any_part_of_it():
    name = "benchmarks/hw_queue/test_x.py::test_gemm[large_gemm-4]"
    assert _bench_matches(name, "large_gemm") and _bench_matches(name, "*test_gemm*")
    assert _bench_matches(name, "*") and not _bench_matches(name, "tiny")


def _v(bench, outcome, change, higher_is_better=False, p=0.2):
    return Verdict(bench, "device_ms", "ms", higher_is_better, outcome, "", change_ratio=change, p_value=p)


def test_suspects_are_slower_verdicts_and_unsure_ones_in_the_bad_direction_once_each():
    c = Comparison("ref", "cand", "m", "m")
    c.verdicts = [
        _v("a", UNSURE, 0.5),  # half again as long: suspect
        _v("b", UNSURE, 0.0),  # no change at all: not a suspect
        _v("c", UNSURE, -0.5),  # faster
        _v("d", UNSURE, -0.5, higher_is_better=True),  # a throughput down by half: suspect
        _v("e", UNSURE, 0.5, p=None),  # no test ran
        _v("f", SAME, 0.5),
        _v("g", SLOWER, 0.5),
        _v("a", SLOWER, 0.7),
    ]
    assert c.suspects() == ["a", "d", "g"]
