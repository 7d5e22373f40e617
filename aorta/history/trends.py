"""Each figure's run series from the history, its stack changes and its change points, each named by the
stack fields that changed there (pure: takes what the store read, returns plain data).

A series is one figure of one benchmark on one machine model, oldest run first. Runs of several machines of
that model mix in it (a nightly lane on whichever machine is lent); the noise the detector uses is the one
between those runs.
"""

from __future__ import annotations

import fnmatch
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aorta.environment.fingerprint import NOT_SETTINGS, differences
from aorta.history.changepoints import ChangePoint, detect, series_noise
from aorta.history.store import StoredFigure, StoredRun

SNAP = 2  # a change point names the stack change it sits on, or the nearest one this many runs away


@dataclass(frozen=True)
class StackChange:
    index: int  # first run of the new stack in the series
    fields: tuple[tuple[str, str, str], ...]  # (group.name, before, after)

    def text(self) -> str:
        return ", ".join(f"{name} {a} -> {b}" for name, a, b in self.fields)


@dataclass(frozen=True)
class Series:
    machine_model: str
    benchmark: str
    figure: str
    unit: str
    higher_is_better: bool
    runs: tuple[StoredRun, ...]
    values: tuple[float, ...]
    stack_changes: tuple[StackChange, ...]
    change_points: tuple[ChangePoint, ...]
    noise: float | None  # between-run SD of the log figure, runs of one stack pooled
    verdicts: tuple[
        str, ...
    ] = ()  # per run: the gate's verdict on this figure ("" where none), e.g. "SLOWER +6.0%"

    def named(self, cp: ChangePoint) -> StackChange | None:
        """The stack change at ``cp``, or the nearest within ``SNAP`` runs; None: no stack field moved there."""
        near = sorted(
            (abs(s.index - cp.index), s.index, s)
            for s in self.stack_changes
            if abs(s.index - cp.index) <= SNAP
        )
        return near[0][2] if near else None


def stack_diff(a: Mapping, b: Mapping) -> tuple[tuple[str, str, str], ...]:
    """The fingerprint facts that differ between two runs: versions, settings (less logging and visible
    devices), hardware facts, sweep settings."""
    rows = differences({"a": a, "b": b})
    return tuple(
        (f"{r['group']}.{r['name']}", r["values"]["a"], r["values"]["b"])
        for r in rows
        if not (r["group"] == "settings" and r["name"] in NOT_SETTINGS)
    )


def build_series(
    runs: Sequence[StoredRun],
    figures: Sequence[StoredFigure],
    *,
    benchmark: str | None = None,
    figure: str | None = None,
    machine: str | None = None,
    detect_changes: bool = True,
    verdicts: Mapping[tuple[int, str, str], tuple[str, float | None]] | None = None,
) -> list[Series]:
    """Every (machine model, benchmark, figure) series, filtered: ``benchmark`` is a substring of the
    benchmark's name or a glob, ``figure`` and ``machine`` globs."""
    by_id = {r.id: r for r in runs}
    grouped: dict[tuple[str, str, str], list[StoredFigure]] = defaultdict(list)
    for f in figures:
        run = by_id.get(f.run_id)
        if run is None:
            continue
        if benchmark and benchmark not in f.benchmark and not fnmatch.fnmatchcase(f.benchmark, benchmark):
            continue
        if figure and not fnmatch.fnmatchcase(f.figure, figure):
            continue
        if machine and not fnmatch.fnmatchcase(run.machine_model, machine):
            continue
        grouped[(run.machine_model, f.benchmark, f.figure)].append(f)
    order = {r.id: i for i, r in enumerate(runs)}
    out = []
    for (model, bench, fig), rows in sorted(grouped.items()):
        rows.sort(key=lambda f: order[f.run_id])
        sruns = tuple(by_id[f.run_id] for f in rows)
        values = tuple(f.value for f in rows)
        changes = tuple(
            StackChange(i, diff)
            for i in range(1, len(sruns))
            if (diff := stack_diff(sruns[i - 1].fingerprint, sruns[i].fingerprint))
        )
        idx = [c.index for c in changes]
        noise = series_noise(values, idx) if all(v > 0 for v in values) else None
        cps = tuple(detect(values, idx, sigma=noise)) if detect_changes and noise else ()
        out.append(
            Series(
                model,
                bench,
                fig,
                rows[-1].unit,
                rows[-1].higher_is_better,
                sruns,
                values,
                changes,
                cps,
                noise,
                tuple(_verdict_text((verdicts or {}).get((r.id, bench, fig))) for r in sruns),
            )
        )
    return out


def _verdict_text(v: tuple[str, float | None] | None) -> str:
    if v is None:
        return ""
    outcome, change = v
    return outcome if change is None else f"{outcome} {change * 100:+.1f}%"
