"""A candidate on a machine its baseline never saw is judged against the noise between machines too
(aorta.gate.stats.machine_noise). Measured on five lent H100s: host-to-device copy bandwidth of one machine 7.7%
below the others' (zero_offload, 4 streams) was SLOWER in 2 of 10 cross-machine A/A compares judged on run
noise alone; with the machines' own noise, 0 of 10."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_tiers import examples

from aorta.gate.stats.machine_noise import cross_machine, new_machines
from aorta.gate.verdicts.verdict import NOT_GATEABLE, SAME, SLOWER, decide

# Three baseline machines two runs each, machine means 1% apart, runs 0.1% apart within a machine.
BASE = [[10.0], [10.01], [10.1], [10.11], [9.9], [9.91]]
BASE_M = ["A", "A", "C", "C", "D", "D"]


def verdict(cand, cand_m, ref=BASE, ref_m=BASE_M, **kw):
    return decide(
        "b",
        "device_ms",
        "ms",
        False,
        ref,
        cand,
        per_round=False,
        ref_machines=ref_m,
        cand_machines=cand_m,
        **kw,
    )


def test_a_new_machine_as_far_from_the_others_as_they_are_from_each_other_is_not_a_regression():
    cand = [[10.31], [10.32]]  # machine G, 3% above the baseline's mean: one more machine
    on_machines = verdict(cand, ["G", "G"])
    assert on_machines.outcome in (SAME, NOT_GATEABLE)
    assert "noise between the baseline's 3 machines" in on_machines.reason
    runs_only = verdict(cand, ["", ""])  # machines not recorded: run noise alone, as before
    assert runs_only.outcome == SLOWER


def test_a_shift_far_beyond_the_machines_spread_is_slower_on_a_new_machine():
    tight = [[10.0], [10.01], [10.02], [10.03], [9.99], [10.0]]  # machines 0.2% apart
    v = verdict([[12.0], [12.02]], ["G", "G"], ref=tight)
    assert v.outcome == SLOWER and v.change_ratio == pytest.approx(0.2, abs=0.01)


def test_a_candidate_on_a_machine_the_baseline_holds_is_judged_on_run_noise():
    v = verdict([[10.3], [10.31]], ["C", "C"])
    assert "another machine" not in v.reason


def test_a_baseline_of_one_machine_cannot_measure_the_machines_noise_itself():
    ref = [[10.0], [10.02], [10.01]]
    v = verdict([[10.0], [10.01]], ["G", "G"], ref=ref, ref_m=["A", "A", "A"])
    assert "another machine than the baseline's one (A -> G)" in v.reason  # aorta.gate.verdicts.machine_rule
    assert cross_machine([0.0, 0.1, 0.2], ["A", "A", "A"], [0.0], ["G"]) is None


@pytest.mark.parametrize(
    ("ref_m", "cand_m", "new"),
    [
        (["A", "C"], ["G"], True),
        (["A", "C"], ["C"], False),
        (["A", "C"], ["C", "G"], True),  # any run on a new machine
        (["A", ""], ["G"], False),  # a run of unknown machine: cannot tell
        ([], ["G"], False),
    ],
)
def test_new_machines_needs_every_machine_known(ref_m, cand_m, new):
    assert new_machines(ref_m, cand_m) is new


def test_known_answer_for_two_machines_one_run_each_and_a_candidate_run():
    # machine means 0 and 0.2 (log): s_mm^2 = 0.02; no run noise is measurable (one run per machine)
    cm = cross_machine([0.0, 0.2], ["A", "C"], [0.5], ["G"])
    assert cm is not None
    assert cm.se == pytest.approx(math.sqrt(0.02 * (1 / 2 + 1)))
    assert cm.df == 1.0 and cm.machines == 2
    # no run noise is measured, none is invented: all the spread is the machines'
    assert (cm.sigma_run, cm.sigma_machine) == (0.0, pytest.approx(math.sqrt(0.02)))


def test_three_machines_of_one_run_each_give_the_machines_two_degrees_of_freedom():
    cm = cross_machine([0.0, 0.1, 0.3], ["A", "C", "D"], [0.5], ["G"])
    assert cm.df == pytest.approx(2.0)  # Satterthwaite with the machine means alone: M - 1
    flat = cross_machine([0.5, 0.5, 0.5], ["A", "C", "D"], [0.5], ["G"])  # nothing varies at all
    assert (flat.se, flat.df) == (0.0, 2.0)


def test_where_the_machines_add_exactly_nothing_the_run_noise_and_its_degrees_of_freedom_decide():
    # s_mm^2 = h * s_run^2 exactly (dyadic values): the machine component is zero at the boundary
    cm = cross_machine([0.0, 0.125, 0.0, 0.875], ["A", "A", "C", "C"], [0.0, 0.25], ["G", "G"])
    assert cm.sigma_machine == 0.0 and cm.df == 3.0  # the runs' 3 degrees of freedom


machine_runs = st.lists(st.floats(-0.2, 0.2, allow_nan=False), min_size=1, max_size=4)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(machine_runs, min_size=2, max_size=5), machine_runs, st.floats(-3, 3))
def test_across_machines_the_gate_is_never_more_sure_than_run_noise_alone(groups, cand, shift):
    ref = [x for g in groups for x in g]
    ref_m = [f"m{i}" for i, g in enumerate(groups) for _ in g]
    cm = cross_machine(ref, ref_m, cand, ["new"] * len(cand))
    assert cm is not None
    df_run = sum(len(g) - 1 for g in groups) + len(cand) - 1
    within = sum(sum((x - sum(g) / len(g)) ** 2 for x in g) for g in (*groups, cand))
    if df_run:
        h = sum(1 / len(g) for g in groups) / len(groups)
        assert cm.se >= math.sqrt(within / df_run * (h / len(groups) + 1 / len(cand))) - 1e-12
    assert 1.0 <= cm.df <= df_run + len(groups) - 1
    moved = cross_machine([x + shift for x in ref], ref_m, [x + shift for x in cand], ["new"] * len(cand))
    assert moved is not None and moved.se == pytest.approx(cm.se, abs=1e-9)  # a common shift changes nothing


def test_a_saved_baseline_of_three_machines_judges_a_fourth_machine_against_their_noise():
    from test_gate_offline import bench, run

    from aorta.exit_codes import EXIT_INCONCLUSIVE
    from aorta.gate.baselines import baseline as bl
    from aorta.gate.comparison.compare import compare_runs

    def runs(centers, uuid, seed):
        return [run([bench("a", c, seed=seed + i)], gpu_uuid=uuid) for i, c in enumerate(centers)]

    base = bl.combine_runs(
        runs([10.0, 10.01], "GPU-A", 0) + runs([10.1, 10.11], "GPU-C", 10) + runs([9.9, 9.91], "GPU-D", 20),
        [f"r{i}" for i in range(6)],
    )
    cand = bl.combine_runs(runs([10.31, 10.32], "GPU-G", 30), ["g1", "g2"])
    comp = compare_runs(base, cand)
    device = next(v for v in comp.verdicts if v.metric == "device_ms")
    assert "noise between the baseline's 3 machines" in device.reason
    assert comp.exit_code == EXIT_INCONCLUSIVE  # not SLOWER; too few machines to judge it at all
    same_machine = bl.combine_runs(runs([10.31, 10.32], "GPU-C", 40), ["c3", "c4"])
    assert (
        "another machine"
        not in next(v for v in compare_runs(base, same_machine).verdicts if v.metric == "device_ms").reason
    )


# Worked by hand. Baseline (log run figures): machine A 0.00, 0.02; C 0.10, 0.14; D -0.10, -0.10.
# Runs about their machine's mean: A +-0.01, C +-0.02, D 0 -> ss 0.0002 + 0.0008 + 0.
# Machine means 0.01, 0.12, -0.10: mean 0.01, s_mm^2 = (0 + 0.11^2 + 0.11^2) / 2 = 0.0121; h = 1/2.
WORKED = ([0.0, 0.02, 0.10, 0.14, -0.10, -0.10], ["A", "A", "C", "C", "D", "D"])


def test_worked_answer_one_new_machine_of_three_runs():
    # candidate G 0.30, 0.32, 0.31: ss 0.0002; df_run = 1 + 1 + 1 + 2 = 5; s_run^2 = 0.0012 / 5 = 0.00024
    # a1 = 1/3 + 1; a2 = h/3 + (1/3)/1 - a1*h = -1/6; var = 4/3 * 0.0121 - 1/6 * 0.00024 = 0.01609333
    # (above the run noise alone, 0.00024 * (1/6 + 1/3) = 0.00012); sigma_machine^2 = 0.0121 - 0.00012
    # df = var^2 / ((4/3 * 0.0121)^2 / 2 + (0.00004)^2 / 5) = 1.99009
    cm = cross_machine(*WORKED, [0.30, 0.32, 0.31], ["G"] * 3)
    assert cm.se == pytest.approx(math.sqrt(4 / 3 * 0.0121 - 0.00024 / 6), rel=1e-9)
    assert cm.df == pytest.approx(1.9900900455, rel=1e-9)  # under 2: fewer than the machines' 2
    assert cm.sigma_machine == pytest.approx(math.sqrt(0.0121 - 0.00012), rel=1e-9)
    assert cm.sigma_run == pytest.approx(math.sqrt(0.00024), rel=1e-9)
    assert cm.as_dict() == {
        "se_log": cm.se,
        "df": cm.df,
        "sigma_machine_log": cm.sigma_machine,
        "sigma_run_log": cm.sigma_run,
        "baseline_machines": 3,
    }


def test_worked_answer_two_new_machines_of_unequal_runs():
    # candidate G 0.30, 0.32 (ss 0.0002) and H 0.31 (one run): df_run = 4, s_run^2 = 0.0012 / 4 = 0.0003
    # h_c = (1/2 + 1) / 2 = 0.75; a1 = 1/3 + 1/2; a2 = 0.5/3 + 0.75/2 - a1 * 0.5 = 0.125
    cm = cross_machine(*WORKED, [0.30, 0.32, 0.31], ["G", "G", "H"])
    assert cm.se == pytest.approx(math.sqrt((1 / 3 + 1 / 2) * 0.0121 + 0.125 * 0.0003), rel=1e-9)
    assert cm.df == pytest.approx(2.0148897611, rel=1e-9)
    assert cm.sigma_machine == pytest.approx(math.sqrt(0.0121 - 0.0003 * 0.5), rel=1e-9)
    assert cm.sigma_run == pytest.approx(math.sqrt(0.0003), rel=1e-9)


def test_worked_answer_machines_that_agree_leave_the_run_noise_alone():
    # A and C 0.00, 0.02 each (means equal: s_mm^2 = 0); G 0.50, 0.52 and H 0.50, 0.53:
    # ss 0.0002 * 3 + 0.00045 = 0.00105 over df 4; se^2 = s_run^2 * (h/2 + h_c/2) = 0.0002625 * 0.5
    cm = cross_machine(
        [0.0, 0.02, 0.0, 0.02], ["A", "A", "C", "C"], [0.5, 0.52, 0.5, 0.53], ["G", "G", "H", "H"]
    )
    assert cm.se == pytest.approx(math.sqrt(0.0002625 * 0.5), rel=1e-9)
    assert (cm.df, cm.sigma_machine, cm.machines) == (4.0, 0.0, 2)
    assert cm.sigma_run == pytest.approx(math.sqrt(0.0002625), rel=1e-9)


def test_a_machine_per_run_is_needed_on_each_side():
    for ref_m, cand_m in ((["A"], ["G"]), (["A", "C"], [])):
        with pytest.raises(ValueError, match="^one machine per run is needed on each side$"):
            cross_machine([0.0, 0.1], ref_m, [0.2], cand_m)


def test_across_machines_the_noise_is_both_parts_and_the_reason_names_them():
    cand = [[10.31], [10.32]]
    v = verdict(cand, ["G", "G"])
    cm = cross_machine([math.log(r[0]) for r in BASE], BASE_M, [math.log(r[0]) for r in cand], ["G", "G"])
    assert v.noise_sigma == pytest.approx(math.hypot(cm.sigma_machine, cm.sigma_run), rel=1e-12)
    assert cm.sigma_run < 0.1 * cm.sigma_machine  # so each part shows in the sentence
    assert "; another machine: noise between the baseline's 3 machines 1%, between runs 0.07%)" in v.reason
