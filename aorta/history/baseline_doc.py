"""A baseline taken from the history: ``--aorta-compare history:STACK`` (pure: takes what the store read).

The last ``last`` runs of stack ``STACK`` (a stack label, as ``aorta stack`` prints it and ``aorta history
show`` lists it) on this machine model become a document shaped as a saved baseline (``aorta.gate.baselines.baseline``):
each run's samples per benchmark and figure in ``aorta_baseline.runs``, the latest run's figures as the
document's benchmarks, the machine and stack from the runs' fingerprint. The gate judges it as any baseline:
run figures against the noise between those runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from aorta.history.store import StoredFigure, StoredRun

PREFIX = "history:"
DEFAULT_LAST = 20  # as many runs as a saved baseline keeps (aorta.gate.stats.samples.MAX_BASELINE_RUNS)


def parse_history_ref(ref: str) -> tuple[str, int]:
    """``history:STACK`` or ``history:STACK:N`` -> (STACK, N); ``ValueError`` naming the value."""
    body = ref[len(PREFIX) :]
    stack, _, last = body.partition(":")
    if not stack or (last and not (last.isdigit() and int(last) >= 2)):
        raise NoHistoryBaseline(
            f"--aorta-compare={ref!r}: give history:STACK or history:STACK:N with N >= 2 runs, STACK a stack "
            "label as 'aorta stack' prints it (e.g. history:nvidia-h100-80gb-hbm3-x1-cuda13.0-torch2.11.0:10)"
        )
    return stack, int(last) if last else DEFAULT_LAST


class NoHistoryBaseline(ValueError):
    """No run of that stack on this machine model: the message lists the stacks the history holds."""


def machine_block(run: StoredRun) -> dict:
    """``machine_info["aorta"]`` as the run recorded it, rebuilt from its fingerprint."""
    fp = run.fingerprint
    versions, hardware = fp.get("versions", {}), fp.get("hardware", {})
    backend = "cpu" if run.machine_model == "cpu" else ("rocm" if versions.get("hip") else "cuda")
    block: dict = {
        k: versions[k] for k in ("driver", "cuda", "hip", "torch", "nccl", "rccl") if k in versions
    }
    block.update(
        backend=backend,
        gpu_name=hardware.get("gpu_name") if backend != "cpu" else None,
        gpu_count=int(hardware.get("gpu_count", 0) or 0) if backend != "cpu" else 0,
        env=dict(fp.get("settings", {})),
        host={"hostname": run.machine_id},
    )
    return block


def history_baseline(
    runs: Sequence[StoredRun], figures: Sequence[StoredFigure], stack: str, machine_model: str, last: int
) -> dict:
    """The baseline document of the last ``last`` runs of ``stack`` on ``machine_model`` ("": any model)."""
    mine = [r for r in runs if r.stack_label == stack and machine_model in ("", r.machine_model)][-last:]
    if not mine:
        held = sorted({f"{r.stack_label} ({r.machine_model})" for r in runs})
        raise NoHistoryBaseline(
            f"--aorta-compare={PREFIX}{stack}: the history holds no run of stack {stack!r} on "
            f"{machine_model or 'any machine model'}; "
            f"it holds: {', '.join(held) if held else 'no runs'}"
        )
    by_run: dict[int, list[StoredFigure]] = defaultdict(list)
    for f in figures:
        by_run[f.run_id].append(f)
    latest = mine[-1]
    entries = [
        {
            "id": f"history-{r.id}",
            "saved_at": r.recorded_at,
            "stack": {"label": r.stack_label, **r.fingerprint.get("versions", {})},
            "machine": {
                **{k: machine_block(r).get(k) for k in ("backend", "gpu_name", "gpu_count")},
                "host": r.machine_id,
                "id": r.machine_id,
            },
            "benchmarks": _samples(by_run[r.id]),
        }
        for r in mine
    ]
    return {
        "datetime": latest.recorded_at,
        "machine_info": {"node": latest.machine_id, "aorta": machine_block(latest)},
        "commit_info": {"id": latest.commit_id},
        "benchmarks": _benchmarks(by_run[latest.id]),
        "aorta_baseline": {"name": f"{PREFIX}{stack}", "runs": entries},
    }


def _samples(figs: Sequence[StoredFigure]) -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for f in figs:
        out[f.benchmark][f.figure] = list(f.samples)
    return dict(out)


def _benchmarks(figs: Sequence[StoredFigure]) -> list[dict]:
    """The latest run's benchmarks, as aorta's record holds them: device time per round and the metrics."""
    grouped: dict[str, list[StoredFigure]] = defaultdict(list)
    for f in figs:
        grouped[f.benchmark].append(f)
    out = []
    for fullname, rows in sorted(grouped.items()):
        info: dict = {"aorta_schema": 3, "metrics": {}}
        for f in rows:
            if f.figure == "device_ms":
                info["device_ms_per_iteration"] = list(f.samples)
            else:
                info["metrics"][f.figure] = {
                    "value": f.value,
                    "unit": f.unit,
                    "higher_is_better": f.higher_is_better,
                    "samples": list(f.samples),
                }
        out.append({"name": fullname.split("::")[-1], "fullname": fullname, "extra_info": info})
    return out
