"""``aorta compare REF.json CAND.json [CAND2.json ...]``: the gate's verdicts offline, from saved runs.

The sample is the run: REF's runs (a baseline keeps several) are judged against the candidate's runs, which
are every CAND file together (each a run, or a document holding several: a baseline saved on the new stack,
or the JSON of ``pytest --aorta-runs N``). To judge two candidates apart, run the command once for each.

Same verdicts, outputs and exit codes as ``pytest --aorta-compare``: 0 clean, 10 a SLOWER verdict,
11 different hardware or a baseline whose runs mix machines (unless ``--allow-mismatch``), 14 scheduling settings differ (unless named in
``--allow-env-diff``), 12 nothing compared (no benchmark of a run is in
the baseline), 2 bad input (a file missing, empty, truncated, not JSON, not written by aorta, with a bad
sample, or a ``--verdict-json`` / ``--markdown`` / ``$GITHUB_STEP_SUMMARY`` place that cannot be written). Confirmation re-runs need the benchmarks, so they are pytest-only.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from aorta.environment.fingerprint import parse_allowed
from aorta.exit_codes import EXIT_MISMATCH, EXIT_SETTINGS_DIFFER, EXIT_USAGE, EXIT_WRITE_FAILED
from aorta.gate.baselines import baseline as bl
from aorta.gate.baselines.settings_check import settings_refusal
from aorta.gate.comparison.compare import GateSettings, aorta_machine, compare_runs, parse_threshold
from aorta.gate.outputs.outputs import write_outputs
from aorta.gate.outputs.render import overall_exit, terminal_lines
from aorta.gate.runs.blocks import LOOKS_KEY
from aorta.gate.stats.samples import repeated_run_notes
from aorta.record.output_arguments import appends_step_summary, output_argument
from aorta.record.output_paths import (
    OutputPathError,
    check_appendable,
    check_not_an_input,
    check_not_another_output,
    check_output_file,
)
from aorta.record.run_set import RunSet, read_runs
from aorta.stats.option_values import parse_alpha, parse_positive_ratio, parse_ratio


def argtype(fn):
    """An option parser (raising ValueError with the sentence) as an argparse type."""

    def parse(text: str):
        try:
            return fn(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def add_max_mde_argument(parser: argparse.ArgumentParser, default: float | None) -> None:
    parser.add_argument(
        "--max-mde",
        type=argtype(lambda t: parse_positive_ratio("--max-mde", t, "e.g. 5%")),
        default=default,
        metavar="RATIO",
        help="a figure whose minimum detectable effect exceeds RATIO is not gateable (default 0.05 = 5%%)",
    )


def add_compare_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "ref", metavar="REF.json", help="the baseline: a saved run (pytest-benchmark JSON by aorta)"
    )
    parser.add_argument(
        "cands",
        metavar="CAND.json",
        nargs="+",
        help="the candidate's runs (fresh processes of one stack), judged together against REF's runs",
    )
    add_judging_arguments(parser)
    parser.add_argument(
        "--allow-mismatch", action="store_true", help="compare even across GPU models or backends"
    )
    parser.add_argument(
        "--allow-env-diff",
        action="append",
        default=[],
        metavar="NAME[,NAME]",
        help="scheduling env vars (names or globs, '*' for all) that may differ between REF and CAND; "
        "any other difference is refused with exit 14",
    )
    add_output_arguments(parser, "beside the last CAND.json, as <CAND>.verdict.json")


def add_judging_arguments(parser: argparse.ArgumentParser) -> None:
    """How figures are judged: shared by ``aorta compare`` and ``aorta ab``."""
    parser.add_argument(
        "--min-effect",
        type=argtype(lambda t: parse_ratio("--min-effect", t)),
        default=None,
        metavar="RATIO",
        help="smallest relative change worth a SLOWER verdict (default 0.01 = 1%%)",
    )
    add_max_mde_argument(parser, None)
    parser.add_argument(
        "--threshold",
        type=argtype(parse_threshold),
        action="append",
        default=[],
        metavar="[BENCH:]METRIC=RATIO",
        help="per-metric / per-benchmark minimum effect (repeatable)",
    )
    parser.add_argument(
        "--alpha",
        type=argtype(parse_alpha),
        default=None,
        metavar="P",
        help="two-sided significance of the t test on run figures (default 0.01)",
    )
    parser.add_argument(
        "--min-judged",
        type=argtype(lambda t: parse_share("--min-judged", t)),
        default=None,
        metavar="SHARE",
        help="fewer than SHARE of the figures judged (SLOWER, FASTER or SAME) is inconclusive, exit 15 "
        "(default 50%%; none judged is always inconclusive)",
    )


def settings_from(args: argparse.Namespace, **kw) -> GateSettings:
    """The gate's settings from ``add_judging_arguments``' options (``kw``: the command's own)."""
    kw["thresholds"] = tuple(args.threshold)
    for name in ("min_effect", "alpha", "max_mde", "min_judged"):
        if getattr(args, name) is not None:
            kw[name] = getattr(args, name)
    return GateSettings(**kw)


def parse_share(option: str, text: str) -> float:
    value = parse_ratio(option, text)
    if value > 1:
        raise ValueError(f"{option}={text!r}: expected a share of the figures from 0 to 100%")
    return value


def add_output_arguments(parser: argparse.ArgumentParser, default_place: str) -> None:
    appends_step_summary(parser)
    output_argument(
        parser,
        "--verdict-json",
        default=None,
        metavar="PATH",
        help=f"verdict file (default: {default_place}; '' for none)",
    )
    output_argument(
        parser,
        "--markdown",
        default=None,
        metavar="PATH",
        help="markdown summary (also appended to $GITHUB_STEP_SUMMARY when set)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show SAME verdicts too")


def _label(path: str, run: Mapping) -> str:
    name = (run.get("aorta_baseline") or {}).get("name")
    return f"{name} ({path})" if name else path


def default_verdict_path(candidate: str) -> Path:
    """``runs/new.json`` -> ``runs/new.verdict.json``: beside what was judged, wherever the command runs."""
    p = Path(candidate)
    return p.with_name((p.name[:-5] if p.name.endswith(".json") else p.name) + ".verdict.json")


def _check_output_places(args: argparse.Namespace) -> None:
    if args.verdict_json is None:
        args.verdict_json = str(default_verdict_path(args.cands[-1]))
    inputs = {"the baseline": args.ref, **{f"the candidate file {c}": c for c in args.cands}}
    if args.verdict_json:
        check_output_file("--verdict-json", args.verdict_json)
        check_not_an_input("--verdict-json", args.verdict_json, inputs)
    if args.markdown:
        check_output_file("--markdown", args.markdown)
        check_not_an_input("--markdown", args.markdown, inputs)
        if args.verdict_json:  # the default verdict place, known only now
            check_not_another_output("--markdown", args.markdown, {"--verdict-json": args.verdict_json})
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        check_appendable("$GITHUB_STEP_SUMMARY", os.environ["GITHUB_STEP_SUMMARY"])


def run_compare(args: argparse.Namespace) -> int:
    try:
        _check_output_places(args)
    except OutputPathError as exc:
        print(f"aorta compare: {exc}", file=sys.stderr)
        return EXIT_USAGE
    runs: dict[str, RunSet] = {}  # each file's runs, read once: every question below takes them
    for path in [args.ref, *args.cands]:
        try:
            runs[path] = read_runs(bl.load_run(path))
            bl.baseline_runs(runs[path], source=path)  # stored runs are checked before any verdict
        except bl.BaselineError as exc:
            print(f"aorta compare: {exc}", file=sys.stderr)
            return EXIT_USAGE
    mixed = None if args.allow_mismatch else bl.mixed_machines(runs[args.ref], args.ref)
    if mixed:
        print(f"aorta compare: {mixed}", file=sys.stderr)
        return EXIT_MISMATCH
    refusals = [
        settings_refusal(
            aorta_machine(runs[args.ref].doc),
            aorta_machine(runs[c].doc),
            parse_allowed(args.allow_env_diff),
            baseline=args.ref,
            candidate=c,
            allow_option="--allow-env-diff",
        )
        for c in args.cands
    ]
    if any(refusals):
        for refusal in filter(None, refusals):
            print(f"aorta compare: {refusal}", file=sys.stderr)
        return EXIT_SETTINGS_DIFFER
    # an auto gate's runs were judged at its looks' level: judged again, at the same (issue 45, item 5)
    looks = max(int((runs[c].doc.get(LOOKS_KEY) or {}).get("looks") or 1) for c in args.cands)
    settings = settings_from(args, allow_mismatch=args.allow_mismatch, looks=looks)
    ref = runs[args.ref]
    cand = (
        read_runs(bl.combine_runs([runs[c] for c in args.cands], list(args.cands)))
        if len(args.cands) > 1
        else runs[args.cands[0]]
    )
    for path in [args.ref, *args.cands]:
        for note in repeated_run_notes(runs[path], path):
            print(f"aorta compare: note: {note}", file=sys.stderr)
    if len(args.cands) > 1:
        for note in repeated_run_notes(cand, "the candidate's files together"):
            print(f"aorta compare: note: {note}", file=sys.stderr)
    cand_label = (
        _label(args.cands[0], cand.doc)
        if len(args.cands) == 1
        else f"{len(args.cands)} files ({', '.join(args.cands)})"
    )
    comps = [compare_runs(ref, cand, settings, ref_label=_label(args.ref, ref.doc), cand_label=cand_label)]
    code = overall_exit(comps)
    for comp in comps:
        for line in terminal_lines(comp, verbose=args.verbose):
            print(line)
        print()
    try:
        for line in write_outputs(
            comps, code, verdict_json=args.verdict_json or None, markdown_path=args.markdown
        ):
            print(line)
    except OSError as exc:
        places = [
            f"{o} {v}" for o, v in (("--verdict-json", args.verdict_json), ("--markdown", args.markdown)) if v
        ]
        if os.environ.get("GITHUB_STEP_SUMMARY"):
            places.append(f"$GITHUB_STEP_SUMMARY {os.environ['GITHUB_STEP_SUMMARY']}")
        print(f"aorta compare: could not write {' or '.join(places)}: {exc}", file=sys.stderr)
        return EXIT_WRITE_FAILED  # the verdicts were made: an output lost, not a bad input (issue 65)
    print(f"aorta compare: exit {code}")
    return code
