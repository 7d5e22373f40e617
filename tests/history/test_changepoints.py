"""Change points that know the between-run noise and where the stack changed: known answers by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aorta.history.changepoints import DEFAULT_SNAP, ChangePoint, detect, difference_noise, series_noise
from aorta.history.trends import SNAP, Series, StackChange

# 0.5% between-run noise, a repeating pattern of log deviations (mean 0 per 4 runs): +-0.5%, 0, 0
PATTERN = [0.005, -0.005, 0.0, 0.0]


def series(n: int, steps: dict[int, float], base: float = 10.0) -> list[float]:
    """``n`` runs of a figure around ``base`` with the pattern's noise, times ``1 + step`` from each index on."""
    out, level = [], math.log(base)
    for i in range(n):
        level += math.log1p(steps.get(i, 0.0))
        out.append(math.exp(level + PATTERN[i % 4]))
    return out


def test_a_5_percent_step_where_the_stack_changed_is_found_there():
    (cp,) = detect(series(40, {20: 0.05}), stack_changes=[10, 20, 30])
    assert cp.index == 20 and cp.at_stack_change
    assert cp.change == pytest.approx(0.05, rel=1e-6)  # the pattern's noise averages out over whole blocks


def test_no_step_no_change_point():
    assert detect(series(40, {}), stack_changes=[10, 20, 30]) == []


def test_a_step_no_stack_change_explains_must_clear_a_stricter_bound():
    """sigma 0.41%, 12 runs each side: a 0.9% step scores z = 0.009 / (0.0041 * sqrt(2/12)) = 5.4, over the
    stack bound for 1 place (3.3) and the bound for any of 24 places (4.1)... so it is found at either; a 0.6%
    step scores 3.6: found only where the stack changed."""
    x = series(24, {12: 0.006})
    sigma = series_noise(x, [12])
    assert sigma == pytest.approx(math.sqrt((2 * 0.005**2) * 6 / 22), rel=1e-6)
    assert [c.index for c in detect(x, [12], min_effect=0.005)] == [12]
    assert detect(x, [], sigma=sigma, min_effect=0.005) == []


def test_with_several_stack_changes_the_bound_is_shared_by_all_of_them():
    """sigma 0.37%, 12 runs each side: a 0.53% step at run 12 scores z = 0.0053 / (0.0037 * sqrt(2/12)) = 3.5,
    over the bound of one stack change, isf(0.001 / 2) = 3.29, under the bound shared by five stack changes,
    isf(0.001 / 10) = 3.72 (the noise given, so the same in both)."""
    x = series(24, {12: 0.0053})
    sigma = series_noise(x, [12])
    assert sigma == pytest.approx(0.0037, abs=5e-5)
    (cp,) = detect(x, [12], sigma=sigma, min_effect=0.005)
    assert cp.index == 12 and cp.z == pytest.approx(3.51, abs=0.01)
    assert detect(x, [4, 8, 12, 16, 20], sigma=sigma, min_effect=0.005) == []


def test_a_change_found_snap_runs_from_a_stack_change_moves_onto_it_one_further_does_not():
    assert DEFAULT_SNAP == 2
    x = series(40, {20: 0.05})
    x[18] *= 1.05  # runs 18 and 19 read like the new level: the best split is 18, two runs before the change
    x[19] *= 1.05
    (cp,) = detect(x, [20])
    assert cp.index == 20 and cp.at_stack_change
    x[17] *= 1.05  # from run 17: three runs before it, too far to move
    (cp,) = detect(x, [20])
    assert cp.index == 17 and not cp.at_stack_change


def test_a_change_point_snap_runs_from_a_stack_change_is_named_by_it_one_further_is_not():
    torch = StackChange(14, (("versions.torch", "2.11.0", "2.12.0"),))
    s = Series("cpu", "b", "device_ms", "ms", False, (), (), (torch,), (), None)
    assert SNAP == 2
    assert [s.named(ChangePoint(i, 0.05, 9.0, False)) for i in (12, 13, 14, 15, 16, 17)] == [
        torch,
        torch,
        torch,
        torch,
        torch,
        None,
    ]
    assert s.named(ChangePoint(11, 0.05, 9.0, False)) is None


def test_a_change_smaller_than_min_effect_is_not_reported():
    assert detect(series(40, {20: 0.05}), [20], min_effect=0.06) == []


def test_each_side_needs_min_segment_runs():
    (cp,) = detect(series(40, {37: 0.2}), [37])  # 3 runs after the step, 5 needed: the split can go no later
    assert cp.index == 35 and not cp.at_stack_change
    assert [c.index for c in detect(series(40, {35: 0.2}), [35])] == [35]


def test_several_steps_are_each_found_and_measured_between_their_neighbours():
    found = detect(series(80, {20: 0.05, 40: 0.2, 60: -0.1}), [20, 40, 60])
    assert [c.index for c in found] == [20, 40, 60]
    assert [round(c.change, 4) for c in found] == [0.05, 0.2, -0.1]


def test_a_change_found_next_to_a_stack_change_moves_onto_it():
    """Noise puts the best split one run early; the stack change one run later clears the stack bound."""
    x = series(40, {20: 0.05})
    x[19] *= 1.05  # run 19 reads like the new level
    (cp,) = detect(x, [20])
    assert cp.index == 20 and cp.at_stack_change


def test_noise_is_pooled_within_stacks_so_a_step_between_stacks_does_not_inflate_it():
    x = series(40, {20: 0.2})
    assert series_noise(x, [20]) == pytest.approx(series_noise(series(40, {}), [20]))
    assert series_noise(x, []) > 10 * series_noise(x, [20])


def test_the_difference_estimate_ignores_a_step():
    rng = np.random.default_rng(0)
    x = np.exp(rng.normal(0, 0.01, 400) + np.r_[np.zeros(200), np.full(200, 0.2)])
    assert difference_noise(list(x)) == pytest.approx(0.01, rel=0.15)


def test_unknown_or_zero_noise_finds_nothing():
    assert detect([1.0] * 40, [20]) == []
    assert detect([1.0, -1.0] * 20, [20]) == []  # a figure at or below zero has no relative change
