"""``aorta report`` and ``aorta trace merge``: argument set-up and entry points (exit 2 on bad input)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from aorta.exit_codes import EXIT_SIGNAL_BASE, EXIT_USAGE, EXIT_WRITE_FAILED
from aorta.record.output_arguments import output_argument, reads_folder
from aorta.record.stop_signals import Stopped, stop_signals_raise
from aorta.record.storage_faults import fault_words
from aorta.report.errors import ReportInputError


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Compare saved runs (pytest-benchmark JSON written by aorta, FSDP run or artifacts "
        "folders): summary.json, figures and one self-contained report.html in --output."
    )
    reads_folder(
        parser.add_argument(
            "--run",
            action="append",
            default=[],
            metavar="PATH",
            help="a pytest-benchmark JSON file, or an FSDP folder holding rank_<r>_metrics.jsonl (itself or its "
            "artifacts/; a benchmark JSON beside them is read too); repeat, one per run",
        )
    )
    parser.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="L",
        help="the name of the --run before it (repeat, one per --run, each different)",
    )
    reads_folder(
        parser.add_argument(
            "--sweep",
            action="append",
            default=[],
            metavar="DIR",
            help="an 'aorta sweep' folder (repeat, one per stack; the first is the reference): heatmaps over the "
            "grid and, with two or more, each cell's verdicts and ratios between the stacks",
        )
    )
    parser.add_argument("--reference", metavar="L", help="label of the run to compare against")
    parser.add_argument("--candidate", metavar="L", help="label of the run compared with --reference")
    parser.add_argument(
        "--verdicts", metavar="FILE", help="a verdict JSON file from the regression gate to show"
    )
    output_argument(
        parser,
        "--output",
        kind="renamed",
        required=True,
        metavar="DIR",
        help="report folder (replaced only when complete)",
    )


def run_report(args: argparse.Namespace) -> int:
    """Build the report (runs, or sweeps with ``--sweep``); bad input is exit 2 with one line, before any file
    is written."""
    try:
        with stop_signals_raise():  # SIGTERM, SIGHUP: the report's temp folder is removed (issue 38, case 5)
            summary = _build_sweep_report(args) if args.sweep else _build_run_report(args)
    except (Stopped, KeyboardInterrupt) as exc:
        name = exc.name if isinstance(exc, Stopped) else "SIGINT"
        print(
            f"aorta report: interrupted by {name}: no report written; --output {args.output} is as it was",
            file=sys.stderr,
        )
        return EXIT_SIGNAL_BASE + (exc.signum if isinstance(exc, Stopped) else signal.SIGINT)
    except ReportInputError as exc:
        print(f"aorta report: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # disk full while building: the report is built aside, the old one stays
        print(
            f"aorta report: error: cannot write the report under --output {args.output}: "
            f"{fault_words(exc)}; the earlier report, if any, is unchanged",
            file=sys.stderr,
        )
        return EXIT_WRITE_FAILED
    page = Path(args.output) / "report.html"
    (_print_sweep_report if args.sweep else _print_run_report)(summary, page)
    return 0


def _build_run_report(args: argparse.Namespace) -> dict:
    from aorta.report.build import write_report

    if not args.run:
        raise ReportInputError("give --run PATH --label L (one pair per run) or --sweep DIR")
    if len(args.run) != len(args.label):
        raise ReportInputError(
            f"{len(args.run)} --run and {len(args.label)} --label: give one --label per --run"
        )
    return write_report(
        list(zip(args.run, args.label)),
        args.output,
        reference=args.reference,
        candidate=args.candidate,
        verdicts_path=args.verdicts,
    )


def _print_run_report(summary: dict, page: Path) -> None:
    print(f"aorta report: {len(summary['runs'])} runs, {len(summary['figure_files'])} figures -> {page}")
    if summary.get("world_size_scaling"):
        from aorta.report.world_scaling import view_lines

        for line in view_lines(summary["world_size_scaling"]):
            print(line)
    if summary["comparison"]:
        print(f"biggest changes ({summary['candidate']} / {summary['reference']}):")
        for row in summary["comparison"][:5]:
            print(
                f"  {row['configuration']} {row['metric']}: {row['change_pct']:+.1f}%"
                f" ({'better' if row['better'] else 'worse' if row['better'] is False else 'same'})"
            )


def _build_sweep_report(args: argparse.Namespace) -> dict:
    from aorta.report.build import write_sweep_report

    if args.run or args.label or args.reference or args.candidate or args.verdicts:
        raise ReportInputError(
            "--sweep makes a report of its own: leave out --run, --label, --reference, --candidate and "
            "--verdicts (a sweep is labelled by 'aorta sweep --label'; the first --sweep is the reference)"
        )
    return write_sweep_report(args.sweep, args.output)


def _print_sweep_report(summary: dict, page: Path) -> None:
    print(f"aorta report: {len(summary['sweeps'])} sweeps, {len(summary['heatmaps'])} heatmaps -> {page}")
    from aorta.report.knob_doubt import doubt_line

    for label, items in summary["best"].items():
        for b in items:
            if b.get("no_knob_evidence"):  # issue 38, case 25: no best named where no setting took effect
                print(doubt_line(label, b))
                continue
            print(
                f"  best in {label}: {b['configuration']} {b['metric']} {b['value']:.4g} {b['unit']} at {b['cell']}"
            )
    for comp in summary["comparisons"]:
        print(f"where {comp['candidate']} and {comp['reference']} disagree most:")
        for r in comp["disagree_most"][:5]:
            print(f"  {r['cell']}: {r['configuration']} {r['metric']} x{r['ratio']:.3f} ({r['verdict']})")


def trace_inputs(args: argparse.Namespace) -> dict[str, Path]:
    """The files ``aorta trace figures`` reads beside each trace named: a rocprofv3 ``kernel_trace.csv``'s
    siblings (its memory copies, API calls), each an input no output may replace (issue 65)."""
    from aorta.timeline.rocprof_csv import files_read

    return {
        f"a trace file read with {trace} ({f.name})": f
        for trace in map(Path, args.traces)
        if trace.is_file()
        for f in files_read(trace)
        if f != trace
    }


def add_trace_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="trace_command", required=True, metavar="{merge,figures}")
    merge = sub.add_parser(
        "merge",
        help="merge per-rank profiler traces into one, with a rank-asymmetry check",
        description="Merge per-rank torch.profiler Chrome traces (.json, .json.gz, "
        "*.pt.trace.json): one process per rank, timestamps aligned.",
    )
    merge.add_argument("traces", nargs="+", metavar="RANK_TRACE")
    output_argument(merge, "--output", required=True, metavar="merged.json")
    merge.add_argument(
        "--align",
        default="auto",
        choices=("auto", "base-time", "first-step"),
        help="auto: baseTimeNanoseconds when every trace has it, else first common ProfilerStep",
    )
    output_argument(
        merge,
        "--per-rank",
        kind="dir",
        metavar="DIR",
        help="also write one trace per rank here (rank<N>.json, with distributedInfo.rank, aligned as the "
        "merge): the folder Holistic Trace Analysis reads as one rank per file",
    )
    merge.add_argument(
        "--threshold",
        type=float,
        default=0.10,
        metavar="RATIO",
        help="flag a rank whose figure differs from the median by more than this (default 0.10)",
    )

    figures = sub.add_parser(
        "figures",
        help="per step and rank: kernels, busy, overlap, exposed comm, idle (and per hardware queue) of traces",
        description="The FSDP suite's figures from your own traces, one file per rank: Kineto Chrome traces "
        "(.json, .json.gz), rocprofv3 CSV (a file or a folder) or its rocpd database (.db). docs/traces.md",
    )
    reads_folder(figures.add_argument("traces", nargs="+", metavar="TRACE"))
    figures.set_defaults(_inputs=trace_inputs)
    output_argument(figures, "--json", metavar="PATH", help="also write every figure as JSON here")
    figures.add_argument("--steps", action="store_true", help="one row per step (default: median per rank)")


def run_trace_figures(args: argparse.Namespace) -> int:
    from aorta.record import write_json_atomic
    from aorta.record.output_paths import OutputPathError, check_output_file
    from aorta.report import trace_figures

    try:
        if args.json:
            try:  # before reading any trace
                check_output_file("--json", Path(args.json))
            except OutputPathError as exc:
                raise ReportInputError(str(exc)) from None
        result = trace_figures.figures(args.traces)
    except ReportInputError as exc:
        print(f"aorta trace figures: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:  # before the table: a reader that stops reading it (| head) still gets the file
        write_json_atomic(Path(args.json), result)
    for line in trace_figures.format_figures(result, steps=args.steps):
        print(line)
    if args.json:
        print(f"figures: {args.json}")
    refused = [e for e in result["ranks"] if not e["steps"]]
    for e in refused:  # a file that gave no figure is refused: one line naming it, and a non-zero exit
        print(f"aorta trace figures: error: {e['path']}: {e['per_step_reason']}", file=sys.stderr)
    return EXIT_USAGE if refused else 0


def diagnostic_path(output: Path) -> Path:
    name = output.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return output.with_name(name + ".ranks.json")


def run_trace(args: argparse.Namespace) -> int:
    """``aorta trace``; a reader that closed the pipe (``aorta trace figures ... | head``) ends it quietly, as
    coreutils do on SIGPIPE: exit 141, no traceback (the --json and merged files are written before the table)."""
    try:
        code = _run_trace(args)
        sys.stdout.flush()  # inside the guard: a full buffer flushed at exit would raise past it
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's flush at exit writes nowhere, and says nothing
        return EXIT_BROKEN_PIPE


EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # 141: what a shell reports for a writer killed by SIGPIPE


def _run_trace(args: argparse.Namespace) -> int:
    if args.trace_command == "figures":
        return run_trace_figures(args)
    import gzip
    import json

    from aorta.record import write_bytes_atomic, write_json_atomic, write_text_atomic
    from aorta.record.output_paths import OutputPathError, check_output_file
    from aorta.report import trace_merge

    out = Path(args.output)
    try:
        try:  # before reading any trace: the merged file and its .ranks.json go beside each other
            check_output_file("--output", out)
        except OutputPathError as exc:
            raise ReportInputError(str(exc)) from None
        folder = Path(args.per_rank) if args.per_rank else None
        if folder is not None and folder.exists() and not folder.is_dir():
            raise ReportInputError(f"--per-rank {folder}: exists and is not a folder")
        traces = trace_merge.load_rank_traces(args.traces)
        diag = trace_merge.asymmetry(traces, args.threshold)
        merged = trace_merge.merge(traces, args.align)
    except ReportInputError as exc:
        print(f"aorta trace merge: error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    def write(path: Path, doc: dict) -> None:
        if path.name.endswith(".gz"):
            write_bytes_atomic(path, gzip.compress(json.dumps(doc).encode()))
        else:
            write_text_atomic(path, json.dumps(doc))

    diag["alignment"] = merged["otherData"]["aorta_merge"]["alignment"]
    diag["merged_trace"] = str(out)
    write(out, merged)
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        suffix = ".json.gz" if out.name.endswith(".gz") else ".json"
        for rank, doc in trace_merge.per_rank(traces, args.align).items():
            write(folder / f"rank{rank}{suffix}", doc)
        diag["per_rank_folder"] = str(folder)
    write_json_atomic(diagnostic_path(out), diag)
    print(f"aorta trace merge: {len(traces)} ranks -> {out} ({diag['alignment']})")
    if folder is not None:
        print(f"one trace per rank: {folder}/rank<N>{suffix}")
    for line in trace_merge.format_asymmetry(diag):
        print(line)
    print(f"rank diagnostic: {diagnostic_path(out)}")
    return 0
