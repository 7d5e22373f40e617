"""A baseline's runs as the gate judges them, run by run (pure: no torch).

The sample the gate judges is the run (``aorta.gate.verdicts.verdict``); the figures and stored runs of a document are
read by ``aorta.record.run_samples``. Each stored run is ``{"id", "saved_at", "stack", "machine", "block",
"benchmarks": {fullname: {figure: [samples]}}}``: a document's entries (``aorta.gate.baselines.baseline.run_entry`` writes
them) are read back, checked, with their ids, blocks and machines.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from aorta.gate.runs.blocks import block_key
from aorta.gate.stats.schema import check_schema
from aorta.record import RecordError
from aorta.record.run_samples import (
    CANDIDATE_RUNS_KEY,
    DEVICE_TIME,
    RUNS_KEY,
    FigureSamples,
    figures,
    run_key,
)
from aorta.record.run_set import BASELINE_RUNS_AT, RunSet, read_runs

MAX_BASELINE_RUNS = 20  # the oldest runs are dropped past this (the save line says so)

# No time, rate or size aorta measures comes near this (a year is 3e10 ms, 1 PB/s is 1e15 B/s); its square
# and a sum of them stay far from float overflow (issue 38, case 14).
MAX_ABS_SAMPLE = 1e15


# ------------------------------------------------------------------------------ a baseline's runs
# Each question takes a document or its ``RunSet`` (``aorta.record.run_set.read_runs``): a caller that asks several
# reads the document's runs once and passes the set.
def run_keys(doc: Mapping | RunSet) -> list[str]:
    """The identity of each of ``doc``'s runs, in ``baseline_runs`` order."""
    rs = read_runs(doc)
    if not rs.stored:
        return [run_key(baseline_runs(rs)[0], rs.doc.get("datetime"))]
    return [run_key(r.samples, r.measured_at) for r in rs.runs]


def repeated_run_notes(doc: Mapping | RunSet, source: str) -> list[str]:
    """One line per stored run that repeats an earlier one of ``doc`` (issue 38, case 12)."""
    rs = read_runs(doc)
    entries = rs.stored
    key = RUNS_KEY if rs.stored_at == BASELINE_RUNS_AT else CANDIDATE_RUNS_KEY

    def name(i: int) -> str:
        e = entries[i]
        rid = e.get("id") if isinstance(e, Mapping) else None
        return f"{key}[{i}]" + (f" ({rid})" if rid else "")

    return [
        f"{source}: {name(i)} holds the same samples as {name(j)}: one run, counted once"
        for i, j in rs.repeats.items()
    ]


def run_ids(doc: Mapping | RunSet) -> list[str]:
    """The ids of a document's runs, in ``baseline_runs`` order (``run1`` ... where none was stored)."""
    return list(read_runs(doc).ids)


def run_blocks(doc: Mapping | RunSet) -> list[str | None]:
    """The block of each of a document's runs, in ``baseline_runs`` order (None: not recorded)."""
    return [block_key(b) for b in read_runs(doc).blocks]


def run_machines(doc: Mapping | RunSet) -> list[str]:
    """The machine of each of a document's runs, in ``baseline_runs`` order (``""``: not recorded)."""
    return list(read_runs(doc).machines)


def baseline_runs(doc: Mapping | RunSet, source: str = "") -> list[dict[str, FigureSamples]]:
    """A document's runs, oldest first, each ``{fullname: {figure: samples}}``; a document without stored
    runs (an older baseline, or a plain run file) is one run. ``RecordError`` names the file (``source``),
    the run and the field when a stored sample is not a finite number, or a device time is negative. A
    ``RunSet`` keeps the runs once checked: asked again, it gives them without reading them again."""
    rs = read_runs(doc)
    if not rs.checked:
        rs.checked.append(_checked_runs(rs, source))
    return list(rs.checked[0])


def _checked_runs(rs: RunSet, source: str) -> list[dict[str, FigureSamples]]:
    doc = rs.doc
    check_schema(doc, source)  # a newer aorta's baseline is not read as this one's (issue 38, case 3)
    stored = rs.stored  # every entry checked, named by its place in the file; a repeat counted once
    where = f"{source}: " if source else ""
    if not stored:
        one: dict[str, FigureSamples] = {
            b["fullname"]: {n: s for n, (_, _, s) in figures(b).items()} for b in doc.get("benchmarks", ())
        }
        for fullname, figs in one.items():
            _check(figs, f"{where}benchmarks[{fullname!r}]")
        return [one]
    out = []
    for i, entry in enumerate(stored):
        key = rs.stored_at
        benches = entry.get("benchmarks") if isinstance(entry, Mapping) else None
        if not isinstance(benches, Mapping):
            raise RecordError(f"{where}{key}[{i}].benchmarks: missing or not a mapping")
        run: dict[str, FigureSamples] = {}
        for fullname, figs in benches.items():
            at = f"{where}{key}[{i}] (run {i + 1} of {len(stored)}).benchmarks[{fullname!r}]"
            run[fullname] = {}
            for name, samples in (figs or {}).items():
                if not isinstance(samples, list) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in samples
                ):
                    raise RecordError(f"{at}.{name}: expected a list of finite numbers")
                run[fullname][name] = [float(v) for v in samples]
            _check(run[fullname], at)
        if i not in rs.repeats:
            out.append(run)
    return out


def _check(figs: FigureSamples, at: str) -> None:
    """Refuse what no verdict can be built on: non-finite samples, negative device times."""
    for name, samples in figs.items():
        for v in samples:
            if not math.isfinite(v):
                raise RecordError(f"{at}.{name}: {v!r} is not a finite number")
            if (
                abs(v) > MAX_ABS_SAMPLE
            ):  # 1e308 passed the finiteness check, then overflowed in the statistics
                raise RecordError(
                    f"{at}.{name}: {v!r} is out of the range a measurement can take "
                    f"(at most {MAX_ABS_SAMPLE:g} in size)"
                )
            if name == DEVICE_TIME and v < 0:
                raise RecordError(f"{at}.{name}: {v!r}: a device time cannot be negative")
