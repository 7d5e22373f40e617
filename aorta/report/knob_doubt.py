"""A sweep's "best configuration" needs a setting that took effect (pure: no torch).

``aorta sweep`` writes ``knobs.json``: per cell, whether each setting left a trace in the run. Where no setting
left one in any cell, the cells differ by noise as far as the runs show, and naming a best configuration would
pass noise off as a finding (issue 38, case 25): the report says so instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from aorta.sweep.knob_check import KNOBS_FILE
from aorta.sweep.knob_evidence import NO_EVIDENCE


def knobs_without_any_evidence(folder: str | Path) -> list[str]:
    """The sweep's settings, where none of them took effect in any cell by the knob check; [] where one did,
    or where the sweep has no ``knobs.json`` (nothing was checked: nothing to say)."""
    try:
        rows = json.loads((Path(folder) / KNOBS_FILE).read_text(encoding="utf-8")).get("cells") or []
    except (OSError, ValueError, AttributeError):
        return []
    seen: dict[str, bool] = {}  # knob -> evidence somewhere
    for row in rows:
        knobs = row.get("knobs") if isinstance(row, Mapping) else None
        for name, k in (knobs or {}).items():
            shown = isinstance(k, Mapping) and k.get("status") != NO_EVIDENCE
            seen[name] = seen.get(name, False) or shown
    return sorted(seen) if seen and not any(seen.values()) else []


def doubt_line(label: str, best: Mapping) -> str:
    knobs = ", ".join(best["no_knob_evidence"])
    return (
        f"  no best in {label}: {best['configuration']}: the knob check found no evidence that {knobs} took "
        f"effect in any of the {best['cells_compared']} cells ({KNOBS_FILE}); their differences are noise as "
        "far as the runs show"
    )
