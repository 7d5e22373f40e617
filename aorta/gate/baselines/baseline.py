"""Baselines: save a run as one, atomically, and find one by name (pure: no torch). Loading and
validating a saved run is the run record's (aorta/record).

A baseline is the whole pytest-benchmark JSON of its latest run (with aorta's extra_info and the raw
per-round samples; benchmarks of earlier runs that the latest did not run are kept), plus an
``aorta_baseline`` block: its name, when it was saved, the machine key, the software stack, the resolved
options, and ``runs``: every saved run's samples (``aorta.gate.stats.samples``). Saving under an existing name adds
a run (separate processes of the same stack: the gate needs their spread); a run of another software stack
is refused, and ``replace=True`` starts the baseline afresh. It lives at ``<dir>/<machine key>/<name>.json``, the machine key being
the GPU model and count (``nvidia-h100-80gb-hbm3-x8``; ``cpu`` on a machine without a GPU).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aorta.environment.fingerprint import without_launcher_defaults
from aorta.gate.causes.run_evidence import EVIDENCE_KEY, run_evidence
from aorta.gate.comparison.compare import (
    STACK_KEYS,
    GateSettings,
    aorta_machine,
    machine_label,
    world_size_change,
)
from aorta.gate.runs.blocks import RUN_KEY
from aorta.gate.stats.samples import (  # noqa: F401 - repeated_run_notes: gate API (the plugin's note on a run stored twice)
    MAX_BASELINE_RUNS,
    baseline_runs,
    repeated_run_notes,
)
from aorta.gate.stats.schema import BASELINE_SCHEMA, check_schema
from aorta.processes.lock import locked, remove_stale_temps
from aorta.record import RecordError, check_run, load_run, write_json_atomic  # noqa: F401 - load_run: gate API
from aorta.record.machines import machine_id, machine_key
from aorta.record.run_samples import CANDIDATE_RUNS_KEY, RUNS_KEY, figures, unique_runs
from aorta.record.run_set import BASELINE_RUNS_AT, RunSet, read_runs
from aorta.stats.noise import noise_profile

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$")


# A saved run that cannot be used (the record's own error: the message names the file and the field).
BaselineError = RecordError


def run_entry(run: Mapping, saved_at: str, stack: Mapping, run_id: str = "") -> dict[str, Any]:
    """One run's samples as a baseline keeps them, by benchmark fullname and figure, with the machine it
    ran on (its GPU model and count, and the host)."""
    return {
        "id": run_id or saved_at,
        "saved_at": saved_at,
        "measured_at": run.get("datetime"),  # pytest-benchmark's time of the run: part of its identity
        # what the run shares with a run of the other side: order seed, kind, selection (aorta.gate.runs.blocks)
        "block": run.get(RUN_KEY),
        "stack": dict(stack),
        # backend, GPU model and count (a baseline is one kind of machine: aorta.gate.baselines.baseline.check_can_add), host
        "machine": {
            **{k: aorta_machine(run).get(k) for k in ("backend", "gpu_name", "gpu_count")},
            "host": (run.get("machine_info") or {}).get("node"),
            "id": machine_id(run),  # the GPU's UUID where recorded: which machine, not only which kind
        },
        "benchmarks": {
            b["fullname"]: {name: samples for name, (_, _, samples) in figures(b).items()}
            for b in run.get("benchmarks", ())
        },
        # what explains a verdict: kernels, host enqueue, throttling (aorta/gate/causes/run_evidence.py)
        EVIDENCE_KEY: run_evidence(run),
    }


def parse_baseline_name(text: str) -> str:
    if not NAME_PATTERN.match(str(text)) or str(text).endswith(".json"):
        raise ValueError(
            f"--aorta-save-baseline={text!r}: a baseline name is letters, digits and . _ + - "
            "(up to 100, no slashes, no .json), e.g. rocm-7.0.8 or cu130-torch2.11"
        )
    return str(text)


def stack_of(run: Mapping) -> dict:
    m = aorta_machine(run)
    return {
        **{k: m.get(k) for k in STACK_KEYS if m.get(k) is not None},
        "python": (run.get("machine_info") or {}).get("python_version"),
        "env": m.get("env") or {},
        "hardware_queues": m.get("hardware_queues") or {},
    }


def baseline_path(directory: str | os.PathLike, run: Mapping, name: str) -> Path:
    return Path(directory) / machine_key(run) / f"{name}.json"


class StackChanged(RecordError):
    """The run's software stack differs from the runs already in the baseline it would be added to."""


class MachineChanged(RecordError):
    """The run's GPU model (or backend, or count) differs from the runs already in the baseline."""


MACHINE_KEYS = ("backend", "gpu_name", "gpu_count")


def machine_of(run: Mapping) -> dict:
    """The machine a run ran on, as each stored run of a baseline records it."""
    m = aorta_machine(run)
    return {k: m.get(k) for k in MACHINE_KEYS}


def _machine_text(machine: Mapping) -> str:
    return machine_label({"machine_info": {"aorta": dict(machine)}})


def mixed_machines(doc: Mapping | RunSet, where: str | os.PathLike) -> str | None:
    """Why the runs of baseline ``doc`` (or its ``RunSet``) are not all of one machine (naming both), or None.
    A stored run saved before runs recorded their machine counts as the document's own machine."""
    rs = read_runs(doc)
    own = machine_of(rs.doc)
    for i, entry in enumerate(rs.stored if rs.stored_at == BASELINE_RUNS_AT else ()):
        theirs = entry.get("machine") if isinstance(entry, Mapping) else None
        if not isinstance(theirs, Mapping) or "backend" not in theirs:
            continue  # no machine recorded with the run: the document's own
        if {k: theirs.get(k) for k in MACHINE_KEYS} != own:
            return (
                f"{where} mixes machines: aorta_baseline.runs[{i}] was saved on {_machine_text(theirs)}, "
                f"the baseline's latest run on {_machine_text(own)}; a baseline is one kind of machine: save it "
                "afresh (--aorta-replace-baseline) on one of them"
            )
    return None


def check_can_add(old: Mapping | RunSet, path: Path, run: Mapping) -> None:
    """Refuse to add ``run`` to the saved baseline ``old`` (at ``path``, or its ``RunSet``) when it holds runs
    of another machine, world size or software stack (``MachineChanged`` / ``StackChanged``, naming both and
    the way out)."""
    mixed = mixed_machines(old, path)
    old = read_runs(old).doc
    if mixed:
        raise MachineChanged(mixed)
    if machine_of(old) != machine_of(run):
        raise MachineChanged(
            f"{path} holds runs saved on {_machine_text(machine_of(old))}, this run is on "
            f"{_machine_text(machine_of(run))}: a baseline is one kind of machine (machines of one kind may share it); save under another name, or "
            "pass --aorta-replace-baseline to start it afresh"
        )
    ranks = world_size_change(old, run)
    if ranks:
        raise MachineChanged(
            f"{path}: {ranks}; save under another name, or pass --aorta-replace-baseline to start it afresh"
        )
    meta = old.get("aorta_baseline") or {}
    old_stack = meta.get("stack") or stack_of(old)
    stack = stack_of(run)
    if _comparable(old_stack) != _comparable(stack):
        raise StackChanged(
            f"{path} holds runs of another software stack ({_stack_change(old_stack, stack)}): a baseline "
            "is one stack; save under another name, or pass --aorta-replace-baseline to start it afresh"
        )


def save_baseline(
    run: Mapping,
    directory: str | os.PathLike,
    name: str,
    options: Mapping,
    *,
    replace: bool = False,
    settings: GateSettings | None = None,
    planned_runs: int = 3,
) -> tuple[Path, int]:
    """Add ``run`` (or each run of a multi-run document, ``aorta_runs``) to baseline ``name`` of its
    machine (or start it, where none exists or ``replace``), atomically (temp file + os.replace), with the
    noise profile of all its runs (``aorta.stats.noise.noise_profile``; ``planned_runs``: the candidate runs
    a compare is expected to bring); (path, runs the baseline now holds). A saved baseline that cannot be
    read, or whose runs are of another software stack, is left as it is and ``RecordError`` says why."""
    check_run(run, "this run")
    settings = settings or GateSettings()
    path = baseline_path(directory, run, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with locked(path):  # read-modify-write: a second saver of this name waits and adds to our result
        remove_stale_temps(path)  # a save killed mid-write left its temp file
        return _save_locked(
            run, path, name, options, replace=replace, settings=settings, planned_runs=planned_runs
        )


def _save_locked(
    run: Mapping,
    path: Path,
    name: str,
    options: Mapping,
    *,
    replace: bool,
    settings: GateSettings,
    planned_runs: int,
) -> tuple[Path, int]:
    now = datetime.now(UTC).isoformat()
    stack = stack_of(run)
    earlier: list[dict] = []
    benchmarks = list(run["benchmarks"])
    if path.exists() and not replace:
        old = load_run(path)
        check_schema(old, str(path))  # a newer aorta's baseline is never rewritten in the old schema
        held = read_runs(old)  # read once: the checks below take its runs
        check_can_add(held, path, run)
        meta = old.get("aorta_baseline") or {}
        old_stack = meta.get("stack") or stack_of(old)
        earlier = list(held.stored if held.stored_at == BASELINE_RUNS_AT else ())  # repeats dropped below
        if not earlier:  # a baseline saved before runs were kept: its own samples are its one run
            baseline_runs(held)  # validates
            earlier = [run_entry(old, str(meta.get("saved_at") or ""), old_stack)]
        benchmarks = merge_benchmarks(old["benchmarks"], benchmarks)
    added = [dict(e, stack=stack) for e in read_runs(run).entries] or [run_entry(run, now, stack)]
    runs = unique_runs([*earlier, *added])[-MAX_BASELINE_RUNS:]  # a run saved twice is kept once
    doc = {k: v for k, v in run.items() if k != CANDIDATE_RUNS_KEY}
    doc["benchmarks"] = benchmarks
    doc["aorta_baseline"] = {
        "schema": BASELINE_SCHEMA,
        "name": name,
        "machine_key": machine_key(run),
        "saved_at": now,
        "stack": stack,
        "options": dict(options),
        RUNS_KEY: runs,
        "noise_profile": noise_profile(
            baseline_runs({"aorta_baseline": {RUNS_KEY: runs}}),
            alpha=settings.alpha,
            planned_runs=planned_runs,
            max_mde=settings.max_mde,
            power=settings.power,
        ),
    }
    write_json_atomic(path, doc)
    return path, len(runs)


def _comparable(stack: Mapping) -> dict:
    """The parts of a stack that must match for runs to share a baseline (python and env included; a
    variable holding the value its launcher sets by itself, torchrun's TORCH_NCCL_ASYNC_ERROR_HANDLING=1,
    is not part of it)."""
    out = {k: v for k, v in stack.items() if v not in (None, {}, "")}
    if isinstance(out.get("env"), Mapping):
        out["env"] = without_launcher_defaults(out["env"])
        if not out["env"]:
            del out["env"]
    return out


def _stack_change(old: Mapping, new: Mapping) -> str:
    a, b = _comparable(old), _comparable(new)
    diffs = [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return ", ".join(diffs)


def looks_like_path(ref: str) -> bool:
    return ref.endswith(".json") or os.sep in ref or "/" in ref


def resolve(ref: str, directory: str | os.PathLike, key: str) -> Path:
    """``--aorta-compare NAME|PATH`` -> a file: a path as given; a name under this machine's key first,
    then under any other machine's key (the hardware check decides whether that one may be used)."""
    if looks_like_path(ref) or Path(ref).is_file():
        return Path(ref)
    directory = Path(directory)
    own = directory / key / f"{ref}.json"
    if own.exists():
        return own
    others = sorted(directory.glob(f"*/{ref}.json"))
    if others:
        return others[0]
    known = sorted(f"{p.parent.name}/{p.stem}" for p in directory.glob("*/*.json"))
    listing = ", ".join(known) if known else "none"
    raise BaselineError(
        f"--aorta-compare={ref}: no baseline named {ref!r} in {directory} "
        f"(looked for {own}); saved baselines: {listing}"
    )


def is_lean(bench: Mapping) -> bool:
    """A benchmark entry of a gate's lean repeat run (timed rounds only: aorta/hw_queue/runner.py LEAN_RUN)."""
    return "lean_run" in (bench.get("extra_info") or {})


def merge_benchmarks(older: Sequence[Mapping], newer: Sequence[Mapping]) -> list[Mapping]:
    """One entry per benchmark, the newer run's, except that a lean repeat run's entry never replaces a full
    run's: the document keeps every figure's kind (the kernel pass's, the labelled pass's) and the runs keep
    the samples. Order: the newer run's benchmarks, then those only the older had."""
    old = {b["fullname"]: b for b in older}
    out = [
        old[b["fullname"]] if is_lean(b) and b["fullname"] in old and not is_lean(old[b["fullname"]]) else b
        for b in newer
    ]
    mine = {b["fullname"] for b in newer}
    return out + [b for b in older if b["fullname"] not in mine]


def combine_runs(
    docs: Sequence[Mapping | RunSet], ids: Sequence[str], *, check: Mapping | None = None
) -> dict:
    """Several fresh-process runs of one command as one candidate document: the last run's document,
    every benchmark any run holds (the latest's entry), and each run's samples in ``aorta_runs`` (a
    document that already holds several runs, a baseline or an earlier combination, gives each of them).
    ``check``: the check run's document (``aorta.gate.runs.blocks``): its benchmarks' entries (output checks,
    kernel and labelled passes) join the document, its samples do not (it is not a sample). A run may come as
    its ``RunSet`` (``aorta.record.run_set.read_runs``): its runs are not read again."""
    sets = [read_runs(d) for d in docs]
    if not docs or len(docs) != len(ids):
        raise ValueError(f"combine_runs needs one id per run, got {len(docs)} runs and {len(ids)} ids")
    now = datetime.now(UTC).isoformat()
    benchmarks: list[Mapping] = list(check.get("benchmarks", ())) if check is not None else []
    for rs in sets:
        benchmarks = merge_benchmarks(benchmarks, rs.doc.get("benchmarks", ()))
    doc = dict(sets[-1].doc)
    doc["benchmarks"] = benchmarks
    entries: list[dict] = []
    for rs, i in zip(sets, ids):
        held = rs.entries
        if held:
            entries += [dict(e, id=f"{i}/{e.get('id') or k + 1}") for k, e in enumerate(held)]
        else:
            entries.append(run_entry(rs.doc, now, stack_of(rs.doc), run_id=i))
    doc.pop("aorta_baseline", None)
    doc[CANDIDATE_RUNS_KEY] = entries
    return doc
