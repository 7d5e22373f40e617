"""Which runs are the same run: a content hash of what was measured (pure: no torch).

A run counted twice looks like two runs that agree perfectly: no noise, every change significant (issue 38,
cases 12 and 13: one candidate file given three times read as three runs and gave SLOWER at p=5e-5; ``aorta
noise run.json run.json run.json`` gave noise 0.00%). Two fresh processes never measure the same samples to
the last bit, so runs whose samples hash alike are one run, counted once, with a line saying so.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence


def content_hash(obj: object) -> str:
    """A hash of ``obj`` as canonical JSON (keys sorted): equal for equal content, whatever the order."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def repeats(keys: Sequence[str]) -> dict[int, int]:
    """``{index: index of the first with the same key}`` for every key seen before; {} when all differ."""
    first: dict[str, int] = {}
    out: dict[int, int] = {}
    for i, k in enumerate(keys):
        if k in first:
            out[i] = first[k]
        else:
            first[k] = i
    return out
