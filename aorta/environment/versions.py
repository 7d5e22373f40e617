"""Which pytest and pytest-benchmark releases aorta runs on, and the pairs that cannot work together.

Supported (tested in CI at both ends, see .ci/run and .ci/oldest-supported.txt): pytest >= 9.0 with
pytest-benchmark 5.2.3 to 5.3.x. pytest-benchmark up to 5.2.3 reads ``Item._nodeid``, which pytest 9.2
removed: that pair fails inside pytest-benchmark's fixture on the first benchmark, so it is refused at
start-up with the fix instead.
"""

from __future__ import annotations

import importlib.metadata
import re


def _version(dist: str) -> tuple[int, ...] | None:
    try:
        text = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def incompatibility(
    pytest_version: tuple[int, ...] | None = None, benchmark_version: tuple[int, ...] | None = None
) -> str | None:
    """A sentence naming the installed pair that cannot work and what to install, or None."""
    pt = pytest_version or _version("pytest")
    pb = benchmark_version or _version("pytest-benchmark")
    if pt is None or pb is None:
        return None
    if pb < (5, 3) and pt >= (9, 2):
        show = ".".join(map(str, pb)), ".".join(map(str, pt))
        return (
            f"pytest-benchmark {show[0]} does not run on pytest {show[1]} (it reads Item._nodeid, which "
            "pytest 9.2 removed): install pytest-benchmark>=5.3 (or pytest<9.2)"
        )
    return None
