"""``aorta noise RUNS.json [RUNS.json ...]``: this machine's noise profile, offline (pure: no torch).

What the gate can judge here, before a compare depends on it: the runs (a baseline's, the JSON of
``pytest --aorta-runs N``, or plain run files, every file together as runs of one stack on one machine) give
each figure's between-run noise and the minimum detectable effect (MDE) of a compare with ``--baseline-runs``
and ``--candidate-runs`` runs (``aorta.stats.noise``). A figure whose MDE exceeds ``--max-mde`` is not
gateable on this machine; the table says so with the figure, the summary counts them, and the runs' own
reading notes (host-bound, power-limited) are printed beside the benchmarks they may explain. Runs from
several machines give the noise that a compare across those machines meets (machine offsets included).

Exit codes: 0 the profile was printed, 2 bad input (a file missing or not aorta's, a bad sample, fewer than
two runs in all: one run tells nothing about the noise between runs).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from aorta.exit_codes import EXIT_USAGE
from aorta.gate.baselines import baseline as bl
from aorta.gate.cli import add_max_mde_argument, argtype
from aorta.gate.stats.samples import baseline_runs, repeated_run_notes, run_keys, run_machines
from aorta.gate.verdicts.verdict import DEFAULT_ALPHA
from aorta.record import record_of, write_json_atomic
from aorta.record.output_arguments import output_argument
from aorta.record.output_paths import OutputPathError, check_output_file
from aorta.record.run_identity import repeats
from aorta.record.run_samples import DEVICE_TIME
from aorta.record.run_set import read_runs
from aorta.record.table import format_table
from aorta.stats.noise import DEFAULT_MAX_MDE, Noise, mde, pooled_noise, run_value
from aorta.stats.option_values import parse_alpha, parse_whole


def add_noise_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", metavar="RUNS.json", nargs="+", help="runs of one stack on one machine")
    parser.add_argument(
        "--baseline-runs",
        type=argtype(lambda t: parse_whole("--baseline-runs", t, 2, None, "runs")),
        default=None,
        metavar="M",
        help="baseline runs of the compare to plan for (default: as many as given)",
    )
    parser.add_argument(
        "--candidate-runs",
        type=argtype(lambda t: parse_whole("--candidate-runs", t, 1, None, "runs")),
        default=3,
        metavar="N",
        help="candidate runs of the compare to plan for (default 3, the gate-grade default)",
    )
    add_max_mde_argument(parser, DEFAULT_MAX_MDE)
    parser.add_argument(
        "--alpha", type=argtype(parse_alpha), default=DEFAULT_ALPHA, metavar="P", help="default 0.01"
    )
    parser.add_argument("--all-figures", action="store_true", help="every figure, not only device time")
    output_argument(parser, "--json", default=None, metavar="PATH", help="the profile as JSON too")


def profile_rows(
    runs: list[dict], *, baseline_n: int, candidate_n: int, alpha: float, max_mde: float, all_figures: bool
) -> list[dict]:
    """One row per benchmark and figure: the runs that hold it, the between-run noise of its log run
    figures, the MDE of a ``baseline_n`` vs ``candidate_n`` compare, gateable or why not."""
    rows = []
    names = dict.fromkeys(n for r in runs for n in r)
    for name in names:
        figs = dict.fromkeys(f for r in runs if name in r for f in r[name])
        for fig in figs:
            if fig != DEVICE_TIME and not all_figures:
                continue
            values = [run_value(r[name][fig]) for r in runs if r.get(name, {}).get(fig)]
            row: dict = {"benchmark": name, "figure": fig, "runs": len(values)}
            noise = pooled_noise(values)
            if noise is None:
                why = "values at or below zero" if any(v <= 0 for v in values) else "fewer than two runs"
                rows.append({**row, "gateable": False, "reason": why})
                continue
            # the compare's degrees of freedom, with the noise as measured here
            planned = Noise(noise.sigma, baseline_n + candidate_n - 2, noise.runs)
            m = mde(planned, baseline_n, candidate_n, alpha=alpha)
            row.update(sigma_log=noise.sigma, mde=m, gateable=m <= max_mde)
            if m > max_mde:
                row["reason"] = f"MDE {m * 100:.3g}% exceeds {max_mde * 100:.3g}%"
            rows.append(row)
    return rows


def reading_notes(doc: Mapping) -> dict[str, str]:
    """fullname -> the first reading note a benchmark of ``doc`` carries (host-bound, power-limited, ...)."""
    out = {}
    for b in doc.get("benchmarks", ()):
        notes = record_of(b).reading_notes
        if notes:
            out[b["fullname"]] = notes[0]
    return out


def _each_run_once(
    runs: list, machines: list[str], sources: list[str], keys: list[str]
) -> tuple[list, list[str]]:
    """The same run in two files (or one file given twice) is one run: no noise is seen between a run and
    itself (issue 38, case 13: ``aorta noise run.json run.json run.json`` read noise 0.00%, gateable)."""
    again = repeats(keys)
    for i, j in again.items():
        print(
            f"aorta noise: note: run {i + 1} ({sources[i]}) holds the same samples as run {j + 1} "
            f"({sources[j]}): one run, counted once",
            file=sys.stderr,
        )
    keep = [i for i in range(len(runs)) if i not in again]
    return [runs[i] for i in keep], [machines[i] for i in keep if i < len(machines)]


def run_noise(args: argparse.Namespace) -> int:
    try:
        if args.json:
            check_output_file("--json", args.json)
        runs, notes, machines = [], {}, []
        sources: list[str] = []
        keys: list[str] = []
        for path in args.runs:
            held = read_runs(bl.load_run(path))  # read once: every question below takes its runs
            for note in repeated_run_notes(held, path):
                print(f"aorta noise: note: {note}", file=sys.stderr)
            found = baseline_runs(held, path)
            runs += found
            keys += run_keys(held)
            sources += [path] * len(found)
            machines += run_machines(held)
            notes.update(reading_notes(held.doc))
        runs, machines = _each_run_once(runs, machines, sources, keys)
    except (bl.BaselineError, OutputPathError) as exc:
        print(f"aorta noise: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if len(runs) < 2:
        print(
            f"aorta noise: {len(runs)} run in {', '.join(args.runs)}: the noise between runs needs two or more "
            "(save with --aorta-runs N, or give several run files)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    base_n = args.baseline_runs or len(runs)
    rows = profile_rows(
        runs,
        baseline_n=base_n,
        candidate_n=args.candidate_runs,
        alpha=args.alpha,
        max_mde=args.max_mde,
        all_figures=args.all_figures,
    )
    table = [
        [
            r["benchmark"].split("::")[-1],
            r["figure"],
            str(r["runs"]),
            "-" if "sigma_log" not in r else f"{r['sigma_log'] * 100:.2f}%",
            "-" if "mde" not in r else f"{r['mde'] * 100:.1f}%",
            "yes" if r["gateable"] else f"no: {r['reason']}",
        ]
        for r in rows
    ]
    heads = ["benchmark", "figure", "runs", "noise", f"MDE {base_n}v{args.candidate_runs}", "gateable"]
    print("\n".join(format_table(heads, table)))
    noisy = dict.fromkeys(r["benchmark"] for r in rows if not r["gateable"] and r["benchmark"] in notes)
    for name in noisy:
        for r in rows:
            if r["benchmark"] == name and not r["gateable"]:
                r["reading_note"] = notes[name]
    if noisy:
        print("\nwhy some may be noisy (the runs' own reading notes):")
        print("\n".join(f"  {name.split('::')[-1]}: {notes[name]}" for name in noisy))
    gateable = sum(r["gateable"] for r in rows)
    print(
        f"\n{len(runs)} runs; {gateable} of {len(rows)} figures gateable at MDE <= {args.max_mde * 100:g}% with "
        f"{base_n} baseline and {args.candidate_runs} candidate runs (alpha {args.alpha:g}, power 0.95)"
        + (
            ""
            if args.all_figures
            else "; device time only: --all-figures for every figure, as the save line counts"
        )
    )
    known = {m for m in machines if m}
    if len(known) > 1:
        print(
            f"the runs come from {len(known)} machines: the noise above includes how far machines differ; "
            "a compare on a machine the baseline holds no run of adds it again (docs/gate.md, Machines)"
        )
    if args.json:
        doc = {
            "runs": len(runs),
            "machines": len(known),
            "baseline_runs": base_n,
            "candidate_runs": args.candidate_runs,
            "rows": rows,
        }
        write_json_atomic(args.json, doc)  # whole or not at all (a full disk left a 0-byte file)
    return 0
