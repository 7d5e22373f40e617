"""Figures of recorded sweeps, cell by cell, and the comparison of two or more sweeps (stacks).

Pure: no torch, no plots. Each cell's figures come from the report's own run summary (``summary.run_summary``)
and the verdicts between stacks from the regression gate (``verdicts.gate_verdicts``); the report never
decides significance. The first sweep is the reference; ratios are candidate / reference.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

from aorta.environment.fingerprint import differences, fingerprint
from aorta.report import summary as summ
from aorta.report.knob_doubt import knobs_without_any_evidence
from aorta.report.sweeps import Sweep
from aorta.report.verdicts import by_benchmark_metric, gate_verdicts

# Shown as heatmaps when a cell recorded them, after the configuration's headline; busbw per collective too.
PREFERRED = (
    "step_ms",
    "overlap_ratio_worst_rank",
    "exposed_transfer_ms_worst_rank",
    "exposed_wait_ms_worst_rank",
    "overlap_ratio",
    "exposed_comm_ms",
    "effective_concurrency",
)
MAX_METRICS = 8
VERDICT_RANK = {"SLOWER": 0, "UNSURE": 1, "NOT_GATEABLE": 2, "FASTER": 3, "SAME": 4}


def cell_configurations(sweep: Sweep) -> dict[str, dict]:
    """cell id -> configuration name -> configuration summary (figures, headline), finished cells only."""
    return {c.id: summ.run_summary(c.run)["configurations"] for c in sweep.ok_cells() if c.run is not None}


def heatmap_metrics(configs: list[dict]) -> list[str]:
    """The figures of one configuration worth a heatmap: headline first, then PREFERRED, then busbw."""
    present = list(dict.fromkeys(m for cfg in configs for m in cfg["figures"]))
    heads = [cfg["headline_metric"] for cfg in configs if cfg.get("headline_metric") in present]
    picked = heads[:1] + [m for m in PREFERRED if m in present]
    picked += [m for m in present if "busbw" in m]
    return list(dict.fromkeys(picked))[:MAX_METRICS]


def layout(axes: list[dict]) -> tuple[list[dict], list[dict]]:
    """(row axes, column axes): one axis runs along the columns; more: the first down the rows, the rest across."""
    return ([], list(axes)) if len(axes) == 1 else (list(axes[:1]), list(axes[1:]))


def _labels(axes: list[dict]) -> list[tuple[tuple[str, str], ...]]:
    return [
        tuple(zip((a["name"] for a in axes), vals))
        for vals in itertools.product(*(a["values"] for a in axes))
    ]


def grid_values(sweep: Sweep, configs: dict[str, dict], configuration: str, metric: str) -> dict:
    """One heatmap's numbers: ``{"rows", "cols", "values", "status"}`` (value None where the cell did not
    finish or did not record the figure; status says which)."""
    row_axes, col_axes = layout(sweep.axes)
    rows, cols = _labels(row_axes) or [()], _labels(col_axes)
    by_settings = {tuple(sorted(c.settings.items())): c for c in sweep.cells}
    values, status = [], []
    for r in rows:
        vrow, srow = [], []
        for col in cols:
            cell = by_settings.get(tuple(sorted((*r, *col))))
            fig = (
                configs.get(cell.id, {}).get(configuration, {}).get("figures", {}).get(metric)
                if cell
                else None
            ) or {}
            vrow.append(fig.get("value"))
            srow.append(
                "missing" if cell is None else cell.status if cell.status != "ok" or fig else "not recorded"
            )
        values.append(vrow)
        status.append(srow)
    return {
        "rows": [" ".join(f"{k}={v}" for k, v in r) for r in rows],
        "cols": [" ".join(f"{k}={v}" for k, v in c) for c in cols],
        "row_axis": " / ".join(a["name"] for a in row_axes),
        "col_axis": " / ".join(a["name"] for a in col_axes),
        "row_ticks": ["\n".join(v for _, v in r) for r in rows],
        "col_ticks": ["\n".join(v for _, v in c) for c in cols],
        "values": values,
        "status": status,
    }


def _figure(configs: dict[str, dict], cell_id: str, configuration: str, metric: str) -> dict | None:
    return configs.get(cell_id, {}).get(configuration, {}).get("figures", {}).get(metric)


def best_cells(sweep: Sweep, configs: dict[str, dict]) -> list[dict]:
    """Per configuration, the cell with the best headline figure (in the figure's direction)."""
    out = []
    names = sorted({name for cfgs in configs.values() for name in cfgs})
    for name in names:
        metric = heatmap_metrics([cfgs[name] for cfgs in configs.values() if name in cfgs])[:1]
        if not metric:
            continue
        found = [
            (f["value"], f["higher_is_better"], f["unit"], cell_id)
            for cell_id in configs
            if (f := _figure(configs, cell_id, name, metric[0])) and f.get("value") is not None
        ]
        if not found:
            continue
        up = found[0][1]
        value, _, unit, cell_id = (max if up else min)(found, key=lambda t: t[0])
        out.append(
            {
                "configuration": name,
                "metric": metric[0],
                "unit": unit,
                "cell": cell_id,
                "value": value,
                "higher_is_better": up,
                "cells_compared": len(found),
            }
        )
    return out


def compare_cells(ref: Sweep, cand: Sweep, ref_cfgs: dict[str, dict], cand_cfgs: dict[str, dict]) -> dict:
    """Cell by cell, candidate against reference: the gate's verdicts and each heatmap figure's ratio."""
    rows, notes = [], []
    for ref_cell in ref.cells:
        cand_cell = cand.cell(ref_cell.id)
        if cand_cell is None or ref_cell.run is None or cand_cell.run is None:
            why = (
                "not in " + cand.label
                if cand_cell is None
                else "did not finish in " + (ref.label if ref_cell.run is None else cand.label)
            )
            notes.append(f"{ref_cell.id}: {why}")
            continue
        assert ref_cell.json_path is not None and cand_cell.json_path is not None  # set with run
        verdicts, note = gate_verdicts(ref_cell.json_path, cand_cell.json_path, ref.label, cand.label)
        verdict_of = by_benchmark_metric(verdicts)
        for name in sorted(set(ref_cfgs.get(ref_cell.id, {})) & set(cand_cfgs.get(ref_cell.id, {}))):
            for metric in heatmap_metrics([ref_cfgs[ref_cell.id][name], cand_cfgs[ref_cell.id][name]]):
                a = _figure(ref_cfgs, ref_cell.id, name, metric) or {}
                b = _figure(cand_cfgs, ref_cell.id, name, metric) or {}
                va, vb = a.get("value"), b.get("value")
                ratio = vb / va if va and vb is not None and va > 0 and vb > 0 else None
                rows.append(
                    {
                        "cell": ref_cell.id,
                        "configuration": name,
                        "metric": metric,
                        "unit": a.get("unit", ""),
                        "higher_is_better": a.get("higher_is_better"),
                        "reference": va,
                        "candidate": vb,
                        "ratio": ratio,
                        "better": None
                        if ratio is None or ratio == 1.0
                        else (ratio > 1.0) == bool(a.get("higher_is_better")),
                        "verdict": verdict_of.get((name, metric), "-" if verdicts is not None else "n/a"),
                    }
                )
        if verdicts is None:
            notes.append(f"{ref_cell.id}: {note}")
        else:
            counts = Counter(v["verdict"] for v in verdicts)
            notes.append(f"{ref_cell.id}: " + ", ".join(f"{counts.get(o, 0)} {o}" for o in VERDICT_RANK))
    return {"reference": ref.label, "candidate": cand.label, "rows": rows, "notes": notes}


def disagreements(comparison: dict, top: int = 10) -> list[dict]:
    """The cells where the stacks differ most: each (cell, configuration)'s headline ratio, largest |log| first."""
    first: dict[tuple[str, str], dict] = {}
    for row in comparison["rows"]:
        first.setdefault((row["cell"], row["configuration"]), row)  # the headline comes first
    ranked = [r for r in first.values() if r["ratio"] is not None]
    ranked.sort(key=lambda r: (-abs(math.log(r["ratio"])), r["cell"]))
    return ranked[:top]


def stack_differences(sweeps: list[Sweep]) -> dict:
    """What differs between the stacks (grid variables aside), from one finished cell of each, and within a
    stack from cell to cell (a stack whose torch changed mid-sweep is not one stack)."""
    swept = {a["name"] for s in sweeps for a in s.axes}

    def fp(machine: dict) -> dict:
        f = fingerprint(machine)
        f["settings"] = {k: v for k, v in f["settings"].items() if k not in swept}
        f.pop("sweep", None)
        return f

    firsts = {s.label: s.ok_cells()[0].run for s in sweeps if s.ok_cells()}
    between = differences({label: fp(run.machine) for label, run in firsts.items() if run is not None})
    within = []
    for s in sweeps:
        cells = {c.id: fp(c.run.machine) for c in s.ok_cells() if c.run is not None}
        within += [{"stack": s.label, **row} for row in differences(cells)]
    return {
        "between": between,
        "within": within,
        "without_cells": [s.label for s in sweeps if not s.ok_cells()],
        "versions": {label: fp(run.machine)["versions"] for label, run in firsts.items() if run is not None},
    }


def build_sweep_summary(sweeps: list[Sweep]) -> dict:
    """The content of the sweep report's summary.json."""
    configs = {s.label: cell_configurations(s) for s in sweeps}
    names = sorted({n for s in sweeps for cfgs in configs[s.label].values() for n in cfgs})
    heatmaps = []
    for name in names:
        present = [cfgs[name] for s in sweeps for cfgs in configs[s.label].values() if name in cfgs]
        for metric in heatmap_metrics(present):
            fig = next(c["figures"][metric] for c in present if metric in c["figures"])
            heatmaps.append(
                {
                    "configuration": name,
                    "metric": metric,
                    "unit": fig["unit"],
                    "higher_is_better": fig["higher_is_better"],
                    "stacks": {s.label: grid_values(s, configs[s.label], name, metric) for s in sweeps},
                }
            )
    comparisons = [
        compare_cells(sweeps[0], s, configs[sweeps[0].label], configs[s.label]) for s in sweeps[1:]
    ]
    for comp in comparisons:
        comp["disagree_most"] = disagreements(comp)
    return {
        "aorta_sweep_report_schema": 1,
        "sweeps": [
            {
                "label": s.label,
                "folder": str(s.folder),
                "grid": s.axes,
                "command": s.command,
                "base_env": s.base_env,
                "cells": [
                    {
                        "id": c.id,
                        "settings": c.settings,
                        "status": c.status,
                        "note": c.note,
                        "duration_s": c.duration_s,
                    }
                    for c in s.cells
                ],
            }
            for s in sweeps
        ],
        "differences": stack_differences(sweeps),
        "heatmaps": heatmaps,
        "best": {
            s.label: [
                {**b, "no_knob_evidence": knobs_without_any_evidence(s.folder)}
                for b in best_cells(s, configs[s.label])
            ]
            for s in sweeps
        },
        "comparisons": comparisons,
    }
