"""``aorta history add|show|page|prune``: the run history from the command line.

Exit codes (aorta/exit_codes.py): 0 done; 2 bad input, refused before anything is written (a run file,
an option value, a history that is damaged, not aorta's, or of a newer schema); 3 a run could not be written
(disk full, locked past the timeout): that run is not kept, the runs added before it are.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aorta.exit_codes import EXIT_CLEAN, EXIT_USAGE, EXIT_WRITE_FAILED
from aorta.history.run_rows import run_rows
from aorta.history.store import (
    DEFAULT_PATH,
    HistoryError,
    HistoryWriteError,
    add_runs,
    is_postgresql,
    open_store,
    parse_history_url,
)
from aorta.record.output_arguments import output_argument
from aorta.record.storage_faults import fault_words

HISTORY_ENV = "AORTA_HISTORY"  # the history to use where --history is not given
MAX_KEEP_DAYS = 36_500  # --keep: 100 years back is as far as any history goes


def parse_keep(text: str) -> timedelta:
    """``--keep 180d`` (days) or ``12h`` (hours): how far back runs are kept."""
    m = re.fullmatch(r"\s*(\d+)\s*([dh])\s*", str(text))
    if not m or int(m.group(1)) == 0:
        raise argparse.ArgumentTypeError(
            f"--keep={text!r}: give a positive age in days or hours, e.g. 180d or 12h"
        )
    n, unit = int(m.group(1)), m.group(2)
    most = MAX_KEEP_DAYS if unit == "d" else MAX_KEEP_DAYS * 24
    if n > most:  # past what a date can go back to: refused here, not an OverflowError later
        raise argparse.ArgumentTypeError(
            f"--keep={text!r}: at most {most}{unit} (100 years); give a shorter age"
        )
    return timedelta(days=n) if unit == "d" else timedelta(hours=n)


def _last(text: str) -> int:
    if not str(text).isdigit() or int(text) < 2:
        raise argparse.ArgumentTypeError(f"--last={text!r}: give a whole number of runs, 2 or more")
    return int(text)


def _history(text: str) -> str:
    try:
        return parse_history_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("--aorta-history", "--history")) from None


def add_history_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--history",
        type=_history,
        default=None,
        help=f"the history: a SQLite file or a postgresql:// URL (default ${HISTORY_ENV}, else {DEFAULT_PATH})",
    )
    sub = parser.add_subparsers(dest="history_command", metavar="ACTION", required=True)
    add = sub.add_parser("add", help="keep runs (pytest-benchmark JSON written by aorta) in the history")
    add.add_argument("runs", nargs="+", type=Path, metavar="RUN.json")
    add.add_argument(
        "--verdicts",
        type=Path,
        default=None,
        metavar="VERDICT.json",
        help="the gate's verdict file for these runs (aorta compare --verdict-json): kept with each of them",
    )
    show = sub.add_parser("show", help="each figure's run series with stack changes and change points")
    page = sub.add_parser(
        "page", help="one self-contained HTML page: trend plots, change points, what changed"
    )
    output_argument(page, "output", type=Path, metavar="OUT.html")
    for p in (show, page):
        p.add_argument(
            "-k", dest="benchmark", default=None, help="benchmarks whose name holds this (or a glob)"
        )
        p.add_argument(
            "--figure", default=None, help="figures matching this glob (device_ms, busbw_gbps, ...)"
        )
        p.add_argument("--machine", default=None, help="machine models matching this glob (nvidia-h100-*)")
    base = sub.add_parser(
        "baseline",
        help="the last runs of a stack as a baseline file (what --aorta-compare history:STACK judges)",
    )
    base.add_argument(
        "stack", metavar="STACK", help="a stack label, as 'aorta stack' prints it and show lists"
    )
    output_argument(base, "output", kind="baseline", type=Path, metavar="OUT.json")
    base.add_argument(
        "--machine", default="", help="the machine model (default: any), e.g. nvidia-h100-80gb-hbm3-x1"
    )
    base.add_argument(
        "--last", type=_last, default=20, help="how many of the stack's latest runs (default 20)"
    )
    parser.set_defaults(_inputs=history_inputs)
    prune = sub.add_parser("prune", help="delete the runs older than --keep")
    prune.add_argument("--keep", type=parse_keep, required=True, help="age of the runs kept, e.g. 180d")


def _url(args: argparse.Namespace) -> str:
    if args.history:
        return args.history
    env = os.environ.get(HISTORY_ENV)
    return parse_history_url(env) if env else str(DEFAULT_PATH)


def history_inputs(args: argparse.Namespace) -> dict[str, str]:
    """The history a command reads, as an input no output may replace (a SQLite file; a URL is no place)."""
    try:
        url = _url(args)
    except ValueError:
        return {}
    return {} if "://" in url or is_postgresql(url) else {"the history database (--history)": url}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _open(url: str, who: str, after: str = "", **how: bool):
    """The store at ``url``, or the exit code with one line on stderr saying why it cannot be opened: 3 where
    another writer held it past the timeout (as for a run not written), else 2."""
    try:
        return open_store(url, **how)
    except HistoryError as exc:
        print(f"{who}: error: {exc}{after}", file=sys.stderr)
        return EXIT_WRITE_FAILED if isinstance(exc, HistoryWriteError) else EXIT_USAGE


def run_history(args: argparse.Namespace) -> int:
    try:
        url = _url(args)
    except ValueError as exc:
        print(
            f"aorta history: error: {str(exc).replace('--aorta-history', '$' + HISTORY_ENV)}", file=sys.stderr
        )
        return EXIT_USAGE
    action = args.history_command
    if action == "add":
        return _add(url, args.runs, args.verdicts)
    store = _open(url, f"aorta history {action}", create=False, write=action == "prune")
    if isinstance(store, int):
        return store
    with store:
        if action == "prune":
            before = (datetime.now(UTC) - args.keep).isoformat(timespec="seconds")
            try:
                gone = store.prune(before)
            except Exception as exc:
                print(f"aorta history prune: error: {store.where}: {exc}; nothing deleted", file=sys.stderr)
                return EXIT_WRITE_FAILED
            print(f"aorta history: pruned {gone} runs recorded before {before} from {store.where}")
            return EXIT_CLEAN
        if action == "baseline":
            return _baseline(store, args)
        from aorta.history.trends import build_series

        runs = store.runs()
        series = build_series(
            runs,
            store.figures(),
            benchmark=args.benchmark,
            figure=args.figure,
            machine=args.machine,
            verdicts=store.verdicts(),
        )
    if action == "show":
        from aorta.history.show_text import show_lines

        print("\n".join(show_lines(series)))
        return EXIT_CLEAN
    from aorta.history.page import write_page

    try:
        write_page(args.output, series, source=store.where)
    except OSError as exc:
        print(
            f"aorta history page: error: {args.output} could not be written: {fault_words(exc)}",
            file=sys.stderr,
        )
        return EXIT_WRITE_FAILED
    print(f"aorta history: {len(series)} series on {args.output}")
    return EXIT_CLEAN


def _add(url: str, paths: list[Path], verdict_path: Path | None) -> int:
    from dataclasses import replace

    from aorta.history.run_rows import verdict_rows
    from aorta.record import RecordError
    from aorta.record.load import load_run, read_json_file

    now = _now()
    verdicts: tuple = ()
    if verdict_path is not None:
        try:
            doc = read_json_file(verdict_path)
        except RecordError as exc:
            print(f"aorta history add: error: --verdicts {exc}; nothing added", file=sys.stderr)
            return EXIT_USAGE
        verdicts = verdict_rows(doc) if isinstance(doc, dict) else ()
        if not verdicts:
            print(
                f"aorta history add: error: --verdicts {verdict_path}: holds no verdicts (not a verdict file of "
                "aorta compare or --aorta-verdict-json); nothing added",
                file=sys.stderr,
            )
            return EXIT_USAGE
    batches = []
    for p in paths:  # every file checked before anything is written
        try:
            batches.append((p, [replace(r, verdicts=verdicts) for r in run_rows(load_run(p), str(p), now)]))
        except (RecordError, ValueError) as exc:
            print(f"aorta history add: error: {exc}; nothing added", file=sys.stderr)
            return EXIT_USAGE
    store = _open(url, "aorta history add", "; nothing added")
    if isinstance(store, int):
        return store
    with store:
        for p, rows in batches:
            try:
                ids = add_runs(store, rows, now)
            except HistoryError as exc:  # locked past the timeout, disk full: 3; read-only: 2
                print(f"aorta history add: error: {exc}", file=sys.stderr)
                return EXIT_WRITE_FAILED if isinstance(exc, HistoryWriteError) else EXIT_USAGE
            new = sum(i is not None for i in ids)
            kept = f", {len(ids) - new} already kept" if len(ids) > new else ""
            print(f"aorta history: {p}: {new} run(s) added{kept} -> {store.where}")
    return EXIT_CLEAN


def _baseline(store, args: argparse.Namespace) -> int:
    from aorta.history.baseline_doc import NoHistoryBaseline, history_baseline
    from aorta.record import write_json_atomic

    try:
        doc = history_baseline(store.runs(), store.figures(), args.stack, args.machine, args.last)
    except NoHistoryBaseline as exc:
        print(
            f"aorta history baseline: error: {str(exc).replace('--aorta-compare=history:', '')}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        write_json_atomic(args.output, doc)
    except OSError as exc:
        print(
            f"aorta history baseline: error: {args.output} could not be written: {fault_words(exc)}",
            file=sys.stderr,
        )
        return EXIT_WRITE_FAILED
    n = len(doc["aorta_baseline"]["runs"])
    print(f"aorta history: {n} runs of {args.stack} as a baseline: {args.output}")
    return EXIT_CLEAN
