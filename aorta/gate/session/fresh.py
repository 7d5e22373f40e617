"""The runs in fresh processes: N of them, or ``auto`` (a check run, then lean runs until every figure is
decided or the budget ends), the confirmation runs of suspects, and the candidate document they make together."""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

import pytest

from aorta.gate.baselines import baseline as bl
from aorta.gate.comparison.compare import Comparison, compare_runs
from aorta.gate.runs import blocks, fresh_runs, run_wall
from aorta.gate.session import auto_runs, check_pass
from aorta.gate.session.options import GateOptions, rank
from aorta.gate.session.state import CODE_HASH, GATE_OPTIONS, GATE_STATE, GateState, baseline_label, say_to
from aorta.gate.stats import sequential


# ------------------------------------------------------------------------------------------ the run
def bench_dicts(config: pytest.Config, start: int = 0) -> list[dict]:
    bs = getattr(config, "_benchmarksession", None)
    if bs is None:
        return []
    return [b.as_dict(include_data=True) for b in bs.benchmarks[start:] if not b.has_error]


def build_run(config: pytest.Config) -> dict | None:
    """This run as pytest-benchmark writes it (through its own hooks, raw data included)."""
    from aorta.record.benchmark_json import session_document

    return session_document(config)


def run_in_fresh_processes(session: pytest.Session) -> bool | None:
    """With ``--aorta-runs N`` (N > 1): the same command in N fresh processes instead of the benchmarks here."""
    config = session.config
    opts, state = config.stash.get(GATE_OPTIONS, None), config.stash.get(GATE_STATE, None)
    if opts is None or state is None or not opts.orchestrates or session.config.option.collectonly:
        return None
    if not session.items:
        return None  # pytest says "no tests ran" itself
    bs = getattr(config, "_benchmarksession", None)
    if bs is not None and getattr(bs, "json", None):
        state.json_target = bs.json  # written here, from the children's runs (write_combined)
        bs.json = None  # pytest-benchmark would only say it has nothing to save
    state.runs_dir = fresh_runs.runs_dir(opts.runs_root)
    if opts.auto or opts.save_name or opts.compare_ref:
        # a gate's runs, N of them or auto, are one kind of sample: a check run, then lean runs on the
        # baseline's blocks, so that a fixed-N baseline and an auto compare pair, and back (issue 55, item 6)
        state.auto = run_auto_gate(config, opts, state)
        state.children = state.auto.children
        return True
    state.children = fresh_runs.run_children(
        config.invocation_params.args,
        cwd=config.invocation_params.dir,
        out_dir=state.runs_dir,
        count=opts.runs,
        say=say_to(config),
    )
    return True


def run_auto_gate(config: pytest.Config, opts: GateOptions, state: GateState) -> auto_runs.AutoOutcome:
    """A gate's runs: a check run, then lean runs: ``--aorta-runs N`` of them, or with ``auto`` until every
    figure is decided (comparing) or the budget ends (saving). Comparing with a baseline whose runs name their blocks, run k takes the seed of the
    baseline's k-th sample block (``block_seed``) and every benchmark, so each run has a partner
    (``aorta.gate.runs.blocks``)."""
    assert state.runs_dir is not None
    out_dir, say = state.runs_dir, say_to(config)
    only_files: dict[tuple[str, ...], Path | None] = {}
    held = state.baseline_runs()
    entries = list(held.entries) if held is not None else []
    seeds = blocks.paired_seeds(entries)

    def start(k: int, only, lean: bool) -> fresh_runs.ChildRun:
        key = tuple(only) if only is not None else ()
        if key not in only_files:
            only_files[key] = fresh_runs.write_only_file(out_dir, f"look{len(only_files)}", only)
        label = "check run" if k == 0 else f"run {k}/{'auto' if opts.auto else opts.runs}"
        return fresh_runs.run_child(
            config.invocation_params.args,
            cwd=config.invocation_params.dir,
            out_dir=out_dir,
            name="check" if k == 0 else f"run{k}",
            label=label + (f" ({len(only)} undecided benchmark(s))" if only is not None else ""),
            seed=0 if k == 0 else block_seed(seeds, k),
            only_file=only_files[key],
            lean=lean,
            say=say,
        )

    def judge(full, restricted) -> Comparison:
        comp = auto_comparison(opts, state, full, restricted)
        assert comp is not None
        return comp

    key = check_pass.command_key(
        [
            *fresh_runs.without_parent_options(config.invocation_params.args),
            fresh_runs.child_addopts(os.environ.get("PYTEST_ADDOPTS", "")),
        ],
        sys.executable,
    )
    code = config.stash.get(CODE_HASH, "")
    prior = (
        check_pass.find(check_pass.load(opts.runs_root), key, code)
        if opts.check_run == "auto" and code
        else None
    )
    if prior is not None and not opts.auto:
        say(f"aorta gate: {check_pass.skipped_line(prior)}")
    outcome = auto_runs.run_auto(
        start,
        sequential.Budget(opts.budget_s) if opts.auto else sequential.Budget(math.inf, max_runs=opts.runs),
        judge=judge if state.baseline is not None and opts.auto else None,
        restrict=not seeds,
        say=(lambda line: say(f"aorta gate: {line}")) if opts.auto else None,  # a fixed N plans nothing
        prior=prior,
        vouches=lambda run: check_pass.verify(prior, fresh_runs.read_doc(run.json_path)) if prior else None,
    )
    for line in outcome.looks:
        say(f"aorta gate: {line}")
    keep_check_record(opts.runs_root, key, outcome.check, say)
    return outcome


def keep_check_record(root: Path, key: str, check: fresh_runs.ChildRun | None, say) -> None:
    """A check run that passed leaves its record (``aorta.gate.session.check_pass``); one that cannot be
    written costs the next gate a check run, not this gate its verdict."""
    if check is None or not check.ok:
        return
    doc = fresh_runs.read_doc(check.json_path)
    why = check_pass.keep(root, key, doc, check.wall_s, check.lean_estimate_s, str(check.log_path))
    if why is not None:
        say(f"aorta gate: the check run's record was not kept ({why}): the next gate runs its check run")


def block_seed(seeds: list[int], k: int) -> int:
    """Run k's order seed (k >= 1): the baseline's k-th sample block's, and past its last block, its blocks
    again in turn (replicates: ``aorta.gate.runs.blocks.pair`` averages a block's runs before pairing, so a
    compare whose budget holds more runs than the baseline has blocks spends them, issue 55); k itself where
    the baseline names no blocks."""
    return seeds[(k - 1) % len(seeds)] if seeds else k


def auto_docs(outcome_full, restricted, check) -> tuple[list[dict], list[str], dict | None]:
    docs = [bl.load_run(c.json_path) for c in [*outcome_full, *restricted]]
    ids = [f"run{k + 1}" for k in range(len(docs))]
    lead = bl.load_run(check.json_path) if check is not None and check not in outcome_full else None
    return docs, ids, lead


def auto_comparison(opts: GateOptions, state: GateState, full, restricted) -> Comparison | None:
    """The auto gate's comparison of its sample runs so far (restricted ones included, each with its own
    benchmarks); the check run's entries join the document, not its samples."""
    if state.baseline is None or not (full or restricted):
        return None
    check = state.auto.check if state.auto is not None else None
    docs, ids, lead = auto_docs(full, restricted, check)
    run = bl.combine_runs(docs, ids, check=lead)
    return compare_runs(
        state.baseline_runs() or state.baseline,
        run,
        opts.settings,
        ref_label=baseline_label(state.baseline, state.baseline_path),
        cand_label=f"this run ({len(ids)} fresh processes, auto)",
    )


def candidate(config: pytest.Config, opts: GateOptions, state: GateState) -> dict | None:
    """The run to judge and save: this process's own, or its fresh-process runs as one document."""
    if not opts.orchestrates:
        return build_run(config)
    if not state.children or not all(c.ok for c in state.children):
        return None
    if state.auto is not None:  # every sample run, restricted ones included; the check run's entries
        docs, ids, lead = auto_docs(state.auto.full, state.auto.restricted, state.auto.check)
        if not docs:
            return None
        # the looks its verdicts were judged at: `aorta compare` of this document judges at the same level
        return {**bl.combine_runs(docs, ids, check=lead), blocks.LOOKS_KEY: {"looks": opts.settings.looks}}
    docs = [bl.load_run(c.json_path) for c in state.children]
    return bl.combine_runs(docs, [f"run{k + 1}" for k in range(len(docs))])


def confirm_suspects(
    config: pytest.Config, opts: GateOptions, state: GateState, comp: Comparison
) -> list[dict]:
    """Up to ``opts.confirm`` more fresh-process runs of the suspects; their documents (none if none ran)."""
    suspects = comp.suspects() if opts.confirm and rank() == 0 else []
    if not suspects:
        return []
    state.runs_dir = state.runs_dir or fresh_runs.runs_dir(opts.runs_root)
    say_to(config)(
        f"aorta gate: {len(suspects)} suspected regression(s): {opts.confirm} confirmation run(s) of them"
    )
    done = fresh_runs.run_children(
        config.invocation_params.args,
        cwd=config.invocation_params.dir,
        out_dir=state.runs_dir,
        count=opts.confirm,
        kind="confirm",
        first_seed=opts.runs + 1,
        only=suspects,
        lean=True,  # measured as the samples they join (a full run reads otherwise: issue 45)
        say=say_to(config),
    )
    state.children += done
    return [bl.load_run(c.json_path) for c in done if c.ok]


def wall_report(state: GateState) -> run_wall.WallReport | None:
    """Where this gate's wall went, by run kind (None where it ran no fresh runs)."""
    if not state.children:
        return None
    check = state.auto.check if state.auto is not None else None
    runs = []
    for c in state.children:
        if c is check:
            kind = "check"
        elif c.label.startswith("confirm"):
            kind = "confirm"
        else:
            kind = "lean" if c.lean else "full"
        runs.append(fresh_runs.wall_of(c, kind))
    return run_wall.report(runs, time.monotonic() - state.started)


def time_line(children: list[fresh_runs.ChildRun]) -> str:
    """Where the gate's wall time went, phase by phase: its fresh runs, then its confirmation runs."""
    parts = []
    for kind in ("run", "confirm"):
        mine = [c for c in children if c.label.startswith(kind + " ")]
        if mine:
            each = ", ".join(f"{c.wall_s:.0f}" for c in mine)
            parts.append(f"{len(mine)} {kind} process(es) {sum(c.wall_s for c in mine):.0f} s ({each})")
    return "aorta gate: time: " + "; ".join(parts)


def write_combined(config: pytest.Config, run: dict, state: GateState) -> None:
    """``--benchmark-json PATH`` of a run in fresh processes: their runs as one document (this process ran
    no benchmark, so pytest-benchmark writes nothing there)."""
    from aorta.record import write_json_atomic
    from aorta.record.benchmark_json_option import target_path

    target = target_path(state.json_target)  # the whole path (a Path's .name is only its basename)
    if target is not None:
        write_json_atomic(target, run)
        state.lines.append(
            f"aorta gate: the {len(run.get('aorta_runs') or [])} runs as one document: {target}"
        )
