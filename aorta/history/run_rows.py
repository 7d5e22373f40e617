"""What the history keeps of a run file (pure: no database, no torch).

A run file is one run (a plain ``--benchmark-json``), or a document of several: a baseline's
``aorta_baseline.runs`` or the fresh-process runs of ``--aorta-runs N`` (``aorta_runs``). Each run becomes one
``RunRow``: when and where it ran, its stack (the environment fingerprint, aorta/environment/fingerprint.py),
and per benchmark and figure the run's figure (the median of its rounds, as the gate judges it) with its
samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aorta.environment.fingerprint import fingerprint
from aorta.environment.stack_label import stack_label
from aorta.record.machines import aorta_machine, machine_id, machine_key
from aorta.record.run_samples import figures
from aorta.record.run_samples import run_key as samples_run_key
from aorta.record.run_set import read_runs
from aorta.stats.noise import run_value


@dataclass(frozen=True)
class FigureRow:
    benchmark: str  # the pytest fullname
    figure: str  # device_ms or a metric's name
    value: float  # the run's figure: median of its rounds or steps
    unit: str
    higher_is_better: bool
    samples: tuple[float, ...]


@dataclass(frozen=True)
class VerdictRow:
    benchmark: str
    figure: str
    verdict: str  # SLOWER / FASTER / SAME / UNSURE / NOT_GATEABLE ...
    change: float | None  # relative change the gate measured, where it gave one


@dataclass(frozen=True)
class RunRow:
    recorded_at: str  # ISO 8601, UTC, seconds
    machine_model: str  # nvidia-h100-80gb-hbm3-x1, cpu (the baseline's machine folder)
    machine_id: str  # the GPU's UUID where recorded, else the host name
    host: str
    stack_label: str  # nvidia-h100-80gb-hbm3-x1-cuda13.0-torch2.11.0
    fingerprint: dict  # {"versions", "settings", "hardware", "sweep"}: strings
    commit_id: str
    settings: dict  # per benchmark settings that decide its figures (mode, sync mode, iterations)
    source: str  # the file it came from, or "pytest"
    figures: tuple[FigureRow, ...]
    verdicts: tuple[VerdictRow, ...] = field(default=())
    measured_at: str | None = None  # when the run itself says it was measured (pytest-benchmark's datetime)

    @property
    def run_key(self) -> str:
        """Who the run is: its samples and the time it recorded itself, as the gate tells repeats
        (aorta/record/run_samples.py, ``run_key``). Never a time a writer adds: the same run kept by a gate's child,
        then added from its JSON file, a combined document or a baseline, is one row (issue 46)."""
        samples: dict[str, dict[str, list[float]]] = {}
        for f in self.figures:
            samples.setdefault(f.benchmark, {})[f.figure] = [float(v) for v in f.samples]
        return samples_run_key(samples, self.measured_at)[:32]


def utc_text(when: str | None, default: str) -> str:
    """``when`` as ``YYYY-MM-DDTHH:MM:SS+00:00`` (a time with no zone is read as UTC); ``default`` if absent."""
    if not when:
        return default
    t = datetime.fromisoformat(str(when).replace("Z", "+00:00"))
    t = t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
    return t.isoformat(timespec="seconds")


SETTING_KEYS = ("mode", "gpu_mode", "sync_mode", "iterations_per_round", "issue_order", "size", "dtype")


def _settings(benchmarks: list) -> dict:
    out = {}
    for b in benchmarks:
        info = b.get("extra_info") or {}
        picked = {k: info[k] for k in SETTING_KEYS if k in info}
        if picked:
            out[b["fullname"]] = picked
    return out


def verdict_rows(verdict_doc: Mapping) -> tuple[VerdictRow, ...]:
    """The verdicts of a gate's verdict file (``--aorta-verdict-json``, ``aorta compare --verdict-json``):
    each comparison's verdict per benchmark and figure, with the change it measured."""
    rows = []
    for comp in verdict_doc.get("comparisons") or ():
        for v in (comp or {}).get("verdicts") or ():
            if isinstance(v, Mapping) and v.get("benchmark") and v.get("metric") and v.get("outcome"):
                change = v.get("change_ratio")
                rows.append(
                    VerdictRow(
                        str(v["benchmark"]),
                        str(v["metric"]),
                        str(v["outcome"]),
                        float(change) if isinstance(change, (int, float)) else None,
                    )
                )
    return tuple(rows)


def run_rows(doc: Mapping, source: str, now: str) -> list[RunRow]:
    """The runs a checked run document holds (``aorta.record.load.check_run``), oldest first."""
    machine = aorta_machine(doc)
    units = {
        (b["fullname"], name): (unit, hib)
        for b in doc.get("benchmarks", ())
        for name, (unit, hib, _) in figures(b).items()
    }
    gpu = machine.get("gpu_name") if machine.get("backend") not in (None, "cpu") else None
    common: dict[str, Any] = {
        "machine_model": machine_key(doc),
        "host": str((doc.get("machine_info") or {}).get("node") or ""),
        "stack_label": stack_label(gpu, int(machine.get("gpu_count") or 1), machine),
        "fingerprint": fingerprint(machine),
        "commit_id": str((doc.get("commit_info") or {}).get("id") or ""),
        "settings": _settings(list(doc.get("benchmarks", ()))),
        "source": source,
    }
    held = read_runs(doc)
    if not held.stored:
        figs = tuple(
            FigureRow(b["fullname"], name, run_value(s), unit, hib, tuple(s))
            for b in doc.get("benchmarks", ())
            for name, (unit, hib, s) in figures(b).items()
            if s
        )
        when = utc_text(doc.get("datetime"), now)
        return [
            RunRow(when, machine_id=machine_id(doc), figures=figs, measured_at=doc.get("datetime"), **common)
        ]
    out = []
    for entry in held.entries:
        benches = entry.get("benchmarks") or {}
        figs = tuple(
            FigureRow(
                fullname,
                name,
                run_value(samples),
                *units.get((fullname, name), ("", False)),
                tuple(float(v) for v in samples),
            )
            for fullname, named in benches.items()
            for name, samples in (named or {}).items()
            if samples
        )
        measured = entry.get("measured_at")
        when = utc_text(entry.get("saved_at"), now)
        mid = str((entry.get("machine") or {}).get("id") or machine_id(doc))
        out.append(RunRow(when, machine_id=mid, figures=figs, measured_at=measured, **common))
    return out
