"""The regression gate inside pytest: fresh-process runs, save baselines, compare, confirm, exit codes.

The sample is the run (``aorta.gate.verdict``). Hooks, in the order they run:

* ``pytest_configure``: options parsed once into ``GateOptions``; the baseline to compare with is found
  and validated now, before any benchmark runs (a bad one, or one from another GPU model or backend, is
  a usage error naming the file); so are the places the gate writes to, and gates under xdist (``-n``).
* ``pytest_collection_modifyitems``: in a child run, the benchmark order of ``--aorta-order-seed`` and
  the benchmarks of ``--aorta-only-file`` (``aorta.gate.fresh_runs``).
* ``pytest_runtestloop``: with ``--aorta-runs N`` (N > 1) this process runs no benchmark itself: it runs
  the same command N times in fresh processes (``aorta.gate.fresh_runs``) and keeps their JSON.
* ``pytest_sessionfinish``: the candidate is this process's own run (built through pytest-benchmark's own
  hooks, raw data included) or its children's runs; it is compared with the baseline's runs; benchmarks
  with a suspected regression get ``--aorta-confirm`` more fresh-process runs and are judged again with
  them; the runs are saved. The exit code becomes 10 (regression), 11 (different hardware), 12 (nothing
  compared) or 13 (baseline not saved) only where pytest's own status is 0.
* ``pytest_terminal_summary``: the header and the verdict table; no traceback.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aorta.exit_codes import EXIT_CLEAN, EXIT_NOT_SAVED, EXIT_NOTHING_COMPARED
from aorta.gate import auto_runs, blocks, empty_run, fresh_runs, sequential
from aorta.gate import baseline as bl
from aorta.gate.compare import (
    NOTHING_COMPARED,
    Comparison,
    GateSettings,
    compare_runs,
    machine_label,
    mismatch_reason,
    parse_alpha,
    parse_positive_ratio,
    parse_ratio,
    parse_threshold,
    parse_whole,
)
from aorta.gate.outputs import (
    DEFAULT_VERDICT_JSON,
    write_outputs,
)
from aorta.gate.render import overall_exit, terminal_lines
from aorta.gate.save_line import one_run_hint
from aorta.record.output_arguments import output_option
from aorta.record.output_paths import OutputPathError, check_appendable, check_output_dir, check_output_file
from aorta.record.run_samples import stored_runs

MAX_CONFIRM = 20
MAX_RUNS = 20
AUTO_RUNS = 0  # --aorta-runs auto: aorta.gate.sequential decides when to stop
DEFAULT_BUDGET_S = 600.0  # --aorta-budget: the wall an auto gate may take for its runs
DEFAULT_GATE_RUNS = 3  # fresh-process runs of a gate outside torchrun: the run is the sample
DEFAULT_CONFIRM = 2  # more fresh-process runs of each suspected regression before the verdict


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
    return parse_whole("--aorta-confirm", text, 0, MAX_CONFIRM, "re-runs")


def parse_runs(text: str) -> int:
    """A number of fresh-process runs, or ``auto`` (``AUTO_RUNS``: decide, then stop, within ``--aorta-budget``)."""
    if text.strip().lower() == "auto":
        return AUTO_RUNS
    try:
        return parse_whole("--aorta-runs", text, 1, MAX_RUNS, "fresh-process runs")
    except ValueError as exc:
        raise ValueError(
            f"{exc}, or auto (runs until every figure is decided or --aorta-budget ends)"
        ) from None


def parse_min_judged(text: str) -> float:
    value = parse_ratio("--aorta-min-judged", text)
    if value > 1:
        raise ValueError(f"--aorta-min-judged={text!r}: expected a share of the figures from 0 to 100%")
    return value


def parse_order_seed(text: str) -> int:
    return parse_whole("--aorta-order-seed", text, 0, None, "shuffles (0: the collected order)")


def parse_max_mde(text: str) -> float:
    return parse_positive_ratio("--aorta-max-mde", text, "e.g. 5%")


def parse_test_slowdown(text: str) -> float:
    return parse_positive_ratio("--aorta-test-slowdown", text, "leave it out for a normal run")


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
    output_option(
        g,
        "--aorta-baseline-dir",
        kind="dir",
        metavar="DIR",
        help="where baselines live (default: .aorta/baselines in the rootdir)",
    )
    output_option(
        g,
        "--aorta-runs-dir",
        kind="dir",
        metavar="DIR",
        help="where fresh-process runs write their JSON and logs (default: .aorta/runs in the rootdir)",
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
        "--aorta-runs",
        metavar="N",
        type=_argtype(parse_runs, "--aorta-runs"),
        default=None,
        help=f"run the benchmarks in N fresh processes and judge (or save) their runs together; default "
        f"{DEFAULT_GATE_RUNS} with --aorta-compare or --aorta-save-baseline, 1 otherwise and under torchrun; "
        "auto: add runs until every figure is decided (a sequential rule that keeps alpha) or --aorta-budget ends",
    )
    g.addoption(
        "--aorta-budget",
        metavar="TIME",
        type=_argtype(lambda t: sequential.parse_budget("--aorta-budget", t), "--aorta-budget"),
        default=None,
        help="with --aorta-runs auto: the wall time its runs may take, e.g. 600, 10m, 1h (default 10m); no run "
        "starts that the slowest so far would carry past it",
    )
    g.addoption(
        "--aorta-lean-run",
        action="store_true",
        help="(set by the gate in its repeat runs, after its check run) benchmarks only: no output check, no "
        "kernel or labelled pass but for figures read from the kernel timeline, no test that is not a benchmark",
    )
    g.addoption(
        "--aorta-min-judged",
        metavar="SHARE",
        type=_argtype(parse_min_judged, "--aorta-min-judged"),
        default=None,
        help="a compare that judged (SLOWER, FASTER or SAME) fewer than SHARE of its figures is inconclusive, "
        "exit 15, not clean (default 50%%; a compare that judged none is always inconclusive)",
    )
    g.addoption(
        "--aorta-confirm",
        metavar="N",
        type=_argtype(parse_confirm, "--aorta-confirm"),
        default=None,
        help=f"up to N more fresh-process runs of each benchmark with a suspected regression before the "
        f"verdict (default {DEFAULT_CONFIRM} with --aorta-compare; 0 under torchrun)",
    )
    g.addoption(
        "--aorta-max-mde",
        metavar="RATIO",
        type=_argtype(parse_max_mde, "--aorta-max-mde"),
        default=None,
        help="a figure whose minimum detectable effect on this machine exceeds RATIO is not gateable "
        "(default 0.05 = 5%%)",
    )
    g.addoption(
        "--aorta-order-seed",
        metavar="N",
        type=_argtype(parse_order_seed, "--aorta-order-seed"),
        default=0,
        help="run the test files in a shuffled order fixed by N (0: as collected); fresh-process runs vary it",
    )
    g.addoption(
        "--aorta-only-file",
        metavar="PATH",
        default=None,
        help="run only the benchmarks whose node ids are listed in PATH, one a line (confirmation runs)",
    )
    g.addoption(
        "--aorta-min-effect",
        metavar="RATIO",
        type=_argtype(lambda t: parse_ratio("--aorta-min-effect", t), "--aorta-min-effect"),
        default=None,
        help="smallest relative change worth a SLOWER verdict, a policy beside each figure's measured "
        "noise (default 0.01 = 1%%)",
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
        help="two-sided significance of the t test on run figures (default 0.01)",
    )
    output_option(
        g,
        "--aorta-verdict-json",
        metavar="PATH",
        help=f"verdict file (default {DEFAULT_VERDICT_JSON} in the rootdir)",
    )
    output_option(
        g,
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
    runs_root: Path  # fresh-process runs write under <runs_root>/<time>-<pid>/
    settings: GateSettings
    confirm: int
    runs: int
    verdict_json: Path
    markdown: Path | None
    test_slowdown: float
    budget_s: float = DEFAULT_BUDGET_S  # --aorta-runs auto: the wall its runs may take

    @property
    def auto(self) -> bool:
        return self.runs == AUTO_RUNS

    @property
    def orchestrates(self) -> bool:
        """This process runs the benchmarks in child processes instead of itself."""
        return self.auto or self.runs > 1


@dataclass
class GateState:
    baseline: dict | None = None
    baseline_path: Path | None = None
    runs_dir: Path | None = None  # where the fresh-process runs write their JSON and logs
    children: list[fresh_runs.ChildRun] = field(default_factory=list)
    json_target: object = None  # --benchmark-json of a run in fresh processes (a path, or an open file)
    auto: auto_runs.AutoOutcome | None = None  # --aorta-runs auto: its runs, looks and why it stopped
    comparison: Comparison | None = None
    lines: list[str] = field(default_factory=list)


GATE_OPTIONS = pytest.StashKey[GateOptions]()
RUN_BLOCK = pytest.StashKey[dict]()
LEAN_MODE_FIXTURE = "hw_queue"  # aorta.plugin's fixture: its workloads skip their checks in a lean run
GATE_STATE = pytest.StashKey[GateState]()


def _rank() -> int:
    return int(os.environ.get("RANK", "0") or 0)


def _runs_and_confirm(config: pytest.Config, gating: bool, comparing: bool) -> tuple[int, int]:
    """``--aorta-runs`` and ``--aorta-confirm`` as given, else their defaults for this process."""
    runs, confirm = config.getoption("aorta_runs"), config.getoption("aorta_confirm")
    multi_rank = int(os.environ.get("WORLD_SIZE", "1") or 1) > 1
    nested = multi_rank or bool(os.environ.get(fresh_runs.CHILD_ENV))  # never starts runs of its own
    if multi_rank:
        for flag, value in (("--aorta-runs", runs), ("--aorta-confirm", confirm)):
            if value is not None and (value > (1 if flag == "--aorta-runs" else 0) or value == AUTO_RUNS):
                raise pytest.UsageError(
                    f"{flag}={value} under torchrun: fresh-process runs are started by the gate outside "
                    "torchrun; launch torchrun once per run instead (saving to a baseline adds a run; "
                    "'aorta compare BASELINE.json RUN1.json RUN2.json ...' judges several runs together)"
                )
    if runs is None:
        runs = DEFAULT_GATE_RUNS if gating and not nested else 1
    if runs == AUTO_RUNS and confirm:
        raise pytest.UsageError(
            f"--aorta-confirm={confirm} with --aorta-runs auto: the auto gate adds runs to every undecided figure "
            "itself; leave --aorta-confirm out"
        )
    if confirm is None:
        confirm = DEFAULT_CONFIRM if comparing and not nested and runs != AUTO_RUNS else 0
    return runs, confirm


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
    if config.getoption("aorta_max_mde") is not None:
        kw["max_mde"] = config.getoption("aorta_max_mde")
    if config.getoption("aorta_min_judged") is not None:
        kw["min_judged"] = config.getoption("aorta_min_judged")
    if config.getoption("aorta_runs") == AUTO_RUNS:
        kw["looks"] = len(sequential.LOOKS)
    return GateSettings(**kw)


def _current_machine(config: pytest.Config) -> dict:
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
        if opts.orchestrates or opts.confirm:  # issue 38, case 15: refused now, not INTERNALERROR later
            check_output_dir("--aorta-runs-dir (default .aorta/runs)", opts.runs_root)
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


def _check_outputs_are_not_inputs(
    config: pytest.Config, opts: GateOptions, state: GateState, saved_to: Path | None
) -> None:
    """No output of this run written over the baseline it reads or saves to (issue 38, case 1)."""
    from aorta.gate.input_outputs import check_outputs_are_not_inputs
    from aorta.record.benchmark_json_option import target_path

    outputs = {
        "--benchmark-json": target_path(config.getoption("benchmark_json", None)),
        "--aorta-verdict-json": opts.verdict_json if opts.compare_ref else None,
        "--aorta-markdown": opts.markdown,
    }
    try:
        check_outputs_are_not_inputs(outputs, compared=state.baseline_path, saved_to=saved_to)
    except OutputPathError as exc:
        raise pytest.UsageError(str(exc)) from None


def _check_save(config: pytest.Config, opts: GateOptions) -> Path | None:
    """A save that would be refused at the end of the run (machine folder a file, a baseline that cannot
    be read, of another machine or stack) is refused now: exit 4 or 13, before any benchmark runs."""
    import platform

    from aorta.environment.machine import machine_info
    from aorta.exit_codes import EXIT_PYTEST_USAGE
    from aorta.gate.save_check import SaveRefused, check_save

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


def _load_baseline(config: pytest.Config, ref_name: str, opts: GateOptions, state: GateState) -> None:
    """Find and read the baseline ``ref_name`` (``--aorta-compare``), and refuse one from another GPU model or
    backend, before any run."""
    allow = opts.settings.allow_mismatch
    current = None if allow and bl.looks_like_path(ref_name) else _current_machine(config)
    try:
        key = "" if current is None else bl.machine_key(current)
        if ref_name.startswith("history:"):  # the last runs of a stack in the run history (aorta/history)
            path, baseline = Path(ref_name), _history_baseline(config, ref_name, key)
        else:
            path = bl.resolve(ref_name, opts.baseline_dir, key)
            baseline = bl.load_run(path)
        bl.baseline_runs(baseline, source=str(path))  # every stored run is checked before any benchmark runs
    except ValueError as exc:  # a BaselineError, or the history's errors (HistoryError, NoHistoryBaseline)
        raise pytest.UsageError(f"--aorta-compare: {exc}") from None
    state.baseline_path, state.baseline = path, baseline
    state.lines += [f"aorta gate: note: {n}" for n in bl.repeated_run_notes(baseline, str(path))]
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


def _history_baseline(config: pytest.Config, ref_name: str, key: str) -> dict:
    """The run history's runs of a stack as a baseline, asked of its plugin (aorta/hookspec.py)."""
    doc = config.hook.pytest_aorta_history_baseline(config=config, ref=ref_name, machine_model=key)
    if doc is None:
        raise ValueError(f"{ref_name}: the run history's plugin is not active (-p no:aorta.history.plugin?)")
    return doc


def _refuse_settings_diff(config: pytest.Config, state: GateState) -> None:
    """Scheduling env vars that differ from the baseline's and were not named as intended: exit 14 now,
    before any benchmark runs (versions may differ: comparing stacks is the point)."""
    from aorta.device import Device
    from aorta.environment.fingerprint import parse_allowed
    from aorta.exit_codes import EXIT_SETTINGS_DIFFER
    from aorta.gate.compare import aorta_machine
    from aorta.gate.settings_check import settings_refusal

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
    compare_ref, save_name = config.getoption("aorta_compare"), config.getoption("aorta_save_baseline")
    runs, confirm = _runs_and_confirm(config, bool(compare_ref or save_name), bool(compare_ref))
    opts = GateOptions(
        save_name=save_name,
        replace_baseline=config.getoption("aorta_replace_baseline"),
        compare_ref=compare_ref,
        baseline_dir=Path(bdir) if bdir else root / ".aorta" / "baselines",
        runs_root=Path(config.getoption("aorta_runs_dir") or root / ".aorta" / "runs"),
        settings=_settings(config),
        confirm=confirm,
        runs=runs,
        verdict_json=Path(config.getoption("aorta_verdict_json") or root / DEFAULT_VERDICT_JSON),
        markdown=Path(config.getoption("aorta_markdown")) if config.getoption("aorta_markdown") else None,
        test_slowdown=config.getoption("aorta_test_slowdown") or 0.0,
        budget_s=config.getoption("aorta_budget") or DEFAULT_BUDGET_S,
    )
    if config.getoption("aorta_budget") is not None and not opts.auto:
        raise pytest.UsageError(
            f"--aorta-budget={config.getoption('aorta_budget'):g} s needs --aorta-runs auto (a fixed --aorta-runs N "
            "runs N times whatever the time)"
        )
    if opts.auto and not (opts.compare_ref or opts.save_name):
        raise pytest.UsageError(
            "--aorta-runs auto needs --aorta-compare NAME|PATH or --aorta-save-baseline NAME"
        )
    if opts.save_name and opts.test_slowdown:
        raise pytest.UsageError(
            "--aorta-save-baseline with --aorta-test-slowdown: a run slowed on purpose "
            "can never be saved as a baseline"
        )
    if opts.save_name and config.getoption("aorta_test_comm_ballast", None):
        raise pytest.UsageError(
            "--aorta-save-baseline with --aorta-test-comm-ballast: a run slowed on purpose "
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
    _check_outputs_are_not_inputs(config, opts, state, _check_save(config, opts))
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A fresh-process run's order (``--aorta-order-seed``) and benchmarks (``--aorta-only-file``)."""
    only_file = config.getoption("aorta_only_file")
    if only_file:
        try:
            wanted = {line.strip() for line in Path(only_file).read_text().splitlines() if line.strip()}
        except OSError as exc:
            raise pytest.UsageError(
                f"--aorta-only-file={only_file}: cannot be read ({exc.strerror})"
            ) from None
        dropped = [i for i in items if i.nodeid not in wanted]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [i for i in items if i.nodeid in wanted]
    if config.getoption("aorta_lean_run", False):  # a repeat run times benchmarks only (issue 45, item 3)
        checks = [i for i in items if not blocks.is_benchmark_item(i)]
        if checks:
            config.hook.pytest_deselected(items=checks)
            items[:] = [i for i in items if blocks.is_benchmark_item(i)]
    seed = config.getoption("aorta_order_seed")
    if seed:
        order = fresh_runs.order_items([i.nodeid for i in items], seed)
        items[:] = [items[k] for k in order]


def pytest_collection_finish(session: pytest.Session) -> None:
    """What this run shares with a run of the other side of a compare (``aorta.gate.blocks``): recorded in
    its JSON by ``pytest_benchmark_update_json``."""
    config = session.config
    lean = bool(config.getoption("aorta_lean_run", False))
    items = session.items
    # a full run is a sample only where a lean run of the same command would run the same way: no check
    # among its tests and no workload with a lean mode (the hardware-queue runner's)
    like_lean = all(
        blocks.is_benchmark_item(i) and LEAN_MODE_FIXTURE not in getattr(i, "fixturenames", ()) for i in items
    )
    config.stash[RUN_BLOCK] = blocks.run_block(
        config.getoption("aorta_order_seed") or 0,
        blocks.LEAN if lean else blocks.FULL,
        blocks.selection_id([i.nodeid for i in items]),
        sample=lean or like_lean,
    )


def pytest_benchmark_update_json(config: pytest.Config, benchmarks, output_json: dict) -> None:
    block = config.stash.get(RUN_BLOCK, None)
    if block is not None:
        output_json[blocks.RUN_KEY] = block


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    """With ``--aorta-runs N`` (N > 1): the same command in N fresh processes instead of the benchmarks here."""
    config = session.config
    opts, state = config.stash.get(GATE_OPTIONS, None), config.stash.get(GATE_STATE, None)
    if opts is None or state is None or not opts.orchestrates or session.config.option.collectonly:
        return None
    if not session.items:
        return None  # pytest says "no tests ran" itself
    bs = getattr(config, "_benchmarksession", None)
    if bs is not None and getattr(bs, "json", None):
        state.json_target = bs.json  # written here, from the children's runs (_write_combined)
        bs.json = None  # pytest-benchmark would only say it has nothing to save
    state.runs_dir = fresh_runs.runs_dir(opts.runs_root)
    if opts.auto:
        state.auto = _run_auto(config, opts, state)
        state.children = state.auto.children
        return True
    state.children = fresh_runs.run_children(
        config.invocation_params.args,
        cwd=config.invocation_params.dir,
        out_dir=state.runs_dir,
        count=opts.runs,
        say=_say(config),
    )
    return True


def _run_auto(config: pytest.Config, opts: GateOptions, state: GateState) -> auto_runs.AutoOutcome:
    """``--aorta-runs auto``: a check run, then lean runs until every figure is decided (comparing) or the
    budget ends (saving). Comparing with a baseline whose runs name their blocks, run k takes the seed of the
    baseline's k-th sample block and every benchmark, so each run has a partner (``aorta.gate.blocks``)."""
    assert state.runs_dir is not None
    out_dir, say = state.runs_dir, _say(config)
    only_files: dict[tuple[str, ...], Path | None] = {}
    entries = stored_runs(state.baseline) if state.baseline is not None else []
    seeds = blocks.paired_seeds(entries)

    def start(k: int, only, lean: bool) -> fresh_runs.ChildRun:
        key = tuple(only) if only is not None else ()
        if key not in only_files:
            only_files[key] = fresh_runs.write_only_file(out_dir, f"look{len(only_files)}", only)
        label = "check run" if k == 0 else f"run {k}/auto"
        return fresh_runs.run_child(
            config.invocation_params.args,
            cwd=config.invocation_params.dir,
            out_dir=out_dir,
            name="check" if k == 0 else f"run{k}",
            label=label + (f" ({len(only)} undecided benchmark(s))" if only is not None else ""),
            seed=0 if k == 0 else (seeds[k - 1] if k - 1 < len(seeds) else k),
            only_file=only_files[key],
            lean=lean,
            say=say,
        )

    def judge(full, restricted) -> Comparison:
        comp = _auto_comparison(opts, state, full, restricted)
        assert comp is not None
        return comp

    outcome = auto_runs.run_auto(
        start,
        sequential.Budget(opts.budget_s),
        judge=judge if state.baseline is not None else None,
        restrict=not seeds,
        max_samples=(len(seeds) + blocks.check_was_sample(entries)) if seeds else None,
        say=lambda line: say(f"aorta gate: {line}"),
    )
    for line in outcome.looks:
        say(f"aorta gate: {line}")
    return outcome


def _auto_docs(outcome_full, restricted, check) -> tuple[list[dict], list[str], dict | None]:
    docs = [bl.load_run(c.json_path) for c in [*outcome_full, *restricted]]
    ids = [f"run{k + 1}" for k in range(len(docs))]
    lead = bl.load_run(check.json_path) if check is not None and check not in outcome_full else None
    return docs, ids, lead


def _auto_comparison(opts: GateOptions, state: GateState, full, restricted) -> Comparison | None:
    """The auto gate's comparison of its sample runs so far (restricted ones included, each with its own
    benchmarks); the check run's entries join the document, not its samples."""
    if state.baseline is None or not (full or restricted):
        return None
    check = state.auto.check if state.auto is not None else None
    docs, ids, lead = _auto_docs(full, restricted, check)
    run = bl.combine_runs(docs, ids, check=lead)
    return compare_runs(
        state.baseline,
        run,
        opts.settings,
        ref_label=_label(state.baseline, state.baseline_path),
        cand_label=f"this run ({len(ids)} fresh processes, auto)",
    )


def _say(config: pytest.Config):
    tr = config.pluginmanager.get_plugin("terminalreporter")

    def say(line: str) -> None:
        if tr is not None:
            tr.write_line(line)

    return say


def _candidate(config: pytest.Config, opts: GateOptions, state: GateState) -> dict | None:
    """The run to judge and save: this process's own, or its fresh-process runs as one document."""
    if not opts.orchestrates:
        return build_run(config)
    if not state.children or not all(c.ok for c in state.children):
        return None
    if state.auto is not None:  # every sample run, restricted ones included; the check run's entries
        docs, ids, lead = _auto_docs(state.auto.full, state.auto.restricted, state.auto.check)
        if not docs:
            return None
        # the looks its verdicts were judged at: `aorta compare` of this document judges at the same level
        return {**bl.combine_runs(docs, ids, check=lead), blocks.LOOKS_KEY: {"looks": opts.settings.looks}}
    docs = [bl.load_run(c.json_path) for c in state.children]
    return bl.combine_runs(docs, [f"run{k + 1}" for k in range(len(docs))])


def _confirm(config: pytest.Config, opts: GateOptions, state: GateState, comp: Comparison) -> list[dict]:
    """Up to ``opts.confirm`` more fresh-process runs of the suspects; their documents (none if none ran)."""
    suspects = comp.suspects() if opts.confirm and _rank() == 0 else []
    if not suspects:
        return []
    state.runs_dir = state.runs_dir or fresh_runs.runs_dir(opts.runs_root)
    _say(config)(
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
        say=_say(config),
    )
    state.children += done
    return [bl.load_run(c.json_path) for c in done if c.ok]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    opts, state = config.stash.get(GATE_OPTIONS, None), config.stash.get(GATE_STATE, None)
    if opts is None or state is None:
        return
    if not (opts.save_name or opts.compare_ref):
        _finish_plain_runs(session, int(exitstatus), opts, state)  # --aorta-runs N without a gate
        return
    failed = next((c for c in state.children if not c.ok), None)
    run = None if failed else _candidate(config, opts, state)
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
        _write_combined(config, run, state)
    code = EXIT_CLEAN
    baseline = state.baseline
    if baseline is not None:
        label = f"this run ({opts.runs} fresh processes)" if opts.orchestrates else "this run"
        ref_label = _label(baseline, state.baseline_path)
        comp = compare_runs(baseline, run, opts.settings, ref_label=ref_label, cand_label=label)
        if state.auto is not None:
            comp = state.auto.comparison or comp
        elif int(exitstatus) == 0 and not comp.refused:
            extra = _confirm(config, opts, state, comp)
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
                    baseline, run, opts.settings, ref_label=ref_label, cand_label=label, extra_runs=extra
                )
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
    if state.auto is not None:
        state.lines.append(auto_runs.time_line(state.auto))
    elif state.children:
        state.lines.append(_time_line(state.children))
    if opts.save_name:
        line, saved = _save(run, opts.save_name, opts, config, int(exitstatus), code)
        state.lines.append(line)
        code = code or (EXIT_CLEAN if saved else EXIT_NOT_SAVED)
    if int(exitstatus) == 0 and code:
        session.exitstatus = code  # pytest's own codes (failed tests, usage) take precedence


def _time_line(children: list[fresh_runs.ChildRun]) -> str:
    """Where the gate's wall time went, phase by phase: its fresh runs, then its confirmation runs."""
    parts = []
    for kind in ("run", "confirm"):
        mine = [c for c in children if c.label.startswith(kind + " ")]
        if mine:
            each = ", ".join(f"{c.wall_s:.0f}" for c in mine)
            parts.append(f"{len(mine)} {kind} process(es) {sum(c.wall_s for c in mine):.0f} s ({each})")
    return "aorta gate: time: " + "; ".join(parts)


def _finish_plain_runs(session: pytest.Session, exitstatus: int, opts: GateOptions, state: GateState) -> None:
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
    run = _candidate(session.config, opts, state)
    if run is not None:
        _write_combined(session.config, run, state)


def _write_combined(config: pytest.Config, run: dict, state: GateState) -> None:
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
    resolved = {
        **config.hook.pytest_aorta_options(config=config).__dict__,
        "min_effect": opts.settings.min_effect,
        "alpha": opts.settings.alpha,
        "thresholds": [t.__dict__ for t in opts.settings.thresholds],
    }
    try:
        path, n_runs = bl.save_baseline(
            run,
            opts.baseline_dir,
            save_name,
            resolved,
            replace=opts.replace_baseline,
            settings=opts.settings,
            planned_runs=DEFAULT_GATE_RUNS,
        )
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
    profile = (bl.load_run(path).get("aorta_baseline") or {}).get("noise_profile") or {}
    total = profile.get("gateable", 0) + profile.get("not_gateable", 0)
    noise = (
        f"; noise profile: {profile.get('gateable', 0)} of {total} figures gateable (MDE at most "
        f"{opts.settings.max_mde * 100:.3g}% with {DEFAULT_GATE_RUNS} candidate runs)"
    )
    return f"baseline {save_name!r} saved: {path} ({len(run['benchmarks'])} benchmarks, {runs}){noise}", True


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(GATE_STATE, None)
    if state is None or not state.lines:
        return
    terminalreporter.section("aorta gate")
    for line in state.lines:
        red = any(w in line for w in ("SLOWER", "refused", "NOT saved", "MISMATCH", NOTHING_COMPARED))
        terminalreporter.write_line(line, red=red, yellow="TEST SLOWDOWN" in line)
