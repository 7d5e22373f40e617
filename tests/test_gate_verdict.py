"""Verdict statistics on synthetic samples with known answers (pure: no torch)."""

import random

import pytest
from scipy import stats as scipy_stats

from aorta.gate.verdict import (
    FASTER,
    SAME,
    SLOWER,
    UNSURE,
    Verdict,
    control_false_alarms,
    decide,
    mann_whitney_u,
)


def noisy(center: float, n: int = 20, rel_sd: float = 0.005, seed: int = 0) -> list[float]:
    """``n`` samples around ``center`` with a relative spread typical of device timings (0.5%)."""
    rng = random.Random(seed)
    return [center * (1.0 + rng.gauss(0.0, rel_sd)) for _ in range(n)]


def device(ref, cand, **kw):
    return decide("bench", "device_ms", "ms", False, ref, cand, **kw)


def tflops(ref, cand, **kw):
    return decide("bench", "tflops", "TFLOP/s", True, ref, cand, **kw)


# ---------------------------------------------------------------------- Mann-Whitney U, known answers
def test_fully_separated_small_samples_use_the_exact_distribution():
    # U = 0; P(U <= 0) = 1 / C(10, 5) = 1/252; two-sided p = 2/252 (scipy's "auto" picks exact here).
    r = mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert r.u == 0
    assert r.p_value == pytest.approx(2 / 252)


def test_identical_constant_samples_give_p_one():
    assert mann_whitney_u([1.0] * 6, [1.0] * 6).p_value == 1.0


def test_ties_give_a_p_value_strictly_between_0_and_1():
    r = mann_whitney_u([1, 1, 2, 2, 3], [2, 3, 3, 4, 4])
    assert 0.0 < r.p_value < 1.0


def test_empty_side_is_an_error():
    with pytest.raises(ValueError, match="both sides"):
        mann_whitney_u([], [1.0])


def test_unequal_sizes_follow_scipys_auto_method():
    # 3 vs 20 untied samples: scipy's "auto" takes the exact distribution (one side <= 8); the hand-written
    # test this replaced took the normal approximation there (both sides had to be <= 8).
    x, y = [0.1, 0.2, 0.3], [float(i) for i in range(1, 21)]
    exact = scipy_stats.mannwhitneyu(x, y, method="exact").pvalue
    assert mann_whitney_u(x, y).p_value == pytest.approx(exact)
    assert exact != pytest.approx(scipy_stats.mannwhitneyu(x, y, method="asymptotic").pvalue)


# ---------------------------------------------------------------------- verdicts
def test_equal_distributions_are_same():
    v = device(noisy(10.0, seed=1), noisy(10.0, seed=2))
    assert v.outcome == SAME and "below the 3% minimum effect" in v.reason


def test_one_percent_shift_is_same_even_when_significant():
    v = device(noisy(10.0, seed=1), noisy(10.1, seed=2))
    assert v.outcome == SAME
    assert 0.005 < v.change_ratio < 0.015


@pytest.mark.parametrize("shift, outcome", [(1.05, SLOWER), (0.95, FASTER), (1.20, SLOWER), (0.80, FASTER)])
def test_device_time_shift_of_5_and_20_percent_by_direction(shift, outcome):
    v = device(noisy(10.0, seed=3), noisy(10.0 * shift, seed=4))
    assert v.outcome == outcome
    assert v.p_value < 1e-6
    assert v.change_ratio == pytest.approx(shift - 1, abs=0.01)


@pytest.mark.parametrize("shift, outcome", [(1.05, FASTER), (0.95, SLOWER), (0.80, SLOWER)])
def test_higher_is_better_metric_reverses_the_direction(shift, outcome):
    assert tflops(noisy(700.0, seed=5), noisy(700.0 * shift, seed=6)).outcome == outcome


def test_tiny_samples_are_unsure_never_slower():
    v = device([10.0, 10.1, 9.9], [12.0, 12.1, 11.9])
    assert v.outcome == UNSURE and "too few samples (3 vs 3; need 5 per side)" in v.reason


def test_one_value_per_run_against_a_one_run_baseline_is_unsure_and_says_how_to_gate_it():
    v = device([10.0], [13.0])
    assert v.outcome == UNSURE
    assert "one value per run" in v.reason and "--aorta-save-baseline NAME again adds a run" in v.reason
    assert device([10.0], [10.1]).outcome == SAME


def test_one_value_per_run_is_judged_by_drift_across_the_baselines_runs():
    # Peak memory of three baseline runs: 100, 102, 101 (spread 2 / 101 = 2.0%); medians pooled = 101.
    runs = [[100.0], [102.0], [101.0]]
    worse = device([100.0, 102.0, 101.0], [110.0], ref_runs=runs)  # +8.9%: above all three, past the spread
    assert worse.outcome == SLOWER and "beyond every one of the baseline's 3 runs" in worse.reason
    inside = device([100.0, 102.0, 101.0], [101.5], ref_runs=runs, min_effect=0.0)  # between 101 and 102
    assert inside.outcome == SAME and "within the 1.98% spread" in inside.reason


def test_min_effect_zero_never_calls_no_change_slower():
    # Equal medians (10.0) but different shapes: the test is significant, the change is 0.0%.
    ref = [10.0] * 10 + [9.0] * 5 + [11.0] * 5
    cand = [10.0] * 10 + [9.9] * 5 + [10.1] * 5
    v = device(ref, cand, min_effect=0.0)
    assert v.change_ratio == 0.0
    assert v.outcome == SAME and "the medians are equal" in v.reason


def test_a_change_within_the_spread_between_baseline_runs_is_not_slower():
    # Two baseline runs whose medians differ by 6% (10.0 and 10.6); this run is 5% above the pooled median:
    # significant within a run, but no further from the baseline than its own two runs are from each other.
    run_a, run_b = noisy(10.0, seed=1), noisy(10.6, seed=2)
    v = device(run_a + run_b, noisy(10.3 * 1.05, seed=3), ref_runs=[run_a, run_b])
    assert v.outcome == UNSURE and "within the spread of the baseline's 2 runs" in v.reason
    assert v.ref_runs == 2 and v.run_spread_ratio == pytest.approx(0.06 / 1.03, abs=0.01)


def test_a_change_past_the_spread_between_baseline_runs_is_slower_and_says_so():
    run_a, run_b = noisy(10.0, seed=1), noisy(10.1, seed=2)
    v = device(run_a + run_b, noisy(11.0, seed=3), ref_runs=[run_a, run_b])
    assert v.outcome == SLOWER
    assert "beyond the 0.738% spread between the baseline's 2 runs" in v.reason


def test_a_one_run_baseline_still_gates_and_says_the_spread_is_unknown():
    v = device(noisy(10.0, seed=3), noisy(10.5, seed=4))
    assert v.outcome == SLOWER and "baseline of 1 run" in v.reason


def _tested(outcome: str, p: float) -> Verdict:
    return Verdict("b", f"m{p}", "ms", False, outcome, "r", p_value=p)


def test_benjamini_hochberg_keeps_a_strong_finding_and_drops_a_chance_one():
    # 20 tests of one run: p = 0.0001 (a real slowdown), p = 0.004 (below alpha 0.01 on its own), 18 at 0.5.
    # BH: p_(1) * 20 / 1 = 0.002 < 0.01 stays SLOWER; p_(2) * 20 / 2 = 0.04 >= 0.01 becomes UNSURE.
    verdicts = [_tested(SLOWER, 0.0001), _tested(SLOWER, 0.004)] + [_tested(UNSURE, 0.5)] * 18
    out = control_false_alarms(verdicts, alpha=0.01)
    assert out[0].outcome == SLOWER and out[0].p_adjusted == pytest.approx(0.002)
    assert "Benjamini-Hochberg over the run's 20 tests" in out[0].reason
    assert out[1].outcome == UNSURE and out[1].p_adjusted == pytest.approx(0.04)
    assert "not significant after Benjamini-Hochberg" in out[1].reason
    assert all(v.outcome == UNSURE for v in out[2:])


def test_false_alarm_control_leaves_untested_verdicts_alone():
    same = Verdict("b", "m", "ms", False, SAME, "below")
    assert control_false_alarms([same], alpha=0.01) == [same]


def test_large_change_without_significance_is_unsure():
    ref = [10, 30, 10, 30, 10, 30]
    cand = [11, 33, 11, 33, 11, 33]  # medians +10%, samples overlap completely
    v = device(ref, cand)
    assert v.outcome == UNSURE and "not significant" in v.reason


def test_minimum_effect_is_settable():
    ref, cand = noisy(10.0, seed=8), noisy(10.5, seed=9)
    assert device(ref, cand).outcome == SLOWER
    assert device(ref, cand, min_effect=0.10).outcome == SAME


def test_missing_or_non_finite_samples_are_unsure():
    assert device([], [1.0]).outcome == UNSURE
    assert "non-finite" in device([1.0] * 5, [float("nan")] * 5).reason


def test_sentence_names_benchmark_metric_and_why():
    v = device(noisy(10.0, seed=3), noisy(10.5, seed=4))
    s = v.sentence()
    assert s.startswith("bench [device_ms]: SLOWER: median +5.")
    assert "Mann-Whitney p=" in s and "3% minimum effect" in s
