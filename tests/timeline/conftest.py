"""Fixtures of the tests of tests/timeline: the real rocprofv3 and Kineto samples, read once per module (skipped
where absent: tests/trace_cases.py)."""

from __future__ import annotations

import pytest
import trace_cases as cases


@pytest.fixture(scope="module")
def kernel_csv() -> bytes:
    return cases.kernel_csv()


@pytest.fixture(scope="module")
def kineto() -> bytes:
    return cases.kineto()
