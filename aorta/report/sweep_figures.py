"""Heatmaps of a sweep report: one figure per configuration and figure, one panel per stack (one colour
scale for all), and per candidate stack a panel of candidate / reference ratios (matplotlib, Agg).

A cell that did not finish, or did not record the figure, is left grey and says why; no value is invented.
"""

from __future__ import annotations

import math
from pathlib import Path

from aorta.report.figures import DPI, Figure  # Agg is selected there
from aorta.report.html_page import fmt_value

MISSING_COLOUR = "#DDDDDD"


def _panel(fig: Figure, ax, grid: dict, title: str, *, cmap: str, norm, fmt):
    import numpy as np
    from matplotlib import colormaps

    values = np.array(
        [[math.nan if v is None else float(v) for v in row] for row in grid["values"]], dtype=float
    )
    cm = colormaps[cmap].with_extremes(bad=MISSING_COLOUR)
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cm, norm=norm, aspect="auto")
    ax.set_xticks(range(len(grid["cols"])), grid["col_ticks"], fontsize=8)
    ax.set_yticks(range(len(grid["rows"])), grid["row_ticks"], fontsize=8)
    ax.set_xlabel(grid["col_axis"], fontsize=8)
    ax.set_ylabel(grid["row_axis"], fontsize=8)
    for i, row in enumerate(grid["values"]):
        for j, v in enumerate(row):
            r, g, b, _ = cm(norm(v)) if v is not None else (1.0, 1.0, 1.0, 1.0)
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5  # perceived luminance of the cell's colour
            text = fmt(v) if v is not None else grid["status"][i][j]
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_title(title, fontsize=9)
    return fig.colorbar(image, ax=ax, shrink=0.8)


def _finite(grids: list[dict]) -> list[float]:
    return [float(v) for g in grids for row in g["values"] for v in row if v is not None and math.isfinite(v)]


def ratio_grid(ref: dict, cand: dict) -> dict:
    """candidate / reference per cell (None where either is missing or not positive)."""
    values = [
        [b / a if a is not None and b is not None and a > 0 and b > 0 else None for a, b in zip(ra, rb)]
        for ra, rb in zip(ref["values"], cand["values"])
    ]
    status = [["n/a" if v is None else "" for v in row] for row in values]
    return {**ref, "values": values, "status": status}


def draw_heatmap(entry: dict, path: Path) -> Path:
    """``entry``: one item of the sweep summary's ``heatmaps`` (configuration, metric, unit, stacks)."""
    labels = list(entry["stacks"])
    grids = [entry["stacks"][lab] for lab in labels]
    ratios = [(lab, ratio_grid(grids[0], entry["stacks"][lab])) for lab in labels[1:]]
    n_rows, n_cols = len(grids[0]["rows"]), len(grids[0]["cols"])
    panels = len(grids) + len(ratios)
    width = max(3.6, 1.1 * n_cols + 2.0)
    fig = Figure(figsize=(width * panels, 1.2 + 0.55 * n_rows + 0.6), layout="constrained")
    axes = fig.subplots(1, panels, squeeze=False)[0]
    values = _finite(grids)
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if lo == hi:
        lo, hi = lo - 0.5 * abs(lo or 1), hi + 0.5 * abs(hi or 1)
    # viridis: bright = high; reversed where lower is better, so bright is always the good end
    cmap = "viridis" if entry["higher_is_better"] else "viridis_r"
    from matplotlib.colors import LogNorm, Normalize

    for ax, lab, grid in zip(axes, labels, grids):
        title = f"{lab}: {entry['metric']} ({entry['unit']})"
        _panel(fig, ax, grid, title, cmap=cmap, norm=Normalize(lo, hi), fmt=fmt_value)
    for ax, (lab, grid) in zip(axes[len(grids) :], ratios):
        rv = _finite([grid])
        spread = max([abs(math.log(v)) for v in rv if v > 0] or [0.05])
        good = "RdYlGn" if entry["higher_is_better"] else "RdYlGn_r"  # green: the candidate is better
        norm = LogNorm(math.exp(-spread), math.exp(spread))  # 1.0 in the middle, x2 as far as x0.5
        bar = _panel(fig, ax, grid, f"{lab} / {labels[0]}", cmap=good, norm=norm, fmt=lambda v: f"{v:.3f}")
        ticks = [norm.vmin, 1.0, norm.vmax]
        bar.ax.minorticks_off()
        bar.set_ticks(ticks, labels=[f"{t:.3g}" for t in ticks])
    fig.suptitle(f"{entry['configuration']}: {entry['metric']}", fontsize=10)
    fig.savefig(path, dpi=DPI, format="png")
    return path
