import os
import sys
from pathlib import Path

import pytest

# Imported once, up front: pytester's in-process runs drop from sys.modules the modules first imported inside
# them, and a second import of either fails in this process (torch._dynamo registers the `_inductor_test`
# op library twice; scipy's extension modules refuse to load twice). Which test imports them first depends
# on how xdist splits the tests, so without this the failures come and go.
import torch._dynamo  # noqa: E402, F401

try:
    import scipy.stats  # noqa: E402, F401
except ImportError:  # the gate's tests skip or say why without scipy
    pass

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


def pytest_configure(config: pytest.Config) -> None:
    if _entry_point() is None:
        raise pytest.UsageError(
            "aorta's tests run pytest the way users do, with the plugin registered by its "
            "installed pytest11 entry point: pip install -e '.[dev]' (scripts/bootstrap.sh)"
        )


def _entry_point():
    from importlib.metadata import entry_points

    return next((ep for ep in entry_points(group="pytest11") if ep.name == "aorta"), None)


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
    from aorta.device import Device

    torch.set_num_threads(1)
    return Device.open("cpu")


@pytest.fixture(autouse=True)
def _no_secret_kept_between_tests():
    """Secrets registered by one test's command (aorta/record/redact.py: register) are forgotten after it."""
    from aorta.record.redact import forget

    yield
    forget()
