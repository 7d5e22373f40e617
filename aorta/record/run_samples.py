"""The samples a run document holds, figure by figure and run by run (pure: no torch).

A figure's samples are device time per round (``device_ms``) and each judged metric's per-round (or
per-step) samples; a metric with one value per run gives that one value. A document keeps its runs apart:
a baseline keeps every saved run in ``aorta_baseline["runs"]``, a candidate of several fresh processes
(``--aorta-runs N``) keeps them in ``aorta_runs``, any other run file is one run. Read here for both the gate
(``aorta.gate``, which judges them) and the run history (``aorta.history``, which keeps them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aorta.record.bench import record_of
from aorta.record.metric import Metric
from aorta.record.run_identity import content_hash, repeats

DEVICE_TIME = "device_ms"  # the name device time per iteration goes by in verdicts and thresholds
RUNS_KEY = "runs"
CANDIDATE_RUNS_KEY = "aorta_runs"  # a candidate's fresh-process runs, in the document the gate writes

FigureSamples = dict[str, list[float]]  # figure -> samples, for one benchmark of one run


def device_samples_ms(bench: Mapping) -> list[float]:
    """Per-round device ms per iteration: aorta's raw samples, else pytest-benchmark's saved data."""
    record = record_of(bench)
    if record.device_ms_per_iteration:
        return list(record.device_ms_per_iteration)
    st = bench.get("stats") or {}
    if st.get("data"):
        return [float(v) * 1e3 for v in st["data"]]
    if st.get("median") is not None:
        return [float(st["median"]) * 1e3]  # a single value: the run's figure
    return []


def metric_samples(metric: Metric) -> list[float]:
    if metric.samples:
        return list(metric.samples)
    return [] if metric.value is None else [float(metric.value)]


def per_round_figures(bench: Mapping) -> set[str]:
    """Figures with one sample per timed round or step (device time always), whose runs need enough rounds
    for a median; the rest have one value per run. A figure recorded with a single sample is measured once
    per run (a stage figure of the one labelled round beside a graph replay, a reference run's figure), and
    a figure of a kernel or labelled pass (``from_pass``) has the pass's few profiled rounds by design: the
    value of each is the run's figure, judged against the between-run noise like any other, never refused as
    "too few samples"."""
    return {DEVICE_TIME} | {
        n for n, m in record_of(bench).metrics.items() if m.judged and len(m.samples) > 1 and not m.from_pass
    }


def figures(bench: Mapping) -> dict[str, tuple[str, bool, list[float]]]:
    """name -> (unit, higher_is_better, samples) for device time and every judged metric (a metric the
    record marks ``judged: false``, such as time waiting for a peer rank, is reported only)."""
    out = {DEVICE_TIME: ("ms", False, device_samples_ms(bench))}
    for name, m in record_of(bench).metrics.items():
        if m.judged:
            out[name] = (m.unit, m.higher_is_better, metric_samples(m))
    return out


# ------------------------------------------------------------------------------ a document's stored runs
def all_stored(doc: Mapping) -> list:
    """Every run entry a document stores, repeats included (``stored_runs`` counts each run once)."""
    return list((doc.get("aorta_baseline") or {}).get(RUNS_KEY) or doc.get(CANDIDATE_RUNS_KEY) or [])


def repeated_entries(entries: Sequence) -> dict[int, int]:
    """Entries holding the same samples as an earlier one: ``{index: index of the first}``."""
    keys = [
        run_key(e["benchmarks"], e.get("measured_at"))
        if isinstance(e, Mapping) and isinstance(e.get("benchmarks"), Mapping) and e["benchmarks"]
        else f"not a run: {i}"  # nothing measured to compare: never a repeat (a reader refuses it)
        for i, e in enumerate(entries)
    ]
    return repeats(keys)


def run_key(samples: Mapping, measured_at: object = None) -> str:
    """A run's identity: its samples and, where recorded, when it was measured (two runs written by hand or a
    script may share samples; the same run read twice shares both)."""
    return content_hash(samples if measured_at is None else {"samples": samples, "measured_at": measured_at})


def unique_runs(entries: Sequence) -> list:
    """``entries`` less each one that holds the same samples as an earlier one: one run is counted once."""
    again = repeated_entries(entries)
    return [e for i, e in enumerate(entries) if i not in again]


def stored_runs(doc: Mapping) -> list:
    """The run entries a document keeps (a baseline's, or a multi-run candidate's), each run once (a run
    stored twice is one run: ``aorta.gate.stats.samples.repeated_run_notes`` says so); [] for a plain run."""
    return unique_runs(all_stored(doc))
