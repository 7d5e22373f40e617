"""The ``aorta`` command: subcommands registered by name -> (add_arguments, run)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from aorta.report.cli import add_report_arguments, add_trace_arguments, run_report, run_trace

SUBCOMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {
    "report": (add_report_arguments, run_report),
    "trace": (add_trace_arguments, run_trace),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aorta", description="aorta: GPU benchmarks for PyTorch")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{" + ",".join(SUBCOMMANDS) + "}")
    for name, (add_arguments, run) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=(run.__doc__ or name).splitlines()[0] if run.__doc__ else name)
        add_arguments(p)
        p.set_defaults(_run=run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args._run(args)


if __name__ == "__main__":
    sys.exit(main())
