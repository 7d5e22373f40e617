"""A history that goes away between a gate's fresh runs costs that run's row, never the runs or the verdict
(issue 46, case: a PostgreSQL history stopped between runs made run 3 refuse at start, and the gate threw away
two good runs and its verdict with exit 4)."""

from __future__ import annotations

import sqlite3

import pytest

# In the gate's second fresh run only, the history cannot be reached (a server stopped, then back).
OUTAGE_CONFTEST = """
import os

if os.environ.get("AORTA_FRESH_RUN", "").startswith("run 2/"):
    import aorta.history.plugin as plugin
    from aorta.history.store import HistoryError

    def gone(*args, **kwargs):
        raise HistoryError("postgresql://ann:***@db/h: cannot connect: server closed the connection unexpectedly")

    plugin.open_store = gone
"""


@pytest.mark.slow  # a gate of three fresh runs (about 30 s)
def test_a_history_outage_between_fresh_runs_costs_the_row_and_says_so_never_the_verdict(bench_dir):
    from test_gate_plugin import run

    bench_dir.makeconftest(OUTAGE_CONFTEST)
    history = bench_dir.path / "history.db"
    r = run(bench_dir, "--aorta-save-baseline", "base", "--aorta-runs=3", "--aorta-history", str(history))
    out = r.stdout.str()
    assert "baseline 'base' saved" in out and "(1 benchmarks, 3 runs)" in out, out  # all three runs judged
    r.stdout.fnmatch_lines(
        ["*aorta history: fresh run run 2/3 was NOT kept (the run and the verdict stand): *server closed*"]
    )
    assert r.ret == 3  # as for any run not written (README, exit codes)
    with sqlite3.connect(history) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 3  # with the gate's check run


@pytest.mark.slow  # a gate of two fresh runs (about 20 s)
def test_runs_kept_by_the_gates_children_are_not_kept_again_from_their_files(bench_dir, capsys):
    """Each fresh run is kept by its child; adding the runs' own JSON files, the combined document and a
    baseline saved from them afterwards adds no row (each was stored twice, a baseline's 2 runs as 4)."""
    from test_gate_plugin import run

    from aorta.cli import main

    history = bench_dir.path / "history.db"
    r = run(
        bench_dir,
        "--aorta-save-baseline",
        "base",
        "--aorta-runs=2",
        "--aorta-history",
        str(history),
        "--benchmark-json",
        "all.json",
    )
    assert r.ret == 0, r.stdout.str()
    files = sorted(bench_dir.path.glob(".aorta/runs/*/run*.json"))
    baseline = bench_dir.path / ".aorta" / "baselines" / "cpu" / "base.json"
    assert len(files) == 2 and baseline.is_file()
    for path in [*files, bench_dir.path / "all.json", baseline]:
        assert main(["history", "--history", str(history), "add", str(path)]) == 0
    assert "0 run(s) added" in capsys.readouterr().out
    with sqlite3.connect(history) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 3  # with the gate's check run
