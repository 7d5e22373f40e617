"""Print a short table from one or more aorta benchmark JSON files, one row per benchmark:
mode (timing method), device ms per iteration (median) and its within-run CV, GPU busy share and effective
concurrency (kernel timestamps), distinct streams that received work, the headline figure, host seconds the benchmark took, reading notes.

    python3 scripts/gpu/summarize.py run.json [more.json ...]
"""

import json
import statistics
import sys

from aorta.record import record_of
from aorta.record.table import format_table
from aorta.stats import median


def _fmt(value, spec=".3g"):
    return "-" if value is None else format(value, spec)


def row(bench: dict) -> list:
    rec = record_of(bench)
    ms = rec.device_ms_per_iteration
    cv = statistics.pstdev(ms) / statistics.fmean(ms) if len(ms) > 1 and statistics.fmean(ms) > 0 else None
    head = rec.headline()
    headline = "-" if head is None or head.value is None else f"{head.value:.4g} {head.unit}"
    return [
        bench["name"],
        rec.get("gpu_mode") or rec.get("mode") or rec.timing_method,
        _fmt(median(ms) if ms else None, ".4g"),
        _fmt(cv * 100 if cv is not None else None, ".2f"),
        _fmt(rec.get("gpu_busy_share"), ".2f"),
        _fmt(rec.get("effective_concurrency"), ".3g"),
        rec.get("distinct_streams"),
        headline,
        _fmt(sum((rec.get("host_phase_s") or {}).values()), ".1f"),
        "; ".join(rec.reading_notes)[:60],
    ]


def main(paths: list[str]) -> None:
    rows = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        rows += [row(b) for b in data["benchmarks"] if "aorta_schema" in (b.get("extra_info") or {})]
    phases: dict[str, float] = {}
    profiler: dict[str, dict[str, float]] = {"kernel_pass": {}, "labelled_pass": {}}
    for path in paths:
        with open(path) as f:
            for b in json.load(f)["benchmarks"]:
                info = b.get("extra_info") or {}
                for k, v in (info.get("host_phase_s") or {}).items():
                    phases[k] = phases.get(k, 0.0) + v
                for pass_name, totals in profiler.items():
                    for k, v in ((info.get(pass_name) or {}).get("profiler_cost") or {}).items():
                        totals[k] = totals.get(k, 0.0) + v
    print("host seconds by phase:", {k: round(v, 1) for k, v in phases.items()})
    for pass_name, totals in profiler.items():
        if totals:
            print(f"profiler cost, {pass_name} (summed):", {k: round(v, 1) for k, v in totals.items()})
    for line in format_table(
        [
            "benchmark",
            "mode",
            "device ms",
            "CV %",
            "GPU busy",
            "conc",
            "distinct",
            "headline",
            "host s",
            "note",
        ],
        rows,
    ):
        print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
