"""pytest-benchmark < 5.3 opens ``--benchmark-json`` while the options are parsed (``argparse.FileType('wb')``):
the user's file is emptied before anything can be refused, so a usage error (or any failure before the end
of the run) leaves a 0-byte file where an earlier result was. aorta turns the option back into a path, as
pytest-benchmark 5.3 has it; the file is then written only at the end of the run, whole, beside and renamed
(``aorta.record.benchmark_json``).

pytest's parser keeps its argparse parser as ``optparser`` (pytest 9.0 to 9.x); where that is not so, the
option is left as it is.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

OPTION = "--benchmark-json"


def as_path_option(parser: object) -> bool:
    """Make ``--benchmark-json`` parse to a ``Path`` where it would open the file; True when changed."""
    optparser = getattr(parser, "optparser", None)
    for action in getattr(optparser, "_actions", ()):
        if OPTION in getattr(action, "option_strings", ()) and isinstance(action.type, argparse.FileType):
            action.type = Path
            return True
    return False


def target_path(value: object) -> Path | None:
    """Where ``--benchmark-json`` is to be written: the path itself (a ``str`` or ``Path``: the whole path,
    never only its basename), or the name of a file pytest-benchmark < 5.3 opened; None when not given."""
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        return Path(os.fspath(value))
    return Path(str(getattr(value, "name", value)))
