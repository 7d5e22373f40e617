"""A run document's runs, read once (pure: no torch; issue 66, items 2 and 4).

A document holds one run (a plain run file) or several: a baseline keeps its saved runs in
``aorta_baseline["runs"]``, a candidate of several fresh processes (``--aorta-runs N``) in ``aorta_runs``
(``aorta.record.run_samples``). ``read_runs`` reads them once into a ``RunSet``: each run once (a run stored
twice is one run), with its id, machine, block (kind, selection) and samples as stored; the gate's questions
(``aorta.gate.stats.samples``: run ids, samples, machines, blocks), its causes (``aorta.gate.causes.why``), the
baseline's save and the run history take the set, and never read the document's runs again. The raw document
rides along (``RunSet.doc``) for what reads the document itself: its machine, stack and benchmark entries.

    >>> rs = read_runs({"aorta_runs": [{"id": "r1", "benchmarks": {"b": {"device_ms": [1.0]}}}]})
    >>> rs.ids, rs.machines, rs.blocks
    (('r1',), ('',), (None,))
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aorta.record.machines import machine_id
from aorta.record.run_samples import CANDIDATE_RUNS_KEY, RUNS_KEY, all_stored, repeated_entries

RUN_KEY = "aorta_run"  # in a run's JSON: {"seed", "kind", "selection", "sample", "start"} (aorta.gate.plugin)
BASELINE_RUNS_AT = "aorta_baseline.runs"  # where a baseline's runs lie, as an error names the place


@dataclass(frozen=True)
class StoredRun:
    """One run of a document: ``entry`` is the stored entry as the file holds it (None for a plain run file,
    whose run is the document itself)."""

    id: str  # the stored id, else ``run1``.. by place
    machine: str  # the machine's id (``aorta.record.machines.machine_id``), ``""`` where not recorded
    block: Mapping | None  # what the run shares with a run of the other side (aorta.gate.runs.blocks), raw
    measured_at: object  # pytest-benchmark's time of the run, where recorded: part of its identity
    entry: Any = None

    @property
    def kind(self) -> object:
        """The run's kind (``check``, ``lean``, ...: its block's), None where no block is recorded."""
        return self.block.get("kind") if self.block is not None else None

    @property
    def selection(self) -> object:
        """Which benchmarks the run ran (its block's), None where no block is recorded."""
        return self.block.get("selection") if self.block is not None else None

    @property
    def samples(self) -> Mapping:
        """``{fullname: {figure: samples}}`` as stored (unchecked: ``aorta.gate.stats.samples.baseline_runs``
        checks them); ``{}`` for a plain run file, whose samples are its benchmark entries."""
        benches = self.entry.get("benchmarks") if isinstance(self.entry, Mapping) else None
        return benches if isinstance(benches, Mapping) else {}


@dataclass(frozen=True)
class RunSet:
    """A document's runs, each once, oldest first; ``stored`` and ``repeats`` keep every entry as the file
    holds it (repeats included), for the checks that name an entry by its place."""

    doc: Mapping
    runs: tuple[StoredRun, ...]
    stored: tuple[Any, ...] = ()  # every stored entry, repeats included; () for a plain run file
    repeats: Mapping[int, int] = field(default_factory=dict)  # index -> the earlier entry it repeats
    stored_at: str = ""  # where the entries lie: BASELINE_RUNS_AT, CANDIDATE_RUNS_KEY, "" (a plain run)
    # The checked samples (``aorta.gate.stats.samples.baseline_runs``), kept once computed: at most one item.
    checked: list = field(default_factory=list, compare=False, repr=False)

    @property
    def entries(self) -> tuple[Any, ...]:
        """The stored entries, each run once (``aorta.record.run_samples.stored_runs``); () for a plain run."""
        return tuple(r.entry for r in self.runs) if self.stored else ()

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(r.id for r in self.runs)

    @property
    def machines(self) -> tuple[str, ...]:
        return tuple(r.machine for r in self.runs)

    @property
    def blocks(self) -> tuple[Mapping | None, ...]:
        return tuple(r.block for r in self.runs)


def read_runs(doc: Mapping | RunSet) -> RunSet:
    """The runs of ``doc``, read once (a ``RunSet`` passed in is returned as it is)."""
    if isinstance(doc, RunSet):
        return doc
    stored = tuple(all_stored(doc))
    if not stored:
        block = doc.get(RUN_KEY)
        one = StoredRun(
            "run1", machine_id(doc), block if isinstance(block, Mapping) else None, doc.get("datetime")
        )
        return RunSet(doc, (one,))
    again = repeated_entries(stored)
    runs = tuple(_stored_run(e, i) for i, e in enumerate(e for k, e in enumerate(stored) if k not in again))
    at = BASELINE_RUNS_AT if (doc.get("aorta_baseline") or {}).get(RUNS_KEY) else CANDIDATE_RUNS_KEY
    return RunSet(doc, runs, stored, again, at)


def _stored_run(entry: Any, i: int) -> StoredRun:
    """The ``i``-th run (each run once) of a document, from its stored entry."""
    if not isinstance(entry, Mapping):  # not a run: the samples' check names it (baseline_runs)
        return StoredRun(f"run{i + 1}", "", None, None, entry)
    machine, block = entry.get("machine"), entry.get("block")
    return StoredRun(
        str(entry.get("id") or f"run{i + 1}"),
        str((machine.get("id") if isinstance(machine, Mapping) else None) or ""),
        block if isinstance(block, Mapping) else None,
        entry.get("measured_at"),
        entry,
    )
