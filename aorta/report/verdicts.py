"""Regression verdicts shown in a report: read from the gate's verdict JSON, or computed by the gate.

The report only shows verdicts; it never makes them (the gate, ``aorta.gate``, owns the statistics).
A verdict is ``{"benchmark", "metric", "verdict", "change_ratio", "p_value", "reason"}``.
"""

from __future__ import annotations

import json
from pathlib import Path

from aorta.report.errors import ReportInputError

KEYS = ("benchmark", "metric", "verdict", "change_ratio", "p_value", "reason")


def normalise(items, source: str) -> list[dict]:
    if not isinstance(items, list):
        raise ReportInputError(f"{source}: expected a list of verdicts")
    out = []
    for i, v in enumerate(items):
        if not isinstance(v, dict) or not all(k in v for k in ("benchmark", "metric", "verdict")):
            raise ReportInputError(f"{source}: verdict [{i}] lacks benchmark, metric or verdict")
        out.append({k: v.get(k) for k in KEYS})
    return out


def load_verdict_file(path: str | Path) -> list[dict]:
    """A verdict JSON file: a list of verdicts, or an object holding one under ``verdicts`` or ``results``."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportInputError(f"--verdicts {p}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ReportInputError(f"--verdicts {p}: not JSON (line {exc.lineno}: {exc.msg})") from None
    if isinstance(doc, dict):
        doc = doc.get("verdicts", doc.get("results"))
    return normalise(doc, f"--verdicts {p}")


def gate_verdicts(reference_path: Path, candidate_path: Path) -> tuple[list[dict] | None, str]:
    """Verdicts from the gate for two saved benchmark JSON runs, or ``(None, why not)``.

    The gate lives in ``aorta.gate.verdict``; where it is not installed the report says so.
    """
    try:
        from aorta.gate import verdict as gate  # type: ignore[import-not-found]
    except ImportError:
        return None, "the regression gate (aorta.gate) is not part of this aorta"
    compare_files = getattr(gate, "compare_files", None)
    if compare_files is None:
        return None, "aorta.gate.verdict has no compare_files(reference_path, candidate_path)"
    return normalise(compare_files(reference_path, candidate_path), "aorta.gate"), ""
