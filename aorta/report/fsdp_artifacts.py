"""Read an FSDP ``artifacts/`` folder: per-rank ``rank_<r>_metrics.jsonl`` files (pure: no torch).

Every reader of the FSDP suite's artifact schema lives here, so a change of schema touches one module.
The schema read (one JSON object per line; lines without ``"step"`` are headers or notes and skipped):

    {"scenario": "baseline", "rank": 0, "step": 3,
     "step_ms": 41.2,                    # device time of the step (alias: step_time_ms)
     "compute_busy_ms": 30.1,            # union of compute kernels in the step (aliases below)
     "comm_busy_ms": 12.0,               # union of communication kernels
     "overlapped_ms": 9.5,               # |comm ∩ compute|
     "exposed_comm_ms": 2.5,             # optional: comm - overlapped
     "idle_ms": 1.6}                     # optional: step - |comm ∪ compute|

The overlap figures may also sit in a nested ``"overlap"`` object; ``null`` means unavailable (a CPU
run has no kernel timestamps) and is kept as ``None``, never filled in. A header line may carry
``"machine_info"`` (the same dict as a pytest-benchmark run's ``machine_info["aorta"]``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from aorta.report.errors import ReportInputError

RANK_FILE = re.compile(r"^rank_(\d+)_metrics\.jsonl$")
ALIASES = {
    "step_ms": ("step_ms", "step_time_ms"),
    "compute_busy_ms": ("compute_busy_ms", "compute_ms"),
    "comm_busy_ms": ("comm_busy_ms", "comm_ms", "communication_busy_ms"),
    "overlapped_ms": ("overlapped_ms", "overlap_ms"),
    "exposed_comm_ms": ("exposed_comm_ms", "exposed_ms"),
    "idle_ms": ("idle_ms",),
}


@dataclass(frozen=True)
class StepRecord:
    scenario: str
    rank: int
    step: int
    step_ms: float | None
    compute_busy_ms: float | None
    comm_busy_ms: float | None
    overlapped_ms: float | None
    exposed_comm_ms: float | None
    idle_ms: float | None

    @property
    def compute_only_ms(self) -> float | None:
        """Compute with no communication beside it."""
        if self.compute_busy_ms is None or self.overlapped_ms is None:
            return None
        return max(0.0, self.compute_busy_ms - self.overlapped_ms)


def artifacts_dir(path: Path) -> Path | None:
    """``path`` itself or its ``artifacts/`` child, whichever holds rank files; ``None`` if neither."""
    for candidate in (path, path / "artifacts"):
        if candidate.is_dir() and any(RANK_FILE.match(p.name) for p in candidate.iterdir()):
            return candidate
    return None


def _number(path: Path, line_no: int, key: str, value) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ReportInputError(f"{path}:{line_no}: {key} must be a number or null, got {value!r}")
    return float(value)


def _field(path: Path, line_no: int, obj: dict, name: str) -> float | None:
    nested = obj.get("overlap") if isinstance(obj.get("overlap"), dict) else {}
    for key in ALIASES[name]:
        for source in (obj, nested):
            if key in source:
                return _number(path, line_no, key, source[key])
    return None


def _derived(rec: dict) -> dict:
    """exposed = comm - overlapped; idle = step - |comm ∪ compute| (only from figures that were measured)."""
    comm, comp, ov, step = rec["comm_busy_ms"], rec["compute_busy_ms"], rec["overlapped_ms"], rec["step_ms"]
    if rec["exposed_comm_ms"] is None and comm is not None and ov is not None:
        rec["exposed_comm_ms"] = max(0.0, comm - ov)
    if rec["idle_ms"] is None and None not in (comm, comp, ov, step):
        rec["idle_ms"] = max(0.0, step - (comm + comp - ov))
    return rec


def read_rank_file(path: Path) -> tuple[list[StepRecord], dict | None]:
    """Step records of one rank file and the machine info of its header, if any."""
    m = RANK_FILE.match(path.name)
    file_rank = int(m.group(1)) if m else 0
    records: list[StepRecord] = []
    machine: dict | None = None
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportInputError(f"{path}: cannot read FSDP metrics file: {exc}") from None
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ReportInputError(f"{path}:{line_no}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise ReportInputError(f"{path}:{line_no}: expected a JSON object per line")
        if "step" not in obj:
            if isinstance(obj.get("machine_info"), dict):
                machine = obj["machine_info"]
            continue
        if isinstance(obj["step"], bool) or not isinstance(obj["step"], int):
            raise ReportInputError(f"{path}:{line_no}: step must be an integer, got {obj['step']!r}")
        rec = {name: _field(path, line_no, obj, name) for name in ALIASES}
        records.append(StepRecord(scenario=str(obj.get("scenario", "fsdp")), rank=int(obj.get("rank", file_rank)),
                                  step=obj["step"], **_derived(rec)))
    if not records:
        raise ReportInputError(f"{path}: no step records (lines with a \"step\" key); not an aorta FSDP metrics file")
    return records, machine


def read_artifacts(path: Path) -> tuple[list[StepRecord], dict | None]:
    """Every rank's step records under an artifacts folder, and the first machine info found."""
    folder = artifacts_dir(path)
    if folder is None:
        raise ReportInputError(f"{path}: no rank_<r>_metrics.jsonl files here or under {path / 'artifacts'}")
    records: list[StepRecord] = []
    machine = None
    for f in sorted(folder.iterdir()):
        if RANK_FILE.match(f.name):
            recs, info = read_rank_file(f)
            records.extend(recs)
            machine = machine or info
    return records, machine
