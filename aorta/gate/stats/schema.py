"""The baseline's schema number: written with every save, read before a baseline is used (pure: no torch).

A baseline saved by a newer aorta (a higher ``aorta_baseline.schema``) may hold fields this aorta does not know:
saving onto it would rewrite it in the old schema and drop them, and comparing with it may misread it (issue 38,
case 3). Both are refused, naming the file and both versions.
"""

from __future__ import annotations

from collections.abc import Mapping

from aorta import __version__
from aorta.record import RecordError

BASELINE_SCHEMA = 1


def check_schema(doc: Mapping, source: str = "") -> None:
    """``RecordError`` where ``doc`` is a baseline of a schema newer than ``BASELINE_SCHEMA`` (or not a number)."""
    meta = doc.get("aorta_baseline")
    if not isinstance(meta, Mapping) or "schema" not in meta:
        return
    schema = meta["schema"]
    where = f"{source}: " if source else ""
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
        raise RecordError(f"{where}aorta_baseline.schema: {schema!r}, expected a whole number >= 1")
    if schema > BASELINE_SCHEMA:
        raise RecordError(
            f"{where}saved by a newer aorta (baseline schema {schema}; this aorta {__version__} reads schema "
            f"{BASELINE_SCHEMA} at most): upgrade aorta to use it; saving onto it here would drop what the "
            "newer aorta recorded"
        )
