"""One saver at a time per baseline: an exclusive lock on a file beside it, held across the
read-modify-write of ``save_baseline`` (pure: no torch).

Two processes saving the same name at once would each read N runs and each write N + 1: one run lost. The
lock (``fcntl.flock`` on ``.<name>.lock``, released by the kernel when its holder dies, so a killed saver
never leaves it held) makes the second wait for the first and read its result. Where ``fcntl`` is missing
(not POSIX) saving goes on unlocked, as before.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]


def lock_path(target: Path) -> Path:
    return target.with_name(f".{target.stem}.lock")


@contextlib.contextmanager
def locked(target: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the lock of ``target`` (its folder must exist) for the ``with`` block."""
    path = lock_path(Path(target))
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


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
