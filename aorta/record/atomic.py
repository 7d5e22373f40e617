"""Write files so that a reader never sees half of one: temp file in the same folder, then os.replace.

The one atomic writer of aorta (baselines, verdicts, reports, merged traces, per-rank FSDP metrics). The temp file is created
with mode 0o666 and the process umask applies, as for a plain ``open(path, "w")``: the result is as
readable as any other output (``tempfile.mkstemp`` would leave it 0600).
"""

from __future__ import annotations

import errno
import json
import os
import stat
import uuid
from pathlib import Path

from aorta.record.storage_faults import WriteFailed, write_failed


def _create_temp(folder: Path, name: str) -> tuple[int, Path]:
    """A new file beside the target, never an existing one (O_EXCL), mode 0o666 less the umask."""
    while True:
        tmp = folder / f".{name}.{uuid.uuid4().hex[:12]}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def _check_replaceable(p: Path) -> None:
    """``WriteFailed`` where ``p`` is a named pipe, a device or a socket: a rename would replace the node itself
    with a file (issue 65b: ``--benchmark-json`` onto a device node; ``/dev/null`` itself for a run as root)."""
    try:
        mode = os.stat(p).st_mode
    except (OSError, ValueError):
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        what = "a named pipe" if stat.S_ISFIFO(mode) else "a special file (a device or a socket)"
        raise WriteFailed(
            errno.EINVAL, f"it is {what}, not a file; aorta writes regular files only", os.fspath(p)
        )


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to a temp file, flush it to disk, rename it over ``path``; on any failure the old
    ``path`` is left as it was and the temp file is removed. A fault of the storage is ``WriteFailed``, saying
    what it is (no space, over quota, read-only: aorta/record/storage_faults.py)."""
    p = Path(path)
    _check_replaceable(p)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = _create_temp(p.parent, p.name)
    except OSError as exc:
        raise write_failed(p, exc) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and not isinstance(exc, WriteFailed):
            raise write_failed(p, exc) from None
        raise
    return p


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path: str | os.PathLike[str], obj: object) -> Path:
    return write_text_atomic(path, json.dumps(obj, indent=1, default=str) + "\n")


def append_text(path: str | os.PathLike[str], text: str) -> Path:
    """Append ``text`` to ``path`` (``$GITHUB_STEP_SUMMARY``, a list of runs not kept) whole or not at all: on a
    fault the file is cut back to its length before, and ``WriteFailed`` says what the fault is."""
    p = Path(path)
    try:
        with open(p, "ab") as f:
            before = f.tell()
            try:
                f.write(text.encode("utf-8"))
                f.flush()
                os.fsync(f.fileno())
            except OSError:
                f.truncate(before)
                raise
    except OSError as exc:
        raise write_failed(p, exc) from None
    return p
