"""Per-stream intervals regrouped by what ran in them: stage or role labels (no torch calls).

The kernel-timestamp pass files kernels under the label given to ``rec.on(i, label)``
(``RoundTiming.label_intervals_ms``); ``regroup`` below is the older per-block form. A
workload whose streams each carry several kinds of work (stage ``s`` of query ``q`` on stream
``(q + s) % n``; copies and compute sharing a stream when few streams are given) notes a label for
each block with ``StageLog.on(rec, i, label)``; ``regroup`` then files every recorded interval under
its label, so the overlap the pattern exists for (embedding vs generation, copy vs compute) can be
measured whatever the stream mapping. Naming the intervals is ``segments.SegmentPlan``'s job; this
module adds the per-step log and the figures by label group.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence

from aorta import stats
from aorta.hw_queue.parts.segments import SegmentPlan
from aorta.timeline import overlap
from aorta.timeline.group_overlap import group_overlap

Interval = tuple[float, float]


class StageLog:
    """The ``(stream index, label)`` of every ``rec.on`` block of one step, in issue order."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str]] = []

    def begin_step(self) -> None:
        """Start a step's log afresh: every step issues the same blocks, so the last one describes all."""
        self.calls = []

    def on(self, rec, i: int, label: str):
        """``rec.on(i)``, noting that the block holds ``label`` work."""
        self.calls.append((i, label))
        return rec.on(i, label)

    @property
    def labels(self) -> list[str]:
        return list(dict.fromkeys(label for _, label in self.calls))


def regroup(
    stream_intervals: Mapping[int, Sequence[Interval]], calls: Sequence[tuple[int, str]]
) -> dict[str, list[Interval]]:
    """One round's intervals by label. A round of K iterations holds K copies of the step's blocks."""
    plan: SegmentPlan[str] = SegmentPlan()
    for i, label in calls:
        plan.add(i, label)
    out: dict[str, list[Interval]] = {label: [] for _, label in calls}
    for _, label, iv in plan.label_intervals(stream_intervals):
        out[label].append(iv)
    return out


def regroup_rounds(
    rounds: Iterable[Mapping[int, Sequence[Interval]]], calls: Sequence[tuple[int, str]]
) -> list[dict[str, list[Interval]]]:
    return [regroup(r, calls) for r in rounds]


def label_overlap(
    labelled_rounds: Sequence[Mapping[Hashable, Sequence[Interval]]],
    a_labels: Sequence[Hashable],
    b_labels: Sequence[Hashable],
) -> dict:
    """``group_overlap.group_overlap`` over label groups: ratio = |A ∩ B| / |B| (share of B hidden behind A).

    Keys may be labels (from ``regroup``) or stream indices (intervals as the timing loop gives them).
    """
    return group_overlap(labelled_rounds, a_labels, b_labels)  # type: ignore[arg-type]


def busy_ms_per_round(
    labelled_rounds: Sequence[Mapping[Hashable, Sequence[Interval]]], labels: Sequence[Hashable]
) -> list[float]:
    """Union length of the labels' intervals in each round (work on several streams counted once)."""
    return [overlap.length_ms([iv for lab in labels for iv in r.get(lab, ())]) for r in labelled_rounds]


def rate_samples(
    amount_per_round: Sequence[float], busy_ms: Sequence[float], scale: float = 1.0
) -> list[float]:
    """amount / busy seconds per round (rounds with no busy time are left out), times ``scale``."""
    return [a / (b * 1e-3) * scale for a, b in zip(amount_per_round, busy_ms) if b > 0.0]


def median_or_none(samples: Sequence[float]) -> float | None:
    return stats.median(samples) if samples else None


CPU_SERIAL_REASON = "CPU backend: ops run one after another, so work on different streams cannot overlap"
