"""One benchmark's kernels, compact enough to keep with every stored run (pure: no torch).

Read from the kernel pass's rounds (aorta/timeline/kernel_timeline.py), or from an FSDP scenario's profiled steps
(``summarize_launches``, one iteration per step): per normalised kernel name
(aorta/timeline/kernel_names.py) its launches and device time per iteration, the streams it ran on, and its most
common launch grid and block where the trace records them. Per iteration, not per round: a run's timing plan
picks its iterations per round (K) and two runs may pick different ones. Only the ``TOP_N`` kernels by device
time are named; the rest are one ``other`` bucket, so a summary stays about 2 KB however many kernels a
workload launches (``summary_bytes``).

Layout (``SCHEMA`` 1)::

    {"schema": 1, "rounds": 5, "iterations": 40,
     "kernels": [{"name", "family", "launches", "device_ms", "streams", "grid", "block"}, ...],
     "other": {"kernels": 3, "launches": 1.0, "device_ms": 0.002},
     "total": {"kernels": 11, "launches": 17.0, "device_ms": 4.1}}

``launches`` and ``device_ms`` are per iteration; ``device_ms`` sums the kernel's durations (kernels that
overlap on several streams add up, as device time spent, not as wall time).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aorta.timeline.device_op import DeviceOp
from aorta.timeline.kernel_names import family, normalise
from aorta.timeline.kernel_timeline import KernelRound

SCHEMA = 1
TOP_N = 10


def _round6(x: float) -> float:
    return float(f"{x:.6g}")


def summarize(
    rounds: Sequence[KernelRound], iterations_per_round: int, top_n: int = TOP_N
) -> dict[str, Any] | None:
    """The summary of the rounds' device ops, or None when they hold none."""
    if iterations_per_round < 1:
        raise ValueError(f"iterations_per_round must be >= 1, got {iterations_per_round}")
    if top_n < 1:
        raise ValueError(f"top_n must be >= 1, got {top_n}")
    with_ops = [r for r in rounds if r.ops]
    if not with_ops:
        return None
    ops = [op for r in with_ops for op in r.ops]
    return summarize_launches(ops, len(with_ops) * iterations_per_round, top_n, rounds=len(with_ops))


def summarize_launches(
    launches: Iterable[DeviceOp], iterations: int, top_n: int = TOP_N, *, rounds: int | None = None
) -> dict[str, Any] | None:
    """The summary of the device ops ``launches`` (the kernel timeline's, or an FSDP trace's kernels with the
    profiler's collective arg) over ``iterations`` iterations (steps), or None when there are none."""
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    if top_n < 1:
        raise ValueError(f"top_n must be >= 1, got {top_n}")
    acc: dict[str, dict[str, Any]] = {}
    for op in launches:
        name, fam = normalise(op.name), family(op.name, op.category, op.collective)
        if op.collective and family(op.name, op.category) != fam:
            name = f"{name}[{op.collective}]"  # RCCL's generic kernel: one name for every collective
        k = acc.setdefault(
            name,
            {
                "family": fam,
                "launches": 0,
                "us": 0.0,
                "streams": set(),
                "dims": Counter(),
            },
        )
        k["launches"] += 1
        k["us"] += op.dur_us
        k["streams"].add(op.stream)
        if op.grid is not None or op.block is not None:
            k["dims"][(op.grid, op.block)] += 1
    if not acc:
        return None
    ordered = sorted(acc.items(), key=lambda kv: (-kv[1]["us"], kv[0]))
    kernels = []
    for name, k in ordered[:top_n]:
        entry: dict[str, Any] = {
            "name": name,
            "family": k["family"],
            "launches": _round6(k["launches"] / iterations),
            "device_ms": _round6(k["us"] / 1e3 / iterations),
            "streams": len(k["streams"]),
        }
        if k["dims"]:
            (grid, block), _ = k["dims"].most_common(1)[0]
            entry["grid"] = list(grid) if grid else None
            entry["block"] = list(block) if block else None
            if len(k["dims"]) > 1:
                entry["launch_shapes"] = len(k["dims"])
        kernels.append(entry)
    rest = [k for _, k in ordered[top_n:]]
    out: dict[str, Any] = {"schema": SCHEMA}
    if rounds is not None:
        out["rounds"] = rounds
    out.update(
        iterations=iterations,
        kernels=kernels,
        other={
            "kernels": len(rest),
            "launches": _round6(sum(k["launches"] for k in rest) / iterations),
            "device_ms": _round6(sum(k["us"] for k in rest) / 1e3 / iterations),
        },
        total={
            "kernels": len(acc),
            "launches": _round6(sum(k["launches"] for k in acc.values()) / iterations),
            "device_ms": _round6(sum(k["us"] for k in acc.values()) / 1e3 / iterations),
        },
    )
    return out


def summary_bytes(summary: Mapping | None) -> int:
    """What a summary costs a stored run: its compact JSON size."""
    return 0 if summary is None else len(json.dumps(summary, separators=(",", ":")).encode("utf-8"))
