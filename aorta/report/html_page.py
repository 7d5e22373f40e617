"""Render report.html: one self-contained page (inline CSS, images as base64 data URIs, no external links).

Order: runs, verdicts, biggest changes, environments, then each configuration side by side.
Every value from a run is escaped; nothing is fetched when the page opens, so it works offline.
"""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path

from aorta.gate.causes.why_text import why_lines
from aorta.record.rank_breakdown import BREAKDOWN, LABELS
from aorta.report.verdicts import by_benchmark_metric

CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 8px} h2{font-size:18px;border-bottom:2px solid #ddd;padding-bottom:4px;margin-top:32px}
h3{font-size:15px;margin:20px 0 6px} table{border-collapse:collapse;margin:8px 0;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top} th{background:#f0f2f5}
td.num{text-align:right;font-variant-numeric:tabular-nums} tr.differs td{background:#fff6d6}
.better{color:#17692c;font-weight:600} .worse{color:#b3261e;font-weight:600} .note{color:#666}
.SLOWER{background:#fbe0de} .FASTER{background:#dff3e3} .UNSURE{background:#f3f0dc} .NOT_GATEABLE{background:#ececec}
.figs{display:flex;flex-wrap:wrap;gap:12px} .figs figure{margin:0} img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:12px;color:#555}
"""


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def fmt_value(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        if math.isnan(v):
            return "n/a"
        return f"{v:.4g}"
    return str(v)


def data_uri(png: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")


def _img(png: Path, caption: str) -> str:
    return (
        f'<figure><img alt="{_e(caption)}" src="{data_uri(png)}">'
        f"<figcaption>{_e(caption)}</figcaption></figure>"
    )


def _table(head: list[str], rows: list[list[str]], row_classes: list[str] | None = None) -> str:
    out = ["<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"]
    for i, cells in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    return "\n".join(out) + "</table>"


def _td(v, num: bool = False, cls: str = "") -> str:
    classes = " ".join(c for c in ("num" if num else "", cls) if c)
    attr = f' class="{classes}"' if classes else ""
    return f"<td{attr}>{_e(fmt_value(v) if num else v)}</td>"


def _runs_section(summary: dict) -> str:
    rows = [
        [
            _td(s["label"]),
            _td(s["source"]),
            _td(s["path"]),
            _td(len(s["configurations"]), num=True),
            _td(s["datetime"] or "-"),
        ]
        for s in summary["runs"]
    ]
    ref, cand = summary["reference"], summary["candidate"]
    lead = (
        f"<p>Reference <b>{_e(ref)}</b> → candidate <b>{_e(cand)}</b>; ratios are candidate / reference.</p>"
        if ref
        else '<p class="note">No --reference/--candidate given: runs are shown side by side, not compared.</p>'
    )
    return "<h2>Runs</h2>" + lead + _table(["label", "source", "path", "configurations", "date"], rows)


def _verdicts_section(summary: dict, note: str) -> str:
    verdicts = summary.get("verdicts")
    lead = f'<p class="note">{_e(note)}</p>' if note else ""
    if not verdicts:
        return f"<h2>Verdicts</h2>{lead or '<p class=note>no verdicts given</p>'}"
    rank = {"SLOWER": 0, "UNSURE": 1, "NOT_GATEABLE": 2, "FASTER": 3, "SAME": 4}
    ordered = sorted(
        verdicts, key=lambda v: (rank.get(str(v["verdict"]).upper(), 1), -abs(v["change_ratio"] or 0.0))
    )
    shown = [v for v in ordered if str(v["verdict"]).upper() != "SAME"]

    def row(v):
        change = v.get("change_ratio")
        return [
            _td(v["benchmark"]),
            _td(v["metric"]),
            _td(v["verdict"], cls=str(v["verdict"]).upper()),
            _td(f"{change * 100:+.1f}%" if isinstance(change, (int, float)) else "n/a"),
            _td(v.get("p_value"), num=True),
            _td(v.get("reason") or ""),
        ]

    head = ["benchmark", "metric", "verdict", "change", "p", "reason"]
    out = "<h2>Verdicts</h2>" + lead + _table(head, [row(v) for v in shown])
    out += _why_blocks(shown)
    same = [v for v in ordered if str(v["verdict"]).upper() == "SAME"]
    if same:
        out += (
            f"<details><summary>{len(same)} SAME</summary>"
            + _table(head, [row(v) for v in same])
            + "</details>"
        )
    return out


def _why_blocks(verdicts: list) -> str:
    """Per moved benchmark, the gate's kernel diff and causes (aorta/gate/causes/why.py), once per benchmark."""
    seen, out = set(), []
    for v in verdicts:
        why = v.get("why")
        if not isinstance(why, dict) or v["benchmark"] in seen:
            continue
        seen.add(v["benchmark"])
        causes = ", ".join(str(c.get("cause")) for c in why.get("causes") or ()) or "none"
        out.append(
            f"<details><summary>why {_e(v['benchmark'])} is {_e(why.get('outcome'))}: {_e(causes)}</summary>"
            f"<pre>{_e(chr(10).join(why_lines(why, indent='')))}</pre></details>"
        )
    return "".join(out)


def _changes_section(summary: dict, top: int = 20) -> str:
    rows_data = summary.get("comparison")
    if rows_data is None:
        return ""
    if not rows_data:
        return '<h2>Biggest changes</h2><p class="note">No figure was measured in both runs.</p>'

    verdict_of = by_benchmark_metric(summary.get("verdicts"))

    def row(r):
        cls = "" if r["better"] is None else ("better" if r["better"] else "worse")
        word = "" if r["better"] is None else ("better" if r["better"] else "worse")
        verdict = verdict_of.get((r["configuration"], r["metric"]), "-")
        return [
            _td(r["configuration"]),
            _td(r["metric"]),
            _td(r["reference"], num=True),
            _td(r["candidate"], num=True),
            _td(r["unit"]),
            _td(f"{r['change_pct']:+.1f}%", cls=cls),
            _td(word, cls=cls),
            _td(verdict, cls=str(verdict).upper()),
        ]

    head = [
        "configuration",
        "metric",
        summary["reference"],
        summary["candidate"],
        "unit",
        "change",
        "direction",
        "verdict",
    ]
    out = (
        '<h2>Biggest changes</h2><p class="note">Median figures, candidate against reference, largest first. '
        "The direction says which way the change goes, not whether it is significant: that is the "
        "verdicts' job.</p>"
    ) + _table(head, [row(r) for r in rows_data[:top]])
    if len(rows_data) > top:
        out += (
            f"<details><summary>{len(rows_data) - top} more</summary>"
            + _table(head, [row(r) for r in rows_data[top:]])
            + "</details>"
        )
    return out


def _environment_section(summary: dict) -> str:
    labels = [s["label"] for s in summary["runs"]]
    rows = [[_td(r["name"])] + [_td(r["values"][lab]) for lab in labels] for r in summary["environment"]]
    classes = ["differs" if r["differs"] else "" for r in summary["environment"]]
    bare = [s["label"] for s in summary["runs"] if s["source"] == "fsdp_artifacts"]
    missing = (
        f'<p class="note">No machine info for {_e(", ".join(bare))}: an artifacts folder alone does not '
        "record it; keep the run's benchmark JSON beside the artifacts to show it.</p>"
        if bare
        else ""
    )
    return (
        '<h2>Environments</h2><p class="note">Rows that differ between runs are highlighted.</p>'
        + missing
        + _table(["", *labels], rows, classes)
    )


def _scaling_section(summary: dict, scaling: dict, figures: dict[str, Path]) -> str:
    if not scaling:
        return ""
    parts = ["<h2>Hardware-queue workloads</h2>"]
    for key in sorted(scaling):
        entry = scaling[key]
        labels = [s["label"] for s in summary["runs"] if s["label"] in entry["runs"]]
        parts.append(f"<h3>{_e(key)}</h3>")
        if key in figures:
            parts.append('<div class="figs">' + _img(figures[key], f"{key}: stream scaling") + "</div>")
        streams = sorted({p[0] for pts in entry["runs"].values() for p in pts})
        head = (
            ["streams"]
            + [f"{lab}: {entry['headline_metric']} ({entry['unit']})" for lab in labels]
            + [f"{lab}: concurrency" for lab in labels]
        )
        rows = []
        for n in streams:
            vals = {
                lab: next(((v, c) for s, v, c in entry["runs"].get(lab, []) if s == n), (None, None))
                for lab in labels
            }
            rows.append(
                [_td(n, num=True)]
                + [_td(vals[lab][0], num=True) for lab in labels]
                + [_td(vals[lab][1], num=True) for lab in labels]
            )
        parts.append(_table(head, rows))
    return "\n".join(parts)


def _fsdp_section(summary: dict, figures: dict[str, Path]) -> str:
    scenarios = sorted(
        {
            c["scenario"]
            for s in summary["runs"]
            for c in s["configurations"].values()
            if c["kind"] == "fsdp_scenario"
        }
    )
    if not scenarios:
        return ""
    labels = [
        s["label"]
        for s in summary["runs"]
        if any(c["kind"] == "fsdp_scenario" for c in s["configurations"].values())
    ]
    by_label = {s["label"]: s["configurations"] for s in summary["runs"]}
    parts = [
        '<h2>FSDP scenarios</h2><p class="note">step_ms: median timed step of the slowest rank. '
        "*_per_step: the profiled window's kernel-timeline totals divided by its steps, averaged over ranks; "
        "idle: time in the window with no kernel running; overlap_ratio_worst_rank: at each profiled step the "
        "lowest rank's overlapped / comm, median over steps (the benchmark's own figure). "
        "n/a: not measured in that run (see the figures for the reason).</p>"
    ]
    for scenario in scenarios:
        parts.append(f"<h3>{_e(scenario)}</h3>")
        cfgs = {lab: by_label[lab].get(f"fsdp:{scenario}") for lab in labels}
        names = list(dict.fromkeys(n for c in cfgs.values() if c for n in c["figures"]))
        rows = [
            [_td(n)]
            + [_td((cfgs[lab] or {}).get("figures", {}).get(n, {}).get("value"), num=True) for lab in labels]
            for n in names
        ]
        parts.append(_table(["median per step", *labels], rows))
        imgs = [
            _img(figures[f"overlap:{lab}:{scenario}"], f"{lab}: {scenario}")
            for lab in labels
            if f"overlap:{lab}:{scenario}" in figures
        ]
        parts.append('<div class="figs">' + "".join(imgs) + "</div>")
    timelines = [
        _img(figures[f"timeline:{lab}"], f"{lab}: timeline") for lab in labels if f"timeline:{lab}" in figures
    ]
    if timelines:
        parts.append('<h3>Timelines</h3><div class="figs">' + "".join(timelines) + "</div>")
    return "\n".join(parts)


RANK_PARTS = tuple(zip(LABELS, BREAKDOWN))  # (shown as, record key) of each part of a profiled step


def _rank_breakdown_section(summary: dict) -> str:
    """Per FSDP benchmark, run and rank: the median profiled step split into compute only / overlapped /
    exposed transfer / exposed wait / idle (ms), and the straggler, from the benchmark's record."""
    rows, notes = [], []
    for s in summary["runs"]:
        for name, c in s["configurations"].items():
            found = c.get("rank_breakdown") if c["kind"] == "benchmark" else None
            if not found:
                continue
            for r in found["ranks"]:
                rows.append(
                    [_td(name), _td(s["label"]), _td(r["rank"], num=True), _td(r["steps"], num=True)]
                    + [_td(r[key], num=True) for _, key in RANK_PARTS]
                )
            if found.get("straggler"):
                notes.append(f"{_e(name)}, {_e(s['label'])}: {_e(found['straggler'])}")
    if not rows:
        return ""
    head = ["benchmark", "run", "rank", "profiled steps", *(f"{label} ms" for label, _ in RANK_PARTS)]
    lead = (
        '<h2>FSDP overlap per rank</h2><p class="note">Per rank, its median profiled step. Exposed transfer: '
        "communication no compute hid, the last-arriving rank's kernel time; exposed wait: time a rank's "
        "collectives waited for their peers (launch skew, reported, not judged).</p>"
    )
    return lead + _table(head, rows) + "".join(f"<p>{n}</p>" for n in notes)


def _benchmarks_section(summary: dict) -> str:
    """Every benchmark configuration side by side (headline and device time), with what was unavailable."""
    labels = [
        s["label"]
        for s in summary["runs"]
        if any(c["kind"] == "benchmark" for c in s["configurations"].values())
    ]
    by_label = {s["label"]: s["configurations"] for s in summary["runs"]}
    keys = sorted({k for c in by_label.values() for k, v in c.items() if v["kind"] == "benchmark"})
    if not keys:
        return ""
    rows = []
    for key in keys:
        cells = [_td(key)]
        for lab in labels:
            cfg = by_label[lab].get(key)
            if cfg is None:
                cells.append(_td("not run"))
                continue
            head = cfg["figures"].get(cfg["headline_metric"] or "", {})
            cells.append(
                _td(
                    f"{fmt_value(head.get('value'))} {head.get('unit', '')}; "
                    f"{fmt_value(cfg['figures']['device_ms']['value'])} ms"
                )
            )
        rows.append(cells)
    out = "<h2>Every configuration</h2>" + _table(["configuration", *labels], rows)
    unavailable = [
        (lab, key, fig, why)
        for lab in labels
        for key, cfg in sorted(by_label[lab].items())
        if cfg["kind"] == "benchmark"
        for fig, why in sorted(cfg["unavailable"].items())
    ]
    if unavailable:
        out += (
            "<details><summary>Figures recorded as unavailable</summary>"
            + _table(
                ["run", "configuration", "figure", "reason"],
                [[_td(a), _td(b), _td(c), _td(d)] for a, b, c, d in unavailable],
            )
            + "</details>"
        )
    return out


def _world_scaling_section(summary: dict) -> str:
    """FSDP scenarios at two or more world sizes side by side (aorta/report/world_scaling.py)."""
    from aorta.report.world_scaling import HEADERS, table_rows
    from aorta.report.world_scaling import __doc__ as how

    view = summary.get("world_size_scaling")
    if not view:
        return ""
    rows = [[_td(v, num=v is None or isinstance(v, (int, float))) for v in row] for row in table_rows(view)]
    note = (how or "").split("\n\n", 1)[-1].replace("\n", " ")
    return f'<h2>FSDP world-size scaling</h2><p class="note">{_e(note)}</p>' + _table(HEADERS, rows)


def render(summary: dict, scaling: dict, figures: dict[str, Path], verdict_note: str = "") -> str:
    """The whole page. ``figures`` maps figure keys (scaling key, ``timeline:<label>``,
    ``overlap:<label>:<scenario>``) to PNG files, which are embedded."""
    labels = ", ".join(s["label"] for s in summary["runs"])
    body = "\n".join(
        [
            f"<h1>aorta report: {_e(labels)}</h1>",
            _runs_section(summary),
            _verdicts_section(summary, verdict_note),
            _changes_section(summary),
            _environment_section(summary),
            _scaling_section(summary, scaling, figures),
            _fsdp_section(summary, figures),
            _rank_breakdown_section(summary),
            _world_scaling_section(summary),
            _benchmarks_section(summary),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>aorta report: {_e(labels)}</title><style>{CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
