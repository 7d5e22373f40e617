"""Saved runs: load and validate, save atomically, find a baseline by name (pure: no torch).

A baseline is the whole pytest-benchmark JSON of a run (with aorta's extra_info and the raw per-round
samples), plus an ``aorta_baseline`` block: its name, when it was saved, the machine key, the software
stack and the resolved options. It lives at ``<dir>/<machine key>/<name>.json``, the machine key being
the GPU model and count (``nvidia-h100-80gb-hbm3-x8``; ``cpu`` on a machine without a GPU).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from aorta.gate.compare import STACK_KEYS, aorta_machine
from aorta.report.atomic_files import write_text_atomic

BASELINE_SCHEMA = 1
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$")


class BaselineError(ValueError):
    """A saved run cannot be used: the message names the file and what is wrong with it."""


def parse_baseline_name(text: str) -> str:
    if not NAME_PATTERN.match(str(text)) or str(text).endswith(".json"):
        raise ValueError(f"--aorta-save-baseline={text!r}: a baseline name is letters, digits and . _ + - "
                         "(up to 100, no slashes, no .json), e.g. rocm-7.0.8 or cu130-torch2.11")
    return str(text)


def machine_key(run: Mapping) -> str:
    m = aorta_machine(run)
    if m.get("backend") in (None, "cpu"):
        return "cpu"
    slug = re.sub(r"[^a-z0-9]+", "-", str(m.get("gpu_name") or "unknown-gpu").lower()).strip("-")
    return f"{slug}-x{m.get('gpu_count', 1)}"


def load_run(path: str | os.PathLike) -> dict:
    """Read a run written by aorta; raise ``BaselineError`` naming the file and the problem."""
    p = Path(path)
    if not p.exists():
        raise BaselineError(f"{p}: no such file")
    if p.is_dir():
        raise BaselineError(f"{p}: is a folder, not a pytest-benchmark JSON file")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"{p}: cannot be read: {exc}") from None
    if not text.strip():
        raise BaselineError(f"{p}: is empty (an interrupted write? aorta itself writes atomically)")
    try:
        run = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BaselineError(f"{p}: is not valid JSON (truncated or not a benchmark file): {exc}") from None
    check_run(run, p)
    return run


def check_run(run: object, where: str | os.PathLike) -> None:
    if not isinstance(run, dict) or not isinstance(run.get("benchmarks"), list):
        raise BaselineError(f"{where}: not a pytest-benchmark JSON file (no 'benchmarks' list)")
    if not isinstance(run.get("machine_info"), dict) or not isinstance(run["machine_info"].get("aorta"), dict):
        raise BaselineError(f"{where}: not written by aorta (no machine_info['aorta']); save runs with "
                            "aorta's pytest plugin (--aorta-save-baseline or --benchmark-json)")
    for i, b in enumerate(run["benchmarks"]):
        if not isinstance(b, dict) or "fullname" not in b:
            raise BaselineError(f"{where}: benchmark #{i} has no 'fullname'")
    aorta_benches = [b for b in run["benchmarks"] if "aorta_schema" in (b.get("extra_info") or {})]
    if run["benchmarks"] and not aorta_benches:
        raise BaselineError(f"{where}: written by another tool: no benchmark has aorta's extra_info "
                            "(extra_info['aorta_schema'])")
    if not run["benchmarks"]:
        raise BaselineError(f"{where}: holds no benchmarks")
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
            _check_list(where, f"{at}.extra_info.device_ms_per_iteration", extra["device_ms_per_iteration"],
                        times=True)
        _check_metrics(where, f"{at}.extra_info.metrics", extra.get("metrics"))


def _check_metrics(where, at: str, metrics: object) -> None:
    if metrics is None:
        return
    if not isinstance(metrics, Mapping):
        raise BaselineError(f"{where}: {at}: is {_kind(metrics)}, expected a mapping of metric name -> "
                            "{value, unit, higher_is_better, samples}")
    for name, m in metrics.items():
        if not isinstance(m, Mapping):
            raise BaselineError(f"{where}: {at}.{name}: is {_kind(m)}, expected a mapping "
                                "{value, unit, higher_is_better, samples}")
        value = m.get("value")  # None: unavailable on this machine, said so in extra_info["unavailable"]
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value)):
            raise BaselineError(f"{where}: {at}.{name}.value: {_kind(value)}, expected a finite number or null")
        if m.get("samples") is not None:
            _check_list(where, f"{at}.{name}.samples", m["samples"], times=False)


def _check_list(where, at: str, values: object, *, times: bool) -> None:
    """A list of finite numbers; ``times`` (durations) also never negative. Metrics may be (a saving)."""
    if not isinstance(values, list):
        raise BaselineError(f"{where}: {at}: is {_kind(values)}, expected a list of numbers, one per round")
    for j, v in enumerate(values):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise BaselineError(f"{where}: {at}[{j}]: {_kind(v)}, expected a number")
        if not math.isfinite(v):
            raise BaselineError(f"{where}: {at}[{j}]: {_kind(v)}, expected a finite number")
        if times and v < 0:
            raise BaselineError(f"{where}: {at}[{j}]: {_kind(v)}, a time cannot be negative")


def _kind(value: object) -> str:
    """A value as its JSON reads (NaN, null, a string 'x'), for error messages."""
    if isinstance(value, str):
        return f"a string {value[:40]!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return json.dumps(value, default=str)[:40]


def stack_of(run: Mapping) -> dict:
    m = aorta_machine(run)
    return {**{k: m.get(k) for k in STACK_KEYS if m.get(k) is not None},
            "python": (run.get("machine_info") or {}).get("python_version"),
            "env": m.get("env") or {}, "hardware_queues": m.get("hardware_queues") or {}}


def baseline_path(directory: str | os.PathLike, run: Mapping, name: str) -> Path:
    return Path(directory) / machine_key(run) / f"{name}.json"


def save_baseline(run: Mapping, directory: str | os.PathLike, name: str, options: Mapping) -> Path:
    """Write ``run`` as baseline ``name`` for its machine, atomically (temp file + os.replace)."""
    check_run(run, "this run")
    doc = dict(run)
    doc["aorta_baseline"] = {
        "schema": BASELINE_SCHEMA, "name": name, "machine_key": machine_key(run),
        "saved_at": datetime.now(UTC).isoformat(), "stack": stack_of(run), "options": dict(options),
    }
    path = baseline_path(directory, run, name)
    write_json_atomic(path, doc)
    return path


def write_json_atomic(path: str | os.PathLike, doc: object) -> None:
    """Serialize first, then write atomically (aorta's one atomic writer): a failure at any step leaves
    whatever was at ``path`` untouched; the file's mode follows the umask like any other output."""
    text = json.dumps(doc, indent=2, default=str)
    write_text_atomic(path, text)


def looks_like_path(ref: str) -> bool:
    return ref.endswith(".json") or os.sep in ref or "/" in ref


def resolve(ref: str, directory: str | os.PathLike, key: str) -> Path:
    """``--aorta-compare NAME|PATH`` -> a file: a path as given; a name under this machine's key first,
    then under any other machine's key (the hardware check decides whether that one may be used)."""
    if looks_like_path(ref) or Path(ref).is_file():
        return Path(ref)
    directory = Path(directory)
    own = directory / key / f"{ref}.json"
    if own.exists():
        return own
    others = sorted(directory.glob(f"*/{ref}.json"))
    if others:
        return others[0]
    known = sorted(f"{p.parent.name}/{p.stem}" for p in directory.glob("*/*.json"))
    listing = ", ".join(known) if known else "none"
    raise BaselineError(f"--aorta-compare={ref}: no baseline named {ref!r} in {directory} "
                        f"(looked for {own}); saved baselines: {listing}")
