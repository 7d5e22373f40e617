"""Recorded per-stream intervals of hardware-queue rounds -> Chrome/Perfetto trace events (pure: no torch).

No profiler is involved: the intervals are the ones the timing loop measured with its event pairs
(``TimedRun.rounds[r].stream_intervals_ms``, ms from the round's start event). Rounds are laid end
to end on device time (round r starts where round r-1 ended): the gaps between rounds were not
measured and are not drawn. One thread per stream (tid i+1, "stream i") and one for the rounds (tid 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

US_PER_MS = 1e3


def round_events(
    round_ms: Sequence[float],
    round_intervals: Sequence[Mapping[int, Sequence[tuple[float, float]]]],
    *,
    process_name: str,
    pid: int = 0,
) -> list[dict]:
    """Trace events (ts and dur in µs) for rounds of ``round_ms`` and their per-stream intervals."""
    if len(round_ms) != len(round_intervals):
        raise ValueError(f"{len(round_intervals)} interval sets for {len(round_ms)} rounds")
    streams = sorted({i for ivs in round_intervals for i in ivs})
    events: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": process_name}},
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": 0, "args": {"name": "rounds"}},
    ]
    events += [
        {"ph": "M", "name": "thread_name", "pid": pid, "tid": i + 1, "args": {"name": f"stream {i}"}}
        for i in streams
    ]
    events += [
        {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": i + 1, "args": {"sort_index": i + 1}}
        for i in streams
    ]
    offset_us = 0.0
    for r, (span_ms, intervals) in enumerate(zip(round_ms, round_intervals)):
        events.append(
            {
                "ph": "X",
                "name": f"round {r}",
                "cat": "round",
                "pid": pid,
                "tid": 0,
                "ts": offset_us,
                "dur": span_ms * US_PER_MS,
                "args": {"round": r, "device_ms": span_ms},
            }
        )
        for i in sorted(intervals):
            for n, (start_ms, end_ms) in enumerate(intervals[i]):
                events.append(
                    {
                        "ph": "X",
                        "name": f"stream {i} work",
                        "cat": "stream",
                        "pid": pid,
                        "tid": i + 1,
                        "ts": offset_us + start_ms * US_PER_MS,
                        "dur": (end_ms - start_ms) * US_PER_MS,
                        "args": {"round": r, "interval": n, "start_ms": start_ms, "end_ms": end_ms},
                    }
                )
        offset_us += span_ms * US_PER_MS
    return events


def trace_document(events: list[dict], **other) -> dict:
    """A Chrome trace file's content (JSON object form), with what it shows under ``otherData``."""
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"source": "aorta timing loop (device events), no profiler", **other},
    }
