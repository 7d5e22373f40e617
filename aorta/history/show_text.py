"""``aorta history show``: each figure's series as text, stack changes and change points marked (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from aorta.history.trends import Series


def _direction(change: float, higher_is_better: bool) -> str:
    worse = change < 0 if higher_is_better else change > 0
    return "worse" if worse else "better"


def series_lines(s: Series) -> list[str]:
    noise = f"{s.noise * 100:.2g}%" if s.noise else "unknown"
    lines = [
        f"{s.benchmark}  {s.figure} ({s.unit or '-'}, {'higher' if s.higher_is_better else 'lower'} is better)"
        f"  on {s.machine_model}: {len(s.values)} runs, between-run noise {noise}"
    ]
    stack_at = {c.index: c for c in s.stack_changes}
    cp_at = {c.index: c for c in s.change_points}
    for i, (run, value) in enumerate(zip(s.runs, s.values)):
        if i in stack_at:
            lines.append(f"    -- stack change: {stack_at[i].text()}")
        if i in cp_at:
            cp = cp_at[i]
            named = s.named(cp)
            why = named.text() if named else "no stack field changed here"
            lines.append(
                f"    >> CHANGE POINT {cp.change * 100:+.1f}% ({_direction(cp.change, s.higher_is_better)}, "
                f"z {cp.z:.1f}): {why}"
            )
        verdict = s.verdicts[i] if i < len(s.verdicts) and s.verdicts[i] else ""
        lines.append(
            f"  {run.recorded_at}  {value:12.6g}  {run.stack_label}  {run.machine_id}"
            + (f"  gate: {verdict}" if verdict else "")
        )
    return lines


def show_lines(series: Sequence[Series]) -> list[str]:
    if not series:
        return ["no runs in the history match (check -k, --figure and --machine)"]
    out: list[str] = []
    for s in series:
        out += [*series_lines(s), ""]
    found = sum(len(s.change_points) for s in series)
    out.append(f"{len(series)} series, {found} change points")
    return out
