"""The after runs judged against the before runs (scripts/gpu/same_figures.sh's pools, from one or more
device calls): an A/A through the gate's own command, ``aorta compare`` (the before runs are the baseline).

    python3 scripts/gpu/same_figures.py OUT_DIR DIR...   # DIR: an $OUT of same_figures.sh (holds before/, after/)

It prints the compare's exit code and verdict counts, then per benchmark the headline device time before and
after (median of the runs' medians, ms), the change, the verdict and the MDE the gate found; exit 0 when
nothing was judged SLOWER or FASTER.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gate_pairs  # noqa: E402

from aorta.record.table import format_table  # noqa: E402


def _runs(dirs: list[Path], side: str) -> list[Path]:
    return sorted(f for d in dirs for f in (d / side).glob("pool_*/*-[0-9]*.json"))


def _device_ms(files: list[Path]) -> dict[str, float]:
    """Benchmark -> median over runs of its device-time median (ms)."""
    per: dict[str, list[float]] = {}
    for f in files:
        for b in json.loads(f.read_text()).get("benchmarks", ()):
            per.setdefault(b["fullname"], []).append(b["stats"]["median"] * 1e3)
    return {k: statistics.median(v) for k, v in per.items()}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("dirs", type=Path, nargs="+")
    a = ap.parse_args(argv)
    before, after = _runs(a.dirs, "before"), _runs(a.dirs, "after")
    if not before or not after:
        print(f"need runs on both sides: {len(before)} before, {len(after)} after", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    doc = gate_pairs._compare(a.out, "after_vs_before", before, after)
    verdicts = gate_pairs._verdicts(doc)
    counts = Counter(v["outcome"] for v in verdicts)
    print(
        f"after ({len(after)} runs) vs before ({len(before)} runs): exit {doc['exit_code']}, "
        + ", ".join(f"{o} {counts[o]}" for o in gate_pairs.OUTCOMES)
    )
    ms_b, ms_a = _device_ms(before), _device_ms(after)
    rows = []
    for v in verdicts:
        if v["metric"] != gate_pairs.DEVICE_TIME:
            continue
        name = v["benchmark"]
        mde = "-" if v.get("mde") is None else f"{v['mde'] * 100:.1f}%"
        b, c = ms_b.get(name), ms_a.get(name)
        change = "-" if not (b and c) else f"{(c / b - 1) * 100:+.1f}%"
        rows.append(
            [
                name.split("::")[-1],
                f"{b:.4g}" if b else "-",
                f"{c:.4g}" if c else "-",
                change,
                v["outcome"],
                mde,
            ]
        )
    print("\n".join(format_table(["benchmark", "before ms", "after ms", "change", "verdict", "MDE"], rows)))
    moved = [v for v in verdicts if v["outcome"] in ("SLOWER", "FASTER")]
    for v in moved:
        print(f"moved: {v['benchmark']} {v['metric']} {v['outcome']}")
    return 1 if moved else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
