"""aorta's pytest plugin: options, fixtures, device-timed benchmarks, machine info, terminal summary.

Registered once, under the name ``aorta``: by the ``pytest11`` entry point when aorta is installed, or, in a
checkout that was never installed, by the repository's ``conftest.py`` (its one documented fallback). This
module registers the sub-plugins below (nothing else registers any of them) and the hooks they share
(``aorta.hookspec``): a sub-plugin asks this one through ``config.hook``, never by importing it.
"""

from __future__ import annotations

import glob
import os
import sys
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

import aorta
from aorta import stats
from aorta.device import Device, DeviceUnavailable, StreamLimit, detect_backend
from aorta.environment import versions
from aorta.exit_codes import EXIT_PYTEST_USAGE, EXIT_WRITE_FAILED
from aorta.hw_queue.marks import MARKERS
from aorta.hw_queue.runner import run_workload
from aorta.hw_queue.workload import StreamWorkError, WorkloadCheckError, WorkloadUnavailable
from aorta.options import (
    AortaOptions,
    parse_copy_mb,
    parse_device,
    parse_extra_deps,
    parse_issue_order,
    parse_iterations,
    parse_kernel_pass_rounds,
    parse_mode,
    parse_rounds,
    parse_size,
    parse_streams,
    parse_sync_mode,
    parse_warmup,
)
from aorta.record import BenchRecord, child_status, write_record
from aorta.record.bench import MEASURED_AS_REFERENCE
from aorta.record.output_arguments import (
    check_option_outputs,
    check_outputs,
    option_outputs,
    with_ini_outputs,
)
from aorta.record.output_paths import OutputPathError
from aorta.record.read_files import (
    PYTEST_FILES,
    check_not_read,
    files_to_collect,
    module_files,
    package_files,
    plugin_files,
)
from aorta.record.redact import redact_text, register_entered
from aorta.telemetry.throttle import AllRoundsThrottled
from aorta.timeline import kernel_capture
from aorta.timing import TimingPlan
from aorta.timing.replay_clock import ReplayClock, replay_into
from aorta.timing.slowdown import UNITS_ENV

# Plugin pieces that live in their own modules (one line each), registered with this one.
pytest_plugins = [
    "aorta.record.redact_plugin",
    "aorta.telemetry.plugin",
    "aorta.report.plugin",
    "aorta.gate.plugin",
    "aorta.fsdp.plugin",
    "aorta.history.plugin",
]

BENCH_FIXTURE = "hw_queue"


@dataclass
class SessionState:
    clock: ReplayClock = field(default_factory=ReplayClock)
    rows: list[dict] = field(default_factory=list)
    xdist_skipped: int = 0
    json_error: str | None = None  # --benchmark-json could not be written (aorta.record.benchmark_json)
    # Each configuration's latest result in this session (``Workload.identity()``), kernel rounds dropped: a
    # reference run (``record=False``) of a configuration that already ran is that result, not a second run.
    results: dict[tuple, Any] = field(default_factory=dict)
    # Reference runs made here and recorded with no benchmark of their own (hetero_kernels' tiny kernels alone):
    # their timed rounds are counted with the benchmark that reads them (``reference_timed_s``), and their
    # phases recorded with it (``reference_phase_s``).
    unrecorded: weakref.WeakValueDictionary = field(default_factory=weakref.WeakValueDictionary)
    # Reference runs that timed the plan's rounds, by configuration, until a benchmark of that configuration
    # records one (tiny_kernel_stress's one-stream run, made first as a 4- or 16-stream run's reference): that
    # benchmark records this run rather than measure the same configuration twice in one session.
    reusable: dict[tuple, Any] = field(default_factory=dict)


OPTIONS = pytest.StashKey[AortaOptions]()
DEVICE = pytest.StashKey[Device]()
STATE = pytest.StashKey[SessionState]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """The seams between aorta's plugins (aorta/hookspec.py), declared before the sub-plugins register."""
    from aorta import hookspec

    pluginmanager.add_hookspecs(hookspec)


_PARSER: list[pytest.Parser] = []  # the parser of the session being set up, for options added after ours


def _lazy_benchmark_json(parser: pytest.Parser) -> None:
    from aorta.record.benchmark_json_option import as_path_option

    _PARSER[:] = [parser]
    as_path_option(parser)


def pytest_plugin_registered(plugin: object, manager: pytest.PytestPluginManager) -> None:
    """pytest-benchmark registered after aorta: its ``--benchmark-json`` exists only now."""
    if _PARSER and getattr(plugin, "__name__", "") == "pytest_benchmark.plugin":
        from aorta.record.benchmark_json_option import as_path_option

        as_path_option(_PARSER[0])


def pytest_addoption(parser: pytest.Parser) -> None:
    _lazy_benchmark_json(parser)
    g = parser.getgroup("aorta", "aorta GPU benchmarks")
    # The second spelling of an option (--streams, --rounds, --warmup, --sync-mode, --issue-order, --copy-mb)
    # is the one users typed before every option took the --aorta- prefix; it stays as an alias.
    g.addoption(
        "--aorta-streams",
        "--streams",
        type=parse_streams,
        default=(1, 4, 16),
        metavar="N[,N...]",
        help="stream counts to sweep, e.g. 16 or 1,4,16,64 (1 to 1024; default 1,4,16)",
    )
    g.addoption(
        "--aorta-rounds",
        "--rounds",
        type=parse_rounds,
        default=None,
        metavar="N",
        help="timed rounds per benchmark (default 10 on a GPU, 5 on CPU); in the FSDP suite, given "
        "explicitly, the timed steps per scenario (training.steps; --aorta-override still wins)",
    )
    g.addoption(
        "--aorta-kernel-pass-rounds",
        type=parse_kernel_pass_rounds,
        default=None,
        metavar="N",
        help="profiled rounds of each benchmark's kernel-timestamp pass (GPU; default 5; a gate's fresh runs "
        "take 2 unless given: aorta/hw_queue/kernel_pass.py)",
    )
    g.addoption(
        "--aorta-warmup",
        "--warmup",
        type=parse_warmup,
        default=None,
        metavar="N",
        help="untimed warm-up rounds (default 3 on a GPU, 1 on CPU); in the FSDP suite, given "
        "explicitly, the untimed steps (training.warmup_steps; --aorta-override still wins)",
    )
    g.addoption(
        "--aorta-sync-mode",
        "--sync-mode",
        type=parse_sync_mode,
        default="per_round",
        help="per_round: synchronize after each round; end_only: once after all rounds",
    )
    g.addoption(
        "--aorta-device",
        type=parse_device,
        default="auto",
        help="auto (GPU if torch sees one, else CPU), cuda, rocm or cpu",
    )
    g.addoption(
        "--aorta-size",
        type=parse_size,
        default="auto",
        help="problem sizes: auto (smoke on CPU, full on GPU), smoke or full",
    )
    g.addoption(
        "--aorta-issue-order",
        "--issue-order",
        type=parse_issue_order,
        default=("breadth",),
        help="breadth (round-robin over streams) and/or depth (each stream's work back to back)",
    )
    g.addoption(
        "--aorta-iterations",
        type=parse_iterations,
        default=None,
        metavar="K",
        help="fixed iterations per timed round (default: probe, batch K under the ~20 us event floor)",
    )
    g.addoption(
        "--aorta-mode",
        type=parse_mode,
        default="gpu",
        help="gpu (default): the whole round is queued on the GPU before it starts (graph replay, or launches "
        "held behind an untimed hold kernel), so the hardware queues are what is measured; eager: the host's "
        "launch path is part of the round. On CPU the run is eager and the record says why",
    )
    g.addoption(
        "--aorta-copy-mb",
        "--copy-mb",
        type=parse_copy_mb,
        default=None,
        metavar="MIB",
        help="MiB per copy in copy_compute_overlap (default 64 at full size, 1 at smoke size)",
    )
    g.addoption(
        "--aorta-extra-deps",
        type=parse_extra_deps,
        default=0,
        metavar="N",
        help="stream_dependency only: relay every event a kernel waits on through N more streams, a deliberate "
        "extra dependency per kernel for proving the gate sees one (0 to 8; default 0)",
    )


# Timed rounds when none are asked for. The gate's sample is the run (aorta/stats/noise.py): rounds only
# estimate their own run's median, and ten do that to well under the between-run noise (on an H100 the
# process-to-process shift of a figure's median exceeded its within-run CV on most benchmarks, docs/
# measurements.md), while twenty cost a gate-grade compare's several runs twice the timed-round time.
GPU_ROUNDS, CPU_ROUNDS = 10, 5
GPU_WARMUP_ROUNDS, CPU_WARMUP_ROUNDS = 3, 1
# A gate's lean run warms up one round (``--aorta-warmup`` given still wins): it follows the untimed warm
# iteration that stands in for the check (aorta/hw_queue/runner.py ``_warm``) and, unless K is given, the K
# probe's round, so the GPU has run the step twice before its first timed round. The two rounds more of a full
# run cost a lean p0 run about 1.1 s on an H200 (issue 63). Proven by A/A and a 2% slowdown: docs/gate.md.
LEAN_WARMUP_ROUNDS = 1
# A reference run whose timed rounds nothing reads (``Workload.reference_reads_timed_rounds``) times one round:
# its figures come from its kernel pass, which still profiles the run's count of rounds.
REFERENCE_TIMED_ROUNDS = 1


def resolved_options(config: pytest.Config) -> AortaOptions:
    """The run's shared options, resolved once (device to backend, default rounds and warm-up) by the first
    plugin that asks at configure time, then read from ``config.stash`` by every other (the sub-plugins ask
    through ``pytest_aorta_options``)."""
    opts = config.stash.get(OPTIONS, None)
    if opts is None:
        opts = config.stash[OPTIONS] = _resolve_options(config)
    return opts


def _resolve_options(config: pytest.Config) -> AortaOptions:
    try:
        backend = detect_backend(config.getoption("aorta_device"))
    except DeviceUnavailable as exc:
        raise pytest.UsageError(str(exc)) from None
    gpu = backend != "cpu"
    rounds, warmup = config.getoption("aorta_rounds"), config.getoption("aorta_warmup")
    return AortaOptions(
        streams=config.getoption("aorta_streams"),
        rounds=rounds if rounds is not None else (GPU_ROUNDS if gpu else CPU_ROUNDS),
        warmup=warmup if warmup is not None else _default_warmup(config, gpu),
        sync_mode=config.getoption("aorta_sync_mode"),
        device=config.getoption("aorta_device"),
        backend=backend,
        size=config.getoption("aorta_size"),
        issue_order=config.getoption("aorta_issue_order"),
        iterations=config.getoption("aorta_iterations"),
        copy_mb=config.getoption("aorta_copy_mb"),
        extra_deps=config.getoption("aorta_extra_deps"),
        mode=config.getoption("aorta_mode"),
        rounds_given=rounds is not None,
        warmup_given=warmup is not None,
    )


def _default_warmup(config: pytest.Config, gpu: bool) -> int:
    """Warm-up rounds when ``--aorta-warmup`` is not given: 3 on a GPU and 1 on CPU; 1 in a gate's lean run."""
    if config.getoption("aorta_lean_run", False):
        return LEAN_WARMUP_ROUNDS
    return GPU_WARMUP_ROUNDS if gpu else CPU_WARMUP_ROUNDS


def session_device(config: pytest.Config) -> Device:
    """The session's one ``Device`` (the ``aorta_device`` fixture, machine info, the gate's machine check
    through ``pytest_aorta_session_device``)."""
    device = config.stash.get(DEVICE, None)
    if device is None:
        backend = resolved_options(config).backend
        index = 0
        if backend != "cpu":  # under torchrun: this rank's own GPU, as the FSDP process group binds it
            from aorta.fsdp.distributed import device_index_for, launch_info

            index, _ = device_index_for(launch_info().local_rank, Device.visible_gpu_count())
        device = config.stash[DEVICE] = Device.open(backend, index)
    return device


def pytest_aorta_options(config: pytest.Config) -> AortaOptions:
    return resolved_options(config)


def pytest_aorta_session_device(config: pytest.Config) -> Device:
    return session_device(config)


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    problem = versions.incompatibility()
    if problem:
        raise pytest.UsageError(problem)
    register_entered(list(config.invocation_params.args), os.environ)  # secrets as they enter (issue 65)
    _check_outputs(config)
    resolved_options(config)
    try:
        kernel_capture.recording_from_env()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[STATE] = SessionState()
    if os.environ.get(child_status.DONE_ENV):
        config.pluginmanager.register(_ChildDone(), "aorta-child-done")


class _ChildDone:
    """In a gate's or ``aorta ab``'s child: the session's final exit status written as pytest's last act, so
    a parent can tell a child that finished but hangs at exit from one still running
    (aorta/processes/child_process.py, ``call_to_end``)."""

    status = 0

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int):
        result = yield
        self.status = int(session.exitstatus)
        return result

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        child_status.write_done(self.status)


def pytest_unconfigure(config: pytest.Config) -> None:
    device = config.stash.get(DEVICE, None)
    if device is not None:  # no CUPTI detach left pending while the process exits (profiler_detach.py)
        device.settle_profiler()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """pytest writes ``--debug FILE`` as soon as the command line is parsed, before any plugin is configured:
    checked here, on the options known this early (the history among them where aorta was pip-installed), so
    ``--debug history.db`` is refused before pytest writes its log over the history (issue 56)."""
    ns = early_config.known_args_namespace
    debug = getattr(ns, "debug", None)
    if not debug or hasattr(early_config, "workerinput"):
        return
    history = getattr(ns, "aorta_history", None)
    inputs = {"the history database (--aorta-history)": history} if history and "://" not in history else {}
    outputs = [("--debug", "file", debug)]
    roots = getattr(ns, "file_or_dir", None) or [str(early_config.invocation_params.dir)]
    try:
        check_outputs(outputs, inputs)
        check_not_read(
            outputs,
            {
                **module_files(),
                **plugin_files(early_config.pluginmanager.get_plugins()),
                **files_to_collect(outputs, roots),
            },
        )
    except OutputPathError as exc:
        raise pytest.UsageError(str(exc)) from None


def _check_outputs(config: pytest.Config) -> None:
    """Every output option given (``--benchmark-json``, the gate's, the trace and artifact folders: declared
    with ``output_option``) can be written and is none of the run's inputs, before any benchmark runs
    (aorta/record/output_arguments.py). ``--benchmark-json`` is written only after the last benchmark, by
    pytest-benchmark, into a folder that must exist; up to 5.2 argparse opened it already (then not a path)."""
    if hasattr(config, "workerinput"):
        return
    inputs = {"the configuration file": config.inipath} if config.inipath else {}
    try:
        check_option_outputs(_given_options(config), inputs)
        _check_not_read(config)
    except OutputPathError as exc:
        raise pytest.UsageError(redact_text(str(exc))) from None


def _given_options(config: pytest.Config) -> dict[str, Any]:
    """The run's options, an output an ini line gives (``log_file``) among them."""
    return with_ini_outputs(vars(config.option), config.getini)


def _collection_roots(config: pytest.Config) -> list[str]:
    """Where pytest will collect: its arguments (the ini's ``testpaths`` where none were given) and the
    rootdir's ``testpaths`` either way."""
    roots = [str(a) for a in (config.args or [str(config.invocation_params.dir)])]
    for pattern in config.getini("testpaths") or ():
        roots += glob.glob(os.path.join(str(config.rootpath), pattern), recursive=True)
    return roots


def _check_not_read(config: pytest.Config, collected: Sequence[pytest.Item] = ()) -> None:
    """No output is a file the run reads (issue 65): a module it imported (aorta's, its plugins'), a conftest
    file, the configuration file, a test file collected or that pytest will collect (checked at configure
    time: ``--log-file`` is opened then, collection comes later); a folder replaced whole holds none."""
    outputs = option_outputs(_given_options(config))
    read: dict[str, Any] = {f"a collected test file ({item.path.name})": item.path for item in collected}
    if config.inipath:
        read["the configuration file"] = config.inipath
    rootdir_conftest = Path(config.rootpath) / "conftest.py"
    if rootdir_conftest.is_file():
        read["the rootdir's conftest file"] = rootdir_conftest
    read.update(plugin_files(config.pluginmanager.get_plugins()))
    read.update({k: v for k, v in {**package_files(aorta), **module_files()}.items() if k not in read})
    patterns = list(config.getini("python_files") or PYTEST_FILES)
    read.update(files_to_collect(outputs, _collection_roots(config), patterns))
    check_not_read(outputs, read)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """The outputs checked again once the test files are known, before any test runs: none of them, nor a
    conftest file collected on the way, is written over (``--benchmark-json benchmarks/.../test_x.py``)."""
    if hasattr(session.config, "workerinput"):
        return
    try:
        _check_not_read(session.config, session.items)
    except OutputPathError as exc:
        # Not a UsageError: pytest would still end the session, and --junitxml, --benchmark-json and the other
        # writers of its end would write over the file refused. Nothing has run yet and nothing is written.
        print(f"ERROR: {redact_text(str(exc))}", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(EXIT_PYTEST_USAGE)


def benchmark_json_path(config: pytest.Config) -> str | None:
    """The ``--benchmark-json`` path as the user gave it (a path from pytest-benchmark >= 5.3, an open
    file up to 5.2), or None."""
    value = config.getoption("benchmark_json", None)
    if value is None:
        return None
    return os.fspath(value) if isinstance(value, (str, os.PathLike)) else getattr(value, "name", str(value))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    opts = metafunc.config.stash[OPTIONS]
    if "streams" in metafunc.fixturenames:
        metafunc.parametrize("streams", opts.streams, ids=[f"streams{n}" for n in opts.streams])
    if "issue_order" in metafunc.fixturenames:
        metafunc.parametrize("issue_order", opts.issue_order, ids=list(opts.issue_order))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash[STATE]
    xdist_worker = hasattr(config, "workerinput")
    for item in items:
        if BENCH_FIXTURE not in getattr(item, "fixturenames", ()):
            continue
        # pytest-benchmark reads its timer from this marker: device times replayed from the timing loop.
        item.add_marker(pytest.mark.benchmark(timer=state.clock))
        if xdist_worker:
            state.xdist_skipped += 1
            item.add_marker(
                pytest.mark.skip(
                    reason=(
                        "pytest-xdist (-n) disables pytest-benchmark, so no timing would be recorded: "
                        "run benchmarks without -n (or with -n 0 / -p no:xdist)"
                    )
                )
            )


@pytest.fixture(scope="session")
def aorta_options(pytestconfig: pytest.Config) -> AortaOptions:
    return pytestconfig.stash[OPTIONS]


@pytest.fixture(scope="session")
def aorta_device(pytestconfig: pytest.Config) -> Device:
    return session_device(pytestconfig)


@pytest.fixture(scope="session")
def aorta_size(aorta_options: AortaOptions) -> str:
    return aorta_options.resolved_size


@pytest.fixture(scope="session")
def copy_mb(aorta_options: AortaOptions) -> float | None:
    """``--aorta-copy-mb``: MiB per copy, or None for the workload's size default."""
    return aorta_options.copy_mb


@pytest.fixture(scope="session")
def extra_deps(aorta_options: AortaOptions) -> int:
    """``--aorta-extra-deps``: stream_dependency's deliberate extra dependency hops per kernel (0: none)."""
    return aorta_options.extra_deps


@pytest.fixture
def timing_plan(aorta_options: AortaOptions) -> TimingPlan:
    return TimingPlan(
        warmup_rounds=aorta_options.warmup,
        rounds=aorta_options.rounds,
        sync_mode=aorta_options.sync_mode,
        iterations_per_round=aorta_options.iterations,
    )


@pytest.fixture
def hw_queue(
    request, benchmark, aorta_device: Device, aorta_size: str, timing_plan: TimingPlan, aorta_telemetry
):
    """``hw_queue(WorkloadClass, n_streams, *, record=True, reference=None, **params)``: check, time and
    record one workload. ``reference``: the result of a reference run (``record=False``) whose figures this
    one is read against (the workload's ``reference_metrics``), recorded with this benchmark.

    Skips below the workload's minimum or above its maximum stream count; a wrong result or an
    out-of-memory size fails the test with the reason; the rest of the run goes on. A reference run of a
    configuration that already ran in this session (tiny_kernel_stress's one-stream run, recorded as its own
    benchmark) is not run again: that run's result is the reference. Alike, a benchmark whose configuration
    already ran here as a reference run of the plan's rounds records that run (``MEASURED_AS_REFERENCE``).
    """
    state = request.config.stash[STATE]

    def run(workload_cls, n_streams: int, *, record: bool = True, reference=None, **kwargs):
        reason = workload_cls.spec.stream_skip_reason(n_streams)
        if reason:
            pytest.skip(reason)
        kwargs.setdefault("size", aorta_size)
        workload = workload_cls(aorta_device, n_streams, **kwargs)
        if not record and workload.identity() in state.results:
            return state.results[workload.identity()]
        reused = state.reusable.pop(workload.identity(), None) if record and reference is None else None
        if reused is not None:
            return _record_run(request, benchmark, state, workload_cls, reused, reused=True)
        try:
            streams = workload.make_streams()
            result = run_workload(
                aorta_device,
                workload,
                streams,
                timing_plan,
                review=aorta_telemetry.review,
                test_slowdown=request.config.getoption("aorta_test_slowdown", 0.0) or 0.0,
                mode=resolved_options(request.config).mode,
                reference_run=reference,
                lean=bool(request.config.getoption("aorta_lean_run", False)),
                slowdown_store=Path(os.environ[UNITS_ENV]) if os.environ.get(UNITS_ENV) else None,
                kernel_pass_rounds=request.config.getoption("aorta_kernel_pass_rounds", None),
                timed_rounds=None
                if record or workload.reference_reads_timed_rounds()
                else REFERENCE_TIMED_ROUNDS,
            )
        except (StreamLimit, WorkloadUnavailable) as exc:
            pytest.skip(f"{workload_cls.spec.name}: {exc}")
        except StreamWorkError as exc:
            pytest.fail(
                f"{workload_cls.spec.name} stream work check failed, nothing recorded: {exc}", pytrace=False
            )
        except WorkloadCheckError as exc:
            pytest.fail(f"{workload_cls.spec.name} output check failed, nothing timed: {exc}", pytrace=False)
        except AllRoundsThrottled as exc:
            pytest.fail(str(exc), pytrace=False)
        except Exception as exc:
            if aorta_device.is_out_of_memory(exc):
                aorta_device.free_memory()
                pytest.fail(f"out of memory at size {workload.size_label()}: {exc}", pytrace=False)
            raise
        state.results[workload.identity()] = replace(result, traced=None)
        if not record:
            state.unrecorded[id(result)] = result
            if workload.reference_reads_timed_rounds():  # it timed the plan's rounds: a benchmark's own run
                state.reusable[workload.identity()] = result
            return result
        if reference is not None and state.unrecorded.get(id(reference)) is reference:
            result.record.details["reference_timed_s"] = round(reference.run.host_total_ms / 1e3, 4)
            # Its other phases too: where the rest of a run's test seconds went (the ledger's "checks and
            # passes" holds them; without this line they showed in no benchmark's host_phase_s).
            result.record.details["reference_phase_s"] = dict(
                reference.record.details.get("host_phase_s", {})
            )
        return _record_run(request, benchmark, state, workload_cls, result)

    return run


def _record_run(request, benchmark, state: SessionState, workload_cls, result, *, reused: bool = False):
    """Record ``result`` as this test's benchmark: its extra_info, pytest-benchmark's stats, the summary row."""
    if reused:
        result.record.details[MEASURED_AS_REFERENCE] = (
            "this configuration ran once in this session, first as the reference of an earlier benchmark; "
            "that run is recorded here, not measured again"
        )
    benchmark.group = workload_cls.spec.name
    write_record(benchmark, result.record)
    replay_into(benchmark, state.clock, result.run.per_iteration_ms)
    state.rows.append(_summary_row(request.node.name, result.record))
    request.config.hook.pytest_aorta_bench_result(item=request.node, result=result)
    return result


def _summary_row(name: str, record: BenchRecord) -> dict:
    headline = record.headline()
    shown = "n/a" if headline is None or headline.value is None else f"{headline.value:.4g} {headline.unit}"
    return {
        "name": name,
        "streams": record.get("streams_requested"),
        "distinct": record.get("distinct_streams"),
        "median_ms": stats.median(record.device_ms_per_iteration),
        "metric": shown,
        "concurrency": record.get("effective_concurrency"),
        "method": record.get("mode") or record.timing_method,
        "enqueue_ms": record.get("host_enqueue_ms_per_iteration"),
        "gpu_busy": record.get("gpu_busy_share"),
        "notes": record.reading_notes,
        "phases": record.get("host_phase_s"),
    }


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    from aorta.environment.machine import machine_info as aorta_machine_info

    try:
        machine_info["aorta"] = aorta_machine_info(session_device(config))
    except Exception as exc:  # machine info must never lose a run's results
        machine_info["aorta"] = {"error": f"could not read machine info: {exc}"}


def pytest_sessionstart(session: pytest.Session) -> None:
    """pytest-benchmark's ``--benchmark-json`` is written beside the file and renamed into place."""
    from aorta.record.benchmark_json import install_atomic_writer

    state = session.config.stash.get(STATE, None)
    bs = getattr(session.config, "_benchmarksession", None)
    if state is not None and bs is not None:
        install_atomic_writer(bs, lambda msg: setattr(state, "json_error", msg))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(STATE, None)  # pytest-benchmark wrote its JSON before this runs
    if state is not None and state.json_error and int(exitstatus) == 0:
        session.exitstatus = EXIT_WRITE_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None:
        return
    if state.json_error:
        terminalreporter.write_line(f"aorta: {state.json_error} -> exit {EXIT_WRITE_FAILED}", red=True)
    if state.xdist_skipped:
        terminalreporter.write_line(
            f"aorta: {state.xdist_skipped} benchmark(s) skipped: pytest-xdist disables pytest-benchmark; "
            "run benchmarks without -n",
            yellow=True,
        )
    if not state.rows:
        return
    from aorta.record.table import format_summary

    terminalreporter.section("aorta: device-timed results")
    for line in format_summary(state.rows):
        terminalreporter.write_line(line)
    json_path = benchmark_json_path(config)
    if json_path is not None and not state.json_error:
        terminalreporter.write_line(f"benchmark JSON: {json_path}")
