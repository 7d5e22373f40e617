"""Kernel-timestamp figures of every rank, step by step -> the scenario's judged and reported metrics
(pure: no torch).

Each rank sends rank 0 its profiled steps' figures (``per_step``: ``trace_analysis.analyze`` of each
step's kernels) and, under ``timeline``, its communication kernels and compute intervals per step. Rank 0
matches the collectives across ranks (``collective_match``), splits each rank's step into compute only /
overlapped / exposed transfer / exposed wait / idle (``wait_transfer``), and names the straggler.

Every figure has one sample per profiled step. The headline figures are the **worst rank** at each step
(the lowest overlap ratio, the highest exposed transfer ...), named ``*_worst_rank``; every rank's own
steps are in the record (``per_rank_steps``). What the gate judges (each against its own measured
between-run noise): exposed communication and its transfer part, the transfer time itself (hidden or not:
it moves with the link and the collectives' settings, and on 2x H200 it varied about 1% between fresh
processes where exposed transfer varied 10-15%), and compute busy, beside step time.
Overlap ratio is reported, not judged: it rises when communication slows and more of it hides. Exposed wait
(launch skew between ranks), comm busy and kernel-time busbw include waiting for the slowest peer and are
reported only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aorta import stats
from aorta.fsdp import collective_match as cm
from aorta.fsdp import wait_transfer as wt
from aorta.fsdp.link_ceiling import transfer_busbw
from aorta.fsdp.rank_result import RankResult
from aorta.fsdp.split_resolution import split_resolution
from aorta.record.metric import Metric
from aorta.record.rank_breakdown import worst_per_step

COLLECTIVES = ("all_gather", "reduce_scatter", "all_reduce")
WAIT_NOTE = "includes time waiting for the slowest peer (launch skew): reported, not judged"
# (figure in wait_transfer.RankStep, metric unit, higher_is_better, judged, source note)
BREAKDOWN_FIGURES = (
    (
        "overlap_ratio",
        "ratio",
        True,
        False,
        "overlapped / comm busy: reported, not judged (it rises when communication slows and more of it hides)",
    ),
    ("exposed_transfer_ms", "ms/step", False, True, "communication past its wait, not hidden by compute"),
    (
        "exposed_wait_ms",
        "ms/step",
        False,
        False,
        "waiting for peers, not hidden by compute: skew, not judged",
    ),
    ("exposed_comm_ms", "ms/step", False, True, "communication not hidden by compute: transfer + wait"),
    (
        "transfer_ms",
        "ms/step",
        False,
        True,
        "communication kernel time past its wait for peers, hidden or not: what the link costs per step",
    ),
    ("comm_busy_ms", "ms/step", False, False, WAIT_NOTE),
    ("overlapped_ms", "ms/step", True, False, "reported"),
    ("compute_only_ms", "ms/step", False, False, "reported"),
    ("idle_ms", "ms/step", False, False, "no kernel running: host-bound share, reported"),
)
SINGLE_RANK_FIGURES = (  # from each rank's own per-step analysis (no matching needed)
    ("compute_busy_ms", "compute_busy_ms", "ms/step", False, True),
)


def _metric(name, samples, unit, higher, judged, source) -> Metric:
    """A figure per profiled step; those in ms/step are parts of the step (the gate bounds their MDE by
    their share of it: aorta.gate.verdicts.verdict.part_bound)."""
    return Metric(
        name,
        stats.median(samples),
        unit,
        higher,
        tuple(samples),
        source=source,
        judged=judged,
        part_of_step=unit == "ms/step",
    )


def _single_rank_steps(rank: int, per_step: Sequence[Mapping]) -> list[wt.RankStep]:
    """One rank alone (no peers to wait for): all its communication is transfer."""
    out = []
    for i, s in enumerate(per_step):
        ov = s["overlapped_ms"]
        out.append(
            wt.RankStep(
                rank=rank,
                step=i,
                compute_only_ms=s["compute_busy_ms"] - ov,
                overlapped_ms=ov,
                exposed_transfer_ms=s["exposed_comm_ms"],
                exposed_wait_ms=0.0,
                idle_ms=s["idle_ms"],
                transfer_ms=s["comm_busy_ms"],
                wait_ms=0.0,
                window_ms=s["window_ms"],
                copy_only_ms=s.get("copy_only_ms", 0.0),
            )
        )
    return out


def kernel_figures(ranks: Sequence[RankResult]) -> tuple[list[Metric], dict[str, str], dict]:
    """(metrics, unavailable with reasons, details for the record) from every rank's result."""
    names = [f"{f}_worst_rank" for f, *_ in BREAKDOWN_FIGURES] + [
        *(f"{n}_worst_rank" for n, *_ in SINGLE_RANK_FIGURES),
        *(f"{c}_busbw_gbps_worst_rank" for c in COLLECTIVES),
    ]
    missing = [r for r in ranks if not r.per_step]
    if missing:
        reason = missing[0].overlap_reason or missing[0].per_step_reason or "no profiled steps"
        return [], dict.fromkeys(names, f"rank {missing[0].rank}: {reason}"), {}
    by_rank = {r.rank: r for r in ranks}
    details: dict = {"aggregate": "worst rank at each profiled step; every rank's steps in per_rank_steps"}
    timelines = {rank: r.timeline for rank, r in by_rank.items()}
    if len(by_rank) > 1 and all(timelines.values()):
        matching = cm.match({rank: t["comm"] for rank, t in timelines.items() if t is not None})
        matched_ok = matching.available and not matching.problems
    else:
        matching, matched_ok = None, False
    per_rank: dict[int, list[wt.RankStep]] = {}
    for rank, r in by_rank.items():
        t = timelines[rank]
        if matching is not None and matched_ok and t:
            per_rank[rank] = wt.rank_steps(
                rank, matching, t["compute_us"], t["window_us"], copy_us_by_step=t.get("copy_us")
            )
        else:
            per_rank[rank] = _single_rank_steps(rank, r.per_step or [])
    unavailable: dict[str, str] = {}
    if len(by_rank) > 1 and not matched_ok:
        why = "; ".join(matching.problems) if matching else "no per-step kernel timelines from every rank"
        details["wait_vs_transfer"] = f"not split: {why} (all communication counted as transfer)"
    if matching is not None:
        details["clock_alignment"] = {
            "offset_us": {str(k): v for k, v in matching.offset_us.items()},
            "alignment_error_us": matching.alignment_error_us,
            "matched_collectives": len(matching.collectives),
            "problems": list(matching.problems),
        }
        resolution = (
            split_resolution(matching, {r: t["compute_us"] for r, t in timelines.items() if t})
            if matched_ok
            else None
        )
        if resolution is not None:
            details["split_resolution"] = resolution.as_dict()
        if matched_ok:  # busbw from transfer time (not kernel time, which includes waiting for peers)
            details["transfer_busbw"] = transfer_busbw(matching.collectives, len(by_rank))
        steps = min(len(v) for v in per_rank.values())
        details["stragglers"] = [s.as_dict() if s else None for s in wt.stragglers(matching, steps)]
    details["per_rank_steps"] = {str(rank): [s.as_dict() for s in v] for rank, v in per_rank.items()}

    metrics: list[Metric] = []
    for figure, unit, higher, judged, source in BREAKDOWN_FIGURES:
        samples = wt.worst_per_step(per_rank, figure, higher_is_better=higher)
        name = f"{figure}_worst_rank"
        if samples:
            metrics.append(_metric(name, samples, unit, higher, judged, f"{source}; worst rank per step"))
        else:
            unavailable[name] = "no communication kernels in the profiled steps"
    for key, figure, unit, higher, judged in SINGLE_RANK_FIGURES:
        per = [[s[key] for s in r.per_step or []] for r in ranks]
        samples = [float(v) for v in worst_per_step(per, higher_is_better=higher)]
        metrics.append(_metric(f"{figure}_worst_rank", samples, unit, higher, judged, "worst rank per step"))
    for kind in COLLECTIVES:
        per = [[(s.get("busbw_gbps") or {}).get(kind) for s in r.per_step or []] for r in ranks]
        samples = [float(v) for v in worst_per_step(per, higher_is_better=True)]
        name = f"{kind}_busbw_gbps_worst_rank"
        if samples:
            metrics.append(_metric(name, samples, "GB/s", True, False, f"bytes / kernel time, {WAIT_NOTE}"))
        else:
            unavailable[name] = f"no {kind} kernels with message sizes in the profiled steps"
    return metrics, unavailable, details
