"""The gate's pieces called directly, with known answers (pure: no torch, no pytest session): the runs a
document holds and the sentence that refuses a bad one, the options' bounds on both sides, the verdict
sentences word for word, and which figures a benchmark's verdicts cover. Each input is chosen so that the
right answer differs from the near misses (a bound exactly hit, a second run, a second note)."""

import math

import pytest
from test_gate_offline import BASE, SLOW, bench, multi, run

from aorta.exit_codes import EXIT_NOTHING_COMPARED
from aorta.gate.comparison.compare import (
    GateSettings,
    Threshold,
    benchmark_verdicts,
    compare_runs,
    mismatch_reason,
)
from aorta.gate.stats.samples import baseline_runs
from aorta.gate.verdicts import verdict as verdict_module
from aorta.gate.verdicts.verdict import (
    FASTER,
    NOT_GATEABLE,
    SAME,
    SLOWER,
    UNSURE,
    Policy,
    Verdict,
    control_false_alarms,
    decide,
)
from aorta.record import RecordError
from aorta.record.run_samples import CANDIDATE_RUNS_KEY, RUNS_KEY, device_samples_ms, figures
from aorta.stats.noise import pooled_noise
from aorta.stats.option_values import parse_alpha, parse_positive_ratio, parse_ratio, parse_whole

A = "benchmarks/hw_queue/test_x.py::a"


# ------------------------------------------------------------------------------ samples: what a run holds
def test_pytest_benchmark_seconds_become_milliseconds():
    # No aorta samples: pytest-benchmark's per-round data (seconds), else its median, in ms.
    assert device_samples_ms({"stats": {"data": [0.002, 0.0035], "median": 9.0}}) == [2.0, 3.5]
    assert device_samples_ms({"stats": {"median": 0.004}}) == [4.0]
    assert device_samples_ms({}) == []


def test_device_time_is_in_ms_lower_is_better_and_a_one_value_metric_is_its_value():
    b = {
        "fullname": "t",
        "extra_info": {
            "aorta_schema": 1,
            "device_ms_per_iteration": [3.0, 1.0],
            "metrics": {
                "peak": {"value": 7, "unit": "GB", "higher_is_better": False},
                "none": {"value": None, "unit": "x", "higher_is_better": True},
            },
        },
    }
    assert figures(b) == {
        "device_ms": ("ms", False, [3.0, 1.0]),
        "peak": ("GB", False, [7.0]),
        "none": ("x", True, []),
    }


def _stored(samples_by_run, key=CANDIDATE_RUNS_KEY):
    runs = [{"id": f"r{i}", "benchmarks": {"t": s}} for i, s in enumerate(samples_by_run)]
    return {"aorta_baseline": {RUNS_KEY: runs}} if key == RUNS_KEY else {key: runs}


def test_a_document_without_benchmarks_is_one_empty_run():
    assert baseline_runs({}) == [{}]


def test_stored_runs_come_back_oldest_first_as_floats_and_zero_device_time_is_allowed():
    doc = _stored([{"device_ms": [1, 2.5]}, {"device_ms": [0.0, 3.0], "slack": [-2.0]}])
    assert baseline_runs(doc) == [
        {"t": {"device_ms": [1.0, 2.5]}},
        {"t": {"device_ms": [0.0, 3.0], "slack": [-2.0]}},
    ]


@pytest.mark.parametrize(
    ("key", "where"),
    [(RUNS_KEY, "aorta_baseline.runs"), (CANDIDATE_RUNS_KEY, "aorta_runs")],
)
def test_a_bad_stored_sample_is_named_by_document_key_run_benchmark_and_figure(key, where):
    good = {"device_ms": [1.0, 2.0]}
    for bad, why in (
        ([1.0, True], "expected a list of finite numbers"),  # a bool is no sample
        ([1.0, "2.5"], "expected a list of finite numbers"),  # nor a number written as a string
        (4.0, "expected a list of finite numbers"),  # one number where a list belongs
    ):
        with pytest.raises(RecordError) as e:
            baseline_runs(_stored([good, good, {"device_ms": bad}], key))
        assert str(e.value) == f"{where}[2] (run 3 of 3).benchmarks['t'].device_ms: {why}"
    with pytest.raises(RecordError) as e:
        baseline_runs(_stored([good, {"device_ms": [1.0, -0.5]}], key), source="base.json")
    assert str(e.value) == (
        f"base.json: {where}[1] (run 2 of 2).benchmarks['t'].device_ms: -0.5: a device time cannot be negative"
    )
    with pytest.raises(RecordError) as e:
        baseline_runs(_stored([{"rate": [1.0, math.inf]}], key))
    assert str(e.value) == f"{where}[0] (run 1 of 1).benchmarks['t'].rate: inf is not a finite number"


@pytest.mark.parametrize("entry", ["not a run", {"id": "r1"}, {"benchmarks": [1.0]}])
def test_a_stored_run_without_a_benchmarks_mapping_is_named(entry):
    with pytest.raises(RecordError) as e:
        baseline_runs({CANDIDATE_RUNS_KEY: [{"benchmarks": {}}, entry]})
    assert str(e.value) == "aorta_runs[1].benchmarks: missing or not a mapping"


def test_a_plain_run_with_a_negative_device_time_is_named_by_benchmark():
    doc = {"benchmarks": [{"fullname": "t", "stats": {"data": [0.001, -0.002]}}]}
    with pytest.raises(RecordError) as e:
        baseline_runs(doc, source="run.json")
    assert str(e.value) == "run.json: benchmarks['t'].device_ms: -2.0: a device time cannot be negative"


# ------------------------------------------------------------------------------ noise
def test_a_run_figure_of_zero_gives_no_noise_estimate():
    assert pooled_noise([0.0, 2.0], [1.0, 2.0]) is None
    assert pooled_noise([1.0, 2.0]) is not None


# ------------------------------------------------------------------------------ options, bounds both sides
def test_whole_numbers_in_range_pass_and_the_errors_say_what_is_allowed():
    assert parse_whole("--aorta-runs", "5", 1, 5, "runs") == 5
    assert parse_whole("--aorta-runs", "1", 1, None, "runs") == 1
    assert parse_whole("--aorta-runs", "500", 1, None, "runs") == 500
    cases = [
        (("abc", 1, 5), "--aorta-runs='abc': give a whole number of runs, 1 to 5"),
        (("abc", 2, None), "--aorta-runs='abc': give a whole number of runs, 2 and up"),
        (("6", 1, 5), "--aorta-runs='6': out of range; allowed 1 to 5"),
        (("0", 1, 5), "--aorta-runs='0': out of range; allowed 1 to 5"),
        (("1", 2, None), "--aorta-runs='1': out of range; allowed 2 and up"),
    ]
    for (text, low, high), message in cases:
        with pytest.raises(ValueError) as e:
            parse_whole("--aorta-runs", text, low, high, "runs")
        assert str(e.value) == message


def test_alpha_is_strictly_between_0_and_1():
    assert parse_alpha("0.05") == 0.05 and parse_alpha("0.999") == 0.999
    for text in ("0", "1", "1.5", "-0.1"):
        with pytest.raises(ValueError) as e:
            parse_alpha(text)
        assert str(e.value) == f"--aorta-alpha='{text}': out of range; allowed strictly between 0 and 1"
    with pytest.raises(ValueError) as e:
        parse_alpha("often")
    assert str(e.value) == "--aorta-alpha='often': not a number; give a significance level such as 0.01"


def test_a_ratio_is_0_to_10_both_ends_included():
    assert (
        parse_ratio("--aorta-min-effect", "10") == 10.0 and parse_ratio("--aorta-min-effect", "1000%") == 10.0
    )
    assert parse_ratio("--aorta-min-effect", "0") == 0.0
    for text in ("10.5", "1001%", "-1%"):
        with pytest.raises(ValueError) as e:
            parse_ratio("--aorta-min-effect", text)
        assert str(e.value) == f"--aorta-min-effect='{text}': out of range; allowed 0 to 10 (0% to 1000%)"


def test_a_positive_ratio_takes_anything_above_zero():
    assert parse_positive_ratio("--aorta-max-mde", "0.5", "e.g. 5%") == 0.5
    assert parse_positive_ratio("--aorta-max-mde", "1%", "e.g. 5%") == 0.01
    with pytest.raises(ValueError) as e:
        parse_positive_ratio("--aorta-max-mde", "0%", "e.g. 5%")
    assert str(e.value) == "--aorta-max-mde='0%': must be above 0 (e.g. 5%)"


def test_every_gate_setting_reaches_the_policy_and_the_last_matching_rule_wins():
    settings = GateSettings(
        min_effect=0.02,
        alpha=0.05,
        min_samples=3,
        max_mde=0.2,
        power=0.8,
        thresholds=(Threshold("*gemm*", "device_ms", 0.1), Threshold("*", "device_ms", 0.07)),
    )
    assert settings.policy_for("test_gemm", "device_ms") == Policy(
        alpha=0.05, power=0.8, max_mde=0.2, min_effect=0.07, min_samples=3
    )
    assert settings.policy_for("test_gemm", "tflops").min_effect == 0.02


# ------------------------------------------------------------------------------ verdict sentences
def _one_value_runs(*values):
    return [[v] for v in values]


def test_a_figure_too_noisy_to_gate_says_its_mde_bound_and_noise_and_why_it_may_be_noisy():
    ref, cand = _one_value_runs(10.0, 10.01), _one_value_runs(10.3, 10.21)
    v = decide("b", "rate", "", False, ref, cand, per_round=False)  # no unit: no space before the comma
    assert (v.outcome, v.reason) == (
        NOT_GATEABLE,
        "+2.5% (10 -> 10.25, 2 vs 2 runs): MDE 5.84% with these runs exceeds the 5% bound "
        "(between-run noise 0.44%)",
    )
    hinted = decide("b", "rate", "", False, ref, cand, per_round=False, hint="clock throttled")
    assert hinted.reason == v.reason + "; clock throttled"


def test_no_change_says_the_mde():
    runs = _one_value_runs(10.0, 10.02, 10.1)
    v = decide("b", "device_ms", "ms", False, runs, runs, per_round=False, policy=Policy(max_mde=10.0))
    assert (v.outcome, v.reason) == (SAME, "+0% (10.04 -> 10.04 ms, 3 vs 3 runs): no change (MDE 2.9%)")


def test_a_change_not_found_says_what_change_would_have_been_found():
    ref, cand = _one_value_runs(10.0, 10.02, 10.05), _one_value_runs(9.98, 10.01, 10.0)
    v = decide("b", "device_ms", "ms", False, ref, cand, per_round=False, policy=Policy(max_mde=10.0))
    assert (v.outcome, v.reason) == (
        SAME,
        "-0.27% (10.02 -> 9.997 ms, 3 vs 3 runs), p=0.19: no change found; a change of 1.1% (MDE) would be "
        "found with probability 0.95",
    )


def test_a_significant_change_under_the_minimum_effect_is_same_and_says_the_policy():
    ref, cand = _one_value_runs(10.0, 10.01, 9.99), _one_value_runs(10.2, 10.21, 10.19)
    v = decide(
        "b",
        "device_ms",
        "ms",
        False,
        ref,
        cand,
        per_round=False,
        policy=Policy(max_mde=10.0, min_effect=0.025),
    )
    assert (v.outcome, v.reason) == (
        SAME,
        "+2% (10 -> 10.2 ms, 3 vs 3 runs), p=1.6e-05: below the 2.5% minimum effect; interval +1.6% to +2.4%",
    )


def test_a_p_value_exactly_at_the_suspect_bound_is_not_suggestive(monkeypatch):
    ref, cand = _one_value_runs(10.0, 10.02, 10.05), _one_value_runs(10.04, 10.07, 10.05)
    p = decide("b", "device_ms", "ms", False, ref, cand, per_round=False, policy=Policy(max_mde=10.0)).p_value
    assert 0.01 < p < 0.5
    for suspect_p, outcome in ((p, SAME), (p * 1.001, UNSURE)):
        monkeypatch.setattr(verdict_module, "SUSPECT_P", suspect_p)
        v = decide("b", "device_ms", "ms", False, ref, cand, per_round=False, policy=Policy(max_mde=10.0))
        assert v.outcome == outcome


# ------------------------------------------------------------------------------ false-alarm control
def _tested(outcome, p):
    return Verdict("b", "device_ms", "ms", False, outcome, "r", p_value=p)


def test_false_alarm_control_names_the_tests_and_keeps_a_p_of_zero():
    out = control_false_alarms([_tested(SLOWER, 0.0), _tested(SAME, 0.5)], alpha=0.01)
    assert out[0].outcome == SLOWER and out[0].p_adjusted == 0.0
    assert out[0].reason == "r; Benjamini-Hochberg over the comparison's 2 tests: adjusted p=0"


def test_an_adjusted_p_exactly_at_alpha_is_not_significant():
    (v,) = control_false_alarms([_tested(FASTER, 0.01)], alpha=0.01)
    assert v.p_adjusted == 0.01 and v.outcome == UNSURE
    assert v.reason == (
        "r; not significant after Benjamini-Hochberg over the comparison's 1 tests: adjusted p=0.01 >= 0.01"
    )


# ------------------------------------------------------------------------------ compare
def test_a_changed_backend_on_the_same_gpu_model_is_refused_by_name():
    assert (
        mismatch_reason(run([]), run([], backend="rocm"))
        == "backend differs: baseline 'cuda', this run 'rocm'"
    )


def test_a_world_size_differs_only_for_a_benchmark_both_ran_named_by_its_test():
    def fsdp(name, ranks):
        return {"fullname": name, "extra_info": {"world_size": ranks}}

    step = "benchmarks/fsdp/test_f.py::TestStep::test_step[4]"
    ref = run([fsdp("benchmarks/fsdp/test_f.py::only_here", 8), fsdp(step, 2)])
    assert mismatch_reason(ref, run([fsdp(step, 2)])) is None
    assert mismatch_reason(ref, run([fsdp(step, 4)])) == (
        "world size differs: test_step[4] ran on 2 rank(s) in the baseline, 4 in this run "
        "(save one baseline per world size)"
    )


def test_a_comparison_names_both_sides_their_machines_slowdowns_and_settings():
    settings = GateSettings(min_effect=0.03)
    slowed = bench("b", 10.0)
    slowed["extra_info"]["test_slowdown"] = 0.2
    comp = compare_runs(run([bench("a", 10.0)]), run([slowed], gpu_count=2), settings)
    assert (comp.ref_label, comp.cand_label) == ("baseline", "this run")
    assert (comp.ref_machine, comp.cand_machine) == (
        "1x NVIDIA H100 80GB HBM3 (cuda)",
        "2x NVIDIA H100 80GB HBM3 (cuda)",
    )
    assert comp.test_slowdown == {"benchmarks/hw_queue/test_x.py::b": 0.2}
    assert comp.settings is settings
    assert (
        comp.summary()
        == "NOTHING COMPARED: none of the 1 benchmark(s) of this run is in the baseline (1 there)"
    )
    named = compare_runs(run([]), run([]), ref_label="main", cand_label="pr")
    assert (named.ref_label, named.cand_label) == ("main", "pr")


def test_documents_without_benchmarks_compare_nothing():
    comp = compare_runs({}, {})
    assert comp.exit_code == EXIT_NOTHING_COMPARED and comp.verdicts == []


def test_the_evidence_of_confirmation_runs_explains_a_move():
    confirm = run([bench("a", 10.6, seed=40)])
    confirm["benchmarks"][0]["extra_info"]["host_enqueue_ms_per_iteration"] = 0.25
    comp = compare_runs(multi("a", BASE), multi("a", SLOW, seed=20), extra_runs=[confirm])
    assert comp.why[A]["outcome"] == SLOWER
    assert comp.why[A]["streams"] == {"host_enqueue_ms_per_iteration": [None, 0.25]}


def _record(metrics, notes=()):
    return {
        "fullname": "t",
        "extra_info": {
            "aorta_schema": 1,
            "device_ms_per_iteration": [1.0] * 5,
            "metrics": metrics,
            "reading_notes": list(notes),
        },
    }


def _metric(unit, higher_is_better):
    return {"value": 1.0, "unit": unit, "higher_is_better": higher_is_better}


def test_a_figure_the_record_marks_reported_only_gets_no_verdict_however_far_it_moves():
    # time waiting for a peer rank is launch skew, not the stack: reported, never judged
    wait = {"value": 1.0, "unit": "ms", "higher_is_better": False, "samples": [1.0] * 5, "judged": False}
    ref_bench, cand_bench = _record({"peer_wait_ms": wait}), _record({"peer_wait_ms": wait})
    rounds = [1.0, 1.01, 0.99, 1.0, 1.02]
    ref_runs = [{"t": {"device_ms": rounds, "peer_wait_ms": [1.0] * 5}} for _ in range(3)]
    cand_runs = [(f"r{i}", {"t": {"device_ms": rounds, "peer_wait_ms": [3.0] * 5}}) for i in range(3)]
    got = benchmark_verdicts("t", ref_bench, cand_bench, GateSettings(), ref_runs, cand_runs)
    assert [(v.metric, v.outcome) for v in got] == [("device_ms", SAME)]


def test_a_benchmark_gets_a_verdict_per_figure_both_sides_hold_from_the_runs_that_hold_it():
    ref_bench = _record({"rate": _metric("GB/s", True), "gone": _metric("TB", False)})
    cand_bench = _record(
        {"new": _metric("x", True), "rate": _metric("GB/s", True)},
        notes=["clocks varied between runs", "second note"],
    )
    rounds = [1.0, 1.01, 0.99, 1.0, 1.02]
    ref_runs = [
        {"t": {"device_ms": rounds, "rate": [5.0]}},
        {"other": {"device_ms": rounds}},  # a run that did not hold this benchmark
        {"t": {"device_ms": rounds, "rate": [9.0]}},
        {"t": {"device_ms": rounds}},  # nor this figure
    ]
    cand_runs = [("r1", {"t": {"device_ms": rounds, "rate": [7.0]}}), ("r2", {"t": {"rate": [6.0]}})]
    got = benchmark_verdicts("t", ref_bench, cand_bench, GateSettings(), ref_runs, cand_runs)
    assert [(v.metric, v.outcome) for v in got] == [
        ("device_ms", SAME),  # the same rounds in every run
        ("rate", NOT_GATEABLE),
        ("gone", UNSURE),
    ]
    device, rate, gone = got
    assert (device.ref_runs, device.cand_runs, device.cand_run_ids) == (3, 1, ("r1",))
    assert (rate.unit, rate.higher_is_better, rate.ref_runs, rate.cand_run_ids) == (
        "GB/s",
        True,
        2,
        ("r1", "r2"),
    )
    assert rate.reason.endswith("; clocks varied between runs")
    assert gone == Verdict("t", "gone", "TB", False, UNSURE, "recorded in the baseline, not in this run")
    no_notes = _record({"rate": _metric("GB/s", True)})
    rate = benchmark_verdicts("t", ref_bench, no_notes, GateSettings(), ref_runs, cand_runs)[1]
    assert rate.reason == (
        "-3.4% (6.708 -> 6.481 GB/s, 2 vs 2 runs): MDE 4.85e+03% with these runs exceeds the 5% bound "
        "(between-run noise 30%)"
    )
