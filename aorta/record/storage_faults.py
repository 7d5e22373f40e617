"""Storage faults said as what they are (issue 56, class 4): no space, over quota, read-only, no permission, an
I/O error of the device, told apart by the error number, never guessed as "damaged" (pure: stdlib only).

A full disk read as a damaged history told users to move a healthy history aside. Every writer of aorta goes
through aorta/record/atomic.py, which raises ``WriteFailed`` with these words and leaves nothing partial; the
history asks ``folder_fault`` before it calls a database damaged.
"""

from __future__ import annotations

import contextlib
import errno
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

# errno -> (what it is, what to do): the words every refusal of a write uses.
FAULTS = {
    errno.ENOSPC: ("no space left on the device", "free space there and run again"),
    errno.EDQUOT: ("over the disk quota", "free space within your quota (or raise it) and run again"),
    errno.EROFS: ("a read-only filesystem", "give a place on a writable filesystem"),
    errno.EACCES: ("no permission to write there", "give a place you may write to"),
    errno.EPERM: ("no permission to write there", "give a place you may write to"),
    errno.EIO: ("an I/O error of the device", "check the device (dmesg) before writing there again"),
    errno.EFBIG: ("a file larger than the filesystem allows", "give a place on another filesystem"),
}
PROBE_BYTES = 64 * 1024  # what a probe writes: more than one block, less than any real output


class WriteFailed(OSError):
    """A file could not be written: ``strerror`` is the fault in words, ``filename`` the file; ``str()`` the
    whole sentence. Nothing of the file was left (no partial or empty file)."""

    def __str__(self) -> str:
        return f"{self.filename}: could not be written: {self.strerror}; nothing of it was kept"


def fault_words(exc: OSError) -> str:
    """``exc`` as what it is and what to do: "no space left on the device (ENOSPC): free space there and run
    again"; an errno not in ``FAULTS`` is said by its own text."""
    if exc.errno in FAULTS:
        what, todo = FAULTS[exc.errno]
        return f"{what} ({errno.errorcode[exc.errno]}): {todo}"
    return str(exc.strerror or exc)


def write_failed(path: str | os.PathLike, exc: OSError) -> WriteFailed:
    """The ``WriteFailed`` for ``path`` that ``exc`` stopped."""
    return WriteFailed(exc.errno, fault_words(exc), os.fspath(path))


@contextlib.contextmanager
def faults_named(path: str | os.PathLike) -> Iterator[None]:
    """A write to ``path`` outside aorta/record/atomic.py (a run's log, a lock file): a fault of the storage
    (no space, quota, read-only, I/O error, too large) is ``WriteFailed`` naming ``path``, so the command says
    one line, not a traceback (issue 65: the fresh-run driver, ``aorta ab``'s logs, the sweep lock)."""
    try:
        yield
    except WriteFailed:
        raise
    except OSError as exc:
        if exc.errno in FAULTS:
            raise write_failed(path, exc) from None
        raise


def folder_fault(folder: str | os.PathLike) -> OSError | None:
    """The fault that stops a write in ``folder`` now, found by writing (and removing) a small file there: a full
    disk, a quota, a read-only mount answer with their own error number; None when the write succeeds."""
    probe = Path(folder) / f".aorta-probe.{uuid.uuid4().hex[:12]}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        return exc
    try:
        os.write(fd, b"\0" * PROBE_BYTES)
        os.fsync(fd)
    except OSError as exc:
        return exc
    finally:
        os.close(fd)
        try:
            os.unlink(probe)
        except OSError:
            pass
    try:
        st = os.statvfs(folder)
    except OSError:
        return None
    if st.f_bavail == 0 and os.geteuid() != 0:  # only root's reserve left: the next write fails
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return None


DAMAGED_STORE_EXIT = 2  # a history or a document that does not read: the command's bad input
BROKEN_PIPE_EXIT = 141  # the reader of stdout went away (``| head``): 128 + SIGPIPE, said by no line


def quiet_broken_pipe() -> None:
    """After EPIPE on stdout (``aorta history show | head``): stdout pointed at /dev/null, so the interpreter's
    last flush says nothing either, as coreutils' commands end (issue 65: a BrokenPipeError traceback)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


def said_fault(exc: BaseException) -> tuple[int, str] | None:
    """(exit code, the line's words) for a fault of the storage that a writer or reader did not say itself
    (issue 65: a full disk gave tracebacks in the fresh-run driver, ``aorta ab``'s logs and the sweep lock; a
    damaged history DatabaseError / JSONDecodeError): the path and what the fault is, or None for anything
    else (a programming error keeps its traceback). The one place every ``aorta`` command's faults are named
    (aorta/cli.py), and pytest's (aorta/plugin.py)."""
    import json
    import sqlite3

    if isinstance(exc, WriteFailed):
        return 3, str(exc)
    if isinstance(exc, json.JSONDecodeError):
        return (
            DAMAGED_STORE_EXIT,
            f"a damaged document, not JSON ({exc.msg} at line {exc.lineno}): restore it",
        )
    if isinstance(exc, sqlite3.OperationalError):  # SQLite's own words for the storage's faults
        text = str(exc)
        for words, number in (("disk is full", errno.ENOSPC), ("disk I/O error", errno.EIO)):
            if words in text:
                return 3, f"a SQLite database: {fault_words(OSError(number, text))}"
        return None
    if isinstance(exc, sqlite3.DatabaseError):
        return DAMAGED_STORE_EXIT, f"a damaged SQLite database ({exc}): nothing more was written; restore it"
    if isinstance(exc, OSError) and exc.errno in FAULTS:
        where = exc.filename or "a file"
        also = f" -> {exc.filename2}" if exc.filename2 else ""
        return 3, f"{where}{also}: {fault_words(exc)}"
    return None
