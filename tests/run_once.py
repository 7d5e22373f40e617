"""An expensive set-up made once per test session, however many xdist workers run its tests.

A module-scoped fixture that starts a CPU benchmark run (tens of seconds) runs once in each worker that gets one
of the module's tests; under ``-n 4 --maxschedchunk 1`` (the README's test command) that can be four times. Here
the first worker to ask makes it in the session's shared folder (xdist gives each worker a folder under one
base folder of the run), under an exclusive lock, and every other worker waits on the lock and reads what it
made. Without xdist it is made once, as before. What is shared is read only by the tests that use it."""

from __future__ import annotations

import fcntl
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def once(
    config: pytest.Config, tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], T]
) -> T:
    """``make(folder)``'s result (picklable), made once per session in an empty ``folder`` of its own."""
    if not hasattr(config, "workerinput"):
        return make(tmp_path_factory.mktemp(name))
    run_folder = tmp_path_factory.getbasetemp().parent  # the run's base folder, shared by its workers
    with open(run_folder / f"once-{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if make() raises
        done = run_folder / f"once-{name}.pickle"
        if done.exists():
            return pickle.loads(done.read_bytes())
        result = make(
            Path(tempfile.mkdtemp(prefix=f"once-{name}-", dir=run_folder))
        )  # empty, whatever came before
        done.write_bytes(pickle.dumps(result))
        return result
