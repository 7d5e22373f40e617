"""``--aorta-history URL`` on a pytest run: a bad URL or history is refused before any test runs (exit 4), and
a run of the benchmarks (the gate's fresh runs included) is kept in the history."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from benchmark_run import output_tail, run_benchmarks

from aorta.cli import main
from aorta.history.plugin import NOT_KEPT_ENV
from aorta.history.schema import SCHEMA_VERSION
from aorta.history.store import open_store

REPO = Path(__file__).resolve().parents[2]


def test_a_bad_url_is_a_usage_error_before_any_test(pytester):
    pytester.makepyfile("def test_x():\n    raise AssertionError('ran')\n")
    result = pytester.runpytest("--aorta-history", "ftp://host/db")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--aorta-history='ftp://host/db': unknown scheme 'ftp'; allowed: a file path*"]
    )


def test_a_history_of_a_newer_aorta_is_refused_before_any_test(pytester, tmp_path):
    db = tmp_path / "h.db"
    with open_store(str(db)) as store:
        store.execute(f"UPDATE aorta_schema SET version = {SCHEMA_VERSION + 1}")
    pytester.makepyfile("def test_x():\n    raise AssertionError('ran')\n")
    result = pytester.runpytest(f"--aorta-history={db}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--aorta-history: *written by a newer aorta*update aorta*"])


def test_compare_with_a_stack_the_history_lacks_is_refused_before_any_test(pytester, tmp_path):
    db = tmp_path / "h.db"
    pytester.makepyfile("def test_x():\n    raise AssertionError('ran')\n")
    args = (f"--aorta-history={db}", "--aorta-compare=history:cpu-torch0.1", "--aorta-runs=2")
    result = pytester.runpytest(*args)  # no history yet: none is made to be read empty
    assert result.ret == pytest.ExitCode.USAGE_ERROR and not db.exists()
    result.stderr.fnmatch_lines(["*--aorta-compare: *h.db: no history here (no such file): nothing created*"])
    from aorta.history.store import open_store

    open_store(str(db)).close()
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--aorta-compare: --aorta-compare=history:cpu-torch0.1: the history holds no run of stack 'cpu-torch0.1' on cpu; it holds: no runs*"
        ]
    )


@pytest.mark.slow  # two fresh-process CPU runs of one benchmark
def test_each_fresh_run_of_the_gate_is_kept(tmp_path, capsys):
    db = tmp_path / "h.db"
    proc = run_benchmarks(
        str(REPO / "benchmarks" / "hw_queue" / "test_tiny_kernel_stress.py"),
        "--aorta-streams=1",
        "--aorta-issue-order=breadth",
        "--aorta-rounds=2",
        "--aorta-warmup=0",
        f"--aorta-baseline-dir={tmp_path / 'baselines'}",
        "--aorta-save-baseline=cpu-smoke",
        "--aorta-runs=2",
        f"--aorta-history={db}",
        root=REPO,
    )
    assert proc.returncode == 0, output_tail(proc)
    with open_store(str(db)) as store:
        runs = store.runs()
        figures = store.figures()
    # a gate's check run and its two lean runs, each a run of its own (issue 55: --aorta-runs N has a check run)
    assert len(runs) == 3 and {r.machine_model for r in runs} == {"cpu"}
    names = {f.figure for f in figures}
    assert "device_ms" in names
    assert main(["history", "--history", str(db), "show", "--figure", "device_ms"]) == 0
    assert "3 runs, between-run noise" in capsys.readouterr().out
    baseline = json.loads(next((tmp_path / "baselines").rglob("cpu-smoke.json")).read_text())
    assert len(baseline["aorta_baseline"]["runs"]) == 2  # the gate saved the same two runs


def test_a_refused_session_leaves_no_not_kept_list_behind(pytester, tmp_path, monkeypatch):
    """The fresh runs' not-kept list is made at configure: a session refused before it ends removes it too."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.delenv(NOT_KEPT_ENV, raising=False)
    pytester.makepyfile("def test_x():\n    raise AssertionError('ran')\n")
    result = pytester.runpytest_inprocess(
        f"--aorta-history={tmp_path / 'h.db'}", "--aorta-compare=history:cpu-torch0.1", "--aorta-runs=2"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert list(scratch.iterdir()) == []
    assert NOT_KEPT_ENV not in os.environ
