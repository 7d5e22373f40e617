"""The tables of scripts/gpu/gate_proof.sh, from the verdict JSON and baselines it left in a folder.

    python3 scripts/gpu/gate_proof.py OUT_DIR

1. each compare: exit code, verdict counts, wall time;
2. device time per benchmark: the baseline's noise profile (between-run noise, MDE with 3 candidate runs),
   each compare's change and verdict;
3. the summary: benchmarks with a gateable device-time figure (MDE <= 5%), A/A SLOWER count, and the catch
   rate of each slowdown (SLOWER among the gateable device-time figures).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from aorta.record.table import format_table


def _pct(x) -> str:
    return "-" if x is None else f"{x * 100:+.1f}%"


def _load_compares(out: Path) -> list[tuple[str, dict, str]]:
    rows = []
    for vj in sorted(out.glob("*.verdict.json")):
        label = vj.name.removesuffix(".verdict.json")
        rc_file = out / f"{label}.rc"
        wall = rc_file.read_text().split()[1] if rc_file.exists() else "?"
        rows.append((label, json.loads(vj.read_text()), wall))
    return rows


def main(out: Path) -> int:
    compares = _load_compares(out)
    profiles = {}
    for b in sorted((out / "baselines").glob("*/*.json")):
        profiles.update(json.loads(b.read_text())["aorta_baseline"]["noise_profile"]["figures"])
    t1 = []
    for label, doc, wall in compares:
        c = doc["comparisons"][0]
        counts = {o: 0 for o in ("SLOWER", "FASTER", "SAME", "UNSURE", "NOT_GATEABLE")}
        for v in c["verdicts"]:
            counts[v["outcome"]] = counts.get(v["outcome"], 0) + 1
        t1.append(
            [
                label,
                str(doc["exit_code"]),
                *map(str, counts.values()),
                f"{c['runs']['baseline']}/{c['runs']['candidate']}",
                wall,
            ]
        )
    print(
        "\n".join(
            format_table(
                ["compare", "exit", "SLOWER", "FASTER", "SAME", "UNSURE", "NOT_GATEABLE", "runs", "wall s"],
                t1,
            )
        )
    )
    print()
    benches = sorted(
        {v["benchmark"] for _, d, _ in compares for v in d["comparisons"][0]["verdicts"]} | set(profiles)
    )
    t2 = []
    gateable5 = 0
    for b in benches:
        prof = (profiles.get(b) or {}).get("device_ms") or {}
        cells = []
        for _, d, _ in compares:
            v = next(
                (
                    v
                    for v in d["comparisons"][0]["verdicts"]
                    if v["benchmark"] == b and v["metric"] == "device_ms"
                ),
                None,
            )
            cells.append("-" if v is None else f"{_pct(v['change_ratio'])} {v['outcome'][:4]}")
        mde = prof.get("mde")
        gateable5 += mde is not None and mde <= 0.05
        short = b.split("::")[-1]
        t2.append(
            [
                short,
                f"{(prof.get('sigma_log') or 0) * 100:.2f}%",
                "-" if mde is None else f"{mde * 100:.1f}%",
                *cells,
            ]
        )
    print("\n".join(format_table(["benchmark (device_ms)", "noise", "MDE@3", *[c[0] for c in compares]], t2)))
    print()
    print(
        f"benchmarks with a gateable device-time figure (baseline profile MDE <= 5%): {gateable5} of {len(benches)}"
    )
    for label, doc, _ in compares:
        vs = [v for v in doc["comparisons"][0]["verdicts"] if v["metric"] == "device_ms"]
        gate = [v for v in vs if v["outcome"] != "NOT_GATEABLE"]
        slower = sum(v["outcome"] == "SLOWER" for v in gate)
        all_slower = sum(v["outcome"] == "SLOWER" for v in doc["comparisons"][0]["verdicts"])
        print(
            f"{label}: exit {doc['exit_code']}; device time SLOWER on {slower} of {len(gate)} gateable "
            f"({len(vs)} benchmarks); SLOWER verdicts over all figures: {all_slower}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "artifacts/gate_proof")))
