#!/usr/bin/env python3
"""The change-point detector on simulated histories built from recorded GPU runs (issue 40).

Reads the A/A pools of docs/data/gate_pools (fresh-process runs of one stack on lent H100 and H200 machines),
takes each figure's run figures per machine model, and simulates 200-run histories with steps of 2%, 5% and
20% where the stack changed (aorta/history/simulation.py). Prints the markdown table of docs/measurements.md.

    python3 scripts/history_simulation.py [--pools docs/data/gate_pools] [--repeats 3] [--seed 40]
        [--alpha 0.001] [--otava PYTHON]   # also Apache Otava on the same histories, run by a Python that has apache-otava
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
from collections import defaultdict
from pathlib import Path

from aorta.gate.stats.samples import baseline_runs
from aorta.history.simulation import band_of, histories, residuals, run_simulation, table_lines, tally
from aorta.record.machines import machine_key
from aorta.stats.noise import run_value

AA_POOLS = ("pool_a", "pool_c", "pool_d", "pool_e", "pool_g", "pool_f1", "pool_f2", "pool_f3", "pool_wa")
MIN_RUNS = 4


def pool_runs(path: Path) -> list[dict]:
    with tarfile.open(path) as tar:
        return [
            json.load(tar.extractfile(m))  # type: ignore[arg-type]
            for m in sorted(tar.getmembers(), key=lambda m: m.name)
            if m.name.endswith(".json")
        ]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pools", type=Path, default=Path("docs/data/gate_pools"))
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=40)
    p.add_argument("--alpha", type=float, default=0.001, help="the detector's alpha (default 0.001)")
    p.add_argument("--otava", default=None, metavar="PYTHON", help="a Python with apache-otava installed")
    args = p.parse_args()
    values: dict[str, list[float]] = defaultdict(list)
    for name in AA_POOLS:
        path = args.pools / f"{name}.tgz"
        if not path.is_file():
            print(f"history_simulation: {path}: no such pool", file=sys.stderr)
            return 2
        for doc in pool_runs(path):
            model = machine_key(doc)
            for run in baseline_runs(doc, str(path)):
                for bench, figs in run.items():
                    for fig, samples in figs.items():
                        if samples:
                            values[f"{model} {bench} {fig}"].append(run_value(samples))
    usable = {k: v for k, v in values.items() if len(v) >= MIN_RUNS and all(x > 0 for x in v)}
    counts: dict = defaultdict(int)
    for v in usable.values():
        counts[band_of(float(residuals(v).std(ddof=1)))] += 1
    counts[None] = len(usable)
    aware = run_simulation(usable, seed=args.seed, repeats=args.repeats, stack_aware=True, alpha=args.alpha)
    blind = run_simulation(usable, seed=args.seed, repeats=args.repeats, stack_aware=False, alpha=args.alpha)
    other = _otava(args.otava, usable, args.seed, args.repeats) if args.otava else None
    models = sorted({k.split(" ")[0] for k in usable})
    print(
        f"{len(usable)} figures with {MIN_RUNS}+ recorded runs ({', '.join(models)}), {args.repeats} histories each"
    )
    print("\n".join(table_lines(aware, blind, counts, other, "Otava")))
    return 0


def _otava(python: str, usable: dict, seed: int, repeats: int) -> dict:
    """Otava's change points on the same histories (scripts/otava_histories.py, in its own Python)."""
    hist = histories(usable, seed=seed, repeats=repeats)
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "histories.json", Path(tmp) / "found.json"
        src.write_text(json.dumps([list(map(float, v)) for _, _, v in hist]))
        script = Path(__file__).with_name("otava_histories.py")
        subprocess.run([python, str(script), str(src), str(dst)], check=True)
        found = json.loads(dst.read_text())
    return tally([(step, band, f) for (step, band, _), f in zip(hist, found)])


if __name__ == "__main__":
    sys.exit(main())
