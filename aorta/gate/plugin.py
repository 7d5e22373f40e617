"""The regression gate inside pytest: save baselines, compare with one, confirm, exit codes.

Hooks, in the order they run:

* ``pytest_configure``: options parsed once into ``GateOptions``; the baseline to compare with is found
  and validated now, before any benchmark runs (a bad one, or one from another GPU model or backend, is
  a usage error naming the file); so are the places the gate writes to, and gates under xdist (``-n``).
* ``pytest_runtestloop`` (wrapper): after the main loop, with ``--aorta-confirm N``, benchmarks with a
  SLOWER verdict are run N more times; their samples are kept apart from the run's own results: during a
  re-run the benchmark fixtures hand their record to the gate (``aorta.plugin.hand_to_gate``) and record
  nothing into pytest-benchmark or the results table.
* ``pytest_sessionfinish``: the run's pytest-benchmark JSON is built through pytest-benchmark's own
  hooks (with raw data, whether or not ``--benchmark-json`` was given), compared, saved; the exit code
  becomes 10 (regression), 11 (different hardware), 12 (nothing compared) or 13 (baseline not saved)
  only where pytest's own status is 0.
* ``pytest_terminal_summary``: the header and the verdict table; no traceback.
"""

from __future__ import annotations

import argparse
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aorta.gate import baseline as bl
from aorta.gate.compare import (
    EXIT_CLEAN,
    EXIT_NOT_SAVED,
    EXIT_NOTHING_COMPARED,
    NOTHING_COMPARED,
    Comparison,
    GateSettings,
    benchmark_verdicts,
    compare_runs,
    confirm,
    machine_label,
    mismatch_reason,
    parse_alpha,
    parse_ratio,
    parse_threshold,
)
from aorta.gate.outputs import (
    DEFAULT_VERDICT_JSON,
    write_outputs,
)
from aorta.gate.render import overall_exit, terminal_lines
from aorta.gate.verdict import SLOWER
from aorta.output_paths import OutputPathError, check_appendable, check_output_dir, check_output_file

MAX_CONFIRM = 20


def _argtype(fn, option: str):
    def parse(text: str):
        try:
            return fn(text)
        except ValueError as exc:
            msg = str(exc)
            raise argparse.ArgumentTypeError(
                msg if msg.startswith("--") else f"{option}={text!r}: {msg}"
            ) from None

    parse.__name__ = f"parse_{option.strip('-').replace('-', '_')}"
    return parse


def parse_confirm(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise ValueError(
            f"--aorta-confirm={text!r}: give a whole number of re-runs, 0 to {MAX_CONFIRM}"
        ) from None
    if not 0 <= n <= MAX_CONFIRM:
        raise ValueError(f"--aorta-confirm={text!r}: out of range; allowed 0 to {MAX_CONFIRM}")
    return n


def parse_test_slowdown(text: str) -> float:
    value = parse_ratio("--aorta-test-slowdown", text)
    if value <= 0:
        raise ValueError(f"--aorta-test-slowdown={text!r}: must be above 0 (leave it out for a normal run)")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("aorta-gate", "aorta regression gate (baselines, verdicts, exit codes)")
    g.addoption(
        "--aorta-save-baseline",
        metavar="NAME",
        type=_argtype(bl.parse_baseline_name, "--aorta-save-baseline"),
        help="save this run as baseline NAME for this machine (GPU model and count)",
    )
    g.addoption(
        "--aorta-replace-baseline",
        action="store_true",
        help="with --aorta-save-baseline: start baseline NAME afresh instead of adding this run to its runs",
    )
    g.addoption(
        "--aorta-compare",
        metavar="NAME|PATH",
        help="compare this run with a saved baseline (a name for this machine, or a JSON file)",
    )
    g.addoption(
        "--aorta-baseline-dir",
        metavar="DIR",
        help="where baselines live (default: .aorta/baselines in the rootdir)",
    )
    g.addoption(
        "--aorta-allow-mismatch",
        action="store_true",
        help="compare even if the baseline is from another GPU model or backend",
    )
    g.addoption(
        "--aorta-allow-env-diff",
        action="append",
        default=[],
        metavar="NAME[,NAME]",
        help="scheduling env vars (names or globs, '*' for all) that may differ from the baseline's; "
        "any other difference refuses the comparison with exit 14",
    )
    g.addoption(
        "--aorta-confirm",
        metavar="N",
        type=_argtype(parse_confirm, "--aorta-confirm"),
        default=0,
        help="re-run SLOWER benchmarks N more times; SLOWER stands only if every re-run is SLOWER",
    )
    g.addoption(
        "--aorta-min-effect",
        metavar="RATIO",
        type=_argtype(lambda t: parse_ratio("--aorta-min-effect", t), "--aorta-min-effect"),
        default=None,
        help="smallest relative change that counts (default 0.03 = 3%%)",
    )
    g.addoption(
        "--aorta-threshold",
        metavar="[BENCH:]METRIC=RATIO",
        action="append",
        default=[],
        type=_argtype(parse_threshold, "--aorta-threshold"),
        help="minimum effect for one metric and/or benchmark glob, e.g. tflops=5%% or "
        "*tiny_kernel*:device_ms=0.1 (repeatable; later wins; also ini aorta_thresholds)",
    )
    g.addoption(
        "--aorta-alpha",
        metavar="P",
        type=_argtype(parse_alpha, "--aorta-alpha"),
        default=None,
        help="significance level of the Mann-Whitney U test (default 0.01)",
    )
    g.addoption(
        "--aorta-verdict-json",
        metavar="PATH",
        help=f"verdict file (default {DEFAULT_VERDICT_JSON} in the rootdir)",
    )
    g.addoption(
        "--aorta-markdown",
        metavar="PATH",
        help="markdown summary for CI (also appended to $GITHUB_STEP_SUMMARY when set)",
    )
    g.addoption(
        "--aorta-test-slowdown",
        metavar="FRACTION",
        default=0.0,
        type=_argtype(parse_test_slowdown, "--aorta-test-slowdown"),
        help="TESTING THE GATE ONLY: add calibrated real device work so each iteration is about "
        "FRACTION slower (e.g. 0.05); recorded in extra_info; such a run cannot be a baseline",
    )
    parser.addini(
        "aorta_thresholds",
        "per-metric / per-benchmark minimum effects, one [BENCH:]METRIC=RATIO a line",
        type="linelist",
        default=[],
    )


@dataclass(frozen=True, kw_only=True)
class GateOptions:
    save_name: str | None
    replace_baseline: bool
    compare_ref: str | None
    baseline_dir: Path
    settings: GateSettings
    confirm: int
    verdict_json: Path
    markdown: Path | None
    test_slowdown: float


@dataclass
class GateState:
    baseline: dict | None = None
    baseline_path: Path | None = None
    baseline_runs: list | None = None  # the baseline's runs' samples (aorta.gate.samples.baseline_runs)
    reruns: dict[str, list[dict | None]] = field(default_factory=dict)
    comparison: Comparison | None = None
    lines: list[str] = field(default_factory=list)


GATE_OPTIONS = pytest.StashKey[GateOptions]()
GATE_STATE = pytest.StashKey[GateState]()


def _rank() -> int:
    return int(os.environ.get("RANK", "0") or 0)


def _settings(config: pytest.Config) -> GateSettings:
    ini_rules = []
    for line in config.getini("aorta_thresholds"):
        try:
            ini_rules.append(parse_threshold(line))
        except ValueError as exc:
            raise pytest.UsageError(f"ini aorta_thresholds: {exc}") from None
    kw = {
        "thresholds": tuple(ini_rules + list(config.getoption("aorta_threshold"))),
        "allow_mismatch": config.getoption("aorta_allow_mismatch"),
    }
    if config.getoption("aorta_min_effect") is not None:
        kw["min_effect"] = config.getoption("aorta_min_effect")
    if config.getoption("aorta_alpha") is not None:
        kw["alpha"] = config.getoption("aorta_alpha")
    return GateSettings(**kw)


def _current_machine(config: pytest.Config) -> dict:
    """This run's machine as a run records it in machine_info["aorta"] (backend, GPU model and count)."""
    from aorta.plugin import session_device

    props = session_device(config).properties()
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


def _refuse_runs_without_benchmarks(config: pytest.Config, opts: GateOptions) -> None:
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


def _check_output_places(opts: GateOptions) -> None:
    """Every file the gate will write can be written: refused now, not after the benchmarks ran."""
    try:
        if opts.save_name:
            check_output_dir("--aorta-baseline-dir", opts.baseline_dir)
        if opts.compare_ref and _rank() == 0:
            check_output_file("--aorta-verdict-json", opts.verdict_json)
            if opts.markdown:
                check_output_file("--aorta-markdown", opts.markdown)
            if os.environ.get("GITHUB_STEP_SUMMARY"):
                check_appendable("$GITHUB_STEP_SUMMARY", os.environ["GITHUB_STEP_SUMMARY"])
    except OutputPathError as exc:
        raise pytest.UsageError(str(exc)) from None


def _check_save(config: pytest.Config, opts: GateOptions) -> None:
    """A save that would be refused at the end of the run (machine folder a file, a baseline that cannot
    be read, of another machine or stack) is refused now: exit 4 or 13, before any benchmark runs."""
    import platform

    from aorta.gate.save_check import EXIT_USAGE, SaveRefused, check_save
    from aorta.machine import machine_info
    from aorta.plugin import session_device

    if not opts.save_name:
        return
    current = {
        "machine_info": {
            "aorta": machine_info(session_device(config)),
            "python_version": platform.python_version(),
        }
    }
    try:
        check_save(opts.baseline_dir, opts.save_name, current, replace=opts.replace_baseline)
    except SaveRefused as exc:
        if exc.exit_code == EXIT_USAGE:
            raise pytest.UsageError(str(exc)) from None
        pytest.exit(str(exc), returncode=exc.exit_code)


def _load_baseline(config: pytest.Config, ref_name: str, opts: GateOptions, state: GateState) -> None:
    """Find and read the baseline ``ref_name`` (``--aorta-compare``), and refuse one from another GPU model or
    backend, before any run."""
    allow = opts.settings.allow_mismatch
    current = None if allow and bl.looks_like_path(ref_name) else _current_machine(config)
    try:
        key = "" if current is None else bl.machine_key(current)
        path = bl.resolve(ref_name, opts.baseline_dir, key)
        baseline = bl.load_run(path)
        runs = bl.baseline_runs(baseline)
    except bl.BaselineError as exc:
        raise pytest.UsageError(f"--aorta-compare: {exc}") from None
    state.baseline_path, state.baseline, state.baseline_runs = path, baseline, runs
    if allow or current is None:  # current is None only where mismatches are allowed
        return
    reason = mismatch_reason(baseline, current)
    if reason:
        raise pytest.UsageError(
            f"--aorta-compare: {path} was saved on {machine_label(baseline)}, this run is on "
            f"{machine_label(current)} ({reason}); a baseline from another GPU model or backend is refused: "
            "compare with one saved on this machine, or pass --aorta-allow-mismatch to compare anyway"
        )
    mixed = bl.mixed_machines(baseline, path)
    if mixed:
        raise pytest.UsageError(f"--aorta-compare: {mixed}")


def _refuse_settings_diff(config: pytest.Config, state: GateState) -> None:
    """Scheduling env vars that differ from the baseline's and were not named as intended: exit 14 now,
    before any benchmark runs (versions may differ: comparing stacks is the point)."""
    from aorta.device import Device
    from aorta.fingerprint import parse_allowed
    from aorta.gate.compare import aorta_machine
    from aorta.gate.settings_check import EXIT_SETTINGS_DIFFER, settings_refusal

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


@pytest.hookimpl(trylast=True)  # after aorta.plugin's configure, which resolves the device options
def pytest_configure(config: pytest.Config) -> None:
    root = Path(str(config.rootpath))
    bdir = config.getoption("aorta_baseline_dir")
    opts = GateOptions(
        save_name=config.getoption("aorta_save_baseline"),
        replace_baseline=config.getoption("aorta_replace_baseline"),
        compare_ref=config.getoption("aorta_compare"),
        baseline_dir=Path(bdir) if bdir else root / ".aorta" / "baselines",
        settings=_settings(config),
        confirm=config.getoption("aorta_confirm"),
        verdict_json=Path(config.getoption("aorta_verdict_json") or root / DEFAULT_VERDICT_JSON),
        markdown=Path(config.getoption("aorta_markdown")) if config.getoption("aorta_markdown") else None,
        test_slowdown=config.getoption("aorta_test_slowdown") or 0.0,
    )
    if opts.save_name and opts.test_slowdown:
        raise pytest.UsageError(
            "--aorta-save-baseline with --aorta-test-slowdown: a run slowed on purpose "
            "can never be saved as a baseline"
        )
    if opts.replace_baseline and not opts.save_name:
        raise pytest.UsageError("--aorta-replace-baseline needs --aorta-save-baseline NAME")
    if opts.confirm and not opts.compare_ref:
        raise pytest.UsageError(f"--aorta-confirm={opts.confirm} needs --aorta-compare NAME|PATH")
    _refuse_runs_without_benchmarks(config, opts)
    state = GateState()
    if opts.compare_ref:
        _load_baseline(config, opts.compare_ref, opts, state)
        _refuse_settings_diff(config, state)
    _check_output_places(opts)  # after the inputs: a refused run creates no folder
    _check_save(config, opts)
    config.stash[GATE_OPTIONS] = opts
    config.stash[GATE_STATE] = state


# ------------------------------------------------------------------------------------------ the run
def _bench_dicts(config: pytest.Config, start: int = 0) -> list[dict]:
    bs = getattr(config, "_benchmarksession", None)
    if bs is None:
        return []
    return [b.as_dict(include_data=True) for b in bs.benchmarks[start:] if not b.has_error]


def build_run(config: pytest.Config) -> dict | None:
    """This run as pytest-benchmark writes it (through its own hooks, raw data included)."""
    bs = getattr(config, "_benchmarksession", None)
    if bs is None or bs.disabled:
        return None
    machine_info = bs.get_machine_info()
    commit_info = config.hook.pytest_benchmark_generate_commit_info(config=config)
    config.hook.pytest_benchmark_update_commit_info(config=config, commit_info=commit_info)
    run = config.hook.pytest_benchmark_generate_json(
        config=config,
        benchmarks=bs.benchmarks,
        include_data=True,
        machine_info=machine_info,
        commit_info=commit_info,
    )
    config.hook.pytest_benchmark_update_json(config=config, benchmarks=bs.benchmarks, output_json=run)
    return run


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session: pytest.Session):
    yield
    config = session.config
    opts, state = config.stash.get(GATE_OPTIONS, None), config.stash.get(GATE_STATE, None)
    if opts is None or state is None or not opts.confirm or session.testsfailed or session.shouldstop:
        return
    baseline = state.baseline
    if baseline is None:
        return
    run = {"benchmarks": _bench_dicts(config)}
    ref = {b["fullname"]: b for b in baseline["benchmarks"]}
    slower = {
        b["fullname"]
        for b in run["benchmarks"]
        if b["fullname"] in ref
        and any(
            v.outcome == SLOWER
            for v in benchmark_verdicts(
                b["fullname"], ref[b["fullname"]], b, opts.settings, ref_runs=state.baseline_runs
            )
        )
    }
    items = {item.nodeid: item for item in session.items}
    for name in sorted(slower):
        if name in items:
            state.reruns[name] = [_rerun(items[name]) for _ in range(opts.confirm)]


def _rerun(item: pytest.Item) -> dict | None:
    """Run ``item`` once more; its record comes back here and never reaches the run's own results."""
    from _pytest.runner import runtestprotocol
    from pytest_benchmark.logger import PytestBenchmarkWarning

    from aorta.plugin import CONFIRMATION_RUNS

    records: list[dict] = []
    item.stash[CONFIRMATION_RUNS] = records
    try:
        with (
            warnings.catch_warnings()
        ):  # the fixture is left unused on purpose: nothing goes to pytest-benchmark
            warnings.filterwarnings("ignore", "Benchmark fixture was not used", PytestBenchmarkWarning)
            reports = runtestprotocol(item, nextitem=None, log=False)
    finally:
        del item.stash[CONFIRMATION_RUNS]
    if any(r.failed for r in reports) or len(records) != 1:
        return None
    return records[0]


def _apply_confirmation(comp: Comparison, baseline: dict, state: GateState, opts: GateOptions) -> None:
    ref = {b["fullname"]: b for b in baseline["benchmarks"]}
    out = []
    for v in comp.verdicts:
        reruns = state.reruns.get(v.benchmark)
        if v.outcome == SLOWER and reruns:
            again = [
                None
                if r is None
                else benchmark_verdicts(
                    v.benchmark,
                    ref[v.benchmark],
                    r,
                    opts.settings,
                    only=[v.metric],
                    ref_runs=state.baseline_runs,
                )[0]
                for r in reruns
            ]
            v = confirm(v, again)
        out.append(v)
    comp.verdicts = out


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    opts, state = config.stash.get(GATE_OPTIONS, None), config.stash.get(GATE_STATE, None)
    if opts is None or state is None or not (opts.save_name or opts.compare_ref):
        return
    run = build_run(config)
    if run is None:
        state.lines.append(
            f"aorta gate: {NOTHING_COMPARED}: benchmarks are disabled in this run, nothing saved"
        )
        if int(exitstatus) == 0:
            session.exitstatus = EXIT_NOTHING_COMPARED if opts.compare_ref else EXIT_NOT_SAVED
        return
    if not run["benchmarks"]:
        state.lines.append("aorta gate: no benchmark results in this run")
    code = EXIT_CLEAN
    baseline = state.baseline
    if baseline is not None:
        comp = compare_runs(
            baseline,
            run,
            opts.settings,
            ref_label=_label(baseline, state.baseline_path),
            cand_label="this run",
        )
        if state.reruns:
            _apply_confirmation(comp, baseline, state, opts)
        state.comparison = comp
        code = overall_exit([comp])
        state.lines += terminal_lines(comp, verbose=config.getoption("verbose") > 0)
        if _rank() == 0:
            try:
                state.lines += write_outputs(
                    [comp], code, verdict_json=opts.verdict_json, markdown_path=opts.markdown
                )
            except OSError as exc:
                state.lines.append(f"aorta gate: could not write the verdict files: {exc}")
                code = code or int(pytest.ExitCode.USAGE_ERROR)
    if opts.save_name:
        line, saved = _save(run, opts.save_name, opts, config, int(exitstatus), code)
        state.lines.append(line)
        code = code or (EXIT_CLEAN if saved else EXIT_NOT_SAVED)
    if int(exitstatus) == 0 and code:
        session.exitstatus = code  # pytest's own codes (failed tests, usage) take precedence


def _label(baseline: dict, baseline_path: Path | None) -> str:
    name = (baseline.get("aorta_baseline") or {}).get("name")
    return f"{name} ({baseline_path})" if name else str(baseline_path)


def _save(
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
    if _rank() != 0:
        return f"baseline {save_name!r}: written by rank 0 only", True
    from aorta.plugin import OPTIONS

    resolved = {
        **config.stash[OPTIONS].__dict__,
        "min_effect": opts.settings.min_effect,
        "alpha": opts.settings.alpha,
        "thresholds": [t.__dict__ for t in opts.settings.thresholds],
    }
    try:
        path, n_runs = bl.save_baseline(
            run, opts.baseline_dir, save_name, resolved, replace=opts.replace_baseline
        )
    except (OSError, bl.BaselineError) as exc:
        return (
            f"baseline {save_name!r} NOT saved: {exc}; the saved one, if any, is unchanged "
            f"-> exit {EXIT_NOT_SAVED}"
        ), False
    runs = (
        "1 run: save it again (a separate process) to give the gate the spread between runs"
        if n_runs == 1
        else f"{n_runs} runs"
    )
    return f"baseline {save_name!r} saved: {path} ({len(run['benchmarks'])} benchmarks, {runs})", True


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(GATE_STATE, None)
    if state is None or not state.lines:
        return
    terminalreporter.section("aorta gate")
    for line in state.lines:
        red = any(w in line for w in ("SLOWER", "refused", "NOT saved", "MISMATCH", NOTHING_COMPARED))
        terminalreporter.write_line(line, red=red, yellow="TEST SLOWDOWN" in line)
