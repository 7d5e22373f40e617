"""The overlap breakdown of a scenario's record as text lines: per rank, the median profiled step split into
compute only / overlapped / exposed transfer / exposed wait / idle, the straggler and the clock alignment
(pure: no torch). Shown under the FSDP terminal table."""

from __future__ import annotations

from collections import Counter

from aorta.fsdp.split_resolution import resolution_sentence
from aorta.fsdp.straggler_evidence import evidence_lines
from aorta.record import BenchRecord
from aorta.record.rank_breakdown import BREAKDOWN, LABELS, per_rank_breakdown, straggler_line


def breakdown_lines(record: BenchRecord) -> list[str]:
    lines = []
    for row in per_rank_breakdown(record):
        parts = ", ".join(f"{label} {row[key]:.2f}" for label, key in zip(LABELS, BREAKDOWN))
        lines.append(f"rank {row['rank']}: ms per step (median of {row['steps']}): {parts}")
    straggler = straggler_line(record)
    if straggler:
        lines.append(straggler)
    found = [s["rank"] for s in record.get("stragglers") or [] if s]
    late = Counter(found).most_common(1)[0][0] if found else None
    lines += evidence_lines(record.get("rank_evidence") or [], late)
    align = record.get("clock_alignment")
    if align and align.get("alignment_error_us") is not None:
        lines.append(
            f"clocks aligned by {align['matched_collectives']} matched collectives: offsets (µs) "
            f"{align['offset_us']}, alignment error {align['alignment_error_us']:.1f} µs"
        )
    if record.get("split_resolution"):
        lines.append(resolution_sentence(record.get("split_resolution")))
    vs = record.get("busbw_vs_ceiling") or {}
    shares = [
        f"{kind} {row['busbw_gbps']:.3g} GB/s = {row['share_of_ceiling']:.0%} of {row['ceiling_gbps']:.3g}"
        f" at {row['message_bytes'] / 2**20:.3g} MiB" + (f" ({row['note']})" if "note" in row else "")
        if "share_of_ceiling" in row
        else f"{kind} {row['busbw_gbps']:.3g} GB/s ({row['reason']})"
        for kind, row in vs.items()
        if isinstance(row, dict)
    ]
    if shares:
        lines.append(f"busbw from transfer time vs the sweep's ceiling: {'; '.join(shares)}")
    elif vs.get("reason"):
        lines.append(f"busbw vs ceiling: {vs['reason']}")
    if record.get("wait_vs_transfer"):
        lines.append(f"wait vs transfer {record.get('wait_vs_transfer')}")
    return lines
