"""How much machines of one kind differ, measured: the table behind the one-machine rule (pure: no torch).

A baseline saved on one machine cannot show how much another machine of its kind differs from it, so the
gate reads that from a table measured once on lent machines (``data/machine_spread.json``, written by
``scripts/machine_spread.py`` from the fresh-process pools in ``docs/data/gate_pools``): per GPU model,
benchmark and figure, the between-machine component ``sigma_machine`` of the log run figures
(``aorta.gate.stats.machine_noise.machine_spread``: the machine means' spread less their run noise), with the
machines and runs behind it, and per model a summary across its figures (median, 90th percentile, max).

``spread_for`` answers for one figure: the figure's own measurement where the table holds it, never below
the median of the model's figures (a few machines cannot tell a machine component smaller than the run
noise from none: 124 of 343 H100 figures read 0, and hetero_kernels' tiny_us_per_kernel_alone at 16 streams
read 0.1% on five H100s, yet moved +1.4% between two other H100s of issue 36, one host enqueuing 30%
slower); else the
90th percentile of the model's figures (the figure was not measured: said so); else, for a GPU model never
measured, the largest 90th percentile of any model (said so: machines of an unmeasured kind are assumed
to differ at least as much as the most varied kind measured).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from aorta.gate.stats.machine_noise import machine_spread
from aorta.stats.noise import run_value

TABLE_FILE = "machine_spread.json"
SCHEMA = 1
PERCENTILE = 90  # the per-model figure used where the table does not hold a figure
LEVELS = (0.01, 0.02, 0.05)  # the summary counts the figures whose machine spread exceeds each


@dataclass(frozen=True)
class PoolRun:
    """One fresh-process run of an A/A pool: its GPU model, machine (GPU UUID), pool and its figures'
    samples (``{fullname: {figure: samples}}``, as ``aorta.gate.stats.samples.baseline_runs`` gives them)."""

    gpu_model: str
    machine: str
    pool: str
    figures: Mapping[str, Mapping[str, Sequence[float]]]


def measure(runs: Sequence[PoolRun]) -> dict:
    """The table's ``models`` part: per GPU model its machines, every (benchmark, figure) measured on two or
    more machines with a machine holding two runs (``sigma_machine``, ``sigma_run`` as log SDs; machines,
    runs), and a summary over those figures."""
    by_key: dict[tuple[str, str, str], list[tuple[float, str]]] = {}
    machines: dict[str, set[str]] = {}
    for run in runs:
        machines.setdefault(run.gpu_model, set()).add(run.machine)
        for bench, figs in run.figures.items():
            for fig, samples in figs.items():
                value = run_value(samples) if samples else 0.0
                if value > 0 and math.isfinite(value):
                    by_key.setdefault((run.gpu_model, bench, fig), []).append((math.log(value), run.machine))
    models: dict[str, dict] = {
        m: {"machines": sorted(ids), "figures": {}, "summary": {}} for m, ids in sorted(machines.items())
    }
    for (model, bench, fig), pairs in sorted(by_key.items()):
        est = machine_spread([x for x, _ in pairs], [m for _, m in pairs])
        if est is None:
            continue
        models[model]["figures"].setdefault(bench, {})[fig] = {
            "sigma_machine": round(est.sigma_machine, 6),
            "sigma_run": round(est.sigma_run, 6),
            "machines": est.machines,
            "runs": est.runs,
        }
    for entry in models.values():
        entry["summary"] = summarize(entry["figures"])
    return models


def summarize(figures: Mapping[str, Mapping[str, Mapping]]) -> dict:
    """Median, 90th percentile and max of ``sigma_machine`` over a model's figures, where the max is, and
    how many figures exceed 1%, 2% and 5% (log SDs, read as relative changes)."""
    rows = [
        (e["sigma_machine"], f"{b} [{f}]", e["machines"]) for b, fs in figures.items() for f, e in fs.items()
    ]
    if not rows:
        return {"figures": 0}
    sig = np.array([s for s, _, _ in rows])
    top = max(rows, key=lambda r: r[0])
    return {
        "figures": len(rows),
        "median": round(float(np.median(sig)), 6),
        f"p{PERCENTILE}": round(float(np.percentile(sig, PERCENTILE)), 6),
        "max": top[0],
        "max_at": top[1],
        "machines": max(m for _, _, m in rows),
        "above": {f"{level:g}": int((sig > level).sum()) for level in LEVELS},
    }


@dataclass(frozen=True)
class Spread:
    """The machine spread a verdict uses for one figure: ``sigma`` (log SD between machines), the machines
    it was measured on (its degrees of freedom are ``machines - 1``), and where it comes from, in words."""

    sigma: float
    machines: int
    source: str
    measured: bool  # the figure's own measurement (not a per-model stand-in)


def spread_for(table: Mapping, gpu_model: str, benchmark: str, figure: str) -> Spread:
    """The machine spread of ``figure`` of ``benchmark`` on ``gpu_model`` machines (see the module doc)."""
    models = table.get("models") or {}
    entry = models.get(gpu_model) or {}
    own = ((entry.get("figures") or {}).get(benchmark) or {}).get(figure)
    key = f"p{PERCENTILE}"
    summary = entry.get("summary") or {}
    if own:
        where = f"measured on {own['machines']} {gpu_model} machines, {own['runs']} runs"
        floor = summary.get("median", 0.0)
        if own["sigma_machine"] >= floor:
            return Spread(own["sigma_machine"], own["machines"], where, True)
        return Spread(
            floor,
            own["machines"],
            f"this figure's {own['sigma_machine'] * 100:.2g}% {where}, raised to the median of the model's "
            f"{summary['figures']} figures",
            True,
        )
    if summary.get("figures"):
        return Spread(
            summary[key],
            summary["machines"],
            f"this figure's not measured: the {PERCENTILE}th percentile of the {summary['figures']} figures "
            f"measured on {summary['machines']} {gpu_model} machines",
            False,
        )
    measured = [
        (s[key], s["machines"], m) for m, e in models.items() if (s := e.get("summary") or {}).get("figures")
    ]
    if not measured:
        return Spread(math.inf, 1, "no machine spread measured on any GPU model", False)
    sigma, n, model = max(measured)
    return Spread(
        sigma,
        n,
        f"no machine spread measured on {gpu_model or 'this GPU model'}: the largest {PERCENTILE}th "
        f"percentile measured on any model ({model}, {n} machines)",
        False,
    )


@cache
def load_table() -> dict:
    """The measured table shipped with the package (``aorta/gate/data/machine_spread.json``), read once
    (shared: not to be changed)."""
    text = resources.files("aorta.gate").joinpath("data", TABLE_FILE).read_text()
    return json.loads(text)
