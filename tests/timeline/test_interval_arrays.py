"""The interval math on numpy arrays (aorta/timeline/interval_arrays.py) gives overlap.py's numbers bit for bit:
the same pieces in the same order, and lengths summed as Python sums them (left to right from the integer 0)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_tiers import examples

from aorta.timeline import interval_arrays as ia
from aorta.timeline import overlap

# starts on a coarse grid (touching and equal ends are common) or anywhere; lengths 0 included
start = st.one_of(st.integers(0, 60).map(lambda n: n / 7), st.floats(0, 10, allow_nan=False))
length = st.one_of(st.just(0.0), st.integers(0, 5).map(lambda n: n / 3), st.floats(0, 3, allow_nan=False))
groups = st.lists(st.tuples(start, length).map(lambda p: (p[0], p[0] + p[1])), max_size=14)


def arrays(ivs):
    return np.array([s for s, _ in ivs], dtype=float), np.array([e for _, e in ivs], dtype=float)


def pairs(a):
    return list(zip(a[0].tolist(), a[1].tolist()))


@settings(max_examples=examples(400), deadline=None)
@given(groups, groups)
def test_every_figure_is_overlaps_own(a, b):
    A, B = arrays(a), arrays(b)
    assert pairs(ia.union(*A)) == overlap.union(a)
    assert repr(ia.length(*A)) == repr(overlap.length_ms(a))  # the same float, or the integer 0 for none
    assert pairs(ia.intersection(A, B)) == overlap.intersection(a, b)
    assert pairs(ia.difference(B, A)) == overlap.difference(b, a)
    assert ia.span(*A) == overlap.span_ms(a)


def test_a_sum_is_taken_left_to_right_as_python_adds():
    lengths = np.array([1.0] + [1e-16] * 20)  # left to right, each 1e-16 is lost against 1.0
    assert ia.total(lengths) == sum(lengths.tolist()) != lengths.sum()  # np.sum adds pairwise
    assert ia.total(np.empty(0)) == 0 and isinstance(ia.total(np.empty(0)), int)


def test_touching_intervals_merge_and_an_end_before_its_start_is_refused():
    #   [0--2][2--3]   [5--6]
    assert pairs(ia.union(np.array([2.0, 0.0, 5.0]), np.array([3.0, 2.0, 6.0]))) == [(0.0, 3.0), (5.0, 6.0)]
    try:
        ia.union(np.array([2.0]), np.array([1.0]))
    except ValueError as exc:
        assert "ends before it starts: (2.0, 1.0)" in str(exc)
    else:
        raise AssertionError("no refusal")
