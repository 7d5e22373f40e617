"""Rounds per run for each benchmark of a baseline, from its runs' own variance components and costs
(Kalibera and Jones, ISMM 2013; ``aorta/stats/rounds_plan.py``): the table behind a choice of ``--aorta-rounds``.

    python3 scripts/rounds_plan.py BASELINE.json [--run-wall-s S] [--paired RUN.json ...]

Reads each stored run's per-round device times (``device_ms``) for the within-run and between-run variance
(``--paired``: lean runs of an A/A compare against it, their blocks matched by order seed: the between-run
variance left within blocks, which is what a paired compare meets, var(d) / 2 - within / rounds); a
round's cost is the benchmark's timed seconds over its rounds (``timed_s`` in the document's latest entry), a
run's cost ``--run-wall-s`` (default: the document's own record, ``aorta_wall``, plus 2 s of process start) less
that benchmark's rounds. Pure: no torch, no GPU.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys

from aorta.stats.rounds_plan import Components, best_rounds, components, variance_per_second


def _paired(comp: Components, base_runs: dict, cand: dict, name: str) -> Components | None:
    """``comp`` with its between-run part measured within blocks (one A/A run of each seed against the baseline's)."""
    d = []
    for seed, run in base_runs.items():
        if seed in cand and name in cand[seed] and name in run.get("benchmarks", {}):
            a = [math.log(x) for x in run["benchmarks"][name]["device_ms"]]
            b = [math.log(x) for x in cand[seed][name]]
            d.append(statistics.fmean(b) - statistics.fmean(a))
    if len(d) < 3:
        return None
    return Components(
        comp.within, max(statistics.variance(d) / 2 - comp.within / comp.rounds, 0.0), len(d), comp.rounds
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("baseline")
    ap.add_argument("--run-wall-s", type=float, default=None)
    ap.add_argument("--paired", nargs="*", default=[], metavar="RUN.json")
    args = ap.parse_args(argv)
    doc = json.load(open(args.baseline))
    runs = [
        r
        for r in (doc.get("aorta_baseline") or {}).get("runs", [])
        if (r.get("block") or {}).get("kind") == "lean"
    ]
    if len(runs) < 2:
        print("rounds_plan: need at least two lean runs", file=sys.stderr)
        return 2
    base_runs = {int(r["block"]["seed"]): r for r in runs}
    cand: dict[int, dict] = {}
    for path in args.paired:
        d = json.load(open(path))
        if (d.get("aorta_run") or {}).get("kind") == "lean":
            cand[int(d["aorta_run"]["seed"])] = {b["fullname"]: b["stats"]["data"] for b in d["benchmarks"]}
    wall = args.run_wall_s or float((doc.get("aorta_wall") or {}).get("tests_s", 0.0)) + 2.0
    entries = {b["fullname"]: b for b in doc.get("benchmarks", [])}
    print(f"{len(runs)} lean runs{f', {len(cand)} paired' if cand else ''}; a run's cost {wall:.1f} s")
    print(
        f"{'benchmark':62s} {'rounds':>6s} {'within':>7s} {'between':>7s} {'round s':>8s} {'best r':>6s} {'gain':>6s}"
    )
    gains = []
    for name in sorted(entries):
        per_run = [r["benchmarks"][name]["device_ms"] for r in runs if name in r.get("benchmarks", {})]
        comp = components(per_run)
        if comp is not None and cand:
            comp = _paired(comp, base_runs, cand, name)
        info = entries[name].get("extra_info") or {}
        rounds = statistics.median(len(x) for x in per_run) if per_run else 0
        timed = float(info.get("timed_s") or 0.0)
        if comp is None or not timed or not rounds:
            continue
        c_round = timed / rounds
        c_run = max(wall - timed, c_round)
        r = best_rounds(comp, c_run, c_round)
        gain = variance_per_second(comp, rounds, c_run, c_round) / variance_per_second(
            comp, r, c_run, c_round
        )
        gains.append(gain)
        print(
            f"{name.rsplit('::', 1)[-1][:62]:62s} {rounds:6.0f} {comp.within_sd * 100:6.2f}% {comp.between_sd * 100:6.2f}%"
            f" {c_round:8.4f} {r:6d} {gain:5.2f}x"
        )
    print(f"median gain in variance per second at the best rounds: {statistics.median(gains):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
