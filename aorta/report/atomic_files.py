"""Write files so that a reader never sees half of one: temp file in the same folder, then os.replace.

The one atomic writer of aorta (baselines, verdicts, reports, merged traces). The temp file is created
with mode 0o666 and the process umask applies, as for a plain ``open(path, "w")``: the result is as
readable as any other output (``tempfile.mkstemp`` would leave it 0600).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path


def _create_temp(folder: Path, name: str) -> tuple[int, Path]:
    """A new file beside the target, never an existing one (O_EXCL), mode 0o666 less the umask."""
    while True:
        tmp = folder / f".{name}.{uuid.uuid4().hex[:12]}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to a temp file, flush it to disk, rename it over ``path``; on any failure the old
    ``path`` is left as it was and the temp file is removed."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(p.parent, p.name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return p


def write_json_atomic(path: str | Path, obj) -> Path:
    return write_text_atomic(path, json.dumps(obj, indent=1, default=str) + "\n")
