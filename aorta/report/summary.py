"""Aggregate each run's figures and compare two runs, biggest changes first (pure: no torch, no plots).

A *configuration* is one benchmark id (pytest-benchmark ``name``, e.g. ``test_large_gemm_only[streams4-bf16]``)
or one FSDP scenario (``fsdp:<scenario>``). A *figure* is one metric of one configuration, with its unit and
direction. Ratios are candidate / reference; the biggest change is the largest |log ratio|.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

from aorta import stats
from aorta.record import record_of
from aorta.record.rank_breakdown import per_rank_breakdown, straggler_line, worst_per_step
from aorta.report.errors import ReportInputError
from aorta.report.fsdp_artifacts import ScenarioRank
from aorta.report.runs import Run

# FSDP figures per scenario: (unit, higher_is_better). Window figures are per profiled step, averaged over ranks.
FSDP_FIGURES = {
    "step_ms": ("ms", False),  # median over timed steps of the slowest rank's step
    "tokens_per_s": ("tokens/s", True),
    "compute_busy_ms_per_step": ("ms", False),
    "comm_busy_ms_per_step": ("ms", False),
    "overlapped_ms_per_step": ("ms", True),
    "exposed_comm_ms_per_step": ("ms", False),
    "idle_ms_per_step": ("ms", False),
    # The benchmark's definition (aorta.fsdp.rank_figures): the worst rank at each profiled step, median
    # over the steps (runs recorded before per-step figures: the worst rank's whole window).
    "overlap_ratio_worst_rank": ("ratio", True),
}
WINDOW_FIGURES = ("compute_busy_ms", "comm_busy_ms", "overlapped_ms", "exposed_comm_ms")


def _median_or_none(values) -> float | None:
    vals = [v for v in values if v is not None]
    return stats.median(vals) if vals else None


def fsdp_scenarios(entries: list[ScenarioRank]) -> dict[str, list[ScenarioRank]]:
    out: dict[str, list[ScenarioRank]] = defaultdict(list)
    for e in entries:
        out[e.scenario].append(e)
    return {k: sorted(v, key=lambda e: e.rank) for k, v in sorted(out.items())}


def slowest_rank_steps(ranks: list[ScenarioRank]) -> list[tuple[int, float]]:
    """(step, slowest rank's step ms) for every timed step that every rank recorded."""
    common = sorted(set.intersection(*(set(r.step_ms) for r in ranks))) if ranks else []
    return list(
        zip(common, worst_per_step([[r.step_ms[s] for s in common] for r in ranks], higher_is_better=False))
    )


def breakdown_rows(ranks: list[ScenarioRank]) -> list[dict]:
    """Per rank, ms per profiled step: compute alone, overlapped, exposed comm, idle (None if not measured)."""
    rows = []
    for r in ranks:
        comp, ov, exposed = (r.per_step(n) for n in ("compute_busy_ms", "overlapped_ms", "exposed_comm_ms"))
        rows.append(
            {
                "rank": r.rank,
                "compute_only_ms": None if comp is None or ov is None else max(0.0, comp - ov),
                "overlapped_ms": ov,
                "exposed_comm_ms": exposed,
                "idle_ms": r.idle_ms_per_step(),
                "reason": r.overlap_reason,
            }
        )
    return rows


def worst_rank_overlap_ratio(ranks: list[ScenarioRank]) -> float | None:
    """Median over profiled steps of the lowest rank's overlap ratio at that step (the benchmark's
    ``overlap_ratio_worst_rank``); None unless every rank recorded one."""
    series = [r.overlap_ratios() for r in ranks]
    if not series or not all(series):
        return None
    return stats.median(worst_per_step(series, higher_is_better=True))


def _all_or_none(values: list) -> list | None:
    return None if not values or None in values else values


def _fsdp_figures(ranks: list[ScenarioRank]) -> tuple[dict, dict]:
    unavailable: dict[str, str] = {}
    steps = slowest_rank_steps(ranks)
    values: dict[str, float | None] = {"step_ms": _median_or_none([ms for _, ms in steps])}
    rates = [
        sum(r.tokens.get(s, 0.0) for r in ranks) / (ms / 1e3)
        for s, ms in steps
        if ms > 0 and all(s in r.tokens for r in ranks)
    ]
    values["tokens_per_s"] = _median_or_none(rates)
    reasons = sorted({r.overlap_reason for r in ranks if r.overlap is None and r.overlap_reason is not None})
    for name in WINDOW_FIGURES:
        per_rank = _all_or_none([r.per_step(name) for r in ranks])
        values[f"{name}_per_step"] = sum(per_rank) / len(per_rank) if per_rank else None
    idle = _all_or_none([r.idle_ms_per_step() for r in ranks])
    values["idle_ms_per_step"] = sum(idle) / len(idle) if idle else None
    values["overlap_ratio_worst_rank"] = worst_rank_overlap_ratio(ranks)
    figures = {
        n: {"value": v, "unit": FSDP_FIGURES[n][0], "higher_is_better": FSDP_FIGURES[n][1]}
        for n, v in values.items()
    }
    kinds = sorted({k for r in ranks if r.overlap for k in (r.overlap.get("busbw_gbps") or {})})
    for kind in kinds:
        bw = _all_or_none(
            [(r.overlap.get("busbw_gbps") or {}).get(kind) if r.overlap else None for r in ranks]
        )
        figures[f"busbw_gbps.{kind}"] = {
            "value": sum(bw) / len(bw) if bw else None,
            "unit": "GB/s",
            "higher_is_better": True,
        }
    for n, f in figures.items():
        if f["value"] is None:
            unavailable[n] = (
                "; ".join(reasons)
                if reasons and n not in ("step_ms", "tokens_per_s")
                else "not recorded by every rank"
            )
    return figures, unavailable


def _fsdp_summary(entries: list[ScenarioRank]) -> dict[str, dict]:
    out = {}
    for scenario, ranks in fsdp_scenarios(entries).items():
        figures, unavailable = _fsdp_figures(ranks)
        out[scenario] = {
            "ranks": len(ranks),
            "timed_steps": len(slowest_rank_steps(ranks)),
            "profiled_steps": max(r.profiled_steps for r in ranks),
            "figures": figures,
            "unavailable": unavailable,
        }
    return out


def _bench_summary(bench: dict) -> dict:
    record = record_of(bench)
    params = dict(bench.get("params") or {})
    per_iter = record.device_ms_per_iteration
    metrics = {
        name: {"value": m.value, "unit": m.unit, "higher_is_better": m.higher_is_better}
        for name, m in record.metrics.items()
    }
    metrics["device_ms"] = {
        "value": stats.median(per_iter) if per_iter else None,
        "unit": "ms",
        "higher_is_better": False,
    }
    if record.get("effective_concurrency") is not None:
        metrics["effective_concurrency"] = {
            "value": record.get("effective_concurrency"),
            "unit": "x",
            "higher_is_better": True,
        }
    out = {
        "workload": record.workload or bench.get("group") or bench["name"].split("[")[0],
        "params": params,
        "streams": record.get("streams_requested", params.get("streams")),
        "headline_metric": record.headline_metric or None,
        "distinct_streams": record.get("distinct_streams"),
        "timing_method": record.timing_method or None,
        "rounds": len(per_iter),
        "figures": metrics,
        "unavailable": dict(record.unavailable),
    }
    ranks = per_rank_breakdown(record)
    if ranks:  # an FSDP scenario: the overlap breakdown per rank, and who arrived last
        out["rank_breakdown"] = {"ranks": ranks, "straggler": straggler_line(record)}
    return out


def run_summary(run: Run) -> dict:
    """One run's aggregate figures, per configuration."""
    configs: dict[str, dict] = {}
    for bench in run.benchmarks:
        configs[bench["name"]] = {"kind": "benchmark", **_bench_summary(bench)}
    for scenario, s in _fsdp_summary(run.fsdp).items():
        configs[f"fsdp:{scenario}"] = {"kind": "fsdp_scenario", "scenario": scenario, **s}
    return {
        "label": run.label,
        "path": str(run.path),
        "source": run.kind,
        "datetime": run.datetime,
        "commit": run.commit,
        "configurations": configs,
    }


def check_common_ground(summaries: list[dict]) -> None:
    """Each run must share at least one configuration with another; otherwise there is nothing to compare."""
    if len(summaries) < 2:
        return
    keys = {s["label"]: set(s["configurations"]) for s in summaries}
    for label, mine in keys.items():
        others = set().union(*(k for other, k in keys.items() if other != label))
        if not mine & others:
            raise ReportInputError(
                f"run {label!r} has nothing in common with the other runs: its configurations "
                f"({', '.join(sorted(mine)[:5])}{'...' if len(mine) > 5 else ''}) appear in no other run"
            )


def compare(reference: dict, candidate: dict) -> list[dict]:
    """Every figure present in both runs, as candidate / reference, biggest |log ratio| first.

    ``better`` is True when the change goes the figure's good way, False the bad way, None when equal.
    Figures that are zero or unavailable in either run have no ratio and are left out.
    """
    rows = []
    for config, ref_cfg in reference["configurations"].items():
        cand_cfg = candidate["configurations"].get(config)
        if cand_cfg is None:
            continue
        for metric, ref_fig in ref_cfg["figures"].items():
            cand_fig = cand_cfg["figures"].get(metric)
            if cand_fig is None:
                continue
            a, b = ref_fig["value"], cand_fig["value"]
            if a is None or b is None or a <= 0 or b <= 0:
                continue
            ratio = b / a
            up = ref_fig["higher_is_better"]
            rows.append(
                {
                    "configuration": config,
                    "metric": metric,
                    "unit": ref_fig["unit"],
                    "higher_is_better": up,
                    "reference": a,
                    "candidate": b,
                    "ratio": ratio,
                    "change_pct": (ratio - 1.0) * 100.0,
                    "better": None if ratio == 1.0 else (ratio > 1.0) == up,
                }
            )
    rows.sort(key=lambda r: (-abs(math.log(r["ratio"])), r["configuration"], r["metric"]))
    return rows


def scaling_series(summaries: list[dict]) -> dict[str, dict]:
    """Stream-scaling lines: per workload configuration (params other than streams), per run, sorted by streams.

    ``{key: {"workload", "params", "headline_metric", "unit", "runs": {label: [(streams, headline, concurrency)]},
    "concurrency_unavailable": [reasons recorded where concurrency is missing], "headline_unavailable": [the
    same for the headline]}}``
    """
    out: dict[str, dict] = {}
    for s in summaries:
        for cfg in s["configurations"].values():
            if cfg["kind"] != "benchmark" or cfg["streams"] is None:
                continue
            rest = {k: v for k, v in sorted(cfg["params"].items()) if k != "streams"}
            key = cfg["workload"] + "".join(f"-{k}={v}" for k, v in rest.items())
            headline = cfg["figures"].get(cfg["headline_metric"] or "", {})
            entry = out.setdefault(
                key,
                {
                    "workload": cfg["workload"],
                    "params": rest,
                    "headline_metric": cfg["headline_metric"],
                    "unit": headline.get("unit", ""),
                    "runs": {},
                    "concurrency_unavailable": [],
                    "headline_unavailable": [],
                },
            )
            why = cfg["unavailable"].get(cfg["headline_metric"] or "")
            if headline.get("value") is None and why and why not in entry["headline_unavailable"]:
                entry["headline_unavailable"].append(why)
            conc = cfg["figures"].get("effective_concurrency", {}).get("value")
            reason = cfg["unavailable"].get("effective_concurrency")
            if conc is None and reason and reason not in entry["concurrency_unavailable"]:
                entry["concurrency_unavailable"].append(reason)
            entry["runs"].setdefault(s["label"], []).append((cfg["streams"], headline.get("value"), conc))
    for entry in out.values():
        for points in entry["runs"].values():
            points.sort(key=lambda p: p[0])
    return out


def _setting(bench: dict, key: str):
    record = record_of(bench)
    return record.timing_method if key == "timing_method" else record.get(key)


def environment_rows(runs: list[Run]) -> list[dict]:
    """The stack of each run side by side: ``[{"name", "values": {label: str}, "differs": bool}]``."""

    def fmt(v) -> str:
        if v is None or v == {} or v == "":
            return "-"
        if isinstance(v, dict):
            return ", ".join(f"{k}={x}" for k, x in sorted(v.items()))
        return str(v)

    names = [
        ("backend", "backend"),
        ("GPU", "gpu_name"),
        ("GPU count", "gpu_count"),
        ("GPU arch", "gpu_arch"),
        ("driver", "driver"),
        ("torch", "torch"),
        ("CUDA", "cuda"),
        ("HIP", "hip"),
        ("NCCL", "nccl"),
        ("RCCL", "rccl"),
        ("math libraries", "math_libraries"),
        ("hardware queues", "hardware_queues"),
    ]
    rows: list[dict[str, Any]] = [
        {"name": title, "values": {r.label: fmt(r.machine.get(key)) for r in runs}} for title, key in names
    ]
    for title, key in (
        ("GPU power limit (W)", "power_limit_w"),
        ("GPU max SM clock (MHz)", "sm_clock_max_mhz"),
    ):
        rows.append(
            {"name": title, "values": {r.label: fmt((r.machine.get("gpu") or {}).get(key)) for r in runs}}
        )
    rows.append(
        {
            "name": "sweep cell",
            "values": {r.label: fmt((r.machine.get("sweep_cell") or {}).get("cell")) for r in runs},
        }
    )
    env_keys = sorted({k for r in runs for k in (r.machine.get("env") or {})})
    rows += [
        {"name": f"env {k}", "values": {r.label: fmt((r.machine.get("env") or {}).get(k)) for r in runs}}
        for k in env_keys
    ]
    for title, key in (
        ("timing method", "timing_method"),
        ("sync mode", "sync_mode"),
        ("size", "size"),
        ("issue order", "issue_order"),
    ):
        rows.append(
            {
                "name": title,
                "values": {
                    r.label: fmt(", ".join(sorted({str(_setting(b, key)) for b in r.benchmarks})) or None)
                    for r in runs
                },
            }
        )
    rows += [
        {"name": "python", "values": {r.label: fmt(r.host.get("python")) for r in runs}},
        {"name": "host", "values": {r.label: fmt(r.host.get("node")) for r in runs}},
        {"name": "commit", "values": {r.label: fmt(r.commit and r.commit[:12]) for r in runs}},
        {"name": "date", "values": {r.label: fmt(r.datetime) for r in runs}},
    ]
    if any(r.machine.get("error") for r in runs):
        rows.append(
            {"name": "machine info error", "values": {r.label: fmt(r.machine.get("error")) for r in runs}}
        )
    for row in rows:
        row["differs"] = len(set(row["values"].values())) > 1
    return rows


def build_summary(
    runs: list[Run],
    reference: str | None = None,
    candidate: str | None = None,
    verdicts: list[dict] | None = None,
) -> dict:
    """The content of summary.json: per-run aggregates, environments and, with two labels, the comparison."""
    labels = [r.label for r in runs]
    if (reference is None) != (candidate is None):
        raise ReportInputError("give --reference and --candidate together (or neither)")
    for opt, label in (("--reference", reference), ("--candidate", candidate)):
        if label is not None and label not in labels:
            raise ReportInputError(f"{opt} {label!r} is not one of the run labels: {', '.join(labels)}")
    if reference is not None and reference == candidate:
        raise ReportInputError(f"--reference and --candidate are both {reference!r}; name two different runs")
    summaries = [run_summary(r) for r in runs]
    check_common_ground(summaries)
    by_label = {s["label"]: s for s in summaries}
    out = {
        "aorta_report_schema": 1,
        "runs": summaries,
        "environment": environment_rows(runs),
        "reference": reference,
        "candidate": candidate,
        "comparison": None,
        "verdicts": verdicts,
    }
    if reference is not None:
        out["comparison"] = compare(by_label[reference], by_label[candidate])
    return out


def safe_name(text: str) -> str:
    """A file-name-safe form of a label or configuration key."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_") or "unnamed"
