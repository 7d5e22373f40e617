"""Plain-text tables for the terminal (pure)."""

from __future__ import annotations

from collections.abc import Sequence


def _fmt(value) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence]) -> list[str]:
    cells = [[_fmt(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cells]
    return out


def format_summary(rows: Sequence[dict]) -> list[str]:
    """One line per benchmark: streams (requested/distinct), device median, host enqueue, metric, concurrency,
    GPU busy share; then each benchmark's reading notes (e.g. host-bound) under the table; last, where the
    benchmarks' host time went, phase by phase (``phases``: the record's ``host_phase_s``), for a slow run."""
    lines = format_table(
        [
            "benchmark",
            "streams",
            "distinct",
            "device median ms",
            "host enqueue ms",
            "metric",
            "concurrency",
            "gpu busy",
            "timing",
        ],
        [
            [
                r["name"],
                r["streams"],
                r["distinct"],
                r["median_ms"],
                r.get("enqueue_ms"),
                r["metric"],
                r["concurrency"],
                None if r.get("gpu_busy") is None else f"{r['gpu_busy']:.0%}",
                r["method"],
            ]
            for r in rows
        ],
    )
    lines += [f"{r['name']}: {note}" for r in rows for note in r.get("notes") or ()]
    totals: dict[str, float] = {}
    for r in rows:
        for phase, seconds in (r.get("phases") or {}).items():
            totals[phase] = totals.get(phase, 0.0) + seconds
    if totals:
        parts = ", ".join(f"{phase.replace('_', ' ')} {seconds:.1f}" for phase, seconds in totals.items())
        lines.append(
            f"host seconds by phase, {len(rows)} benchmarks: {parts} (total {sum(totals.values()):.1f})"
        )
    return lines
