#!/usr/bin/env python3
"""Which fast-tier tests reach which lines: one run of ``pytest -m 'not slow'`` under coverage, each test its own
context, the processes a test starts (a gate's fresh runs, ``aorta ab``'s sides, pytester's subprocesses)
measured under that test's context too. ``scripts/realistic_bugs.py`` runs each bug against the tests that
reach its lines only.

    python3 scripts/bug_reach.py OUT.json FILE...     # FILE: the files to measure, relative to the root

OUT.json: ``{"files": {FILE: {LINE: [test node id, ...]}}, "at_import": {FILE: [LINE, ...]}, "seconds": {test
node id: s}}``: the tests that ran each line; the lines run while no test ran (an import at collection: a
constant, a ``def``), whose effect any test may see; how long each test took (under coverage). Run from the repository root (the tree measured), with ``PYTHONPATH`` on it.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import coverage
import pytest

CONFIG_ENV = "COVERAGE_PROCESS_CONFIG"  # read by coverage's .pth in every Python process started


class Reach:
    """Each test a context, in this process and (through the config each started process reads) in its children."""

    def __init__(self, cov: coverage.Coverage) -> None:
        self.cov = cov
        self.seconds: dict[str, float] = {}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        self.cov.switch_context(item.nodeid)
        self.cov.config.context = item.nodeid  # children: their static context
        os.environ[CONFIG_ENV] = self.cov.config.serialize()
        start = time.monotonic()
        try:
            return (yield)
        finally:
            self.seconds[item.nodeid] = round(time.monotonic() - start, 3)
            self.cov.switch_context("")
            os.environ.pop(CONFIG_ENV, None)


def measure(files: list[str], pytest_args: list[str]) -> dict:
    root = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="aorta-reach-") as tmp:
        data = Path(tmp) / ".coverage"
        cov = coverage.Coverage(
            data_file=str(data), include=[str(root / f) for f in files], data_suffix=True, branch=False
        )
        cov.config.parallel = True
        reach = Reach(cov)
        cov.start()
        try:
            pytest.main(pytest_args, plugins=[reach])
        finally:
            cov.stop()
            cov.save()
        combined = coverage.Coverage(data_file=str(data))
        combined.combine([tmp], keep=False)
        db = combined.get_data()
        out: dict[str, dict[str, list[str]]] = {}
        at_import: dict[str, list[int]] = {}
        for f in files:
            by_line = db.contexts_by_lineno(str(root / f))
            out[f] = {str(n): sorted({c for c in cs if c}) for n, cs in by_line.items() if any(cs)}
            at_import[f] = sorted(n for n, cs in by_line.items() if "" in cs)
        return {"files": out, "at_import": at_import, "seconds": reach.seconds}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out, files = Path(argv[0]), argv[1:]
    args = ["-m", "not slow", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    result = measure(files, args)
    out.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
