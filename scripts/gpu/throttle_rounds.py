"""Throttled rounds in pools of full-suite runs, and whether the telemetry clock explains device time.

    python3 scripts/gpu/throttle_rounds.py docs/data/gate_pools/pool_a.tgz docs/data/gate_pools/pool_c.tgz ...

Reads each run's JSON (from pool folders or the .tgz files scripts/gpu/gate_pool.sh writes) and prints:
per run, the timed rounds flagged throttled, by cause, and the benchmarks flagged in every round; per
benchmark flagged in some run, the between-run CV of its median device time, and of that time scaled by
the median sampled SM clock over the maximum (the clock-normalised figure a policy could gate instead).
The evidence behind aorta/telemetry/round_policy.py (docs/measurements.md, "Throttled rounds on H100").
"""

from __future__ import annotations

import json
import statistics
import sys
import tarfile
from collections import Counter
from pathlib import Path

from aorta.record.table import format_table


def runs(source: str):
    """(run name, document) for each run JSON in a pool folder or .tgz."""
    path = Path(source)
    if path.is_dir():
        for p in sorted(path.rglob("*.json")):
            if not p.name.endswith(".verdict.json"):
                yield p.stem, json.loads(p.read_text())
        return
    with tarfile.open(path) as tar:
        for m in sorted(tar.getmembers(), key=lambda m: m.name):
            if m.isfile() and m.name.endswith(".json") and not m.name.endswith(".verdict.json"):
                fh = tar.extractfile(m)
                if fh is not None:
                    yield Path(m.name).stem, json.load(fh)


def _cv_pct(values: list[float]) -> float:
    return statistics.pstdev(values) / statistics.mean(values) * 100


def main(sources: list[str]) -> int:
    per_run, per_bench = [], {}
    for source in sources:
        for name, doc in runs(source):
            flagged, all_flagged, causes = 0, 0, Counter()
            for b in doc["benchmarks"]:
                extra = b.get("extra_info") or {}
                tel = extra.get("telemetry") or {}
                n, k = tel.get("rounds") or 0, tel.get("throttled_rounds") or 0
                flagged += k
                all_flagged += bool(n and k == n)
                causes.update(tel.get("throttle_causes") or {})
                clock = ((tel.get("figures") or {}).get("sm_clock_mhz") or {}).get("median")
                top = (tel.get("limits") or {}).get("sm_clock_max_mhz")
                ms = statistics.median(extra.get("device_ms_per_iteration") or [float("nan")])
                per_bench.setdefault(b["name"], []).append((k, n, ms, clock, top))
            total = sum(
                (b.get("extra_info") or {}).get("telemetry", {}).get("rounds") or 0 for b in doc["benchmarks"]
            )
            per_run.append(
                [name, total, flagged, all_flagged, ", ".join(f"{c} {v}" for c, v in causes.items())]
            )
    print("\n".join(format_table(["run", "rounds", "throttled", "benchmarks all rounds", "causes"], per_run)))
    rows = []
    for name, seen in sorted(per_bench.items()):
        if not any(k for k, *_ in seen) or len(seen) < 2:
            continue
        ms = [m for _, _, m, _, _ in seen]
        scaled = [m * c / t for _, _, m, c, t in seen if c and t]
        rows.append(
            [
                name,
                " ".join(f"{k}/{n}" for k, n, *_ in seen),
                f"{_cv_pct(ms):.2f}%",
                f"{_cv_pct(scaled):.2f}%" if len(scaled) == len(ms) else "n/a",
            ]
        )
    print()
    print(
        "\n".join(
            format_table(["benchmark", "throttled rounds per run", "CV device ms", "CV clock-scaled"], rows)
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
