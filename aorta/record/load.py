"""Saved runs: read and validate a pytest-benchmark JSON written by aorta (pure: no torch).

One place says what a saved run may hold, for the gate (online and offline) and the report: a
``benchmarks`` list, aorta's ``machine_info['aorta']``, and per-round samples that are finite numbers.
A problem raises ``RecordError`` naming the file and the field.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

from aorta.record.bench import READABLE_SCHEMAS
from aorta.record.output_arguments import special_file


class RecordError(ValueError):
    """A saved run cannot be used: the message names the file and what is wrong with it."""


def load_run(path: str | os.PathLike) -> dict:
    """Read a run written by aorta; raise ``RecordError`` naming the file and the problem."""
    p = Path(path)
    run = read_json_file(p)
    check_run(run, p)
    assert isinstance(run, dict)  # check_run raised otherwise
    return run


def read_json_file(p: Path) -> object:
    """The JSON document in ``p``; ``RecordError`` naming the file when it is missing, unreadable, empty
    or not JSON."""
    if not p.exists():
        raise RecordError(f"{p}: no such file")
    if p.is_dir():
        raise RecordError(f"{p}: is a folder, not a pytest-benchmark JSON file")
    kind = special_file(p)
    if kind:  # a named pipe waits for a writer forever: refused, never opened (issue 65)
        raise RecordError(f"{p}: is {kind}, not a file; aorta reads regular files only: give the file itself")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"{p}: cannot be read: {exc}") from None
    if not text.strip():
        raise RecordError(f"{p}: is empty (an interrupted write? aorta itself writes atomically)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{p}: is not valid JSON (truncated or not a benchmark file): {exc}") from None


def check_run(run: object, where: str | os.PathLike) -> None:
    if not isinstance(run, dict) or not isinstance(run.get("benchmarks"), list):
        raise RecordError(f"{where}: not a pytest-benchmark JSON file (no 'benchmarks' list)")
    if not isinstance(run.get("machine_info"), dict) or not isinstance(
        run["machine_info"].get("aorta"), dict
    ):
        raise RecordError(
            f"{where}: not written by aorta (no machine_info['aorta']); save runs with "
            "aorta's pytest plugin (--aorta-save-baseline or --benchmark-json)"
        )
    for i, b in enumerate(run["benchmarks"]):
        if not isinstance(b, dict) or "fullname" not in b:
            raise RecordError(f"{where}: benchmark #{i} has no 'fullname'")
    aorta_benches = [b for b in run["benchmarks"] if "aorta_schema" in (b.get("extra_info") or {})]
    if run["benchmarks"] and not aorta_benches:
        raise RecordError(
            f"{where}: written by another tool: no benchmark has aorta's extra_info "
            "(extra_info['aorta_schema'])"
        )
    if not run["benchmarks"]:
        raise RecordError(f"{where}: holds no benchmarks")
    for b in aorta_benches:
        schema = b["extra_info"]["aorta_schema"]
        if schema not in READABLE_SCHEMAS:
            raise RecordError(
                f"{where}: benchmark {b.get('name')!r} has aorta_schema {schema!r}; this aorta reads "
                f"{', '.join(map(str, READABLE_SCHEMAS))} (a newer file? update aorta)"
            )
    check_samples(run["benchmarks"], where)


# ------------------------------------------------------------------------------------------ samples
def check_samples(benchmarks: list, where: str | os.PathLike) -> None:
    """Every per-round sample the gate and the report read must be a finite number (times also >= 0):
    pytest-benchmark's ``stats.data``, aorta's ``extra_info.device_ms_per_iteration``, and each metric's
    ``samples`` in ``extra_info.metrics`` (a mapping of name -> mapping). Raise naming the file and field."""
    for i, b in enumerate(benchmarks):
        if not isinstance(b, Mapping):
            continue
        at = f"benchmarks[{i}]"
        stats = b.get("stats")
        if isinstance(stats, Mapping) and stats.get("data") is not None:
            _check_list(where, f"{at}.stats.data", stats["data"], times=True)
        extra = b.get("extra_info")
        if not isinstance(extra, Mapping):
            continue
        if extra.get("device_ms_per_iteration") is not None:
            _check_list(
                where,
                f"{at}.extra_info.device_ms_per_iteration",
                extra["device_ms_per_iteration"],
                times=True,
            )
        _check_metrics(where, f"{at}.extra_info.metrics", extra.get("metrics"))


def _check_metrics(where, at: str, metrics: object) -> None:
    if metrics is None:
        return
    if not isinstance(metrics, Mapping):
        raise RecordError(
            f"{where}: {at}: is {_kind(metrics)}, expected a mapping of metric name -> "
            "{value, unit, higher_is_better, samples}"
        )
    for name, m in metrics.items():
        if not isinstance(m, Mapping):
            raise RecordError(
                f"{where}: {at}.{name}: is {_kind(m)}, expected a mapping "
                "{value, unit, higher_is_better, samples}"
            )
        value = m.get("value")  # None: unavailable on this machine, said so in extra_info["unavailable"]
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
        ):
            raise RecordError(f"{where}: {at}.{name}.value: {_kind(value)}, expected a finite number or null")
        if m.get("samples") is not None:
            _check_list(where, f"{at}.{name}.samples", m["samples"], times=False)


def _check_list(where, at: str, values: object, *, times: bool) -> None:
    """A list of finite numbers; ``times`` (durations) also never negative. Metrics may be (a saving)."""
    if not isinstance(values, list):
        raise RecordError(f"{where}: {at}: is {_kind(values)}, expected a list of numbers, one per round")
    for j, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise RecordError(f"{where}: {at}[{j}]: {_kind(v)}, expected a number")
        if not math.isfinite(v):
            raise RecordError(f"{where}: {at}[{j}]: {_kind(v)}, expected a finite number")
        if times and v < 0:
            raise RecordError(f"{where}: {at}[{j}]: {_kind(v)}, a time cannot be negative")


def _kind(value: object) -> str:
    """A value as its JSON reads (NaN, null, a string 'x'), for error messages."""
    if isinstance(value, str):
        return f"a string {value[:40]!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return json.dumps(value, default=str)[:40]
