"""``run_auto`` (aorta/gate/session/auto_runs.py) with a scripted start, judge and clock (issue 58): which runs it
starts (their number, selection and kind), at which run counts it judges (the scheduled looks), when the budget
stops it and what it says; each asserted against the sequence worked out by hand in the test. No process, no
statistics: the judge answers from a script, so a wrong look or a wrong restriction gives another sequence."""

from __future__ import annotations

from pathlib import Path

import pytest

from aorta.gate.comparison.compare import Comparison
from aorta.gate.runs.fresh_runs import ChildRun
from aorta.gate.session.auto_runs import run_auto, run_ids, time_line
from aorta.gate.stats.sequential import Budget
from aorta.gate.verdicts.verdict import SAME, UNSURE, Verdict


def verdict(bench: str, outcome: str) -> Verdict:
    return Verdict(bench, "device_ms", "ms", False, outcome, "", change_ratio=0.01, p_value=0.03)


class Script:
    """start, judge and clock of one auto gate: a check run of ``check_s``, repeat runs of ``lean_s``; the
    judge answers look i with ``answers[i]`` (benchmark -> outcome)."""

    def __init__(
        self,
        tmp_path: Path,
        answers,
        *,
        check_s=30.0,
        lean_s=10.0,
        restricted_s=None,
        check_sample=False,
        fail_at=None,
        start_at=0.0,
    ):
        self.now = start_at  # a monotonic clock's reading: any number
        self.restricted_s = restricted_s  # a restricted run's wall (default: lean_s)
        self.started: list[tuple[int, tuple | None, bool]] = []
        self.judged: list[tuple[int, int]] = []
        self.answers = list(answers)
        self.check_s, self.lean_s, self.check_sample, self.fail_at = check_s, lean_s, check_sample, fail_at
        self.json = tmp_path / "run.json"
        self.json.write_text("{}")

    def clock(self) -> float:
        return self.now

    def start(self, k, only, lean):
        self.started.append((k, tuple(only) if only is not None else None, lean))
        wall = self.check_s if k == 0 else self.lean_s
        if k and only is not None and self.restricted_s is not None:
            wall = self.restricted_s
        self.now += wall
        code = 1 if k == self.fail_at else 0
        label = "check run" if k == 0 else f"run {k}/auto"
        return ChildRun(
            label, code, self.json, self.json, wall, lean, sample=self.check_sample if k == 0 else True
        )

    def judge(self, full, restricted):
        self.judged.append((len(full), len(restricted)))
        outcomes = self.answers[len(self.judged) - 1]
        return Comparison(
            "b",
            "c",
            "m",
            "m",
            verdicts=[o if isinstance(o, Verdict) else verdict(b, o) for b, o in outcomes.items()],
        )


def test_the_undecided_benchmark_alone_gets_the_runs_of_each_later_look(tmp_path):
    s = Script(
        tmp_path,
        [
            {"a": UNSURE, "b": SAME},  # look at 3 runs: a undecided
            {"a": UNSURE, "b": SAME},  # look at 5: still
            {"a": SAME, "b": SAME},  # look at 8: decided
        ],
    )
    out = run_auto(s.start, Budget(10_000), judge=s.judge, clock=s.clock)
    assert s.started == [
        (0, None, False),  # the check run: full, every benchmark
        (1, None, True),
        (2, None, True),
        (3, None, True),
        (4, ("a",), True),
        (5, ("a",), True),
        (6, ("a",), True),
        (7, ("a",), True),
        (8, ("a",), True),
    ]
    assert s.judged == [(3, 0), (3, 2), (3, 5)]  # at 3, 5 and 8 sample runs: the scheduled looks
    assert (
        [len(out.full), len(out.restricted)] == [3, 5] and out.check is not None and out.check not in out.full
    )
    assert out.stop_reason == "every figure decided"
    assert out.looks == [
        "look at 3 run(s), 60 s: 1 of 2 figures decided, 1 benchmark(s) undecided",
        "look at 5 run(s), 80 s: 1 of 2 figures decided, 1 benchmark(s) undecided",
        "look at 8 run(s), 110 s: 2 of 2 figures decided, 0 benchmark(s) undecided",
    ]
    assert run_ids(out) == (["run1", "run2", "run3"], ["run4", "run5", "run6", "run7", "run8"])
    assert time_line(out) == (
        "aorta gate: auto: 9 run(s) 110 s, check run 30 s (not a sample), repeat runs 10-10 s each; "
        "stopped at every figure decided"
    )


def test_a_check_run_that_is_a_sample_counts_toward_the_first_look(tmp_path):
    s = Script(tmp_path, [{"a": SAME}], check_sample=True)
    out = run_auto(s.start, Budget(10_000), judge=s.judge, clock=s.clock)
    assert [k for k, _, _ in s.started] == [0, 1, 2]  # 3 samples: the check run and two repeat runs
    assert s.judged == [(3, 0)] and out.full[0] is out.check


def test_runs_paired_with_a_baseline_take_every_benchmark(tmp_path):
    s = Script(tmp_path, [{"a": UNSURE, "b": SAME}, {"a": SAME, "b": SAME}])
    out = run_auto(s.start, Budget(10_000), judge=s.judge, clock=s.clock, restrict=False)
    assert s.started[4:] == [(4, None, True), (5, None, True)]  # a restricted run would have no partner
    assert s.judged == [(3, 0), (5, 0)] and out.restricted == []


def test_the_budget_stops_runs_before_one_would_end_past_it_and_the_runs_so_far_are_judged(tmp_path):
    # check 30 s; the first repeat run planned at half of it (15 s), later ones at the slowest so far (10 s):
    # runs end at 40, 50, 60 (look at 3), 70; an 80 s end would pass the 75 s budget
    s = Script(tmp_path, [{"a": UNSURE}, {"a": UNSURE}])
    said: list[str] = []
    out = run_auto(s.start, Budget(75), judge=s.judge, clock=s.clock, say=said.append)
    assert [k for k, _, _ in s.started] == [0, 1, 2, 3, 4]
    assert s.judged == [(3, 0), (3, 1)]  # the budget's end takes the place of the look at 5
    assert out.stop_reason == "the 75 s budget (1 benchmark(s) undecided)"
    assert said == [
        "check run 30 s (not a sample); repeat runs planned at 15 s each until one is measured: the budget "
        "holds about 3 more"
    ]


def test_a_budget_with_room_for_fewer_than_three_runs_says_the_first_look_comes_at_its_end(tmp_path):
    s = Script(tmp_path, [{"a": UNSURE}])
    said: list[str] = []
    run_auto(s.start, Budget(55), judge=s.judge, clock=s.clock, say=said.append)
    assert said[0].endswith(
        "the budget holds about 1 more (fewer than 3: the first look comes at the budget's end)"
    )


def test_a_failed_run_ends_the_loop_unjudged(tmp_path):
    s = Script(tmp_path, [{"a": UNSURE}], fail_at=2)
    out = run_auto(s.start, Budget(10_000), judge=s.judge, clock=s.clock)
    assert [k for k, _, _ in s.started] == [0, 1, 2] and s.judged == []
    assert out.stop_reason == "run 2/auto failed (exit 1)" and out.failed is out.full[1]


def test_saving_runs_to_the_cap_of_the_baselines_blocks_without_looking(tmp_path):
    s = Script(tmp_path, [])
    out = run_auto(s.start, Budget(10_000), clock=s.clock, max_samples=4)
    assert [k for k, _, _ in s.started] == [0, 1, 2, 3, 4] and s.judged == []
    assert out.stop_reason == "the cap of 4 runs"


@pytest.mark.parametrize(("looks", "judged_at"), [((2, 4), [(2, 0), (2, 2)]), ((3, 5), [(3, 0), (3, 2)])])
def test_the_looks_are_the_schedule_given_and_the_last_is_the_cap(tmp_path, looks, judged_at):
    s = Script(tmp_path, [{"a": UNSURE}, {"a": UNSURE}])
    out = run_auto(s.start, Budget(10_000), judge=s.judge, clock=s.clock, looks=looks)
    assert s.judged == judged_at
    assert out.stop_reason == f"the last look ({looks[-1]} runs)"
