"""Load recorded sweeps (``aorta sweep`` output folders) for the report: the manifest, and each finished
cell's run through the report's own loader (pure: no torch, no plots)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from aorta.record.redact import redact_argv, redact_env
from aorta.report.errors import ReportInputError
from aorta.report.runs import Run, load_benchmark_json
from aorta.sweep import manifest as mf
from aorta.sweep.grid import SweepUsageError


@dataclass
class SweepCell:
    id: str
    settings: dict[str, str]
    status: str
    note: str | None
    duration_s: float | None
    json_path: Path | None = None
    run: Run | None = None  # loaded for cells that finished (status ok)


@dataclass
class Sweep:
    label: str
    folder: Path
    axes: list[dict]  # the manifest's grid: [{"kind", "name", "values"}]
    command: list[str]
    base_env: dict[str, str]
    cells: list[SweepCell] = field(default_factory=list)

    def cell(self, cell_id: str) -> SweepCell | None:
        return next((c for c in self.cells if c.id == cell_id), None)

    def ok_cells(self) -> list[SweepCell]:
        return [c for c in self.cells if c.run is not None]


def load_sweep(folder: str | Path) -> Sweep:
    path = Path(folder)
    if not path.is_dir():
        raise ReportInputError(f"--sweep {folder}: no such folder")
    try:
        doc = mf.read_manifest(path)
    except SweepUsageError as exc:
        raise ReportInputError(f"--sweep {folder}: {exc}") from None
    if doc is None:
        raise ReportInputError(f"--sweep {folder}: holds no {mf.MANIFEST} (not an aorta sweep folder)")
    sweep = Sweep(
        str(doc.get("label") or path.name),
        path,
        list(doc["grid"]),
        redact_argv(doc["command"]),  # a sweep.json written before issue 56 may hold a password
        redact_env(dict(doc.get("base_env") or {})),
    )
    for entry in doc["cells"]:
        cell = SweepCell(
            str(entry["id"]),
            {**entry.get("env", {}), **entry.get("overrides", {})},
            str(entry["status"]),
            entry.get("note"),
            entry.get("duration_s"),
        )
        if entry["status"] == mf.OK and entry.get("benchmark_json"):
            cell.json_path = path / entry["benchmark_json"]
            try:
                cell.run = load_benchmark_json(cell.json_path, f"{sweep.label}: {cell.id}")
            except ReportInputError as exc:  # one damaged cell is shown as such, the others still count
                cell.status, cell.note, cell.json_path = "unreadable", str(exc), None
            else:
                late = _other_attempt(cell.run.machine, entry.get("attempt"))
                if late:  # a process of an earlier attempt wrote over this attempt's result
                    cell.status, cell.note, cell.json_path, cell.run = "unreadable", late, None, None
        sweep.cells.append(cell)
    return sweep


def _other_attempt(machine: dict, attempt: object) -> str | None:
    cell = machine.get("sweep_cell") if isinstance(machine, dict) else None
    found = cell.get("attempt") if isinstance(cell, dict) else None
    if attempt and found and found != attempt:
        return f"written by attempt {found}, the manifest records attempt {attempt} (a late writer)"
    return None


def load_sweeps(folders: list[str]) -> list[Sweep]:
    """Every ``--sweep``; labels must differ and every sweep must run over the same grid variables."""
    sweeps = [load_sweep(f) for f in folders]
    seen: dict[str, Path] = {}
    for s in sweeps:
        if s.label in seen:
            raise ReportInputError(
                f"--sweep {s.folder} and --sweep {seen[s.label]} are both labelled {s.label!r}; "
                "run each stack's sweep with its own --label"
            )
        seen[s.label] = s.folder
    first = sweeps[0]
    names = [(a["kind"], a["name"]) for a in first.axes]
    for s in sweeps[1:]:
        other = [(a["kind"], a["name"]) for a in s.axes]
        if other != names:
            raise ReportInputError(
                f"--sweep {s.folder} runs over {', '.join(n for _, n in other)}, --sweep {first.folder} over "
                f"{', '.join(n for _, n in names)}: sweeps are compared cell by cell, so they need the same grid variables"
            )
    return sweeps
