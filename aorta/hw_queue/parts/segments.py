"""Which work a recorded stream interval belongs to (pure: no torch).

The kernel-timestamp pass gives one span per ``with rec.on(i):`` block (its first kernel's start to its
last kernel's end, ``RoundTiming.block_spans_ms``), per stream index, in the order the blocks were issued. A workload that issues a fixed plan of labelled segments can therefore
name every interval: the ``j``-th interval on stream ``i`` is the ``j``-th label issued on stream
``i``, repeating once per iteration when the timing loop batches K iterations in a round.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Generic, TypeVar

Interval = tuple[float, float]
Label = TypeVar("Label", bound=Hashable)


class SegmentPlan(Generic[Label]):
    """Labels of the segments one step issues, per stream index, in issue order."""

    def __init__(self) -> None:
        self._labels: dict[int, list[Label]] = {}

    def add(self, stream_index: int, label: Label) -> None:
        self._labels.setdefault(stream_index, []).append(label)

    def labels(self, stream_index: int) -> list[Label]:
        return list(self._labels.get(stream_index, ()))

    def stream_indices(self) -> list[int]:
        return sorted(self._labels)

    def label_intervals(
        self, intervals: Mapping[int, Sequence[Interval]]
    ) -> list[tuple[int, Label, Interval]]:
        """``(iteration, label, interval)`` for every interval of one round.

        Raises ``ValueError`` when a stream's interval count is not a whole number of steps' worth of
        segments (the plan and the step disagree, so no interval could be named safely).
        """
        out: list[tuple[int, Label, Interval]] = []
        for i, ivs in intervals.items():
            labels = self._labels.get(i, [])
            if not labels:
                if ivs:
                    raise ValueError(f"stream {i} has {len(ivs)} intervals but the plan issues nothing there")
                continue
            if len(ivs) % len(labels):
                raise ValueError(
                    f"stream {i}: {len(ivs)} intervals is not a multiple of the "
                    f"{len(labels)} segments one step issues there"
                )
            for j, iv in enumerate(ivs):
                if iv is None:  # a block that launched no device work (kernel timeline): nothing to name
                    continue
                out.append((j // len(labels), labels[j % len(labels)], (float(iv[0]), float(iv[1]))))
        return out
