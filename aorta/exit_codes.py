"""Every exit code aorta gives, and what it means: the gate's (inside pytest and ``aorta compare``) and the
commands' (``aorta report``, ``trace merge``, ``sweep``, ``noise``, ``torchrun``). Constants only: imports
nothing, so every layer may read it.

Inside pytest, pytest's own codes (0 to 5, ``pytest.ExitCode``) win over the gate's; aorta gives 3 and 4 itself
where said below. Users read the same table in docs/gate.md ("Exit codes") and docs/sweeps.md. Two codes are
also written where aorta cannot be imported: the sweep's cell guard, run as a bare script
(aorta/sweep/cell_guard.py: ``EXIT_CANNOT_START``), and the shell scripts (scripts/lib/common.sh).
"""

EXIT_CLEAN = 0  # nothing failed: no SLOWER verdict; every sweep cell ran and passed
EXIT_CELL_FAILED = 1  # aorta sweep: a cell failed or timed out (in the manifest; the sweep went on)
EXIT_USAGE = 2  # a command's bad input (a file, an option value, an output place), before any work
# An output could not be written (disk full): a report, a merged trace, a sweep's manifest, or a passing
# run's --benchmark-json (written beside and renamed, so none is left half-written).
EXIT_WRITE_FAILED = 3
EXIT_PYTEST_USAGE = 4  # inside pytest, pytest's usage error: a bad option, baseline file or output place
EXIT_REGRESSION = 10  # at least one SLOWER verdict (after confirmation, with --aorta-confirm)
EXIT_MISMATCH = 11  # refused: the baseline is from another GPU model or backend
EXIT_NOTHING_COMPARED = 12  # no benchmark of the run is in the baseline: a gate that judged nothing
EXIT_NOT_SAVED = 13  # --aorta-save-baseline could not write the baseline (pytest itself passed)
EXIT_SETTINGS_DIFFER = 14  # refused: scheduling settings (env vars) differ from the baseline's, unnamed
# The gate judged too few figures to call the run clean: fewer than --aorta-min-judged of the compared figures
# (default half) came out SLOWER, FASTER or SAME; the rest were NOT_GATEABLE or UNSURE. Not a regression.
EXIT_INCONCLUSIVE = 15
EXIT_CANNOT_START = 127  # a sweep cell's command could not start (not found, not executable), as a shell's
EXIT_INTERRUPTED = 130  # stopped by Ctrl-C (SIGINT): a shell's 128 + 2
EXIT_SIGNAL_BASE = 128  # stopped by signal N: 128 + N, as a shell says (SIGTERM 143, SIGHUP 129)

# The words the gate's verdict line and verdict JSON give the codes a comparison decides.
EXIT_MEANINGS = {
    EXIT_CLEAN: "clean",
    EXIT_REGRESSION: "regression: a SLOWER verdict",
    EXIT_MISMATCH: "refused: different hardware",
    EXIT_NOTHING_COMPARED: "nothing compared: the gate judged no benchmark",
    EXIT_NOT_SAVED: "baseline not saved",
    EXIT_INCONCLUSIVE: "inconclusive: the gate judged too few figures to call it clean",
}
