"""A moved benchmark's "why" (aorta/gate/causes/why.py) as terminal lines and markdown (pure)."""

from __future__ import annotations

from collections.abc import Mapping


def _ms(x) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def _pair(pair, unit: str = "") -> str:
    a, b = pair
    return f"{_ms(a)} -> {_ms(b)}{(' ' + unit) if unit else ''}"


def _kernel(row: Mapping) -> str:
    (a, b), (la, lb) = row["device_ms"], row["launches"]
    delta = (b or 0.0) - (a or 0.0)
    launches = f", launches {_ms(la)} -> {_ms(lb)}" if la != lb else ""
    grid = (
        f", grid {row['grid'][0]} -> {row['grid'][1]}"
        if row.get("grid") and row["grid"][0] != row["grid"][1]
        else ""
    )
    return f"{row['name']}: {_ms(a)} -> {_ms(b)} ms/iter ({delta:+.4g}){launches}{grid}"


def why_lines(why: Mapping, indent: str = "    ") -> list[str]:
    """Causes first (one line each), then the kernels that moved, then the stream figures."""
    lines = []
    for c in why.get("causes") or ():
        lines.append(f"{indent}cause {c['cause']}: {c['summary']}")
    diff = why.get("kernels")
    if diff:
        lines.append(
            f"{indent}kernels: device {_pair(diff['device_ms'], 'ms/iter')}, launches "
            f"{_pair(diff['launches'])} per iteration (runs {diff['runs'][0]}/{diff['runs'][1]})"
        )
        new = {r["name"] for r in diff["appeared"]}
        gone = {r["name"] for r in diff["disappeared"]}
        shown: set[str] = set()
        # the kernels that moved most first, then every other kernel that came or went, then launch counts
        for tag, rows in (("moved", diff["top"]), ("new", diff["appeared"]), ("gone", diff["disappeared"])):
            for row in rows:
                if row["name"] in shown:
                    continue
                shown.add(row["name"])
                tag = "new" if row["name"] in new else "gone" if row["name"] in gone else tag
                lines.append(f"{indent}  {tag:<8}{_kernel(row)}")
        for row in diff["launch_changes"]:
            if row["name"] not in shown:
                lines.append(f"{indent}  launches {_kernel(row)}")
    else:
        lines.append(
            f"{indent}kernels: no kernel summary on one side (CPU run, or runs saved before summaries)"
        )
    streams = why.get("streams") or {}
    if streams:
        lines.append(f"{indent}streams: " + ", ".join(f"{k} {_pair(v)}" for k, v in streams.items()))
    return lines


def why_markdown(name: str, why: Mapping) -> str:
    """One ``<details>`` block per moved benchmark."""
    causes = ", ".join(f"`{c['cause']}`" for c in why.get("causes") or ()) or "none"
    body = "\n".join(why_lines(why, indent=""))
    return f"<details><summary>why {name} is {why.get('outcome')}: {causes}</summary>\n\n```\n{body}\n```\n\n</details>\n"
