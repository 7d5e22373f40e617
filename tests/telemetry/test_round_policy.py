"""Throttled rounds are handled by their cause: the power limit is kept and labelled, a transient cause is
dropped and replaced once, and --aorta-drop-throttled drops and replaces both (aorta/telemetry/round_policy.py).
Each round's cause: a string (throttled), None (not throttled), False (no telemetry sample near it)."""

import pytest

from aorta.telemetry.round_policy import (
    WHAT,
    handling,
    handling_record,
    is_transient,
    reading_note,
    rounds_to_drop,
)

CAP, HOT, LOW = "sw_power_cap", "hw_thermal_slowdown", "sm_clock_below_75pct_of_max"


@pytest.mark.parametrize(
    "cause, transient",
    [(CAP, False), (HOT, True), (LOW, True), (f"{CAP},hw_slowdown", True), ("hw_power_brake_slowdown", True)],
)
def test_only_the_power_limit_alone_is_steady_state(cause, transient):
    assert is_transient(cause) is transient


def test_rounds_without_a_sample_or_unthrottled_are_never_dropped():
    causes = [None, False, CAP, HOT, None]
    assert rounds_to_drop(causes, drop_all=False) == [3]
    assert rounds_to_drop(causes, drop_all=True) == [2, 3]


@pytest.mark.parametrize(
    "first, replacements, drop_all, expected",
    [
        ([None, False, None], [], False, ("none", [], [])),
        ([CAP, None, CAP], [], False, ("kept_power_limited", [], [])),
        ([None, HOT, None, HOT], [None, None], False, ("replaced", [1, 3], [0, 1])),
        ([None, HOT, None, HOT], [HOT, None], False, ("dropped", [1, 3], [1])),
        ([None, HOT, None], [], False, ("dropped", [1], [])),  # nothing could be timed again
        ([HOT, HOT], [HOT, LOW], False, ("kept_throttled", [], [])),
        ([CAP, None, CAP], [None, CAP], True, ("dropped", [0, 2], [0])),
        ([CAP, None, CAP], [False, None], True, ("replaced", [0, 2], [0, 1])),
        ([CAP, HOT], [CAP], True, ("kept_throttled", [], [])),  # nothing unthrottled: the monitor refuses
    ],
)
def test_the_policy_per_benchmark(first, replacements, drop_all, expected):
    assert handling(first, replacements, drop_all=drop_all) == expected


def test_the_record_counts_what_was_done_and_says_it_in_words():
    entry = handling_record("replaced", [None, HOT, CAP, HOT], [1, 3], added=2, kept=4)
    assert entry["policy"] == "replaced" and entry["what"] == WHAT["replaced"]
    assert (
        entry["rounds_throttled"],
        entry["rounds_dropped"],
        entry["rounds_added"],
        entry["rounds_kept"],
    ) == (
        3,
        2,
        2,
        4,
    )
    assert entry["kernel_pass"].startswith("not reviewed")


def test_only_power_limited_rounds_give_a_reading_note():
    capped = handling_record("kept_power_limited", [CAP, None, CAP, CAP], [], added=0, kept=4)
    assert reading_note(capped) == (
        "power-limited: sw_power_cap in 3 of 4 timed rounds; the clock follows the power draw, so device time "
        "moves with it from run to run"
    )
    assert reading_note(handling_record("replaced", [HOT, None], [0], added=1, kept=2)) is None
    assert reading_note(None) is None
