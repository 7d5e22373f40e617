"""Refused before any benchmark runs: a baseline that cannot be used (a bad file, another GPU model or
backend, scheduling settings that differ), a gate that would time nothing, a save that would be refused, output
places that cannot be written or are the run's own inputs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aorta.gate.baselines import baseline as bl
from aorta.gate.comparison.compare import machine_label, mismatch_reason
from aorta.gate.session.options import GateOptions, rank
from aorta.gate.session.state import GateState
from aorta.record.output_paths import OutputPathError, check_appendable, check_output_dir, check_output_file
from aorta.record.run_set import read_runs


def current_machine(config: pytest.Config) -> dict:
    """This run's machine as a run records it in machine_info["aorta"] (backend, GPU model and count)."""
    props = config.hook.pytest_aorta_session_device(config=config).properties()
    gpu = props.backend != "cpu"
    return {
        "machine_info": {
            "aorta": {
                "backend": props.backend,
                "gpu_name": props.name if gpu else None,
                "gpu_count": props.device_count if gpu else 0,
            }
        }
    }


def refuse_runs_without_benchmarks(config: pytest.Config, opts: GateOptions) -> None:
    """Under xdist (``-n N``), ``--benchmark-disable`` or ``--benchmark-skip`` no benchmark is timed: a gate
    there would compare or save nothing, so it is refused now rather than after the run."""
    if not (opts.compare_ref or opts.save_name) or hasattr(config, "workerinput"):
        return
    gate = "--aorta-compare" if opts.compare_ref else "--aorta-save-baseline"
    workers = config.getoption("numprocesses", None) if config.pluginmanager.hasplugin("xdist") else None
    if workers:  # None or 0: no workers; an int or "auto"/"logical": workers, pytest-benchmark disabled
        raise pytest.UsageError(
            f"-n {workers} with {gate}: pytest-xdist disables pytest-benchmark, so no "
            "benchmark would be timed and the gate would judge nothing; run the gate "
            "without -n (or with -n 0)"
        )
    for flag in ("benchmark_disable", "benchmark_skip"):
        if config.getoption(flag, False):
            raise pytest.UsageError(
                f"--{flag.replace('_', '-')} with {gate}: no benchmark would be timed and "
                f"the gate would judge nothing; leave out one of the two"
            )


def check_output_places(opts: GateOptions) -> None:
    """Every file the gate will write can be written: refused now, not after the benchmarks ran."""
    try:
        if opts.orchestrates or opts.confirm:  # issue 38, case 15: refused now, not INTERNALERROR later
            check_output_dir("--aorta-runs-dir (default .aorta/runs)", opts.runs_root)
        if opts.save_name:
            check_output_dir("--aorta-baseline-dir", opts.baseline_dir)
        if opts.compare_ref and rank() == 0:
            check_output_file("--aorta-verdict-json", opts.verdict_json)
            if opts.markdown:
                check_output_file("--aorta-markdown", opts.markdown)
            if os.environ.get("GITHUB_STEP_SUMMARY"):
                check_appendable("$GITHUB_STEP_SUMMARY", os.environ["GITHUB_STEP_SUMMARY"])
    except OutputPathError as exc:
        raise pytest.UsageError(str(exc)) from None


def check_outputs_are_not_inputs(
    config: pytest.Config, opts: GateOptions, state: GateState, saved_to: Path | None
) -> None:
    """No output of this run written over the baseline it reads or saves to (issue 38, case 1)."""
    from aorta.gate.outputs.input_outputs import check_outputs_are_not_inputs
    from aorta.record.benchmark_json_option import target_path

    outputs = {
        "--benchmark-json": target_path(config.getoption("benchmark_json", None)),
        "--aorta-verdict-json": opts.verdict_json if opts.compare_ref else None,
        "--aorta-markdown": opts.markdown,
        "$GITHUB_STEP_SUMMARY": os.environ.get("GITHUB_STEP_SUMMARY") if opts.compare_ref else None,
        "--aorta-history": _history_file(config.getoption("aorta_history", None)),
    }
    try:
        check_outputs_are_not_inputs(outputs, compared=state.baseline_path, saved_to=saved_to)
    except OutputPathError as exc:
        raise pytest.UsageError(str(exc)) from None


def _history_file(history: str | None) -> str | None:
    """The history database's file, where ``--aorta-history`` names one (not a server's URL or conninfo)."""
    return history if history and "://" not in history and "=" not in history else None


def check_save_now(config: pytest.Config, opts: GateOptions) -> Path | None:
    """A save that would be refused at the end of the run (machine folder a file, a baseline that cannot
    be read, of another machine or stack) is refused now: exit 4 or 13, before any benchmark runs."""
    import platform

    from aorta.environment.machine import machine_info
    from aorta.exit_codes import EXIT_PYTEST_USAGE
    from aorta.gate.baselines.save_check import SaveRefused, check_save

    if not opts.save_name:
        return None
    current = {
        "machine_info": {
            "aorta": machine_info(config.hook.pytest_aorta_session_device(config=config)),
            "python_version": platform.python_version(),
        }
    }
    try:
        return check_save(opts.baseline_dir, opts.save_name, current, replace=opts.replace_baseline)
    except SaveRefused as exc:
        if exc.exit_code == EXIT_PYTEST_USAGE:
            raise pytest.UsageError(str(exc)) from None
        pytest.exit(str(exc), returncode=exc.exit_code)


def load_baseline(config: pytest.Config, ref_name: str, opts: GateOptions, state: GateState) -> None:
    """Find and read the baseline ``ref_name`` (``--aorta-compare``), and refuse one from another GPU model or
    backend, before any run."""
    allow = opts.settings.allow_mismatch
    current = None if allow and bl.looks_like_path(ref_name) else current_machine(config)
    try:
        key = "" if current is None else bl.machine_key(current)
        if ref_name.startswith("history:"):  # the last runs of a stack in the run history (aorta/history)
            path, baseline = Path(ref_name), history_baseline(config, ref_name, key)
        else:
            path = bl.resolve(ref_name, opts.baseline_dir, key)
            baseline = bl.load_run(path)
        # read once: this session's compares take these runs (GateState.baseline_runs)
        held = read_runs(baseline)
        bl.baseline_runs(held, source=str(path))  # every stored run is checked before any benchmark runs
    except ValueError as exc:  # a BaselineError, or the history's errors (HistoryError, NoHistoryBaseline)
        raise pytest.UsageError(f"--aorta-compare: {exc}") from None
    state.baseline_path, state.baseline, state.baseline_set = path, baseline, held
    state.lines += [f"aorta gate: note: {n}" for n in bl.repeated_run_notes(held, str(path))]
    if allow or current is None:  # current is None only where mismatches are allowed
        return
    reason = mismatch_reason(baseline, current)
    if reason:
        raise pytest.UsageError(
            f"--aorta-compare: {path} was saved on {machine_label(baseline)}, this run is on "
            f"{machine_label(current)} ({reason}); a baseline from another GPU model or backend is refused: "
            "compare with one saved on this machine, or pass --aorta-allow-mismatch to compare anyway"
        )
    mixed = bl.mixed_machines(held, path)
    if mixed:
        raise pytest.UsageError(f"--aorta-compare: {mixed}")


def history_baseline(config: pytest.Config, ref_name: str, key: str) -> dict:
    """The run history's runs of a stack as a baseline, asked of its plugin (aorta/hookspec.py)."""
    doc = config.hook.pytest_aorta_history_baseline(config=config, ref=ref_name, machine_model=key)
    if doc is None:
        raise ValueError(f"{ref_name}: the run history's plugin is not active (-p no:aorta.history.plugin?)")
    return doc


def refuse_settings_diff(config: pytest.Config, state: GateState) -> None:
    """Scheduling env vars that differ from the baseline's and were not named as intended: exit 14 now,
    before any benchmark runs (versions may differ: comparing stacks is the point)."""
    from aorta.device import Device
    from aorta.environment.fingerprint import parse_allowed
    from aorta.exit_codes import EXIT_SETTINGS_DIFFER
    from aorta.gate.baselines.settings_check import settings_refusal
    from aorta.gate.comparison.compare import aorta_machine

    refusal = settings_refusal(
        aorta_machine(state.baseline or {}),
        {"env": Device.scheduling_env()},
        parse_allowed(config.getoption("aorta_allow_env_diff")),
        baseline=f"the baseline {state.baseline_path}",
        candidate="this run",
        allow_option="--aorta-allow-env-diff",
    )
    if refusal:
        pytest.exit(f"--aorta-compare: {refusal}", returncode=EXIT_SETTINGS_DIFFER)


def prepare(config: pytest.Config, opts: GateOptions) -> GateState:
    """Everything refused before any benchmark runs, in order (the inputs first: a refused run creates no
    folder); the state the gate starts with (its baseline read)."""
    refuse_runs_without_benchmarks(config, opts)
    state = GateState()
    if opts.compare_ref:
        load_baseline(config, opts.compare_ref, opts, state)
        refuse_settings_diff(config, state)
    check_output_places(opts)  # after the inputs: a refused run creates no folder
    check_outputs_are_not_inputs(config, opts, state, check_save_now(config, opts))
    return state
