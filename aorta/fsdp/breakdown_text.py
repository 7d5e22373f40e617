"""The overlap breakdown of a scenario's record as text lines: per rank, the median profiled step split into
compute only / overlapped / exposed transfer / exposed wait / idle, the straggler and the clock alignment
(pure: no torch). Shown under the FSDP terminal table and by ``scripts/gpu/gate_overlap_proof.sh``."""

from __future__ import annotations

from collections import Counter

from aorta import stats
from aorta.fsdp.wait_transfer import BREAKDOWN
from aorta.record import BenchRecord

LABELS = ("compute only", "overlapped", "exposed transfer", "exposed wait", "idle")


def per_rank_breakdown(record: BenchRecord) -> list[dict]:
    """Per rank: the median over its profiled steps of each part of the step (``BREAKDOWN``, ms) and the
    number of steps; the one definition the terminal and the report both show."""
    rows = []
    for rank, steps in sorted((record.get("per_rank_steps") or {}).items(), key=lambda kv: int(kv[0])):
        if steps:
            medians = {key: stats.median([s[key] for s in steps]) for key in BREAKDOWN}
            rows.append({"rank": int(rank), "steps": len(steps), **medians})
    return rows


def straggler_line(record: BenchRecord) -> str | None:
    """Who arrived last at the collectives most often, in how many steps, and by how much."""
    found = [s for s in record.get("stragglers") or [] if s]
    if not found:
        return None
    rank, n = Counter(s["rank"] for s in found).most_common(1)[0]
    skew = stats.median([s["median_skew_ms"] for s in found if s["rank"] == rank])
    return (
        f"straggler: rank {rank} arrived last most often in {n} of {len(found)} steps, "
        f"by {skew:.3f} ms (median start skew)"
    )


def breakdown_lines(record: BenchRecord) -> list[str]:
    lines = []
    for row in per_rank_breakdown(record):
        parts = ", ".join(f"{label} {row[key]:.2f}" for label, key in zip(LABELS, BREAKDOWN))
        lines.append(f"rank {row['rank']}: ms per step (median of {row['steps']}): {parts}")
    straggler = straggler_line(record)
    if straggler:
        lines.append(straggler)
    align = record.get("clock_alignment")
    if align and align.get("alignment_error_us") is not None:
        lines.append(
            f"clocks aligned by {align['matched_collectives']} matched collectives: offsets (µs) "
            f"{align['offset_us']}, alignment error {align['alignment_error_us']:.1f} µs"
        )
    if record.get("wait_vs_transfer"):
        lines.append(f"wait vs transfer {record.get('wait_vs_transfer')}")
    return lines
