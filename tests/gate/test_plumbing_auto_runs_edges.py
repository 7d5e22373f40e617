"""``run_auto`` and ``undecided`` at their edges (aorta/gate/session/auto_runs.py, issue 58), with the scripted
start, judge and clock of ``test_plumbing_auto_runs``: a clock that does not start at 0, restricted runs quicker
than full ones, a budget that ends exactly at a look, a check run that fails or is a sample, figures that only
``aorta ab``'s growing baseline could decide; each answer worked out by hand."""

from __future__ import annotations

import math

import pytest
from test_plumbing_auto_runs import Script, verdict

from aorta.gate.comparison.compare import Comparison
from aorta.gate.runs.fresh_runs import ChildRun
from aorta.gate.session.auto_runs import AutoOutcome, run_auto, time_line, undecided
from aorta.gate.stats.sequential import Budget
from aorta.gate.verdicts.verdict import NOT_GATEABLE, SAME, UNSURE, Verdict


def noisy(bench: str, sigma: float) -> Verdict:
    """NOT_GATEABLE at 3 v 3 runs with between-run noise ``sigma``: with the defaults (alpha 0.01, power 0.95,
    MDE bound 5%) at sigma 0.025 more candidate runs alone never reach the bound (the baseline's 3 runs
    keep it over), both sides growing do at 8 more; at 0.03 both sides need 13 more."""
    return Verdict(
        bench,
        "device_ms",
        "ms",
        False,
        NOT_GATEABLE,
        "",
        change_ratio=0.01,
        noise_sigma=sigma,
        ref_runs=3,
        cand_runs=3,
    )


def comparison(*verdicts: Verdict) -> Comparison:
    return Comparison("b", "c", "m", "m", verdicts=list(verdicts))


def test_a_figure_only_a_growing_baseline_could_decide_is_undecided_only_for_both_sides():
    comp = comparison(noisy("a", 0.025))
    assert undecided(comp, 17) == []  # the candidate's runs alone: never
    assert undecided(comp, 17, both_sides=True) == ["a"]
    assert undecided(comp, 7, both_sides=True) == []  # 8 more needed, 7 left
    assert undecided(comparison(noisy("a", 0.03)), 5, both_sides=True) == []  # 13 more, 5 left


def test_undecided_keeps_every_kind_in_order_and_each_once():
    unknown = Verdict(
        "a", "device_ms", "ms", False, NOT_GATEABLE, "", change_ratio=0.2
    )  # 1 v 1: noise unknown
    untested = Verdict("c", "device_ms", "ms", False, UNSURE, "cannot compare: no baseline runs")
    comp = comparison(unknown, verdict("b", UNSURE), untested, verdict("b", UNSURE), verdict("d", SAME))
    assert undecided(comp, 1) == ["a", "b"]  # one run left still counts
    assert undecided(comp, 0) == []


def test_aorta_abs_auto_runs_go_on_for_a_figure_both_sides_could_decide(tmp_path):
    s = Script(tmp_path, [{"a": noisy("a", 0.025)}, {"a": SAME}])
    out = run_auto(s.start, Budget(10_000), judge=s.judge, clock=s.clock, both_sides=True)
    assert s.judged == [(3, 0), (3, 2)] and out.stop_reason == "every figure decided"
    s = Script(tmp_path, [{"a": noisy("a", 0.025)}])
    out = run_auto(s.start, Budget(10_000), judge=s.judge, clock=s.clock)
    assert s.judged == [(3, 0)] and out.stop_reason == "no figure more runs could decide (1 not judged)"


def test_the_clock_is_read_from_where_the_gate_began(tmp_path):
    s = Script(tmp_path, [{"a": UNSURE}, {"a": UNSURE}], start_at=1000.0)
    said: list[str] = []
    out = run_auto(s.start, Budget(75), judge=s.judge, clock=s.clock, say=said.append)
    assert [k for k, _, _ in s.started] == [0, 1, 2, 3, 4]  # as from 0: the budget is of elapsed time
    assert out.looks[0].startswith("look at 3 run(s), 60 s: ")
    assert said[0].endswith("the budget holds about 3 more")


def test_restricted_runs_are_planned_at_the_walls_of_their_own_selection(tmp_path):
    # full repeat runs 10 s, restricted ones 4 s: after the look at 3 (60 s) the restricted runs end at 64, 68
    # (look at 5), 72; a fourth would end at 76, past 75. Planned at the full runs' 10 s, only two would start.
    s = Script(
        tmp_path, [{"a": UNSURE, "b": SAME}, {"a": UNSURE, "b": SAME}, {"a": UNSURE}], restricted_s=4.0
    )
    out = run_auto(s.start, Budget(75), judge=s.judge, clock=s.clock)
    assert [k for k, _, _ in s.started] == [0, 1, 2, 3, 4, 5, 6]
    assert s.judged == [(3, 0), (3, 2), (3, 3)]
    assert out.selections == {
        "check run": None,
        **{f"run {k}/auto": None for k in (1, 2, 3)},
        **{f"run {k}/auto": ("a",) for k in (4, 5, 6)},
    }


def test_the_wall_a_next_run_is_planned_at():
    def child(label, wall, lean=True):
        return ChildRun(label, 0, None, None, wall, lean)  # type: ignore[arg-type]

    out = AutoOutcome()
    assert out.predicted_wall(None) == 0.0  # nothing ran yet
    out.check = child("check", 30.0, lean=False)
    assert out.predicted_wall(None) == 15.0  # half the check run's
    out.full = [child("r1", 10.0), child("r2", 12.0)]
    out.restricted = [child("r3", 4.0)]
    out.selections = {"r1": None, "r2": None, "r3": ("a",)}
    assert out.predicted_wall(None) == 12.0  # the slowest of its own selection
    assert out.predicted_wall(["a"]) == 4.0
    assert out.predicted_wall(["b"]) == 12.0  # none of that selection yet: the slowest of any


def test_a_budget_that_ends_at_a_look_judges_once_and_says_what_is_left(tmp_path):
    # runs end at 40, 50, 60 (look at 3); a fourth would end at 70, past 62
    s = Script(tmp_path, [{"a": UNSURE}])
    out = run_auto(s.start, Budget(62), judge=s.judge, clock=s.clock)
    assert s.judged == [(3, 0)] and out.stop_reason == "the 62 s budget (1 benchmark(s) undecided)"

    # runs end at 40, 50; a third would end at 60, past 52: the budget's end is the look, at 2 runs
    s = Script(tmp_path, [{"a": SAME}])
    out = run_auto(s.start, Budget(52), judge=s.judge, clock=s.clock)
    assert s.judged == [(2, 0)] and out.stop_reason == "every figure decided"
    unknowable = Verdict("a", "device_ms", "ms", False, NOT_GATEABLE, "values at or below zero")
    s = Script(tmp_path, [{"a": unknowable}])
    out = run_auto(s.start, Budget(52), judge=s.judge, clock=s.clock)
    assert out.stop_reason == "the 52 s budget (1 figure(s) undecided)"


def test_every_figure_decided_one_run_before_the_cap_is_not_the_last_look(tmp_path):
    s = Script(tmp_path, [{"a": SAME}])
    out = run_auto(s.start, Budget(10_000), judge=s.judge, clock=s.clock, looks=(3, 4))
    assert out.stop_reason == "every figure decided"


def test_the_run_cap_of_the_budget_ends_a_compare_at_a_last_look_of_its_own(tmp_path):
    s = Script(tmp_path, [{"a": UNSURE}, {"a": UNSURE}])
    out = run_auto(s.start, Budget(10_000, max_runs=4), judge=s.judge, clock=s.clock)
    assert s.judged == [(3, 0), (3, 1)] and out.stop_reason == "the last look (4 runs)"
    s = Script(tmp_path, [{"a": UNSURE}, {"a": UNSURE}])  # a baseline of 10 blocks: still at most 4
    out = run_auto(s.start, Budget(10_000, max_runs=4), judge=s.judge, clock=s.clock, max_samples=10)
    assert s.judged == [(3, 0), (3, 1)] and out.stop_reason == "the last look (4 runs)"


def test_saving_runs_to_the_budgets_cap_whatever_the_looks(tmp_path):
    s = Script(tmp_path, [])
    out = run_auto(s.start, Budget(10_000, max_runs=6), clock=s.clock, looks=(2, 3))
    assert [k for k, _, _ in s.started] == [0, 1, 2, 3, 4, 5, 6]
    assert out.stop_reason == "the cap of 6 runs"


def test_saving_stopped_by_the_budget_says_so(tmp_path):
    s = Script(tmp_path, [])
    out = run_auto(s.start, Budget(55), clock=s.clock)
    assert [k for k, _, _ in s.started] == [0, 1, 2] and out.stop_reason == "the 55 s budget"


def test_a_check_run_that_fails_ends_the_gate_saying_how(tmp_path):
    s = Script(tmp_path, [], fail_at=0)
    out = run_auto(s.start, Budget(10_000), judge=s.judge, clock=s.clock)
    assert s.started == [(0, None, False)] and out.stop_reason == "check run failed (exit 1)"


@pytest.mark.parametrize(
    ("check_s", "budget_s", "more"),
    [(0.0, 100.0, 20), (1.5, 10.0, 11), (30.0, math.inf, 20)],  # 8.5 s left // 0.75 s planned = 11
)
def test_the_first_line_says_how_many_repeat_runs_the_budget_holds(tmp_path, check_s, budget_s, more):
    s = Script(tmp_path, [{"a": SAME}], check_s=check_s, check_sample=True)
    said: list[str] = []
    run_auto(s.start, Budget(budget_s), judge=s.judge, clock=s.clock, say=said.append)
    assert said[0].startswith(f"check run {check_s:.0f} s (a sample); ")
    assert said[0].endswith(f"the budget holds about {more} more")


def test_the_time_line_of_a_check_run_that_was_a_sample(tmp_path):
    s = Script(tmp_path, [{"a": SAME}], check_sample=True)
    out = run_auto(s.start, Budget(10_000), judge=s.judge, clock=s.clock)
    assert time_line(out) == (
        "aorta gate: auto: 3 run(s) 50 s, check run 30 s, repeat runs 10-10 s each; stopped at every figure decided"
    )
