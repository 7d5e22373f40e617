"""What each stored run keeps to explain a verdict, beside its samples (pure: no torch).

A run entry (``aorta.gate.baselines.baseline.run_entry``) keeps, per benchmark, the figures the gate judges; the
``evidence`` it keeps beside them is what ``aorta.gate.causes.causes`` reads when a verdict moves: the kernel summary
(aorta/timeline/kernel_summary.py), the host's enqueue time, the kernel timeline's concurrency and busy figures, the
telemetry's throttle counts and clocks, and an FSDP run's exposed communication split into wait and transfer.
Every entry is optional: a figure a run did not record is left out, never invented.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aorta.record import record_of

EVIDENCE_KEY = "evidence"
_FIGURES = (
    "host_enqueue_ms_per_iteration",
    "effective_concurrency",
    "gpu_busy_share",
    "streams_with_work",
)
# FSDP's exposed communication, split: transfer (the last rank's kernel time) and wait (skew); worst rank
COMM_FIGURES = ("exposed_comm_ms", "exposed_wait_ms", "exposed_transfer_ms")


def bench_evidence(bench: Mapping) -> dict[str, Any]:
    """The evidence one benchmark of one run recorded ({} when it recorded none)."""
    record = record_of(bench)
    out: dict[str, Any] = {}
    summary = record.get("kernel_summary")
    if isinstance(summary, Mapping):
        out["kernels"] = dict(summary)
    for key in _FIGURES:
        value = record.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = value
    busy = record.get("per_stream_busy_ms")
    if isinstance(busy, list) and busy:
        out["per_stream_busy_ms"] = busy
    telemetry = record.get("telemetry")
    if isinstance(telemetry, Mapping) and telemetry.get("rounds"):
        figures = telemetry.get("figures") or {}
        out["telemetry"] = {
            "rounds": telemetry.get("rounds"),
            "throttled_rounds": telemetry.get("throttled_rounds") or 0,
            "throttle_causes": dict(telemetry.get("throttle_causes") or {}),
            **{
                f"{name}_median": (figures.get(name) or {}).get("median")
                for name in ("sm_clock_mhz", "power_w")
                if (figures.get(name) or {}).get("median") is not None
            },
        }
    comm = {}
    for name in COMM_FIGURES:  # the worst rank's figure (FSDP's judged aggregate), else the first recorded
        found = [m for n, m in record.metrics.items() if n.startswith(name) and m.value is not None]
        worst = record.metrics.get(f"{name}_worst_rank")
        pick = worst if worst is not None and worst.value is not None else (found[0] if found else None)
        if pick is not None:
            comm[name] = pick.value
    if comm:
        out["comm"] = comm
    return out


def run_evidence(run: Mapping) -> dict[str, dict]:
    """``{fullname: evidence}`` for the benchmarks of one run document that recorded any."""
    out = {}
    for bench in run.get("benchmarks", ()):
        ev = bench_evidence(bench)
        if ev:
            out[bench["fullname"]] = ev
    return out
