"""After a sweep: read each finished cell's run and log, say whether its settings took effect, write
``knobs.json`` beside the manifest (the evidence itself is aorta/sweep/knob_evidence.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from aorta.record import write_json_atomic
from aorta.sweep import manifest as mf
from aorta.sweep.knob_evidence import NO_EVIDENCE, CellRun, evidence_lines, sweep_evidence

KNOBS_FILE = "knobs.json"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def cell_runs(folder: Path, doc: Mapping) -> list[CellRun]:
    """Every cell of the manifest; a cell that did not finish, or whose JSON cannot be read, has no doc."""
    out = []
    for entry in doc.get("cells", ()):
        run = None
        if entry.get("status") == mf.OK and entry.get("benchmark_json"):
            try:
                run = json.loads(_read(folder / entry["benchmark_json"]) or "null")
            except json.JSONDecodeError:
                run = None
        log = _read(folder / entry["log"]) if entry.get("log") else ""
        out.append(
            CellRun(
                str(entry["id"]), dict(entry.get("env") or {}), dict(entry.get("overrides") or {}), run, log
            )
        )
    return out


def check_knobs(folder: Path, doc: Mapping, out: TextIO = sys.stdout) -> list[dict]:
    report = sweep_evidence(cell_runs(folder, doc))
    if not report:
        return report
    write_json_atomic(folder / KNOBS_FILE, {"cells": report})
    flagged = sum(k["status"] == NO_EVIDENCE for row in report for k in row["knobs"].values())
    print(
        f"aorta sweep: did each setting take effect ({flagged} with no evidence; {folder / KNOBS_FILE}):",
        file=out,
    )
    for line in evidence_lines(report):
        print(line, file=out)
    return report
