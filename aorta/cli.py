"""``aorta <command>``: the command line. Each command is registered as name -> (add_arguments, run)."""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
from collections.abc import Callable, Sequence

import aorta
from aorta.environment.stack_label import add_stack_arguments, run_stack
from aorta.exit_codes import EXIT_USAGE, EXIT_WRITE_FAILED
from aorta.gate.ab_cli import add_ab_arguments, run_ab
from aorta.gate.cli import add_compare_arguments, run_compare
from aorta.gate.noise_cli import add_noise_arguments, run_noise
from aorta.history.cli import add_history_arguments, run_history
from aorta.history.store import HistoryError, HistoryWriteError
from aorta.hw_queue.listing import add_list_arguments, run_list
from aorta.launch.torchrun import add_torchrun_arguments, run_torchrun
from aorta.processes.child_process import run_until_stopped
from aorta.record.output_arguments import (
    check_parsed_outputs,
    chosen_parsers,
    mark_subcommands,
    parsed_outputs,
)
from aorta.record.output_paths import OutputPathError
from aorta.record.read_files import check_not_read, module_files, package_files
from aorta.record.redact import RedactingStream, register_entered
from aorta.record.storage_faults import BROKEN_PIPE_EXIT, quiet_broken_pipe, said_fault
from aorta.report.cli import add_report_arguments, add_trace_arguments, run_report, run_trace
from aorta.sweep.cli import add_sweep_arguments, run_sweep_command

Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]

COMMANDS: dict[str, Command] = {
    "list": (add_list_arguments, run_list),
    "compare": (add_compare_arguments, run_compare),
    "ab": (add_ab_arguments, run_ab),
    "noise": (add_noise_arguments, run_noise),
    "report": (add_report_arguments, run_report),
    "trace": (add_trace_arguments, run_trace),
    "stack": (add_stack_arguments, run_stack),
    "sweep": (add_sweep_arguments, run_sweep_command),
    "torchrun": (add_torchrun_arguments, run_torchrun),
    "history": (add_history_arguments, run_history),
}

HELP = {
    "list": "every hardware-queue workload with category, priority, stream range and a one-line description",
    "compare": "verdicts (FASTER / SLOWER / SAME / UNSURE) of saved runs against a baseline, with exit codes",
    "ab": "two stacks on this machine: a command run under launchers A and B in alternating fresh processes, "
    "B judged against A (exit 0 clean, 10 slower, 15 inconclusive)",
    "noise": "this machine's noise profile from saved runs: each figure's between-run noise, MDE and whether it is gateable",
    "report": "compare saved runs: summary.json, figures and one self-contained report.html",
    "trace": "trace tools: 'aorta trace merge' merges per-rank profiler traces with a rank-asymmetry check; "
    "'aorta trace figures' gives the figures of any trace (Kineto, rocprofv3 CSV or rocpd)",
    "sweep": "run a benchmark command once per cell of a grid of settings, each in a fresh process",
    "torchrun": "torchrun ... -m pytest ..., exiting with rank 0's pytest code (the gate's codes survive)",
    "history": "the run history: add runs, show trends and change points, draw a page, prune old runs",
    "stack": "a file-name-safe label of this machine's stack (GPU, CUDA/HIP, torch), as run_suite.sh names its JSON",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aorta", description="aorta GPU benchmarks: offline tools")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (add_arguments, run) in COMMANDS.items():
        p = sub.add_parser(name, help=HELP.get(name), description=HELP.get(name))
        add_arguments(p)
        p.set_defaults(_run=run)
    mark_subcommands(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    register_entered(argv, os.environ)  # every secret as it enters, hidden wherever text leaves (issue 65)
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(out), RedactingStream(err)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: list[str]) -> int:
    if argv[:1] == ["torchrun"] and argv[1:2] not in (["-h"], ["--help"]):  # torchrun's options: not ours
        return with_faults_said("aorta torchrun", lambda: run_torchrun(argparse.Namespace(args=argv[1:])))
    parser = build_parser()
    args = parser.parse_args(argv)
    who = list(chosen_parsers(parser, args))[-1].prog  # "aorta history page"
    try:  # every declared output, before any work (issue 46, class 1), none of aorta's own files (issue 65)
        check_parsed_outputs(parser, args, args._inputs(args) if "_inputs" in vars(args) else {})
        check_not_read(parsed_outputs(parser, args), {**package_files(aorta), **module_files()})
    except OutputPathError as exc:
        print(f"{who}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    # Ctrl-C, SIGTERM, SIGHUP: 128 + N, one line
    return with_faults_said(who, lambda: run_until_stopped(who, lambda: args._run(args)))


def with_faults_said(who: str, body: Callable[[], int]) -> int:
    """``body()``, the one place every command's faults are said (issue 65): a fault of the storage in any
    writer or reader (no space, quota, read-only, I/O error, too large: aorta/record/storage_faults.py) and a
    damaged store are one line and their exit code; a reader of stdout gone (``| head``) ends it quietly with
    128 + SIGPIPE. Anything else keeps its traceback (a programming error)."""
    try:
        code = body()
        sys.stdout.flush()  # a reader gone after the last line is told here, not by the interpreter's exit
        return code
    except BrokenPipeError:  # `aorta history show | head`: the reader has gone, nothing to say
        quiet_broken_pipe()
        return BROKEN_PIPE_EXIT
    except HistoryError as exc:  # a history that cannot be read (damaged, missing): one line
        print(f"{who}: error: {exc}", file=sys.stderr)
        return EXIT_WRITE_FAILED if isinstance(exc, HistoryWriteError) else EXIT_USAGE
    except (OSError, ValueError, sqlite3.DatabaseError) as exc:
        said = said_fault(exc)
        if said is None:
            raise
        print(f"{who}: error: {said[1]}", file=sys.stderr)
        return said[0]


if __name__ == "__main__":
    sys.exit(main())
