"""The gate's options as pytest parses them (``aorta.gate.session.options``): each value read, each default
chosen for this process (a gate, a plain run, torchrun, a fresh run), and each refusal naming the option, the
value and what is allowed. In this process: the real option table parsed by pytest's own parser, the config
faked around it (a real pytest run of each is in tests/gate/test_gate_*.py, out of mutmut's reach)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from _pytest.config.argparsing import Parser

from aorta.gate.comparison.compare import (
    DEFAULT_ALPHA,
    DEFAULT_MAX_MDE,
    DEFAULT_MIN_EFFECT,
    DEFAULT_MIN_JUDGED,
)
from aorta.gate.outputs.outputs import DEFAULT_VERDICT_JSON
from aorta.gate.runs import fresh_runs
from aorta.gate.session import options as o
from aorta.gate.stats.sequential import LOOKS
from aorta.processes import fork_server, warm_rank

ROOT = Path("/r")
NOTSET = object()


class FakeConfig:
    """What the option code reads of a ``pytest.Config``: ``getoption``, ``getini``, ``rootpath``."""

    def __init__(self, ns: argparse.Namespace, ini: list[str], root: Path) -> None:
        self.ns, self.ini, self.rootpath = ns, ini, root

    def getoption(self, name: str, default=NOTSET):
        """As pytest's: an option nobody declared is a ``ValueError`` unless a default is given."""
        if hasattr(self.ns, name):
            return getattr(self.ns, name)
        if default is NOTSET:
            raise ValueError(f"no option named {name!r}")
        return default

    def getini(self, name: str):
        assert name == "aorta_thresholds"
        return self.ini


def parse(*args: str, ini: tuple[str, ...] = (), root: Path = ROOT) -> FakeConfig:
    parser = Parser(_ispytest=True)
    o.add_options(parser)
    return FakeConfig(parser.parse(list(args)), list(ini), root)


def usage(*args: str, **kw) -> str:
    with pytest.raises(pytest.UsageError) as exc:
        parse(*args, **kw)
    return str(exc.value)


def refused(*args: str) -> str:
    with pytest.raises(pytest.UsageError) as exc:
        o.gate_options(parse(*args))
    return str(exc.value)


@pytest.fixture(autouse=True)
def plain_process(monkeypatch):
    """Outside torchrun, not a fresh run, the default ways of starting runs."""
    for name in ("WORLD_SIZE", "RANK", fresh_runs.CHILD_ENV, fork_server.START_ENV, warm_rank.START_ENV):
        monkeypatch.delenv(name, raising=False)


# ------------------------------------------------------------------------------------------ one value each
def test_runs_take_1_to_20_or_auto_in_any_case():
    assert [o.parse_runs(t) for t in ("1", "20", " Auto ", "AUTO")] == [1, 20, o.AUTO_RUNS, o.AUTO_RUNS]
    for bad in ("0", "21", "-3", "three"):
        with pytest.raises(ValueError) as exc:
            o.parse_runs(bad)
        msg = str(exc.value)
        assert msg.startswith(f"--aorta-runs={bad!r}: ") and "1 to 20" in msg, msg
        assert msg.endswith(", or auto (runs until every figure is decided or --aorta-budget ends)")
    with pytest.raises(ValueError) as exc:
        o.parse_runs("three")
    assert str(exc.value) == (
        "--aorta-runs='three': give a whole number of fresh-process runs, 1 to 20, "
        "or auto (runs until every figure is decided or --aorta-budget ends)"
    )


def test_confirm_takes_0_to_20_re_runs():
    assert (o.parse_confirm("0"), o.parse_confirm("20")) == (0, 20)
    for bad in ("-1", "21"):
        with pytest.raises(ValueError, match=rf"^--aorta-confirm='{bad}': out of range; allowed 0 to 20$"):
            o.parse_confirm(bad)


def test_min_judged_is_a_share_from_0_to_100_percent():
    assert (o.parse_min_judged("0"), o.parse_min_judged("100%"), o.parse_min_judged("0.25")) == (
        0.0,
        1.0,
        0.25,
    )
    with pytest.raises(
        ValueError, match=r"^--aorta-min-judged='1.01': expected a share of the figures from 0 to 100%$"
    ):
        o.parse_min_judged("1.01")
    with pytest.raises(ValueError, match=r"^--aorta-min-judged='half': not a number; give a ratio"):
        o.parse_min_judged("half")


def test_order_seed_is_0_and_up_max_mde_and_test_slowdown_above_0():
    assert (o.parse_order_seed("0"), o.parse_order_seed("12345")) == (0, 12345)
    with pytest.raises(ValueError, match=r"^--aorta-order-seed='-1': out of range; allowed 0 and up$"):
        o.parse_order_seed("-1")
    assert (o.parse_max_mde("5%"), o.parse_test_slowdown("0.05")) == (0.05, 0.05)
    with pytest.raises(ValueError, match=r"^--aorta-max-mde='0': must be above 0 \(e.g. 5%\)$"):
        o.parse_max_mde("0")
    with pytest.raises(ValueError, match=r"^--aorta-test-slowdown='0': must be above 0 \(leave it out"):
        o.parse_test_slowdown("0")


def test_argtype_names_the_option_and_value_once():
    def plain(text):
        raise ValueError("no good")

    def named(text):
        raise ValueError(f"--aorta-x={text!r}: no good")

    with pytest.raises(argparse.ArgumentTypeError, match=r"^--aorta-y='v': no good$"):
        o.argtype(plain, "--aorta-y")("v")
    with pytest.raises(argparse.ArgumentTypeError, match=r"^--aorta-x='v': no good$"):
        o.argtype(named, "--aorta-y")("v")
    assert o.argtype(int, "--aorta-order-seed")("7") == 7
    assert o.argtype(int, "--aorta-order-seed").__name__ == "parse_aorta_order_seed"


# ------------------------------------------------------------------------------------------ the table
def test_every_option_parses_to_its_value():
    c = parse(
        "--aorta-save-baseline=nightly",
        "--aorta-replace-baseline",
        "--aorta-compare=main",
        "--aorta-baseline-dir=/b",
        "--aorta-runs-dir=/runs",
        "--aorta-allow-mismatch",
        "--aorta-allow-env-diff=HIP_*",
        "--aorta-allow-env-diff=NCCL_ALGO",
        "--aorta-runs=auto",
        "--aorta-budget=2m",
        "--aorta-check-run=always",
        "--aorta-lean-run",
        "--aorta-min-judged=40%",
        "--aorta-confirm=3",
        "--aorta-max-mde=4%",
        "--aorta-order-seed=9",
        "--aorta-only-file=/only",
        "--aorta-min-effect=2%",
        "--aorta-threshold=tflops=5%",
        "--aorta-threshold=*gemm*:device_ms=0.1",
        "--aorta-alpha=0.05",
        "--aorta-verdict-json=/v.json",
        "--aorta-markdown=/m.md",
        "--aorta-test-slowdown=0.1",
    )
    got = {k: v for k, v in vars(c.ns).items() if k.startswith("aorta_")}
    assert got == {
        "aorta_save_baseline": "nightly",
        "aorta_replace_baseline": True,
        "aorta_compare": "main",
        "aorta_baseline_dir": "/b",
        "aorta_runs_dir": "/runs",
        "aorta_allow_mismatch": True,
        "aorta_allow_env_diff": ["HIP_*", "NCCL_ALGO"],
        "aorta_runs": o.AUTO_RUNS,
        "aorta_budget": 120.0,
        "aorta_check_run": "always",
        "aorta_lean_run": True,
        "aorta_min_judged": 0.4,
        "aorta_confirm": 3,
        "aorta_max_mde": 0.04,
        "aorta_order_seed": 9,
        "aorta_only_file": "/only",
        "aorta_min_effect": 0.02,
        "aorta_threshold": [got["aorta_threshold"][0], got["aorta_threshold"][1]],
        "aorta_alpha": 0.05,
        "aorta_verdict_json": "/v.json",
        "aorta_markdown": "/m.md",
        "aorta_test_slowdown": 0.1,
    }
    rules = [(t.benchmark_glob, t.metric_glob, t.min_effect) for t in got["aorta_threshold"]]
    assert rules == [("*", "tflops", 0.05), ("*gemm*", "device_ms", 0.1)]


def test_left_out_every_option_takes_its_default():
    got = {k: v for k, v in vars(parse().ns).items() if k.startswith("aorta_")}
    assert got == {
        "aorta_save_baseline": None,
        "aorta_replace_baseline": False,
        "aorta_compare": None,
        "aorta_baseline_dir": None,
        "aorta_runs_dir": None,
        "aorta_allow_mismatch": False,
        "aorta_allow_env_diff": [],
        "aorta_runs": None,
        "aorta_budget": None,
        "aorta_check_run": "auto",
        "aorta_lean_run": False,
        "aorta_min_judged": None,
        "aorta_confirm": None,
        "aorta_max_mde": None,
        "aorta_order_seed": 0,
        "aorta_only_file": None,
        "aorta_min_effect": None,
        "aorta_threshold": [],
        "aorta_alpha": None,
        "aorta_verdict_json": None,
        "aorta_markdown": None,
        "aorta_test_slowdown": 0.0,
    }


@pytest.mark.parametrize(
    "arg, says",
    [
        ("--aorta-runs=21", "--aorta-runs='21': out of range; allowed 1 to 20"),
        ("--aorta-budget=0", "--aorta-budget='0': expected a wall time such as 600"),
        ("--aorta-min-judged=2", "--aorta-min-judged='2': expected a share of the figures from 0 to 100%"),
        ("--aorta-confirm=x", "--aorta-confirm='x': give a whole number of re-runs, 0 to 20"),
        ("--aorta-max-mde=-1", "--aorta-max-mde='-1': out of range"),
        ("--aorta-order-seed=1.5", "--aorta-order-seed='1.5': give a whole number of shuffles"),
        ("--aorta-min-effect=11", "--aorta-min-effect='11': out of range; allowed 0 to 10"),
        ("--aorta-threshold=tflops", "--aorta-threshold='tflops': expected [BENCHMARK_GLOB:]METRIC=RATIO"),
        ("--aorta-alpha=1", "--aorta-alpha='1': out of range; allowed strictly between 0 and 1"),
        ("--aorta-test-slowdown=0", "--aorta-test-slowdown='0': must be above 0"),
        ("--aorta-save-baseline=a/b", "--aorta-save-baseline"),
    ],
)
def test_a_bad_value_is_refused_at_parse_naming_option_and_value(arg, says):
    assert says in usage(arg)


def test_the_ini_holds_threshold_lines_read_before_the_command_lines():
    parser = Parser(_ispytest=True)
    o.add_options(parser)
    assert parser._inidict["aorta_thresholds"][1:] == ("linelist", [])
    c = parse("--aorta-threshold=tflops=3%", ini=("tflops=1%", "*big*:device_ms=2%"))
    rules = [(t.benchmark_glob, t.metric_glob, t.min_effect) for t in o.gate_settings(c).thresholds]
    assert rules == [("*", "tflops", 0.01), ("*big*", "device_ms", 0.02), ("*", "tflops", 0.03)]
    with pytest.raises(
        pytest.UsageError, match=r"^ini aorta_thresholds: --aorta-threshold='tflops': expected"
    ):
        o.gate_settings(parse(ini=("tflops",)))


# ------------------------------------------------------------------------------------------ settings
def test_settings_left_out_are_the_compares_defaults():
    s = o.gate_settings(parse("--aorta-runs=3"))
    got = (s.min_effect, s.alpha, s.max_mde, s.min_judged, s.looks, s.thresholds, s.allow_mismatch)
    assert got == (DEFAULT_MIN_EFFECT, DEFAULT_ALPHA, DEFAULT_MAX_MDE, DEFAULT_MIN_JUDGED, 1, (), False)


def test_settings_given_each_reach_the_compare_and_auto_gives_it_its_looks():
    s = o.gate_settings(
        parse(
            "--aorta-min-effect=0.03",
            "--aorta-alpha=0.02",
            "--aorta-max-mde=0.07",
            "--aorta-min-judged=0.3",
            "--aorta-runs=auto",
            "--aorta-allow-mismatch",
        )
    )
    assert (s.min_effect, s.alpha, s.max_mde, s.min_judged, s.looks, s.allow_mismatch) == (
        0.03,
        0.02,
        0.07,
        0.3,
        len(LOOKS),
        True,
    )
    # a given 0 is a value, not "left out"
    zero = o.gate_settings(parse("--aorta-min-effect=0", "--aorta-min-judged=0"))
    assert (zero.min_effect, zero.min_judged) == (0.0, 0.0)


# ------------------------------------------------------------------------------------------ runs, confirm
@pytest.mark.parametrize(
    "args, env, want",
    [
        ((), {}, (1, 0)),  # a plain run: here, nothing confirmed
        (("--aorta-save-baseline=b",), {}, (o.DEFAULT_GATE_RUNS, 0)),  # saving: 3 runs, nothing to confirm
        (("--aorta-compare=b",), {}, (o.DEFAULT_GATE_RUNS, o.DEFAULT_CONFIRM)),
        (("--aorta-compare=b", "--aorta-runs=auto"), {}, (o.AUTO_RUNS, 0)),  # auto confirms by itself
        (("--aorta-compare=b", "--aorta-runs=5", "--aorta-confirm=0"), {}, (5, 0)),
        (("--aorta-compare=b",), {"WORLD_SIZE": "2"}, (1, 0)),  # under torchrun: one run, no children
        (("--aorta-compare=b",), {"WORLD_SIZE": "1"}, (o.DEFAULT_GATE_RUNS, o.DEFAULT_CONFIRM)),
        (("--aorta-compare=b",), {"WORLD_SIZE": ""}, (o.DEFAULT_GATE_RUNS, o.DEFAULT_CONFIRM)),
        (("--aorta-compare=b",), {fresh_runs.CHILD_ENV: "2/3"}, (1, 0)),  # a fresh run never starts runs
        (
            ("--aorta-compare=b", "--aorta-runs=1", "--aorta-confirm=0"),
            {"WORLD_SIZE": "4"},
            (1, 0),
        ),  # allowed there
    ],
)
def test_runs_and_confirm_default_for_this_process(monkeypatch, args, env, want):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    c = parse(*args)
    gating, comparing = bool(c.ns.aorta_compare or c.ns.aorta_save_baseline), bool(c.ns.aorta_compare)
    assert o.runs_and_confirm(c, gating, comparing) == want


@pytest.mark.parametrize(
    "args, says",
    [
        (("--aorta-runs=2",), "--aorta-runs=2 under torchrun"),
        (("--aorta-runs=auto",), "--aorta-runs=auto under torchrun"),
        (("--aorta-confirm=2",), "--aorta-confirm=2 under torchrun"),
        (("--aorta-confirm=1",), "--aorta-confirm=1 under torchrun"),
    ],
)
def test_runs_or_confirm_under_torchrun_are_refused_naming_the_flag(monkeypatch, args, says):
    monkeypatch.setenv("WORLD_SIZE", "2")
    c = parse("--aorta-compare=b", *args)
    with pytest.raises(pytest.UsageError) as exc:
        o.runs_and_confirm(c, True, True)
    assert str(exc.value) == (
        f"{says}: fresh-process runs are started by the gate outside torchrun; launch torchrun once per run "
        "instead (saving to a baseline adds a run; 'aorta compare BASELINE.json RUN1.json RUN2.json ...' judges "
        "several runs together)"
    )


def test_confirm_with_auto_is_refused_naming_the_count():
    c = parse("--aorta-compare=b", "--aorta-runs=auto", "--aorta-confirm=2")
    with pytest.raises(
        pytest.UsageError, match=r"^--aorta-confirm=2 with --aorta-runs auto: .*leave --aorta-confirm out$"
    ):
        o.runs_and_confirm(c, True, True)


# ------------------------------------------------------------------------------------------ gate_options
def test_gate_options_defaults_live_under_the_rootdir():
    opts = o.gate_options(parse("--aorta-compare=main"))
    assert opts == o.GateOptions(
        save_name=None,
        replace_baseline=False,
        compare_ref="main",
        baseline_dir=ROOT / ".aorta" / "baselines",
        runs_root=ROOT / ".aorta" / "runs",
        settings=o.gate_settings(parse("--aorta-compare=main")),
        confirm=o.DEFAULT_CONFIRM,
        runs=o.DEFAULT_GATE_RUNS,
        verdict_json=ROOT / DEFAULT_VERDICT_JSON,
        markdown=None,
        test_slowdown=0.0,
        budget_s=o.DEFAULT_BUDGET_S,
    )
    assert (opts.auto, opts.orchestrates) == (False, True)


def test_gate_options_given_places_and_budget():
    opts = o.gate_options(
        parse(
            "--aorta-save-baseline=nb",
            "--aorta-replace-baseline",
            "--aorta-baseline-dir=/b",
            "--aorta-runs-dir=/runs",
            "--aorta-verdict-json=/v.json",
            "--aorta-markdown=/m.md",
            "--aorta-runs=auto",
            "--aorta-budget=90",
        )
    )
    assert (opts.save_name, opts.replace_baseline, opts.baseline_dir, opts.runs_root) == (
        "nb",
        True,
        Path("/b"),
        Path("/runs"),
    )
    assert (opts.verdict_json, opts.markdown, opts.budget_s, opts.runs, opts.confirm) == (
        Path("/v.json"),
        Path("/m.md"),
        90.0,
        o.AUTO_RUNS,
        0,
    )
    assert (opts.auto, opts.orchestrates) == (True, True)


def test_one_run_here_does_not_orchestrate_and_a_slowdown_is_kept():
    opts = o.gate_options(parse("--aorta-test-slowdown=0.05"))
    assert (opts.runs, opts.auto, opts.orchestrates, opts.test_slowdown, opts.confirm) == (
        1,
        False,
        False,
        0.05,
        0,
    )
    two = o.gate_options(parse("--aorta-runs=2"))
    assert (two.auto, two.orchestrates) == (False, True)


@pytest.mark.parametrize(
    "args, says",
    [
        (
            ("--aorta-compare=b", "--aorta-budget=10m"),
            "--aorta-budget=600 s needs --aorta-runs auto (a fixed --aorta-runs N runs N times whatever the time)",
        ),
        (
            ("--aorta-compare=b", "--aorta-runs=4", "--aorta-budget=90"),
            "--aorta-budget=90 s needs --aorta-runs auto (a fixed --aorta-runs N runs N times whatever the time)",
        ),
        (
            ("--aorta-runs=auto",),
            "--aorta-runs auto needs --aorta-compare NAME|PATH or --aorta-save-baseline NAME",
        ),
        (
            ("--aorta-save-baseline=b", "--aorta-test-slowdown=0.05"),
            "--aorta-save-baseline with --aorta-test-slowdown: a run slowed on purpose can never be saved as a "
            "baseline",
        ),
        (("--aorta-replace-baseline",), "--aorta-replace-baseline needs --aorta-save-baseline NAME"),
        (("--aorta-confirm=2",), "--aorta-confirm=2 needs --aorta-compare NAME|PATH"),
        (
            ("--aorta-save-baseline=b", "--aorta-confirm=1"),
            "--aorta-confirm=1 needs --aorta-compare NAME|PATH",
        ),
    ],
)
def test_a_pair_that_cannot_go_together_is_refused_naming_both(args, says):
    assert refused(*args) == says


def test_each_pair_alone_is_allowed():
    for args in (
        ("--aorta-compare=b", "--aorta-runs=auto", "--aorta-budget=90"),
        ("--aorta-save-baseline=b", "--aorta-runs=auto"),
        ("--aorta-compare=b", "--aorta-test-slowdown=0.05"),
        ("--aorta-save-baseline=b", "--aorta-replace-baseline"),
        ("--aorta-compare=b", "--aorta-confirm=2"),
    ):
        o.gate_options(parse(*args))


def test_a_save_with_comm_ballast_is_refused():
    c = parse("--aorta-save-baseline=b")
    c.ns.aorta_test_comm_ballast = 0.1
    with pytest.raises(pytest.UsageError) as exc:
        o.gate_options(c)
    assert str(exc.value) == (
        "--aorta-save-baseline with --aorta-test-comm-ballast: a run slowed on purpose can never be saved as a "
        "baseline"
    )
    c.ns.aorta_test_comm_ballast = 0.0
    assert o.gate_options(c).save_name == "b"
    del (
        c.ns.aorta_test_comm_ballast
    )  # the FSDP suite's option not declared (its plugin not loaded): no ballast
    assert o.gate_options(c).save_name == "b"


@pytest.mark.parametrize("env", [fork_server.START_ENV, warm_rank.START_ENV])
def test_a_bad_start_mode_is_refused_only_where_runs_are_started(monkeypatch, env):
    monkeypatch.setenv(env, "spawn")
    says = refused("--aorta-compare=b")
    assert says.startswith(f"{env}='spawn': give one of ")
    assert o.gate_options(parse()).runs == 1  # one run here: no run is started, the setting is not read


def test_rank_reads_rank_and_takes_0_when_unset_or_empty(monkeypatch):
    assert o.rank() == 0
    monkeypatch.setenv("RANK", "")
    assert o.rank() == 0
    monkeypatch.setenv("RANK", "3")
    assert o.rank() == 3


# ------------------------------------------------------------------------------------------ the help
# What a user reads of each option is part of its interface: a change here is a change to the docs.
HELP = [  # (option, metavar, help) as pytest --help shows them (argparse prints %% as %)
    (
        "--aorta-save-baseline",
        "NAME",
        "save this run as baseline NAME for this machine (GPU model and count)",
    ),
    (
        "--aorta-replace-baseline",
        None,
        "with --aorta-save-baseline: start baseline NAME afresh instead of adding this run to its runs",
    ),
    (
        "--aorta-compare",
        "NAME|PATH",
        "compare this run with a saved baseline (a name for this machine, or a JSON file)",
    ),
    ("--aorta-baseline-dir", "DIR", "where baselines live (default: .aorta/baselines in the rootdir)"),
    (
        "--aorta-runs-dir",
        "DIR",
        "where fresh-process runs write their JSON and logs (default: .aorta/runs in the rootdir)",
    ),
    (
        "--aorta-check-run",
        "auto|always",
        "a gate's check run (output checks, kernel passes, known answers): auto (default) skips it where the "
        "same code, stack, machine and command passed it before (the save, the last compare: "
        "<--aorta-runs-dir>/checks.json) and says so; always runs it",
    ),
    ("--aorta-allow-mismatch", None, "compare even if the baseline is from another GPU model or backend"),
    (
        "--aorta-allow-env-diff",
        "NAME[,NAME]",
        "scheduling env vars (names or globs, '*' for all) that may differ from the baseline's; any other difference refuses the comparison with exit 14",
    ),
    (
        "--aorta-runs",
        "N",
        "run the benchmarks in N fresh processes and judge (or save) their runs together; default 3 with --aorta-compare or --aorta-save-baseline, 1 otherwise and under torchrun; auto: add runs until every figure is decided (a sequential rule that keeps alpha) or --aorta-budget ends",
    ),
    (
        "--aorta-budget",
        "TIME",
        "with --aorta-runs auto: the wall time its runs may take, e.g. 600, 10m, 1h (default 10m); no run starts that the slowest so far would carry past it",
    ),
    (
        "--aorta-lean-run",
        None,
        "(set by the gate in its repeat runs, after its check run) benchmarks only: no output check, no kernel or labelled pass but for figures read from the kernel timeline, no test that is not a benchmark",
    ),
    (
        "--aorta-min-judged",
        "SHARE",
        "a compare that judged (SLOWER, FASTER or SAME) fewer than SHARE of its figures is inconclusive, exit 15, not clean (default 50%%; a compare that judged none is always inconclusive)",
    ),
    (
        "--aorta-confirm",
        "N",
        "up to N more fresh-process runs of each benchmark with a suspected regression before the verdict (default 2 with --aorta-compare; 0 under torchrun)",
    ),
    (
        "--aorta-max-mde",
        "RATIO",
        "a figure whose minimum detectable effect on this machine exceeds RATIO is not gateable (default 0.05 = 5%%)",
    ),
    (
        "--aorta-order-seed",
        "N",
        "run the test files in a shuffled order fixed by N (0: as collected); fresh-process runs vary it",
    ),
    (
        "--aorta-only-file",
        "PATH",
        "run only the benchmarks whose node ids are listed in PATH, one a line (confirmation runs)",
    ),
    (
        "--aorta-min-effect",
        "RATIO",
        "smallest relative change worth a SLOWER verdict, a policy beside each figure's measured noise (default 0.01 = 1%%)",
    ),
    (
        "--aorta-threshold",
        "[BENCH:]METRIC=RATIO",
        "minimum effect for one metric and/or benchmark glob, e.g. tflops=5%% or *tiny_kernel*:device_ms=0.1 (repeatable; later wins; also ini aorta_thresholds)",
    ),
    ("--aorta-alpha", "P", "two-sided significance of the t test on run figures (default 0.01)"),
    ("--aorta-verdict-json", "PATH", "verdict file (default reports/aorta-verdict.json in the rootdir)"),
    ("--aorta-markdown", "PATH", "markdown summary for CI (also appended to $GITHUB_STEP_SUMMARY when set)"),
    (
        "--aorta-test-slowdown",
        "FRACTION",
        "TESTING THE GATE ONLY: add calibrated real device work so each iteration is about FRACTION slower (e.g. 0.05); recorded in extra_info; such a run cannot be a baseline",
    ),
]


def option_table():
    parser = Parser(_ispytest=True)
    o.add_options(parser)
    (group,) = [g for g in parser._groups if g.name == "aorta-gate"]
    return group, [(a.names()[0], a.attrs().get("metavar"), a.attrs().get("help")) for a in group.options]


def test_the_options_are_in_one_group_each_with_its_metavar_and_help():
    group, got = option_table()
    assert group._arggroup.title == "aorta regression gate (baselines, verdicts, exit codes)"
    assert got == HELP


def test_the_defaults_the_help_names_are_the_defaults_the_code_takes():
    text = {name: h.replace("%%", "%") for name, _, h in HELP}
    assert (
        f"default {o.DEFAULT_GATE_RUNS} with --aorta-compare or --aorta-save-baseline" in text["--aorta-runs"]
    )
    assert f"(default {o.DEFAULT_CONFIRM} with --aorta-compare; 0 under torchrun)" in text["--aorta-confirm"]
    assert o.DEFAULT_BUDGET_S == 10 * 60 and "(default 10m)" in text["--aorta-budget"]
    assert f"(default {DEFAULT_MAX_MDE} = {DEFAULT_MAX_MDE:.0%})" in text["--aorta-max-mde"]
    assert f"(default {DEFAULT_MIN_EFFECT} = {DEFAULT_MIN_EFFECT:.0%})" in text["--aorta-min-effect"]
    assert f"(default {DEFAULT_ALPHA})" in text["--aorta-alpha"]
    assert f"(default {DEFAULT_MIN_JUDGED:.0%};" in text["--aorta-min-judged"]
    assert f"(default {DEFAULT_VERDICT_JSON} in the rootdir)" in text["--aorta-verdict-json"]


def test_each_option_with_a_value_parses_it_by_its_own_name():
    group, _ = option_table()
    types = {a.names()[0]: a.attrs().get("type") for a in group.options}
    named = {k: t.__name__ for k, t in types.items() if t is not None}
    assert named == {
        k: "parse_" + k.strip("-").replace("-", "_")
        for k in (
            "--aorta-save-baseline",
            "--aorta-runs",
            "--aorta-check-run",
            "--aorta-budget",
            "--aorta-min-judged",
            "--aorta-confirm",
            "--aorta-max-mde",
            "--aorta-order-seed",
            "--aorta-min-effect",
            "--aorta-threshold",
            "--aorta-alpha",
            "--aorta-test-slowdown",
        )
    }
    assert option_table()[0].parser._inidict["aorta_thresholds"] == (
        "per-metric / per-benchmark minimum effects, one [BENCH:]METRIC=RATIO a line",
        "linelist",
        [],
    )


def test_the_places_the_gate_writes_are_declared_as_outputs_folder_or_file():
    from aorta.record.output_arguments import OPTION_OUTPUTS

    option_table()
    assert {k: OPTION_OUTPUTS[k] for k in ("aorta_baseline_dir", "aorta_runs_dir", "aorta_verdict_json")} == {
        "aorta_baseline_dir": ("--aorta-baseline-dir", "dir", None),
        "aorta_runs_dir": ("--aorta-runs-dir", "dir", None),
        "aorta_verdict_json": ("--aorta-verdict-json", "file", None),
    }
    assert OPTION_OUTPUTS["aorta_markdown"] == ("--aorta-markdown", "file", None)
