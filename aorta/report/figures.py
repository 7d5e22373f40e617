"""Draw the report's figures (matplotlib, Agg; imported only when a report is asked for).

Each function takes data made by ``summary`` and a path, and writes one PNG. ``matplotlib.figure.Figure``
is used without pyplot, so no global backend or window state is touched. A figure whose data a run
could not measure is still drawn, with the reason written on it, never with invented numbers.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: a report is written on headless CI machines and GPU nodes

from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

DPI = 96
COLOURS = {
    "compute_only_ms": "#4C72B0",
    "overlapped_ms": "#55A868",
    "exposed_comm_ms": "#C44E52",
    "idle_ms": "#BBBBBB",
    "comm_busy_ms": "#DD8452",
    "compute_busy_ms": "#4C72B0",
    "step_ms": "#333333",
}


def _note(ax, text: str) -> None:
    ax.text(
        0.5,
        0.5,
        text,
        ha="center",
        va="center",
        wrap=True,
        transform=ax.transAxes,
        fontsize=10,
        color="#884444",
    )


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=DPI, format="png")
    return path


def draw_timeline(label: str, scenarios: dict, path: Path) -> Path:
    """Per FSDP scenario, the profiled window's device timeline: compute, communication and their overlap,
    one group of lanes per rank (ms from the window's first kernel). Where no kernel timestamps were
    recorded, the timed steps' device ms per rank instead, with the reason."""
    names = sorted(scenarios)
    fig = Figure(figsize=(10, 0.6 + 2.4 * max(1, len(names))), layout="constrained")
    axes = fig.subplots(max(1, len(names)), 1, squeeze=False)[:, 0]
    for ax, scenario in zip(axes, names):
        ranks = scenarios[scenario]
        starts = [iv[0] for r in ranks for iv in (*r.compute_us, *r.comm_us)]
        if starts:
            origin = min(starts)
            ticks, labels = [], []
            for i, r in enumerate(ranks):
                base = i * 4
                for lane, (ivs, key, title) in enumerate(
                    (
                        (r.compute_us, "compute_busy_ms", "compute"),
                        (r.comm_us, "comm_busy_ms", "communication"),
                        (r.overlap_us, "overlapped_ms", "overlapped"),
                    )
                ):
                    bars = [((a - origin) / 1e3, (b - a) / 1e3) for a, b in ivs]
                    ax.broken_barh(
                        bars, (base + lane + 0.1, 0.8), color=COLOURS[key], label=title if i == 0 else None
                    )
                    ticks.append(base + lane + 0.5)
                    labels.append(f"rank {r.rank} {title}")
            ax.set_yticks(ticks, labels, fontsize=7)
            ax.invert_yaxis()
            ax.set_xlabel("ms from the first profiled kernel")
            steps = max(r.profiled_steps for r in ranks)
            ax.set_title(f"{label}: {scenario} ({steps} profiled steps)", fontsize=10)
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
            continue
        drew = False
        for r in ranks:
            pts = sorted(r.step_ms.items())
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, label=f"rank {r.rank}")
                drew = True
        reasons = "; ".join(sorted({r.overlap_reason for r in ranks if r.overlap_reason}))
        ax.text(
            0.01,
            0.97,
            f"no kernel timeline: {reasons or 'not recorded'}",
            transform=ax.transAxes,
            va="top",
            fontsize=8,
            color="#884444",
        )
        if drew:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        else:
            _note(ax, "no timed steps recorded")
        ax.set_title(f"{label}: {scenario}: step time", fontsize=10)
        ax.set_xlabel("step")
        ax.set_ylabel("device ms")
    return _save(fig, path)


def draw_overlap_breakdown(label: str, scenario: str, rows: list[dict], path: Path) -> Path:
    """Per rank, ms per profiled step stacked: compute alone, overlapped, exposed comm, idle."""
    fig = Figure(figsize=(5.6, 3.0), layout="constrained")
    ax = fig.subplots()
    parts = (
        ("compute_only_ms", "compute only"),
        ("overlapped_ms", "overlapped"),
        ("exposed_comm_ms", "exposed comm"),
        ("idle_ms", "idle"),
    )
    usable = [r for r in rows if all(r[k] is not None for k, _ in parts)]
    if usable:
        xs = [f"rank {r['rank']}" for r in usable]
        bottom = [0.0] * len(usable)
        for key, title in parts:
            vals = [r[key] for r in usable]
            ax.bar(xs, vals, bottom=bottom, label=title, color=COLOURS[key], width=0.6)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        ax.set_ylabel("ms per step")
    else:
        reasons = "; ".join(sorted({r["reason"] for r in rows if r["reason"]})) or "not recorded"
        _note(ax, f"overlap breakdown unavailable:\n{reasons}")
    ax.set_title(f"{label}: {scenario}: where each step's time goes", fontsize=10)
    return _save(fig, path)


def draw_scaling(title: str, entry: dict, path: Path) -> Path:
    """Headline metric and effective concurrency against stream count, one line per run."""
    fig = Figure(figsize=(9, 3.4), layout="constrained")
    ax_m, ax_c = fig.subplots(1, 2)
    any_conc = any_headline = False
    for label, points in entry["runs"].items():
        pts = [(s, v) for s, v, _ in points if v is not None]
        if pts:
            ax_m.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
            any_headline = True
        conc = [(s, c) for s, _, c in points if c is not None]
        if conc:
            ax_c.plot([p[0] for p in conc], [p[1] for p in conc], marker="o", label=label)
            any_conc = True
    streams = sorted({p[0] for pts in entry["runs"].values() for p in pts})
    for ax in (ax_m, ax_c):
        if len(streams) > 1 and streams[0] > 0:
            ax.set_xscale("log", base=2)
        ax.set_xticks(streams, [str(s) for s in streams])
        ax.set_xlabel("streams")
    ax_m.set_ylabel(f"{entry['headline_metric']} ({entry['unit']})")
    ax_m.set_title(f"{title}: {entry['headline_metric']}", fontsize=10)
    ax_c.set_ylabel("effective concurrency")
    ax_c.set_title("effective concurrency", fontsize=10)
    if any_conc:
        ax_c.plot(streams, streams, ls=":", color="#999999", label="ideal")
        ax_c.legend(fontsize=8)
    else:
        reasons = "\n".join(entry.get("concurrency_unavailable") or ["not recorded"])
        _note(ax_c, f"unavailable:\n{reasons}")
    if any_headline:
        ax_m.legend(fontsize=8)
    else:  # e.g. hetero_kernels on the CPU: its headline needs kernel timestamps
        reasons = "\n".join(entry.get("headline_unavailable") or ["not recorded"])
        _note(ax_m, f"unavailable:\n{reasons}")
    return _save(fig, path)
