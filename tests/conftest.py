import os
from pathlib import Path

import pytest

# Imported once, up front: pytester's in-process runs drop from sys.modules the modules first imported inside
# them, and a second import of either fails in this process (torch._dynamo registers the `_inductor_test`
# op library twice; scipy's extension modules refuse to load twice). Which test imports them first depends
# on how xdist splits the tests, so without this the failures come and go.
import torch._dynamo  # noqa: E402, F401

from aorta import registration

try:
    import scipy.stats  # noqa: E402, F401
except ImportError:  # the gate's tests skip or say why without scipy
    pass

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]


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
    """Run pytest in a subprocess with aorta's plugin loaded exactly once, from the checkout."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    plugin_args = ["-p", "aorta.plugin"] if registration.pytest_plugins else []

    def run(*args, timeout: float = 600):
        return pytester.runpytest_subprocess(*plugin_args, "-p", "no:cacheprovider", *args, timeout=timeout)

    return run
