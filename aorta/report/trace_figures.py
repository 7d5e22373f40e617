"""``aorta trace figures``: the FSDP suite's figures from a user's own traces (pure: no torch).

Each file is one rank: a Kineto Chrome trace (``torch.profiler``, gzipped or not) or a rocprofv3 output (its
CSV files, or the rocpd SQLite database; aorta/timeline/rocprof.py). Per step and rank, the figures the FSDP
suite computes with the same code (aorta/fsdp/profiled_steps.py, trace_analysis.py): kernels, compute /
communication / copy busy, overlap, exposed communication, idle, busbw per collective kind; across ranks
(several files) the wait vs transfer split with the clock-alignment error (aorta/fsdp/rank_figures.py). A
trace without ``ProfilerStep#N`` ranges is one window. How each op was placed in its step (correlation id,
flow event, device start) is said per step; rocprofv3 outputs add figures per hardware queue.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from aorta import stats
from aorta.fsdp import trace_analysis as ta
from aorta.fsdp.profiled_steps import step_figures
from aorta.fsdp.rank_figures import kernel_figures
from aorta.fsdp.rank_result import RankResult
from aorta.fsdp.trace_file import DeviceTrace, read_kineto_trace
from aorta.report.errors import ReportInputError
from aorta.timeline import rocprof
from aorta.timeline.trace_events import TraceFileError

WHOLE_TRACE = "no ProfilerStep#N ranges in the trace: the whole trace is one window"
STEP_KEYS = (
    "window_ms",
    "compute_busy_ms",
    "comm_busy_ms",
    "copy_busy_ms",
    "overlapped_ms",
    "exposed_comm_ms",
    "idle_ms",
    "overlap_ratio",
)


def read_trace(path: str | Path) -> DeviceTrace:
    """One file, by what it holds; ``ReportInputError`` naming it where it cannot be read."""
    p = Path(path)
    try:
        kind = rocprof.format_of(p)
        if kind == rocprof.KINETO:
            return read_kineto_trace(p)
        r = rocprof.read(p, kind)
    except (TraceFileError, rocprof.RocprofFileError) as exc:
        raise ReportInputError(str(exc)) from None
    return DeviceTrace(
        path=p,
        ops=r.ops,
        step_ranges=[],
        source=r.source,
        api_calls=r.api_calls,
        records=r.records,
        not_read=r.not_read,
    )


def _kernels(figs: dict) -> int:
    return int(sum(figs["kernel_count_by_kind"].values()))


def rank_figures(trace: DeviceTrace, rank: int, world_size: int = 1) -> tuple[dict, RankResult]:
    """One file's figures (the JSON's per-rank entry) and the rank's result for the cross-rank split.
    ``world_size``: the ranks a collective spans where its kernels do not say (busbw's factor)."""
    n = len(trace.step_ranges)
    linked = Counter(op.link or "none" for op in trace.ops)
    entry: dict = {
        "rank": rank,
        "path": str(trace.path),
        "reader": trace.source,
        "ops": len(trace.ops),
        "kernels": sum(op.category == "kernel" for op in trace.ops),
        "linked_by": dict(sorted(linked.items())),
        "duplicates_dropped": {
            "device_ops": trace.duplicates_dropped,
            "events": trace.duplicate_events_dropped,
        },
        "launches_without_kernel": len(trace.missing_launches_us),
        "profiler_steps": n,
    }
    if trace.records:
        entry["records"] = dict(trace.records)
    if trace.not_read:
        entry["files_not_read"] = list(trace.not_read)  # e.g. agent_info.csv: no trace record in it
    if trace.api_calls:
        entry["api_calls"] = dict(trace.api_calls)
    if n:
        per_step, timeline, reason, note = step_figures(
            trace.ops,
            trace.step_ranges,
            n,
            world_size,
            missing_launches_us=trace.missing_launches_us,
            gpu_ranges=trace.gpu_step_ranges,
        )
    else:
        figs = ta.analyze(trace.ops, steps=1, n_ranks=world_size).as_dict() if trace.ops else None
        if figs is not None:
            figs.update(
                step=0, linked_by=entry["linked_by"], launches_without_kernel=entry["launches_without_kernel"]
            )
        per_step, timeline, reason, note = ([figs] if figs else None), None, None, WHOLE_TRACE
        if figs is None:
            reason = "the trace holds no device work (no kernel, copy or memset)"
        if trace.missing_launches_us:
            note += (
                f"; {len(trace.missing_launches_us)} kernel launches with no kernel in the trace (the profiler lost "
                "their records: the figures miss that work)"
            )
    entry.update(steps=per_step or [], per_step_reason=reason, note=note)
    if trace.duplicates_dropped:
        entry["note"] = "; ".join(
            x
            for x in (note, f"{trace.duplicates_dropped} duplicated device ops dropped (each kept once)")
            if x
        )
    queues = rocprof.queue_figures(trace.ops)
    if queues:
        entry["hardware_queues"] = queues
    return entry, RankResult(rank=rank, per_step=per_step, per_step_reason=reason, timeline=timeline)


def _ranks(traces: Sequence[DeviceTrace]) -> tuple[list[int], str]:
    """Each file's rank (``distributedInfo.rank``, else its place on the command line) and the rule used."""
    ranks = [t.rank if t.rank is not None else i for i, t in enumerate(traces)]
    if len(set(ranks)) == len(ranks):
        return ranks, "distributedInfo.rank where the trace has it, else the file's place on the command line"
    # files from single-rank runs name rank 0 each: by place, and said
    return list(
        range(len(traces))
    ), "the files' places on the command line (their distributedInfo.rank repeat)"


def figures(paths: Sequence[str | Path]) -> dict:
    """The figures of every file given (one rank each), and across ranks where more than one."""
    if not paths:
        raise ReportInputError("no trace given: name one trace file per rank")
    traces = [read_trace(p) for p in paths]
    entries, results = [], []
    ranks, rule = _ranks(traces)
    for trace, rank in zip(traces, ranks):
        entry, result = rank_figures(trace, rank, trace.world_size or len(traces))
        entries.append(entry)
        results.append(result)
    out: dict = {"ranks": entries, "ranks_from": rule}
    usable = [r for r in results if r.per_step]
    if len(results) > 1 and len(usable) == len(results):
        metrics, unavailable, details = kernel_figures(results)
        out["across_ranks"] = {
            "metrics": {
                m.name: {"value": m.value, "unit": m.unit, "samples": list(m.samples)} for m in metrics
            },
            "unavailable": unavailable,
            "clock_alignment": details.get("clock_alignment"),
            "wait_vs_transfer": details.get("wait_vs_transfer", "split into wait and transfer"),
            "transfer_busbw": details.get("transfer_busbw"),
        }
    elif len(results) > 1:
        out["across_ranks"] = {
            "reason": "a rank has no per-step figures: "
            + "; ".join(f"rank {e['rank']}: {e['per_step_reason']}" for e in entries if not e["steps"])
        }
    return out


def _f(v: float | None, spec: str = "9.3f") -> str:
    return "-" if v is None else format(v, spec)


def format_figures(result: dict, *, steps: bool = False) -> list[str]:
    """The terminal table: one row per rank (the median over its steps), or per step with ``steps``."""
    head = (
        f"{'rank':>4} {'step':>5} {'kernels':>8} {'compute':>9} {'comm':>9} {'copy':>9} {'overlap':>7} "
        f"{'exposed':>9} {'idle':>9}  linked by"
    )
    lines = [head + "   (ms per step; overlap = overlapped / comm busy)"]
    for e in result["ranks"]:
        rows = e["steps"]
        if steps:
            for s in rows:
                lines.append(_row(e["rank"], str(s.get("step", "")), s))
        elif rows:
            med: dict = {k: _median([s.get(k) for s in rows]) for k in STEP_KEYS}
            med["kernel_count_by_kind"] = {"all": _median([_kernels(s) for s in rows])}
            med["linked_by"] = e["linked_by"]
            lines.append(_row(e["rank"], f"med{len(rows)}", med))
        if not rows:
            lines.append(f"{e['rank']:>4}  no figures: {e['per_step_reason']}")
        for key in ("note", "per_step_reason"):
            if e.get(key) and rows:
                lines.append(f"      rank {e['rank']}: {e[key]}")
        for q in e.get("hardware_queues", []):
            lines.append(
                f"      queue {q['queue']}: {q['kernels']} kernels, busy {q['busy_ms']:.4f} ms, "
                f"streams {q['streams']}"
            )
        if e.get("hardware_queues"):
            lines.append(f"      hardware queues used: {len(e['hardware_queues'])}")
    across = result.get("across_ranks")
    if across and "metrics" in across:
        m = across["metrics"]
        align = across.get("clock_alignment") or {}
        lines.append(
            "across ranks (worst rank per step, median): "
            + ", ".join(f"{k} {_f(v['value'], '.3f')}" for k, v in m.items() if v["value"] is not None)
        )
        if align:
            lines.append(
                f"clock alignment error {_f(align.get('alignment_error_us'), '.3f')} µs over "
                f"{align.get('matched_collectives')} matched collectives; {across['wait_vs_transfer']}"
            )
    elif across:
        lines.append(f"across ranks: {across['reason']}")
    return lines


def _median(values: Sequence[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return stats.median(vals) if vals else None


def _row(rank: int, step: str, s: dict) -> str:
    linked = ", ".join(f"{k} {v}" for k, v in sorted((s.get("linked_by") or {}).items()))
    kernels = sum((s.get("kernel_count_by_kind") or {}).values())
    return (
        f"{rank:>4} {step:>5} {kernels:>8g} {_f(s.get('compute_busy_ms'))} {_f(s.get('comm_busy_ms'))} "
        f"{_f(s.get('copy_busy_ms'))} {_f(s.get('overlap_ratio'), '7.3f')} {_f(s.get('exposed_comm_ms'))} "
        f"{_f(s.get('idle_ms'))}  {linked}"
    )
