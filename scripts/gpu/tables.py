"""The tables the hardware-queue and gate proofs print, read back from what their runs left (pure: JSON and
text in, lines out; no torch). Each ``Table`` takes the proof's work folder and knobs."""

from __future__ import annotations

import json
import statistics
import tarfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

from aorta.record import record_of
from aorta.record.table import format_table
from aorta.stats import median


def _fmt(value, spec=".3g") -> str:
    return "-" if value is None else format(value, spec)


def _load(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return {"benchmarks": [], "_error": f"{path.name}: no benchmark JSON ({exc})"}


def log_tail(name: str, lines: int = 40):
    """A table that is the last ``lines`` lines of one run's log (a probe or ``aorta compare`` prints its own)."""

    def table(work: Path, knobs) -> list[str]:
        log = work / f"{name}.log"
        return log.read_text().splitlines()[-lines:] if log.is_file() else [f"{name}: no log"]

    return table


def run_walls(work: Path, knobs) -> list[str]:
    """A run's fixed costs (``scripts.run_cost``), then each log's pytest summary and every gate run's wall."""
    costs = work / "costs.log"
    lines = costs.read_text().splitlines()[-4:] if costs.is_file() else ["costs: no log"]
    for log in sorted(work.glob("*.log")):
        text = log.read_text().splitlines()
        walls = [
            line.split("aorta gate: ", 1)[1] for line in text if "aorta gate: " in line and " ok in " in line
        ]
        done = [line for line in text if " passed" in line or " failed" in line][-1:]
        lines += [f"{log.stem}: {w.split(', log ')[0]}" for w in walls] + [
            f"{log.stem}: {d.strip('= ')}" for d in done
        ]
    return lines


def last_lines(work: Path, knobs) -> list[str]:
    """The last line of every run's log (pytest's summary: passed, failed, seconds)."""
    lines = []
    for log in sorted(work.glob("*.log")):
        text = log.read_text().rstrip().splitlines()
        lines.append(f"{log.stem}: {text[-1] if text else '(empty)'}")
    return lines


# -- one row per benchmark (any aorta benchmark JSON) ------------------------------------------------------


def benchmark_row(bench: dict) -> list:
    """mode, device ms (median), within-run CV %, GPU busy share, concurrency, distinct streams, headline,
    host seconds, reading notes."""
    rec = record_of(bench)
    ms = rec.device_ms_per_iteration
    mean = statistics.fmean(ms) if ms else 0.0
    cv = statistics.pstdev(ms) / mean if len(ms) > 1 and mean > 0 else None
    head = rec.headline()
    return [
        bench["name"],
        rec.get("gpu_mode") or rec.get("mode") or rec.timing_method,
        _fmt(median(ms) if ms else None, ".4g"),
        _fmt(cv * 100 if cv is not None else None, ".2f"),
        _fmt(rec.get("gpu_busy_share"), ".2f"),
        _fmt(rec.get("effective_concurrency"), ".3g"),
        rec.get("distinct_streams"),
        "-" if head is None or head.value is None else f"{head.value:.4g} {head.unit}",
        _fmt(sum((rec.get("host_phase_s") or {}).values()), ".1f"),
        "; ".join(rec.reading_notes)[:60],
    ]


def benchmark_table(paths: list[Path]) -> list[str]:
    """Host seconds by phase (and the profiler's cost) summed over the runs, then a row per benchmark."""
    docs = [_load(p) for p in paths]
    benches = [b for d in docs for b in d["benchmarks"]]
    phases: Counter[str] = Counter()
    profiler: dict[str, Counter[str]] = {"kernel_pass": Counter(), "labelled_pass": Counter()}
    for b in benches:
        info = b.get("extra_info") or {}
        phases.update(info.get("host_phase_s") or {})
        for name, totals in profiler.items():
            totals.update((info.get(name) or {}).get("profiler_cost") or {})
    lines = [d["_error"] for d in docs if "_error" in d]
    lines.append(f"host seconds by phase: { {k: round(v, 1) for k, v in phases.items()} }")
    lines += [
        f"profiler cost, {name} (summed): { {k: round(v, 1) for k, v in t.items()} }"
        for name, t in profiler.items()
        if t
    ]
    rows = [benchmark_row(b) for b in benches if "aorta_schema" in (b.get("extra_info") or {})]
    heads = [
        "benchmark",
        "mode",
        "device ms",
        "CV %",
        "GPU busy",
        "conc",
        "distinct",
        "headline",
        "host s",
        "note",
    ]
    return lines + format_table(heads, rows)


def benchmarks_of(*names: str):
    """A table of the runs ``names`` (their ``<name>.json`` in the work folder), one block each."""

    def table(work: Path, knobs) -> list[str]:
        lines: list[str] = []
        for name in names:
            if (work / f"{name}.json").is_file():
                lines += [f"== {name}", *benchmark_table([work / f"{name}.json"])]
        return lines or ["no benchmark JSON: see the logs in the archive"]

    return table


# -- telemetry ---------------------------------------------------------------------------------------------


def _run_docs(source: Path) -> Iterator[tuple[str, dict]]:
    """(run name, document) for each run JSON in a pool folder or .tgz (verdict files left out)."""
    if source.is_dir():
        for p in sorted(source.rglob("*.json")):
            if not p.name.endswith(".verdict.json"):
                yield p.stem, json.loads(p.read_text())
        return
    with tarfile.open(source) as tar:
        for m in sorted(tar.getmembers(), key=lambda m: m.name):
            if m.isfile() and m.name.endswith(".json") and not m.name.endswith(".verdict.json"):
                fh = tar.extractfile(m)
                if fh is not None:
                    yield Path(m.name).stem, json.load(fh)


def _cv_pct(values: list[float]) -> float:
    return statistics.pstdev(values) / statistics.mean(values) * 100


def throttle_rounds(sources: list[Path]) -> list[str]:
    """Per run, the timed rounds flagged throttled, by cause, and the benchmarks flagged in every round; per
    benchmark flagged in some run, the between-run CV of its median device time and of that time scaled by
    the sampled SM clock over its maximum (the evidence behind aorta/telemetry/round_policy.py)."""
    per_run, per_bench = [], defaultdict(list)
    for source in sources:
        for name, doc in _run_docs(source):
            flagged, all_flagged, causes, total = 0, 0, Counter(), 0
            for b in doc["benchmarks"]:
                extra = b.get("extra_info") or {}
                tel = extra.get("telemetry") or {}
                n, k = tel.get("rounds") or 0, tel.get("throttled_rounds") or 0
                total, flagged, all_flagged = total + n, flagged + k, all_flagged + bool(n and k == n)
                causes.update(tel.get("throttle_causes") or {})
                clock = ((tel.get("figures") or {}).get("sm_clock_mhz") or {}).get("median")
                top = (tel.get("limits") or {}).get("sm_clock_max_mhz")
                ms = statistics.median(extra.get("device_ms_per_iteration") or [float("nan")])
                per_bench[b["name"]].append((k, n, ms, clock, top))
            per_run.append(
                [name, total, flagged, all_flagged, ", ".join(f"{c} {v}" for c, v in causes.items())]
            )
    rows = []
    for name, seen in sorted(per_bench.items()):
        if not any(k for k, *_ in seen) or len(seen) < 2:
            continue
        ms = [m for _, _, m, _, _ in seen]
        scaled = [m * c / t for _, _, m, c, t in seen if c and t]
        cv_scaled = f"{_cv_pct(scaled):.2f}%" if len(scaled) == len(ms) else "n/a"
        rows.append([name, " ".join(f"{k}/{n}" for k, n, *_ in seen), f"{_cv_pct(ms):.2f}%", cv_scaled])
    return [
        *format_table(["run", "rounds", "throttled", "benchmarks all rounds", "causes"], per_run),
        "",
        *format_table(["benchmark", "throttled rounds per run", "CV device ms", "CV clock-scaled"], rows),
    ]


def telemetry_table(work: Path, knobs) -> list[str]:
    """machine_info as aorta records it, telemetry per benchmark (NVML and the nvidia-smi fallback), and µs
    per launch of eager tiny kernels with telemetry off (0) and at 100 ms."""
    data = _load(work / "telemetry.json")
    benches = data["benchmarks"] + _load(work / "telemetry_nvidia_smi.json")["benchmarks"]
    mi = (data.get("machine_info") or {}).get("aorta", {})
    gpu = mi.get("gpu", {})
    lines = ["machine_info (aorta):"]
    lines += [
        f"  {k}: {mi.get(k)}" for k in ("backend", "gpu_name", "driver", "torch", "cuda", "nccl", "env")
    ]
    keys = (
        "source",
        "driver_version",
        "sm_clock_max_mhz",
        "power_limit_w",
        "telemetry_source",
        "unavailable",
    )
    lines += [f"  gpu.{k}: {gpu.get(k)}" for k in keys]
    rows = []
    for b in benches:
        t = b["extra_info"].get("telemetry", {})
        f = t.get("figures", {})
        span = {k: "-" if not f.get(k) else f"{f[k]['min']:.0f}/{f[k]['median']:.0f}/{f[k]['max']:.0f}" for k in
                ("sm_clock_mhz", "power_w", "temperature_c")}  # fmt: skip
        throttled = f"{t.get('throttled_rounds')}/{t.get('rounds')}" if t.get("rounds") is not None else "n/a"
        rows.append([b["name"], t.get("source", "?"), t.get("samples", 0), *span.values(), throttled,
                     t.get("throttle_causes", t.get("reason"))])  # fmt: skip
    heads = ["benchmark", "source", "n", "SM MHz min/med/max", "power W", "temp C", "throttled", "causes"]
    lines += format_table(heads, rows)
    for p in sorted(work.glob("tiny_*.json")):
        for b in _load(p)["benchmarks"]:
            us = b["extra_info"]["metrics"]["us_per_launch"]["value"]
            lines.append(f"{p.stem} (telemetry interval ms, pass): {us:.2f} µs per launch")
    return lines


def affinity_table(work: Path, knobs) -> list[str]:
    """µs per launch of eager tiny kernels per process, by CPU placement, and the spread between processes."""
    rows: dict[tuple, list[float]] = defaultdict(list)
    for path in sorted(work.glob("*.json")):
        kind = path.stem.split("-")[0]
        for b in _load(path)["benchmarks"]:
            m = b["extra_info"]["metrics"]["us_per_launch"]["value"]
            rows[(kind, b["extra_info"].get("streams_requested"))].append(m)
    return [
        f"{kind:6s} streams={s:<3} µs/launch per process: {' '.join(f'{x:5.1f}' for x in v)}"
        f"   spread {max(v) / min(v) - 1:+.0%}"
        for (kind, s), v in sorted(rows.items())
    ]


def stream_concurrency_pair(*names: str):
    """stream_concurrency's figures from each run, side by side (the queue-count proof)."""

    def table(work: Path, knobs) -> list[str]:
        lines = log_tail("compare", 40)(work, knobs)
        for name in names:
            for b in _load(work / f"{name}.json")["benchmarks"]:
                if b["name"].startswith("test_stream_concurrency"):
                    figures = {k: round(v["value"], 3) for k, v in b["extra_info"]["metrics"].items()}
                    lines.append(f"{name} {b['name']} {figures}")
        return lines

    return table
