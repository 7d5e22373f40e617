"""The table of scripts/gpu/gate_power.sh: per step its exit code and wall; per compare the figures judged, the
share gateable at MDE <= 5% and <= 2%, the runs on each side, the walls of full and lean runs; for a slowdown,
how many device-time figures with MDE <= 2% were called SLOWER.

    python3 scripts/gpu/gate_power.py WORK_DIR
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

RUN_LINE = re.compile(
    r"(?:aorta gate: run \d+/auto|aorta ab: \w+ run \d+)( \(lean\))?[^:]*: ok in ([\d.]+) s"
)


def walls(log: Path) -> tuple[list[float], list[float]]:
    full, lean = [], []
    if log.is_file():
        for m in RUN_LINE.finditer(log.read_text(errors="replace")):
            (lean if m.group(1) else full).append(float(m.group(2)))
    return full, lean


def describe(name: str, doc: dict, log: Path) -> list[str]:
    comp = doc["comparisons"][0]
    vs = comp["verdicts"]
    n = len(vs)
    outcomes = {
        o: sum(v["outcome"] == o for v in vs) for o in ("SLOWER", "FASTER", "SAME", "UNSURE", "NOT_GATEABLE")
    }
    judged = outcomes["SLOWER"] + outcomes["FASTER"] + outcomes["SAME"]
    mde5 = sum(v.get("mde") is not None and v["mde"] <= 0.05 for v in vs)
    mde2 = sum(v.get("mde") is not None and v["mde"] <= 0.02 for v in vs)
    full, lean = walls(log)
    out = [
        f"{name}: exit {doc['exit_code']}; runs {comp['runs']['baseline']} v {comp['runs']['candidate']}; "
        f"{n} figures: " + ", ".join(f"{v} {k}" for k, v in outcomes.items()),
        f"  judged {judged}/{n} ({judged / max(n, 1):.0%}); MDE <= 5%: {mde5}/{n} ({mde5 / max(n, 1):.0%}); "
        f"MDE <= 2%: {mde2}/{n} ({mde2 / max(n, 1):.0%})",
    ]
    if full or lean:
        out.append(
            f"  run walls: full {', '.join(f'{w:.0f}' for w in full)} s; lean "
            + (
                f"{min(lean):.0f}-{max(lean):.0f} s (median {sorted(lean)[len(lean) // 2]:.0f}, {len(lean)} runs)"
                if lean
                else "none"
            )
        )
    if comp.get("test_slowdown"):
        dev = [v for v in vs if v["metric"] == "device_ms" and v.get("mde") is not None and v["mde"] <= 0.02]
        caught = sum(v["outcome"] == "SLOWER" for v in dev)
        out.append(
            f"  slowdown {comp['test_slowdown']}: device time SLOWER on {caught}/{len(dev)} figures with MDE <= 2%"
        )
    for v in vs:
        if v["outcome"] in ("SLOWER", "FASTER"):
            out.append(
                f"    {v['outcome']} {v['benchmark'].split('::')[-1]} [{v['metric']}] {v['reason'][:150]}"
            )
    return out


def main(work: Path) -> int:
    lines = []
    steps = work / "steps.txt"
    if steps.is_file():
        lines += steps.read_text().splitlines()
    for vj in sorted(work.glob("*.verdict.json")):
        name = vj.name.removesuffix(".verdict.json")
        try:
            lines += describe(name, json.loads(vj.read_text()), work / f"{name}.log")
        except (KeyError, ValueError, IndexError) as exc:
            lines.append(f"{name}: unreadable verdict ({exc})")
    for log in sorted(work.glob("*.log")):
        tail = [
            ln
            for ln in log.read_text(errors="replace").splitlines()
            if ln.startswith(("aorta gate:", "aorta ab:", "baseline '"))
        ]
        lines += [f"[{log.stem}] {ln[:220]}" for ln in tail[-6:]]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
