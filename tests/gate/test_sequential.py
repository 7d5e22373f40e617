"""The auto gate's sequential rule (aorta.gate.stats.sequential): its false alarms stay under alpha however often it
looks, shown by simulation from noise measured on an H100, and it finds real changes."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_tiers import examples

from aorta.gate.stats.sequential import (
    LOOKS,
    Budget,
    look_alpha,
    next_look,
    parse_budget,
    runs_to_gateable,
    simulate_gate,
)

# Between-run noise (SD of log run figures) of p0 figures measured on an H100 (docs/measurements.md, the
# run-level gate): 0.2% (GEMM TFLOP/s), 1% (stream_concurrency), 3% (hetero_kernels), 8% (tiny_kernel_stress).
MEASURED_SIGMAS = (0.002, 0.01, 0.03, 0.08)


def test_each_look_tests_at_alpha_shared_by_the_looks():
    assert LOOKS == (3, 5, 8, 12, 20)
    assert look_alpha(0.01) == pytest.approx(0.002)
    assert [next_look(n) for n in (0, 2, 3, 4, 12, 19, 20)] == [3, 3, 5, 5, 20, 20, None]


def test_a_real_compare_of_five_looks_tests_each_at_alpha_over_five():
    # The same runs, 0.7% slower (p = 0.006): SLOWER at alpha 0.01 tested once, not at one of five looks (0.002)
    from test_gate_offline import BASE, multi

    from aorta.gate.comparison.compare import GateSettings, compare_runs
    from aorta.gate.outputs.render import header_lines

    ref, cand = multi("a", BASE), multi("a", [10.09, 10.05, 10.07, 10.08], seed=10)
    once = compare_runs(ref, cand, GateSettings(alpha=0.01, min_effect=0.0))
    looked = compare_runs(ref, cand, GateSettings(alpha=0.01, min_effect=0.0, looks=len(LOOKS)))
    assert (once.settings.look_alpha, looked.settings.look_alpha) == (0.01, pytest.approx(0.002))
    assert 0.002 < once.verdicts[0].p_value < 0.01 and looked.verdicts[0].p_value == once.verdicts[0].p_value
    assert [(v.metric, v.outcome) for v in once.verdicts][0] == ("device_ms", "SLOWER")
    assert [(v.metric, v.outcome) for v in looked.verdicts][0] == ("device_ms", "UNSURE")
    assert "shared by 5 looks (0.002 each: --aorta-runs auto)" in "\n".join(header_lines(looked))


def test_runs_auto_gives_the_compare_its_looks(pytester):
    from aorta.gate.session.options import gate_settings

    assert gate_settings(pytester.parseconfig("--aorta-runs=auto")).looks == len(LOOKS)
    assert gate_settings(pytester.parseconfig("--aorta-runs=3")).looks == 1


def test_five_looks_cannot_raise_false_alarms_past_alpha_by_simulation():
    # 10,000 A/A compares per noise level, baseline of 3 runs (a CI baseline) and both sides growing (aorta ab)
    for both in (False, True):
        table = simulate_gate(MEASURED_SIGMAS, ref_runs=3, shift=0.0, both_sides_grow=both, compares=10_000)
        for row in table["rows"]:
            assert row["slower"] + row["faster"] <= 0.01, row
            assert row["slower"] <= 0.005 + 0.002, row  # about half of alpha each way, with simulation slack


def test_without_the_shared_alpha_looking_five_times_would_cry_wolf_more_often():
    # Figures that never stop for SAME, tested at every look: at 0.01 a look (alpha 0.05 shared by 5) the
    # false-alarm rate passes 0.01; at 0.002 a look (alpha 0.01 shared) it stays under.
    kw = dict(ref_runs=5, compares=4_000, seed=3, accept_early=False, min_effect=0.0)
    naive = simulate_gate([0.01], alpha=0.05, **kw)["rows"][0]
    shared = simulate_gate([0.01], alpha=0.01, **kw)["rows"][0]
    assert naive["slower"] + naive["faster"] > 0.01 > shared["slower"] + shared["faster"]


def test_power_a_5_percent_slowdown_is_found_on_the_quiet_figures():
    table = simulate_gate(MEASURED_SIGMAS[:2], ref_runs=10, shift=0.05, compares=4_000, seed=1)
    quiet, mid = table["rows"]
    assert quiet["slower"] >= 0.99 and quiet["mean_runs"] == 3  # decided at the first look
    assert mid["slower"] >= 0.95
    assert quiet["faster"] == 0 and mid["faster"] == 0


def test_the_noisiest_figure_is_left_not_gateable_not_called():
    row = simulate_gate([0.08], ref_runs=3, shift=0.02, compares=4_000, seed=2)["rows"][0]
    assert row["not_gateable"] > 0.9 and row["slower"] < 0.01


@given(st.floats(0.001, 0.05), st.integers(2, 20), st.integers(1, 20))
@settings(max_examples=examples(60), deadline=None)
def test_runs_to_gateable_is_the_fewest_more_runs_that_reach_the_bound(sigma, m, n):
    more = runs_to_gateable(sigma, m, n, alpha=0.002, power=0.95, max_mde=0.05, limit=40)
    if more is None:
        return
    from scipy import stats as sps

    def mde(mm, nn):
        df = mm + nn - 2
        k = sps.t.ppf(1 - 0.001, df) + sps.t.ppf(0.95, df)
        return math.expm1(k * sigma * math.sqrt(1 / mm + 1 / nn))

    assert mde(m + more, n + more) <= 0.05
    if more:
        assert mde(m + more - 1, n + more - 1) > 0.05


def test_budget_words_and_refusals():
    assert parse_budget("--aorta-budget", "10m") == 600
    assert parse_budget("--aorta-budget", "90") == 90
    assert parse_budget("--aorta-budget", "1.5h") == 5400
    for bad in ("", "ten", "0", "-5m", "10d", "9999h"):
        with pytest.raises(
            ValueError, match=r"--aorta-budget=.*expected a wall time such as 600, 600s, 10m or 1.5h"
        ):
            parse_budget("--aorta-budget", bad)


def test_no_run_starts_that_the_slowest_so_far_would_carry_past_the_budget():
    b = Budget(100.0, max_runs=5)
    assert b.room_for_another(50.0, [20.0, 50.0], 2)
    assert not b.room_for_another(51.0, [20.0, 50.0], 2)
    assert not b.room_for_another(0.0, [1.0], 5)  # the cap
    assert not b.room_for_another(51.0, [50.0, 20.0], 2)  # the slowest run, not the last, must fit


@pytest.mark.parametrize("within", [0.002, 0.005, 0.01, 0.02])
@pytest.mark.parametrize("block", [0.0, 0.02, 0.1])
@pytest.mark.parametrize("runs", [6, 12])
def test_the_paired_auto_gate_keeps_false_alarms_under_alpha_whatever_the_block_shares(within, block, runs):
    """Issue 45: runs paired by block from 5 pairs on, unpaired below, five looks at alpha / 5, at most as many
    candidate runs as the baseline has blocks. The A/A SLOWER and FASTER shares stay under alpha with no block
    effect and with one ten times the run noise."""
    from aorta.gate.stats.sequential import simulate_paired_gate

    aa = simulate_paired_gate(within, block, runs=runs, compares=4000, seed=runs)
    assert aa["slower"] + aa["faster"] <= 0.01


def test_pairing_finds_what_the_blocks_would_hide():
    """2% run noise of which most is the block's (order, kind, slot): with 12 runs a side, a 5% slowdown is
    found in nearly every paired compare."""
    from aorta.gate.stats.sequential import simulate_paired_gate

    slow = simulate_paired_gate(0.005, 0.02, runs=12, shift=0.05, compares=4000)
    assert slow["slower"] >= 0.99
    unpaired = simulate_paired_gate(0.005, 0.02, runs=12, shift=0.05, compares=4000, min_pairs=99)
    assert unpaired["slower"] < slow["slower"] - 0.2
