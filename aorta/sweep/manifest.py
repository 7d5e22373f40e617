"""The sweep's manifest (``sweep.json`` in the output folder): the grid, the command, the base environment
and every cell's settings, command, exit code, times and result paths (pure: no processes).

A rerun of the same sweep into the same folder resumes from it; a rerun of a different one (grid, overrides,
command, label or base environment) is refused, so one folder never mixes two sweeps.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from aorta.record import write_json_atomic
from aorta.record.redact import redact_argv, redact_env
from aorta.sweep.grid import Axis, Cell, SweepUsageError, shown

SCHEMA = 1
MANIFEST = "sweep.json"
OK, FAILED, TIMEOUT, INTERRUPTED, PENDING = "ok", "failed", "timeout", "interrupted", "pending"
IDENTITY = ("label", "grid", "command", "base_env")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def new_manifest(
    label: str,
    axes: Sequence[Axis],
    command: Sequence[str],
    base_env: Mapping[str, str],
    cells: Sequence[Cell],
) -> dict:
    return {
        "aorta_sweep_schema": SCHEMA,
        "label": label,
        "grid": [a.as_dict() for a in axes],
        "command": redact_argv(command),  # no password stored (issue 56): the cells run the real command
        "base_env": redact_env(base_env),
        "created_at": now_iso(),
        "updated_at": None,
        "cells": [cell_entry(c) for c in cells],
    }


def cell_entry(cell: Cell) -> dict:
    return {
        "index": cell.index,
        "id": cell.id,
        "dir": f"cells/{cell.dirname}",
        "env": {
            k: shown(k, v) for k, v in cell.env.items()
        },  # no password kept (issue 65): the cell runs the real one
        "overrides": {k: shown(k, v) for k, v in cell.overrides.items()},
        "status": PENDING,
        "command": None,
        "exit_code": None,
        "started_at": None,
        "ended_at": None,
        "duration_s": None,
        "benchmark_json": None,
        "artifacts": None,
        "log": None,
        "note": None,
    }


def read_manifest(folder: Path) -> dict | None:
    """The manifest in ``folder``, None when there is none; a damaged one is an error naming the file."""
    path = folder / MANIFEST
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SweepUsageError(f"{path}: cannot be read as a sweep manifest: {exc}") from None
    if (
        not isinstance(doc, dict)
        or doc.get("aorta_sweep_schema") != SCHEMA
        or not isinstance(doc.get("cells"), list)
    ):
        raise SweepUsageError(
            f"{path}: not an aorta sweep manifest (schema {SCHEMA}); choose another --output"
        )
    problem = damaged_field(doc)
    if problem:
        raise SweepUsageError(f"{path}: damaged sweep manifest: {problem}")
    return doc


STATUSES = (OK, FAILED, TIMEOUT, INTERRUPTED, PENDING)
_TEXT_OR_NONE = ("benchmark_json", "artifacts", "log", "note", "started_at", "ended_at")


def _is_str_map(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def damaged_field(doc: Mapping) -> str | None:
    """The first field of a manifest that is missing or of the wrong type, as ``field: what is wrong``, or
    None. Everything the sweep's resume and the report read is checked, so neither meets a bad field later."""
    if not isinstance(doc.get("label"), str):
        return f"label: {doc.get('label')!r}, expected text"
    if not isinstance(doc.get("command"), list) or not all(isinstance(t, str) for t in doc["command"]):
        return f"command: {doc.get('command')!r}, expected a list of text"
    if not _is_str_map(doc.get("base_env", {})):
        return f"base_env: {doc.get('base_env')!r}, expected a mapping of text to text"
    grid = doc.get("grid")
    if not isinstance(grid, list):
        return f"grid: {grid!r}, expected a list of axes"
    for i, axis in enumerate(grid):
        if (
            not isinstance(axis, dict)
            or axis.get("kind") not in ("env", "override")
            or not isinstance(axis.get("name"), str)
            or not isinstance(axis.get("values"), list)
            or not all(isinstance(v, str) for v in axis["values"])
        ):
            return f"grid[{i}]: {axis!r}, expected {{kind: env|override, name, values: [...]}}"
    for i, cell in enumerate(doc["cells"]):
        if not isinstance(cell, dict):
            return f"cells[{i}]: {cell!r}, expected a mapping"
        for key in ("id", "dir"):
            if not isinstance(cell.get(key), str):
                return f"cells[{i}].{key}: {cell.get(key)!r}, expected text"
        if cell.get("status") not in STATUSES:
            return f"cells[{i}].status: {cell.get('status')!r}, allowed {', '.join(STATUSES)}"
        for key in ("env", "overrides"):
            if not _is_str_map(cell.get(key, {})):
                return f"cells[{i}].{key}: {cell.get(key)!r}, expected a mapping of text to text"
        for key in _TEXT_OR_NONE:
            if not isinstance(cell.get(key), (str, type(None))):
                return f"cells[{i}].{key}: {cell.get(key)!r}, expected text or null"
        duration = cell.get("duration_s")
        if duration is not None and (isinstance(duration, bool) or not isinstance(duration, (int, float))):
            return f"cells[{i}].duration_s: {duration!r}, expected a number of seconds or null"
    return None


def write_manifest(folder: Path, doc: dict) -> Path:
    doc["updated_at"] = now_iso()
    return write_json_atomic(folder / MANIFEST, doc)


def check_same_sweep(old: Mapping, new: Mapping, folder: Path) -> None:
    """Refuse to resume into a folder that holds another sweep, naming what differs."""
    differs = [k for k in IDENTITY if old.get(k) != new.get(k)]
    if not differs:
        return
    details = "; ".join(f"{k}: was {json.dumps(old.get(k))}, now {json.dumps(new.get(k))}" for k in differs)
    raise SweepUsageError(
        f"--output {folder}: holds another sweep ({details}); rerun the same sweep to resume it, "
        "or give a new --output"
    )


def merge_cells(old: Mapping, new: dict) -> dict:
    """The new manifest with the old one's cell records (same grid, so the same cells in the same order)."""
    new["cells"] = [dict(c) for c in old["cells"]]
    new["created_at"] = old.get("created_at", new["created_at"])
    return new


def counts(doc: Mapping) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in doc["cells"]:
        out[c["status"]] = out.get(c["status"], 0) + 1
    return out
