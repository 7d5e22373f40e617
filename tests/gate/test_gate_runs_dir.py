"""The fresh runs' folder is checked before any run and can be chosen (issue 38, case 15): ``.aorta/runs`` a
file (or not writable) was an ``INTERNALERROR NotADirectoryError`` once the runs began."""

import pytest
from test_gate_bad_input import nothing_ran
from test_gate_plugin import run

USAGE = pytest.ExitCode.USAGE_ERROR


def test_a_runs_folder_that_is_a_file_is_refused_before_any_run(bench_dir):
    (bench_dir.path / ".aorta").mkdir()
    (bench_dir.path / ".aorta" / "runs").write_text("not a folder")
    r = run(bench_dir, "--aorta-save-baseline", "base", "--aorta-runs=2")
    assert r.ret == USAGE and nothing_ran(r)
    r.stderr.fnmatch_lines(["*--aorta-runs-dir (default .aorta/runs) *runs: *runs is a file, not a folder*"])
    assert "INTERNALERROR" not in r.stdout.str() + r.stderr.str()


def test_a_chosen_runs_folder_under_a_file_is_refused_naming_it(bench_dir):
    (bench_dir.path / "plain").write_text("x")
    r = run(bench_dir, "--aorta-save-baseline", "base", "--aorta-runs=2", "--aorta-runs-dir", "plain/runs")
    assert r.ret == USAGE and nothing_ran(r)
    r.stderr.fnmatch_lines(["*--aorta-runs-dir plain/runs: cannot be created: plain is a file*"])
