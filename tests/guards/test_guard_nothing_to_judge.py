"""A gate with no run to judge says why, word for word, and exits 12 (nothing compared) or 13 (nothing saved),
never 0 (aorta/gate/runs/empty_run.py, issue 38 case 20; issue 58)."""

import pytest

from aorta.gate.runs.empty_run import child_timed_nothing, nothing_code, why_no_run


@pytest.mark.parametrize(
    ("exitstatus", "disabled", "why"),
    [
        (5, False, "no test was selected (-k, -m or the paths chose none)"),
        (5, True, "no test was selected (-k, -m or the paths chose none)"),  # pytest's answer comes first
        (0, True, "benchmarks are disabled in this run (--benchmark-disable or --benchmark-skip)"),
        (0, False, "no benchmark ran in this run"),
        (1, False, "no benchmark ran in this run"),
    ],
)
def test_why_a_gate_has_no_run_to_judge(exitstatus, disabled, why):
    assert why_no_run(exitstatus, disabled) == why


def test_nothing_compared_is_12_and_nothing_saved_13():
    assert (nothing_code(True), nothing_code(False)) == (12, 13)


def test_only_a_run_that_passed_without_writing_its_json_timed_nothing():
    assert child_timed_nothing(0, False)
    assert not child_timed_nothing(0, True)
    assert not child_timed_nothing(1, False)  # a failed run is a failure, not an empty one
