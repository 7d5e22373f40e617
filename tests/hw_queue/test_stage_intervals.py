"""Stage-labelled intervals: per-stream intervals filed under the label of the block they came from."""

import pytest

from aorta.hw_queue.parts.stage_intervals import (
    StageLog,
    busy_ms_per_round,
    label_overlap,
    rate_samples,
    regroup,
)


class FakeRec:
    def __init__(self):
        self.opened = []

    def on(self, i, label=None):
        self.opened.append(i)
        return i


def test_log_notes_each_block_and_opens_it_on_the_recorder():
    rec, log = FakeRec(), StageLog()
    log.begin_step()
    log.on(rec, 0, "copy")
    log.on(rec, 1, "compute")
    log.on(rec, 0, "copy")
    assert log.calls == [(0, "copy"), (1, "compute"), (0, "copy")]
    assert rec.opened == [0, 1, 0]
    assert log.labels == ["copy", "compute"]
    log.begin_step()
    assert log.calls == []


def test_regroup_files_k_repeats_of_a_step_under_their_labels():
    calls = [(0, "a"), (1, "b"), (0, "c")]
    # Two iterations in the round: stream 0 ran a, c, a, c; stream 1 ran b, b.
    intervals = {0: [(0, 1), (2, 3), (4, 5), (6, 7)], 1: [(1, 2), (5, 6)]}
    assert regroup(intervals, calls) == {"a": [(0, 1), (4, 5)], "b": [(1, 2), (5, 6)], "c": [(2, 3), (6, 7)]}


def test_regroup_refuses_intervals_that_do_not_match_the_blocks():
    with pytest.raises(ValueError, match="stream 0: 3 intervals"):
        regroup({0: [(0, 1), (1, 2), (2, 3)]}, [(0, "a"), (0, "b")])
    with pytest.raises(ValueError, match="stream 2"):
        regroup({2: [(0, 1)]}, [(0, "a")])


def test_overlap_busy_and_rate_by_label():
    rounds = [{"copy": [(0.0, 4.0)], "compute": [(1.0, 2.0), (3.0, 6.0)]}]
    ov = label_overlap(rounds, ["compute"], ["copy"])
    assert ov["overlap_ratio"] == pytest.approx((1.0 + 1.0) / 4.0)  # copy hidden during [1,2] and [3,4]
    assert ov["exposed_ms"] == pytest.approx(2.0)
    assert busy_ms_per_round(rounds, ["copy", "compute"]) == [pytest.approx(6.0)]
    assert rate_samples([2e9, 5.0], [1000.0, 0.0], 1e-9) == [
        pytest.approx(2.0)
    ]  # 2 GB in 1 s; idle round dropped
