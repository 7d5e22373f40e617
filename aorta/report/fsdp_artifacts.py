"""Read an FSDP ``artifacts/`` folder: per-rank ``rank_<r>_metrics.jsonl`` files (pure: no torch).

Every reader of the FSDP suite's artifact schema (``aorta/fsdp/metrics_log.py`` documents it) lives
here, so a change of schema touches one module. Lines read, one JSON object each, by ``"kind"``:

- ``step``: ``{"scenario", "rank", "step", "phase": warmup|timed|profiled, "step_ms" (timed only),
  "samples", "tokens", "loss", ...}``
- ``overlap``: one per scenario and rank, the profiled window: ``{"scenario", "rank", "steps",
  "available", "reason", "figures": {"window_ms", "compute_busy_ms", "comm_busy_ms", "overlapped_ms",
  "exposed_comm_ms", "overlap_ratio", "busbw_gbps": {kind: GB/s}, ...}, "compute_us", "comm_us",
  "overlap_us": [[t0, t1], ...] (absolute µs)}``
- ``scenario`` and anything else: skipped.

Figures a run did not measure (``available`` false, ``null``) stay ``None`` with the run's reason; they
are never filled in.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from aorta.report.errors import ReportInputError
from aorta.timeline.overlap import idle_ms

RANK_FILE = re.compile(r"^rank_(\d+)_metrics\.jsonl$")


@dataclass
class ScenarioRank:
    """What one rank recorded for one scenario."""

    scenario: str
    rank: int
    step_ms: dict[int, float] = field(default_factory=dict)  # timed steps: step index -> device ms
    tokens: dict[int, float] = field(default_factory=dict)  # step index -> this rank's tokens
    overlap: dict | None = None  # the profiled window's figures (window totals), None if unavailable
    steps: list[dict] = field(default_factory=list)  # each profiled step's figures, where recorded
    overlap_reason: str | None = "no overlap record"
    profiled_steps: int = 0
    compute_us: list[tuple[float, float]] = field(default_factory=list)
    comm_us: list[tuple[float, float]] = field(default_factory=list)
    overlap_us: list[tuple[float, float]] = field(default_factory=list)

    def per_step(self, name: str) -> float | None:
        """A window total divided by the profiled steps (ms per step), or None if not measured."""
        if self.overlap is None or not self.profiled_steps:
            return None
        value = self.overlap.get(name)
        return None if value is None else value / self.profiled_steps

    def overlap_ratios(self) -> list[float]:
        """This rank's overlap ratio, step by step where the steps were recorded, else its window's."""
        per_step = [
            d["overlap_ratio"] for d in self.steps if isinstance(d.get("overlap_ratio"), (int, float))
        ]
        if per_step:
            return per_step
        value = (self.overlap or {}).get("overlap_ratio")
        return [float(value)] if isinstance(value, (int, float)) else []

    def idle_ms_per_step(self) -> float | None:
        """Time in the profiled window with no kernel running, per step: window - |compute ∪ comm|."""
        window, compute, comm, both = (
            self.per_step(n) for n in ("window_ms", "compute_busy_ms", "comm_busy_ms", "overlapped_ms")
        )
        if window is None or compute is None or comm is None or both is None:
            return None
        return idle_ms(window, compute, comm, both)


def artifacts_dir(path: Path) -> Path | None:
    """``path`` itself or its ``artifacts/`` child, whichever holds rank files; ``None`` if neither."""
    for candidate in (path, path / "artifacts"):
        if candidate.is_dir() and any(RANK_FILE.match(p.name) for p in candidate.iterdir()):
            return candidate
    return None


def _intervals(path: Path, line_no: int, value) -> list[tuple[float, float]]:
    if value is None:
        return []
    try:
        return [(float(iv[0]), float(iv[1])) for iv in value]
    except (TypeError, ValueError, IndexError):
        raise ReportInputError(f"{path}:{line_no}: intervals must be [[start_us, end_us], ...]") from None


def _number(path: Path, line_no: int, key: str, value) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ReportInputError(f"{path}:{line_no}: {key} must be a number or null, got {value!r}")
    return float(value)


def _entry(found: dict, path: Path, line_no: int, obj: dict, file_rank: int) -> ScenarioRank:
    scenario = obj.get("scenario")
    if not isinstance(scenario, str) or not scenario:
        raise ReportInputError(f"{path}:{line_no}: {obj.get('kind')} line without a scenario name")
    rank = obj.get("rank", file_rank)
    return found.setdefault((scenario, rank), ScenarioRank(scenario, rank))


def read_rank_file(path: Path) -> list[ScenarioRank]:
    """Every scenario one rank file holds."""
    m = RANK_FILE.match(path.name)
    file_rank = int(m.group(1)) if m else 0
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportInputError(f"{path}: cannot read FSDP metrics file: {exc}") from None
    found: dict[tuple[str, int], ScenarioRank] = {}
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ReportInputError(f"{path}:{line_no}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise ReportInputError(f"{path}:{line_no}: expected a JSON object per line")
        kind = obj.get("kind")
        if kind == "step":
            entry = _entry(found, path, line_no, obj, file_rank)
            step = obj.get("step")
            if isinstance(step, bool) or not isinstance(step, int):
                raise ReportInputError(f"{path}:{line_no}: step must be an integer, got {step!r}")
            ms = _number(path, line_no, "step_ms", obj.get("step_ms"))
            if obj.get("phase", "timed") == "timed" and ms is not None:
                entry.step_ms[step] = ms
                tokens = _number(path, line_no, "tokens", obj.get("tokens"))
                if tokens is not None:
                    entry.tokens[step] = tokens
        elif kind == "overlap":
            entry = _entry(found, path, line_no, obj, file_rank)
            entry.profiled_steps = int(obj.get("steps") or 0)
            figures = obj.get("figures")
            if obj.get("available") and isinstance(figures, dict):
                entry.overlap, entry.overlap_reason = figures, None
                entry.steps = [d for d in obj.get("per_step") or [] if isinstance(d, dict)]
            else:
                entry.overlap, entry.overlap_reason = None, str(obj.get("reason") or "overlap not measured")
            entry.compute_us = _intervals(path, line_no, obj.get("compute_us"))
            entry.comm_us = _intervals(path, line_no, obj.get("comm_us"))
            entry.overlap_us = _intervals(path, line_no, obj.get("overlap_us"))
    if not found:
        raise ReportInputError(
            f'{path}: no step or overlap lines ("kind": "step" / "overlap"); not an aorta FSDP metrics file'
        )
    return list(found.values())


def read_artifacts(path: Path) -> list[ScenarioRank]:
    """Every rank's scenarios under an artifacts folder, sorted by scenario then rank."""
    folder = artifacts_dir(path)
    if folder is None:
        raise ReportInputError(f"{path}: no rank_<r>_metrics.jsonl files here or under {path / 'artifacts'}")
    entries = [e for f in sorted(folder.iterdir()) if RANK_FILE.match(f.name) for e in read_rank_file(f)]
    return sorted(entries, key=lambda e: (e.scenario, e.rank))
