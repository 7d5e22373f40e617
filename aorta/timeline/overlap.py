"""Interval math over device timelines (pure: no torch).

An interval is a ``(start_ms, end_ms)`` pair with ``end_ms >= start_ms``. Every function returns new
lists and never mutates its input. The definitions are the figures' (docs/hw_queue_figures.md, "Kernel
timestamps"; docs/fsdp.md, "What each figure means"):

- busy          = length of the union of a group's intervals
- overlapped    = |A ∩ B|
- overlap ratio = |A ∩ B| / |B|   (share of B hidden behind A; B is usually communication)
- exposed       = |B \\ A|
- effective concurrency = Σ per-stream busy / span of the round
- idle          = window - |A ∪ B| = window - (|A| + |B| - |A ∩ B|)

Every function is O(n log n) in the intervals given: one sort, then sweeps that move forward only (a trace of a
training run holds millions of kernels, and rocprofv3 records ROCm's buffer fills as kernels interleaved with
the compute: a walk over one group for each interval of the other took 337 s for 301k dispatches).
Times keep their type: integer ns stay integers (exact at any absolute clock), floats stay floats.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

Interval = tuple[float, float]
K = TypeVar("K", bound=Hashable)  # a stream, or a kind of work


def _number(value: float) -> float:
    """``value`` as it is where it is an int or a float (integer ns stay exact), else as a float."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else float(value)


def _checked(intervals: Iterable[Sequence[float]]) -> list[Interval]:
    out = []
    exact = (int, float)
    for iv in intervals:
        start, end = iv[0], iv[1]
        if type(start) not in exact or type(end) not in exact:  # the common case costs no call
            start, end = _number(start), _number(end)
        if end < start:
            raise ValueError(f"interval ends before it starts: ({start}, {end})")
        # a pair given as a tuple of numbers is kept, not copied (a million intervals: 100 MB of copies)
        out.append(
            iv if type(iv) is tuple and len(iv) == 2 and iv[0] is start and iv[1] is end else (start, end)
        )
    return out


def union(intervals: Iterable[Sequence[float]]) -> list[Interval]:
    """Merge overlapping or touching intervals; the result is sorted and disjoint."""
    merged: list[Interval] = []
    for start, end in sorted(_checked(intervals)):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def length_ms(intervals: Iterable[Sequence[float]]) -> float:
    """Total time covered by the intervals (overlaps counted once)."""
    return sum(end - start for start, end in union(intervals))


def intersection(a: Iterable[Sequence[float]], b: Iterable[Sequence[float]]) -> list[Interval]:
    """Time covered by both groups, as disjoint sorted intervals (two-pointer sweep)."""
    ua, ub = union(a), union(b)
    out: list[Interval] = []
    i = j = 0
    while i < len(ua) and j < len(ub):
        start = max(ua[i][0], ub[j][0])
        end = min(ua[i][1], ub[j][1])
        if end > start:
            out.append((start, end))
        if ua[i][1] < ub[j][1]:
            i += 1
        else:
            j += 1
    return out


def difference(b: Iterable[Sequence[float]], a: Iterable[Sequence[float]]) -> list[Interval]:
    """Time covered by ``b`` but not by ``a`` (b \\ a), as disjoint sorted intervals: one forward sweep over
    both unions (each pointer only moves on, so O(|a| + |b|) after the sorts)."""
    ua, ub = union(a), union(b)
    out: list[Interval] = []
    j = 0
    for start, end in ub:
        while j < len(ua) and ua[j][1] <= start:  # a's intervals that end before this one starts: done
            j += 1
        cursor, k = start, j
        while k < len(ua) and ua[k][0] < end:  # a's intervals that cut into [cursor, end)
            if ua[k][0] > cursor:
                out.append((cursor, ua[k][0]))
            if ua[k][1] > cursor:
                cursor = ua[k][1]
            if cursor >= end:
                break
            k += 1
        if cursor < end:
            out.append((cursor, end))
        j = k  # a's intervals before k end inside this one: b's next interval starts after them
    return out


def overlapped_ms(a: Iterable[Sequence[float]], b: Iterable[Sequence[float]]) -> float:
    """|A ∩ B| in ms."""
    return sum(end - start for start, end in intersection(a, b))


def exposed_ms(a: Iterable[Sequence[float]], b: Iterable[Sequence[float]]) -> float:
    """|B \\ A| in ms: time B runs with nothing of A beside it."""
    return sum(end - start for start, end in difference(b, a))


def overlap_ratio(a: Iterable[Sequence[float]], b: Iterable[Sequence[float]]) -> float | None:
    """|A ∩ B| / |B|: the share of B hidden behind A. ``None`` when B is empty (nothing to hide)."""
    b_list = _checked(b)
    b_busy = length_ms(b_list)
    if b_busy <= 0.0:
        return None
    return overlapped_ms(a, b_list) / b_busy


def per_stream_busy_ms(streams: Mapping[K, Iterable[Sequence[float]]]) -> dict[K, float]:
    """Union length of each stream's intervals."""
    return {key: length_ms(ivs) for key, ivs in streams.items()}


def span_ms(intervals: Iterable[Sequence[float]]) -> float:
    """From the earliest start to the latest end (0 for no intervals)."""
    ivs = _checked(intervals)
    if not ivs:
        return 0.0
    return max(e for _, e in ivs) - min(s for s, _ in ivs)


def effective_concurrency(
    streams: Mapping[K, Iterable[Sequence[float]]], round_span_ms: float | None = None
) -> float | None:
    """Σ per-stream busy / round span. 1.0 = serial; N = N streams fully parallel.

    ``round_span_ms`` is the round's own span (start event to end event); without it the span of
    all intervals is used. ``None`` when the span is zero.
    """
    lists = {k: _checked(v) for k, v in streams.items()}
    span = round_span_ms if round_span_ms is not None else span_ms(iv for ivs in lists.values() for iv in ivs)
    if span <= 0.0:
        return None
    return sum(per_stream_busy_ms(lists).values()) / span


def active_segments(
    streams: Mapping[K, Iterable[Sequence[float]]],
) -> list[tuple[float, float, tuple[K, ...]]]:
    """Cut the timeline at every boundary; for each piece, which streams (or kinds) were running.

    Returns ``(start_ms, end_ms, (keys...))`` for every piece in which at least one ran (adjacent pieces
    hold different sets: a piece ends only where a key starts or stops); keys sorted by ``str`` so the
    output is stable. One sweep over sorted
    boundaries: a profiled window holds thousands of kernels.
    """
    edges: list[tuple[float, int, K]] = []
    for key, ivs in streams.items():
        for start, end in union(ivs):
            if end > start:
                edges += [(start, 1, key), (end, -1, key)]
    edges.sort(key=lambda e: (e[0], e[1]))
    running: dict[K, int] = {}
    out: list[tuple[float, float, tuple[K, ...]]] = []
    i = 0
    while i < len(edges):
        t = edges[i][0]
        while i < len(edges) and edges[i][0] == t:  # apply every boundary at this instant
            _, delta, key = edges[i]
            count = running.get(key, 0) + delta
            if count:
                running[key] = count
            else:  # keys that stopped are dropped: each piece costs what runs in it, not every key seen
                del running[key]
            i += 1
        if i == len(edges):
            break
        active = tuple(sorted(running, key=str))
        nxt = edges[i][0]
        if active:  # every boundary changes the set: each key's intervals are disjoint and never touch
            out.append((t, nxt, active))
    return out


def idle_ms(window_ms: float, compute_busy_ms: float, comm_busy_ms: float, overlapped_ms: float) -> float:
    """Time in a window with no kernel running: window - |compute ∪ comm|. A GPU that idles for a large
    share of the step waits on the host (launches, Python, synchronization), and its overlap figures then
    describe kernels that had the GPU to themselves rather than a schedule that hid them."""
    return max(0.0, window_ms - (compute_busy_ms + comm_busy_ms - overlapped_ms))
