"""How many figures a compare of N runs a side could gate, from the between-run noise runs measured.

    python3 scripts/gate_projection.py --group a1.json a2.json a3.json --group b1.json b2.json ...

Each ``--group`` is runs of one stack on one machine (pytest-benchmark JSON written by aorta, or a gate's
baseline); a figure's noise is pooled over the groups, each about its own mean (aorta/stats/noise.py). For each N
the table gives the figures whose MDE with N baseline and N candidate runs (df 2N - 2, two-sided alpha per look
of the auto gate, power 0.95) is within 5% and within 2%. A projection from measured noise, not a compare: it
assumes the noise stays as measured."""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from aorta.gate.stats.samples import baseline_runs
from aorta.gate.stats.sequential import LOOKS
from aorta.stats import noise


def figure_values(paths: list[str]) -> dict[tuple[str, str], list[float]]:
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for path in paths:
        with open(path) as fh:
            doc = json.load(fh)
        for run in baseline_runs(doc, path):
            for bench, figs in run.items():
                for name, samples in figs.items():
                    if samples:
                        out[(bench, name)].append(noise.run_value(samples))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", nargs="+", action="append", required=True, metavar="RUN.json")
    ap.add_argument(
        "--alpha", type=float, default=0.01, help="the gate's alpha (default 0.01), split over its looks"
    )
    ap.add_argument("--runs", default="3,5,8,12,20", help="runs a side to project for")
    args = ap.parse_args(argv)
    groups = [figure_values(g) for g in args.group]
    keys = sorted(set().union(*groups))
    look_alpha = args.alpha / len(LOOKS)
    print(
        f"{len(keys)} figures; noise pooled over {len(groups)} group(s) of {[len(g) for g in args.group]} file(s); "
        f"alpha {look_alpha:g} per look, power {noise.DEFAULT_POWER}"
    )
    print("runs a side | MDE <= 5% | MDE <= 2%")
    for n in (int(x) for x in args.runs.split(",")):
        within = {0.05: 0, 0.02: 0}
        for key in keys:
            pooled = noise.pooled_noise(*(g.get(key, []) for g in groups))
            if pooled is None:
                continue
            m = noise.mde(noise.Noise(pooled.sigma, 2 * n - 2, pooled.runs), n, n, alpha=look_alpha)
            for bound in within:
                within[bound] += m <= bound
        print(
            f"{n:>11} | {within[0.05]} ({within[0.05] / len(keys):.0%}) | {within[0.02]} ({within[0.02] / len(keys):.0%})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
