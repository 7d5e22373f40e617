"""How much pairing runs by block buys on real runs: for a baseline and a candidate document that hold runs of
the same blocks (an auto gate's baseline and the ``--benchmark-json`` of its compare), each figure's between-run
noise as independent runs and within blocks, and how many figures either way reach an MDE within the bound at
the auto gate's look level (issue 45; docs/gate.md, "Runs as blocks, judged paired").

    python3 scripts/pairing_table.py .aorta/baselines/<machine>/p0.json compare.json [--all]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys

from scipy import stats as sps

from aorta.gate.runs.blocks import pair
from aorta.gate.stats.samples import baseline_runs, run_blocks
from aorta.gate.stats.sequential import look_alpha
from aorta.gate.verdicts.verdict import DEFAULT_ALPHA
from aorta.stats.noise import DEFAULT_MAX_MDE, DEFAULT_POWER, run_value


def _mde(sigma: float, df: int, n: int) -> float:
    level = look_alpha(DEFAULT_ALPHA)
    k = float(sps.t.ppf(1.0 - level / 2.0, df) + sps.t.ppf(DEFAULT_POWER, df))
    return math.expm1(k * sigma * math.sqrt(2.0 / n))


def rows(ref: dict, cand: dict) -> list[tuple[str, str, float, float, int]]:
    """(benchmark, figure, sigma as independent runs, sigma within blocks, pairs) per figure both hold."""
    rr, cr, rb, cb = baseline_runs(ref), baseline_runs(cand), run_blocks(ref), run_blocks(cand)
    out = []
    for name in rr[0]:
        for fig in rr[0][name]:
            rv = [(run_value(r[name][fig]), b) for r, b in zip(rr, rb) if r.get(name, {}).get(fig)]
            cv = [(run_value(r[name][fig]), b) for r, b in zip(cr, cb) if r.get(name, {}).get(fig)]
            p = pair(
                [v for v, _ in rv], [b for _, b in rv], [v for v, _ in cv], [b for _, b in cv], min_pairs=2
            )
            if p is None:
                continue
            unpaired = math.sqrt((statistics.variance(p.ref_logs) + statistics.variance(p.cand_logs)) / 2.0)
            out.append((name, fig, unpaired, p.sd / math.sqrt(2.0), p.pairs))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("baseline")
    ap.add_argument("candidate")
    ap.add_argument("--all", action="store_true", help="one line per figure too")
    args = ap.parse_args(argv)
    table = rows(*(json.load(open(p)) for p in (args.baseline, args.candidate)))
    if not table:
        print("pairing_table: no figure has runs of two shared blocks on both sides", file=sys.stderr)
        return 2
    n = min(r[4] for r in table)
    print(f"{len(table)} figures, {n} pairs")
    for label, i in (("independent runs", 2), ("within blocks", 3)):
        sig = [r[i] for r in table]
        df = 2 * n - 2 if i == 2 else n - 1
        gate = sum(_mde(s, df, n) <= DEFAULT_MAX_MDE for s in sig)
        print(
            f"{label:17} median noise {statistics.median(sig) * 100:.2f}%, <= 1%: {sum(s <= 0.01 for s in sig)}, "
            f"MDE <= {DEFAULT_MAX_MDE * 100:g}% at {n} runs: {gate}"
        )
    if args.all:
        for name, fig, u, p, _ in sorted(table, key=lambda r: r[2]):
            print(f"{name.split('::')[-1]:50} {fig:28} {u * 100:6.2f}% {p * 100:6.2f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
