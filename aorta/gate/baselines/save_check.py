"""``--aorta-save-baseline`` refused before the run, not after it (pure: no torch).

Everything that would stop the save at the end of a run and is known at start-up is checked here, so a
long run is never thrown away: the machine folder being a file or not writable, an existing baseline that
cannot be read, one of another machine or software stack. ``save_baseline`` checks the same again at the
end (the file may have changed meanwhile).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from aorta.exit_codes import EXIT_NOT_SAVED, EXIT_PYTEST_USAGE
from aorta.gate.baselines import baseline as bl
from aorta.record.output_paths import OutputPathError, check_output_dir


class SaveRefused(Exception):
    """The baseline could not be saved at the end of this run: the message says why and how to go on."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def check_save(directory: str | os.PathLike, name: str, current: Mapping, *, replace: bool) -> Path:
    """The file ``name`` would be saved to for ``current`` (a run record holding this process's machine
    info), or ``SaveRefused``: exit 4 for a place or file that cannot be used, 13 for a baseline of another
    machine or software stack."""
    option = f"--aorta-save-baseline {name}"
    path = bl.baseline_path(directory, current, name)
    try:
        check_output_dir("--aorta-baseline-dir", path.parent)
    except OutputPathError as exc:
        raise SaveRefused(f"{option}: {exc}", EXIT_PYTEST_USAGE) from None
    if path.is_dir():
        raise SaveRefused(
            f"{option}: {path} is a folder, not a baseline file; move it away", EXIT_PYTEST_USAGE
        )
    if replace or not path.exists():
        return path
    try:
        old = bl.load_run(path)
        bl.baseline_runs(old)
    except bl.BaselineError as exc:
        raise SaveRefused(
            f"{option}: the saved baseline cannot be added to: {exc}; pass --aorta-replace-baseline to "
            "start it afresh with this run",
            EXIT_PYTEST_USAGE,
        ) from None
    try:
        bl.check_can_add(old, path, current)
    except (bl.MachineChanged, bl.StackChanged) as exc:
        raise SaveRefused(f"{option}: refused before the run: {exc}", EXIT_NOT_SAVED) from None
    return path
