"""The samples the gate judges, from a run and from a baseline's several runs (pure: no torch).

A figure's samples are device time per round (``device_ms``) and each judged metric's per-round (or
per-step) samples; a metric with one value per run gives that one value. A baseline saved more than once
(``--aorta-save-baseline NAME`` again) keeps every run's samples in ``aorta_baseline["runs"]``, each
``{"saved_at", "stack", "benchmarks": {fullname: {figure: [samples]}}}``: the gate pools them for the
within-run test and uses the spread between them for the across-process check.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from aorta.metric import Metric
from aorta.record import RecordError, record_of

DEVICE_TIME = "device_ms"  # the name device time per iteration goes by in verdicts and thresholds
RUNS_KEY = "runs"
MAX_BASELINE_RUNS = 10  # the oldest runs are dropped past this (the save line says so)

FigureSamples = dict[str, list[float]]  # figure -> samples, for one benchmark of one run


def device_samples_ms(bench: Mapping) -> list[float]:
    """Per-round device ms per iteration: aorta's raw samples, else pytest-benchmark's saved data."""
    record = record_of(bench)
    if record.device_ms_per_iteration:
        return list(record.device_ms_per_iteration)
    st = bench.get("stats") or {}
    if st.get("data"):
        return [float(v) * 1e3 for v in st["data"]]
    if st.get("median") is not None:
        return [float(st["median"]) * 1e3]  # a single value: judged by drift across runs only
    return []


def metric_samples(metric: Metric) -> list[float]:
    if metric.samples:
        return list(metric.samples)
    return [] if metric.value is None else [float(metric.value)]


def declared_min_effects(bench: Mapping) -> dict[str, float]:
    """Noise floors a benchmark declared for its figures (name -> ratio; device time's as ``device_ms``)."""
    return record_of(bench).noise_floors()


def figures(bench: Mapping) -> dict[str, tuple[str, bool, list[float]]]:
    """name -> (unit, higher_is_better, samples) for device time and every judged metric (a metric the
    record marks ``judged: false``, such as time waiting for a peer rank, is reported only)."""
    out = {DEVICE_TIME: ("ms", False, device_samples_ms(bench))}
    for name, m in record_of(bench).metrics.items():
        if m.judged:
            out[name] = (m.unit, m.higher_is_better, metric_samples(m))
    return out


# ------------------------------------------------------------------------------ a baseline's runs
def run_entry(run: Mapping, saved_at: str, stack: Mapping) -> dict[str, Any]:
    """One run's samples as a baseline keeps them, by benchmark fullname and figure."""
    return {
        "saved_at": saved_at,
        "stack": dict(stack),
        "benchmarks": {
            b["fullname"]: {name: samples for name, (_, _, samples) in figures(b).items()}
            for b in run.get("benchmarks", ())
        },
    }


def baseline_runs(doc: Mapping) -> list[dict[str, FigureSamples]]:
    """The baseline's runs, oldest first, each ``{fullname: {figure: samples}}``; a document without
    ``aorta_baseline["runs"]`` (an older baseline, or a plain run file) is one run. ``RecordError`` names
    the field when a stored sample is not a finite number."""
    stored = (doc.get("aorta_baseline") or {}).get(RUNS_KEY)
    if not stored:
        return [
            {b["fullname"]: {n: s for n, (_, _, s) in figures(b).items()} for b in doc.get("benchmarks", ())}
        ]
    out = []
    for i, entry in enumerate(stored):
        benches = entry.get("benchmarks") if isinstance(entry, Mapping) else None
        if not isinstance(benches, Mapping):
            raise RecordError(f"aorta_baseline.runs[{i}].benchmarks: missing or not a mapping")
        run: dict[str, FigureSamples] = {}
        for fullname, figs in benches.items():
            run[fullname] = {}
            for name, samples in (figs or {}).items():
                at = f"aorta_baseline.runs[{i}].benchmarks[{fullname!r}].{name}"
                if not isinstance(samples, list) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                    for v in samples
                ):
                    raise RecordError(f"{at}: expected a list of finite numbers")
                run[fullname][name] = [float(v) for v in samples]
        out.append(run)
    return out


def runs_of_figure(runs: list[dict[str, FigureSamples]], fullname: str, figure: str) -> list[list[float]]:
    """The samples of one figure of one benchmark, run by run (runs without it left out)."""
    return [r[fullname][figure] for r in runs if fullname in r and r[fullname].get(figure)]
