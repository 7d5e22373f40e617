"""Verdict statistics on synthetic samples with known answers (pure: no torch)."""

import random

import pytest

from aorta.gate.verdict import FASTER, SAME, SLOWER, UNSURE, decide, mann_whitney_u


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
    # U = 0; P(U <= 0) = 1 / C(10, 5) = 1/252; two-sided p = 2/252.
    r = mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert r.method == "exact" and r.u == 0
    assert r.p_value == pytest.approx(2 / 252)


def test_identical_constant_samples_give_p_one():
    assert mann_whitney_u([1.0] * 6, [1.0] * 6).p_value == 1.0


def test_ties_use_the_normal_approximation_with_tie_correction():
    r = mann_whitney_u([1, 1, 2, 2, 3], [2, 3, 3, 4, 4])
    assert r.method == "asymptotic" and 0.0 < r.p_value < 1.0


def test_empty_side_is_an_error():
    with pytest.raises(ValueError, match="both sides"):
        mann_whitney_u([], [1.0])


def test_matches_scipy_on_random_cases():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(7)
    for case in range(60):
        n1, n2 = rng.randint(2, 25), rng.randint(2, 25)
        shift = rng.choice([0.0, 0.3, 1.0])
        rounding = rng.choice([None, 0])  # rounded samples have ties
        x = [round(rng.gauss(0, 1), rounding) if rounding is not None else rng.gauss(0, 1) for _ in range(n1)]
        y = [
            round(rng.gauss(shift, 1), rounding) if rounding is not None else rng.gauss(shift, 1)
            for _ in range(n2)
        ]
        ours = mann_whitney_u(x, y)
        ref = scipy_stats.mannwhitneyu(x, y, alternative="two-sided", method=ours.method)
        assert ours.u == pytest.approx(ref.statistic), case
        assert ours.p_value == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-12), case


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


def test_single_value_is_judged_on_effect_only():
    assert device([10.0], [13.0]).outcome == UNSURE
    assert "single value" in device([10.0], [13.0]).reason
    assert device([10.0], [10.1]).outcome == SAME


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
