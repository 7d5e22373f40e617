import gc
import importlib
import os
import signal
import sys
from pathlib import Path

import hypothesis
import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]

# The test folders mirror aorta's packages (tests/gate/ for aorta/gate/, ...). Tests share helpers by module name
# (``from test_gate_offline import run``), across folders too, so every folder is on the path whichever test
# file runs, alone or first.
TEST_FOLDERS = sorted(p for p in Path(__file__).resolve().parent.iterdir() if any(p.glob("test_*.py")))
sys.path[:0] = [str(p) for p in TEST_FOLDERS if str(p) not in sys.path]


def pytest_report_header(config: pytest.Config) -> str:
    from amd_traces import header_line

    return header_line()


# Property tests draw each test's full count of examples in the whole run (the README's test command, CI) and a
# quarter of it in the fast tier, ``-m 'not slow'`` (tests/hypothesis_tiers.py: ``examples``); AORTA_HYPOTHESIS=full
# or fast picks a profile whatever the markers.
hypothesis.settings.register_profile("full", max_examples=100)
hypothesis.settings.register_profile("fast", max_examples=25)


def _hypothesis_profile(config: pytest.Config) -> str:
    chosen = os.environ.get("AORTA_HYPOTHESIS", "")
    if chosen:
        if chosen not in ("full", "fast"):
            raise pytest.UsageError(f"AORTA_HYPOTHESIS={chosen}: full or fast")
        return chosen
    return "fast" if " ".join(str(config.getoption("markexpr") or "").split()) == "not slow" else "full"


def _import_up_front(config: pytest.Config) -> None:
    """torch._dynamo and scipy.stats, imported once, before any test runs: pytester's in-process runs drop from
    sys.modules the modules first imported inside them, and a second import of either fails in this process
    (torch._dynamo registers the `_inductor_test` op library twice; scipy's extension modules refuse to load
    twice). Which test imports them first depends on how xdist splits the tests, so without this the failures
    come and go. Not in xdist's controller, which runs no test (a second of start-up before the workers start).

    Then ``gc.freeze()``: torch's import leaves some 300,000 objects that live as long as the process, and every
    full collection would walk them again (collecting the tests alone took 3 s more CPU per worker). Frozen, the
    collector skips them; objects made later are collected as before (frozen again once the tests are collected:
    pytest_collection_finish)."""
    if hasattr(config, "workerinput") or config.getoption("dist", "no") == "no":
        importlib.import_module("torch._dynamo")
        try:
            importlib.import_module("scipy.stats")
        except ImportError:  # the gate's tests skip or say why without scipy
            pass
    gc.freeze()


def pytest_configure(config: pytest.Config) -> None:
    if _entry_point() is None:
        raise pytest.UsageError(
            "aorta's tests run pytest the way users do, with the plugin registered by its "
            "installed pytest11 entry point: pip install -e '.[dev]' (scripts/bootstrap.sh)"
        )
    _import_up_front(config)
    hypothesis.settings.load_profile(_hypothesis_profile(config))  # before the test modules are imported


def _entry_point():
    from importlib.metadata import entry_points

    return next((ep for ep in entry_points(group="pytest11") if ep.name == "aorta"), None)


# The longest tests measured (``--durations``, 2 cores, -n 4: 40 to 130 s each, most of them several torchrun or
# pytest children). Under xdist they are handed out first, then the other slow ones, then the rest: a long test
# started last would end the run alone while the other workers idle (longest first; the order within each
# class is the collection's).
LONGEST_FIRST = (
    "tests/sweep/test_knob_evidence.py::test_a_real_sweep_flags_the_no_op_variable_and_not_the_real_setting",
    "tests/timing/test_slowdown.py::test_a_gate_calibrates_its_slowdown_once_for_all_its_runs",
    "tests/gate/test_fork_server.py::test_a_gate_run_records_how_it_was_started",
    "tests/sweep/test_sweep_run.py::test_a_real_sweep_records_its_cell_in_each_run_and_resumes",
    "tests/sweep/test_sweep_report.py::test_fsdp_sweeps_under_torchrun_on_cpu_are_reported_cell_by_cell",
    "tests/hw_queue/test_pipeline_copy_benchmarks_on_cpu.py::",
    "tests/gate/test_gate_blocks_run.py::",
    "tests/launch/test_torchrun_launcher.py::test_a_gate_code_on_rank_0_comes_back_through_torchrun",
    "tests/record/test_outputs_up_front.py::test_the_json_path_is_printed_as_given",
    "tests/fsdp/test_fsdp_torchrun_cpu.py::",
)


# The longest of the fast tier (2 to 9 s each, ``--durations``, 2 cores): after the slow ones, before the rest, so
# that the fast tier alone starts with them too.
LONGEST_FAST = (
    "tests/report/test_trace_merge_read_back.py::",
    "tests/gate/test_fork_server.py::test_a_forked_run_has_its_own_environment_folder_output_and_session",
    "tests/history/test_migrate_under_lock.py::",
    "tests/gate/test_gate_save_safety.py::test_two_processes_saving_one_baseline_at_once_keep_both_runs",
    "tests/sweep/test_sweep_faults.py::",
    "tests/sweep/test_sweep_folder_lock.py::",
)


def _start_order(item: pytest.Item) -> int:
    if item.nodeid.startswith(LONGEST_FIRST):
        return 0
    if item.get_closest_marker("slow"):
        return 1
    return 2 if item.nodeid.startswith(LONGEST_FAST) else 3


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.freeze()  # the collected tests live as long as the session


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts alike (a stable sort by class)
        items.sort(key=_start_order)


@pytest.fixture(scope="session", autouse=True)
def _cpu_probed_once():
    """pytest-benchmark asks py-cpuinfo for the machine's CPU at the end of every session that ran a benchmark,
    and py-cpuinfo starts a Python of its own for each answer (0.2 s, seconds under load): the sessions that
    tests run in this process (pytester) share the first answer, as a gate's fork server does for its runs
    (aorta/processes/fork_server.py). Each gets a copy: the same CPU, whatever a session does with it."""
    import copy

    try:
        import cpuinfo
    except ImportError:
        yield
        return
    real, answer = cpuinfo.get_cpu_info, []

    def once() -> dict:
        if not answer:
            answer.append(real())
        return copy.deepcopy(answer[0])

    cpuinfo.get_cpu_info = once
    yield
    cpuinfo.get_cpu_info = real


@pytest.fixture(scope="session", autouse=True)
def _not_an_xdist_worker():
    """Under ``pytest -n`` this variable would make pytest-benchmark disable the benchmarks of the runs the
    tests start themselves (pytester, torchrun): those runs are not xdist workers."""
    worker = os.environ.pop("PYTEST_XDIST_WORKER", None)
    yield
    if worker is not None:
        os.environ["PYTEST_XDIST_WORKER"] = worker


@pytest.fixture
def run_pytest(pytester, monkeypatch):
    """Run pytest in a subprocess as a user does: aorta's plugin comes from the installed entry point, its
    code from this checkout."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))

    def run(*args, timeout: float = 600):
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=timeout)

    return run


@pytest.fixture
def saved_stream_gate(pytestconfig, tmp_path_factory) -> dict:
    """``{code, output, folder}`` of tests/stream_gate.py's gate (``folder/bl``: the baseline folder,
    ``folder/runs``: its runs), made once per session for the tests that read it (tests/run_once.py); read it,
    never write there."""
    from run_once import once
    from stream_gate import saved_stream_gate

    return once(pytestconfig, tmp_path_factory, "stream-gate", saved_stream_gate)


@pytest.fixture(scope="session")
def amd_trace(pytestconfig, tmp_path_factory):
    """``amd_trace(name, events="as_written")``: the path of the real AMD trace ``name`` (tests/amd_traces.py), or
    with ``events="without_host_ops"`` of a copy without its host ops, made once per session however many xdist
    workers ask (tests/run_once.py). Where the trace is absent, its path all the same: the test skips on it."""
    import amd_traces
    from run_once import once

    made: dict[tuple[str, str], Path] = {}

    def path(name: str, events: str = amd_traces.AS_WRITTEN) -> Path:
        real = amd_traces.folder() / name
        if events == amd_traces.AS_WRITTEN or not real.is_file():
            return real
        if (name, events) not in made:
            made[name, events] = once(
                pytestconfig,
                tmp_path_factory,
                f"{events}-{name}",
                lambda folder: amd_traces.write_without_host_ops(real, folder),
            )
        return made[name, events]

    return path


@pytest.fixture(params=["in_process", pytest.param("child_process", marks=pytest.mark.slow)])
def aorta_cli(request):
    """``aorta_cli(*args, cwd=None)``: the CompletedProcess (text) of ``python -m aorta ARGS``. In the fast tier
    ``aorta.cli.main`` runs it in this process (tests/cli_in_process.py), in the slow tier a child process does."""
    from cli_in_process import run_aorta, run_child

    run = run_aorta if request.param == "in_process" else run_child
    return lambda *args, cwd=None: run(args, cwd=cwd)


@pytest.fixture
def bench_dir(pytester, monkeypatch):
    """A pytester folder holding the gate tests' spin benchmark (test_gate_plugin.SPIN_TEST), a clean env."""
    from test_gate_plugin import SPIN_TEST

    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.setenv("SPIN_US", "1000")
    pytester.makepyfile(test_spin=SPIN_TEST)
    return pytester


@pytest.fixture
def counted_work(bench_dir):
    """``bench_dir`` whose CPU rounds take the work they count, not the host's time (tests/counted_work.py):
    for tests of timing decisions, which must not depend on the machine's load."""
    from counted_work import CONFTEST

    bench_dir.makeconftest(CONFTEST)
    return bench_dir


@pytest.fixture(scope="module")
def cpu():
    """The CPU device, one intra-op thread (smoke sizes are many tiny ops: threads would only hand them around).
    Several test modules still define their own; a module's own fixture of this name wins."""
    import torch

    from aorta.device import Device

    torch.set_num_threads(1)
    return Device.open("cpu")


@pytest.fixture(autouse=True)
def _no_secret_kept_between_tests():
    """Secrets registered by one test's command (aorta/record/redact.py: register) are forgotten after it."""
    from aorta.record.redact import forget

    yield
    forget()


@pytest.fixture
def stop_signals_at_default():
    """SIGINT, SIGTERM and SIGHUP at their defaults for a test that signals this process, then back: a test run
    that is a background job of a non-interactive shell ignores SIGINT, one under nohup SIGHUP, and aorta keeps
    an ignored stop signal ignored, as nohup asks (tests/signal_defaults.py: the same for a child)."""
    from aorta.processes import child_process

    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)
    child_process._STOPPING.clear()
