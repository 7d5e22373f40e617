"""Load saved runs: pytest-benchmark JSON written by aorta, or an FSDP artifacts folder (pure: no torch).

A run is named by the label the user gave it. Anything else (unreadable, not JSON, another tool's
JSON, a folder without rank files) raises ``ReportInputError`` naming the file and what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from aorta.record import READABLE_SCHEMAS, RecordError, check_samples
from aorta.record.bench import raw_metrics, schema_of
from aorta.record.load import read_json_file
from aorta.report import fsdp_artifacts
from aorta.report.errors import ReportInputError


@dataclass
class Run:
    label: str
    path: Path
    kind: str  # "benchmark_json" or "fsdp_artifacts"
    machine: dict = field(default_factory=dict)  # machine_info["aorta"] (GPU, driver, versions, env)
    host: dict = field(default_factory=dict)  # python, node, cpu: from pytest-benchmark's machine_info
    benchmarks: list[dict] = field(default_factory=list)  # pytest-benchmark entries with aorta extra_info
    fsdp: list[fsdp_artifacts.ScenarioRank] = field(default_factory=list)
    datetime: str | None = None
    commit: str | None = None


def _read_json(path: Path):
    try:
        return read_json_file(path)
    except RecordError as exc:
        raise ReportInputError(str(exc)) from None


def _aorta_benchmarks(path: Path, doc: dict) -> list[dict]:
    out = []
    for i, bench in enumerate(doc["benchmarks"]):
        if not isinstance(bench, dict) or not isinstance(bench.get("extra_info"), dict):
            raise ReportInputError(f"{path}: benchmarks[{i}] has no extra_info object")
        schema = schema_of(bench)
        if schema is None:
            continue
        if schema not in READABLE_SCHEMAS:
            raise ReportInputError(
                f"{path}: benchmark {bench.get('name')!r} has aorta_schema {schema}; this aorta "
                f"reads {', '.join(map(str, READABLE_SCHEMAS))} (a newer file? update aorta)"
            )
        if not isinstance(raw_metrics(bench), dict) or "name" not in bench:
            raise ReportInputError(
                f"{path}: benchmark {bench.get('name')!r} lacks a name or extra_info.metrics"
            )
        out.append(bench)
    return out


def load_benchmark_json(path: Path, label: str) -> Run:
    doc = _read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ReportInputError(f"{path}: not a pytest-benchmark JSON file (no 'benchmarks' list)")
    raw_machine = doc.get("machine_info")
    machine_info: dict = raw_machine if isinstance(raw_machine, dict) else {}
    benches = _aorta_benchmarks(path, doc)
    try:
        check_samples(doc["benchmarks"], path)  # the gate's own check: one place for what a sample may be
    except RecordError as exc:
        raise ReportInputError(str(exc)) from None
    if "aorta" not in machine_info and not benches:
        raise ReportInputError(
            f"{path}: a pytest-benchmark file not written by aorta (no machine_info['aorta'], "
            "no extra_info.aorta_schema)"
        )
    if not benches:
        raise ReportInputError(
            f"{path}: holds no aorta benchmark results (every benchmark failed or was skipped?)"
        )
    raw_aorta = machine_info.get("aorta")
    aorta_info: dict = raw_aorta if isinstance(raw_aorta, dict) else {}
    host = {
        "node": machine_info.get("node"),
        "python": machine_info.get("python_version"),
        "cpu": (machine_info.get("cpu") or {}).get("brand_raw"),
    }
    commit = (doc.get("commit_info") or {}).get("id")
    return Run(
        label,
        path,
        "benchmark_json",
        machine=aorta_info,
        host=host,
        benchmarks=benches,
        datetime=doc.get("datetime"),
        commit=commit,
    )


def load_fsdp_artifacts(path: Path, label: str) -> Run:
    """An FSDP run folder: its rank files (here or under ``artifacts/``) and, when the folder also holds
    the run's pytest-benchmark JSON (one ``*.json`` beside them), its benchmarks and machine info."""
    entries = fsdp_artifacts.read_artifacts(path)
    jsons = sorted(p for p in path.glob("*.json") if p.is_file())
    if len(jsons) > 1:
        raise ReportInputError(
            f"{path}: {len(jsons)} JSON files beside the artifacts "
            f"({', '.join(p.name for p in jsons)}); keep one, or give the JSON as its own --run"
        )
    if jsons:
        run = load_benchmark_json(jsons[0], label)
        run.path, run.kind, run.fsdp = path, "fsdp_artifacts+benchmark_json", entries
        return run
    return Run(label, path, "fsdp_artifacts", fsdp=entries)


def load_run(path: str | Path, label: str) -> Run:
    """A run from a file (pytest-benchmark JSON) or a folder (FSDP artifacts)."""
    p = Path(path)
    if not p.exists():
        raise ReportInputError(f"--run {path}: no such file or folder")
    if p.is_dir():
        return load_fsdp_artifacts(p, label)
    return load_benchmark_json(p, label)


def load_runs(pairs: list[tuple[str, str]]) -> list[Run]:
    """``[(path, label), ...]`` -> runs; a label given twice is an error naming it."""
    seen: dict[str, str] = {}
    for path, label in pairs:
        if not label or not label.strip():
            raise ReportInputError(f"--label for {path} is empty")
        if label in seen:
            raise ReportInputError(
                f"label {label!r} is used twice (for {seen[label]} and {path}); "
                "give each --run its own --label"
            )
        seen[label] = path
    return [load_run(path, label) for path, label in pairs]
