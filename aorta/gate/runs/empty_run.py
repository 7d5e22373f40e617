"""Why a gate had nothing to judge or save, in words, and the exit code it gets (pure: no torch).

Issue 38, case 20: ``-k`` selecting nothing was reported as "benchmarks are disabled in this run" (nothing was
disabled), and every selected benchmark skipping gave exit 1 with ``--aorta-runs 2`` (a fresh run that exits 0
and writes no JSON was taken for a failure) but 13 with ``--aorta-runs 1``. Now both say what happened and
give 12 (nothing compared) or 13 (nothing saved); pytest's own "no tests collected" (5) stands.
"""

from __future__ import annotations

from aorta.exit_codes import EXIT_NOT_SAVED, EXIT_NOTHING_COMPARED

NO_TESTS_COLLECTED = 5  # pytest.ExitCode.NO_TESTS_COLLECTED


def why_no_run(exitstatus: int, disabled: bool) -> str:
    """The reason this process has no run to judge."""
    if exitstatus == NO_TESTS_COLLECTED:
        return "no test was selected (-k, -m or the paths chose none)"
    if disabled:
        return "benchmarks are disabled in this run (--benchmark-disable or --benchmark-skip)"
    return "no benchmark ran in this run"


def nothing_code(comparing: bool) -> int:
    return EXIT_NOTHING_COMPARED if comparing else EXIT_NOT_SAVED


def child_timed_nothing(exit_code: int, json_written: bool) -> bool:
    """A fresh run that passed and wrote no JSON: it timed no benchmark (every selected one skipped)."""
    return exit_code == 0 and not json_written
