"""aorta's pytest plugin: options, fixtures, device-timed benchmarks, machine info, terminal summary.

Registered once: through the ``pytest11`` entry point when aorta is installed, or by the repository's
``conftest.py`` (``pytest_plugins``) when it is not.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import pytest

from aorta import stats, versions
from aorta.bridge import ReplayClock, replay_into
from aorta.device import Device, DeviceUnavailable, StreamLimit, detect_backend
from aorta.options import (
    AortaOptions,
    parse_copy_mb,
    parse_device,
    parse_issue_order,
    parse_iterations,
    parse_rounds,
    parse_size,
    parse_streams,
    parse_sync_mode,
    parse_warmup,
)
from aorta.output_paths import OutputPathError, check_output_file
from aorta.runner import run_workload
from aorta.timing import TimingPlan
from aorta.workloads.base import WorkloadCheckError, WorkloadUnavailable

# Plugin pieces that live in their own modules (one line each).
pytest_plugins = [
    "aorta.telemetry.plugin",
    "aorta.report.plugin",
    "aorta.gate.plugin",
    "aorta.fsdp.plugin",
]

MARKERS = {
    "gpu": "needs a CUDA or ROCm GPU",
    **{p: f"priority {p[1]} workload" for p in ("p0", "p1", "p2", "p3")},
    **{c: f"{c} workload category" for c in
       ("compute", "scheduling", "training", "inference", "pipeline", "latency", "memory", "compile")},
    "fsdp": "FSDP2 overlap scenario",
}
BENCH_FIXTURE = "hw_queue"


@dataclass
class SessionState:
    clock: ReplayClock = field(default_factory=ReplayClock)
    rows: list[dict] = field(default_factory=list)
    xdist_skipped: int = 0


OPTIONS = pytest.StashKey[AortaOptions]()
STATE = pytest.StashKey[SessionState]()
BENCH_RESULT = pytest.StashKey[object]()  # the test's recorded BenchResult, for plugins (traces)


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("aorta", "aorta GPU benchmarks")
    g.addoption("--streams", type=parse_streams, default=(1, 4, 16), metavar="N[,N...]",
                help="stream counts to sweep, e.g. 16 or 1,4,16,64 (1 to 1024; default 1,4,16)")
    g.addoption("--rounds", type=parse_rounds, default=None, metavar="N",
                help="timed rounds per benchmark (default 20 on a GPU, 5 on CPU)")
    g.addoption("--warmup", type=parse_warmup, default=None, metavar="N",
                help="untimed warm-up rounds (default 3 on a GPU, 1 on CPU)")
    g.addoption("--sync-mode", type=parse_sync_mode, default="per_round",
                help="per_round: synchronize after each round; end_only: once after all rounds")
    g.addoption("--aorta-device", type=parse_device, default="auto",
                help="auto (GPU if torch sees one, else CPU), cuda, rocm or cpu")
    g.addoption("--aorta-size", type=parse_size, default="auto",
                help="problem sizes: auto (smoke on CPU, full on GPU), smoke or full")
    g.addoption("--issue-order", type=parse_issue_order, default=("breadth",),
                help="breadth (round-robin over streams) and/or depth (each stream's work back to back)")
    g.addoption("--aorta-iterations", type=parse_iterations, default=None, metavar="K",
                help="fixed iterations per timed round (default: probe, batch K under the ~20 us event floor)")
    g.addoption("--aorta-mode", choices=("eager", "gpu"), default="eager",
                help="eager, or gpu: the whole round queued on the GPU before it starts (graph replay or a hold kernel)")
    g.addoption("--copy-mb", type=parse_copy_mb, default=None, metavar="MIB",
                help="MiB per copy in copy_compute_overlap (default 64 at full size, 1 at smoke size)")


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    problem = versions.incompatibility()
    if problem:
        raise pytest.UsageError(problem)
    _check_benchmark_json(config)
    opts = AortaOptions(
        streams=config.getoption("streams"),
        rounds=config.getoption("rounds") or 0,
        warmup=config.getoption("warmup") if config.getoption("warmup") is not None else -1,
        sync_mode=config.getoption("sync_mode"),
        device=config.getoption("aorta_device"),
        size=config.getoption("aorta_size"),
        issue_order=config.getoption("issue_order"),
        iterations=config.getoption("aorta_iterations"),
        copy_mb=config.getoption("copy_mb"),
    )
    try:
        backend = detect_backend(opts.device)
    except DeviceUnavailable as exc:
        raise pytest.UsageError(str(exc)) from None
    gpu = backend != "cpu"
    opts = AortaOptions(**{**opts.__dict__,
                           "rounds": opts.rounds or (20 if gpu else 5),
                           "warmup": opts.warmup if opts.warmup >= 0 else (3 if gpu else 1)})
    config.stash[OPTIONS] = opts
    config.stash[STATE] = SessionState()


def _check_benchmark_json(config: pytest.Config) -> None:
    """``--benchmark-json``: pytest-benchmark writes it only after the last benchmark, so a folder that is
    missing or not writable would lose the whole run. pytest-benchmark >= 5.3 hands over a path (checked
    here); up to 5.2 argparse opened the file already, which fails at once on a bad folder."""
    value = config.getoption("benchmark_json", None)
    if isinstance(value, (str, os.PathLike)):
        try:
            check_output_file("--benchmark-json", value, create_parent=False)
        except OutputPathError as exc:
            raise pytest.UsageError(str(exc)) from None


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
            item.add_marker(pytest.mark.skip(reason=(
                "pytest-xdist (-n) disables pytest-benchmark, so no timing would be recorded: "
                "run benchmarks without -n (or with -n 0 / -p no:xdist)")))


@pytest.fixture(scope="session")
def aorta_options(pytestconfig: pytest.Config) -> AortaOptions:
    return pytestconfig.stash[OPTIONS]


@pytest.fixture(scope="session")
def aorta_device(aorta_options: AortaOptions) -> Device:
    return Device.open(aorta_options.device)


@pytest.fixture(scope="session")
def aorta_size(aorta_options: AortaOptions, aorta_device: Device) -> str:
    return aorta_options.resolved_size(aorta_device.backend)


@pytest.fixture(scope="session")
def copy_mb(aorta_options: AortaOptions) -> float | None:
    """``--copy-mb``: MiB per copy, or None for the workload's size default."""
    return aorta_options.copy_mb


@pytest.fixture
def timing_plan(aorta_options: AortaOptions) -> TimingPlan:
    return TimingPlan(warmup_rounds=aorta_options.warmup, rounds=aorta_options.rounds,
                      sync_mode=aorta_options.sync_mode, iterations_per_round=aorta_options.iterations)


@pytest.fixture
def hw_queue(request, benchmark, aorta_device: Device, aorta_size: str, timing_plan: TimingPlan,
             aorta_telemetry):
    """``hw_queue(WorkloadClass, n_streams, **kw)``: check, time and record one workload.

    Skips below the workload's minimum or above its maximum stream count; a wrong result or an
    out-of-memory size fails the test with the reason; the rest of the run goes on.
    """
    state = request.config.stash[STATE]

    def run(workload_cls, n_streams: int, *, record: bool = True, **kwargs):
        reason = workload_cls.spec.stream_skip_reason(n_streams)
        if reason:
            pytest.skip(reason)
        kwargs.setdefault("size", aorta_size)
        workload = workload_cls(aorta_device, n_streams, **kwargs)
        try:
            streams = workload.make_streams()
            result = run_workload(aorta_device, workload, streams, timing_plan, review=aorta_telemetry.review,
                                  test_slowdown=request.config.getoption("aorta_test_slowdown", 0.0) or 0.0,
                                  mode=request.config.getoption("aorta_mode", "eager"))
        except (StreamLimit, WorkloadUnavailable) as exc:
            pytest.skip(f"{workload_cls.spec.name}: {exc}")
        except WorkloadCheckError as exc:
            pytest.fail(f"{workload_cls.spec.name} output check failed, nothing timed: {exc}", pytrace=False)
        except Exception as exc:
            if aorta_device.is_out_of_memory(exc):
                aorta_device.free_memory()
                pytest.fail(f"out of memory at size {workload.size_label()}: {exc}", pytrace=False)
            raise
        if record:
            benchmark.group = workload_cls.spec.name
            benchmark.extra_info.update(result.extra_info)
            replay_into(benchmark, state.clock, result.run.per_iteration_ms)
            state.rows.append(_summary_row(request.node.name, result.extra_info))
            request.node.stash[BENCH_RESULT] = result
        return result

    return run


def _summary_row(name: str, extra: dict) -> dict:
    headline = extra["metrics"].get(extra["headline_metric"], {})
    return {
        "name": name,
        "streams": extra["streams_requested"],
        "distinct": extra["distinct_streams"],
        "median_ms": stats.median(extra["device_ms_per_iteration"]),
        "metric": f"{headline.get('value', float('nan')):.4g} {headline.get('unit', '')}",
        "concurrency": extra.get("effective_concurrency"),
        "method": extra["timing_method"],
        "enqueue_ms": extra.get("host_enqueue_ms_per_iteration"),
        "gpu_busy": extra.get("gpu_busy_share"), "notes": extra.get("reading_notes"),
    }


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    from aorta.machine import machine_info as aorta_machine_info

    opts = config.stash[OPTIONS]
    try:
        machine_info["aorta"] = aorta_machine_info(Device.open(opts.device))
    except Exception as exc:  # machine info must never lose a run's results
        machine_info["aorta"] = {"error": f"could not read machine info: {exc}"}


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None:
        return
    if state.xdist_skipped:
        terminalreporter.write_line(
            f"aorta: {state.xdist_skipped} benchmark(s) skipped: pytest-xdist disables pytest-benchmark; "
            "run benchmarks without -n", yellow=True)
    if not state.rows:
        return
    from aorta.table import format_summary

    terminalreporter.section("aorta: device-timed results")
    for line in format_summary(state.rows):
        terminalreporter.write_line(line)
    json_path = benchmark_json_path(config)
    if json_path is not None:
        terminalreporter.write_line(f"benchmark JSON: {json_path}")
