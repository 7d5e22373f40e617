"""One saver at a time per baseline: an exclusive lock on a file beside it, held across the
read-modify-write of ``save_baseline`` (pure: no torch).

Two processes saving the same name at once would each read N runs and each write N + 1: one run lost. The
lock (``fcntl.flock`` on ``.<name>.lock``, released by the kernel when its holder dies, so a killed saver
never leaves it held) makes the second wait for the first and read its result. The holder writes its pid and
host into the lock file, so a waiter says who it waits for, and it waits at most ``WAIT_S`` (issue 38, case
21). ``aorta sweep`` locks its output folder the same way, without waiting (case 4). Where ``fcntl`` is
missing (not POSIX) saving goes on unlocked, as before.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from aorta.record.storage_faults import faults_named

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]


WAIT_S = (
    600.0  # the longest a saver waits for another (a save takes about a second; 10 minutes is a stuck one)
)
POLL_S = 0.2


class LockBusy(OSError):
    """The lock is held by another process and was not freed in time: the message names it and the file."""


def lock_path(target: Path) -> Path:
    return target.with_name(f".{target.stem}.lock")


def _holder(fd: int) -> str:
    """Who holds the lock, as its holder wrote it (``pid 123 on host``), or ``another process``."""
    try:
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text or "another process"


@contextlib.contextmanager
def locked(
    target: str | os.PathLike[str],
    *,
    wait_s: float | None = None,
    what: str = "baseline",
    say: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold the lock of ``target`` (its folder must exist) for the ``with`` block. A lock held by another
    process is waited for up to ``wait_s`` seconds (default ``WAIT_S``; 0: not at all), saying once who holds it; then
    ``LockBusy`` names the holder and the lock file (issue 38, cases 4 and 21)."""
    path = lock_path(Path(target))
    with faults_named(path):  # a full disk, a read-only folder: one line naming the lock (issue 65)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        if fcntl is not None:
            _acquire(
                fd,
                path,
                WAIT_S if wait_s is None else wait_s,
                what,
                say or (lambda line: print(line, file=sys.stderr, flush=True)),
            )
            with faults_named(path):
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _acquire(fd: int, path: Path, wait_s: float, what: str, say: Callable[[str], None]) -> None:
    deadline = time.monotonic() + wait_s
    said = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            pass
        holder = _holder(fd)
        if time.monotonic() >= deadline:
            waited = f" (waited {wait_s:g} s)" if wait_s > 0 else ""
            raise LockBusy(
                f"the {what} is in use by {holder}{waited}: lock {path}; wait for it to finish, or stop it"
            )
        if not said:
            say(f"aorta: the {what} is in use by {holder} (lock {path}); waiting up to {wait_s:g} s")
            said = True
        time.sleep(POLL_S)


def remove_stale_temps(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the ``.<name>.<hex>.tmp`` files an atomic write of ``target`` left when it was killed
    mid-write. Call it holding the lock: the one writer of ``target`` is then this process."""
    p = Path(target)
    removed = []
    for tmp in p.parent.glob(f".{p.name}.*.tmp"):
        with contextlib.suppress(OSError):
            tmp.unlink()
            removed.append(tmp)
    return removed
