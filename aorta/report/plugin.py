"""``--aorta-trace-dir DIR``: one Chrome/Perfetto trace per hardware-queue benchmark, from recorded intervals.

Registered from ``aorta.plugin`` (``pytest_plugins``). The ``hw_queue`` fixture hands each recorded result
to ``pytest_aorta_bench_result`` (aorta/hookspec.py), which keeps it on the test item; after the test, this
plugin turns the result's per-round stream intervals into a trace file (``chrome_trace``). No profiler runs.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from aorta.record import write_json_atomic
from aorta.record.output_arguments import output_option
from aorta.record.output_paths import OutputPathError, check_output_dir
from aorta.report.chrome_trace import round_events, trace_document

BENCH_RESULT = pytest.StashKey[object]()  # the recorded BenchResult, until the teardown writes its trace


def parse_trace_dir(value: str) -> Path:
    p = Path(value)
    if not value.strip():
        raise argparse.ArgumentTypeError("--aorta-trace-dir: give a folder path")
    if p.exists() and not p.is_dir():
        raise argparse.ArgumentTypeError(f"--aorta-trace-dir {value}: exists and is not a folder")
    return p


def pytest_addoption(parser: pytest.Parser) -> None:
    output_option(
        parser.getgroup("aorta"),
        "--aorta-trace-dir",
        kind="dir",
        type=parse_trace_dir,
        default=None,
        metavar="DIR",
        help="write a Chrome/Perfetto trace of each hardware-queue benchmark's per-stream intervals into DIR",
    )


def pytest_configure(config: pytest.Config) -> None:
    """The trace folder can be written (or created): refused now, not at the teardown of every test."""
    folder = config.getoption("aorta_trace_dir", None)
    if folder is None or hasattr(config, "workerinput"):
        return
    try:
        check_output_dir("--aorta-trace-dir", folder)
    except OutputPathError as exc:
        raise pytest.UsageError(str(exc)) from None


def trace_file_name(item_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", item_name).strip("_") + ".trace.json"


def bench_trace(name: str, result) -> dict:
    """The trace document of one ``BenchResult``: its interval pass's rounds (device ms and stream intervals)."""
    run = result.intervals_run
    rounds = run.rounds
    events = round_events(
        [r.device_ms for r in rounds], [r.stream_intervals_ms for r in rounds], process_name=name
    )
    return trace_document(
        events,
        benchmark=name,
        timing_method=run.method,
        iterations_per_round=run.iterations_per_round,
        clock=run.clock,
        streams_requested=result.record.get("streams_requested"),
        note=(
            "graph replay: no per-stream intervals inside a graph, rounds only"
            if run.method == "graph_replay"
            else "rounds laid end to end on the round clock (see clock); gaps between rounds not measured"
        ),
    )


def pytest_aorta_bench_result(item: pytest.Item, result) -> None:
    item.stash[BENCH_RESULT] = result


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    folder = item.config.getoption("aorta_trace_dir", None)
    if folder is None:
        return
    result = item.stash.get(BENCH_RESULT, None)
    if result is None:
        return
    write_json_atomic(Path(folder) / trace_file_name(item.name), bench_trace(item.name, result))
