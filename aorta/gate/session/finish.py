"""The end of a gate: the candidate judged against the baseline (confirmed where a regression is suspected),
the verdicts written, the run saved as a baseline, the exit code."""

from __future__ import annotations

import os

import pytest

from aorta.exit_codes import EXIT_CLEAN, EXIT_NOT_SAVED, EXIT_NOTHING_COMPARED
from aorta.gate.baselines import baseline as bl
from aorta.gate.baselines.save_line import one_run_hint
from aorta.gate.comparison.compare import NOTHING_COMPARED, compare_runs
from aorta.gate.outputs.outputs import write_outputs
from aorta.gate.outputs.render import overall_exit, terminal_lines
from aorta.gate.runs import blocks, empty_run
from aorta.gate.session import auto_runs
from aorta.gate.session.fresh import candidate, confirm_suspects, time_line, wall_report, write_combined
from aorta.gate.session.options import DEFAULT_GATE_RUNS, GateOptions, rank
from aorta.gate.session.state import GATE_OPTIONS, GATE_STATE, GateState, baseline_label
from aorta.processes import child_process
from aorta.record.run_set import read_runs


def finish_gate(session: pytest.Session, exitstatus: int) -> None:
    """The candidate judged against the baseline (suspects confirmed by more fresh runs), the verdict files
    written, the run saved; ``session.exitstatus`` set to the gate's code where pytest's own is 0."""
    config = session.config
    opts, state = config.stash.get(GATE_OPTIONS, None), config.stash.get(GATE_STATE, None)
    if opts is None or state is None:
        return
    if not (opts.save_name or opts.compare_ref):
        finish_plain_runs(session, int(exitstatus), opts, state)  # --aorta-runs N without a gate
        return
    failed = next((c for c in state.children if not c.ok), None)
    run = None if failed else candidate(config, opts, state)
    if failed is not None and empty_run.child_timed_nothing(failed.exit_code, failed.json_path.is_file()):
        state.lines.append(
            f"aorta gate: {NOTHING_COMPARED}: {failed.label} timed no benchmark (every selected one skipped?), "
            f"nothing saved; its output: {failed.log_path}"
        )
        if int(exitstatus) == 0:
            session.exitstatus = empty_run.nothing_code(bool(opts.compare_ref))
        return
    if failed is not None:
        state.lines.append(
            f"aorta gate: {failed.label} failed ({failed.ended}): nothing compared or saved; "
            f"its output: {failed.log_path}"
        )
        if int(exitstatus) == 0:
            session.exitstatus = failed.exit_code or int(pytest.ExitCode.TESTS_FAILED)
        return
    if run is None:
        bs = getattr(config, "_benchmarksession", None)
        why = empty_run.why_no_run(int(exitstatus), bool(getattr(bs, "disabled", False)))
        state.lines.append(f"aorta gate: {NOTHING_COMPARED}: {why}, nothing saved")
        if int(exitstatus) == 0:
            session.exitstatus = EXIT_NOTHING_COMPARED if opts.compare_ref else EXIT_NOT_SAVED
        return
    if not run["benchmarks"]:
        state.lines.append("aorta gate: no benchmark results in this run")
    if opts.orchestrates:
        write_combined(config, run, state)
    code = EXIT_CLEAN
    baseline = state.baseline
    if baseline is not None:
        label = f"this run ({opts.runs} fresh processes)" if opts.orchestrates else "this run"
        ref_label = baseline_label(baseline, state.baseline_path)
        held, judged = state.baseline_runs() or baseline, read_runs(run)  # each read once, for every compare
        comp = compare_runs(held, judged, opts.settings, ref_label=ref_label, cand_label=label)
        if state.auto is not None and state.auto.comparison is not None:  # auto: judged at its looks
            comp = state.auto.comparison
        elif int(exitstatus) == 0 and not comp.refused:
            extra = confirm_suspects(config, opts, state, comp)
            failed = next((c for c in state.children if not c.ok), None)
            if failed is not None:
                state.lines.append(
                    f"aorta gate: {failed.label} failed ({failed.ended}): no verdict; its output: "
                    f"{failed.log_path}"
                )
                session.exitstatus = failed.exit_code or int(pytest.ExitCode.TESTS_FAILED)
                return
            if extra:
                comp = compare_runs(
                    held, judged, opts.settings, ref_label=ref_label, cand_label=label, extra_runs=extra
                )
        state.comparison = comp
        code = overall_exit([comp])
        state.lines += terminal_lines(comp, verbose=config.getoption("verbose") > 0)
        walls = wall_report(state)
        if rank() == 0:
            try:
                state.lines += write_outputs(
                    [comp],
                    code,
                    verdict_json=opts.verdict_json,
                    markdown_path=opts.markdown,
                    budget=walls.as_dict() if walls is not None else None,
                )
            except OSError as exc:
                state.lines.append(f"aorta gate: could not write the verdict files: {exc}")
                code = code or int(pytest.ExitCode.USAGE_ERROR)
    if state.auto is not None:
        state.lines.append(auto_runs.time_line(state.auto, "auto" if opts.auto else f"{opts.runs} runs"))
    elif state.children:
        state.lines.append(time_line(state.children))
    walls = wall_report(state)
    state.lines += walls.lines("aorta gate") if walls is not None else []
    if opts.save_name:
        line, saved = save_run(run, opts.save_name, opts, config, int(exitstatus), code)
        state.lines.append(line)
        code = code or (EXIT_CLEAN if saved else EXIT_NOT_SAVED)
    if int(exitstatus) == 0 and code:
        session.exitstatus = code  # pytest's own codes (failed tests, usage) take precedence


def finish_plain_runs(session: pytest.Session, exitstatus: int, opts: GateOptions, state: GateState) -> None:
    """``--aorta-runs N`` without a gate: a failed run's exit code, else the runs as one document at
    ``--benchmark-json`` (issue 38, case 2)."""
    if not opts.orchestrates or not state.children:
        return
    failed = next((c for c in state.children if not c.ok), None)
    if failed is not None:
        state.lines.append(
            f"aorta gate: {failed.label} failed ({failed.ended}); its output: {failed.log_path}"
        )
        if exitstatus == 0:
            session.exitstatus = failed.exit_code or int(pytest.ExitCode.TESTS_FAILED)
        return
    run = candidate(session.config, opts, state)
    if run is not None:
        write_combined(session.config, run, state)


def save_run(
    run: dict, save_name: str, opts: GateOptions, config: pytest.Config, exitstatus: int, gate_code: int
) -> tuple[str, bool]:
    """Save the run as a baseline where nothing went wrong; (the line to show, whether nothing failed)."""
    if exitstatus != 0:
        return (
            f"baseline {save_name!r} NOT saved: pytest exit status {exitstatus} (failed or interrupted "
            "tests); the saved one, if any, is unchanged"
        ), False
    if gate_code:
        return (
            f"baseline {save_name!r} NOT saved: the comparison in this run exited {gate_code}; "
            "the saved one, if any, is unchanged"
        ), False
    if rank() != 0:
        return f"baseline {save_name!r}: written by rank 0 only", True
    resolved = {
        **config.hook.pytest_aorta_options(config=config).__dict__,
        "min_effect": opts.settings.min_effect,
        "alpha": opts.settings.alpha,
        "thresholds": [t.__dict__ for t in opts.settings.thresholds],
    }
    written: list[str] = []  # the stop line says whether the baseline changed (issue 65)

    def outcome() -> str:
        if written:
            return f"baseline {save_name!r} was saved before the stop: {written[0]} changed"
        return f"baseline {save_name!r} NOT saved; the saved one, if any, is unchanged"

    try:
        with child_process.held_stop(outcome):
            path, n_runs = bl.save_baseline(
                run,
                opts.baseline_dir,
                save_name,
                resolved,
                replace=opts.replace_baseline,
                settings=opts.settings,
                planned_runs=DEFAULT_GATE_RUNS,
            )
            written.append(str(path))
    except (OSError, bl.BaselineError) as exc:
        return (
            f"baseline {save_name!r} NOT saved: {exc}; the saved one, if any, is unchanged "
            f"-> exit {EXIT_NOT_SAVED}"
        ), False
    runs = (
        one_run_hint(int(os.environ.get("WORLD_SIZE", "1") or 1) > 1)  # no --aorta-runs under torchrun
        if n_runs == 1
        else f"{n_runs} runs"
    )
    saved = bl.load_run(path)
    profile = (saved.get("aorta_baseline") or {}).get("noise_profile") or {}
    total = profile.get("gateable", 0) + profile.get("not_gateable", 0)
    noise = (
        f"; noise profile: {profile.get('gateable', 0)} of {total} figures gateable (MDE at most "
        f"{opts.settings.max_mde * 100:.3g}% with {DEFAULT_GATE_RUNS} candidate runs)"
    )
    n_blocks = len(blocks.paired_seeds(read_runs(saved).entries))
    pairs = (
        f"; {n_blocks} lean blocks a later compare pairs with (its runs past {n_blocks} repeat them)"
        if n_blocks
        else ""
    )
    return (
        f"baseline {save_name!r} saved: {path} ({len(run['benchmarks'])} benchmarks, {runs}){noise}{pairs}",
        True,
    )
