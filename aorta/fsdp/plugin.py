"""pytest plugin for the FSDP scenarios: configuration options, the session's process group, rank
agreement under torchrun, and the ``fsdp_bench`` fixture that measures a scenario and records it.

Under ``torchrun --nproc_per_node N -m pytest benchmarks/fsdp`` every rank is a pytest process:

- only rank 0 prints and writes ``--benchmark-json`` (other ranks' terminal output goes to /dev/null and
  their JSON/save options are cleared before pytest-benchmark reads them);
- at collection end every rank checks that all ranks collected the same test ids in the same order;
  a mismatch stops every rank with the first difference;
- after each phase of each test (setup, call, teardown) the ranks exchange their outcome: a failure on
  any rank fails the test on all ("failed on rank(s) [...]"), a skip on any rank skips it on all, so the
  next test starts in step;
- each rank's results are gathered to rank 0, which records them.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from aorta.fsdp.breakdown_text import breakdown_lines
from aorta.fsdp.config import ConfigError, FsdpSuiteConfig, load_config_noting
from aorta.record.output_arguments import output_option
from aorta.timing.replay_clock import ReplayClock, replay_into

if TYPE_CHECKING:  # imported lazily at run time: it brings in torch.distributed
    from aorta.fsdp.distributed import DistEnv

DEFAULT_TIMEOUT_S = 300.0
MAX_TIMEOUT_S = 86400.0  # a collective that waits a day is a hang; torch's timedelta overflows on inf


def parse_timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--aorta-dist-timeout={text!r}: give seconds as a number > 0"
        ) from None
    if not 0 < value <= MAX_TIMEOUT_S:  # inf passed "> 0" and overflowed at setup (issue 38, case 17)
        raise argparse.ArgumentTypeError(
            f"--aorta-dist-timeout={text!r}: give seconds > 0 and at most {MAX_TIMEOUT_S:g} (a day)"
        )
    return value


@dataclass
class FsdpState:
    config: FsdpSuiteConfig
    artifacts: Path
    timeout_s: float
    clock: ReplayClock = field(default_factory=ReplayClock)
    env: DistEnv | None = None  # once the group is up
    records: list[dict] = field(default_factory=list)
    rows: list[dict] = field(default_factory=list)
    jsonl_written: str | None = None
    notes: list[str] = field(default_factory=list)  # said in the run's header
    stalled: str | None = None  # a rank did not reach an agreement in time: no further waits for it
    link_ceiling: dict | None = None  # the collective sweep's busbw ceiling, once it ran in this session
    link_ceiling_source: str | None = None
    lean: bool = False  # a gate's lean repeat run (--aorta-lean-run): samples only, no checks (docs/fsdp.md)


STATE = pytest.StashKey[FsdpState]()
LEAN_NO_CEILING = (
    "a gate's repeat run: the collective sweep's ceiling was measured in the gate's full run of this command; "
    "this run's sweep times its judged point only"
)
BENCH_FIXTURES = ("fsdp_bench", "fsdp_record")
ARTIFACT_FIXTURES = ("fsdp_bench", "fsdp_profiler")  # they write per-rank metrics and traces


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("aorta-fsdp", "aorta FSDP2 overlap scenarios")
    g.addoption(
        "--aorta-config",
        default=None,
        metavar="FILE",
        help="YAML configuration of the FSDP scenarios (default config/default.yaml; "
        "config/smoke.yaml is merged on top at smoke size)",
    )
    g.addoption(
        "--aorta-override",
        "--override",
        action="append",
        default=[],
        metavar="KEY.PATH=VALUE",
        help="change one configuration value, e.g. training.steps=20 (repeatable; applied in order, "
        "after --aorta-rounds / --aorta-warmup)",
    )
    g.addoption(
        "--aorta-dist-timeout",
        type=parse_timeout,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"process-group and rank-agreement timeout (default {DEFAULT_TIMEOUT_S:g})",
    )
    g.addoption(
        "--aorta-test-comm-ballast",
        type=_parse_ballast,
        default=None,
        metavar="RATIO",
        help="for proving the gate only: each FSDP block carries a frozen parameter of RATIO times its own, "
        "so every all-gather moves 1+RATIO times its bytes (communication slower, compute unchanged); "
        "recorded as a deliberate slowdown, never saved as a baseline; the configuration key "
        "fsdp.test_comm_ballast",
    )
    output_option(
        g,
        "--aorta-artifacts",
        kind="dir-when-used",
        default="artifacts",
        metavar="DIR",
        help="where per-rank JSONL metrics and profiler traces go (default ./artifacts)",
    )


def _parse_ballast(text: str) -> float:
    from aorta.fsdp.config import MAX_COMM_BALLAST
    from aorta.stats.option_values import parse_positive_ratio

    try:
        value = parse_positive_ratio("--aorta-test-comm-ballast", text, "e.g. 0.5")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if value > MAX_COMM_BALLAST:
        raise argparse.ArgumentTypeError(
            f"--aorta-test-comm-ballast={text!r}: out of range; allowed more than 0 and at most "
            f"{MAX_COMM_BALLAST:g} (times each block's parameters)"
        )
    return value


def _launch():
    from aorta.fsdp.distributed import launch_info

    try:
        return launch_info()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(tryfirst=True)  # before pytest-benchmark reads its options
def pytest_configure(config: pytest.Config) -> None:
    info = _launch()
    if info.rank != 0:
        _results_on_rank_0_only(config)
    opts = config.hook.pytest_aorta_options(config=config)
    try:
        cfg, replaced = load_config_noting(
            config.getoption("aorta_config"),
            _step_overrides(opts) + _ballast_override(config) + config.getoption("aorta_override"),
            smoke=opts.resolved_size == "smoke",
        )
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[STATE] = FsdpState(
        cfg,
        Path(config.getoption("aorta_artifacts")),
        config.getoption("aorta_dist_timeout"),
        lean=bool(config.getoption("aorta_lean_run", False)),
    )
    if replaced:  # issue 38, case 19: the user's sizes are never replaced without a word
        config.stash[STATE].notes.append(
            f"--aorta-config {config.getoption('aorta_config')}: at smoke size (--aorta-size "
            f"{opts.size}) config/smoke.yaml replaces {len(replaced)} of its values: {'; '.join(replaced)}; "
            "--aorta-size full keeps them"
        )


def pytest_report_header(config: pytest.Config) -> list[str]:
    state = config.stash.get(STATE, None)
    return [f"aorta fsdp: note: {n}" for n in state.notes] if state is not None else []


def _step_overrides(opts) -> list[str]:
    """``--aorta-rounds`` / ``--aorta-warmup``, where given, as the FSDP configuration's timed and untimed step
    counts (a scenario's rounds are its steps); applied before ``--aorta-override``, so an explicit
    ``--aorta-override training.steps=N`` still wins. Not given: the configuration's own counts stand."""
    out = []
    if opts.rounds_given:
        out.append(f"training.steps={opts.rounds}")
    if opts.warmup_given:
        out.append(f"training.warmup_steps={opts.warmup}")
    return out


def _ballast_override(config: pytest.Config) -> list[str]:
    ratio = config.getoption("aorta_test_comm_ballast")
    return [] if ratio is None else [f"fsdp.test_comm_ballast={ratio!r}"]


def _results_on_rank_0_only(config: pytest.Config) -> None:
    """Clear this rank's result options: pytest-benchmark would write --benchmark-json in every process.

    The path belongs to rank 0, so nothing here truncates or removes it. Up to pytest-benchmark 5.2 the option
    is a file that argparse opened (and emptied) at parse time, before rank 0 can have written anything:
    this rank's handle is closed unwritten. From 5.3 it is a ``pathlib.Path``: there is nothing to close.
    """
    json_file = getattr(config.option, "benchmark_json", None)
    if json_file is not None:
        close = getattr(json_file, "close", None)
        if callable(close):
            close()
        config.option.benchmark_json = None
    for name in ("benchmark_save", "benchmark_autosave"):
        if hasattr(config.option, name):
            setattr(config.option, name, None if name == "benchmark_save" else False)


def _env(config: pytest.Config) -> DistEnv:
    """The session's process group, started on first use (at session start under torchrun)."""
    from aorta.fsdp.distributed import init_dist

    state = config.stash[STATE]
    if state.env is None:
        state.env = init_dist(config.hook.pytest_aorta_options(config=config).backend, state.timeout_s)
    return state.env


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    info = _launch()
    if info.rank != 0:
        tr = config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:  # other ranks stay silent: rank 0 reports for all
            from _pytest._io import TerminalWriter

            tr._tw = TerminalWriter(open(os.devnull, "w"))  # noqa: SIM115 - lives as long as the session
    if info.world_size > 1:
        from aorta.fsdp import interrupt_guard

        interrupt_guard.install()  # Ctrl-C ends a rank stuck in a collective within seconds
        _check_same_settings(config, _env(config))  # the group is also needed by the collection check below


def _check_same_settings(config: pytest.Config, env) -> None:
    """Stop every rank, naming the difference, when the ranks were started with different settings."""
    from aorta.fsdp.startup import rank_settings, settings_differences, settings_message

    mine = rank_settings(config.stash[STATE].config.as_dict(), vars(config.option))
    differences = settings_differences(env.exchange("settings", mine))
    if differences:
        raise pytest.UsageError(settings_message(differences))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash[STATE]
    for item in items:
        if any(f in getattr(item, "fixturenames", ()) for f in BENCH_FIXTURES):
            # pytest-benchmark reads its timer from this marker: step times replayed from the timing loop.
            item.add_marker(pytest.mark.benchmark(timer=state.clock))


def first_difference(id_lists: list[list[str]]) -> str | None:
    """None when every rank collected the same ids in the same order, else a sentence naming the first
    difference."""
    ref = id_lists[0]
    for rank, ids in enumerate(id_lists[1:], start=1):
        if ids == ref:
            continue
        for i, (a, b) in enumerate(zip(ref, ids)):
            if a != b:
                return f"rank {rank} collected {b!r} at position {i} where rank 0 collected {a!r}"
        return f"rank 0 collected {len(ref)} tests, rank {rank} collected {len(ids)}"
    return None


def _artifacts_problem(session: pytest.Session) -> str | None:
    """What is wrong with --aorta-artifacts when a collected test will write there, else None."""
    from aorta.record.output_paths import OutputPathError, check_output_dir

    if session.config.option.collectonly:
        return None
    if not any(f in getattr(item, "fixturenames", ()) for item in session.items for f in ARTIFACT_FIXTURES):
        return None
    try:
        check_output_dir("--aorta-artifacts", session.config.stash[STATE].artifacts)
    except OutputPathError as exc:
        return str(exc)
    return None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Before any test runs: the artifacts folder can be written, and every rank collected the same tests."""
    state = session.config.stash[STATE]
    problem = _artifacts_problem(session)
    if state.env is None or not state.env.distributed:
        if problem:
            raise pytest.UsageError(problem)
        return
    ids = [item.nodeid for item in session.items]
    everyone = state.env.exchange("collection", (ids, problem))
    diff = first_difference([rank_ids for rank_ids, _ in everyone])
    if diff:
        raise pytest.UsageError(
            f"aorta: ranks collected different tests ({diff}); every rank must run the same "
            "tests in the same order: use the same arguments and the same checkout on all ranks"
        )
    problems: dict[str, list[int]] = {}
    for rank, (_, text) in enumerate(everyone):
        if text:
            problems.setdefault(text, []).append(rank)
    if problems:
        raise pytest.UsageError("; ".join(f"{text} (rank(s) {ranks})" for text, ranks in problems.items()))


def _outcome(rep) -> tuple[str, str, bool]:
    from aorta.fsdp.distributed import PeerFailed

    text = ""
    if rep.failed:
        crash = getattr(rep.longrepr, "reprcrash", None)
        lines = (crash.message if crash is not None else str(rep.longrepr or "")).strip().splitlines()
        text = lines[0] if lines else "failed"
    elif rep.skipped and isinstance(rep.longrepr, tuple):
        text = str(rep.longrepr[2]).removeprefix("Skipped: ")
    consequence = rep.failed and PeerFailed.__name__ in str(rep.longrepr)
    return rep.outcome, text[:300], consequence


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    state = item.config.stash.get(STATE, None)
    env = state.env if state else None
    if env is None or not env.distributed or state is None or state.stalled:
        return
    rep = outcome.get_result()
    mine = _outcome(rep)
    from aorta.fsdp.distributed import RankTimeout

    try:
        everyone = env.exchange(f"outcome/{item.nodeid}/{call.when}", mine)
    except RankTimeout as exc:
        # This test fails (so the summary counts it) and the session stops after it: no later test or
        # agreement waits another timeout for a rank that is gone.
        state.stalled = f"aorta: {exc}"
        rep.outcome = "failed"
        rep.longrepr = (
            f"{state.stalled}\n\nrank {env.rank}:\n{rep.longrepr}" if rep.longrepr else state.stalled
        )
        item.session.shouldstop = state.stalled
        return
    failed = [r for r, (o, _, consequence) in enumerate(everyone) if o == "failed" and not consequence]
    followed = [r for r, (o, _, consequence) in enumerate(everyone) if o == "failed" and consequence]
    if failed or followed:
        culprits = failed or followed
        reasons = "; ".join(f"rank {r}: {everyone[r][1]}" for r in culprits)
        if rep.outcome == "failed":  # keep this rank's own report under the common line
            rep.longrepr = f"failed on rank(s) {culprits}: {reasons}\n\nrank {env.rank}:\n{rep.longrepr}"
        else:
            rep.outcome = "failed"
            rep.longrepr = f"failed on rank(s) {culprits}: {reasons}"
    elif any(o == "skipped" for o, _, _ in everyone) and rep.outcome != "skipped":
        r = next(r for r, (o, _, _) in enumerate(everyone) if o == "skipped")
        rep.outcome = "skipped"
        rep.longrepr = (
            str(item.path),
            item.location[1] or 0,
            f"Skipped: skipped on rank {r}: {everyone[r][1]}",
        )


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def fsdp_config(pytestconfig: pytest.Config) -> FsdpSuiteConfig:
    return pytestconfig.stash[STATE].config


@pytest.fixture(scope="session")
def dist_env(pytestconfig: pytest.Config):
    """This rank's process group and device (a one-rank group without torchrun)."""
    return _env(pytestconfig)


@pytest.fixture
def fsdp_profiler(pytestconfig: pytest.Config, fsdp_config, dist_env):
    """``fsdp_profiler(step, name, profiling=None)``: run ``step`` under torch.profiler with the configured
    wait/warmup/active schedule (or ``profiling``, a ProfilingConfig) and return the ProfiledWindow; the
    trace goes to ``<artifacts>/torch_profiler/rank<r>/<name>.pt.trace.json`` where traces are on."""
    from aorta.fsdp.profiling import profile_steps, trace_enabled

    state = pytestconfig.stash[STATE]

    def profile(step, name: str, profiling=None):
        pcfg = profiling or fsdp_config.profiling
        on, note = trace_enabled(pcfg, dist_env.device.backend)
        path = state.artifacts / "torch_profiler" / f"rank{dist_env.rank}" / f"{name}.pt.trace.json"
        return profile_steps(step, dist_env.device, pcfg, trace_path=path if on else None, trace_note=note)

    return profile


@pytest.fixture
def fsdp_record(request, benchmark):
    """``fsdp_record(step_ms, record, group=...)``: put device times in pytest-benchmark's stats and the
    run record in its JSON (what ``fsdp_bench`` does after measuring; usable by other FSDP-suite tests).
    Returns True once recorded."""
    state = request.config.stash[STATE]

    def record(step_ms, bench_record, *, group: str = "fsdp") -> bool:
        benchmark.group = group
        benchmark.extra_info.update(bench_record.to_extra_info())
        replay_into(benchmark, state.clock, step_ms)
        return True

    return record


@pytest.fixture(scope="session")
def fsdp_lean_run(pytestconfig: pytest.Config) -> bool:
    """True in a gate's lean repeat run (``--aorta-lean-run``): time what the gate judges, check nothing."""
    return pytestconfig.stash[STATE].lean


@pytest.fixture
def fsdp_link_ceiling(request):
    """``fsdp_link_ceiling(ceiling, source)``: keep the collective sweep's ceiling for the scenarios after it."""
    state = request.config.stash[STATE]

    def keep(ceiling: dict, source: str) -> None:
        state.link_ceiling, state.link_ceiling_source = ceiling, source

    return keep


@pytest.fixture
def fsdp_bench(request, fsdp_record, fsdp_config, dist_env, fsdp_telemetry):
    """``fsdp_bench(scenario)``: check, time and profile one scenario on every rank; rank 0 records all."""
    from aorta.fsdp.distributed import PeerFailed
    from aorta.fsdp.figures import build_result
    from aorta.fsdp.measure import run_rank
    from aorta.fsdp.rank_result import RankResult
    from aorta.fsdp.training import CheckFailed, ScenarioUnavailable

    state = request.config.stash[STATE]

    def run(scenario):
        env = dist_env
        if request.config.getoption("aorta_test_slowdown", None):
            pytest.skip(
                "--aorta-test-slowdown adds device work to the hardware-queue benchmarks only; an FSDP "
                "scenario proves the gate with --aorta-test-comm-ballast RATIO"
            )
        observe, stop_sampling = fsdp_telemetry()
        try:
            result, records = run_rank(scenario, fsdp_config, env, state.artifacts, observe, lean=state.lean)
        except ScenarioUnavailable as exc:
            state.records.append(
                {
                    "kind": "scenario",
                    "scenario": scenario.id,
                    "rank": env.rank,
                    "outcome": "skipped",
                    "reason": str(exc),
                }
            )
            pytest.skip(f"{scenario.id}: {exc}")
        except CheckFailed as exc:
            pytest.fail(f"output check failed, nothing timed: {exc}", pytrace=False)
        except Exception as exc:
            if env.device.is_out_of_memory(exc):
                env.device.free_memory()
                pytest.fail(f"{scenario.id}: out of memory: {exc}", pytrace=False)
            raise
        finally:
            stop_sampling()
        state.records.extend(records)
        exchanged_from = time.perf_counter()
        try:
            everyone = env.exchange(
                f"result/{request.node.nodeid}",
                result.as_dict(),
                abort_if=f"outcome/{request.node.nodeid}/call",
            )
        except PeerFailed as exc:
            pytest.fail(f"PeerFailed: {exc}", pytrace=False)
        step_ms, record = build_result(
            {"id": scenario.id, **{k: v for k, v in scenario.__dict__.items() if k != "id"}},
            [RankResult.from_dict(r) for r in everyone],
            world_size=env.world_size,
            seq_len=fsdp_config.dataset.seq_len,
            backend=env.device.backend,
            comm_library=env.comm_library,
            config=fsdp_config.as_dict(),
        )
        # the wait for every rank's result, and rank 0's figures from them
        if "host_phase_s" in record.details:
            record.details["host_phase_s"]["exchange"] = round(time.perf_counter() - exchanged_from, 4)
        _busbw_vs_ceiling(record, state)
        if fsdp_record(step_ms, record):
            state.rows.append(_row(request.node.name, record))
        return record

    return run


def _busbw_vs_ceiling(record, state: FsdpState) -> None:
    """The scenario's transfer-time busbw as a share of the sweep's ceiling at its message size."""
    from aorta.fsdp.link_ceiling import shares_of_ceiling

    transfer = record.get("transfer_busbw")
    if not transfer:
        return
    if state.link_ceiling is None:
        record.details["busbw_vs_ceiling"] = {
            "reason": LEAN_NO_CEILING
            if state.lean
            else "no collective sweep in this session (benchmarks/fsdp/test_collective_sweep.py)"
        }
        return
    record.details["busbw_vs_ceiling"] = {
        "ceiling_is": state.link_ceiling_source,
        **shares_of_ceiling(transfer, state.link_ceiling),
    }


def _row(name: str, record) -> dict:
    m = record.metrics

    def val(key):
        return m[key].value if key in m else None

    return {
        "name": name,
        "step_ms": val("step_ms"),
        "exposed_transfer_ms": val("exposed_transfer_ms_worst_rank"),
        "exposed_wait_ms": val("exposed_wait_ms_worst_rank"),
        "overlap_ratio": val("overlap_ratio_worst_rank"),
        "idle_share": val("gpu_idle_share_rank0"),
        "notes": record.reading_notes,
        "breakdown": breakdown_lines(record),
    }


# ----------------------------------------------------------------------------- end of session
def pytest_sessionfinish(session: pytest.Session) -> None:
    from aorta.fsdp.distributed import RankTimeout
    from aorta.fsdp.metrics_log import jsonl_path, write_jsonl

    state = session.config.stash.get(STATE, None)
    if state is None or state.env is None:
        return
    if state.records:
        path = jsonl_path(state.artifacts, state.env.rank)
        write_jsonl(path, state.records)
        state.jsonl_written = str(path)
    if state.env.distributed and not state.stalled:
        # torchrun stops the other ranks as soon as one exits non-zero: leave together, files written.
        try:
            state.env.exchange("session_end", True)
        except RankTimeout as exc:
            session.config.get_terminal_writer().line(f"aorta: {exc}", red=True)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if (
        state is None or not state.rows or state.env is None
    ):  # rows come from fsdp_bench, which starts the group
        return
    from aorta.record.table import format_table

    env = state.env
    terminalreporter.section(f"aorta: FSDP scenarios ({env.world_size} rank(s), {env.comm_library})")
    rows = [
        [
            r["name"],
            r["step_ms"],
            r["overlap_ratio"],
            r["exposed_transfer_ms"],
            r["exposed_wait_ms"],
            r["idle_share"],
        ]
        for r in state.rows
    ]
    for line in format_table(
        [
            "scenario",
            "step ms (slowest rank)",
            "overlap ratio (worst rank)",
            "exposed transfer ms/step (worst rank)",
            "exposed wait ms/step (worst rank)",
            "GPU idle share (rank 0)",
        ],
        rows,
    ):
        terminalreporter.write_line(line)
    for r in state.rows:
        for line in r["breakdown"]:
            terminalreporter.write_line(f"{r['name']}: {line}")
    for r in state.rows:
        for note in r["notes"]:
            terminalreporter.write_line(f"{r['name']}: {note}", yellow=True)
    if state.jsonl_written:
        terminalreporter.write_line(
            f"per-rank metrics: {Path(state.jsonl_written).parent}/rank_<r>_metrics.jsonl"
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is not None and state.env is not None:
        state.env.shutdown()
        state.env = None
