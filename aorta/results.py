"""Per-round stream intervals -> the figures recorded in extra_info (pure: no torch)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aorta import overlap, stats

SCHEMA_VERSION = 1


def stream_figures(
    round_intervals: Sequence[Mapping[int, Sequence[tuple[float, float]]]],
    round_ms: Sequence[float],
    n_streams: int,
) -> dict:
    """Per-stream busy (median over rounds, ms) and effective concurrency (median of Σ busy / round span).

    ``round_intervals[r][i]`` are stream ``i``'s work intervals in round ``r`` (ms from the round's start).
    """
    if len(round_intervals) != len(round_ms):
        raise ValueError(f"{len(round_intervals)} interval sets for {len(round_ms)} rounds")
    busy_by_stream: list[list[float]] = [[] for _ in range(n_streams)]
    concurrency: list[float] = []
    for intervals, span in zip(round_intervals, round_ms):
        busy = overlap.per_stream_busy_ms(intervals)
        for i in range(n_streams):
            busy_by_stream[i].append(busy.get(i, 0.0))
        c = overlap.effective_concurrency(intervals, round_span_ms=span)
        if c is not None:
            concurrency.append(c)
    used = sorted({i for intervals in round_intervals for i, ivs in intervals.items() if ivs})
    return {
        "per_stream_busy_ms": [stats.median(b) if b else 0.0 for b in busy_by_stream],
        "effective_concurrency": stats.median(concurrency) if concurrency else None,
        "effective_concurrency_samples": concurrency,
        "streams_with_work": len(used),
    }


def group_overlap(
    round_intervals: Sequence[Mapping[int, Sequence[tuple[float, float]]]],
    a_streams: Sequence[int],
    b_streams: Sequence[int],
) -> dict:
    """Overlap of stream group B (e.g. copies) with group A (e.g. compute), per round then median.

    ratio = |A ∩ B| / |B| (share of B hidden behind A); exposed = |B \\ A| in ms.
    """
    ratios, exposed, overlapped = [], [], []
    for intervals in round_intervals:
        a = [iv for i in a_streams for iv in intervals.get(i, ())]
        b = [iv for i in b_streams for iv in intervals.get(i, ())]
        r = overlap.overlap_ratio(a, b)
        if r is None:
            continue
        ratios.append(r)
        exposed.append(overlap.exposed_ms(a, b))
        overlapped.append(overlap.overlapped_ms(a, b))
    if not ratios:
        return {"overlap_ratio": None, "exposed_ms": None, "overlapped_ms": None, "overlap_ratio_samples": []}
    return {
        "overlap_ratio": stats.median(ratios),
        "exposed_ms": stats.median(exposed),
        "overlapped_ms": stats.median(overlapped),
        "overlap_ratio_samples": ratios,
    }
