"""Which collectives' wait/transfer split the clock alignment can resolve (pure, hand-worked answers).

Two ranks, rank 1's clock 1000 µs ahead, alignment error 50 µs. Aligned (rank 0's clock, µs):

    step 0  all-gather      rank 0 [100,500)   rank 1 [150,500)   transfer 350 (rank 1 last): resolvable
            reduce-scatter  rank 0 [1000,1100) rank 1 [1060,1100) transfer 40 <= 50: not resolvable
    step 1  all-reduce      rank 0 [5000,5050) rank 1 [5000,5050) transfer 50 == error: not resolvable
    compute rank 0 [0,300); rank 1 (own clock) [1000,1200) [2070,2080) = aligned [0,200) [1070,1080)

exposed: rank 0 200 + 100 + 50, rank 1 300 + (40 - 10) + 50 = 730 µs; unresolved: 100 + 50 + 30 + 50 = 230 µs.
"""

import pytest

from aorta.fsdp.collective_match import Collective, Matching
from aorta.fsdp.rank_result import RankResult
from aorta.fsdp.split_resolution import resolvable, split_resolution


def _matching() -> Matching:
    c = [
        Collective("stream#0", 0, "all_gather", 0, {0: 100.0, 1: 150.0}, {0: 400.0, 1: 350.0}),
        Collective("stream#0", 1, "reduce_scatter", 0, {0: 1000.0, 1: 1060.0}, {0: 100.0, 1: 40.0}),
        Collective("stream#0", 2, "all_reduce", 1, {0: 5000.0, 1: 5000.0}, {0: 50.0, 1: 50.0}),
    ]
    return Matching([0, 1], c, {0: 0.0, 1: 1000.0}, 50.0)


COMPUTE = {0: [[(0.0, 300.0)], []], 1: [[(1000.0, 1200.0), (2070.0, 2080.0)], []]}


def test_a_transfer_not_longer_than_the_error_is_not_resolvable():
    m = _matching()
    assert [resolvable(c, 50.0) for c in m.collectives] == [True, False, False]


def test_share_of_exposed_time_in_unresolvable_collectives():
    r = split_resolution(_matching(), COMPUTE)
    assert r is not None
    assert (r.collectives, r.unresolved_collectives) == (3, 2)
    assert r.exposed_ms == pytest.approx(0.730)
    assert r.unresolved_exposed_ms == pytest.approx(0.230)
    assert r.unresolved_share == pytest.approx(230 / 730)
    assert "2 of 3 collectives" in r.sentence() and "32% of exposed" in r.sentence()
    assert r.unresolved_by_kind == {"all_reduce": 1, "reduce_scatter": 1}
    assert "{'all_reduce': 1, 'reduce_scatter': 1}" in r.sentence()


def test_the_sentence_word_for_word():
    r = split_resolution(_matching(), COMPUTE)
    assert r.sentence() == (
        "2 of 3 collectives transfer for no longer than the clock alignment error (50.0 µs): their "
        "wait/transfer split is not resolvable (32% of exposed communication, 0.230 of 0.730 ms over all ranks "
        "and steps; {'all_reduce': 1, 'reduce_scatter': 1})"
    )
    everything = {0: [[(0.0, 9e9)], [(0.0, 9e9)]], 1: [[(0.0, 9e9)], [(0.0, 9e9)]]}
    only_resolvable = Matching([0, 1], _matching().collectives[:1], {0: 0.0, 1: 1000.0}, 50.0)
    assert split_resolution(only_resolvable, everything).sentence() == (
        "0 of 1 collectives transfer for no longer than the clock alignment error (50.0 µs): their "
        "wait/transfer split is not resolvable (no exposed communication, 0.000 of 0.000 ms over all ranks "
        "and steps)"
    )


def test_collectives_without_an_alignment_error_give_none():
    m = _matching()
    assert split_resolution(Matching([0, 1], m.collectives, m.offset_us, None), COMPUTE) is None


def test_the_first_ranks_clock_is_the_reference_when_it_has_no_offset():
    m = _matching()
    no_rank0 = Matching([0, 1], m.collectives, {1: 1000.0}, 50.0)
    assert split_resolution(no_rank0, COMPUTE) == split_resolution(m, COMPUTE)


def test_unresolved_collectives_are_counted_per_kind():
    m = _matching()
    second = Collective("stream#0", 3, "all_reduce", 1, {0: 6000.0, 1: 6000.0}, {0: 10.0, 1: 10.0})
    r = split_resolution(Matching([0, 1], [*m.collectives, second], m.offset_us, 50.0), COMPUTE)
    assert r.unresolved_by_kind == {"all_reduce": 2, "reduce_scatter": 1}


def test_rank_clocks_are_shifted_before_compute_is_removed():
    # Without rank 1's 1000 µs shift its compute would hide the reduce-scatter entirely and expose the
    # all-gather's 350 µs: a different total.
    r = split_resolution(_matching(), COMPUTE)
    assert r.exposed_ms != pytest.approx((200 + 100 + 50 + 350 + 0 + 50) / 1e3)


def test_nothing_matched_gives_none_and_nothing_exposed_gives_no_share():
    assert split_resolution(Matching([0, 1]), COMPUTE) is None
    m = _matching()
    everything = {0: [[(0.0, 9e9)], [(0.0, 9e9)]], 1: [[(0.0, 9e9)], [(0.0, 9e9)]]}
    r = split_resolution(m, everything)
    assert r.exposed_ms == 0 and r.unresolved_share is None and "no exposed communication" in r.sentence()


def test_kernel_figures_record_the_resolution_and_the_breakdown_says_it():
    from aorta.fsdp.breakdown_text import breakdown_lines
    from aorta.fsdp.collective_match import CommKernel
    from aorta.fsdp.rank_figures import kernel_figures
    from aorta.record import BenchRecord

    step = {"compute_busy_ms": 0.2, "overlapped_ms": 0.1, "exposed_comm_ms": 0.4, "comm_busy_ms": 0.5}
    step |= {"idle_ms": 0.0, "window_ms": 1.2, "busbw_gbps": {}}

    def rank(r, shift, rs_start, rs_end):
        comm = [
            CommKernel("all_gather", "pg:0", 100 + shift + 50 * r, 500 + shift, 0, "7"),
            CommKernel("reduce_scatter", "pg:0", rs_start, rs_end, 0, "7"),
        ]
        timeline = {
            "comm": comm,
            "compute_us": [[(shift, shift + 300.0)]],
            "window_us": [(shift, shift + 1200)],
        }
        return RankResult(rank=r, per_step=[step], timeline=timeline)

    # rank 1's clock 1000 µs ahead; its reduce-scatter ends 10 µs late: offset 1005, error 5 µs; the
    # reduce-scatter's transfer is rank 1's 3 µs kernel (it arrived last): not resolvable.
    _, _, details = kernel_figures([rank(0, 0.0, 1000.0, 1100.0), rank(1, 1000.0, 2107.0, 2110.0)])
    res = details["split_resolution"]
    assert res["alignment_error_us"] == pytest.approx(5.0)
    assert (res["collectives"], res["unresolved_collectives"]) == (2, 1)
    record = BenchRecord("w", "cuda", "events", "device_events", [1.0], "step_ms")
    record.details.update(details)
    assert any("1 of 2 collectives" in line for line in breakdown_lines(record))
