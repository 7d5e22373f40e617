"""Which kernels moved: the baseline's kernel summaries against the candidate's (pure: no torch).

Each side's runs are merged kernel by kernel (the median over the runs that kept a summary; a run where a
kernel did not run counts 0). The diff names:

- ``top``: the kernels that account for most of the change, by added device time per iteration (removed
  time for a FASTER verdict), at most ``TOP``;
- ``appeared`` / ``disappeared``: kernels one side ran and the other did not (a library picked another
  kernel, a setting added or dropped work). A summary names its ``TOP_N`` kernels and buckets the rest, so a
  kernel missing from one side's list is called gone only where that side's bucket is too small to hide it;
  the others are counted in ``unsure``;
- ``launch_changes``: kernels on both sides whose launches per iteration changed by more than ``LAUNCH_CHANGE``;
- ``shape_changes``: kernels on both sides that ran another grid or block (an NCCL kernel's grid is its
  channel count);
- ``streams``: effective concurrency, GPU busy share, streams with work and the per-stream busy time
  (sum and busiest), each ``[baseline, candidate]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aorta import stats

TOP = 5
LAUNCH_CHANGE = 0.01  # a launch count that moved more than 1% per iteration
HIDDEN_SHARE = 0.5  # a kernel absent from a list is gone where the side's bucket holds under half its time


def _num(x: float | None) -> float | None:
    return None if x is None else float(f"{x:.6g}")


def merge(summaries: Sequence[Mapping]) -> dict[str, Any]:
    """One side's kernel summaries as one: per kernel the median of its launches and device ms over the
    runs (0 in a run whose list lacks it), the bucket and total likewise."""
    runs = [s for s in summaries if isinstance(s, Mapping) and s.get("kernels") is not None]
    if not runs:
        return {}
    names: dict[str, dict[str, Any]] = {}
    for s in runs:
        for k in s["kernels"]:
            names.setdefault(k["name"], dict(k))  # family, streams, grid, block from the first run holding it
    kernels = {}
    for name, first in names.items():
        per_run = [next((k for k in s["kernels"] if k["name"] == name), None) for s in runs]
        kernels[name] = {
            **{k: v for k, v in first.items() if k not in ("launches", "device_ms")},
            "launches": stats.median([k["launches"] if k else 0.0 for k in per_run]),
            "device_ms": stats.median([k["device_ms"] if k else 0.0 for k in per_run]),
        }
    return {
        "runs": len(runs),
        "kernels": kernels,
        "other_ms": stats.median([(s.get("other") or {}).get("device_ms", 0.0) for s in runs]),
        "total_ms": stats.median([(s.get("total") or {}).get("device_ms", 0.0) for s in runs]),
        "total_launches": stats.median([(s.get("total") or {}).get("launches", 0.0) for s in runs]),
    }


def _side_median(evidence: Sequence[Mapping], key: str) -> float | None:
    values = [e[key] for e in evidence if isinstance(e.get(key), (int, float))]
    return stats.median(values) if values else None


def _busy(evidence: Sequence[Mapping], how) -> float | None:
    values = [how(e["per_stream_busy_ms"]) for e in evidence if e.get("per_stream_busy_ms")]
    return stats.median(values) if values else None


def stream_change(ref: Sequence[Mapping], cand: Sequence[Mapping]) -> dict[str, list]:
    """Concurrency and per-stream busy figures, ``[baseline, candidate]``, where either side has them."""
    out = {}
    for key in (
        "effective_concurrency",
        "gpu_busy_share",
        "streams_with_work",
        "host_enqueue_ms_per_iteration",
    ):
        pair = [_num(_side_median(ref, key)), _num(_side_median(cand, key))]
        if pair != [None, None]:
            out[key] = pair
    for key, how in (("busy_ms_sum", sum), ("busy_ms_busiest_stream", max)):
        pair = [_num(_busy(ref, how)), _num(_busy(cand, how))]
        if pair != [None, None]:
            out[key] = pair
    return out


def _row(name: str, a: Mapping | None, b: Mapping | None) -> dict[str, Any]:
    k = b or a or {}
    row = {
        "name": name,
        "family": k.get("family"),
        "device_ms": [_num(a["device_ms"]) if a else 0.0, _num(b["device_ms"]) if b else 0.0],
        "launches": [_num(a["launches"]) if a else 0.0, _num(b["launches"]) if b else 0.0],
    }
    for key in ("grid", "block"):
        ga, gb = (a or {}).get(key), (b or {}).get(key)
        if ga is not None or gb is not None:
            row[key] = [ga, gb]
    return row


def kernel_diff(
    ref_summaries: Sequence[Mapping], cand_summaries: Sequence[Mapping], *, slower: bool = True
) -> dict[str, Any] | None:
    """The diff of the two sides' kernels, or None where a side kept no kernel summary."""
    a, b = merge(ref_summaries), merge(cand_summaries)
    if not a or not b:
        return None
    ka, kb = a["kernels"], b["kernels"]
    appeared: list[str] = []
    disappeared: list[str] = []
    unsure: list[str] = []
    both: list[str] = []
    for name in sorted(set(ka) | set(kb)):
        if name in ka and name in kb:
            both.append(name)
        elif name in kb:
            hidden = a["other_ms"] >= HIDDEN_SHARE * kb[name]["device_ms"]
            (unsure if hidden else appeared).append(name)
        else:
            hidden = b["other_ms"] >= HIDDEN_SHARE * ka[name]["device_ms"]
            (unsure if hidden else disappeared).append(name)
    rows = {n: _row(n, ka.get(n), kb.get(n)) for n in [*both, *appeared, *disappeared]}
    sign = 1.0 if slower else -1.0
    movers = sorted(
        (r for r in rows.values() if sign * (r["device_ms"][1] - r["device_ms"][0]) > 0),
        key=lambda r: (-sign * (r["device_ms"][1] - r["device_ms"][0]), r["name"]),
    )
    launches = [
        rows[n]
        for n in both
        if abs(kb[n]["launches"] - ka[n]["launches"]) > LAUNCH_CHANGE * max(ka[n]["launches"], 1e-12)
    ]
    shapes = [
        rows[n]
        for n in both
        if any((ka[n].get(key), kb[n].get(key)) for key in ("grid", "block"))
        and (ka[n].get("grid"), ka[n].get("block")) != (kb[n].get("grid"), kb[n].get("block"))
    ]
    return {
        "runs": [a["runs"], b["runs"]],
        "device_ms": [_num(a["total_ms"]), _num(b["total_ms"])],
        "launches": [_num(a["total_launches"]), _num(b["total_launches"])],
        "top": movers[:TOP],
        "appeared": [rows[n] for n in appeared],
        "disappeared": [rows[n] for n in disappeared],
        "launch_changes": launches,
        "shape_changes": shapes,
        "unsure": len(unsure),
    }
