"""aorta/timeline/overlap.py's interval math on numpy arrays: a million intervals without a tuple each (pure).

The same definitions and the same numbers, bit for bit: intervals are sorted by (start, end) and merged where
they overlap or touch; an intersection or difference is cut where overlap.py's sweeps cut it (every piece's ends
are ends of the inputs, picked by ``max`` / ``min``); and a length is the sum of the pieces' lengths taken left to
right from 0 (``np.add.accumulate``, as Python's ``sum`` adds: ``np.sum`` adds pairwise and rounds otherwise). An
empty group's length is the integer 0, as ``sum([])`` is. Intervals are two float arrays, ``starts`` and ``ends``.
"""

from __future__ import annotations

import numpy as np

Intervals = tuple[np.ndarray, np.ndarray]  # (starts, ends), one interval per index


def checked(starts: np.ndarray, ends: np.ndarray) -> Intervals:
    if np.any(ends < starts):
        i = int(np.argmax(ends < starts))
        raise ValueError(f"interval ends before it starts: ({starts[i]}, {ends[i]})")
    return starts, ends


def union(starts: np.ndarray, ends: np.ndarray) -> Intervals:
    """Overlapping or touching intervals merged: sorted and disjoint (``overlap.union``)."""
    checked(starts, ends)
    if len(starts) == 0:
        return starts[:0], ends[:0]
    order = np.lexsort((ends, starts))
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)  # the furthest end so far
    first = np.empty(len(s), dtype=bool)
    first[0] = True
    first[1:] = s[1:] > reach[:-1]  # a new interval: it starts after everything before it ended
    group = np.flatnonzero(first)
    last = np.append(group[1:] - 1, len(s) - 1)
    return s[group], reach[last]


def total(lengths: np.ndarray) -> float | int:
    """``sum(lengths)`` as Python adds it: left to right from the integer 0."""
    if len(lengths) == 0:
        return 0
    return np.add.accumulate(lengths)[-1].item()


def length(starts: np.ndarray, ends: np.ndarray) -> float | int:
    """Total time covered (``overlap.length_ms``)."""
    s, e = union(starts, ends)
    return total(e - s)


def intersection(a: Intervals, b: Intervals) -> Intervals:
    """Time covered by both (``overlap.intersection``): every pair of their unions' intervals that share time,
    in order."""
    (sa, ea), (sb, eb) = union(*a), union(*b)
    if len(sa) == 0 or len(sb) == 0:
        return sa[:0], ea[:0]
    lo = np.searchsorted(eb, sa, side="right")  # b's first interval ending after a's starts
    hi = np.searchsorted(sb, ea, side="left")  # b's intervals starting before a's ends
    counts = np.maximum(hi - lo, 0)
    ia = np.repeat(np.arange(len(sa)), counts)
    ib = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(lo, counts)
    s, e = np.maximum(sa[ia], sb[ib]), np.minimum(ea[ia], eb[ib])
    keep = e > s
    return s[keep], e[keep]


def difference(b: Intervals, a: Intervals) -> Intervals:
    """Time covered by ``b`` but not by ``a`` (``overlap.difference``): ``b`` cut by the gaps between ``a``'s
    intervals."""
    sa, ea = union(*a)
    inf = np.array([np.inf])
    gaps = (np.concatenate([-inf, ea]), np.concatenate([sa, inf]))  # before, between and after a's intervals
    sb, eb = union(*b)
    if len(sb) == 0:
        return sb, eb
    lo = np.searchsorted(gaps[1], sb, side="right")
    hi = np.searchsorted(gaps[0], eb, side="left")
    counts = np.maximum(hi - lo, 0)
    ib = np.repeat(np.arange(len(sb)), counts)
    ig = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts) + np.repeat(lo, counts)
    s, e = np.maximum(sb[ib], gaps[0][ig]), np.minimum(eb[ib], gaps[1][ig])
    keep = e > s
    return s[keep], e[keep]


def span(starts: np.ndarray, ends: np.ndarray) -> float:
    """From the earliest start to the latest end, 0.0 for none (``overlap.span_ms``)."""
    checked(starts, ends)
    if len(starts) == 0:
        return 0.0
    return (ends.max() - starts.min()).item()
