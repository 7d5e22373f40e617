"""Interval math on hand-drawn timelines; expected values written as arithmetic."""

import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_tiers import examples

from aorta.timeline import overlap

#   A: [0----4]      [6--8]
#   B:    [2------7]
A = [(0, 4), (6, 8)]
B = [(2, 7)]


def test_union_merges_overlapping_and_touching():
    assert overlap.union([(5, 6), (0, 2), (1, 3), (3, 4)]) == [(0, 4), (5, 6)]


def test_union_does_not_mutate_its_input():
    data = [(3, 4), (0, 1)]
    overlap.union(data)
    assert data == [(3, 4), (0, 1)]


def test_intersection_and_overlapped():
    assert overlap.intersection(A, B) == [(2, 4), (6, 7)]
    assert overlap.overlapped_ms(A, B) == (4 - 2) + (7 - 6)


def test_exposed_is_b_minus_a():
    assert overlap.difference(B, A) == [(4, 6)]
    assert overlap.exposed_ms(A, B) == 6 - 4


def test_overlap_ratio_is_share_of_b_hidden():
    assert overlap.overlap_ratio(A, B) == pytest.approx(3 / 5)
    assert overlap.overlap_ratio(A, []) is None
    assert overlap.overlap_ratio([(0, 10)], [(1, 2)]) == 1.0
    assert overlap.overlap_ratio([(5, 10)], [(1, 2)]) == 0.0


def test_effective_concurrency():
    streams = {0: [(0, 10)], 1: [(0, 10)], 2: [(0, 5)]}
    assert overlap.effective_concurrency(streams) == pytest.approx((10 + 10 + 5) / 10)
    assert overlap.effective_concurrency(streams, round_span_ms=20) == pytest.approx(25 / 20)
    serial = {0: [(0, 1)], 1: [(1, 2)], 2: [(2, 3)]}
    assert overlap.effective_concurrency(serial) == pytest.approx(1.0)
    assert overlap.effective_concurrency({}) is None


def test_per_stream_busy_counts_overlaps_once():
    assert overlap.per_stream_busy_ms({"s": [(0, 3), (2, 5), (7, 8)]}) == {"s": (5 - 0) + (8 - 7)}


def test_active_segments():
    segs = overlap.active_segments({"a": [(0, 4)], "b": [(2, 6)]})
    assert segs == [(0, 2, ("a",)), (2, 4, ("a", "b")), (4, 6, ("b",))]


def test_bad_interval_is_rejected():
    with pytest.raises(ValueError, match="ends before it starts"):
        overlap.union([(3, 1)])


def test_idle_is_window_minus_the_union_of_compute_and_comm():
    # window 10 ms; compute 6 ms, comm 3 ms, 2 ms of them together: union 6 + 3 - 2 = 7 ms, idle 3 ms
    assert overlap.idle_ms(10.0, 6.0, 3.0, 2.0) == pytest.approx(10 - (6 + 3 - 2))
    assert overlap.idle_ms(5.0, 6.0, 0.0, 0.0) == 0.0  # never negative


def test_the_report_does_not_import_the_fsdp_package():
    """Data flows one way: the report reads what the FSDP suite wrote, it never imports the suite."""
    import subprocess
    import sys

    code = (
        "import sys, aorta.report.build, aorta.report.runs, aorta.report.summary, aorta.report.fsdp_artifacts; "
        "print(sorted(m for m in sys.modules if m.startswith('aorta.fsdp')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_touching_intervals_leave_no_zero_length_pieces():
    assert overlap.intersection([(0, 2)], [(2, 3)]) == []  # they touch at 2: nothing in common
    assert overlap.difference([(0, 4)], [(0, 1)]) == [(1, 4)]  # A starts where B does
    assert overlap.difference([(0, 4)], [(2, 4)]) == [(0, 2)]  # A ends where B does
    assert overlap.difference([(0, 4)], [(0, 4)]) == []


def test_active_segments_across_a_gap_and_a_key_that_runs_twice():
    segs = overlap.active_segments({"a": [(0, 1), (2, 3)], "b": [(0, 3)], "c": [(5, 6)]})
    assert segs == [(0, 1, ("a", "b")), (1, 2, ("b",)), (2, 3, ("a", "b")), (5, 6, ("c",))]
    mixed = overlap.active_segments({7: [(0, 2)], "20": [(1, 2)]})  # profiler stream ids: ints or strings
    assert mixed == [(0, 1, (7,)), (1, 2, ("20", 7))]


def test_active_segments_of_nothing_and_of_zero_length_intervals():
    assert overlap.active_segments({}) == []
    # b's zero-length interval inside a's run neither splits a's piece nor appears on its own
    assert overlap.active_segments({"a": [(0, 10)], "b": [(5, 5)]}) == [(0.0, 10.0, ("a",))]


def test_effective_concurrency_of_a_round_shorter_than_a_millisecond():
    assert overlap.effective_concurrency({"a": [(0, 0.5)], "b": [(0, 0.25)]}) == pytest.approx(1.5)


_ivs = st.lists(
    st.tuples(st.integers(0, 40), st.integers(0, 10)).map(lambda t: (t[0], t[0] + t[1])), max_size=5
)


@settings(max_examples=examples(150), deadline=None)
@given(st.dictionaries(st.sampled_from("abc"), _ivs, max_size=3))
def test_active_segments_cover_each_keys_union_exactly_and_neighbours_differ(streams):
    segs = overlap.active_segments(streams)
    for key, ivs in streams.items():
        mine = [(s, e) for s, e, keys in segs if key in keys]
        assert overlap.union(mine) == [iv for iv in overlap.union(ivs) if iv[1] > iv[0]]
    for (_, e0, k0), (s1, _, k1) in zip(segs, segs[1:]):
        assert e0 <= s1 and (e0 < s1 or k0 != k1)  # in order; touching pieces hold different sets
    assert all(s < e and keys == tuple(sorted(keys)) for s, e, keys in segs)


# --------------------------------------------------------------------------- the sweeps against the naive forms
def _naive_difference(b, a):
    """b \\ a by walking every interval of a for each interval of b (the quadratic form it replaced)."""
    out = []
    ua = overlap.union(a)
    for start, end in overlap.union(b):
        cursor = start
        for a_start, a_end in ua:
            if a_end <= cursor or a_start >= end:
                continue
            if a_start > cursor:
                out.append((cursor, a_start))
            cursor = max(cursor, a_end)
        if cursor < end:
            out.append((cursor, end))
    return out


def _covered(ivs, t):
    return any(s <= t < e for s, e in ivs)


_wide = st.lists(
    st.tuples(st.integers(0, 200), st.integers(0, 30)).map(lambda t: (t[0], t[0] + t[1])), max_size=25
)


@settings(max_examples=examples(300), deadline=None)
@given(_wide, _wide)
def test_difference_intersection_and_union_agree_with_the_naive_forms(a, b):
    assert overlap.difference(b, a) == _naive_difference(b, a)
    points = range(0, 232)  # integer ends: a half-open interval's coverage is decided at integer points
    inter = overlap.intersection(a, b)
    assert [_covered(inter, t) for t in points] == [_covered(a, t) and _covered(b, t) for t in points]
    diff = overlap.difference(b, a)
    assert [_covered(diff, t) for t in points] == [_covered(b, t) and not _covered(a, t) for t in points]
    assert overlap.length_ms(a + b) == overlap.length_ms(a) + overlap.length_ms(b) - overlap.overlapped_ms(
        a, b
    )


def test_integer_ns_stay_integers_at_an_epoch_clock():
    t0 = 1_758_927_066_581_847_260  # ns on the Unix epoch: beyond a float64's exact integers
    a, b = [(t0, t0 + 5)], [(t0 + 3, t0 + 11)]
    assert overlap.difference(b, a) == [(t0 + 5, t0 + 11)]
    assert overlap.length_ms(a + b) == 11 and isinstance(overlap.length_ms(a + b), int)


class _BudgetSpent(Exception):
    pass


def _lines_run(fn, *args, budget: int) -> int:
    """Lines of aorta/timeline/overlap.py that ``fn(*args)`` runs: its work in counted operations, not seconds
    (the sorts run in C and are O(n log n)); stops at ``budget`` so a quadratic walk fails fast."""
    count = 0

    def line(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
            if count > budget:
                raise _BudgetSpent
        return line

    def call(frame, event, arg):
        return line if frame.f_code.co_filename == overlap.__file__ else None

    before = sys.gettrace()  # coverage's, under scripts/bug_reach.py: put back, or no later test is measured
    sys.settrace(call)
    try:
        fn(*args)
    except _BudgetSpent:
        pass
    finally:
        sys.settrace(before)
    return count


def _interleaved(n):
    """rocprofv3's shape: n compute kernels and n buffer fills between them, none overlapping its neighbour."""
    return [(10 * i, 10 * i + 6) for i in range(n)], [(10 * i + 7, 10 * i + 9) for i in range(n)]


@pytest.mark.parametrize(
    "fn",
    [
        lambda c, f: overlap.difference(f, c),
        lambda c, f: overlap.difference(c, f),
        lambda c, f: overlap.intersection(c, f),
        lambda c, f: overlap.active_segments({"compute": c, "fill": f}),
    ],
    ids=["fills-minus-compute", "compute-minus-fills", "intersection", "active-segments"],
)
def test_interval_algebra_is_linear_after_the_sort_in_counted_lines(fn):
    small = _lines_run(fn, *_interleaved(300), budget=10**7)
    large = _lines_run(fn, *_interleaved(4800), budget=16 * 2 * small)  # 16x the intervals
    # a sweep runs 16x the lines (the sort is C's); a walk over one group per interval of the other, 256x
    assert large <= 16 * 1.25 * small, (small, large)
