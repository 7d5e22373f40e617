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
