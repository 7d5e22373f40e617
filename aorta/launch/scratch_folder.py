"""``aorta torchrun``'s folder for the ranks' exit codes: named by the launcher's pid, so one left behind by a
launcher killed outright (SIGKILL: nothing of it runs again) is removed by the next launcher (issue 38,
case 7)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

PREFIX = "aorta-torchrun-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def remove_stale(root: str | os.PathLike | None = None) -> list[Path]:
    """Remove ``aorta-torchrun-<pid>-*`` folders under ``root`` (the temp folder) whose launcher is gone."""
    removed = []
    for d in Path(root or tempfile.gettempdir()).glob(f"{PREFIX}*-*"):
        pid = d.name[len(PREFIX) :].split("-", 1)[0]
        if d.is_dir() and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


@contextlib.contextmanager
def codes_folder(root: str | os.PathLike | None = None) -> Iterator[str]:
    """A fresh folder for this launcher (stale ones removed first), removed when the block ends."""
    remove_stale(root)
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-", dir=root) as folder:
        yield folder
