"""The simulated histories that measure the change-point detector: injected steps are found where the noise
lets them be, named by the stack field changed there, and an A/A history gives no change point."""

from __future__ import annotations

import numpy as np

from aorta.history.simulation import (
    STACK_PLAN,
    Tally,
    name_at,
    residuals,
    run_simulation,
    simulate,
    table_lines,
)

QUIET = residuals([10.0 * (1 + 0.003 * k) for k in (-2, -1, 0, 1, 2, -1, 1, 0)])  # about 0.3% noise


def test_steps_well_above_the_noise_are_all_found_and_named():
    t = simulate(QUIET, 0.05, np.random.default_rng(1))
    assert (t.injected, t.found, t.named, t.false, t.runs) == (3, 3, 3, 0, 200)


def test_an_aa_history_has_no_change_point():
    assert simulate(QUIET, 0.0, np.random.default_rng(2)) == Tally(injected=0, runs=200)


def test_steps_far_below_the_noise_are_not_found_nor_invented():
    loud = residuals([10.0 * (1 + 0.3 * k) for k in (-1, 1, -1, 1, 0, 0)])  # 25% noise
    t = simulate(loud, 0.02, np.random.default_rng(3))
    assert t.found == 0 and t.false == 0


def test_a_change_is_named_by_the_stack_change_it_sits_on_or_next_to():
    plan = {at: field for at, field, _, _ in STACK_PLAN}
    assert name_at(50, plan) == "versions.torch"
    assert name_at(102, plan) == "settings.CUDA_DEVICE_MAX_CONNECTIONS"
    assert name_at(60, plan) == ""


def test_the_table_counts_by_noise_band():
    figs = {"quiet": list(np.exp(QUIET)), "loud": [1.0, 1.3, 0.8, 1.2, 0.9]}
    aware = run_simulation(figs, seed=0, repeats=1, stack_aware=True)
    blind = run_simulation(figs, seed=0, repeats=1, stack_aware=False)
    lines = table_lines(aware, blind, {None: 2})
    row = next(line for line in lines if line.startswith("| 5% | 0-0.5% |"))
    assert "| 3 | 100.0% | 100.0% | 0.00 |" in row
