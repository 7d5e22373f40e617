"""Naming recorded stream intervals by the segments a step issued (pure)."""

import pytest

from aorta.hw_queue.parts.segments import SegmentPlan


def plan() -> SegmentPlan:
    p = SegmentPlan()
    p.add(0, "gate")
    p.add(1, ("expert", 1))
    p.add(0, ("expert", 0))
    p.add(0, "combine")
    return p


def test_intervals_take_the_labels_of_their_stream_in_issue_order():
    got = plan().label_intervals({0: [(0, 1), (1, 3), (3, 4)], 1: [(1, 2)]})
    assert got == [
        (0, "gate", (0.0, 1.0)),
        (0, ("expert", 0), (1.0, 3.0)),
        (0, "combine", (3.0, 4.0)),
        (0, ("expert", 1), (1.0, 2.0)),
    ]


def test_k_batched_rounds_repeat_the_labels_once_per_iteration():
    got = plan().label_intervals({1: [(0, 1), (2, 3)]})
    assert [(it, label) for it, label, _ in got] == [(0, ("expert", 1)), (1, ("expert", 1))]


def test_interval_counts_that_do_not_fit_the_plan_are_refused():
    with pytest.raises(ValueError, match="not a multiple"):
        plan().label_intervals({0: [(0, 1), (1, 2)]})
    with pytest.raises(ValueError, match="issues nothing"):
        plan().label_intervals({5: [(0, 1)]})
