"""The gate's option parsing and its choice of benchmarks to confirm (aorta/gate/comparison/compare.py), on inputs
whose right answer differs from each near miss: a glob holding ':' or '=', an effect of exactly 0."""

import math
from types import SimpleNamespace

import pytest

from aorta.gate.comparison.compare import Comparison, Threshold, _bench_matches, parse_threshold
from aorta.gate.verdicts.verdict import SAME, SLOWER, UNSURE, Verdict


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


def test_a_noise_profile_figure_by_figure_with_every_reason_a_figure_is_not_gateable():
    from aorta.stats.noise import Noise, mde, noise_profile, pooled_noise

    runs = [
        {"a": {"ms": [10.0, 11.0, 30.0], "zero": [0.0], "gap": []}},
        {"a": {"ms": [12.0, 12.0, 1.0], "zero": [0.0, 1.0], "gap": [5.0]}, "b": {"ms": [3.0]}},
        {"a": {"ms": [9.0], "zero": [2.0], "gap": [6.0]}},
    ]
    # run values (medians): a.ms 11, 12, 9; a.zero 0, 0.5, 2; a.gap 5, 6 (the empty run left out); b.ms one run
    got = noise_profile(runs, alpha=0.05, planned_runs=4, max_mde=0.35, power=0.5)
    ms, gap = pooled_noise([11.0, 12.0, 9.0]), pooled_noise([5.0, 6.0])
    assert ms is not None and gap is not None
    # the compare's degrees of freedom, m + n - 2, as aorta noise plans them (issue 38, case 24)
    mde_ms = mde(Noise(ms.sigma, 3 + 4 - 2, 3), 3, 4, alpha=0.05, power=0.5)
    mde_gap = mde(Noise(gap.sigma, 2 + 4 - 2, 2), 2, 4, alpha=0.05, power=0.5)
    assert mde_ms == pytest.approx(0.3360, abs=1e-4) and mde_gap == pytest.approx(
        0.3634, abs=1e-4
    )  # power 0.5
    assert got == {
        "runs": 3,
        "alpha": 0.05,
        "power": 0.5,
        "max_mde": 0.35,
        "planned_runs": 4,
        "gateable": 1,
        "not_gateable": 3,
        "figures": {
            "a": {
                "ms": {"runs": 3, "sigma_log": ms.sigma, "df": 2, "mde": mde_ms, "gateable": True},
                "zero": {
                    "runs": 3,
                    "gateable": False,
                    "reason": "values at or below zero: a relative change is not defined",
                },
                "gap": {
                    "runs": 2,
                    "sigma_log": gap.sigma,
                    "df": 1,
                    "mde": mde_gap,
                    "gateable": False,
                    "reason": "MDE 36.3% exceeds the 35% bound",
                },
            },
            "b": {
                "ms": {"runs": 1, "gateable": False, "reason": "one run: the between-run noise is not known"}
            },
        },
    }


def _bench(name, metrics):
    extra = {"aorta_schema": 1, "device_ms_per_iteration": [2.0, 1.0], "metrics": metrics}
    return {"fullname": name, "extra_info": extra}


def test_only_judged_figures_with_samples_are_per_round():
    from aorta.record.run_samples import per_round_figures

    metrics = {
        "util": {"value": 1.0, "unit": "x", "higher_is_better": True, "samples": [1.0, 2.0], "judged": False},
        "mem": {"value": 5.0, "unit": "bytes", "higher_is_better": False},  # one value per run
        "tflops": {"value": 3.0, "unit": "TFLOP/s", "higher_is_better": True, "samples": [3.0, 4.0]},
    }
    assert per_round_figures(_bench("t", metrics)) == {"device_ms", "tflops"}


def test_a_run_entry_keeps_the_machine_the_host_and_each_benchmarks_samples():
    from aorta.gate.baselines.baseline import run_entry

    machine = {"backend": "cuda", "gpu_name": "H100", "gpu_count": 2, "torch": "2.11"}
    run = {"machine_info": {"node": "box7", "aorta": machine}, "benchmarks": [_bench("t", {})]}
    entry = run_entry(run, "2026-01-02T03:04:05", {"torch": "2.11"}, run_id="r9")
    assert (
        entry
        == {
            "id": "r9",
            "saved_at": "2026-01-02T03:04:05",
            "measured_at": None,  # pytest-benchmark's "datetime" of the run, where it has one (its identity)
            "block": None,  # what it shares with a run of the other side (aorta.gate.runs.blocks): none recorded
            "stack": {"torch": "2.11"},
            # which machine: the GPU's UUID where recorded, else the host name
            "machine": {"backend": "cuda", "gpu_name": "H100", "gpu_count": 2, "host": "box7", "id": "box7"},
            "benchmarks": {"t": {"device_ms": [2.0, 1.0]}},
            "evidence": {},  # no kernel summary, host or stream figures in this record (aorta/gate/causes/run_evidence.py)
        }
    )
    bare = run_entry({}, "2026-01-02", {})
    assert (bare["id"], bare["machine"]["host"], bare["benchmarks"]) == ("2026-01-02", None, {})
    assert bare["machine"]["id"] == ""  # unknown: never taken for another machine
    with_uuid = {"machine_info": {"node": "vm", "aorta": {**machine, "gpu_uuid": "GPU-9eb1"}}}
    assert run_entry(with_uuid, "t", {})["machine"]["id"] == "GPU-9eb1"  # lent machines share "vm"


def test_run_ids_fall_back_to_the_position_of_a_run_without_one():
    from aorta.gate.stats.samples import run_ids
    from aorta.record.run_samples import CANDIDATE_RUNS_KEY

    assert run_ids({}) == ["run1"]
    assert run_ids({CANDIDATE_RUNS_KEY: [{"id": "a"}, {}, "not a mapping", {"id": "d"}]}) == [
        "a",
        "run2",
        "run3",
        "d",
    ]


def test_verdict_reasons_word_for_word():
    from aorta.gate.verdicts.verdict import NOT_GATEABLE, decide

    def reason(ref, cand, metric="device_ms", unit="ms", higher=False):
        v = decide("b", metric, unit, higher, ref, cand)
        return v.outcome, v.reason

    one = [[1.0] * 5]
    assert reason([], one) == (UNSURE, "cannot compare: no baseline runs")
    assert reason(one, []) == (UNSURE, "cannot compare: no runs of this figure")
    assert reason(one, [[2.0, float("nan"), float("inf"), 2.0, 2.0]]) == (
        UNSURE,
        "cannot compare: a value nan",
    )
    assert reason(one, [[0.0] * 5]) == (
        NOT_GATEABLE,
        "values at or below zero: a relative change is not defined (a figure near zero)",
    )
    assert reason(one, [[1.1] * 5]) == (
        NOT_GATEABLE,
        "+10% (1 -> 1.1 ms, 1 vs 1 run): one run on each side: the between-run noise is not known; save the baseline from several fresh "
        "processes (--aorta-runs N) and compare with several",
    )
    base = [[10.0] * 5, [10.05] * 5, [9.95] * 5, [10.02] * 5]
    assert reason(base, [[11.0] * 5, [11.05] * 5, [10.96] * 5]) == (
        SLOWER,
        "+10% (10 -> 11 ms, 4 vs 3 runs), p=7.8e-07, interval +8.6% to +11.4% (MDE 1.9%)",
    )
    same = base[:3]
    assert reason(same, same) == (SAME, "+0% (10 -> 10 ms, 3 vs 3 runs): no change (MDE 2.8%)")


def test_percentages_keep_two_digits_below_ten_percent_and_three_above():
    from aorta.gate.verdicts.verdict import _pct

    assert [_pct(x) for x in (0.0123, -0.0456, 0.456, -1.5)] == ["+1.2%", "-4.6%", "+45.6%", "-150%"]


def test_a_policy_with_no_samples_is_refused_with_the_value():
    from aorta.gate.verdicts.verdict import Policy

    with pytest.raises(ValueError) as e:
        Policy(min_samples=0)
    assert str(e.value) == "min_samples must be >= 1, got 0"


def test_the_stack_rows_name_each_part_either_side_records_and_a_changed_gpu_count():
    from aorta.gate.comparison.compare import stack_diff

    ref = {
        "machine_info": {
            "python_version": "3.12.3",
            "aorta": {"torch": "2.11", "cuda": "13.0", "gpu_count": 8},
        }
    }
    cand = {"machine_info": {"aorta": {"torch": "2.12", "nccl": "2.27", "gpu_count": 4}}}
    assert stack_diff(ref, cand) == [
        ("cuda", "13.0", None),
        ("torch", "2.11", "2.12"),
        ("nccl", None, "2.27"),
        ("python", "3.12.3", None),
        ("gpu_count", 8, 4),
    ]
    same = {"machine_info": {"aorta": {"gpu_count": 2}}}
    assert stack_diff(same, same) == []


def test_deliberate_slowdowns_are_read_from_every_benchmark_that_records_one():
    from aorta.gate.comparison.compare import deliberate_slowdowns

    def b(name, **extra):
        return {
            "fullname": name,
            "extra_info": {"aorta_schema": 1, "device_ms_per_iteration": [1.0], **extra},
        }

    run = {"benchmarks": [b("a", test_slowdown=0.2), b("b"), b("c", test_slowdown=0.05)]}
    assert deliberate_slowdowns(run) == {"a": 0.2, "c": 0.05}
    assert deliberate_slowdowns({}) == {}


def test_a_slowdown_whose_calibration_missed_is_named_in_the_header():
    from aorta.gate.comparison.compare import slowdown_misses
    from aorta.gate.outputs.render import header_lines

    def b(name, outcome, padded):
        info = {"requested_ratio": 0.02, "calibrated_ratio": padded, "calibration_outcome": outcome}
        return {
            "fullname": name,
            "extra_info": {"aorta_schema": 1, "device_ms_per_iteration": [1.0], "test_slowdown": 0.02,
                           "test_slowdown_info": info},
        }  # fmt: skip

    run = {
        "benchmarks": [b("gemm_bf16", "missed", 0.169), b("gemm_fp32", "landed", 0.021), b("old", None, 0.02)]
    }
    assert slowdown_misses(run) == {"gemm_bf16": (0.02, 0.169)}
    comp = Comparison(
        "ref", "cand", "m", "m", test_slowdown={"gemm_bf16": 0.02}, slowdown_misses=slowdown_misses(run)
    )
    said = [ln for ln in header_lines(comp) if "NOT CALIBRATED" in ln]
    assert len(said) == 1 and "gemm_bf16 asked +2.0%, padded +16.9%" in said[0]


@pytest.mark.parametrize(
    ("factor", "shown"),
    [(1.045, "+4.5%"), (0.951, "-4.9%"), (9.0, "+800.0%"), (10.0, "x10"), (4.93e19, "x4.93e+19"),
     (0.05, "x1/20"), (0.0, "x0")],
)  # fmt: skip
def test_an_interval_end_past_ten_times_reads_as_a_factor(factor, shown):
    from aorta.gate.outputs.render import factor_bound

    assert factor_bound(factor) == shown


def test_an_interval_whose_low_end_underflowed_reads_from_its_high_end():
    # a machine-rule UNSURE on an H200 (2 machines' spread, alpha 0.002: t = 318): +4.5% within exp(-+44.6),
    # printed as -100.0% .. +4925207909171703316480.0%
    from aorta.gate.outputs.render import _interval

    d, w = math.log(1.045), 44.6
    v = SimpleNamespace(change_ratio=0.045, ci_low=math.expm1(d - w), ci_high=math.expm1(d + w))
    assert v.ci_low == -1.0
    assert _interval(v) == f"x1/{math.exp(w - d):.3g} .. x{math.exp(d + w):.3g}" == "x1/2.24e+19 .. x2.45e+19"
