"""``aorta list [NAME...]``: every registered workload with category, priority, stream range, description."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from aorta.table import format_table

if TYPE_CHECKING:
    from aorta.workload import Workload  # imports torch: for the checker only


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", help="workloads to show (default: all)")


def workload_rows(registry: Mapping[str, type[Workload]], names: Sequence[str] = ()) -> list[list]:
    """One row per workload (registry order, or the order asked); raises KeyError on an unknown name."""
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise KeyError(f"unknown workload{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                       f"valid names: {', '.join(sorted(registry))}")
    rows = []
    for name in dict.fromkeys(names) if names else registry:
        spec = registry[name].spec
        rows.append([spec.name, spec.category, spec.priority, f"{spec.min_streams}-{spec.max_streams}",
                     ",".join(map(str, spec.recommended_streams)), spec.description])
    return rows


def run_list(args: argparse.Namespace) -> int:
    """List the hardware-queue workloads: category, priority, stream range, description."""
    from aorta.workloads import REGISTRY  # imports torch: only when the command runs

    try:
        rows = workload_rows(REGISTRY, args.names)
    except KeyError as exc:
        print(f"aorta list: {exc.args[0]}", file=sys.stderr)
        return 2
    headers = ["workload", "category", "priority", "streams", "recommended", "description"]
    for line in format_table(headers, rows):
        print(line.rstrip())
    return 0
