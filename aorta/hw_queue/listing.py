"""``aorta list [NAME...]``: every registered workload with category, priority, stream range, description."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence

from aorta.hw_queue.specs import SPECS, WorkloadSpec  # pure data: listing never imports torch
from aorta.record.table import format_table


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", help="workloads to show (default: all)")


def workload_rows(specs: Mapping[str, WorkloadSpec], names: Sequence[str] = ()) -> list[list]:
    """One row per workload (registry order, or the order asked); raises KeyError on an unknown name."""
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise KeyError(
            f"unknown workload{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"valid names: {', '.join(sorted(specs))}"
        )
    rows = []
    for name in dict.fromkeys(names) if names else specs:
        spec = specs[name]
        rows.append(
            [
                spec.name,
                spec.category,
                spec.priority,
                f"{spec.min_streams}-{spec.max_streams}",
                ",".join(map(str, spec.recommended_streams)),
                spec.description,
            ]
        )
    return rows


def run_list(args: argparse.Namespace) -> int:
    """List the hardware-queue workloads: category, priority, stream range, description."""
    try:
        rows = workload_rows(SPECS, args.names)
    except KeyError as exc:
        print(f"aorta list: {exc.args[0]}", file=sys.stderr)
        return 2
    headers = ["workload", "category", "priority", "streams", "recommended", "description"]
    for line in format_table(headers, rows):
        print(line.rstrip())
    return 0
