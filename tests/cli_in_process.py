"""``python -m aorta ARGS`` run in this process: what a child process would give (exit code, stdout, stderr), by
the same ``aorta.cli.main`` that ``aorta/__main__.py`` calls, without the second or more of Python, torch and
scipy start-up a child spends before it reads its arguments. The fast tier's stand-in for a child process; the
slow tier runs the same tests with a real one (tests/conftest.py: ``aorta_cli``)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Sequence
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

AORTA = [sys.executable, "-m", "aorta"]


def run_aorta(args: Sequence[str], *, cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """``aorta.cli.main(args)`` in ``cwd``, its output caught as a child's would be (text)."""
    from aorta.cli import main

    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's own exit: 2 for a usage error, 0 for --help
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess([*AORTA, *args], code, out.getvalue(), err.getvalue())


def subprocess_run(cmd: Sequence[str], *, cwd: str | Path | None = None, **_) -> subprocess.CompletedProcess:
    """A stand-in for ``subprocess.run`` (text, output captured) that runs ``python -m aorta ...`` here."""
    assert list(cmd[:3]) == AORTA, f"only `python -m aorta` runs in process, not {cmd}"
    return run_aorta(cmd[3:], cwd=cwd)


def run_child(args: Sequence[str], *, cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """``python -m aorta ARGS`` in a process of its own, as users run it."""
    return subprocess.run([*AORTA, *args], cwd=cwd, capture_output=True, text=True, timeout=120)
