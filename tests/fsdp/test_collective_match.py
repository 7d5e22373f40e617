"""Matching collectives across ranks, aligning the ranks' clocks, and splitting communication into wait and
transfer, on small recorded traces whose answers are worked out by hand below (pure: no torch).

tests/data/collectives/nccl_2ranks_rank{0,1}.json: two ranks, two profiled steps (ProfilerStep#2, #3; the
second is the first shifted by 2000 µs), NCCL kernel names, process group "0". Rank 1's clock reads 5000 µs
ahead of rank 0's. In rank 0's clock, per step (µs, step 0):

    compute (both ranks)   [1000,1400) [1500,1900) [2000,2100) [2500,2600)
    all-gather #0          rank 0 [1100,1500)   rank 1 [1200,1500)      rank 1 arrives last
    all-gather #1          rank 0 [1650,1800)   rank 1 [1600,1800)      rank 0 arrives last
    reduce-scatter #0      rank 0 [1900,2300)   rank 1 [2000,2303)      rank 1 arrives last, ends 3 µs late

tests/data/collectives/rccl_4ranks_rank{0..3}.json: four ranks, one step, RCCL's generic kernel (the kind
comes from the profiler's "Collective name"), no process group name and a different stream id on every
rank, clocks offset by 0, +2000, -700, +12345 µs (+10000 on all). In rank 0's clock: compute [200,700) on
every rank; all-gather starts 100 / 120 / 180 / 110 and ends at 500; reduce-scatter starts 600 / 600 / 650 /
640, ends at 900 (rank 3: 902).
"""

from pathlib import Path
from types import SimpleNamespace

import pytest

from aorta.fsdp import collective_match as cm
from aorta.fsdp import wait_transfer as wt
from aorta.fsdp.profiled_steps import span_us, split_by_step
from aorta.fsdp.trace_analysis import parse_chrome_trace
from aorta.timeline.profiler_steps import step_ranges
from aorta.timeline.trace_events import COMPUTE, load_trace

DATA = Path(__file__).parents[1] / "data" / "collectives"


def load(name: str, ranks: int):
    """Per rank: (kernels by step, compute µs by step, window µs by step, comm kernels)."""
    out = {}
    for r in range(ranks):
        trace = load_trace(DATA / f"{name}_rank{r}.json")
        split = split_by_step(parse_chrome_trace(trace), step_ranges(trace))
        assert split.left_out == 0 and split.by == "device start"  # hand-written: no launch events
        by_step = split.by_step
        compute = [[(k.start_us, k.end_us) for k in ks if k.kind == COMPUTE] for ks in by_step]
        out[r] = (by_step, compute, [span_us(ks) for ks in by_step], cm.comm_kernels(by_step))
    return out


@pytest.fixture(scope="module")
def nccl2():
    ranks = load("nccl_2ranks", 2)
    return ranks, cm.match({r: v[3] for r, v in ranks.items()})


@pytest.fixture(scope="module")
def rccl4():
    ranks = load("rccl_4ranks", 4)
    return ranks, cm.match({r: v[3] for r, v in ranks.items()})


# ---------------------------------------------------------------------- two ranks, NCCL
def test_steps_are_split_by_the_profilers_step_ranges(nccl2):
    ranks, _ = nccl2
    by_step = ranks[0][0]
    assert [len(ks) for ks in by_step] == [4 + 3, 4 + 3]
    assert ranks[1][2] == [(1000.0 + 5000, 2600.0 + 5000), (3000.0 + 5000, 4600.0 + 5000)]


def test_two_ranks_match_by_group_and_order_and_align_by_the_ends(nccl2):
    _, m = nccl2
    assert m.problems == []
    assert [(c.kind, c.step) for c in m.collectives] == [
        ("all_gather", 0),
        ("all_gather", 0),
        ("reduce_scatter", 0),
        ("all_gather", 1),
        ("all_gather", 1),
        ("reduce_scatter", 1),
    ]
    # Ends differ by 5000, 5000, 5003 (per step): the offset is their median, 5000; the worst residual 3.
    assert m.offset_us == {0: 0.0, 1: 5000.0}
    assert m.alignment_error_us == pytest.approx(3.0)


def test_skew_transfer_and_wait_per_collective(nccl2):
    _, m = nccl2
    ag0, ag1, rs0 = m.collectives[:3]
    assert (ag0.last_rank, ag0.start_skew_us, ag0.transfer_us) == (1, 1200 - 1100, 1500 - 1200)
    assert (ag0.wait_us(0), ag0.wait_us(1)) == (400 - 300, 0.0)
    assert (ag1.last_rank, ag1.transfer_us, ag1.wait_us(1)) == (0, 1800 - 1650, 200 - 150)
    assert (rs0.last_rank, rs0.transfer_us, rs0.wait_us(0)) == (1, 2303 - 2000, 400 - 303)


def test_a_rank_whose_kernel_was_shorter_than_the_last_arrivals_waited_0_not_a_negative_time():
    # Two ranks, three all-gathers on one stream, clocks equal (the median end offset is 0). In the third,
    # rank 1 arrives last (450) and its kernel ends 60 µs after rank 0's: transfer 110 µs, rank 0's kernel
    # 100 µs, so rank 0 waited for nobody (0), not -10 µs
    def ag(start, end):
        return cm.CommKernel("all_gather", "stream:1", start, end, 0, stream="1")

    m = cm.match(
        {
            0: [ag(0, 100), ag(200, 300), ag(400, 500)],
            1: [ag(0, 100), ag(200, 300), ag(450, 560)],
        }
    )
    third = m.collectives[2]
    assert (third.last_rank, third.transfer_us, m.alignment_error_us) == (1, 110, 60)
    assert (third.wait_us(0), third.wait_us(1)) == (0.0, 0.0)


def test_rank_0s_step_splits_into_compute_overlap_exposed_transfer_wait_and_idle(nccl2):
    ranks, m = nccl2
    s = wt.rank_steps(0, m, ranks[0][1], ranks[0][2])[0]
    # transfer [1200,1500) [1650,1800) [1997,2300); wait [1100,1200) [1900,1997)
    assert s.transfer_ms == pytest.approx((300 + 150 + 303) / 1e3)
    assert s.wait_ms == pytest.approx((100 + 97) / 1e3)
    # exposed transfer: [1400,1500) and [1997,2000) + [2100,2300); exposed wait: [1900,1997)
    assert s.exposed_transfer_ms == pytest.approx((100 + 3 + 200) / 1e3)
    assert s.exposed_wait_ms == pytest.approx(97 / 1e3)
    # overlapped: [1100,1400) + [1650,1800) + [2000,2100); compute 1000 in all
    assert s.overlapped_ms == pytest.approx((300 + 150 + 100) / 1e3)
    assert s.compute_only_ms == pytest.approx((1000 - 550) / 1e3)
    # window [1000,2600); busy [1000,2300) + [2500,2600)
    assert s.idle_ms == pytest.approx((1600 - 1400) / 1e3)
    parts = s.compute_only_ms + s.overlapped_ms + s.exposed_transfer_ms + s.exposed_wait_ms + s.idle_ms
    assert parts == pytest.approx(s.window_ms)
    assert s.overlap_ratio == pytest.approx(550 / 950)


def test_the_straggler_waits_less_and_both_ranks_see_the_same_exposed_transfer(nccl2):
    ranks, m = nccl2
    s1 = wt.rank_steps(1, m, ranks[1][1], ranks[1][2])[0]
    # rank 1 (own clock - 5000): transfer [1200,1500) [1650,1800) [2000,2303); wait [1600,1650), hidden by compute
    assert s1.exposed_transfer_ms == pytest.approx((100 + 203) / 1e3)
    assert s1.exposed_wait_ms == 0.0 and s1.wait_ms == pytest.approx(50 / 1e3)
    assert s1.idle_ms == pytest.approx((1600 - 1303) / 1e3)
    strag = wt.stragglers(m, steps=2)
    assert [(s.rank, s.last_in, s.collectives) for s in strag] == [(1, 2, 3), (1, 2, 3)]
    assert strag[0].median_skew_ms == pytest.approx(0.1)  # 100 µs at all-gather #0 and reduce-scatter #0


def test_worst_rank_per_step_takes_the_lowest_overlap_and_the_highest_exposure(nccl2):
    ranks, m = nccl2
    per_rank = {r: wt.rank_steps(r, m, ranks[r][1], ranks[r][2]) for r in (0, 1)}
    assert wt.worst_per_step(per_rank, "overlap_ratio", higher_is_better=True) == pytest.approx(
        [min(550 / 950, 500 / 803)] * 2
    )
    assert wt.worst_per_step(per_rank, "exposed_comm_ms", higher_is_better=False) == pytest.approx([0.4, 0.4])


# ---------------------------------------------------------------------- four ranks, RCCL
def test_four_rccl_ranks_match_by_stream_order_whatever_the_stream_ids(rccl4):
    _, m = rccl4
    assert m.problems == []
    assert [c.kind for c in m.collectives] == ["all_gather", "reduce_scatter"]
    assert {c.group for c in m.collectives} == {"stream#0"}


def test_four_rank_offsets_and_alignment_error(rccl4):
    _, m = rccl4
    # Rank 3's ends differ from rank 0's by 12345 and 12347: offset 12346, residuals 1 and 1.
    assert m.offset_us == {0: 0.0, 1: 2000.0, 2: -700.0, 3: 12346.0}
    assert m.alignment_error_us == pytest.approx(1.0)


def test_four_rank_waits_and_the_straggler(rccl4):
    ranks, m = rccl4
    ag, rs = m.collectives
    assert (ag.last_rank, ag.transfer_us, ag.start_skew_us) == (2, 320.0, 180 - 100)
    assert [ag.wait_us(r) for r in range(4)] == [80.0, 60.0, 0.0, 70.0]
    assert (rs.last_rank, rs.transfer_us) == (2, 250.0)
    assert [rs.wait_us(r) for r in range(4)] == pytest.approx([50.0, 50.0, 0.0, 12.0])
    (strag,) = wt.stragglers(m, steps=1)
    assert (strag.rank, strag.last_in, strag.collectives) == (2, 2, 2)
    assert strag.median_skew_ms == pytest.approx((80 + 50) / 2 / 1e3)
    s0 = wt.rank_steps(0, m, ranks[0][1], ranks[0][2])[0]
    # rank 0: wait [100,180) before compute starts at 200: exposed; transfer [180,500) exposed [180,200),
    # transfer [650,900) exposed [700,900); wait [600,650) hidden.
    assert s0.exposed_wait_ms == pytest.approx(80 / 1e3)
    assert s0.exposed_transfer_ms == pytest.approx((20 + 200) / 1e3)
    s2 = wt.rank_steps(2, m, ranks[2][1], ranks[2][2])[0]
    assert (s2.exposed_wait_ms, s2.exposed_transfer_ms) == (0.0, pytest.approx(0.22))


def test_ranks_that_ran_different_collectives_are_reported_not_matched():
    a = [cm.CommKernel("all_gather", "pg:0", 0.0, 10.0, 0)]
    b = [cm.CommKernel("all_gather", "pg:0", 0.0, 10.0, 0), cm.CommKernel("all_gather", "pg:0", 20, 30, 0)]
    m = cm.match({0: a, 1: b})
    assert not m.available and "ranks ran different numbers of collectives {0: 1, 1: 2}" in m.problems[0]
    kinds = cm.match({0: a, 1: [cm.CommKernel("reduce_scatter", "pg:0", 0.0, 10.0, 0)]})
    assert "collective #0 is ['all_gather', 'reduce_scatter'] on different ranks" in kinds.problems[0]
    assert cm.match({0: a}).problems == ["one rank: nothing to match across ranks"]


# ---------------------------------------------------------------------- each step worked by hand, on built kernels
def _ev(kind, stream, ts, end, pg=None):
    return SimpleNamespace(
        kind=kind, stream=stream, start_us=ts, end_us=end, process_group=pg, message_bytes=None
    )


def test_comm_kernels_name_a_streams_group_by_every_process_group_any_of_its_kernels_names():
    by_step = [
        [_ev("all_gather", 7, 30, 40, "b"), _ev("compute", 7, 0, 5), _ev("all_gather", 7, 10, 20)],
        [_ev("reduce_scatter", 9, 50, 60), _ev("all_reduce", 7, 45, 48, "a")],
    ]
    assert cm.comm_kernels(by_step, step_base=3) == [
        cm.CommKernel("all_gather", "pg:a+b", 10, 20, 3, "7"),
        cm.CommKernel("all_gather", "pg:a+b", 30, 40, 3, "7"),
        cm.CommKernel("all_reduce", "pg:a+b", 45, 48, 4, "7"),
        cm.CommKernel("reduce_scatter", "stream:9", 50, 60, 4, "9"),
    ]


def test_sequences_are_streams_by_order_of_first_use_and_groups_where_no_stream_is_known():
    k = [
        cm.CommKernel("all_gather", "pg:b", 30, 40, 0, "7"),
        cm.CommKernel("all_gather", "pg:x", 5, 6, 0, None),
        cm.CommKernel("all_gather", "stream:9", 10, 20, 0, "9"),
        cm.CommKernel("all_gather", "pg:a", 50, 60, 0, "7"),
        cm.CommKernel("all_gather", "stream:3", 70, 80, 0, "3"),
    ]
    seqs = cm._sequences(k)
    assert {key: [c.start_us for c in ks] for key, ks in seqs.items()} == {
        "pg:x": [5],
        "stream#0": [10],
        "stream#1": [30, 50],
        "stream#2": [70],
    }
    assert cm._label("stream#1", seqs["stream#1"]) == "stream#1 (pg:a, pg:b)"
    assert cm._label("stream#0", seqs["stream#0"]) == "stream#0"
    assert cm._label("pg:x", [*seqs["pg:x"], *seqs["stream#1"]]) == "pg:x"


def test_match_of_three_ranks_keeps_the_groups_that_agree_and_aligns_to_the_first_rank():
    # group "pg:a" has one collective on ranks 0 and 1 but none on rank 2: reported, and "pg:b" still matched.
    # pg:b: two collectives; #0 named by no rank (all other_comm), #1 an all-gather named by rank 1 only.
    # Rank clocks: rank 1 ends 100 µs after rank 0, rank 2 ends 250 µs before (offsets +100, -250).
    def ks(offset, starts, kind1):
        return [
            cm.CommKernel(cm.UNNAMED, "pg:b", starts[0] + offset, 50 + offset, 0),
            cm.CommKernel(kind1, "pg:b", starts[1] + offset, 90 + offset, 1),
        ]

    per_rank = {
        0: [*ks(0, (10, 60), cm.UNNAMED), cm.CommKernel("all_reduce", "pg:a", 1, 2, 0)],
        1: [*ks(100, (30, 70), "all_gather"), cm.CommKernel("all_reduce", "pg:a", 101, 102, 0)],
        2: ks(-250, (20, 80), cm.UNNAMED),
    }
    m = cm.match(per_rank)
    assert m.ranks == [0, 1, 2]
    assert m.problems == ["pg:a: ranks ran different numbers of collectives {0: 1, 1: 1, 2: 0}"]
    assert m.offset_us == {0: 0, 1: 100, 2: -250}
    assert m.alignment_error_us == 0
    assert [(c.group, c.index, c.kind, c.step) for c in m.collectives] == [
        ("pg:b", 0, cm.UNNAMED, 0),
        ("pg:b", 1, "all_gather", 1),
    ]
    assert m.collectives[0].start_us == {0: 10, 1: 30, 2: 20}
    assert m.collectives[1].dur_us == {0: 30, 1: 20, 2: 10}


def test_a_copy_in_an_idle_gap_is_device_work_not_idle(nccl2):
    """Issue 37: copies and memsets counted as idle. Rank 0's step idles [2300,2500); a copy [2350,2450) in it
    leaves 100 µs of idle, not 200."""
    ranks, m = nccl2
    copies = [[(2350.0, 2450.0)]] + [[] for _ in ranks[0][1][1:]]
    s = wt.rank_steps(0, m, ranks[0][1], ranks[0][2], copy_us_by_step=copies)[0]
    assert s.idle_ms == pytest.approx((200 - 100) / 1e3) and s.copy_only_ms == pytest.approx(100 / 1e3)
    parts = s.compute_only_ms + s.overlapped_ms + s.exposed_transfer_ms + s.exposed_wait_ms + s.idle_ms
    assert parts + s.copy_only_ms == pytest.approx(s.window_ms)
