"""Rounds per run from the variance components and costs (Kalibera and Jones, ISMM 2013): the components are
those the data were drawn with, and the rounds chosen buy the least variance per second."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_tiers import examples

from aorta.stats.rounds_plan import Components, best_rounds, components, variance_per_second


def _draw(n_runs: int, rounds: int, sb: float, sw: float, seed: int) -> list[list[float]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n_runs):
        run_mean = rng.gauss(0.0, sb)
        out.append([math.exp(run_mean + rng.gauss(0.0, sw)) for _ in range(rounds)])
    return out


def test_components_are_those_the_runs_were_drawn_with():
    comp = components(_draw(400, 20, sb=0.01, sw=0.03, seed=1))
    assert comp is not None
    assert comp.within_sd == pytest.approx(0.03, rel=0.05)
    assert comp.between_sd == pytest.approx(0.01, rel=0.15)
    assert (comp.runs, comp.rounds) == (400, 20)


def test_no_between_run_noise_reads_zero_not_negative():
    comp = components(_draw(50, 10, sb=0.0, sw=0.02, seed=2))
    assert comp is not None and comp.between >= 0.0


def test_too_few_runs_or_a_bad_value_gives_nothing():
    assert components([[1.0, 1.1]]) is None
    assert components([[1.0, 1.1], [1.0]]) is None  # a run of one round tells nothing within runs
    assert components([[1.0, -1.0], [1.0, 1.1]]) is None


def test_hand_worked_rounds():
    # sw2 / sb2 = 4, c_run / c_round = 100 -> sqrt(400) = 20 rounds
    comp = Components(within=4e-4, between=1e-4, runs=10, rounds=10)
    assert best_rounds(comp, run_cost_s=10.0, round_cost_s=0.1) == 20
    # the noise all between runs: as few rounds as allowed
    assert best_rounds(Components(1e-8, 1e-4, 10, 10), 10.0, 0.1) == 2
    # no noise between runs: every round as good as a run
    assert best_rounds(Components(1e-4, 0.0, 10, 10), 10.0, 0.1, hi=500) == 500
    with pytest.raises(ValueError, match="costs must be positive"):
        best_rounds(comp, 0.0, 0.1)


@settings(max_examples=examples(200), deadline=None)
@given(
    within=st.floats(1e-8, 1e-2),
    between=st.floats(1e-8, 1e-2),
    run_cost=st.floats(0.5, 100.0),
    round_cost=st.floats(1e-4, 1.0),
)
def test_the_rounds_chosen_buy_the_least_variance_per_second(within, between, run_cost, round_cost):
    comp = Components(within, between, runs=5, rounds=10)
    r = best_rounds(comp, run_cost, round_cost, lo=1, hi=10_000)
    best = variance_per_second(comp, r, run_cost, round_cost)
    # no whole number of rounds in range does better than the one chosen (by more than rounding to a whole)
    for other in {1, max(r - 1, 1), min(r + 1, 10_000), min(2 * r, 10_000), max(r // 2, 1), 10_000}:
        assert best <= variance_per_second(comp, other, run_cost, round_cost) * (1 + 1e-12)


def test_the_script_reads_a_baselines_runs(tmp_path, capsys):
    from scripts.rounds_plan import main

    runs = _draw(6, 10, sb=0.001, sw=0.02, seed=3)  # noise within runs: many rounds pay
    doc = {
        "aorta_wall": {"tests_s": 15.0},
        "benchmarks": [{"fullname": "b.py::t", "extra_info": {"timed_s": 0.1}}],
        "aorta_baseline": {
            "runs": [
                {"block": {"seed": k + 1, "kind": "lean"}, "benchmarks": {"b.py::t": {"device_ms": r}}}
                for k, r in enumerate(runs)
            ]
        },
    }
    path = tmp_path / "base.json"
    path.write_text(__import__("json").dumps(doc))
    assert main([str(path), "--run-wall-s", "18"]) == 0
    out = capsys.readouterr().out
    assert "6 lean runs; a run's cost 18.0 s" in out
    row = next(line for line in out.splitlines() if line.startswith("t "))
    assert int(row.split()[5]) > 10  # within-run noise dominates: more rounds than 10
