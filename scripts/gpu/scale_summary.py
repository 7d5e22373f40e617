"""The short table scale_proof.sh prints last: per run (JSON) and FSDP scenario the step, exposed transfer
and wait, overlap, busbw GB/s and share of the sweep's ceiling, alignment error, unresolved share, compute-only asymmetry and straggler;
fsdp_tp's comm label and samples/s; the sweep's ceiling at each size. Pure: reads pytest-benchmark JSON.

    python3 scripts/gpu/scale_summary.py LABEL=run.json [LABEL=run.json ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # runs from a checkout that was never installed
    sys.path.insert(0, str(REPO))

from aorta.fsdp.link_ceiling import size_label  # noqa: E402
from aorta.record.table import format_table  # noqa: E402
from aorta.report.world_scaling import HEADERS, ordered, scenario_row, table_rows  # noqa: E402


def _metric(bench: dict, name: str):
    return ((bench["extra_info"].get("metrics") or {}).get(name) or {}).get("value")


def summary_lines(runs: list[tuple[str, dict]]) -> list[str]:
    """``runs``: (label, pytest-benchmark JSON document) pairs."""
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
                    sweep_rows.append(
                        [
                            label,
                            e.get("world_size"),
                            kind,
                            *(f"{size_label(int(b_))}: {g:.3g}" for b_, g in points),
                        ]
                    )
    lines = []
    if scenario_rows:
        lines += ["FSDP scenarios:", *format_table(HEADERS, table_rows({"rows": ordered(scenario_rows)}))]
    if tp_rows:
        lines += ["fsdp_tp:", *format_table(["run", "benchmark", "comm", "world", "samples/s"], tp_rows)]
    if sweep_rows:
        width = max(len(r) for r in sweep_rows)
        head = ["run", "ranks", "kind", *(f"size {i + 1}: busbw GB/s" for i in range(width - 3))]
        lines += [
            "collective sweep (ceiling):",
            *format_table(head, [r + [None] * (width - len(r)) for r in sweep_rows]),
        ]
    return lines


def main(argv: list[str]) -> int:
    runs = []
    for arg in argv:
        label, _, path = arg.partition("=")
        try:
            runs.append((label, json.loads(Path(path).read_text())))
        except (OSError, ValueError) as exc:
            print(f"{label}: no benchmark JSON at {path} ({exc})")
    for line in summary_lines(runs):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
