"""Run-level verdicts with known answers (pure: no torch). The sample is the run: rounds estimate their
own run's figure, and a change must beat how far fresh processes of the same stack differ."""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_tiers import examples
from scipy import stats as scipy_stats

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
from aorta.stats.noise import mde, pooled_noise

LOOSE = Policy(alpha=0.01, max_mde=10.0)  # every figure gateable: these tests are about the decision


def run_of(center: float, rounds: int = 20, rel_sd: float = 0.001, seed: int = 0) -> list[float]:
    """One run's rounds: tight around the run's own figure (within-run noise is small; between-run is not)."""
    rng = random.Random(seed)
    return [center * (1.0 + rng.gauss(0.0, rel_sd)) for _ in range(rounds)]


def runs_of(centers, **kw) -> list[list[float]]:
    return [run_of(c, seed=i, **kw) for i, c in enumerate(centers)]


def device(ref, cand, policy=LOOSE, **kw) -> Verdict:
    return decide("bench", "device_ms", "ms", False, ref, cand, policy=policy, **kw)


# ---------------------------------------------------------------------- the run is the sample
BASE_RUNS = [10.0, 10.3, 9.8, 10.1, 10.2]  # fresh processes of one stack: about 1.9% apart
SHIFTED_RUNS = [10.35, 10.3, 10.25]  # the same stack again, three runs that happen to sit high


def test_a_between_run_shift_that_rounds_as_samples_would_flag_is_same():
    ref, cand = runs_of(BASE_RUNS), runs_of(SHIFTED_RUNS)
    # Pooled rounds treated as independent samples: a highly "significant" difference...
    pooled = scipy_stats.mannwhitneyu(sum(ref, []), sum(cand, []), alternative="two-sided")
    assert pooled.pvalue < 1e-3
    # ...that the runs, judged as runs, do not support.
    v = device(ref, cand)
    assert v.outcome == SAME and v.ref_runs == 5 and v.cand_runs == 3


def test_a_real_shift_above_the_mde_is_slower_with_its_interval():
    ref = runs_of([10.0, 10.05, 9.95, 10.02, 9.98])  # 0.4% between runs
    cand = runs_of([10.5, 10.55, 10.45])  # +5%
    v = device(ref, cand, policy=Policy())
    assert v.outcome == SLOWER, v.reason
    assert v.change_ratio == pytest.approx(0.05, abs=0.002)
    assert 0.0 < v.ci_low < 0.05 < v.ci_high
    assert v.mde is not None and v.mde < 0.05 and "interval" in v.reason


@pytest.mark.parametrize("shift, outcome", [(1.05, SLOWER), (0.95, FASTER), (1.2, SLOWER), (0.8, FASTER)])
def test_device_time_shift_by_direction(shift, outcome):
    ref = runs_of([10.0, 10.05, 9.95, 10.02])
    cand = runs_of([10.0 * shift, 10.03 * shift, 9.97 * shift])
    assert device(ref, cand).outcome == outcome


@pytest.mark.parametrize("shift, outcome", [(1.05, FASTER), (0.95, SLOWER)])
def test_higher_is_better_reverses_the_direction(shift, outcome):
    ref = runs_of([100.0, 100.5, 99.5, 100.2])
    cand = runs_of([100.0 * shift, 100.3 * shift, 99.7 * shift])
    assert decide("b", "tflops", "TFLOP/s", True, ref, cand, policy=LOOSE).outcome == outcome


def test_the_run_figure_is_the_median_of_its_rounds_not_the_mean():
    # One wild round per run moves a mean by 10% and a median not at all.
    ref = [[10.0] * 9 + [20.0], [10.0] * 9 + [20.0], [10.1] * 10]
    cand = [[10.0] * 10, [10.05] * 10, [10.0] * 9 + [0.5]]
    v = device(ref, cand)
    assert v.ref_value == pytest.approx(math.exp((2 * math.log(10.0) + math.log(10.1)) / 3))
    assert v.outcome == SAME


# ---------------------------------------------------------------------- the MDE and its bound
def _two_and_two(a: float, d: float) -> tuple[list[list[float]], list[list[float]]]:
    """Baseline log figures (-a, +a), candidate (d-a, d+a), five identical rounds per run."""
    ref = [[math.exp(-a)] * 5, [math.exp(a)] * 5]
    cand = [[math.exp(d - a)] * 5, [math.exp(d + a)] * 5]
    return ref, cand


def test_mde_matches_its_formula_computed_by_hand():
    # SS = 4 a^2 over df = 2 -> s = a * sqrt(2); se = s * sqrt(1/2 + 1/2) = s.
    a = 0.01
    s = a * math.sqrt(2)
    expected = math.expm1((scipy_stats.t.ppf(1 - 0.01 / 2, 2) + scipy_stats.t.ppf(0.95, 2)) * s)
    ref, cand = _two_and_two(a, 0.0)
    v = device(ref, cand)
    assert v.mde == pytest.approx(expected, rel=1e-9)
    assert v.noise_sigma == pytest.approx(s, rel=1e-9)


@pytest.mark.parametrize("bound_offset, outcome", [(-1e-9, NOT_GATEABLE), (1e-9, SAME)])
def test_the_max_mde_bound_on_both_sides(bound_offset, outcome):
    ref, cand = _two_and_two(0.002, 0.0)
    the_mde = device(ref, cand).mde
    v = device(ref, cand, policy=Policy(max_mde=the_mde + bound_offset))
    assert v.outcome == outcome
    if outcome == NOT_GATEABLE:
        assert "exceeds the" in v.reason and v.change_ratio == pytest.approx(0.0, abs=1e-12)


def test_a_host_bound_figure_too_noisy_for_the_bound_is_never_slower_however_large_the_change():
    ref = runs_of([10.0, 14.0, 8.0])  # a host-bound figure: 50% apart from process to process
    cand = runs_of([30.0, 31.0, 29.0])  # tripled
    v = device(ref, cand, policy=Policy(), hint="host-bound: the host enqueue is the round")
    assert v.outcome == NOT_GATEABLE and v.cand_value == pytest.approx(30.0, rel=0.05)
    assert "MDE" in v.reason and "host-bound" in v.reason


def test_a_change_past_the_figures_own_mde_is_judged_though_the_mde_exceeds_the_bound():
    # An H100, fp32 GEMM, TF32 forced on: 3 baseline runs 1.2% apart against 2 candidate runs, MDE 9.8% > 5%
    ref, cand = runs_of([2.666, 2.70, 2.64]), runs_of([0.349, 0.350])
    v = device(ref, cand, policy=Policy())
    assert (
        v.mde > Policy().max_mde and v.outcome == FASTER and v.change_ratio == pytest.approx(-0.87, abs=0.01)
    )
    assert "past this figure's own MDE" in v.reason and "not gateable here" in v.reason


def test_a_host_bound_figure_is_not_judged_past_its_own_mde_either():
    # The TF32 case above, judged FASTER as a device figure, on a figure with a reading note (host-bound):
    # its runs fall into modes by process, so the own-MDE exception does not apply and it stays NOT_GATEABLE
    ref, cand = runs_of([2.666, 2.70, 2.64]), runs_of([0.349, 0.350])
    v = device(ref, cand, policy=Policy(), hint="host-bound: the host enqueue is the round")
    assert v.outcome == NOT_GATEABLE and v.change_ratio == pytest.approx(-0.87, abs=0.01)
    assert "exceeds the 5% bound" in v.reason and v.reason.endswith(
        "; host-bound: the host enqueue is the round"
    )


@pytest.mark.parametrize("past, outcome", [(1 - 1e-6, NOT_GATEABLE), (1 + 1e-6, SLOWER)])
def test_past_its_own_mde_on_both_sides(past, outcome):
    a = 0.02  # 2.8% between runs at 2 v 2: an MDE far above a 1% bound
    the_mde = device(*_two_and_two(a, 0.0)).mde
    ref, cand = _two_and_two(a, math.log1p(the_mde * past))
    v = device(ref, cand, policy=Policy(max_mde=0.01))
    assert v.mde == pytest.approx(the_mde) and v.p_value < 0.01  # significant on both sides of the edge
    assert v.outcome == outcome


@pytest.mark.parametrize("t_factor, outcome", [(1 - 1e-6, UNSURE), (1 + 1e-6, SLOWER)])
def test_significance_at_alpha_on_both_sides(t_factor, outcome):
    # d placed at exactly the two-sided critical t for alpha 0.01 with df = 2 (se = s = a * sqrt(2)).
    a = 0.001
    tq = scipy_stats.t.ppf(1 - 0.01 / 2, 2)
    d = tq * a * math.sqrt(2) * t_factor
    ref, cand = _two_and_two(a, d)
    v = device(ref, cand, policy=Policy(max_mde=10.0, min_effect=0.0))
    assert v.outcome == outcome, v.reason


@pytest.mark.parametrize("effect, outcome", [(0.0299, SAME), (0.03, SLOWER), (0.0301, SLOWER)])
def test_the_minimum_effect_on_both_sides(effect, outcome):
    ref, cand = _two_and_two(1e-5, math.log1p(effect))
    v = device(ref, cand, policy=Policy(max_mde=10.0, min_effect=0.03))
    assert v.change_ratio == pytest.approx(effect, rel=1e-9)
    assert v.outcome == outcome, v.reason


@pytest.mark.parametrize("rounds, outcome", [(4, UNSURE), (5, SLOWER)])
def test_a_run_needs_min_samples_rounds_on_either_side(rounds, outcome):
    ref = [run_of(10.0, seed=1), run_of(10.02, seed=2), run_of(9.98, rounds=rounds, seed=3)]
    cand = [run_of(12.0, seed=4), run_of(12.02, rounds=rounds, seed=5)]
    v = device(ref, cand)
    assert v.outcome == outcome
    if outcome == UNSURE:
        assert "too few samples: 4 round(s) in baseline run 3" in v.reason


def test_a_figure_with_one_value_per_run_is_judged_by_its_runs():
    ref = [[100.0], [101.0], [99.5], [100.4]]
    cand = [[120.0], [121.0], [119.0]]
    v = decide("b", "peak_memory_bytes", "bytes", False, ref, cand, policy=LOOSE, per_round=False)
    assert v.outcome == SLOWER and v.ref_runs == 4 and v.cand_runs == 3


def test_one_run_on_each_side_is_not_gateable_and_says_how_to_fix_it():
    v = device([run_of(10.0)], [run_of(20.0)])
    assert v.outcome == NOT_GATEABLE and "--aorta-runs" in v.reason


def test_values_at_or_below_zero_are_not_gateable():
    v = decide("b", "saving_ms", "ms", True, [[0.1] * 5, [-0.2] * 5], [[0.3] * 5, [0.2] * 5], policy=LOOSE)
    assert v.outcome == NOT_GATEABLE and "zero" in v.reason


def test_missing_or_non_finite_values_are_unsure():
    assert device([], [run_of(1.0)]).outcome == UNSURE
    assert device([run_of(1.0)], []).outcome == UNSURE
    v = device([run_of(1.0), [float("nan")] * 5], [run_of(1.0)])
    assert v.outcome == UNSURE and "nan" in v.reason


def test_a_suggestive_slowdown_is_unsure_and_a_suggestive_speedup_is_same():
    ref = runs_of([10.0, 10.2, 9.9, 10.1])
    slow = runs_of([10.3, 10.4, 10.2])
    v = device(ref, slow)
    assert 0.01 <= v.p_value < 0.05 and v.outcome == UNSURE and "suggestive" in v.reason
    fast = runs_of([9.75, 9.65, 9.85])
    w = device(ref, fast)
    assert 0.01 <= w.p_value < 0.05 and w.outcome == SAME


def test_records_the_runs_each_verdict_used():
    v = device(runs_of([10.0, 10.1]), runs_of([10.0, 10.05, 10.1]), cand_run_ids=["run1", "run2", "confirm1"])
    assert v.as_dict()["cand_run_ids"] == ["run1", "run2", "confirm1"]


def test_policy_refuses_nonsense():
    with pytest.raises(ValueError, match="alpha"):
        Policy(alpha=0.0)
    with pytest.raises(ValueError, match="power"):
        Policy(power=1.0)
    with pytest.raises(ValueError, match="max_mde"):
        Policy(max_mde=0.0)


# ---------------------------------------------------------------------- properties
run_figures = st.lists(st.floats(min_value=0.5, max_value=2.0), min_size=2, max_size=6)


@settings(max_examples=examples(60), deadline=None)
@given(ref=run_figures, cand=run_figures, scale=st.floats(min_value=1e-3, max_value=1e3))
def test_the_verdict_does_not_depend_on_the_unit(ref, cand, scale):
    a = device([[x] * 5 for x in ref], [[x] * 5 for x in cand])
    b = device([[x * scale] * 5 for x in ref], [[x * scale] * 5 for x in cand])
    assert a.outcome == b.outcome
    if a.change_ratio is not None:
        assert b.change_ratio == pytest.approx(a.change_ratio, rel=1e-6, abs=1e-9)


@settings(max_examples=examples(60), deadline=None)
@given(ref=run_figures, cand=run_figures)
def test_swapping_the_sides_swaps_slower_and_faster(ref, cand):
    a = device([[x] * 5 for x in ref], [[x] * 5 for x in cand])
    b = device([[x] * 5 for x in cand], [[x] * 5 for x in ref])
    flip = {SLOWER: FASTER, FASTER: SLOWER}
    if a.outcome in flip:
        assert b.outcome == flip[a.outcome]
    assert b.p_value == pytest.approx(a.p_value) if a.p_value is not None else b.p_value is None


@settings(max_examples=examples(60), deadline=None)
@given(runs=run_figures)
def test_the_same_runs_on_both_sides_are_never_a_change(runs):
    v = device([[x] * 5 for x in runs], [[x] * 5 for x in runs])
    assert v.outcome in (SAME, NOT_GATEABLE)


def test_pooled_noise_and_mde_refuse_what_they_cannot_estimate():
    assert pooled_noise([1.0], [2.0]) is None
    assert pooled_noise([1.0, -1.0]) is None
    with pytest.raises(ValueError, match="a run on each side"):
        mde(pooled_noise([1.0, 1.1]), 0, 1, alpha=0.01)


# ---------------------------------------------------------------------- false-alarm control
def _v(p, outcome=SLOWER):
    return Verdict("b", "device_ms", "ms", False, outcome, "r", change_ratio=0.1, p_value=p)


def test_benjamini_hochberg_keeps_a_strong_finding_and_drops_a_chance_one():
    out = control_false_alarms([_v(1e-6), _v(0.009)] + [_v(0.5, SAME)] * 8, alpha=0.01)
    assert out[0].outcome == SLOWER and "adjusted p" in out[0].reason
    assert out[1].outcome == UNSURE and "not significant after Benjamini-Hochberg" in out[1].reason
    assert out[1].p_adjusted == pytest.approx(0.045)


def test_false_alarm_control_leaves_untested_and_not_gateable_verdicts_alone():
    ng = Verdict("b", "x", "ms", False, NOT_GATEABLE, "noisy", p_value=1e-9)
    out = control_false_alarms([Verdict("b", "x", "ms", False, UNSURE, "none"), ng], alpha=0.01)
    assert out[0].p_adjusted is None and out[1].p_adjusted is None and out[1].outcome == NOT_GATEABLE


# ---------------------------------------------------------------------- edges, with numbers worked by hand
def test_the_interval_matches_the_t_quantile_worked_by_hand():
    a, d = 0.002, 0.03
    ref, cand = _two_and_two(a, d)
    v = device(ref, cand)
    se = a * math.sqrt(2)  # s = a * sqrt(2), sqrt(1/2 + 1/2) = 1
    tq = scipy_stats.t.ppf(1 - 0.01 / 2, 2)
    assert v.ci_low == pytest.approx(math.expm1(d - tq * se), rel=1e-9)
    assert v.ci_high == pytest.approx(math.expm1(d + tq * se), rel=1e-9)
    assert v.p_value == pytest.approx(2 * scipy_stats.t.sf(d / se, 2), rel=1e-9)


def test_mde_with_unequal_runs_and_another_power_worked_by_hand():
    noise = pooled_noise([1.0, 1.02, 0.98, 1.01], [1.0, 1.03, 0.99])
    logs_a = [math.log(x) for x in (1.0, 1.02, 0.98, 1.01)]
    logs_b = [math.log(x) for x in (1.0, 1.03, 0.99)]
    ss = sum((x - sum(g) / len(g)) ** 2 for g in (logs_a, logs_b) for x in g)
    s = math.sqrt(ss / 5)
    assert noise.sigma == pytest.approx(s) and noise.df == 5 and noise.runs == 7
    for power in (0.95, 0.8):
        k = scipy_stats.t.ppf(1 - 0.01 / 2, 5) + scipy_stats.t.ppf(power, 5)
        assert mde(noise, 4, 3, alpha=0.01, power=power) == pytest.approx(
            math.expm1(k * s * math.sqrt(1 / 4 + 1 / 3))
        )
    assert mde(noise, 1, 1, alpha=0.01) > 0
    ref = [[x] * 5 for x in (1.0, 1.02, 0.98, 1.01)]
    cand = [[x] * 5 for x in (1.0, 1.03, 0.99)]
    assert device(ref, cand, policy=Policy(max_mde=10.0, power=0.8)).mde == pytest.approx(
        mde(noise, 4, 3, alpha=0.01, power=0.8)
    )


def test_an_mde_exactly_at_the_bound_is_gateable():
    ref, cand = _two_and_two(0.002, 0.0)
    the_mde = device(ref, cand).mde
    assert device(ref, cand, policy=Policy(max_mde=the_mde)).outcome == SAME


def test_runs_without_any_noise_give_a_verdict_from_the_change_alone():
    same = device([[2.0] * 5, [2.0] * 5], [[2.0] * 5, [2.0] * 5])
    assert same.outcome == SAME and same.p_value == 1.0 and "no change" in same.reason
    slower = device([[2.0] * 5, [2.0] * 5], [[2.2] * 5, [2.2] * 5])
    assert slower.outcome == SLOWER and slower.p_value == 0.0 and slower.mde == 0.0


def test_a_run_figure_of_exactly_zero_is_not_gateable():
    v = decide("b", "saving_ms", "ms", True, [[0.0] * 5, [0.1] * 5], [[0.2] * 5, [0.3] * 5], policy=LOOSE)
    assert v.outcome == NOT_GATEABLE and (v.unit, v.higher_is_better) == ("ms", True)


def test_a_verdict_names_what_it_judged_whatever_the_outcome():
    v = decide("b", "tflops", "TFLOP/s", True, [], [[1.0] * 5], policy=Policy(min_effect=0.02))
    assert (v.benchmark, v.metric, v.unit, v.higher_is_better, v.outcome, v.min_effect) == (
        "b",
        "tflops",
        "TFLOP/s",
        True,
        UNSURE,
        0.02,
    )


@pytest.mark.parametrize("p_factor, outcome", [(1.0, UNSURE), (0.999, SLOWER)])
def test_a_p_value_exactly_at_alpha_is_not_significant(p_factor, outcome):
    ref, cand = _two_and_two(0.001, 0.02)
    p = device(ref, cand, policy=Policy(max_mde=10.0, min_effect=0.0)).p_value
    v = device(ref, cand, policy=Policy(alpha=p / p_factor, max_mde=10.0, min_effect=0.0))
    assert v.outcome == outcome


def test_policy_edges():
    Policy(alpha=0.999, power=0.5, min_samples=1, min_effect=0.0)
    for bad in (dict(alpha=1.0), dict(power=0.49), dict(min_samples=0), dict(min_effect=-0.01)):
        with pytest.raises(ValueError):
            Policy(**bad)


def test_the_noise_profile_of_figures_below_one_and_at_its_bound():
    from aorta.stats.noise import noise_profile, profile_entry

    small = profile_entry([0.5, 0.501, 0.499, 0.5005], alpha=0.01, planned_runs=3, max_mde=0.05)
    assert small["gateable"] is True and small["df"] == 3
    at_bound = profile_entry([0.5, 0.501, 0.499, 0.5005], alpha=0.01, planned_runs=3, max_mde=small["mde"])
    assert at_bound["gateable"] is True and "reason" not in at_bound
    k = scipy_stats.t.ppf(0.995, 5) + scipy_stats.t.ppf(
        0.95, 5
    )  # the compare's df: 4 + 3 - 2 (issue 38, case 24)
    assert small["mde"] == pytest.approx(math.expm1(k * small["sigma_log"] * math.sqrt(1 / 4 + 1 / 3)))
    profile = noise_profile(
        [{"b": {"device_ms": [1.0] * 5}}, {"b": {"device_ms": [1.01] * 5}}],
        alpha=0.01,
        planned_runs=3,
        max_mde=0.05,
    )
    assert {k: profile[k] for k in ("runs", "alpha", "power", "max_mde", "planned_runs")} == {
        "runs": 2,
        "alpha": 0.01,
        "power": 0.95,
        "max_mde": 0.05,
        "planned_runs": 3,
    }
    assert profile["gateable"] + profile["not_gateable"] == 1


def test_a_change_exactly_at_the_minimum_effect_counts():
    ref, cand = _two_and_two(1e-5, math.log1p(0.03))
    change = device(ref, cand).change_ratio
    assert device(ref, cand, policy=Policy(max_mde=10.0, min_effect=change)).outcome == SLOWER
    assert device(ref, cand, policy=Policy(max_mde=10.0, min_effect=change * 1.0001)).outcome == SAME


@pytest.mark.parametrize("short_side", ["baseline", "this"])
def test_one_short_run_on_either_side_alone_is_too_few_samples(short_side):
    ref = [
        run_of(10.0, seed=1),
        run_of(10.02, seed=2),
        run_of(9.98, rounds=4 if short_side == "baseline" else 20, seed=3),
    ]
    cand = [run_of(12.0, seed=4), run_of(12.02, rounds=4 if short_side == "this" else 20, seed=5)]
    v = device(ref, cand)
    assert v.outcome == UNSURE and f"4 round(s) in {short_side} run" in v.reason


def test_the_own_mde_verdict_says_so_word_for_word():
    ref, cand = runs_of([2.666, 2.70, 2.64]), runs_of([0.349, 0.350])
    assert device(ref, cand, policy=Policy()).reason == (
        "-86.9% (2.668 -> 0.3494 ms, 3 vs 2 runs), p=1.7e-07, interval -87.5% to -86.2%: past this figure's own "
        "MDE (7.38% with these runs; changes under it are not gateable here: the bound is 5%)"
    )


def test_a_power_limited_figure_past_its_own_mde_is_judged_a_host_bound_one_is_not():
    # H200, aorta ab, fp32 GEMM at one stream, sw_power_cap in every round: 4 runs a side, TF32 forced on B
    ref, cand = runs_of([2.50, 2.73, 2.95, 2.75]), runs_of([0.370, 0.375, 0.380, 0.374])
    power = "power-limited: sw_power_cap in 10 of 10 timed rounds; the clock follows the power draw"
    judged = device(ref, cand, policy=Policy(), hint=power)
    assert judged.mde > Policy().max_mde and judged.outcome == FASTER
    host = device(ref, cand, policy=Policy(), hint="host-bound: GPU busy 40% of the round")
    assert host.outcome == NOT_GATEABLE and "host-bound" in host.reason
    idle = device(ref, cand, policy=Policy(), hint="GPU idle 35% of the step between short kernels")
    assert idle.outcome == NOT_GATEABLE


# ---------------------------------------------------------------------- a figure that measures the host, few runs
TWO_A_SIDE = (runs_of([10.0, 10.02]), runs_of([9.70, 9.72]))  # 3% apart, 0.15% noise: MDE under 1% at 2 v 2


@pytest.mark.parametrize(
    "how", [{"timed_on_host": True}, {"hint": "host-bound: the host enqueue is the round"}]
)
def test_a_figure_that_measures_the_host_is_no_faster_on_two_runs_a_side(how):
    v = device(*TWO_A_SIDE, policy=Policy(), **how)
    assert v.outcome == UNSURE and v.p_value is not None and v.p_value < 0.01  # the test kept: more runs come
    assert v.reason.endswith("2 + 2 runs, a FASTER needs 5 runs in all"), v.reason
    assert device(*TWO_A_SIDE, policy=Policy()).outcome == FASTER  # a device figure is judged on them


def test_a_figure_that_measures_the_host_is_judged_on_five_runs_in_all_and_same_needs_no_more():
    ref, cand = runs_of([10.0, 10.02, 9.99]), runs_of([9.70, 9.72])
    assert device(ref, cand, policy=Policy(), timed_on_host=True).outcome == FASTER
    same = device(runs_of([10.0, 10.02]), runs_of([10.01, 10.0]), policy=Policy(), timed_on_host=True)
    assert same.outcome == SAME  # the rule holds back a SLOWER or FASTER, never a SAME
