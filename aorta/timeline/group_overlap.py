"""Overlap of labelled interval groups, round by round (pure: no torch)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aorta import stats
from aorta.timeline import overlap


def group_overlap(
    round_intervals: Sequence[Mapping[int, Sequence[tuple[float, float]]]],
    a_streams: Sequence[int],
    b_streams: Sequence[int],
    iterations_per_round: int = 1,
) -> dict:
    """Overlap of stream group B (e.g. copies) with group A (e.g. compute), per round then median.

    ratio = |A ∩ B| / |B| (share of B hidden behind A); exposed = |B \\ A| in ms and overlapped = |A ∩ B|,
    both per iteration (a round of K iterations holds K of them). ``*_samples``: one value per round.
    """
    ratios, exposed, overlapped = [], [], []
    for intervals in round_intervals:
        a = [iv for i in a_streams for iv in intervals.get(i, ())]
        b = [iv for i in b_streams for iv in intervals.get(i, ())]
        r = overlap.overlap_ratio(a, b)
        if r is None:
            continue
        ratios.append(r)
        exposed.append(overlap.exposed_ms(a, b) / iterations_per_round)
        overlapped.append(overlap.overlapped_ms(a, b) / iterations_per_round)
    if not ratios:
        return {
            "overlap_ratio": None,
            "exposed_ms": None,
            "overlapped_ms": None,
            "overlap_ratio_samples": [],
            "exposed_ms_samples": [],
        }
    return {
        "overlap_ratio": stats.median(ratios),
        "exposed_ms": stats.median(exposed),
        "overlapped_ms": stats.median(overlapped),
        "overlap_ratio_samples": ratios,
        "exposed_ms_samples": exposed,
    }
