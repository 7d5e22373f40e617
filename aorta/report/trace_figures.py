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
from dataclasses import replace
from pathlib import Path

import numpy as np

from aorta import stats
from aorta.fsdp import trace_analysis as ta
from aorta.fsdp.profiled_steps import step_figures
from aorta.fsdp.rank_figures import kernel_figures
from aorta.fsdp.rank_result import RankResult
from aorta.fsdp.trace_file import DeviceTrace, read_kineto_traces
from aorta.report.errors import ReportInputError
from aorta.timeline import plausible, rocprof, rocprof_read
from aorta.timeline.op_table import KINDS, LINKS, NONE, OpTable
from aorta.timeline.trace_events import COMM_KINDS
from aorta.timeline.trace_source import TraceFileError, open_source

WHOLE_TRACE = "no ProfilerStep#N ranges in the trace: the whole trace is one window"
UNKNOWN_DEVICE = "unknown"
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


def read_traces(path: str | Path) -> list[DeviceTrace]:
    """One file or folder, by what it holds: one trace per process (a rocprofv3 host folder holds every
    process of the host); ``ReportInputError`` naming it where it cannot be read. The file is opened once:
    its format is told from its first bytes and the reader goes on from the same stream (a pipe reads)."""
    p = Path(path)
    try:
        if p.is_dir():
            kind = rocprof.folder_format(p)
            if kind == rocprof.KINETO:  # every trace of the folder, each a rank named by its file
                return [t for f in rocprof.folder_files(p)[kind] for t in read_traces(f)]
            return _rocprof_traces(rocprof_read.read_processes(p, kind))
        with open_source(p) as source:
            kind = rocprof.sniff(source)
            if kind == rocprof.KINETO:
                return read_kineto_traces(source)
            if kind == rocprof.ROCPD:
                if not p.is_file():  # SQLite reads by seeking: a pipe cannot be a database
                    raise TraceFileError(
                        f"{p}: a rocpd SQLite database through a pipe: SQLite reads a file it can seek in; "
                        "name the .db file itself"
                    )
                return _rocprof_traces(rocprof_read.read_processes(p, kind))
            return _rocprof_traces(rocprof_read.read_processes(p, kind, source))
    except TraceFileError as exc:
        raise ReportInputError(str(exc)) from None


def _plausible(trace: DeviceTrace) -> DeviceTrace:
    """The trace without ops whose times no run can have (aorta/timeline/plausible.py), said in its note."""
    kept, note = plausible.implausible(trace.ops)
    if note is None:
        return trace
    said = "; ".join(x for x in (trace.reader_note, note) if x)
    return replace(trace, ops=kept, reader_note=said)


def _one_profiler_per_process(traces: Sequence[DeviceTrace]) -> None:
    """``ReportInputError`` where a Kineto trace and a rocprofv3 output are of the same process (its pid): the
    same GPU work recorded by two profilers, which would read as two ranks."""
    kineto = {t.host_pid: t for t in traces if t.source == "kineto" and t.host_pid is not None}
    for t in traces:
        if t.source != "kineto" and t.process in kineto:
            raise ReportInputError(
                f"{kineto[t.process].path} and {t.path} are the same process (pid {t.process}) recorded by two "
                "profilers (Kineto and rocprofv3), not two ranks: give one of them"
            )


def per_device(trace: DeviceTrace) -> list[DeviceTrace]:
    """One timeline per GPU: a process that ran work on several devices (Kineto ``args.device``, rocprofv3
    ``Agent_Id`` / ``agent_id``) gives one trace each, never their union (compute and idle of the union are
    neither GPU's). Ops that name no device go with the only device there is, else on a timeline of their own
    ("unknown"). Launches with no kernel in the trace name no device: they stay with the first GPU's."""
    ops = OpTable.of(trace.ops)
    codes = ops.columns["device"]
    used = np.unique(codes).tolist()
    values = {code: ops.tables.devices[code] for code in used if code != NONE}
    devices = sorted(set(values.values()), key=str)
    if len(devices) <= 1:
        return [replace(trace, ops=ops, device=devices[0] if devices else None)]
    groups: dict[int | str, list[int]] = {}
    for code in used:  # one device's codes: its value as the reader gave it (equal values are one device)
        groups.setdefault(values[code] if code != NONE else UNKNOWN_DEVICE, []).append(code)
    return [
        replace(
            trace,
            ops=ops.take(np.isin(codes, mine)),
            device=dev,
            missing_launches_us=trace.missing_launches_us if i == 0 else [],
        )
        for i, (dev, mine) in enumerate(sorted(groups.items(), key=lambda kv: str(kv[0])))
    ]


def rebased(traces: Sequence[DeviceTrace]) -> list[DeviceTrace]:
    """Every timeline moved by one common origin, the first op's start of all in the profiler's integer ns,
    so the figures across ranks are taken from times near 0 whatever the clock (a Kineto ``ts`` of 3.7e12 µs
    holds its ns only as the text's integer): the same figures for the ranks' own files and for their merge
    (``aorta trace merge``, which moves them by the same integers). Left as read where some op has no ns."""
    tables = [OpTable.of(t.ops) for t in traces]
    if not any(len(ops) for ops in tables) or not all(ops.columns["has_start_ns"].all() for ops in tables):
        return list(traces)
    origin_ns = min(int(ops.columns["start_ns"].min()) for ops in tables if len(ops))
    origin_us = origin_ns / 1e3

    def move(ops: OpTable) -> OpTable:
        c = ops.columns
        start_ns = c["start_ns"] - origin_ns
        return ops.with_columns(
            start_us=start_ns / 1e3, launch_us=c["launch_us"] - origin_us, start_ns=start_ns
        )

    def span(r):
        return (r[0] - origin_us, r[1] - origin_us) if r is not None else None

    return [
        replace(
            t,
            ops=move(ops),
            step_ranges=[span(r) for r in t.step_ranges],
            gpu_step_ranges=[span(r) for r in t.gpu_step_ranges],
            missing_launches_us=[x - origin_us for x in t.missing_launches_us],
        )
        for t, ops in zip(traces, tables)
    ]


def read_trace(path: str | Path) -> DeviceTrace:
    """One file of one process (``read_traces``); ``ReportInputError`` naming the pids where it holds several."""
    traces = read_traces(path)
    if len(traces) > 1:
        pids = ", ".join(str(t.process) for t in traces)
        raise ReportInputError(f"{path}: holds {len(traces)} processes (pids {pids}): read each as a rank")
    return traces[0]


def _rocprof_traces(traces: Sequence[rocprof.RocprofTrace]) -> list[DeviceTrace]:
    return [
        DeviceTrace(
            path=r.path,
            ops=r.ops,
            step_ranges=[],
            source=r.source,
            api_calls=r.api_calls,
            records=r.records,
            not_read=r.not_read,
            duplicates_dropped=sum(r.duplicates.get(k, 0) for k in ("KERNEL_DISPATCH", "MEMORY_COPY")),
            duplicate_events_dropped=sum(r.duplicates.values()),
            process=r.process if len(traces) > 1 or r.process is not None else None,
            reader_note=rocprof.apart_note(r),
        )
        for r in traces
    ]


def _kernels(figs: dict) -> int:
    return int(sum(figs["kernel_count_by_kind"].values()))


def rank_figures(
    trace: DeviceTrace, rank: int, world_size: int = 1, *, with_timeline: bool = True
) -> tuple[dict, RankResult]:
    """One file's figures (the JSON's per-rank entry) and the rank's result for the cross-rank split.
    ``world_size``: the ranks a collective spans where its kernels do not say (busbw's factor);
    ``with_timeline``: False for a trace read alone (no split across ranks: its steps' ops are not held)."""
    n = len(trace.step_ranges)
    ops = OpTable.of(trace.ops)
    codes, first, counts = np.unique(ops.columns["link"], return_index=True, return_counts=True)
    linked = {
        LINKS[c] or "none": int(n_) for c, _, n_ in sorted(zip(codes, first, counts), key=lambda x: x[1])
    }
    entry: dict = {
        "rank": rank,
        "path": str(trace.path),
        "reader": trace.source,
        "ops": len(ops),
        "kernels": int((ops.columns["category"] == 0).sum()),
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
    if trace.process is not None:
        entry["process"] = trace.process
    if trace.device is not None:
        entry["device"] = trace.device
    if trace.merged_rank is not None:
        entry["merged_rank"] = trace.merged_rank  # one rank of a merged file (aorta trace merge)
    note: str | None
    reason: str | None
    if not len(ops):
        per_step, timeline, reason, note = None, None, _no_device_work(trace), None
    elif n:
        per_step, timeline, reason, note = step_figures(
            ops,
            trace.step_ranges,
            n,
            world_size,
            missing_launches_us=trace.missing_launches_us,
            gpu_ranges=trace.gpu_step_ranges,
            step_numbers=trace.step_numbers,
            with_timeline=with_timeline,
        )
        numbers = trace.step_numbers[-n:] if len(trace.step_numbers) >= n else list(range(n))
        for figs in per_step or []:  # the step's number N of ProfilerStep#N: what ranks are paired by
            figs["step"] = numbers[figs["step"]]
    else:
        figs = ta.analyze(ops, steps=1, n_ranks=world_size).as_dict()
        figs.update(
            step=0, linked_by=entry["linked_by"], launches_without_kernel=entry["launches_without_kernel"]
        )
        per_step, timeline, reason, note = [figs], None, None, WHOLE_TRACE
        if trace.missing_launches_us:
            note += (
                f"; {len(trace.missing_launches_us)} kernel launches with no kernel in the trace (the profiler lost "
                "their records: the figures miss that work)"
            )
    dropped = trace.duplicate_events_dropped if trace.source != "kineto" else trace.duplicates_dropped
    said = (
        note,
        trace.reader_note,
        f"{dropped} duplicated {'rows' if trace.source != 'kineto' else 'device ops'} dropped (each kept once)"
        if dropped
        else None,
    )
    entry.update(steps=per_step or [], per_step_reason=reason, note="; ".join(x for x in said if x) or None)
    queues = rocprof.queue_figures(ops)
    if queues:
        entry["hardware_queues"] = queues
    return entry, RankResult(rank=rank, per_step=per_step, per_step_reason=reason, timeline=timeline)


def _no_device_work(trace: DeviceTrace) -> str:
    launches = trace.launch_calls or len(trace.missing_launches_us)
    if launches:
        return (
            f"the trace holds {launches} kernel launches but no kernel, copy or memset: the profiler recorded the "
            "host only (torch.profiler needs ProfilerActivity.CUDA, which is HIP on ROCm, for device work)"
        )
    return "the trace holds no device work (no kernel, copy or memset)"


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
    """The figures of every file given (one rank each; a rocprofv3 host folder gives one rank per process),
    and across ranks where more than one."""
    if not paths:
        raise ReportInputError("no trace given: name one trace file per rank")
    read = [t for p in paths for t in read_traces(p)]
    _one_profiler_per_process(read)
    # plausibility per device timeline: one GPU on another clock is not judged by the other's median start
    traces = rebased([_plausible(d) for t in read for d in per_device(t)])
    entries, results = [], []
    ranks, rule = _ranks(traces)
    if any(t.process is not None for t in traces):
        rule += "; a rocprofv3 folder of several processes gives one rank per process, in pid order"
    if len(traces) > len(read):
        several = [f"{t.path} ({len(per_device(t))} devices)" for t in read if len(per_device(t)) > 1]
        rule += (
            "; one timeline per device: a process that ran on several GPUs gives one entry per GPU, in device "
            f"order ({', '.join(several)}); figures across them are those of a collective's participants"
        )
    for trace, rank in zip(traces, ranks):
        entry, result = rank_figures(
            trace, rank, trace.world_size or len(traces), with_timeline=len(traces) > 1
        )
        entries.append(entry)
        results.append(result)
    out: dict = {"ranks": entries, "ranks_from": rule}
    comm = [KINDS.index(k) for k in COMM_KINDS]
    if len(traces) > len(read) and not any(
        np.isin(OpTable.of(t.ops).kind_codes(), comm).any() for t in traces
    ):
        out["across_ranks"] = {  # wait vs transfer is read from collectives: GPUs without one share nothing
            "reason": "one timeline per GPU, and no collective in any of them (wait vs transfer is read from "
            "collectives): no figure across them"
        }
        return out
    usable = [r for r in results if r.per_step]
    if len(results) > 1 and len(usable) == len(results):
        paired, pairing = pair_steps(results)
        if not any(t.step_ranges for t in traces):
            pairing = "no ProfilerStep#N ranges: each rank's whole trace is one window"
        if not paired:
            out["across_ranks"] = {"reason": pairing}
            return out
        metrics, unavailable, details = kernel_figures(paired)
        out["across_ranks"] = {
            "metrics": {
                m.name: {"value": m.value, "unit": m.unit, "samples": list(m.samples)} for m in metrics
            },
            "unavailable": unavailable,
            "clock_alignment": details.get("clock_alignment"),
            "wait_vs_transfer": details.get("wait_vs_transfer", "split into wait and transfer"),
            "transfer_busbw": details.get("transfer_busbw"),
            "steps_paired": pairing,
        }
    elif len(results) > 1:
        out["across_ranks"] = {
            "reason": "a rank has no per-step figures: "
            + "; ".join(f"rank {e['rank']}: {e['per_step_reason']}" for e in entries if not e["steps"])
        }
    return out


def pair_steps(results: Sequence[RankResult]) -> tuple[list[RankResult], str]:
    """Every rank's steps cut to the step numbers (``ProfilerStep#N``) that all ranks have, in order, so that
    step i of one rank is compared with step i of another; and the sentence saying which steps each rank
    lacks. [] where no step number is in every rank."""
    numbers = [[int(s["step"]) for s in r.per_step or []] for r in results]
    common = set(numbers[0]).intersection(*numbers[1:])
    every = sorted(set().union(*numbers))
    lacking = [
        f"rank {r.rank} lacks step{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))}"
        for r, n in zip(results, numbers)
        if (gone := sorted(set(every) - set(n)))
    ]
    said = f"steps paired by number (ProfilerStep#N): {len(common)} in every rank"
    said += f" ({'; '.join(lacking)}: left out)" if lacking else ""
    if not common:
        return [], f"no step number is in every rank ({'; '.join(lacking)})"
    return [_only_steps(r, n, common) for r, n in zip(results, numbers)], said


def _only_steps(result: RankResult, numbers: list[int], common: set[int]) -> RankResult:
    keep = [i for i, n in enumerate(numbers) if n in common]
    if len(keep) == len(numbers):
        return result
    t, place = result.timeline, {old: new for new, old in enumerate(keep)}
    timeline = (
        {
            "comm": [replace(c, step=place[c.step]) for c in t["comm"] if c.step in place],
            **{k: [t[k][i] for i in keep] for k in ("compute_us", "copy_us", "window_us") if k in t},
        }
        if t
        else None
    )
    return replace(result, per_step=[(result.per_step or [])[i] for i in keep], timeline=timeline)


def _f(v: float | None, spec: str = "9.3f") -> str:
    return "-" if v is None else format(v, spec)


def format_figures(result: dict, *, steps: bool = False) -> list[str]:
    """The terminal table: one row per rank (the median over its steps), or per step with ``steps``."""
    head = (
        f"{'rank':>4} {'step':>5} {'kernels':>8} {'compute':>9} {'comm':>9} {'copy':>9} {'overlap':>7} "
        f"{'exposed':>9} {'idle':>9}  linked by"
    )
    lines = [head + "   (ms per step; overlap = overlapped / comm busy)"]
    shared = Counter(
        (e["path"], e.get("process"), e.get("merged_rank")) for e in result["ranks"]
    )  # a process's timelines, one per GPU
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
        if e.get("process") is not None:
            lines.append(f"      rank {e['rank']}: process {e['process']} of {e['path']}")
        if e.get("merged_rank") is not None:
            lines.append(f"      rank {e['rank']}: rank {e['merged_rank']} of the merged {e['path']}")
        if e.get("device") is not None and shared[(e["path"], e.get("process"), e.get("merged_rank"))] > 1:
            lines.append(f"      rank {e['rank']}: device {e['device']} (one timeline per GPU)")
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
        if across.get("steps_paired"):
            lines.append(across["steps_paired"])
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
