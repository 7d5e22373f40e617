"""A gate with nothing to judge says why, with one exit code however many runs (issue 38, case 20): ``-k``
selecting nothing is "no test was selected" (not "benchmarks are disabled") with pytest's own 5; every
selected benchmark skipping gives 12 (compare) or 13 (save) with ``--aorta-runs 2`` as with 1."""

import pytest
from test_gate_plugin import run

from aorta.exit_codes import EXIT_NOT_SAVED
from aorta.gate.runs.empty_run import child_timed_nothing, why_no_run

SKIPPING = "import pytest\n\ndef test_spin():\n    pytest.skip('not on this machine')\n"


def test_the_reasons_in_words():
    assert why_no_run(5, disabled=False) == "no test was selected (-k, -m or the paths chose none)"
    assert why_no_run(0, disabled=True).startswith("benchmarks are disabled in this run")
    assert child_timed_nothing(0, json_written=False) and not child_timed_nothing(1, json_written=False)


def test_k_selecting_nothing_says_so_and_keeps_pytests_code(bench_dir):
    r = run(bench_dir, "--aorta-save-baseline", "base", "-k", "no_such_benchmark", "--aorta-runs=2")
    assert r.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    r.stdout.fnmatch_lines(
        ["aorta gate: NOTHING COMPARED: no test was selected (-k, -m or the paths chose none)*"]
    )
    assert "disabled" not in r.stdout.str()


@pytest.mark.slow  # two fresh pytest processes (about 15 s)
@pytest.mark.parametrize("runs", ["1", "2"])
def test_every_benchmark_skipping_gives_13_whatever_the_number_of_runs(pytester, runs):
    pytester.makepyfile(test_spin=SKIPPING)
    r = run(pytester, "--aorta-save-baseline", "base", f"--aorta-runs={runs}")
    assert r.ret == EXIT_NOT_SAVED, r.stdout.str()
