"""World-size scaling of the FSDP scenarios: runs at 2, 4, ... ranks side by side (pure: no torch).

Read from each run's pytest-benchmark JSON (the scenarios' records): per scenario and run, the step (slowest
rank), exposed transfer and wait per step and the overlap ratio (worst rank), busbw from transfer time in GB/s
and as a share of the run's own collective sweep at the scenario's message size (``busbw_vs_ceiling``, written
by the FSDP plugin), the clock alignment error and the share of exposed communication whose wait/transfer split
it cannot resolve, and per-rank asymmetry: the largest over the smallest rank's median compute-only time, and the straggler.
``step vs fewest ranks``: the step over the same scenario's step at the smallest world size in the report
(each rank keeps its batch, so ideal weak scaling reads 1.00).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from aorta.record import record_of
from aorta.record.table import format_table
from aorta.report.runs import Run

KINDS = ("all_gather", "reduce_scatter", "all_reduce")
NOT_SCENARIOS = ("fsdp_collective_sweep", "fsdp_known_answer")
HEADERS = [
    "scenario",
    "run",
    "ranks",
    "step ms",
    "step vs fewest ranks",
    "exposed transfer ms",
    "exposed wait ms",
    "overlap ratio",
    *(f"{k} busbw GB/s (share)" for k in KINDS),
    "alignment error us",
    "unresolved share",
    "compute-only max/min",
    "straggler",
]


def _value(record, name: str) -> float | None:
    m = record.metrics.get(name)
    return None if m is None else m.value


def _asymmetry(evidence: Sequence[Mapping]) -> float | None:
    values = [r["compute_only_ms"] for r in evidence if r.get("compute_only_ms")]
    return max(values) / min(values) if len(values) > 1 else None


def _straggler(stragglers: Sequence[Mapping | None]) -> str | None:
    found = [s["rank"] for s in stragglers if s]
    if not found:
        return None
    rank, n = Counter(found).most_common(1)[0]
    return f"rank {rank} ({n}/{len(found)} steps)"


def scenario_row(label: str, bench: Mapping) -> dict | None:
    """One FSDP scenario of one run, or None for anything else."""
    record = record_of(bench)
    world = record.get("world_size")
    if not record.workload.startswith("fsdp_") or record.workload in NOT_SCENARIOS or not world:
        return None
    vs = record.get("busbw_vs_ceiling") or {}
    resolution = record.get("split_resolution") or {}
    return {
        "scenario": record.workload.removeprefix("fsdp_"),
        "run": label,
        "ranks": int(world),
        "step_ms": _value(record, "step_ms"),
        "exposed_transfer_ms": _value(record, "exposed_transfer_ms_worst_rank"),
        "exposed_wait_ms": _value(record, "exposed_wait_ms_worst_rank"),
        "overlap_ratio": _value(record, "overlap_ratio_worst_rank"),
        "busbw_gbps": {k: (vs.get(k) or {}).get("busbw_gbps") for k in KINDS},
        "busbw_share": {k: (vs.get(k) or {}).get("share_of_ceiling") for k in KINDS},
        "alignment_error_us": resolution.get("alignment_error_us"),
        "unresolved_share": resolution.get("unresolved_share"),
        "compute_only_max_over_min": _asymmetry(record.get("rank_evidence") or []),
        "straggler": _straggler(record.get("stragglers") or []),
    }


def world_size_view(runs: Sequence[Run]) -> dict | None:
    """Rows by scenario, fewest ranks first; None unless the runs hold FSDP scenarios at two or more world
    sizes."""
    rows = [
        row for run in runs for bench in run.benchmarks if (row := scenario_row(run.label, bench)) is not None
    ]
    sizes = sorted({r["ranks"] for r in rows})
    if len(sizes) < 2:
        return None
    return {"world_sizes": sizes, "rows": ordered(rows)}


def ordered(rows: list[dict]) -> list[dict]:
    """``rows`` by scenario, fewest ranks first, each with its step over the scenario's first measured step
    (``step_vs_fewest_ranks``)."""
    rows = sorted(rows, key=lambda r: (r["scenario"], r["ranks"], r["run"]))
    fewest: dict[str, float] = {}
    for r in rows:
        base = fewest.setdefault(r["scenario"], r["step_ms"]) if r["step_ms"] else None
        r["step_vs_fewest_ranks"] = r["step_ms"] / base if base and r["step_ms"] else None
    return rows


def _busbw_cell(gbps: float | None, share: float | None) -> str | None:
    """``147 (71%)``: busbw in GB/s with its share of the ceiling; the GB/s alone where no ceiling applies."""
    if gbps is None:
        return None
    return f"{gbps:.3g} ({share:.0%})" if share is not None else f"{gbps:.3g}"


def table_rows(view: Mapping) -> list[list]:
    return [
        [
            r["scenario"],
            r["run"],
            r["ranks"],
            r["step_ms"],
            r["step_vs_fewest_ranks"],
            r["exposed_transfer_ms"],
            r["exposed_wait_ms"],
            r["overlap_ratio"],
            *(_busbw_cell(r["busbw_gbps"][k], r["busbw_share"][k]) for k in KINDS),
            r["alignment_error_us"],
            r["unresolved_share"],
            r["compute_only_max_over_min"],
            r["straggler"],
        ]
        for r in view["rows"]
    ]


def view_lines(view: Mapping) -> list[str]:
    sizes = " vs ".join(str(n) for n in view["world_sizes"])
    return [f"FSDP world-size scaling ({sizes} ranks):", *format_table(HEADERS, table_rows(view))]
