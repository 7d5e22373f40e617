"""Per-rank JSONL of an FSDP run: ``<artifacts>/rank_<rank>_metrics.jsonl`` (pure: no torch).

One file per run and rank, rewritten at the end of the session (temp file + ``os.replace``: an
interrupted run leaves the previous file whole; it is never appended to). One JSON object per line.

``"kind": "step"`` — one line per training step of each scenario::

    {"kind": "step", "scenario": "baseline", "rank": 0, "step": 4, "phase": "timed",
     "loss": 0.6931, "lr": 1e-05, "grad_norm": 1.27, "step_ms": 31.2,
     "micro_batches": 1, "samples": 8, "tokens": 4096}

  ``step`` counts optimizer steps from 0 within the scenario; ``phase`` is ``check`` (step 0, whose
  loss was checked against the unsharded model), ``warmup``, ``timed`` or ``profiled``; ``step_ms`` is the device time of the step on this rank (timed steps only, else null);
  ``samples`` and ``tokens`` are this rank's per step.

``"kind": "overlap"`` — one line per scenario and rank with the profiled window's device timeline::

    {"kind": "overlap", "scenario": "baseline", "rank": 0, "steps": 3, "available": true,
     "reason": null, "trace_start_us": 1.7e15, "figures": {...OverlapSummary.as_dict()...},
     "per_step": [{...}, ...], "per_step_note": null,
     "stream_busy_ms": {"7": 40.1, "20": 12.3},
     "compute_us": [[t0, t1], ...], "comm_us": [[t0, t1], ...], "overlap_us": [[t0, t1], ...],
     "active_segments_us": [[t0, t1, ["all_gather", "compute"]], ...]}

  Intervals are absolute µs timestamps as in the profiler trace, so they line up with external
  profilers; ``active_segments_us`` cuts the window wherever a kind starts or stops and says which kinds
  (``compute``, ``memory``, ``all_gather``, ``reduce_scatter``, ``all_reduce``, ``broadcast``, ``reduce``,
  ``all_to_all``, ``other_comm``) were running. ``per_step_note`` says which kernels and steps the per-step
  figures leave out (``profiled_steps.StepSplit.note``). Where no kernel timestamps exist (CPU, profiling
  off) ``available`` is false and ``reason`` says why.

``"kind": "scenario"`` — one line per scenario and rank, written when the scenario ends::

    {"kind": "scenario", "scenario": "baseline", "rank": 0, "world_size": 2, "outcome": "measured",
     "step_ms": [...], "peak_memory_bytes": 123, "unavailable": {"figure": "reason"}}
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path

from aorta.record import write_text_atomic


def _clean(value):
    """JSON-safe: NaN/inf become null (JSON has neither), tuples lists, keys strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def jsonl_path(artifacts_dir: str | Path, rank: int) -> Path:
    return Path(artifacts_dir) / f"rank_{rank}_metrics.jsonl"


def write_jsonl(path: str | Path, records: Iterable[dict]) -> Path:
    """Write all records atomically (aorta's one atomic writer: readable like any other output)."""
    return write_text_atomic(path, "".join(json.dumps(_clean(rec), sort_keys=True) + "\n" for rec in records))


def read_jsonl(path: str | Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
