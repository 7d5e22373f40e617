"""The gate's pytest options: declared (``add_options``), parsed once into ``GateOptions`` and its
``GateSettings``; a bad value, or a pair that cannot go together, is a ``pytest.UsageError`` naming the option."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from aorta.gate.baselines import baseline as bl
from aorta.gate.comparison.compare import GateSettings, parse_threshold
from aorta.gate.outputs.outputs import DEFAULT_VERDICT_JSON
from aorta.gate.runs import fresh_runs
from aorta.gate.session import check_pass
from aorta.gate.stats import sequential
from aorta.processes import fork_server, warm_rank
from aorta.record.output_arguments import output_option
from aorta.stats.option_values import parse_alpha, parse_positive_ratio, parse_ratio, parse_whole

MAX_CONFIRM = 20
MAX_RUNS = 20
AUTO_RUNS = 0  # --aorta-runs auto: aorta.gate.stats.sequential decides when to stop
DEFAULT_BUDGET_S = 600.0  # --aorta-budget: the wall an auto gate may take for its runs
DEFAULT_GATE_RUNS = 3  # fresh-process runs of a gate outside torchrun: the run is the sample
DEFAULT_CONFIRM = 2  # more fresh-process runs of each suspected regression before the verdict


def argtype(fn, option: str):
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


def add_options(parser: pytest.Parser) -> None:
    g = parser.getgroup("aorta-gate", "aorta regression gate (baselines, verdicts, exit codes)")
    g.addoption(
        "--aorta-save-baseline",
        metavar="NAME",
        type=argtype(bl.parse_baseline_name, "--aorta-save-baseline"),
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
        "--aorta-check-run",
        metavar="auto|always",
        type=argtype(check_pass.parse_mode, "--aorta-check-run"),
        default="auto",
        help="a gate's check run (output checks, kernel passes, known answers): auto (default) skips it where "
        "the same code, stack, machine and command passed it before (the save, the last compare: "
        "<--aorta-runs-dir>/checks.json) and says so; always runs it",
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
        type=argtype(parse_runs, "--aorta-runs"),
        default=None,
        help=f"run the benchmarks in N fresh processes and judge (or save) their runs together; default "
        f"{DEFAULT_GATE_RUNS} with --aorta-compare or --aorta-save-baseline, 1 otherwise and under torchrun; "
        "auto: add runs until every figure is decided (a sequential rule that keeps alpha) or --aorta-budget ends",
    )
    g.addoption(
        "--aorta-budget",
        metavar="TIME",
        type=argtype(lambda t: sequential.parse_budget("--aorta-budget", t), "--aorta-budget"),
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
        type=argtype(parse_min_judged, "--aorta-min-judged"),
        default=None,
        help="a compare that judged (SLOWER, FASTER or SAME) fewer than SHARE of its figures is inconclusive, "
        "exit 15, not clean (default 50%%; a compare that judged none is always inconclusive)",
    )
    g.addoption(
        "--aorta-confirm",
        metavar="N",
        type=argtype(parse_confirm, "--aorta-confirm"),
        default=None,
        help=f"up to N more fresh-process runs of each benchmark with a suspected regression before the "
        f"verdict (default {DEFAULT_CONFIRM} with --aorta-compare; 0 under torchrun)",
    )
    g.addoption(
        "--aorta-max-mde",
        metavar="RATIO",
        type=argtype(parse_max_mde, "--aorta-max-mde"),
        default=None,
        help="a figure whose minimum detectable effect on this machine exceeds RATIO is not gateable "
        "(default 0.05 = 5%%)",
    )
    g.addoption(
        "--aorta-order-seed",
        metavar="N",
        type=argtype(parse_order_seed, "--aorta-order-seed"),
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
        type=argtype(lambda t: parse_ratio("--aorta-min-effect", t), "--aorta-min-effect"),
        default=None,
        help="smallest relative change worth a SLOWER verdict, a policy beside each figure's measured "
        "noise (default 0.01 = 1%%)",
    )
    g.addoption(
        "--aorta-threshold",
        metavar="[BENCH:]METRIC=RATIO",
        action="append",
        default=[],
        type=argtype(parse_threshold, "--aorta-threshold"),
        help="minimum effect for one metric and/or benchmark glob, e.g. tflops=5%% or "
        "*tiny_kernel*:device_ms=0.1 (repeatable; later wins; also ini aorta_thresholds)",
    )
    g.addoption(
        "--aorta-alpha",
        metavar="P",
        type=argtype(parse_alpha, "--aorta-alpha"),
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
        type=argtype(parse_test_slowdown, "--aorta-test-slowdown"),
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
    check_run: str = "auto"  # --aorta-check-run: auto skips a check run already passed (session.check_pass)

    @property
    def auto(self) -> bool:
        return self.runs == AUTO_RUNS

    @property
    def orchestrates(self) -> bool:
        """This process runs the benchmarks in child processes instead of itself."""
        return self.auto or self.runs > 1


def rank() -> int:
    return int(os.environ.get("RANK", "0") or 0)


def runs_and_confirm(config: pytest.Config, gating: bool, comparing: bool) -> tuple[int, int]:
    """``--aorta-runs`` and ``--aorta-confirm`` as given, else their defaults for this process."""
    runs, confirm = config.getoption("aorta_runs"), config.getoption("aorta_confirm")
    multi_rank = int(os.environ.get("WORLD_SIZE", "1") or 1) > 1
    nested = multi_rank or bool(os.environ.get(fresh_runs.CHILD_ENV))  # never starts runs of its own
    if multi_rank:
        # runs: 1 is allowed, auto (0) is not; confirm: 0 is allowed (AUTO_RUNS is the runs' sentinel only)
        refused = []
        if runs is not None and runs != 1:
            refused.append(("--aorta-runs", "auto" if runs == AUTO_RUNS else runs))
        if confirm:
            refused.append(("--aorta-confirm", confirm))
        for flag, value in refused:
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


def gate_settings(config: pytest.Config) -> GateSettings:
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


def gate_options(config: pytest.Config) -> GateOptions:
    """The gate's options, parsed once; a pair that cannot go together is a ``pytest.UsageError`` now."""
    root = Path(str(config.rootpath))
    bdir = config.getoption("aorta_baseline_dir")
    compare_ref, save_name = config.getoption("aorta_compare"), config.getoption("aorta_save_baseline")
    runs, confirm = runs_and_confirm(config, bool(compare_ref or save_name), bool(compare_ref))
    opts = GateOptions(
        save_name=save_name,
        replace_baseline=config.getoption("aorta_replace_baseline"),
        compare_ref=compare_ref,
        baseline_dir=Path(bdir) if bdir else root / ".aorta" / "baselines",
        runs_root=Path(config.getoption("aorta_runs_dir") or root / ".aorta" / "runs"),
        settings=gate_settings(config),
        confirm=confirm,
        runs=runs,
        verdict_json=Path(config.getoption("aorta_verdict_json") or root / DEFAULT_VERDICT_JSON),
        markdown=Path(config.getoption("aorta_markdown")) if config.getoption("aorta_markdown") else None,
        test_slowdown=config.getoption("aorta_test_slowdown") or 0.0,
        budget_s=config.getoption("aorta_budget") or DEFAULT_BUDGET_S,
        check_run=config.getoption("aorta_check_run") or "auto",
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
    if opts.orchestrates:
        try:
            fork_server.start_mode()
            warm_rank.start_mode(os.environ)
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    return opts
