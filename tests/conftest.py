import importlib.metadata
import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]


def _plugin_installed() -> bool:
    return any(ep.value == "aorta.plugin" for ep in importlib.metadata.entry_points(group="pytest11"))


@pytest.fixture
def run_pytest(pytester, monkeypatch):
    """Run pytest in a subprocess with aorta's plugin loaded exactly once, from the checkout."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    plugin_args = [] if _plugin_installed() else ["-p", "aorta.plugin"]

    def run(*args, timeout: float = 600):
        return pytester.runpytest_subprocess(*plugin_args, "-p", "no:cacheprovider", *args, timeout=timeout)

    return run
