"""``aorta history page OUT.html``: one self-contained page (inline SVG plots, no script, no outside file):
per figure a trend plot of its run series with each stack change drawn and each change point marked, and a
table of what changed at each change point (driver, CUDA/ROCm, torch, NCCL/RCCL, settings, hardware)."""

from __future__ import annotations

import html
import io
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: pages are drawn on headless CI machines and GPU nodes

from matplotlib.figure import Figure  # noqa: E402

from aorta.history.trends import Series  # noqa: E402
from aorta.record.atomic import write_text_atomic  # noqa: E402

STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
td, th { border: 1px solid #ccc; padding: 2px 8px; font-size: 90%; text-align: left; }
.plot svg { max-width: 100%; height: auto; }
.none { color: #777; }
"""
STACK_COLOUR, CHANGE_COLOUR = "#999999", "#d62728"


def trend_svg(s: Series) -> str:
    """The series as an inline SVG: runs in order, stack changes as grey lines, change points in red."""
    fig = Figure(figsize=(9, 2.6))
    ax = fig.add_subplot()
    x = list(range(len(s.values)))
    ax.plot(x, s.values, marker="o", markersize=2.5, linewidth=0.8, color="#1f77b4", label=s.figure)
    for c in s.stack_changes:
        ax.axvline(c.index - 0.5, color=STACK_COLOUR, linestyle=":", linewidth=1)
    for k, cp in enumerate(s.change_points):
        ax.axvline(
            cp.index - 0.5, color=CHANGE_COLOUR, linewidth=1.5, label="change point" if k == 0 else None
        )
        ax.annotate(f"{cp.change * 100:+.1f}%", (cp.index, max(s.values)), color=CHANGE_COLOUR, fontsize=8)
    ax.set_xlabel("run (oldest first); dotted: stack change")
    ax.set_ylabel(f"{s.figure} ({s.unit})" if s.unit else s.figure)
    ax.legend(loc="lower left", fontsize=7)
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML prologue: the SVG sits inside the page


def change_rows(s: Series) -> list[str]:
    rows = []
    for cp in s.change_points:
        named = s.named(cp)
        run = s.runs[cp.index]
        fields = (
            "<br>".join(html.escape(f"{n}: {a} -> {b}") for n, a, b in named.fields)
            if named
            else '<span class="none">no stack field changed here</span>'
        )
        rows.append(
            f"<tr><td>{cp.index}</td><td>{html.escape(run.recorded_at)}</td><td>{cp.change * 100:+.1f}%</td>"
            f"<td>{cp.z:.1f}</td><td>{fields}</td></tr>"
        )
    return rows


def page_html(series: Sequence[Series], source: str) -> str:
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>aorta run history</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>aorta run history</h1><p>{html.escape(source)}: {len(series)} series, "
        f"{sum(len(s.change_points) for s in series)} change points.</p>",
    ]
    if not series:
        parts.append("<p class='none'>no runs match</p>")
    for i, s in enumerate(series):
        noise = f"{s.noise * 100:.2g}%" if s.noise else "unknown"
        parts.append(
            f"<section id='s{i}'><h2>{html.escape(s.benchmark)}: {html.escape(s.figure)}</h2>"
            f"<p>{html.escape(s.machine_model)}, {len(s.values)} runs, between-run noise {noise}</p>"
            f"<div class='plot'>{trend_svg(s)}</div>"
        )
        rows = change_rows(s)
        if rows:
            parts.append(
                "<table class='changes'><tr><th>run</th><th>recorded</th><th>change</th><th>z</th>"
                "<th>what changed</th></tr>" + "".join(rows) + "</table>"
            )
        else:
            parts.append("<p class='none'>no change point</p>")
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_page(path: Path, series: Sequence[Series], source: str) -> Path:
    return write_text_atomic(path, page_html(series, source))
