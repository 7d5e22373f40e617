"""Run under torchrun by tests/test_fsdp_torchrun_cpu.py: rank 1 collects one test more than rank 0."""

import os

import pytest

RANK = int(os.environ.get("RANK", "0"))


@pytest.mark.parametrize("i", range(RANK + 1))
def test_count_differs_by_rank(i):
    pass
