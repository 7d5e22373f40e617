"""The tables the FSDP proofs print (suite, batch sizes, scale, sweep, fsdp_tp's ranks, stragglers), read
back from rank 0's pytest-benchmark JSON and the sweep report's summary. Pure: JSON in, lines out."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from aorta.fsdp.link_ceiling import size_label
from aorta.record.rank_breakdown import straggler_line
from aorta.record.table import format_table
from aorta.report.world_scaling import HEADERS, ordered, scenario_row, table_rows


def _benchmarks(path: Path) -> list[dict]:
    try:
        return json.loads(path.read_text())["benchmarks"]
    except (OSError, ValueError, KeyError):
        return []


def _metric(bench: dict, name: str):
    return ((bench["extra_info"].get("metrics") or {}).get(name) or {}).get("value")


def _val(bench: dict, name: str, spec: str) -> str:
    value = _metric(bench, name)
    return "n/a" if value is None else format(value, spec)


def fsdp_suite(work: Path, knobs) -> list[str]:
    """Per scenario: step (slowest rank), exposed transfer, overlap, busbw, compute slowdown, tokens/s; the
    known-answer overlap test; the collective sweep's ceiling per size."""
    rows, lines = [], []
    for b in _benchmarks(work / "fsdp.json") + _benchmarks(work / "fsdp_compile.json"):
        e = b["extra_info"]
        if e.get("workload") == "fsdp_known_answer":
            lines.append(
                f"known answer: overlapped {_val(b, 'overlapped_overlap_ratio', '.3f')} (expect >= 0.8), "
                f"serialized {_val(b, 'serialized_overlap_ratio', '.3f')} (expect <= 0.2); all-gather beside "
                f"GEMMs / alone {_val(b, 'comm_contention_slowdown_ratio', '.2f')}, GEMM beside all-gathers / "
                f"alone {_val(b, 'compute_contention_slowdown_ratio', '.2f')}"
            )
        elif e.get("workload") == "fsdp_collective_sweep":  # the machine's ceiling, not a scenario
            for kind, points in sorted((e.get("ceiling") or {}).items()):
                sizes = ", ".join(f"{size_label(int(n))} {g:.3g}" for n, g in points)
                lines.append(f"collective sweep {kind} busbw GB/s: {sizes}")
        else:
            rows.append(
                [(e.get("scenario") or {}).get("id", b["name"]), _val(b, "step_ms", ".2f"),
                 _val(b, "exposed_transfer_ms_worst_rank", ".2f"), _val(b, "overlap_ratio_worst_rank", ".3f"),
                 _val(b, "all_gather_busbw_gbps_worst_rank", ".1f"), _val(b, "reduce_scatter_busbw_gbps_worst_rank", ".1f"),
                 _val(b, "compute_slowdown_ratio_worst_rank", ".3f"), _val(b, "tokens_per_s", ".4g")]
            )  # fmt: skip
    heads = ["scenario", "step ms (slowest rank)", "exposed transfer ms/step", "overlap ratio", "AG busbw GB/s",
             "RS busbw GB/s", "compute slowdown", "tokens/s"]  # fmt: skip
    merge = work / "merge.log"  # the rank-asymmetry table of the baseline scenario's merged traces
    tail = merge.read_text().splitlines()[-6:] if merge.is_file() else []
    return format_table(heads, rows) + lines + tail


def fsdp_idle(work: Path, knobs) -> list[str]:
    """Per batch size and scenario: step, compute, comm and idle time, GPU idle share, overlap, exposed comm."""
    rows = []
    for path in sorted(work.glob("batch*.json")):
        for b in _benchmarks(path):
            if "scenario" in b["extra_info"]:
                keys = ("step_ms", "compute_busy_ms_worst_rank", "comm_busy_ms_worst_rank", "idle_ms_worst_rank",
                        "gpu_idle_share_rank0", "overlap_ratio_worst_rank", "exposed_comm_ms_worst_rank",
                        "samples_per_s")  # fmt: skip
                rows.append([path.stem, b["extra_info"]["scenario"]["id"], *(_metric(b, k) for k in keys)])
    heads = [
        "run",
        "scenario",
        "step ms",
        "compute",
        "comm",
        "idle",
        "idle share",
        "overlap",
        "exposed",
        "samples/s",
    ]
    return format_table(heads, rows)


def summary_lines(runs: list[tuple[str, dict]]) -> list[str]:
    """The scale table. ``runs``: (label, pytest-benchmark JSON document) pairs: FSDP scenarios per run (the
    report's world-size scaling columns), fsdp_tp's comm label and samples/s, the sweep's ceiling per size."""
    scenario_rows, tp_rows, sweep_rows = [], [], []
    for label, doc in runs:
        for b in doc.get("benchmarks", []):
            e = b["extra_info"]
            row = scenario_row(label, b)
            if row is not None:
                scenario_rows.append(row)
            elif e.get("workload") == "fsdp_tp":
                info = e.get("workload_info") or {}
                tp_rows.append(
                    [label, b["name"], info.get("comm"), info.get("world_size"), _metric(b, "samples_per_s")]
                )
            elif e.get("workload") == "fsdp_collective_sweep":
                for kind, points in sorted((e.get("ceiling") or {}).items()):
                    sizes = (f"{size_label(int(n))}: {g:.3g}" for n, g in points)
                    sweep_rows.append([label, e.get("world_size"), kind, *sizes])
    lines = []
    if scenario_rows:
        lines += ["FSDP scenarios:", *format_table(HEADERS, table_rows({"rows": ordered(scenario_rows)}))]
    if tp_rows:
        lines += ["fsdp_tp:", *format_table(["run", "benchmark", "comm", "world", "samples/s"], tp_rows)]
    if sweep_rows:
        width = max(len(r) for r in sweep_rows)
        head = ["run", "ranks", "kind", *(f"size {i + 1}: busbw GB/s" for i in range(width - 3))]
        rows = [r + [None] * (width - len(r)) for r in sweep_rows]
        lines += ["collective sweep (ceiling):", *format_table(head, rows)]
    return lines


def scale(work: Path, knobs) -> list[str]:
    """Every run of the scale proof that left a JSON, labelled by its step; the large model's memory last."""
    runs = [(p.stem, json.loads(p.read_text())) for p in sorted(work.glob("*.json"))]
    lines = summary_lines(runs)
    log = (
        work / "fsdp4.log"
    )  # the widest run's straggler evidence, unresolved splits, busbw against the ceiling
    keys = ("straggler", "resolvable", "busbw from transfer", "busbw vs ceiling")
    if log.is_file():
        lines += [x[:300] for x in log.read_text().splitlines() if any(k in x for k in keys)][:40]
    for b in _benchmarks(work / "large.json")[:1]:
        peak = (_metric(b, "peak_memory_bytes") or 0) / 2**30
        lines.append(
            f"large: peak memory {peak:.1f} GiB a rank, step {_metric(b, 'step_ms')} ms, tokens/s "
            f"{_metric(b, 'tokens_per_s')}, GPU idle share rank 0 {_metric(b, 'gpu_idle_share_rank0')}"
        )
    return lines


def tp_ranks(work: Path, knobs) -> list[str]:
    """Per launch and stream count: every rank's median round (ms), the spread (largest over smallest) and
    samples/s (rank 0's record)."""
    rows = []
    for path in sorted(work.glob("*.json")):
        for b in _benchmarks(path):
            e = b["extra_info"]
            meds = [statistics.median(r["device_ms_per_iteration"]) for r in e.get("per_rank", [])]
            spread = max(meds) / min(meds) if meds else None
            info = e.get("workload_info") or {}
            rows.append([path.stem, b["name"], info.get("comm"), " ".join(f"{m:.2f}" for m in meds), spread,
                         _metric(b, "samples_per_s")])  # fmt: skip
    return format_table(["launch", "benchmark", "comm", "rank medians ms", "spread", "samples/s"], rows)


def stragglers(work: Path, knobs) -> list[str]:
    """Per GPU order, which physical GPU each rank ran on and who arrived last in how many steps."""
    lines = []
    for order, visible in (("forward", knobs["forward"]), ("reverse", knobs["reverse"])):
        ranks = ", ".join(f"rank {r} on GPU {g}" for r, g in enumerate(visible.split(",")))
        for b in _benchmarks(work / f"swap_{order}.json"):
            lines.append(
                f"{order} ({ranks}): {b['name']}: {straggler_line(b['extra_info']) or 'no straggler'}"
            )
    return lines or ["no benchmark JSON: see the logs in the archive"]


def sweep_cells(work: Path, knobs) -> list[str]:
    """Per cell of the two stacks' sweeps (from the report's summary.json): status, seconds, step ms, the
    ratio and verdict of the second stack against the first, overlap, exposed transfer, busbw."""
    try:
        s = json.loads((work / "report" / "summary.json").read_text())
    except (OSError, ValueError) as exc:
        return [f"no report summary ({exc}): see the logs"]
    a, b = (x["label"] for x in s["sweeps"][:2])
    cells = {x["label"]: {c["id"]: c for c in x["cells"]} for x in s["sweeps"]}
    rows: dict[str, dict] = {}
    for r in s["comparisons"][0]["rows"] if s["comparisons"] else []:
        rows.setdefault(r["cell"], {})[r["metric"]] = r

    def pair(cell, metric, spec):
        r = rows.get(cell, {}).get(metric)
        f = lambda v: "n/a" if v is None else format(v, spec)  # noqa: E731
        return f"{f(r['reference'])} / {f(r['candidate'])}" if r else "n/a"

    table = []
    for cell_id, ca in cells[a].items():
        cb = cells[b].get(cell_id, {})
        step = rows.get(cell_id, {}).get("step_ms")
        table.append([
            cell_id, f"{ca['status']} / {cb.get('status', 'missing')}",
            f"{ca['duration_s'] or 0:.0f} / {cb.get('duration_s') or 0:.0f}", pair(cell_id, "step_ms", ".2f"),
            "n/a" if not step or step["ratio"] is None else f"{step['ratio']:.3f}", step["verdict"] if step else "n/a",
            pair(cell_id, "overlap_ratio_worst_rank", ".3f"), pair(cell_id, "exposed_transfer_ms_worst_rank", ".2f"),
            pair(cell_id, "all_gather_busbw_gbps_worst_rank", ".1f"),
            pair(cell_id, "reduce_scatter_busbw_gbps_worst_rank", ".1f"),
        ])  # fmt: skip
    heads = ["cell", "status", "cell s", "step ms", "ratio", "verdict", "overlap (worst rank)",
             "exposed transfer ms", "AG busbw GB/s", "RS busbw GB/s"]  # fmt: skip
    lines = [
        f"per cell, {a} / {b} (ratio and verdict: {b} against {a}, step time)",
        *format_table(heads, table),
    ]
    for label, best in s["best"].items():
        lines += [f"best in {label}: {x['configuration']} {x['metric']} {x['value']:.4g} {x['unit']} at {x['cell']}"
                  for x in best]  # fmt: skip
    between = s["differences"]["between"]
    diff = ", ".join(
        f"{d['name']} ({', '.join(f'{k}={v}' for k, v in d['values'].items())})" for d in between
    )
    return [*lines, f"differs between the stacks: {diff or 'nothing recorded'}"]
