"""Why each moved benchmark moved: its kernel diff, stream figures and causes (pure: no torch).

For every benchmark with a SLOWER or FASTER verdict, from both sides' run evidence
(aorta/gate/causes/run_evidence.py): the kernel diff (aorta/gate/causes/kernel_diff.py), the concurrency and per-stream
busy change, and the named causes with their evidence (aorta/gate/causes/causes.py). The direction is device
time's verdict where it moved, else the first figure's that did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aorta.gate.causes.causes import find_causes
from aorta.gate.causes.kernel_diff import kernel_diff, stream_change
from aorta.gate.causes.run_evidence import EVIDENCE_KEY, bench_evidence
from aorta.gate.verdicts.verdict import FASTER, SLOWER, Verdict
from aorta.record.machines import aorta_machine
from aorta.record.run_samples import DEVICE_TIME
from aorta.record.run_set import RunSet, read_runs

MOVED = (SLOWER, FASTER)


def side_evidence(doc: Mapping | RunSet, fullname: str) -> list[dict]:
    """One side's evidence for a benchmark, a dict per run that kept some: from the stored runs of a baseline
    or multi-run candidate, else (a plain run file, or runs saved before evidence was kept) from the
    document's own benchmark entry. ``doc``: the document or its runs (``aorta.record.run_set.read_runs``)."""
    rs = read_runs(doc)
    held = [
        e[EVIDENCE_KEY][fullname]
        for e in rs.entries
        if isinstance(e, Mapping)
        and isinstance(e.get(EVIDENCE_KEY), Mapping)
        and isinstance(e[EVIDENCE_KEY].get(fullname), Mapping)
    ]
    if held:
        return held
    for bench in rs.doc.get("benchmarks", ()):
        if bench.get("fullname") == fullname:
            ev = bench_evidence(bench)
            return [ev] if ev else []
    return []


def _direction(verdicts: Sequence[Verdict]) -> str:
    for v in verdicts:
        if v.metric == DEVICE_TIME:
            return v.outcome
    return verdicts[0].outcome


def explain(
    verdicts: Sequence[Verdict],
    ref: Mapping | RunSet,
    cand: Mapping | RunSet,
    extra_runs: Sequence[Mapping | RunSet] = (),
) -> dict[str, dict[str, Any]]:
    """``{benchmark: {"outcome", "figures", "kernels", "streams", "causes"}}`` for each moved benchmark; each
    side's runs read once (``aorta.record.run_set.read_runs``), whatever the number of moved benchmarks."""
    ref, cand = read_runs(ref), read_runs(cand)
    extra = [read_runs(doc) for doc in extra_runs]
    moved: dict[str, list[Verdict]] = {}
    for v in verdicts:
        if v.outcome in MOVED:
            moved.setdefault(v.benchmark, []).append(v)
    out = {}
    for name, vs in moved.items():
        outcome = _direction(vs)
        ref_ev = side_evidence(ref, name)
        cand_ev = side_evidence(cand, name) + [e for rs in extra for e in side_evidence(rs, name)]
        diff = kernel_diff(
            [e["kernels"] for e in ref_ev if "kernels" in e],
            [e["kernels"] for e in cand_ev if "kernels" in e],
            slower=outcome == SLOWER,
        )
        out[name] = {
            "outcome": outcome,
            "figures": [v.metric for v in vs],
            "kernels": diff,
            "streams": stream_change(ref_ev, cand_ev),
            "causes": find_causes(
                ref_ev,
                cand_ev,
                diff,
                slower=outcome == SLOWER,
                ref_machine=aorta_machine(ref.doc),
                cand_machine=aorta_machine(cand.doc),
            ),
        }
    return out
