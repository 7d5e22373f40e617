"""Per-rank aggregation of a multi-rank run (pure: no torch): the worst rank at each step, the one rule every
``*_worst_rank`` figure and the slowest-rank step time follow; and the overlap breakdown as the record holds it
(``per_rank_steps``, ``stragglers``): per rank, the median profiled step split into compute only / overlapped
/ exposed transfer / exposed wait / idle, and who arrived last at the collectives. The one definition the
FSDP suite (its figures, aorta/fsdp/figures.py and rank_figures.py, and its terminal lines,
aorta/fsdp/breakdown_text.py) and the report (which never imports the FSDP suite) both use."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from aorta import stats
from aorta.record import BenchRecord

# The parts of a profiled step, the keys of every per-step entry of ``per_rank_steps`` (ms), in display order.
BREAKDOWN = ("compute_only_ms", "overlapped_ms", "exposed_transfer_ms", "exposed_wait_ms", "idle_ms")
LABELS = ("compute only", "overlapped", "exposed transfer", "exposed wait", "idle")


def worst_per_step(per_rank: Sequence[Sequence[float | None]], *, higher_is_better: bool) -> list[float]:
    """Step by step, the worst rank's value: the lowest of a higher-is-better figure, else the highest (the
    slowest rank's step time). ``per_rank[r][i]`` is rank r's value at step i. Steps past the shortest rank's,
    and steps where some rank has no value, are left out."""
    out = []
    for values in zip(*per_rank):
        nums = [v for v in values if v is not None]
        if len(nums) < len(values):
            continue
        out.append(min(nums) if higher_is_better else max(nums))
    return out


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
