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
    """One line per benchmark: streams (requested/distinct), device median, metric, concurrency."""
    return format_table(
        ["benchmark", "streams", "distinct", "device median ms", "metric", "concurrency", "timing"],
        [[r["name"], r["streams"], r["distinct"], r["median_ms"], r["metric"], r["concurrency"], r["method"]]
         for r in rows],
    )
