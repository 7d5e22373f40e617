"""busbw against the link: a scenario's bus bandwidth from transfer time, as a share of this machine's
measured ceiling at the same message size (pure: no torch).

Definitions are nccl-tests' (doc/PERFORMANCE.md): for a collective over ``n`` ranks whose full buffer
(gathered output, reduce-scatter input, all-reduce buffer) is ``S`` bytes and takes ``t`` seconds,
algbw = S / t and busbw = algbw × factor, factor (n−1)/n for all-gather and reduce-scatter and 2(n−1)/n for
all-reduce (``trace_analysis.busbw_factor``). GB = 1e9 bytes.

The ceiling is the built-in collective sweep's busbw per kind and size (``benchmarks/fsdp/test_collective_
sweep.py``: the same collective alone, back to back, on this machine). A scenario's busbw uses **transfer**
time (the last-arriving rank's kernel time, ``collective_match``), not kernel time, which includes waiting for
peers. Between two swept sizes the ceiling is interpolated on log(size) / log(busbw); outside the swept range
there is none (said, never extrapolated).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from aorta import stats
from aorta.fsdp.collective_match import Collective
from aorta.fsdp.trace_analysis import busbw_factor

SWEEP_KINDS = ("all_gather", "reduce_scatter", "all_reduce")


def busbw_gbps(kind: str, message_bytes: float, n_ranks: int, seconds: float) -> float:
    """nccl-tests' busbw (GB/s) of one ``kind`` collective of ``message_bytes`` over ``n_ranks`` in ``seconds``."""
    factor = busbw_factor(kind, n_ranks)
    if factor is None:
        raise ValueError(f"no busbw factor for collective kind {kind!r}; known: {SWEEP_KINDS}")
    if not seconds > 0:
        raise ValueError(f"time must be > 0 s, got {seconds}")
    return message_bytes / seconds / 1e9 * factor


def ceiling_at(points: Sequence[Sequence[float]], message_bytes: float) -> float | None:
    """The ceiling busbw at ``message_bytes`` from swept ``[bytes, busbw_gbps]`` points: exact where swept,
    log-log interpolated between the two neighbouring sizes, None outside the swept range."""
    pts = sorted((float(b), float(g)) for b, g in points if b > 0 and g > 0)
    if not pts or not pts[0][0] <= message_bytes <= pts[-1][0]:
        return None
    exact = [g for b, g in pts if b == message_bytes]
    if exact:
        return exact[0]
    (b0, g0), (b1, g1) = next((lo, hi) for lo, hi in zip(pts, pts[1:]) if lo[0] < message_bytes < hi[0])
    f = (math.log(message_bytes) - math.log(b0)) / (math.log(b1) - math.log(b0))
    return math.exp(math.log(g0) + f * (math.log(g1) - math.log(g0)))


def transfer_busbw(collectives: Sequence[Collective], n_ranks: int) -> dict[str, dict]:
    """Per kind: busbw from transfer time (Σ bytes / Σ transfer × factor), the median message size, and how
    many collectives had a size and a transfer above zero."""
    out: dict[str, dict] = {}
    for kind in SWEEP_KINDS:
        sized = [c for c in collectives if c.kind == kind and c.message_bytes and c.transfer_us > 0]
        if not sized:
            continue
        total_bytes = sum(c.message_bytes or 0 for c in sized)
        seconds = sum(c.transfer_us for c in sized) * 1e-6
        out[kind] = {
            "busbw_gbps": busbw_gbps(kind, total_bytes, n_ranks, seconds),
            "message_bytes_median": stats.median([float(c.message_bytes or 0) for c in sized]),
            "collectives": len(sized),
        }
    return out


# A share above 1 is measured, not an error (4x H200: comm_stress's 4 MiB all-reduce at 1.02-1.37 of the
# sweep's figure): the two time different things where a collective lasts tens of µs.
ABOVE_CEILING = (
    "above the sweep's figure at this size: the sweep times back-to-back synchronous collectives (slowest rank "
    "per round, gaps between them included, about 40-50 µs an op from 64 KiB to 4 MiB on 4x H200), the "
    "transfer here is kernel time after the last rank arrived"
)


def shares_of_ceiling(transfer: Mapping[str, Mapping], ceiling: Mapping[str, Sequence]) -> dict[str, dict]:
    """Per kind of ``transfer`` (``transfer_busbw``'s output): its busbw, the ceiling at its median message
    size and the share (with ``note`` where the share is above 1); where there is no ceiling, ``reason`` says
    why."""
    out = {}
    for kind, t in transfer.items():
        row = {"busbw_gbps": t["busbw_gbps"], "message_bytes": t["message_bytes_median"]}
        points = ceiling.get(kind)
        top = ceiling_at(points, t["message_bytes_median"]) if points else None
        if top is None:
            row["reason"] = (
                f"no {kind} in the collective sweep"
                if not points
                else f"message size {t['message_bytes_median']:.0f} B outside the swept range "
                f"{min(p[0] for p in points):.0f}-{max(p[0] for p in points):.0f} B"
            )
        else:
            row |= {"ceiling_gbps": top, "share_of_ceiling": t["busbw_gbps"] / top}
            if row["share_of_ceiling"] > 1.0:
                row["note"] = ABOVE_CEILING
        out[kind] = row
    return out


def size_label(message_bytes: int) -> str:
    """``65536`` -> ``64KiB``, ``268435456`` -> ``256MiB`` (metric names of the sweep)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if message_bytes >= scale and message_bytes % scale == 0:
            return f"{message_bytes // scale}{unit}"
    return f"{message_bytes}B"


def sweep_point(kind: str, message_bytes: int, per_rank_ms: Sequence[Sequence[float]]) -> dict:
    """One swept (kind, size) from every rank's per-operation ms, round by round: the slowest rank's time
    per round (the collective is done when its last rank is), busbw per round, and their medians."""
    counts = {len(r) for r in per_rank_ms}
    if len(counts) != 1 or not per_rank_ms or 0 in counts:
        raise ValueError(
            f"{kind} {message_bytes} B: ranks timed different numbers of rounds: {sorted(counts)}"
        )
    n = len(per_rank_ms)
    slowest = [max(col) for col in zip(*per_rank_ms)]
    busbw = [busbw_gbps(kind, message_bytes, n, ms / 1e3) for ms in slowest]
    return {
        "kind": kind,
        "message_bytes": message_bytes,
        "n_ranks": n,
        "ms_per_op": slowest,
        "busbw_gbps": busbw,
        "busbw_gbps_median": stats.median(busbw),
    }


def ceiling_from_points(points: Sequence[Mapping]) -> dict[str, list[list[float]]]:
    """``sweep_point`` results -> ``{kind: [[bytes, median busbw], ...]}`` by size (what ``ceiling_at`` reads)."""
    out: dict[str, list[list[float]]] = {}
    for p in sorted(points, key=lambda p: (p["kind"], p["message_bytes"])):
        out.setdefault(p["kind"], []).append([float(p["message_bytes"]), p["busbw_gbps_median"]])
    return out
