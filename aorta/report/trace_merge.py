"""Merge per-rank profiler traces into one Chrome/Perfetto trace, and diagnose rank asymmetry (pure: no torch).

Inputs are Chrome trace JSON files written by ``torch.profiler`` (``*.pt.trace.json`` in TensorBoard
folders, ``export_chrome_trace`` files, optionally gzipped). In the merged trace every rank is one
process (``pid`` = rank, ``process_name`` "rank N"); each of its original (process, thread) tracks,
CPU threads and GPU streams alike, becomes one thread of that process, named after the original.

Alignment (``align``), the rule the merged trace records under ``otherData.aorta_merge``:

- ``base-time``: Kineto writes ``baseTimeNanoseconds`` and event times in µs after it, so
  ``base_ns / 1000 + ts`` is wall-clock time. Ranks keep their true skew; only one offset, the
  earliest event of all, is taken off. Right for ranks on one host (one clock); across hosts it is
  only as good as their clock sync.
- ``first-step``: each rank is shifted so that the start of the first ``ProfilerStep#N`` that every
  rank recorded is 0; without common steps, each rank's first GPU kernel is 0; without kernels, its
  first event. Lines ranks up step by step whatever their clocks; hides a late start.
- ``auto`` (default): ``base-time`` when every trace has ``baseTimeNanoseconds``, else ``first-step``.

Rank of a trace: its ``distributedInfo.rank`` if present, else a ``rank<N>`` / ``rank_<N>`` in its
path, else its position on the command line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from aorta import stats
from aorta.report.errors import ReportInputError
from aorta.timeline import overlap, trace_events
from aorta.timeline.device_identity import MERGE_KEY, kineto_device, kineto_stream
from aorta.timeline.launch_links import launch_links
from aorta.timeline.profiler_steps import profiler_steps
from aorta.timeline.trace_json import ns_of

ALIGN_RULES = ("auto", "base-time", "first-step")
RANK_IN_PATH = re.compile(r"rank[_-]?(\d+)", re.IGNORECASE)
DEFAULT_THRESHOLD_RATIO = 0.10


@dataclass
class RankTrace:
    rank: int
    path: Path
    doc: dict

    @property
    def events(self) -> list[dict]:
        return self.doc["traceEvents"]


def load_trace(path: str | Path) -> dict:
    """One Chrome trace with at least one complete event; ``ReportInputError`` naming the file otherwise."""
    try:
        doc = trace_events.load_trace(path)
    except trace_events.TraceFileError as exc:
        raise ReportInputError(str(exc)) from None
    if not any(isinstance(e, dict) and e.get("ph") == "X" for e in doc["traceEvents"]):
        raise ReportInputError(
            f"{path}: trace holds no complete ('X') events; was the profiler window empty?"
        )
    return doc


def _rank_of(doc: dict, path: Path, position: int) -> int:
    info = doc.get("distributedInfo")
    if isinstance(info, dict) and isinstance(info.get("rank"), int):
        return info["rank"]
    m = RANK_IN_PATH.findall(str(path))
    return int(m[-1]) if m else position


def load_rank_traces(paths: list[str | Path]) -> list[RankTrace]:
    if not paths:
        raise ReportInputError("no rank traces given")
    traces = []
    seen: dict[int, Path] = {}
    for i, path in enumerate(paths):
        p = Path(path)
        doc = load_trace(p)
        rank = _rank_of(doc, p, i)
        if rank in seen:
            raise ReportInputError(f"{p}: rank {rank} again (also {seen[rank]}); give one trace per rank")
        seen[rank] = p
        traces.append(RankTrace(rank, p, doc))
    return sorted(traces, key=lambda t: t.rank)


def _complete(events) -> list[dict]:
    return [
        e
        for e in events
        if isinstance(e, dict) and e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))
    ]


is_kernel, is_comm_kernel = trace_events.is_kernel, trace_events.is_comm_kernel


def _ns(ts: object) -> int:
    """A time in µs as integer ns: the JSON text's own where it holds them (aorta/timeline/trace_json.py),
    else rounded (a time finer than the ns)."""
    ns = ns_of(ts)
    return ns if ns is not None else round(float(ts) * 1e3)  # type: ignore[arg-type]


def reference_points_ns(traces: list[RankTrace], align: str) -> tuple[dict[int, int], str]:
    """Per rank, the time (integer ns, in the rank's own clock) that becomes its origin; and the rule applied.
    Integers throughout: a Kineto ``ts`` of 3.7e12 µs minus a float shift lost the ns the figures read."""
    if align not in ALIGN_RULES:
        raise ReportInputError(f"--align {align!r}: allowed {', '.join(ALIGN_RULES)}")
    has_base = all(isinstance(t.doc.get("baseTimeNanoseconds"), int) for t in traces)
    if align == "base-time" and not has_base:
        missing = [str(t.path) for t in traces if not isinstance(t.doc.get("baseTimeNanoseconds"), int)]
        raise ReportInputError(f"--align base-time: no baseTimeNanoseconds in {', '.join(missing)}")
    if align in ("auto", "base-time") and has_base:
        low = min(t.doc["baseTimeNanoseconds"] for t in traces)
        rel_ns = {t.rank: t.doc["baseTimeNanoseconds"] - low for t in traces}
        origin = min(min(_ns(e["ts"]) for e in _complete(t.events)) + rel_ns[t.rank] for t in traces)
        return (
            {t.rank: origin - rel_ns[t.rank] for t in traces},
            "base-time: baseTimeNanoseconds/1000 + ts, earliest event of all ranks = 0",
        )
    steps = {t.rank: profiler_steps(t.events) for t in traces}
    common = set.intersection(*(set(s) for s in steps.values())) if steps else set()
    if common:
        n = min(common)
        return (
            {r: _ns(s[n]["ts"]) for r, s in steps.items()},
            f"first-step: start of ProfilerStep#{n} on every rank = 0",
        )
    refs = {}
    for t in traces:
        kernels = [e["ts"] for e in _complete(t.events) if is_kernel(e)]
        refs[t.rank] = min(map(_ns, kernels)) if kernels else min(_ns(e["ts"]) for e in _complete(t.events))
    return (
        refs,
        "first-step: no ProfilerStep common to all ranks; each rank's first kernel (else first event) = 0",
    )


def reference_points_us(traces: list[RankTrace], align: str) -> tuple[dict[int, float], str]:
    """``reference_points_ns`` in µs."""
    refs, rule = reference_points_ns(traces, align)
    return {r: ns / 1e3 for r, ns in refs.items()}, rule


def shifted(ts: object, shift_ns: int) -> float:
    """``ts`` (µs) less ``shift_ns``, taken in integer ns where the text held them: the result, near 0, is a
    float that holds its ns exactly (read back by ``ns_of`` to the same integer)."""
    ns = ns_of(ts)
    if ns is None:
        return float(ts) - shift_ns / 1e3  # type: ignore[arg-type]
    return (ns - shift_ns) / 1e3


def _track_names(events) -> tuple[dict, dict]:
    """Original process names (Kineto's ``process_labels`` such as "GPU 0" preferred) and thread names."""
    names, labels, threads = {}, {}, {}
    for e in events:
        if isinstance(e, dict) and e.get("ph") == "M":
            args = e.get("args") or {}
            if e.get("name") == "process_name" and args.get("name"):
                names[e.get("pid")] = args["name"]
            elif e.get("name") == "process_labels" and args.get("labels"):
                labels[e.get("pid")] = args["labels"]
            elif e.get("name") == "thread_name" and args.get("name"):
                threads[(e.get("pid"), e.get("tid"))] = args["name"]
    return {**names, **labels}, threads


def _flow_id(rank: int, flow_id):
    """Flow ids are unique within one trace only: move each rank's into its own range (kept numeric, as
    Kineto writes them and trace viewers expect), or prefix a non-numeric one with the rank."""
    if isinstance(flow_id, int) or (isinstance(flow_id, str) and flow_id.isdigit()):
        return (rank << 40) + int(flow_id)
    return f"rank{rank}:{flow_id}"


def _shifted_event(e: dict, shift_ns: int) -> dict:
    new = dict(e)
    if _is_number(e.get("ts")):
        new["ts"] = shifted(e["ts"], shift_ns)
    return new


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _rank_events(t: RankTrace, shift_ns: int) -> list[dict]:
    """One rank's events as one process of the merge (``pid`` = rank), each original track a thread of it.
    A device event keeps what identified it in its own trace: its device (``args.device``, else the pid it
    was on: Kineto's device) and its stream (``args.stream``, else its tid)."""
    procs, threads = _track_names(t.events)
    tids: dict[tuple, int] = {}
    out = [
        {"ph": "M", "name": "process_name", "pid": t.rank, "tid": 0, "args": {"name": f"rank {t.rank}"}},
        {"ph": "M", "name": "process_sort_index", "pid": t.rank, "tid": 0, "args": {"sort_index": t.rank}},
        {
            "ph": "M",
            "name": "process_labels",
            "pid": t.rank,
            "tid": 0,
            "args": {"labels": f"rank {t.rank}: {t.path.name}"},
        },
    ]
    body = []
    for e in t.events:
        if not isinstance(e, dict) or e.get("name") in (
            "process_name",
            "process_labels",
            "process_sort_index",
        ):
            continue
        key = (e.get("pid"), e.get("tid"))
        tid = tids.setdefault(key, len(tids) + 1)
        if e.get("ph") == "M" and e.get("name") in ("thread_name", "thread_sort_index"):
            continue  # re-emitted below for the new tid
        new = _shifted_event(e, shift_ns)
        new.update(pid=t.rank, tid=tid)
        if trace_events.str_category(e) in trace_events.DEVICE_CATEGORIES:
            args = dict(e.get("args") or {})
            args["device"] = kineto_device(e)
            args["stream"] = kineto_stream(e)
            new["args"] = args
        if "id" in e and e.get("ph") in ("s", "t", "f"):
            new["id"] = _flow_id(t.rank, e["id"])
        body.append(new)
    for (pid, tid), new_tid in tids.items():
        proc = procs.get(pid, f"pid {pid}")
        out.append(
            {
                "ph": "M",
                "name": "thread_name",
                "pid": t.rank,
                "tid": new_tid,
                "args": {"name": f"{proc} / {threads.get((pid, tid), f'tid {tid}')}"},
            }
        )
        out.append(
            {
                "ph": "M",
                "name": "thread_sort_index",
                "pid": t.rank,
                "tid": new_tid,
                "args": {"sort_index": new_tid},
            }
        )
    return out + body


def _distributed_info(t: RankTrace) -> dict:
    info = t.doc.get("distributedInfo")
    return {**(info if isinstance(info, dict) else {}), "rank": t.rank}


def merge(traces: list[RankTrace], align: str = "auto") -> dict:
    """The merged Chrome trace; ``otherData.aorta_merge`` records the alignment rule and, per rank, its
    source, shift (integer ns), pid in the merge and ``distributedInfo``: what ``aorta trace figures`` reads
    the ranks back by (aorta/timeline/device_identity.py)."""
    refs, rule = reference_points_ns(traces, align)
    events = []
    for t in traces:
        events.extend(_rank_events(t, refs[t.rank]))
    return {
        "otherData": {  # first: a reader streaming the file knows it is a merge before its events
            MERGE_KEY: {
                "alignment": rule,
                "ranks": {
                    str(t.rank): {
                        "source": str(t.path),
                        "shift_ns": refs[t.rank],
                        "shift_us": refs[t.rank] / 1e3,
                        "pid": t.rank,
                        "distributedInfo": _distributed_info(t),
                    }
                    for t in traces
                },
            }
        },
        "displayTimeUnit": "ms",
        "traceEvents": events,
    }


def per_rank(traces: list[RankTrace], align: str = "auto") -> dict[int, dict]:
    """One trace per rank, as a profiler writes it (its own pids and tids, ``distributedInfo.rank``), shifted
    as in ``merge``: the folder Holistic Trace Analysis reads as one rank per file."""
    refs, _ = reference_points_ns(traces, align)
    out = {}
    for t in traces:
        doc = {k: v for k, v in t.doc.items() if k not in ("traceEvents", trace_events.DUPLICATES_KEY)}
        doc["distributedInfo"] = _distributed_info(t)
        if isinstance(doc.get("baseTimeNanoseconds"), int):  # the same wall clock: base + ts stays put
            doc["baseTimeNanoseconds"] += refs[t.rank]
        doc["traceEvents"] = [_shifted_event(e, refs[t.rank]) if isinstance(e, dict) else e for e in t.events]
        out[t.rank] = doc
    return out


def _launching_steps(events: list[dict], steps: list) -> list:
    """The steps in whose host range some device work was launched (linked by correlation id or flow
    event); every step where the trace links no device work to a launch (nothing to tell them apart by)."""
    links = launch_links(events)
    launched = [
        launch.ts_us
        for e in events
        if trace_events.str_category(e) in trace_events.DEVICE_CATEGORIES
        for _, launch, _ in [links.link(e)]
        if launch is not None
    ]
    if not launched:
        return steps
    return [s for s in steps if any(s["ts"] <= t < s["ts"] + float(s.get("dur", 0.0)) for t in launched)]


def rank_figures(t: RankTrace) -> dict:
    """Kernel count, communication busy time (union of comm kernels) and median step time of one rank; a
    step that launched no device work (the profiler's empty last step) is left out of the median and
    counted."""
    events = _complete(t.events)
    kernels = [e for e in events if is_kernel(e)]
    comm = [(e["ts"], e["ts"] + float(e.get("dur", 0.0))) for e in kernels if is_comm_kernel(e)]
    steps = list(profiler_steps(events).values())
    kept = _launching_steps(t.events, steps)
    step_durs = [float(e.get("dur", 0.0)) / 1e3 for e in kept]
    return {
        "rank": t.rank,
        "source": str(t.path),
        "kernel_count": len(kernels),
        "comm_kernel_count": sum(1 for e in kernels if is_comm_kernel(e)),
        "comm_ms": overlap.length_ms(comm) / 1e3,
        "step_ms": stats.median(step_durs) if step_durs else None,
        "steps": len(step_durs),
        "empty_steps_left_out": len(steps) - len(kept),
    }


def asymmetry(traces: list[RankTrace], threshold_ratio: float = DEFAULT_THRESHOLD_RATIO) -> dict:
    """Per-rank figures, their medians, and each rank whose figure differs from the median by > threshold.

    With two ranks the median is their mean, so an asymmetric pair flags both: read the values.
    """
    if not threshold_ratio > 0:
        raise ReportInputError(f"--threshold {threshold_ratio}: must be > 0 (0.1 = 10%)")
    rows = [rank_figures(t) for t in traces]
    medians = {}
    for key in ("kernel_count", "comm_ms", "step_ms"):
        vals = [r[key] for r in rows if r[key] is not None]
        medians[key] = stats.median(vals) if vals else None
    for r in rows:
        r["flags"] = []
        for key, med in medians.items():
            if r[key] is None or not med:
                continue
            rel = (r[key] - med) / med
            if abs(rel) > threshold_ratio:
                r["flags"].append(f"{key} {rel * 100:+.0f}% vs median")
    return {
        "threshold_ratio": threshold_ratio,
        "medians": medians,
        "ranks": rows,
        "flagged_ranks": [r["rank"] for r in rows if r["flags"]],
    }


def format_asymmetry(diag: dict) -> list[str]:
    def f(v, spec):
        return "-" if v is None else format(v, spec)

    lines = [f"{'rank':>4}  {'kernels':>8}  {'comm ms':>9}  {'step ms':>9}  flags"]
    for r in diag["ranks"]:
        lines.append(
            f"{r['rank']:>4}  {r['kernel_count']:>8}  {f(r['comm_ms'], '9.3f')}  {f(r['step_ms'], '9.3f')}  "
            f"{'; '.join(r['flags']) or 'ok'}"
        )
    m = diag["medians"]
    lines.append(
        f"{'med':>4}  {f(m['kernel_count'], '8g')}  {f(m['comm_ms'], '9.3f')}  {f(m['step_ms'], '9.3f')}  "
        f"threshold {diag['threshold_ratio'] * 100:g}%"
    )
    return lines
