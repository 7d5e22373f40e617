"""Render the sweep report's page: one self-contained HTML file (inline CSS, heatmaps as data URIs).

Order: the sweeps, what differs between the stacks, the comparison (best cell per stack, where the stacks
disagree most, every cell's verdicts and ratios), then the heatmaps, then every cell's status.
"""

from __future__ import annotations

from pathlib import Path

from aorta.report.html_page import CSS, _e, _img, _table, _td, fmt_value


def _sweeps_section(summary: dict) -> str:
    rows = []
    for s in summary["sweeps"]:
        counts: dict[str, int] = {}
        for c in s["cells"]:
            counts[c["status"]] = counts.get(c["status"], 0) + 1
        grid = "; ".join(f"{a['name']}={','.join(a['values'])}" for a in s["grid"])
        rows.append(
            [
                _td(s["label"]),
                _td(s["folder"]),
                _td(grid),
                _td(", ".join(f"{v} {k}" for k, v in sorted(counts.items()))),
                _td(" ".join(s["command"])),
                _td(", ".join(f"{k}={v}" for k, v in sorted(s["base_env"].items())) or "-"),
            ]
        )
    lead = (
        f"<p>Reference stack <b>{_e(summary['sweeps'][0]['label'])}</b>; ratios are each other stack / the reference.</p>"
        if len(summary["sweeps"]) > 1
        else ""
    )
    return (
        "<h2>Sweeps</h2>"
        + lead
        + _table(["stack", "folder", "grid", "cells", "command", "scheduling env outside the grid"], rows)
    )


def _differences_section(summary: dict) -> str:
    d = summary["differences"]
    labels = [s["label"] for s in summary["sweeps"]]
    parts = [
        '<h2>What differs between the stacks</h2><p class="note">From each stack\'s first finished cell: '
        "versions (driver, CUDA/HIP, torch, NCCL/RCCL, math libraries), scheduling settings outside the grid, "
        "GPU clocks and power limit. Grid variables are left out: they differ from cell to cell by design.</p>"
    ]
    if d["between"]:
        rows = [
            [_td(r["group"]), _td(r["name"])] + [_td(r["values"].get(lab, "-")) for lab in labels]
            for r in d["between"]
        ]
        parts.append(_table(["group", "name", *labels], rows, ["differs"] * len(rows)))
    elif len(labels) > 1:
        parts.append('<p class="note">Nothing recorded differs between the stacks.</p>')
    versions = d.get("versions") or {}
    names = sorted({n for v in versions.values() for n in v})
    if names:
        rows = [[_td(n)] + [_td(versions.get(lab, {}).get(n, "-")) for lab in labels] for n in names]
        differs = [
            "differs" if len({versions.get(lab, {}).get(n, "-") for lab in labels}) > 1 else "" for n in names
        ]
        parts.append(
            "<details><summary>every version recorded</summary>"
            + _table(["", *labels], rows, differs)
            + "</details>"
        )
    if d["within"]:
        rows = [
            [
                _td(r["stack"]),
                _td(r["group"]),
                _td(r["name"]),
                _td("; ".join(f"{k}: {v}" for k, v in r["values"].items())),
            ]
            for r in d["within"]
        ]
        parts.append(
            "<h3>Changed from cell to cell within a stack</h3>"
            + _table(["stack", "group", "name", "per cell"], rows)
        )
    if d["without_cells"]:
        parts.append(f'<p class="note">No finished cell in {_e(", ".join(d["without_cells"]))}.</p>')
    return "\n".join(parts)


def _ratio_td(row: dict):
    if row["ratio"] is None:
        return _td("n/a")
    cls = "" if row["better"] is None else ("better" if row["better"] else "worse")
    return _td(f"{row['ratio']:.3f}", cls=cls)


def _comparison_section(summary: dict) -> str:
    parts = ["<h2>Best cell per stack</h2>"]
    best_rows = [
        [
            _td(label),
            _td(b["configuration"]),
            _td(b["metric"]),
            _td(
                f"none: no evidence {', '.join(b['no_knob_evidence'])} took effect"
                if b.get("no_knob_evidence")
                else b["cell"]
            ),
            _td(b["value"], num=True),
            _td(b["unit"]),
            _td(b["cells_compared"], num=True),
        ]
        for label, items in summary["best"].items()
        for b in items
    ]
    parts.append(
        _table(["stack", "configuration", "figure", "best cell", "value", "unit", "cells"], best_rows)
        if best_rows
        else '<p class="note">No finished cell recorded a figure.</p>'
    )
    for comp in summary["comparisons"]:
        ref, cand = comp["reference"], comp["candidate"]
        parts.append(f"<h2>{_e(cand)} against {_e(ref)}: where the stacks disagree most</h2>")
        head = ["cell", "configuration", "figure", ref, cand, "unit", f"{cand} / {ref}", "verdict"]

        def row(r):
            return [
                _td(r["cell"]),
                _td(r["configuration"]),
                _td(r["metric"]),
                _td(r["reference"], num=True),
                _td(r["candidate"], num=True),
                _td(r["unit"]),
                _ratio_td(r),
                _td(r["verdict"], cls=str(r["verdict"]).upper()),
            ]

        parts.append(
            '<p class="note">Each cell\'s headline figure, largest change first. Verdicts are the '
            "regression gate's, on the cells' per-round samples (the report decides nothing).</p>"
        )
        parts.append(
            _table(head, [row(r) for r in comp["disagree_most"]])
            if comp["disagree_most"]
            else '<p class="note">No cell finished in both stacks.</p>'
        )
        parts.append(
            f"<details><summary>every cell and figure ({len(comp['rows'])})</summary>"
            + _table(head, [row(r) for r in comp["rows"]])
            + "</details>"
        )
        parts.append(
            "<h3>Verdicts per cell</h3><ul>" + "".join(f"<li>{_e(n)}</li>" for n in comp["notes"]) + "</ul>"
        )
    return "\n".join(parts)


def _heatmaps_section(summary: dict, figures: dict[str, Path]) -> str:
    if not summary["heatmaps"]:
        return '<h2>Heatmaps</h2><p class="note">No finished cell recorded a figure.</p>'
    parts = [
        '<h2>Heatmaps</h2><p class="note">One panel per stack on one colour scale (bright = the better end); '
        "ratio panels: green where the stack is better than the reference. Grey: the cell did not finish or "
        "did not record the figure.</p>"
    ]
    for i, entry in enumerate(summary["heatmaps"]):
        key = f"heatmap:{i}"
        if key in figures:
            parts.append(
                '<div class="figs">'
                + _img(figures[key], f"{entry['configuration']}: {entry['metric']}")
                + "</div>"
            )
    return "\n".join(parts)


def _cells_section(summary: dict) -> str:
    rows = [
        [
            _td(s["label"]),
            _td(c["id"]),
            _td(c["status"], cls="" if c["status"] == "ok" else "SLOWER"),
            _td(fmt_value(c["duration_s"])),
            _td(c["note"] or ""),
        ]
        for s in summary["sweeps"]
        for c in s["cells"]
    ]
    return "<h2>Cells</h2>" + _table(["stack", "cell", "status", "seconds", "note"], rows)


def render(summary: dict, figures: dict[str, Path]) -> str:
    labels = ", ".join(s["label"] for s in summary["sweeps"])
    body = "\n".join(
        [
            f"<h1>aorta sweep report: {_e(labels)}</h1>",
            _sweeps_section(summary),
            _differences_section(summary),
            _comparison_section(summary),
            _heatmaps_section(summary, figures),
            _cells_section(summary),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>aorta sweep report: {_e(labels)}</title><style>{CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
