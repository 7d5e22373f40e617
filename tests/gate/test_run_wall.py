"""Where a gate's wall goes (issue 55, item 1): each run split into timed rounds, checks and passes, and process
start and collection; the gate's whole wall by run kind; the first lean run planned from the check run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aorta.gate.runs import run_wall
from aorta.gate.runs.fresh_runs import ChildRun, wall_of
from aorta.gate.session.auto_runs import FIRST_LEAN_SHARE, AutoOutcome
from aorta.gate.session.fresh import block_seed


def _doc(tests_s: float, timed_s: float, lean_skips_s: float = 0.0) -> dict:
    return {run_wall.WALL_KEY: {"tests_s": tests_s, "timed_s": timed_s, "lean_skips_s": lean_skips_s}}


def test_a_run_splits_into_timed_checks_and_start():
    # 20 s of wall: 15 s of tests, 6 of them timed rounds -> 6 timed, 9 checks and passes, 5 start
    w = run_wall.run_wall("lean", 20.0, _doc(15.0, 6.0))
    assert (w.timed, w.checks, w.start) == (6.0, 9.0, 5.0)
    assert w.timed + w.checks + w.start == pytest.approx(w.wall_s)


def test_a_run_without_a_record_is_all_start_not_guessed():
    w = run_wall.run_wall("lean", 20.0, {"benchmarks": []})
    assert not w.known
    assert (w.timed, w.checks, w.start) == (0.0, 0.0, 20.0)
    assert w.lean_estimate_s() == 20.0  # the cautious guess: a whole run


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "3", None])
def test_a_damaged_record_counts_nothing_it_cannot_read(bad):
    w = run_wall.run_wall("lean", 10.0, {run_wall.WALL_KEY: {"tests_s": 8.0, "timed_s": bad}})
    assert w.timed == 0.0 and w.checks == 8.0 and w.start == 2.0


def test_parts_never_exceed_the_wall():
    # a record that claims more than the wall (clock skew, a bad writer) is clipped, never a share above 100%
    w = run_wall.run_wall("lean", 10.0, _doc(14.0, 12.0))
    assert w.timed == 10.0 and w.checks == 0.0 and w.start == 0.0


def test_the_lean_estimate_is_the_check_run_less_what_a_lean_run_skips():
    w = run_wall.run_wall("check", 40.0, _doc(35.0, 6.0, lean_skips_s=22.0))
    assert w.lean_estimate_s() == 18.0


def test_the_report_sums_by_kind_and_says_the_time_between_runs():
    runs = [
        run_wall.run_wall("check", 40.0, _doc(35.0, 6.0)),
        run_wall.run_wall("lean", 20.0, _doc(15.0, 8.0)),
        run_wall.run_wall("lean", 20.0, _doc(15.0, 8.0)),
    ]
    rep = run_wall.report(runs, 100.0)  # 80 s in runs, 20 s judging and saving
    d = rep.as_dict()
    assert d["timed_s"] == 22.0 and d["checks_s"] == 43.0 and d["start_s"] == 15.0 and d["between_s"] == 20.0
    assert d["timed_share"] == pytest.approx(0.22)
    assert d["by_kind"]["lean"]["runs"] == 2 and d["by_kind"]["lean"]["timed_share"] == pytest.approx(0.4)
    assert d["by_kind"]["check"]["checks_share"] == pytest.approx(29 / 40, abs=1e-4)
    lines = rep.lines("aorta gate")
    assert lines[0].startswith("aorta gate: where the 100 s went: timed rounds 22% (22 s)")
    assert "between runs (judging, saving) 20% (20 s)" in lines[0]
    assert "lean runs: 2 x 20-20 s each: timed rounds 40%" in lines[2]


def test_the_total_is_never_less_than_its_runs():
    rep = run_wall.report([run_wall.run_wall("lean", 30.0, _doc(20.0, 10.0))], 12.0)
    assert rep.total_s == 30.0 and rep.between_s == 0.0


def _child(
    tmp_path: Path, name: str, wall: float, doc: dict | None, *, lean: bool, estimate=None
) -> ChildRun:
    p = tmp_path / f"{name}.json"
    if doc is not None:
        p.write_text(json.dumps(doc))
    return ChildRun(name, 0, p, tmp_path / f"{name}.log", wall, lean, lean_estimate_s=estimate)


def test_wall_of_reads_the_childs_own_json(tmp_path):
    c = _child(tmp_path, "run1", 18.0, _doc(12.0, 7.0), lean=True)
    w = wall_of(c, "lean")
    assert (w.kind, w.timed, w.checks, w.start) == ("lean", 7.0, 5.0, 6.0)
    assert not wall_of(_child(tmp_path, "gone", 18.0, None, lean=True), "lean").known


def test_the_first_lean_run_is_planned_from_the_check_runs_record(tmp_path):
    out = AutoOutcome()
    out.check = _child(tmp_path, "check", 60.0, _doc(50.0, 6.0, 30.0), lean=False, estimate=30.0)
    assert out.predicted_wall(None) == 30.0  # not FIRST_LEAN_SHARE x 60 = 30 by chance: change the record
    out.check = _child(tmp_path, "check", 60.0, _doc(50.0, 6.0, 45.0), lean=False, estimate=15.0)
    assert out.predicted_wall(None) == 15.0
    out.check = _child(tmp_path, "check", 60.0, None, lean=False, estimate=None)
    assert out.predicted_wall(None) == 60.0 * FIRST_LEAN_SHARE
    # once a lean run is measured, it plans the next
    out.full.append(_child(tmp_path, "run1", 21.0, _doc(15.0, 8.0), lean=True))
    assert out.predicted_wall(None) == 21.0


def test_runs_past_the_baselines_blocks_repeat_them_in_turn():
    seeds = [7, 3, 9, 1, 4]
    assert [block_seed(seeds, k) for k in range(1, 13)] == [7, 3, 9, 1, 4, 7, 3, 9, 1, 4, 7, 3]
    assert [block_seed([], k) for k in (1, 2, 3)] == [1, 2, 3]  # a baseline without blocks: k itself


def test_a_compare_that_cannot_pair_says_why():
    from aorta.gate.runs.blocks import why_unpaired

    lean = [f"seed {k}, lean, selection abc" for k in (1, 2, 3, 4, 5)]
    full = [f"seed {k}, full, selection abc" for k in (1, 2, 3, 4, 5)]
    assert why_unpaired(lean, lean) is None
    assert "kinds differ: the baseline's runs are full, this run's lean" in why_unpaired(full, lean)
    assert why_unpaired(lean[:3], lean[:3]) == (
        "3 shared block(s), 5 needed to pair (save the baseline with more runs)"
    )
    assert "name no blocks" in why_unpaired([None, None], lean)
    other = [f"seed {k}, lean, selection xyz" for k in (1, 2, 3, 4, 5)]
    assert "selections differ" in why_unpaired(lean, other)


def test_a_runs_timed_seconds_come_from_each_runners_own_record():
    from aorta.gate.session.wall_record import WallRecorder

    rec = WallRecorder(config=None)  # type: ignore[arg-type]
    rec.tests_s, rec.checks_s = 30.0, 8.0
    benchmarks = [
        # the hardware-queue runner: timed rounds (warm-up apart) and the unrecorded reference run it read
        {"extra_info": {"timed_s": 1.5, "reference_timed_s": 0.5, "lean_skips_s": 2.0,
                        "host_phase_s": {"timed_rounds": 9.0}}},
        # the FSDP suite: its timed phases (aorta/record/host_phases.py), no timed_s of its own
        {"extra_info": {"host_phase_s": {"timed_steps": 3.0, "profiled_steps": 4.0, "setup": 1.0}}},
    ]  # fmt: skip
    out = rec.record(benchmarks)
    assert out["timed_s"] == 5.0  # 1.5 + 0.5 + 3.0: not the runner's 9.0 s phase with its warm-up
    assert out["lean_skips_s"] == 10.0  # 2.0 + the 8.0 s of checks a lean run deselects
    assert out["tests_s"] == 30.0


def test_a_whole_gate_s_wall_by_kind_with_a_run_that_wrote_no_record_figure_by_figure():
    # check 40 s: 34 s of tests, 6 timed -> 6 timed, 28 checks, 6 start; lean 18 s: 8, 7, 3; lean 24.123 s
    # without a record: all start. 82.123 s in runs of the 100: 17.877 s between.
    runs = [
        run_wall.run_wall("check", 40.0, _doc(34.0, 6.0, 22.0)),
        run_wall.run_wall("lean", 18.0, _doc(15.0, 8.0)),
        run_wall.run_wall("lean", 24.123, None),
    ]
    rep = run_wall.report(runs, 100)
    assert rep.kinds() == ["check", "lean"]  # first seen first
    assert (rep.seconds("start"), rep.seconds("start", "lean"), rep.seconds("timed", "check")) == (
        pytest.approx(33.123),
        pytest.approx(27.123),
        6.0,
    )
    assert rep.as_dict() == {
        "total_s": 100.0,
        "timed_s": 14.0,
        "checks_s": 35.0,
        "start_s": 33.12,
        "between_s": 17.88,
        "timed_share": 0.14,
        "checks_share": 0.35,
        "start_share": 0.3312,
        "between_share": 0.1788,
        "by_kind": {
            "check": {
                "runs": 1,
                "wall_s": 40.0,
                "timed_s": 6.0,
                "checks_s": 28.0,
                "start_s": 6.0,
                "timed_share": 0.15,
                "checks_share": 0.7,
                "start_share": 0.15,
                "unrecorded_runs": 0,
            },
            "lean": {
                "runs": 2,
                "wall_s": 42.12,
                "timed_s": 8.0,
                "checks_s": 7.0,
                "start_s": 27.12,
                "timed_share": 0.1899,
                "checks_share": 0.1662,
                "start_share": 0.6439,
                "unrecorded_runs": 1,
            },
        },
    }
    assert rep.lines("aorta gate") == [
        "aorta gate: where the 100 s went: timed rounds 14% (14 s), checks and passes 35% (35 s), process start "
        "and collection 33% (33 s), between runs (judging, saving) 18% (18 s)",
        "aorta gate:   check runs: 1 x 40 s: timed rounds 15%, checks and passes 70%, process start and "
        "collection 15%",
        "aorta gate:   lean runs: 2 x 18-24 s each: timed rounds 19%, checks and passes 17%, process start and "
        "collection 64% (1 wrote no record: counted as start)",
    ]


def test_a_gate_with_no_wall_or_no_runs_says_nothing_and_shares_nothing():
    empty = run_wall.WallReport((), 0.0)
    assert empty.lines("g") == [] and empty.share("timed") == 0.0 and empty.share("between") == 0.0
    assert run_wall.report([], 30.0).lines("g") == []  # 30 s, but no run to split
    zero = run_wall.report([run_wall.run_wall("lean", 0.0, _doc(0.0, 0.0))], 0.0)
    assert zero.lines("g") == [] and zero.share("start") == 0.0
    assert zero.as_dict()["by_kind"]["lean"]["timed_share"] == 0.0  # a run of 0 s: no share, no division


def test_the_checks_are_what_the_tests_took_beyond_the_timed_rounds_within_the_wall():
    w = run_wall.RunWall("lean", 10.0, tests_s=12.0, timed_s=3.0)  # tests past the wall: checks clipped to it
    assert (w.timed, w.checks, w.start) == (3.0, 7.0, 0.0)
    w = run_wall.RunWall("lean", 10.0, tests_s=4.0, timed_s=6.0)  # tests shorter than the timed rounds
    assert (w.timed, w.checks, w.start) == (6.0, 0.0, 4.0)
    assert [w.part(p) for p in run_wall.PARTS] == [6.0, 0.0, 4.0]
    with pytest.raises(KeyError):
        w.part("between")  # the gate's, not a run's


def test_a_lean_estimate_is_never_negative_and_an_unrecorded_run_is_its_wall():
    assert run_wall.RunWall("check", 10.0, lean_skips_s=12.0).lean_estimate_s() == 0.0
    assert run_wall.RunWall("check", 10.0, lean_skips_s=3.0, known=False).lean_estimate_s() == 10.0


def test_a_record_s_whole_numbers_are_read_and_a_record_that_is_no_table_is_none():
    w = run_wall.run_wall("full", 12, {run_wall.WALL_KEY: {"tests_s": 9, "timed_s": 4, "lean_skips_s": 2}})
    assert (w.kind, w.wall_s, w.tests_s, w.timed_s, w.lean_skips_s, w.known) == (
        "full",
        12.0,
        9.0,
        4.0,
        2.0,
        True,
    )
    assert isinstance(w.wall_s, float)
    assert not run_wall.run_wall("full", 12, {run_wall.WALL_KEY: [1, 2]}).known
    assert not run_wall.run_wall("full", 12, [run_wall.WALL_KEY]).known  # a document that is no table
    missing = run_wall.run_wall("full", 12, {run_wall.WALL_KEY: {}})
    assert missing.known and (missing.tests_s, missing.timed_s, missing.lean_skips_s) == (0.0, 0.0, 0.0)


def test_sub_second_figures_and_a_sub_second_gate_are_counted_and_said():
    w = run_wall.run_wall("lean", 0.8, _doc(0.6, 0.5))  # figures under a second are figures
    assert (w.timed, w.checks) == (0.5, pytest.approx(0.1))
    rep = run_wall.report([w], 0.8)
    assert rep.share("timed") == pytest.approx(0.625)
    assert rep.lines("g")[0].startswith("g: where the 1 s went: timed rounds 62% (0 s)")
    assert run_wall.run_wall("lean", 1.0, None).known is False


def test_the_shares_are_said_in_whole_percent_and_the_total_to_the_hundredth():
    rep = run_wall.report([run_wall.run_wall("lean", 10.0, _doc(9.0, 9.0))], 12.3456)
    assert rep.as_dict()["total_s"] == 12.35
    assert "timed rounds 73% (9 s)" in rep.lines("g")[0]  # 9 / 12.3456 = 72.9%
    assert "timed rounds 90%" in rep.lines("g")[1]  # of the lean runs' 10 s
