"""Regression verdicts shown in a report: read from the gate's verdict JSON, or computed by the gate.

The report only shows verdicts; it never makes them (the gate, ``aorta.gate``, owns the statistics).
A verdict is ``{"benchmark", "metric", "verdict", "change_ratio", "p_value", "reason"}``; ``change_ratio``
is the gate's relative change of the medians, (candidate - reference) / reference.
"""

from __future__ import annotations

import json
from pathlib import Path

from aorta.report.errors import ReportInputError

KEYS = ("benchmark", "metric", "verdict", "change_ratio", "p_value", "reason", "why")
MOVED = (
    "SLOWER",
    "FASTER",
)  # the verdicts the gate explains (kernel diff and causes, aorta/gate/causes/why.py)


def _with_why(verdicts: list, why) -> list:
    """Each moved verdict with its benchmark's "why" from the gate, where the gate gave one."""
    why = why if isinstance(why, dict) else {}
    return [
        {**v, "why": why.get(v.get("benchmark"))}
        if isinstance(v, dict) and str(v.get("outcome", v.get("verdict"))).upper() in MOVED
        else v
        for v in verdicts
    ]


def normalise(items, source: str) -> list[dict]:
    """Verdict dicts with the report's keys; the gate calls the verdict ``outcome``, both are read."""
    if not isinstance(items, list):
        raise ReportInputError(f"{source}: expected a list of verdicts")
    out = []
    for i, v in enumerate(items):
        outcome = v.get("verdict", v.get("outcome")) if isinstance(v, dict) else None
        if outcome is None or "benchmark" not in v or "metric" not in v:
            raise ReportInputError(f"{source}: verdict [{i}] lacks benchmark, metric or verdict/outcome")
        out.append({**{k: v.get(k) for k in KEYS}, "verdict": outcome})
    return out


def load_verdict_file(path: str | Path) -> list[dict]:
    """A verdict JSON file: the gate's (``{"comparisons": [{"verdicts": [...]}, ...]}``), a plain list,
    or an object holding the list under ``verdicts``."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportInputError(f"--verdicts {p}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ReportInputError(f"--verdicts {p}: not JSON (line {exc.lineno}: {exc.msg})") from None
    if isinstance(doc, dict) and isinstance(doc.get("comparisons"), list):
        doc = [
            v
            for c in doc["comparisons"]
            if isinstance(c, dict)
            for v in _with_why(c.get("verdicts") or [], c.get("why"))
        ]
    elif isinstance(doc, dict):
        doc = doc.get("verdicts")
    return normalise(doc, f"--verdicts {p}")


def gate_verdicts(
    reference_path: Path, candidate_path: Path, reference: str, candidate: str
) -> tuple[list[dict] | None, str]:
    """The gate's verdicts for two saved benchmark JSON runs and its one-line summary, or ``(None, why not)``."""
    try:
        from aorta.gate.comparison.compare import compare_runs
        from aorta.record import load_run
    except ImportError:
        return None, "the regression gate (aorta.gate) is not part of this aorta"
    try:
        comp = compare_runs(
            load_run(reference_path), load_run(candidate_path), ref_label=reference, cand_label=candidate
        )
    except ValueError as exc:  # RecordError names the file and the field
        raise ReportInputError(str(exc)) from None
    if comp.refused:
        return None, f"the gate refused to compare these runs: {comp.mismatch}"
    verdicts = _with_why([v.as_dict() for v in comp.verdicts], comp.why)
    return normalise(verdicts, "aorta.gate"), f"gate: {comp.summary()}"


def by_benchmark_metric(verdicts: list[dict] | None) -> dict[tuple[str, str], str]:
    """(benchmark name, metric) -> verdict; the gate names benchmarks by pytest ``fullname``
    (``path::test[params]``), the report by ``name`` (``test[params]``): both are keyed."""
    out: dict[tuple[str, str], str] = {}
    for v in verdicts or ():
        name = str(v["benchmark"])
        out[(name, v["metric"])] = v["verdict"]
        out[(name.rsplit("::", 1)[-1], v["metric"])] = v["verdict"]
    return out
